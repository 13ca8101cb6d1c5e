//! `webscope characterize` says what it sees (#35 item 4): a log sampled in minute :05 of
//! each hour is said to be a sample, with the burstiness figures said to describe it; the
//! IDC summary gives its peak; a line cut short in its user agent is an entry counted as
//! repaired; the invariants table gives the bound applied and by how much a row differs; a
//! query string makes a URL of its own unless `--fold-query`, with bytes and 404s by URL.
//! And (#37 item 1) sessions and page views counted as the page defines them, on a log whose
//! sessions are known, with `--session-gap`.

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use webscope_workload::Rng;

fn webscope() -> Command {
    Command::new(env!("CARGO_BIN_EXE_webscope"))
}

/// A Combined line at `hour` hours and `second` seconds past 2015-05-17 10:00 UTC.
fn line(hour: u64, second: u64, path: &str, client: &str) -> String {
    let (day, h) = (17 + (10 + hour) / 24, (10 + hour) % 24);
    let (m, s) = (second / 60, second % 60);
    format!("{client} - - [{day:02}/May/2015:{h:02}:{m:02}:{s:02} +0000] \"GET {path} HTTP/1.1\" 200 2048 \"-\" \"Mozilla/5.0\"\n")
}

/// `webscope characterize LOG --out OUT`, which must succeed: report.json, stdout, the page.
fn characterize(log: &Path, out: &Path) -> (Value, String, String) {
    characterize_with(log, out, &[])
}

/// [`characterize`] with more arguments.
fn characterize_with(log: &Path, out: &Path, extra: &[&str]) -> (Value, String, String) {
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
    let report = serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    (
        report,
        String::from_utf8_lossy(&run.stdout).into_owned(),
        html,
    )
}

#[test]
fn a_log_of_minute_5_of_each_hour_is_said_to_be_a_sample_with_its_idc_peak() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("access.log");
    let mut rng = Rng::new(35);
    let mut text = String::new();
    // 84 hours, each with about 120 requests, all within minute :05 (seconds 300-359).
    for hour in 0..84 {
        for second in 300..360 {
            for _ in 0..rng.next_u64() % 5 {
                let path = format!("/doc{}.html", rng.next_u64() % 50);
                let client = format!(
                    "198.51.{}.{}",
                    rng.next_u64() % 60,
                    1 + rng.next_u64() % 200
                );
                text.push_str(&line(hour, second, &path, &client));
            }
        }
    }
    let lines = text.lines().count() as u64;
    // The last line cut short in its user agent, as a server cuts a long header.
    text.push_str("198.51.7.7 - - [20/May/2015:21:05:30 +0000] \"GET /doc1.html HTTP/1.1\" 200 2048 \"-\" \"Mozilla/5.0 (X11; Linux\n");
    std::fs::write(&log, text).unwrap();
    let (r, stdout, html) = characterize(&log, &tmp.path().join("out"));

    assert_eq!(
        r["requests"].as_u64(),
        Some(lines + 1),
        "the cut line is an entry"
    );
    assert_eq!(
        (r["repaired_lines"].as_u64(), r["bad_lines"].as_u64()),
        (Some(1), Some(0))
    );
    assert!(
        stdout.contains("Repaired: 1 line cut short in the user agent"),
        "{stdout}"
    );

    assert_eq!(r["coverage"]["sampled_minutes"], serde_json::json!([5]));
    assert_eq!(r["coverage"]["active_hours"].as_u64(), Some(84));
    // Within the minute the rate is about 2 req/s; over the span, 60 times less.
    let within = r["coverage"]["covered_rate"].as_f64().unwrap();
    assert!((1.7..2.3).contains(&within), "{within}");
    assert!(
        stdout.contains("the log is a sample") && stdout.contains("minute :05 of the hour"),
        "{stdout}"
    );
    assert!(
        stdout.contains("IDC and Hurst figures describe that sampling"),
        "{stdout}"
    );
    assert!(
        html.contains("Coverage: the log is a sample"),
        "no banner on the page"
    );

    // Windows inside the sampled minute see it or not (the IDC climbs); an hour's window
    // always holds one sampled minute (it falls): the peak lies between.
    let peak = &r["arrivals"]["idc_peak"];
    let window = peak["window_s"].as_u64().unwrap();
    assert!(
        (60..=3600).contains(&window) && peak["at_longest"] == false,
        "{peak}"
    );
    let arrivals = stdout.lines().find(|l| l.starts_with("Arrivals:")).unwrap();
    assert!(arrivals.contains(", peak "), "{arrivals}");

    // The invariants: ten rows, each with its bound; those that differ say by how much.
    let rows = r["invariants"].as_array().unwrap();
    assert_eq!(rows.len(), 10);
    assert!(rows
        .iter()
        .all(|i| !i["name"].as_str().unwrap().contains("Median")));
    for i in rows {
        assert!(!i["bound"].as_str().unwrap().is_empty(), "{i}");
        let differs = i["verdict"] == "differs";
        assert_eq!(differs, i["difference"].is_string(), "{i}");
    }
    // 50 documents each referenced about 200 times: none once, far from a third.
    let once = rows
        .iter()
        .find(|i| i["name"] == "One-time referencing")
        .unwrap();
    assert_eq!(once["verdict"], "differs");
    assert_eq!(once["difference"], "23.3 points below 23.3 %");
    assert!(html.contains("differs by") && html.contains("bound applied"));
}

#[test]
fn steady_traffic_is_said_to_cover_its_span() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("access.log");
    // A request every 20 s for ten hours.
    let text: String = (0..10 * 180)
        .map(|i| line(i / 180, i % 180 * 20, "/index.html", "203.0.113.9"))
        .collect();
    std::fs::write(&log, text).unwrap();
    let (r, stdout, html) = characterize(&log, &tmp.path().join("out"));
    assert_eq!(r["coverage"]["sampled_minutes"], serde_json::json!([]));
    assert_eq!(r["coverage"]["gap_count"].as_u64(), Some(0));
    assert!(
        stdout.contains(
            "Coverage:  requests spread over the minutes of the hour; no stretch of 1 h or more"
        ),
        "{stdout}"
    );
    assert!(!html.contains("Coverage: the log is a sample"));
    assert_eq!(r["repaired_lines"].as_u64(), Some(0));
}

/// A Combined line with its own status and size.
fn line_with(second: u64, target: &str, status: u16, bytes: u64) -> String {
    let (m, s) = (second / 60, second % 60);
    format!("203.0.113.7 - - [17/May/2015:10:{m:02}:{s:02} +0000] \"GET {target} HTTP/1.1\" {status} {bytes} \"-\" \"Mozilla/5.0\"\n")
}

#[test]
fn queries_are_their_own_urls_unless_folded_with_bytes_and_404s_by_url() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("access.log");
    // The site: its RSS feed is /?flav=rss20, requested more than / itself.
    let mut text = String::new();
    for i in 0..30 {
        text += &line_with(i, "/?flav=rss20", 200, 5_000);
    }
    for i in 0..20 {
        text += &line_with(100 + i, "/", 200, 1_000);
    }
    for i in 0..4 {
        text += &line_with(200 + i, "/old.jar", 404, 200);
    }
    text += &line_with(300, "/big.iso", 200, 9_000_000);
    std::fs::write(&log, text).unwrap();

    let (r, stdout, html) = characterize(&log, &tmp.path().join("kept"));
    let u = &r["urls"];
    assert_eq!(u["query_folded"], false);
    assert_eq!(u["by_requests"][0]["url"], "/?flav=rss20", "{u}");
    assert_eq!(u["by_requests"][0]["requests"], 30);
    assert_eq!(u["by_requests"][1]["url"], "/");
    assert_eq!(u["by_bytes"][0]["url"], "/big.iso");
    assert_eq!(
        u["total_bytes"].as_u64(),
        Some(30 * 5_000 + 20 * 1_000 + 4 * 200 + 9_000_000)
    );
    assert_eq!(u["not_found_requests"], 4);
    assert_eq!(u["not_found"][0]["url"], "/old.jar");
    assert!(
        stdout.contains("most requested: /?flav=rss20 (30)"),
        "{stdout}"
    );
    assert!(html.contains("/?flav=rss20") && html.contains("/old.jar"));

    let out = tmp.path().join("folded");
    let run = webscope()
        .arg("characterize")
        .arg(&log)
        .arg("--fold-query")
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let r: Value =
        serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
    let u = &r["urls"];
    assert_eq!(u["query_folded"], true);
    assert_eq!(u["by_requests"][0]["url"], "/", "{u}");
    assert_eq!(u["by_requests"][0]["requests"], 50);
}

/// A Combined line `second` seconds past 2015-05-17 10:00:00 UTC.
fn session_line(second: u64, client: &str, agent: &str, path: &str) -> String {
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
        .map(|&(t, cl, ag, p)| session_line(t, cl, ag, p))
        .collect()
}

#[test]
fn sessions_and_page_views_are_counted_as_the_page_defines_them() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("access.log");
    std::fs::write(&log, known_log()).unwrap();
    let (r, stdout, html) = characterize(&log, &tmp.path().join("out"));
    let s = &r["sessions"];
    assert_eq!(s["sessions"], 4, "{s}");
    assert_eq!(s["single_request"], 1, "{s}");
    assert_eq!(s["page_views"], 7, "{s}");
    assert_eq!(s["requests_per_session"]["max"], 4, "{s}");
    assert_eq!(s["think"]["count"], 3, "{s}");
    let mean = s["think"]["mean_s"].as_f64().unwrap();
    assert!((mean - (20.0 + 7.0 + 900.0) / 3.0).abs() < 1e-9, "{s}");
    assert!(
        stdout.contains("Sessions:  4 (one client address with one user agent, ended by 30 m without a request; 25 % single-request), 7 page views"),
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
    let (r, _, html) = characterize_with(&log, &tmp.path().join("gap"), &["--session-gap", "10m"]);
    let s = &r["sessions"];
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
