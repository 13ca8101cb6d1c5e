use super::*;
use crate::line::parse_line;

fn entry(second: u32, path: &str, status: u16, bytes: u64, client: &str) -> Entry {
    parse_line(
        &format!("{client} - - [01/Jan/2024:00:{:02}:{:02} +0000] \"GET {path} HTTP/1.1\" {status} {bytes}", second / 60, second % 60),
        None,
    )
    .unwrap()
}

#[test]
fn a_small_log_characterized() {
    let mut entries = vec![
        entry(0, "/index.html", 200, 1000, "10.0.0.1"),
        entry(0, "/logo.png", 200, 3000, "10.0.0.1"),
        entry(1, "/index.html", 304, 0, "10.0.0.2"),
        entry(61, "/missing", 404, 150, "10.0.0.3"),
        entry(62, "/index.html", 200, 1000, "10.0.0.1"),
    ];
    entries.push(
        parse_line(
            "10.0.0.9 - - [01/Jan/2024:00:01:03 +0000] \"-\" 400 0",
            None,
        )
        .unwrap(),
    );
    let bad = BadLine {
        file: 0,
        line: 3,
        text: "192.0.2.7 - - [garbage".to_string(),
        why: "bad [time] field",
    };
    let parsed = Parsed {
        entries,
        bad_lines: 2,
        bad_examples: vec![bad],
        lines: 8,
        ..Parsed::default()
    };
    let c = characterize(&parsed);
    assert_eq!((c.requests, c.bad_lines, c.span_s), (6, 2, 64));
    assert_eq!(c.per_minute.counts, vec![3, 3]);
    assert_eq!(c.mix.methods.get("-"), Some(&1));
    assert_eq!(c.mix.statuses.get(&200), Some(&3));
    assert!((c.mix.ok_share - 0.5).abs() < 1e-12);
    // References: the three 200s and the 304; not the 404 nor the unreadable request.
    assert_eq!(c.popularity.references, 4);
    assert_eq!(c.popularity.distinct_urls, 2);
    assert_eq!(c.mix.types.get(&DocType::Html), Some(&3));
    // Transfer sizes: 2xx with a body.
    assert_eq!(c.sizes.transfer.count, 3);
    assert_eq!(c.sizes.files.count, 2);
    assert_eq!(c.clients.distinct, 4);
    assert_eq!(c.clients.max_requests, 3);
    assert_eq!(c.invariants.len(), 10);
    let remote = c
        .invariants
        .iter()
        .find(|i| i.name == "Remote requests")
        .unwrap();
    assert_eq!(remote.verdict, Verdict::CannotTell);
    let success = &c.invariants[0];
    assert_eq!(success.verdict, Verdict::Differs, "{success:?}");
    // No client address is written out, not even in the bad lines shown.
    let json = serde_json::to_string(&c).unwrap();
    assert!(
        !json.contains("10.0.0.") && !json.contains("192.0.2.7"),
        "{json}"
    );
    assert_eq!(c.bad_examples[0].text, "<client> - - [garbage");
}
