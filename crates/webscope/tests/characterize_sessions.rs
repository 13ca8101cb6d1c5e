//! `webscope characterize` finds sessions and page views (#37 item 1) and states how it
//! counted them: on a log whose sessions are known, the counts in report.json, the page's
//! section with its definition, the summary's line, and `--session-gap`.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn webscope() -> Command {
    Command::new(env!("CARGO_BIN_EXE_webscope"))
}

/// A Combined line `second` seconds past 2015-05-17 10:00:00 UTC.
fn line(second: u64, client: &str, agent: &str, path: &str) -> String {
    let (h, m, s) = (10 + second / 3600, (second / 60) % 60, second % 60);
    format!("{client} - - [17/May/2015:{h:02}:{m:02}:{s:02} +0000] \"GET {path} HTTP/1.1\" 200 2048 \"-\" \"{agent}\"\n")
}

/// Two visitors sharing an address with different browsers, and a crawler:
/// - A (firefox): a page with 2 objects, 20 s of thought, a page; 40 min later a page with
///   an object, then a 7-s pause and an image alone: 2 sessions, 4 page views, think times
///   20 and 7 s (the gap between its sessions is no think time).
/// - B (chrome), same address: a page and an object, 15 min of thought, a page: 1 session, 2
///   page views, think 900 s (from the object, the first page view's last request).
/// - C (a crawler): one request: 1 session of a single request.
fn known_log() -> String {
    let (a, b, c) = (
        "Mozilla/5.0 Firefox/115",
        "Mozilla/5.0 Chrome/120",
        "Googlebot/2.1",
    );
    let mut lines = [
        (0, "192.0.2.10", a, "/index.html"),
        (0, "192.0.2.10", a, "/style.css"),
        (1, "192.0.2.10", a, "/logo.png"),
        (21, "192.0.2.10", a, "/blog/post"),
        (2_421, "192.0.2.10", a, "/"),
        (2_422, "192.0.2.10", a, "/photo.jpg"),
        (2_429, "192.0.2.10", a, "/big.jpg"),
        (5, "192.0.2.10", b, "/index.html"),
        (6, "192.0.2.10", b, "/style.css"),
        (906, "192.0.2.10", b, "/about"),
        (100, "198.51.100.1", c, "/robots.txt"),
    ];
    lines.sort_by_key(|l| l.0);
    lines
        .iter()
        .map(|&(t, cl, ag, p)| line(t, cl, ag, p))
        .collect()
}

fn characterize(log: &Path, out: &Path, extra: &[&str]) -> (Value, String, String) {
    let run = webscope()
        .arg("characterize")
        .arg(log)
        .arg("--out")
        .arg(out)
        .args(extra)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let report: Value =
        serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    (
        report["sessions"].clone(),
        String::from_utf8_lossy(&run.stdout).into_owned(),
        html,
    )
}

#[test]
fn sessions_and_page_views_are_counted_as_the_page_defines_them() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("access.log");
    std::fs::write(&log, known_log()).unwrap();
    let (s, stdout, html) = characterize(&log, &tmp.path().join("out"), &[]);
    assert_eq!(s["sessions"], 4, "{s}");
    assert_eq!(s["single_request"], 1, "{s}");
    assert_eq!(s["page_views"], 7, "{s}");
    assert_eq!(s["requests_per_session"]["max"], 4, "{s}");
    assert_eq!(s["think"]["count"], 3, "{s}");
    let mean = s["think"]["mean_s"].as_f64().unwrap();
    assert!((mean - (20.0 + 7.0 + 900.0) / 3.0).abs() < 1e-9, "{s}");
    assert!(
        stdout.contains("Sessions:  4 (25 % single-request), 7 page views"),
        "{stdout}"
    );
    assert!(
        html.contains("Sessions and page views"),
        "the page lacks the section"
    );
    assert!(
        html.contains("ended by 30 min without a request"),
        "the page does not state the definition"
    );

    // With a 10-minute gap B's 15 minutes of thought end its session: 5 sessions, and the
    // think time across it is gone.
    let (s, _, html) = characterize(&log, &tmp.path().join("gap"), &["--session-gap", "10m"]);
    assert_eq!(
        (s["sessions"].as_u64(), s["think"]["count"].as_u64()),
        (Some(5), Some(2))
    );
    assert!(html.contains("ended by 10 min without a request"));
}

#[test]
fn a_session_gap_of_nothing_is_refused_in_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("access.log");
    std::fs::write(&log, known_log()).unwrap();
    let run = webscope()
        .arg("characterize")
        .arg(&log)
        .args(["--session-gap", "0s"])
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("--session-gap"), "{stderr}");
}
