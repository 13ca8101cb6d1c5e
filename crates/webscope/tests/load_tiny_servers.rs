//! `webscope load` against tiny servers of known behaviour: counts, close mode, error kinds,
//! a known delay, open-loop rate and the coordinated-omission correction.

mod load_support;

use std::time::Duration;

use load_support::{closed_port, f, load, load_json, load_json_failing, u, Behavior, TestServer};

const LIMIT: Duration = Duration::from_secs(20);

#[test]
fn keep_alive_counts_agree_with_the_server() {
    let server = TestServer::start(Behavior::Ok { body: 1024 });
    let (r, out) = load_json(
        &[&server.url("/x"), "-c", "4", "-t", "2", "-d", "1s"],
        LIMIT,
    );
    let requests = u(&r, "requests");
    assert!(requests > 200, "{r}");
    assert_eq!(u(&r["errors"], "total"), 0, "{r}");
    // The server answered every counted request, plus at most the ones in flight at the end.
    let answered = server.responses.load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        (requests..=requests + 4).contains(&answered),
        "{answered} vs {requests}"
    );
    assert_eq!(
        server
            .connections
            .load(std::sync::atomic::Ordering::Relaxed),
        4
    );
    assert!(u(&r, "bytes") >= requests * 1024);
    let duration = f(&r, "duration_s");
    assert!((0.9..1.5).contains(&duration), "{duration}");
    assert!((f(&r, "requests_per_s") - requests as f64 / duration).abs() < 1.0);
    for key in ["p50", "p90", "p99", "p999", "max", "mean"] {
        assert!(f(&r["latency_us"], key) > 0.0, "{key}");
    }
    assert!(f(&r["latency_us"], "max") >= f(&r["latency_us"], "p99"));
    assert!(f(&r, "generator_cpu_s") > 0.0);
    assert!(f(&r, "bytes_per_s") > 0.0);
    let intervals = r["intervals"].as_array().unwrap();
    assert!((1..=2).contains(&intervals.len()), "{intervals:?}");
    let summed: u64 = intervals.iter().map(|i| u(i, "requests")).sum();
    assert_eq!(summed, requests);
    assert_eq!(r["classes"].as_array().unwrap().len(), 1);
    let summary = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "Latency",
        "p99.9",
        "Requests/sec:",
        "Transfer/sec:",
        "Errors: none",
        "Generator:",
    ] {
        assert!(summary.contains(needle), "{needle} missing from\n{summary}");
    }
}

#[test]
fn close_mode_makes_one_connection_per_request() {
    let server = TestServer::start(Behavior::Ok { body: 100 });
    let (r, _) = load_json(
        &[
            &server.url("/"),
            "-c",
            "2",
            "-t",
            "1",
            "-d",
            "1s",
            "--close",
        ],
        LIMIT,
    );
    let requests = u(&r, "requests");
    assert!(requests > 50, "{r}");
    let accepted = server
        .connections
        .load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        (requests..=requests + 2).contains(&accepted),
        "{accepted} connections for {requests} requests"
    );
    assert!(r["connect_us"]["p50"].as_f64().unwrap() > 0.0);
    assert_eq!(r["mode"], "close");
}

#[test]
fn failures_are_counted_by_kind_and_the_run_goes_on() {
    let cases = [
        (Behavior::Reset, "reset"),
        (Behavior::ShortBody, "short_body"),
        (Behavior::Status(503), "bad_status"),
        (Behavior::Garbage, "parse_error"),
    ];
    for (behavior, kind) in cases {
        let server = TestServer::start(behavior);
        let (r, out) = load_json_failing(
            &[&server.url("/"), "-c", "2", "-t", "1", "-d", "400ms"],
            LIMIT,
        );
        let summary = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            summary.contains("Non-2xx or 3xx responses: "),
            kind == "bad_status",
            "{behavior:?}: {summary}"
        );
        let errors = &r["errors"];
        assert!(u(errors, kind) > 0, "{behavior:?}: {errors}");
        // A 503 is a response (in `requests`, `status_codes` and `bad_status`), not a failure
        // without one: `total` counts only the latter (#38).
        let failures = if kind == "bad_status" {
            assert_eq!(u(errors, kind), u(&r, "requests"), "{behavior:?}: {r}");
            0
        } else {
            u(errors, kind)
        };
        assert_eq!(u(errors, "total"), failures, "{behavior:?}: {errors}");
    }
    let refused = format!("http://{}/", closed_port());
    let (r, out) = load_json_failing(&[&refused, "-c", "2", "-t", "1", "-d", "300ms"], LIMIT);
    assert!(u(&r["errors"], "connect_refused") > 0, "{}", r["errors"]);
    assert_eq!(u(&r, "requests"), 0);
    assert!(String::from_utf8_lossy(&out.stdout).contains("no request succeeded"));

    let stall = TestServer::start(Behavior::Stall);
    let (r, _) = load_json_failing(
        &[
            &stall.url("/"),
            "-c",
            "2",
            "-t",
            "1",
            "-d",
            "700ms",
            "--timeout",
            "200ms",
        ],
        LIMIT,
    );
    // Two connections timing out every 200-220 ms in 700 ms.
    let timeouts = u(&r["errors"], "timeout");
    assert!((4..=8).contains(&timeouts), "{}", r["errors"]);
}

#[test]
fn a_known_delay_is_measured() {
    let server = TestServer::start(Behavior::Delay {
        body: 10,
        delay: Duration::from_millis(50),
    });
    let (r, _) = load_json(&[&server.url("/"), "-c", "2", "-t", "1", "-d", "1s"], LIMIT);
    let p50 = f(&r["latency_us"], "p50");
    // Never less than the delay; a little more on a busy machine.
    assert!((50_000.0..80_000.0).contains(&p50), "p50 {p50}us");
    // Two connections at 50 ms each: at most 40 requests per second.
    let rps = f(&r, "requests_per_s");
    assert!((20.0..=41.0).contains(&rps), "{rps}");
}

#[test]
fn open_loop_keeps_the_asked_rate() {
    let server = TestServer::start(Behavior::Ok { body: 100 });
    for arrivals in ["constant", "poisson"] {
        let (r, _) = load_json(
            &[
                &server.url("/"),
                "-c",
                "4",
                "-t",
                "2",
                "-d",
                "2s",
                "--rate",
                "2000",
                "--arrivals",
                arrivals,
            ],
            LIMIT,
        );
        let achieved = u(&r, "requests") as f64 / 2.0;
        let tolerance = if arrivals == "constant" { 0.02 } else { 0.06 };
        assert!(
            (achieved / 2000.0 - 1.0).abs() < tolerance,
            "{arrivals}: {achieved}/s"
        );
        // A slot whose time passed while the generator was descheduled at the run's end is
        // honestly counted as not sent; more than 1 % would be the rate not kept.
        assert!(u(&r, "not_sent") <= 40, "{arrivals}: {}", r["not_sent"]);
        assert_eq!(r["pacing"], "open");
        assert!(r["uncorrected_latency_us"]["p50"].as_f64().unwrap() > 0.0);
    }
}

#[test]
fn open_loop_shows_the_stall_that_closed_loop_hides() {
    // Responses take ~0 ms, except that the server stalls everything once for 500 ms.
    let stall = || {
        TestServer::start(Behavior::StallOnce {
            body: 10,
            after: Duration::from_millis(400),
            length: Duration::from_millis(500),
        })
    };
    let closed_server = stall();
    let (closed, _) = load_json(
        &[
            &closed_server.url("/"),
            "-c",
            "4",
            "-t",
            "1",
            "-d",
            "1500ms",
        ],
        LIMIT,
    );
    let open_server = stall();
    let (open, _) = load_json(
        &[
            &open_server.url("/"),
            "-c",
            "4",
            "-t",
            "1",
            "-d",
            "1500ms",
            "--rate",
            "1000",
            "--max-connections",
            "4",
        ],
        LIMIT,
    );
    let closed_p99 = f(&closed["latency_us"], "p99");
    let open_p99 = f(&open["latency_us"], "p99");
    let open_p90 = f(&open["latency_us"], "p90");
    let uncorrected_p99 = f(&open["uncorrected_latency_us"], "p99");
    // Closed loop: only the 4 requests caught in the stall saw it, among thousands.
    assert!(closed_p99 < 100_000.0, "closed-loop p99 {closed_p99}us");
    assert!(f(&closed["latency_us"], "max") > 300_000.0);
    // Open loop: every request scheduled during the stall waited for it.
    assert!(open_p99 > 300_000.0, "open-loop p99 {open_p99}us");
    assert!(open_p90 > 50_000.0, "open-loop p90 {open_p90}us");
    assert!(
        uncorrected_p99 < open_p99 / 2.0,
        "uncorrected p99 {uncorrected_p99}us"
    );
}

#[test]
fn think_time_paces_a_closed_loop() {
    let server = TestServer::start(Behavior::Ok { body: 10 });
    let (r, _) = load_json(
        &[
            &server.url("/"),
            "-c",
            "2",
            "-t",
            "1",
            "-d",
            "1s",
            "--think-time",
            "100ms",
        ],
        LIMIT,
    );
    // Two connections, each one request per ~100 ms.
    let requests = u(&r, "requests");
    assert!((14..=22).contains(&requests), "{requests}");
}

#[test]
fn bad_input_is_one_line() {
    let port = closed_port().to_string();
    let url = format!("http://{port}/");
    let cases: Vec<Vec<String>> = vec![
        vec![
            "https://127.0.0.1/".into(),
            "--cacert".into(),
            "/nonexistent.pem".into(),
        ],
        vec!["ftp://127.0.0.1/".into()],
        vec![url.clone(), "-c".into(), "0".into()],
        vec![
            url.clone(),
            "-c".into(),
            "2".into(),
            "-t".into(),
            "3".into(),
        ],
        vec![url.clone(), "--rate".into(), "0".into()],
        vec![url.clone(), "-H".into(), "no colon".into()],
        vec![
            "--fileset".into(),
            "/nonexistent".into(),
            "--base".into(),
            url.clone(),
        ],
        vec![url.clone(), "-d".into(), "0s".into()],
        vec![url.clone(), "-d".into(), "-3s".into()],
    ];
    for case in cases {
        let args: Vec<&str> = case.iter().map(String::as_str).collect();
        let out = load(&args, LIMIT);
        assert!(!out.status.success(), "{case:?} should fail");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = stderr
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with("For more information"))
            .collect();
        assert_eq!(lines.len(), 1, "{case:?}: {stderr}");
    }
}

#[test]
fn backoff_503_paces_refused_clients_as_retry_after_would() {
    let server = TestServer::start(Behavior::Status(503));
    let url = server.url("/");
    // Without a backoff, 2 clients ask again at once: thousands of 503s in a second.
    let (eager, _) = load_json_failing(&[&url, "-c", "2", "-t", "1", "-d", "1s"], LIMIT);
    assert!(u(&eager, "requests") > 200, "{eager}");
    // With 400 ms, each client asks about every 400 ms: 2 clients * 3 tries in 1 s.
    let (paced, _) = load_json_failing(
        &[
            &url,
            "-c",
            "2",
            "-t",
            "1",
            "-d",
            "1s",
            "--backoff-503",
            "400ms",
        ],
        LIMIT,
    );
    let n = u(&paced, "requests");
    assert!((4..=8).contains(&n), "{n} requests: {paced}");
}

/// `--threshold` judges the run as k6 does: every condition printed with its figure; a crossed
/// one exits 99, one whose figure the run did not measure exits 3, bad grammar exits 2 with
/// the bad part named; without thresholds a run with successes exits 0.
#[test]
fn thresholds_pass_fail_or_cannot_be_decided_each_with_its_exit_code() {
    let server = TestServer::start(Behavior::Delay {
        body: 100,
        delay: Duration::from_millis(20),
    });
    let url = server.url("/");
    let run = |threshold: &str| {
        load(
            &[
                &url,
                "-c",
                "2",
                "-t",
                "1",
                "-d",
                "500ms",
                "--threshold",
                threshold,
            ],
            LIMIT,
        )
    };
    let out = run("p99<=10s,p99.99<10s,max<10s,errors<=1%");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(stdout.contains("Thresholds:"), "{stdout}");
    assert!(stdout.contains("  p99.99<10s: "), "{stdout}");
    assert!(stdout.contains("errors<=1%: 0 %, passed"), "{stdout}");

    // Every response waits 20 ms: a 1 ms p50 is crossed.
    let out = run("p50<1ms,errors<=1%");
    assert_eq!(out.status.code(), Some(99), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("p50<1ms: ") && stdout.contains("FAILED"),
        "{stdout}"
    );
    assert!(stdout.contains("errors<=1%: 0 %, passed"), "{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.trim(),
        "webscope: threshold crossed: p50<1ms",
        "{stderr}"
    );

    // A closed loop sends every request when its client is ready: none is "never sent", so
    // that share cannot be judged, and that is not a pass. Goodput (good responses over the
    // requests that ended) can.
    let out = run("p99<10s,goodput>=99%,not_sent<=1%");
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("not_sent<=1%: not measured in this run, cannot be decided"),
        "{stdout}"
    );
    assert!(stdout.contains("goodput>=99%: 100 %, passed"), "{stdout}");

    for (bad, named) in [
        ("p101<5ms", "p101"),
        ("p99<5", "has no unit"),
        ("", "empty"),
    ] {
        let out = run(bad);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(named), "{bad:?}: {stderr}");
    }
}

/// A segment's banner gives the connections this process opens, its share of the run's.
#[test]
fn a_segments_banner_counts_its_own_connections() {
    let server = TestServer::start(Behavior::Ok { body: 10 });
    let url = server.url("/");
    for (segment, expected) in [("0/3", "with 4 connections"), ("2/3", "with 3 connections")] {
        let out = load(
            &[
                &url,
                "-c",
                "10",
                "-t",
                "1",
                "-d",
                "200ms",
                "--segment",
                segment,
            ],
            LIMIT,
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        let banner = stdout.lines().next().unwrap_or("");
        assert!(banner.contains(expected), "{segment}: {banner}");
    }
}

/// #47: the run's `--expect-status` decides what an error is, for the whole run, its class
/// rows and its intervals alike (the engine once counted every status of 400 and above).
#[test]
fn expect_status_decides_the_errors_of_classes_and_intervals_too() {
    let server = TestServer::start(Behavior::Status(404));
    let url = server.url("/missing");
    let run = [url.as_str(), "-c", "2", "-t", "1", "-d", "500ms"];
    let errors = |r: &serde_json::Value| {
        let class = u(&r["classes"][0]["errors"], "bad_status");
        let intervals: u64 = r["intervals"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| u(i, "errors"))
            .sum();
        (class, intervals)
    };
    let (r, _) = load_json_failing(&run, LIMIT);
    let requests = u(&r, "requests");
    assert!(requests > 0, "{r}");
    assert_eq!(errors(&r), (requests, requests), "{r}");
    assert!(r.get("expect").is_none(), "{r}");

    let expecting = [
        &run[..],
        &["--expect-status", "404", "--threshold", "errors<=1%"],
    ]
    .concat();
    let (r, out) = load_json(&expecting, LIMIT);
    assert!(u(&r, "requests") > 0, "{r}");
    assert_eq!(errors(&r), (0, 0), "{r}");
    assert_eq!(r["expect"], "404", "{r}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("errors<=1%: 0 %, passed"), "{stdout}");
    assert!(!stdout.contains("Non-2xx"), "{stdout}");

    let out = load(&[&url, "--expect-status", "600"], LIMIT);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("\"600\" is not a status"), "{stderr}");
}
