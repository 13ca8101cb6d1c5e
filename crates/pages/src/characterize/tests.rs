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

/// Characterizes `text`, written to a log file first (the reader's own path).
fn of_text(text: &str) -> webscope_accesslog::characterize::Characterization {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("access.log");
    std::fs::write(&path, text).expect("the log is written");
    let parsed =
        webscope_accesslog::read_logs(std::slice::from_ref(&path), None).expect("the log parses");
    characterize(&parsed)
}

/// A Combined line of `client` with `agent` on October `day` at `hour` (-0700, the log's
/// zone), GET `path` answered `status`.
fn combined(client: &str, agent: &str, day: u32, hour: u32, path: &str, status: u16) -> String {
    format!(
        "{client} - - [{day:02}/Oct/2024:{hour:02}:00:00 -0700] \"GET {path} HTTP/1.1\" {status} 100 \"-\" \"{agent}\"\n"
    )
}

#[test]
fn every_status_present_is_said_however_rare() {
    // #52 §5: 500 ×3, 403 ×2 and 416 ×2 among thousands of 200s were left out.
    let mut text = String::new();
    for i in 0..2000 {
        text += &combined("192.0.2.1", "a", 1, i % 24, "/a.html", 200);
    }
    for (status, n) in [(500, 3), (403, 2), (416, 2), (304, 40), (404, 30), (206, 9)] {
        for _ in 0..n {
            text += &combined("192.0.2.1", "a", 1, 5, "/a.html", status);
        }
    }
    let c = of_text(&text);
    let said = super::summary::text(&c, &["access.log".into()]);
    let line = said
        .lines()
        .find(|l| l.starts_with("Statuses:"))
        .expect("a status line");
    for status in ["200 ", "304 ", "404 ", "206 ", "500 ", "403 ", "416 "] {
        assert!(line.contains(status), "{status} missing: {line}");
    }
    assert!(line.contains("500 0.144 % (3)"), "{line}");
    // Most frequent first.
    assert!(line.find("200 ") < line.find("304 "), "{line}");
    assert!(line.find("500 ") < line.find("403 "), "{line}");
}

#[test]
fn visitors_are_counted_as_goaccess_counts_them_beside_clients_and_sessions() {
    // Three addresses. 192.0.2.1 with two agents on Oct 1 (curl's 404 makes no visitor, its
    // 500 does), and one of them again on Oct 2: 3 visitors. 192.0.2.2 at 23:00 and 23:30 of
    // Oct 1 in the log's zone (-0700): that is Oct 2 in UTC, yet one day of the log, so 1
    // visitor. 192.0.2.3, refused (403) and not found (404) only: no visitor. 4 visitors, 3
    // addresses (GoAccess 1.7 counts the same log so).
    let mut text = String::new();
    text += &combined("192.0.2.1", "firefox", 1, 9, "/a.html", 200);
    text += &combined("192.0.2.1", "firefox", 1, 10, "/b.png", 200);
    text += &combined("192.0.2.1", "curl", 1, 11, "/a.html", 404);
    text += &combined("192.0.2.1", "curl", 1, 11, "/a.html", 500);
    text += &combined("192.0.2.3", "curl", 1, 11, "/a.html", 403);
    text += &combined("192.0.2.3", "curl", 1, 12, "/b.html", 404);
    text += &combined("192.0.2.1", "firefox", 2, 9, "/a.html", 200);
    text += &combined("192.0.2.2", "firefox", 1, 23, "/a.html", 200);
    text += "192.0.2.2 - - [01/Oct/2024:23:30:00 -0700] \"GET /c.html HTTP/1.1\" 200 1 \"-\" \"firefox\"\n";
    let c = of_text(&text);
    assert_eq!(c.visitors.distinct, 4, "{:?}", c.visitors);
    assert_eq!(c.visitors.days, 2);
    assert!(c.visitors.exact);
    assert_eq!(c.clients.distinct, 3);
    // Sessions (30 min without a request ends one; any status): firefox on 192.0.2.1 three
    // times (9:00, 10:00, the next day), its curl once, 192.0.2.2 once, 192.0.2.3 twice
    // (11:00, 12:00).
    assert_eq!(c.sessions.sessions, 7);
    let said = super::summary::text(&c, &["access.log".into()]);
    let line = said
        .lines()
        .find(|l| l.starts_with("Visitors:"))
        .expect("a visitors line");
    assert!(
        line.starts_with("Visitors:  4 (as GoAccess counts"),
        "{line}"
    );
    assert!(
        line.contains("one client address with one user agent on one day"),
        "{line}"
    );
    assert!(line.contains("3 client addresses and 7 sessions"), "{line}");
    let html = super::page::page(&c, &["access.log".into()]).to_html();
    assert!(html.contains("visitors (GoAccess"), "{html}");
}

#[test]
fn a_logs_control_characters_never_reach_the_terminal_or_the_page() {
    // #51 §11: a bad line's user agent that clears the terminal and turns it red.
    let mut text = combined("192.0.2.1", "a", 1, 9, "/a.html", 200);
    text +=
        "192.0.2.9 - - [garbage] \"GET / HTTP/1.1\" 200 1 \"-\" \"\u{1b}[2J\u{1b}[31m\u{9b}6n\"\n";
    text += &combined("192.0.2.1", "a", 1, 9, "/b\u{202e}lmth.exe", 200);
    let c = of_text(&text);
    assert_eq!(c.bad_lines, 1);
    let said = super::summary::text(&c, &["access.log".into()]);
    let html = super::page::page(&c, &["access.log".into()]).to_html();
    for shown in [&said, &html] {
        assert!(
            !shown.contains('\u{1b}') && !shown.contains('\u{9b}') && !shown.contains('\u{202e}'),
            "a raw control character is printed"
        );
    }
    assert!(said.contains(r"\x1b[2J\x1b[31m\x9b6n"), "{said}");
    assert!(said.contains(r"/b\u{202e}lmth.exe"), "{said}");
    // The JSON report keeps the text as logged (JSON escapes it itself).
    let json = serde_json::to_string(&c).expect("serialisable");
    assert!(json.contains(r"\u001b[2J"), "{json}");
}
