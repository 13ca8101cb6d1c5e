//! `webscope load --users` against the real `webscope serve`: a log's sessions replayed by
//! users (their page views, as the log had them), users from the SURGE model on a file set,
//! and the users flags' errors.

mod load_support;

use std::time::Duration;

use load_support::{f, fileset, load, load_json, u, Serve};

const LIMIT: Duration = Duration::from_secs(30);

/// A Combined log line of `client` at second `s` of the log.
fn line(client: &str, s: u64, path: &str, status: u16) -> String {
    let t = 10 + s;
    format!(
        "{client} - - [27/Nov/2026:10:{:02}:{:02} +0000] \"GET {path} HTTP/1.1\" {status} 100 \"-\" \"Mozilla/5.0\"\n",
        t / 60,
        t % 60
    )
}

#[test]
fn users_go_through_a_logs_sessions_as_the_log_had_them() {
    let tmp = tempfile::tempdir().unwrap();
    let site = tmp.path().join("site");
    std::fs::create_dir(&site).unwrap();
    for name in ["index.html", "a.css", "b.png", "about.html"] {
        std::fs::write(site.join(name), "x".repeat(100)).unwrap();
    }
    // Three visitors: a page with two objects, then (1 s later) another page, one of whose
    // objects the log answered 404.
    let mut log = String::new();
    for (k, client) in ["10.0.0.1", "10.0.0.2", "10.0.0.3"].iter().enumerate() {
        let s = k as u64 * 2;
        log += &line(client, s, "/index.html", 200);
        log += &line(client, s, "/a.css", 200);
        log += &line(client, s, "/b.png", 200);
        log += &line(client, s + 1, "/about.html", 200);
        log += &line(client, s + 1, "/missing.png", 404);
    }
    let log_path = tmp.path().join("access.log");
    std::fs::write(&log_path, log).unwrap();
    let server = Serve::start(&site);
    let base = server.base();
    let args = [
        "--users",
        "3",
        "-t",
        "1",
        "--sessions",
        log_path.to_str().unwrap(),
        "--base",
        &base,
        "-d",
        "2500ms",
        "--ramp-up",
        "0s",
    ];
    let (r, out) = load_json(&args, LIMIT);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("sessions sampled from"), "{stdout}");
    let users = &r["users"];
    // Each user: page view 1 (3 requests), 1 s of thought, page view 2 (2 requests), a think
    // time from the log's (1 s), and so on: at least two page views each.
    assert!(u(users, "page_views") >= 6, "{users}");
    assert!(u(users, "sessions") >= 3, "{users}");
    // The 404 was the log's: no page view has an error.
    assert_eq!(u(users, "page_view_errors"), 0, "{users}");
    let codes = r["status_codes"].as_object().unwrap();
    assert!(codes.keys().all(|c| c == "200" || c == "404"), "{codes:?}");
    // A first view is three 200s, a second one a 200 and the 404: every page view's
    // requests, and no other, went out (views start 1 s apart, far from the run's end).
    let (ok, missing) = (u(&r["status_codes"], "200"), u(&r["status_codes"], "404"));
    let views = u(users, "page_views");
    assert!(missing >= 3, "{codes:?}");
    assert_eq!(ok, 3 * (views - missing) + missing, "{codes:?} {users}");
    // The kept think times are the log's whole seconds (a timer ends within half a
    // millisecond of its time, either side).
    let (min, max) = (f(&users["think_us"], "min"), f(&users["think_us"], "max"));
    assert!(min >= 0.999e6 && max < 1.1e6, "{users}");
    // No KS distance to a log's whole seconds: it would say nothing.
    assert!(users["think_ks_distance"].is_null(), "{users}");
}

#[test]
fn users_from_the_surge_model_on_a_file_set() {
    let tmp = tempfile::tempdir().unwrap();
    let set = tmp.path().join("wsA");
    fileset(&set, &["webstone-a", "--scale", "0.25"]);
    let server = Serve::start(&set);
    let base = server.base();
    let args = [
        "--users",
        "8",
        "--fileset",
        set.to_str().unwrap(),
        "--base",
        &base,
        "--think",
        "exp(50ms)",
        "-d",
        "2s",
    ];
    let (r, _) = load_json(&args, LIMIT);
    let users = &r["users"];
    assert_eq!(u(users, "users"), 8);
    assert_eq!(u(users, "connections_per_user"), 6);
    assert!(u(users, "page_views") > 20, "{users}");
    assert_eq!(u(users, "page_view_errors"), 0, "{users}");
    // SURGE's objects: at least one per page, so more requests than page views.
    assert!(u(&r, "requests") > 2 * u(users, "page_views"), "{r}");
    assert!(users["sessions_from"]
        .as_str()
        .unwrap()
        .contains("pareto(2.43,1,150)"));
    let intervals = r["intervals"].as_array().unwrap();
    assert!(
        intervals
            .iter()
            .all(|i| i["users"]["active"].as_u64().is_some()),
        "{intervals:?}"
    );
}

#[test]
fn a_bad_users_flag_is_one_line() {
    for (args, says) in [
        (
            &["--users", "4", "--think", "pareto(0.5,1)"][..],
            "alpha ≤ 1 has no mean",
        ),
        (&["--users", "0"][..], "--users must be at least 1"),
        (
            &["--users", "4", "--views", "geo(0.5)"][..],
            "parameters out of range",
        ),
        (
            &["--users", "3", "--rate", "100"][..],
            "cannot be used with",
        ),
        // Over HTTP/2 a user's streams are --user-connections, not -M.
        (
            &["--users", "3", "--http2", "-M", "4"][..],
            "cannot be used with",
        ),
    ] {
        let mut all = vec!["http://127.0.0.1:9/"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["-d", "1s"]);
        let out = load(&all, LIMIT);
        assert!(!out.status.success(), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

#[test]
fn regression_52_a_sampled_logs_sessions_at_a_think_scale_say_both_and_the_law_its_caveat() {
    let tmp = tempfile::tempdir().unwrap();
    let site = tmp.path().join("site");
    std::fs::create_dir(&site).unwrap();
    for name in ["index.html", "a.css", "about.html"] {
        std::fs::write(site.join(name), "x".repeat(100)).unwrap();
    }
    // Four hours logged in minute :05 alone (a sample): ten visitors an hour, each viewing
    // two pages 20 s apart, the first with an object.
    let at = |client: usize, hour: u64, s: u64, path: &str| {
        format!(
            "10.0.{hour}.{client} - - [27/Nov/2026:{:02}:05:{s:02} +0000] \"GET {path} HTTP/1.1\" 200 100 \"-\" \"Mozilla/5.0\"\n",
            10 + hour
        )
    };
    let mut log = String::new();
    for hour in 0..4 {
        for client in 0..10 {
            let s = client as u64 * 3;
            log += &at(client, hour, s, "/index.html");
            log += &at(client, hour, s, "/a.css");
            log += &at(client, hour, s + 20, "/about.html");
        }
    }
    let log_path = tmp.path().join("sampled.log");
    std::fs::write(&log_path, log).unwrap();
    let server = Serve::start(&site);
    let base = server.base();
    let args = [
        "--users",
        "4",
        "-t",
        "1",
        "--sessions",
        log_path.to_str().unwrap(),
        "--think-scale",
        "1/100",
        "--base",
        &base,
        "-d",
        "2s",
    ];
    let (r, out) = load_json(&args, LIMIT);
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The scale beside the users, with the sessions, and in the JSON.
    assert!(
        stdout.contains("with 4 users (thinking as the log's sessions at 1/100, mean 200 ms)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("think times at 1/100 of the log's (mean 200 ms instead of 20"),
        "{stdout}"
    );
    // The sample's sessions are said to be cut by its minutes.
    assert!(
        stdout.contains("the log is a sample (minute :05 of each hour): its sessions are cut"),
        "{stdout}"
    );
    let users = &r["users"];
    assert!(
        users["thinking"]
            .as_str()
            .unwrap_or("")
            .contains("at 1/100"),
        "{users}"
    );
    assert!(
        users["sessions_from"]
            .as_str()
            .unwrap_or("")
            .contains("at 1/100 of the log's"),
        "{users}"
    );
    // The law: with its caveat, or left out with why.
    let law = stdout.lines().find(|l| l.contains("R = N/X - Z")).unwrap();
    assert!(
        law.contains("left out: a user went through")
            || law.contains("left out: it would be")
            || law.contains("they part by the ramp-up"),
        "{law}"
    );
    let cycles = users["law_cycles"].as_f64().unwrap();
    assert_eq!(
        law.contains("left out: a user went through"),
        cycles < 10.0,
        "{law}: {cycles}"
    );
}

/// Issue 52: users over HTTP/2 were refused. Against `webscope serve` over TLS (ALPN h2):
/// each user keeps one connection, its page views and think times are as over HTTP/1.1,
/// and the report has every users figure.
#[test]
fn regression_52_users_over_http2_keep_one_connection_each_and_think_as_told() {
    let tmp = tempfile::tempdir().unwrap();
    let site = tmp.path().join("site");
    std::fs::create_dir(&site).unwrap();
    std::fs::write(site.join("index.html"), "x".repeat(1000)).unwrap();
    let made =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".into(), "localhost".into()]).unwrap();
    let (cert, key) = (tmp.path().join("cert.pem"), tmp.path().join("key.pem"));
    std::fs::write(&cert, made.cert.pem()).unwrap();
    std::fs::write(&key, made.key_pair.serialize_pem()).unwrap();
    let (c, k) = (cert.to_str().unwrap(), key.to_str().unwrap());
    let server = Serve::start_with(&site, &["--tls-cert", c, "--tls-key", k]);
    let url = format!("{}index.html", server.base());
    assert!(url.starts_with("https://"), "{url}");
    // 4 users, each page view a page and 2 objects, 200 ms of thought between views, 3
    // views a session, for 2 s.
    let (users_n, think_s, seconds) = (4u64, 0.2, 2.0);
    let args = [
        url.as_str(),
        "--http2",
        "--cacert",
        c,
        "--users",
        "4",
        "-t",
        "1",
        "--views",
        "const(3)",
        "--objects",
        "const(2)",
        "--think",
        "const(200ms)",
        "--ramp-up",
        "0s",
        "-d",
        "2s",
    ];
    let (r, _) = load_json(&args, LIMIT);
    let users = &r["users"];
    // One connection and one full TLS handshake per user, whatever the views: the page's
    // objects went as streams of it (HTTP/1.1 users open up to 3 each here).
    assert_eq!(u(&r, "connects"), users_n, "{r}");
    assert_eq!(r["protocol"], "HTTP/2 (a connection per user)");
    assert_eq!(u(&r["tls"], "full"), users_n, "{}", r["tls"]);
    assert_eq!(u(users, "connections_per_user"), 1, "{users}");
    assert_eq!(u(users, "streams_per_user"), 6, "{users}");
    assert_eq!(u(users, "users"), users_n);
    // Each user begins at once and then goes through a view and a think, over and over: at
    // least its first view; at most one more than the thinks that fit in the run.
    let views = u(users, "page_views");
    let most = users_n * ((seconds / think_s) as u64 + 1);
    assert!(
        views >= users_n && views <= most,
        "{views} page views: {users}"
    );
    assert_eq!(u(users, "page_view_errors"), 0, "{users}");
    // Every view: the page and its 2 objects; a view the end cut has fewer answered.
    let requests = u(&r, "requests");
    assert!(
        requests >= 3 * views && requests <= 3 * views + 2 * users_n,
        "{requests} requests for {views} views"
    );
    assert_eq!(u(&r["status_codes"], "200"), requests, "{r}");
    assert_eq!(u(&r["errors"], "total"), 0, "{r}");
    // Sessions of 3 views: a session per 3 views, and the ones begun and not ended.
    let sessions = u(users, "sessions");
    assert!(
        sessions >= views / 3 && sessions <= views / 3 + users_n,
        "{sessions} sessions for {views} views"
    );
    // A think after each view but the last of each user (which the end may cut), each of
    // them the 200 ms told (a timer ends no more than a millisecond early, less the
    // histogram's 0.1 % resolution).
    let thinks = u(&users["think_us"], "count");
    assert!(
        thinks <= views && thinks + users_n >= views,
        "{thinks} thinks for {views} views"
    );
    assert!(f(&users["think_us"], "min") >= 198_700.0, "{users}");
    assert!(
        (f(users, "think_configured_s") - think_s).abs() < 1e-9,
        "{users}"
    );
    // A constant's step CDF is at distance 1 from any kept sample: no distance is given.
    assert!(users["think_ks_distance"].is_null(), "{users}");
    assert!(
        users["thinking"].as_str().unwrap_or("").contains("200 ms"),
        "{users}"
    );
    assert!(f(users, "law_cycles") > 0.0, "{users}");
    assert_eq!(u(&users["page_load_us"], "count"), views, "{users}");
    let intervals = r["intervals"].as_array().unwrap();
    assert_eq!(
        intervals.last().map(|i| u(&i["users"], "active")),
        Some(users_n),
        "{intervals:?}"
    );
}
