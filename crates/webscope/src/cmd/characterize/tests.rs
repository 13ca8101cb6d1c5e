//! The page and the summary as a person reads them (issue #35 §5): figures to three
//! significant figures, nouns that agree with their counts, spans in two units, and the bad
//! lines named by their file.

use std::io::Write;

use webscope_accesslog::characterize::characterize;

/// A log of one client's three requests over 3 days 11 hours, with one line that does not
/// parse, characterized from a file named `site-access.log`.
fn characterized() -> (
    webscope_accesslog::characterize::Characterization,
    Vec<String>,
) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("site-access.log");
    let mut f = std::fs::File::create(&path).expect("the log is written");
    let line = |day: u32, hour: u32| {
        format!(
            "192.0.2.7 - - [{day:02}/Oct/2015:{hour:02}:05:00 +0000] \"GET /a.html HTTP/1.1\" 200 1234 \"-\" \"curl\"\n"
        )
    };
    let text = [
        line(1, 0),
        "this is not a log line\n".to_string(),
        line(2, 3),
        line(4, 11),
    ]
    .concat();
    f.write_all(text.as_bytes()).expect("the log is written");
    let parsed =
        webscope_accesslog::read_logs(std::slice::from_ref(&path), None).expect("the log parses");
    (characterize(&parsed), vec![path.display().to_string()])
}

#[test]
fn the_bad_line_table_names_the_file_not_its_index() {
    let (c, logs) = characterized();
    let html = super::page::page(&c, &logs).to_html();
    let table = html
        .split("did not parse")
        .nth(1)
        .and_then(|rest| rest.split("</table>").next())
        .expect("the bad-line table");
    assert!(table.contains("site-access.log</td>"), "{table}");
    assert!(
        !table.contains("<td>0</td>"),
        "an index for a file: {table}"
    );
}

#[test]
fn counts_agree_with_their_nouns_and_spans_read_in_two_units() {
    let (c, logs) = characterized();
    let html = super::page::page(&c, &logs).to_html();
    let text = super::summary::text(&c, &logs);
    for said in [&html, &text] {
        assert!(!said.contains("1 lines"), "{said}");
        assert!(!said.contains("1 clients"), "{said}");
        assert!(said.contains("3 requests"), "{said}");
    }
    assert!(html.contains("1 line not parsed"), "{html}");
    assert!(text.contains("over 3 d 11 h"), "{text}");
    assert!(html.contains("<td>3 d 11 h</td>"), "{html}");
}

#[test]
fn rates_and_shares_have_three_significant_figures() {
    let (c, logs) = characterized();
    let text = super::summary::text(&c, &logs);
    // Three requests in 298 800 s.
    assert!(text.contains(", 1.00e-5 req/s on average"), "{text}");
    assert!(text.contains("Statuses:  200 100 %"), "{text}");
    assert!(text.contains("in 3 references (33.3 %)"), "{text}");
    assert!(text.contains("(median 3 requests each"), "{text}");
}
