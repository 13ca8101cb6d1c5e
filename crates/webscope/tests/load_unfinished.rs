//! `webscope load` accounts for every request it sent: one still unanswered when the run ends
//! is counted as unfinished, with its age, on both engines, over TLS and HTTP/2; a run in
//! which nothing finished says so and exits 1; HTTP/2 failures are named by their cause (a
//! GOAWAY only when the server sent one, with its code).

mod load_support;

use std::time::Duration;

use load_support::{f, load_json_exiting, load_json_failing, u, Behavior, TestServer};
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(20);

/// Ten connections' requests, sent at the start of a 1 s run, unanswered at its end: ten
/// unfinished, aged about the run (at most its length: they were sent after it began).
fn assert_ten_about_a_second_old(r: &Value, what: &str) {
    assert_eq!(u(r, "unfinished"), 10, "{what}: {r}");
    assert_eq!(u(&r["classes"][0], "unfinished"), 10, "{what}: {r}");
    let ages = &r["unfinished_age_us"];
    assert_eq!(u(ages, "count"), 10, "{what}: {ages}");
    // Sent within the run's first half even on a busy machine; never before it began (the
    // histogram keeps 3 significant digits).
    assert!(f(ages, "min") >= 500_000.0, "{what}: {ages}");
    assert!(f(ages, "max") <= 1_001_000.0, "{what}: {ages}");
}

#[test]
fn a_server_that_never_answers_leaves_every_request_unfinished_and_the_run_fails() {
    let server = TestServer::start(Behavior::Stall);
    let http = server.url("/");
    let https = http.replace("http://", "https://");
    let cases: [(&str, &[&str]); 5] = [
        ("epoll", &[&http]),
        ("io_uring", &[&http, "--io", "uring"]),
        ("h2c", &[&http, "--http2"]),
        ("TLS (the handshake unanswered)", &[&https]),
        ("HTTP/2 over TLS", &[&https, "--http2"]),
    ];
    for (what, args) in cases {
        let mut all = args.to_vec();
        all.extend_from_slice(&["-c", "10", "-t", "2", "-d", "1s"]);
        let (r, out) = load_json_failing(&all, LIMIT);
        assert_eq!(u(&r, "requests"), 0, "{what}: {r}");
        // Not failures: the run ended before they could be anything.
        assert_eq!(u(&r["errors"], "total"), 0, "{what}: {r}");
        assert_ten_about_a_second_old(&r, what);
        let summary = String::from_utf8_lossy(&out.stdout);
        for needle in [
            "Unfinished at the end: 10 (age: oldest ",
            "total          none: no response came",
            "warning: no request succeeded: no response came at all; 10 requests were still unanswered at the end",
        ] {
            assert!(summary.contains(needle), "{what}: {needle:?} not in\n{summary}");
        }
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("(no response; 0 failed without a response; 10 unfinished at the end)"),
            "{what}: {stderr}"
        );
    }
}

#[test]
fn a_server_that_answers_only_first_requests_leaves_the_second_ones_unfinished() {
    let server = TestServer::start(Behavior::AnswerFirst { body: 100 });
    for engine in ["epoll", "uring"] {
        let (r, out) = load_json_exiting(
            &[
                &server.url("/"),
                "-c",
                "10",
                "-t",
                "2",
                "-d",
                "1s",
                "--io",
                engine,
            ],
            LIMIT,
        );
        assert!(out.status.success(), "{engine}: {out:?}");
        assert_eq!(u(&r, "requests"), 10, "{engine}: {r}");
        assert_eq!(u(&r["errors"], "total"), 0, "{engine}: {r}");
        assert_ten_about_a_second_old(&r, engine);
        let summary = String::from_utf8_lossy(&out.stdout);
        assert!(summary.contains("Unfinished at the end: 10 "), "{summary}");
        assert!(!summary.contains("no request succeeded"), "{summary}");
    }
}

#[test]
fn http2_failures_are_named_by_their_cause() {
    // Bytes that are not HTTP/2 frames: the client's library ends the connection, and that
    // is a protocol (parse) error of the server, not a GOAWAY it sent.
    let garbage = TestServer::start(Behavior::Garbage);
    let (r, out) = load_json_failing(
        &[
            &garbage.url("/"),
            "--http2",
            "-c",
            "2",
            "-t",
            "1",
            "-d",
            "300ms",
        ],
        LIMIT,
    );
    let errors = &r["errors"];
    assert!(u(errors, "parse_error") > 0, "{errors}");
    assert_eq!(u(errors, "goaway"), 0, "{errors}");
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(
        summary.contains("warning: HTTP/2: the server's bytes broke the protocol"),
        "{summary}"
    );
    // A GOAWAY the server did send is one, with its code (11: ENHANCE_YOUR_CALM).
    let goaway = TestServer::start(Behavior::GoAway(11));
    let (r, out) = load_json_failing(
        &[
            &goaway.url("/"),
            "--http2",
            "-c",
            "2",
            "-t",
            "1",
            "-d",
            "300ms",
        ],
        LIMIT,
    );
    let errors = &r["errors"];
    assert!(u(errors, "goaway") > 0, "{errors}");
    assert_eq!(u(errors, "goaway"), u(errors, "total"), "{errors}");
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(
        summary.contains("warning: HTTP/2: the server sent GOAWAY ENHANCE_YOUR_CALM"),
        "{summary}"
    );
}
