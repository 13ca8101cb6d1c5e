//! Session scripts on logs whose sessions are known by construction, against the session
//! counter on generated logs, and the sample's and the caps' bounds.

use std::time::{Duration, UNIX_EPOCH};

use webscope_workload::Rng;

use super::*;
use crate::characterize::sessions::{SessionCounter, SESSION_GAP_S};

const T0: i64 = 1_700_000_000;

/// A GET of `target` answered 200 with 100 bytes, by `client` with user agent `agent` at `t`.
fn entry(client: &str, agent: &str, t: i64, target: &str) -> Entry {
    let (path, query) = match target.split_once('?') {
        Some((path, query)) => (path, Some(CompactString::from(query))),
        None => (target, None),
    };
    Entry {
        time: UNIX_EPOCH + Duration::from_secs(t as u64),
        zone_s: 0,
        client: client.into(),
        method: "GET".into(),
        path: path.into(),
        query,
        protocol: "HTTP/1.1".into(),
        status: 200,
        bytes: 100,
        referer: None,
        user_agent: Some(agent.into()),
        request_time: None,
        file: 0,
        line: 0,
    }
}

fn get(target: &str) -> ScriptRequest {
    ScriptRequest {
        method: "GET".into(),
        target: target.into(),
        status: 200,
        bytes: 100,
    }
}

fn view(page: ScriptRequest, objects: Vec<ScriptRequest>, think_s: Option<f64>) -> ScriptView {
    ScriptView {
        page,
        objects,
        think_s,
    }
}

fn collect(entries: &[Entry], limit: usize, seed: u64) -> Scripts {
    let mut c = ScriptCollector::new(SESSION_GAP_S, limit, seed);
    entries.iter().for_each(|e| c.add(e));
    c.finish()
}

#[test]
fn a_known_log_gives_exactly_its_scripts() {
    let (a, ff, curl) = ("192.0.2.1", "Firefox/128", "curl/8");
    let mut css = entry(a, curl, T0 + 1, "/x.css");
    (css.status, css.bytes) = (404, 0);
    let mut head = entry(a, ff, T0 + 4, "/b.js");
    head.method = "HEAD".into();
    let mut unreadable = entry(a, ff, T0 + 2, "-");
    unreadable.method = "-".into();
    let entries = [
        entry(a, ff, T0, "/"),
        // The same address with another agent: a session of its own, that starts with
        // objects before its first page.
        entry(a, curl, T0, "/logo.png"),
        entry(a, ff, T0, "/a.css"),
        css,
        // No readable request: no part of a session (it would be an object of the first).
        unreadable,
        head,
        entry(a, curl, T0 + 3, "/index.html"),
        // 6 s after the last object: a page view of its own.
        entry(a, ff, T0 + 10, "/c.png"),
        // A route without an extension, with its query.
        entry(a, ff, T0 + 12, "/search?q=a+b"),
        entry(a, ff, T0 + 15, "/d.png"),
        // Exactly 5 s after the one before: still an object of the view.
        entry(a, ff, T0 + 20, "/e.png"),
        // Exactly 30 min after the session's last request: the same session.
        entry(a, curl, T0 + 3 + SESSION_GAP_S, "/again.html"),
        // 30 min and 1 s after: a new session.
        entry(a, ff, T0 + 21 + SESSION_GAP_S, "/"),
    ];
    let s = collect(&entries, 10, 1);
    let mut head_js = get("/b.js");
    head_js.method = "HEAD".into();
    let mut missing_css = get("/x.css");
    (missing_css.status, missing_css.bytes) = (404, 0);
    let expected = vec![
        Script {
            views: vec![
                view(get("/"), vec![get("/a.css"), head_js], Some(6.0)),
                view(get("/c.png"), vec![], Some(2.0)),
                view(
                    get("/search?q=a+b"),
                    vec![get("/d.png"), get("/e.png")],
                    None,
                ),
            ],
            cut: false,
        },
        Script {
            views: vec![
                view(get("/logo.png"), vec![missing_css], Some(2.0)),
                view(get("/index.html"), vec![], Some(SESSION_GAP_S as f64)),
                view(get("/again.html"), vec![], None),
            ],
            cut: false,
        },
        Script {
            views: vec![view(get("/"), vec![], None)],
            cut: false,
        },
    ];
    assert_eq!(s.scripts, expected);
    assert_eq!((s.sessions, s.page_views, s.requests), (3, 7, 12));
    assert_eq!((s.kept_requests, s.cut), (12, 0));
    assert_eq!((s.gap_s, s.object_gap_s), (SESSION_GAP_S as u64, 5));
}

/// A generated log of `visitors` visitors (up to 600: 50 addresses of a /24, 4 agents each), each with a few
/// sessions of pages and objects whose pauses straddle the object gap (0-7 s), are think
/// times (10-600 s) or straddle the session gap (1 790-1 810 s); some sessions start with an
/// object. When `jitter`, one entry in 50 is logged 1-2 s early, out of order.
fn generated(visitors: u64, seed: u64, jitter: bool) -> Vec<Entry> {
    let mut rng = Rng::new(seed);
    let agents = ["Firefox/128", "Chrome/126", "curl/8", "Googlebot/2.1"];
    let mut entries = Vec::new();
    for v in 0..visitors {
        let client = format!("10.0.{}.{}", v / 200, v % 50);
        let agent = agents[(v / 50 % 4) as usize];
        let mut t = T0 + rng.below(3_600) as i64;
        for r in 0..5 + rng.below(40) {
            let target = match (r, rng.below(6)) {
                (0, 0) | (_, 1..=2) => format!("/img/{}.png", rng.below(20)),
                (_, 3) => format!("/p{}.html", rng.below(20)),
                (_, 4) => format!("/route/{}?page={}", rng.below(20), rng.below(3)),
                _ => "/".to_string(),
            };
            entries.push(entry(&client, agent, t, &target));
            t += match rng.below(10) {
                0..=5 => rng.below(8),
                6..=8 => 10 + rng.below(591),
                _ => 1_790 + rng.below(21),
            } as i64;
        }
    }
    entries.sort_by_key(|e| e.time);
    if jitter {
        for (i, e) in entries.iter_mut().enumerate() {
            if i % 50 == 7 {
                e.time -= Duration::from_secs(1 + i as u64 % 2);
            }
        }
    }
    entries
}

#[test]
fn scripts_find_the_sessions_and_page_views_the_counter_finds() {
    for seed in [1, 2, 3] {
        let entries = generated(600, seed, true);
        let mut counter = SessionCounter::new(SESSION_GAP_S);
        for e in &entries {
            let agent = e.user_agent.as_deref().unwrap_or("");
            counter.add(&e.client, agent, super::super::unix(e), &e.path);
        }
        let counted = counter.finish();
        let s = collect(&entries, usize::MAX, seed);
        assert_eq!(s.scripts.len() as u64, s.sessions, "all kept, seed {seed}");
        assert_eq!(s.sessions, counted.sessions, "seed {seed}");
        assert_eq!(s.page_views, counted.page_views, "seed {seed}");
        let views: usize = s.scripts.iter().map(|s| s.views.len()).sum();
        assert_eq!(views as u64, counted.page_views, "seed {seed}");
        assert_eq!(s.requests, entries.len() as u64);
        assert_eq!(s.kept_requests, s.requests);
        let singles = s.scripts.iter().filter(|s| s.requests() == 1).count();
        assert_eq!(singles as u64, counted.single_request, "seed {seed}");
        let most = s.scripts.iter().map(Script::requests).max().unwrap_or(0);
        assert_eq!(most as u64, counted.requests_per_session.max, "seed {seed}");
        let thinks: Vec<f64> = s
            .scripts
            .iter()
            .flat_map(|s| s.views.iter().filter_map(|v| v.think_s))
            .collect();
        assert_eq!(thinks.len() as u64, counted.think.count, "seed {seed}");
        let mean = thinks.iter().sum::<f64>() / thinks.len() as f64;
        assert!((mean - counted.think.mean_s).abs() < 1e-9, "seed {seed}");
        // The log has what the test is about: object and think pauses, long sessions.
        assert!(counted.sessions > 600 && counted.page_views > 2 * counted.sessions);
    }
}

/// `n` sessions of two requests each, the i-th a page `/s{i}` at `T0 + i` and an object 3 s
/// later, each of its own client: many sessions open at once, so that the sample evicts
/// sessions still open.
fn overlapping(n: u64) -> Vec<Entry> {
    let mut entries: Vec<Entry> = (0..n)
        .flat_map(|i| {
            let client = format!("10.1.{}.{}", i / 250, i % 250);
            [
                entry(&client, "ua", T0 + i as i64, &format!("/s{i}")),
                entry(&client, "ua", T0 + i as i64 + 3, &format!("/s{i}/x.png")),
            ]
        })
        .collect();
    entries.sort_by_key(|e| e.time);
    entries
}

/// The session numbers (`i` of `/s{i}`) of a sample.
fn sampled(s: &Scripts) -> Vec<u64> {
    s.scripts
        .iter()
        .filter_map(|s| s.views[0].page.target.strip_prefix("/s")?.parse().ok())
        .collect()
}

#[test]
fn the_sample_keeps_limit_whole_sessions_uniformly_and_counts_them_all() {
    let entries = overlapping(1_000);
    let s = collect(&entries, 100, 42);
    assert_eq!(
        (s.sessions, s.page_views, s.requests),
        (1_000, 1_000, 2_000)
    );
    assert_eq!(s.scripts.len(), 100);
    assert_eq!(s.kept_requests, 200, "each kept session whole");
    for (i, script) in sampled(&s).iter().zip(&s.scripts) {
        let whole = vec![view(
            get(&format!("/s{i}")),
            vec![get(&format!("/s{i}/x.png"))],
            None,
        )];
        assert_eq!(script.views, whole);
    }
    let ids = sampled(&s);
    assert!(
        ids.windows(2).all(|w| w[0] < w[1]),
        "in start order, distinct"
    );
    // A uniform sample of 100 of 0..1000: its mean near 499.5 (s.e. about 27).
    let mean = ids.iter().sum::<u64>() as f64 / ids.len() as f64;
    assert!((350.0..650.0).contains(&mean), "{mean}");
    assert!(ids.iter().any(|&i| i < 100) && ids.iter().any(|&i| i >= 900));
    assert_eq!(sampled(&collect(&entries, 100, 42)), ids, "the same seed");
    assert_ne!(sampled(&collect(&entries, 100, 43)), ids, "another seed");
}

#[test]
fn a_sample_larger_than_the_log_keeps_every_session_and_none_keeps_none() {
    let entries = overlapping(30);
    let all = collect(&entries, 1_000, 7);
    assert_eq!(sampled(&all), (0..30).collect::<Vec<u64>>());
    let none = collect(&entries, 0, 7);
    assert!(none.scripts.is_empty());
    assert_eq!((none.sessions, none.kept_requests), (30, 0));
}

#[test]
fn a_session_past_the_caps_is_cut_and_counted() {
    let mut entries: Vec<Entry> = (0..MAX_VIEWS as i64 + 5)
        .map(|k| entry("10.2.0.1", "crawler", T0 + 10 * k, &format!("/p{k}")))
        .collect();
    // Another visitor: a page, then objects 1 s apart, past the requests' cap.
    entries.extend(
        (0..MAX_REQUESTS as i64 + 3)
            .map(|k| entry("10.2.0.2", "bot", T0 + k, &format!("/o{k}.png")))
            .chain([entry("10.2.0.3", "Firefox", T0, "/")]),
    );
    entries.sort_by_key(|e| e.time);
    let s = collect(&entries, 10, 1);
    assert_eq!((s.sessions, s.cut), (3, 2));
    assert_eq!(
        s.page_views,
        MAX_VIEWS as u64 + 5 + 1 + 1,
        "every view counted"
    );
    let crawler = &s.scripts[0];
    assert!(crawler.cut);
    assert_eq!(crawler.views.len(), MAX_VIEWS);
    assert_eq!(crawler.views[MAX_VIEWS - 2].think_s, Some(10.0));
    assert_eq!(
        crawler.views[MAX_VIEWS - 1].think_s,
        None,
        "the script ends"
    );
    let bot = &s.scripts[1];
    assert!(bot.cut);
    assert_eq!((bot.views.len(), bot.requests()), (1, MAX_REQUESTS));
    assert_eq!(s.scripts[2].views.len(), 1);
    assert!(!s.scripts[2].cut);
    assert_eq!(s.kept_requests, (MAX_VIEWS + MAX_REQUESTS + 1) as u64);
}

/// `entries` as Combined log lines (times within two weeks of `T0`, in UTC).
fn combined(entries: &[Entry]) -> String {
    let day_start = T0 - T0 % 86_400; // 14 Nov 2023, 00:00 UTC
    entries
        .iter()
        .map(|e| {
            let s = super::super::unix(e) - day_start;
            let (d, h, m, sec) = (14 + s / 86_400, s / 3600 % 24, s / 60 % 60, s % 60);
            let target = match &e.query {
                Some(q) => format!("{}?{q}", e.path),
                None => e.path.to_string(),
            };
            let agent = e.user_agent.as_deref().unwrap_or("-");
            format!(
                "{} - - [{d:02}/Nov/2023:{h:02}:{m:02}:{sec:02} +0000] \"{} {target} HTTP/1.1\" {} {} \"-\" \"{agent}\"\n",
                e.client, e.method, e.status, e.bytes
            )
        })
        .collect()
}

#[test]
fn scripts_read_from_a_file_are_the_same_whatever_the_threads() {
    let entries = generated(300, 9, false);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let log = dir.path().join("access.log");
    std::fs::write(&log, combined(&entries)).expect("the log written");
    let read = |threads| {
        let options = ReadOptions {
            threads,
            ..ReadOptions::default()
        };
        session_scripts(std::slice::from_ref(&log), &options, SESSION_GAP_S, 50, 5)
            .expect("the log read")
    };
    let (one, summary) = read(1);
    let (two, _) = read(2);
    assert_eq!(summary.entries, entries.len() as u64);
    assert_eq!(one, two);
    assert_eq!(one.scripts.len(), 50);
    // The reader adds the log's coverage, counted as `characterize` counts it.
    let mut held = collect(&entries, 50, 5);
    let mut minutes = crate::characterize::MinuteCounts::default();
    for e in &entries {
        minutes.add(
            e.time
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()) as i64,
        );
    }
    held.coverage = minutes.coverage();
    assert_eq!(one, held, "as the entries held in memory");
    let missing = dir.path().join("missing.log");
    let err = session_scripts(&[missing], &ReadOptions::default(), SESSION_GAP_S, 50, 5);
    assert!(matches!(err, Err(Error::Open { .. })), "{err:?}");
}

/// `n` sessions of one client each, `views` page views of one request each, every target
/// `url_bytes` long.
fn long_urls(n: u64, views: u64, url_bytes: usize) -> Vec<Entry> {
    let mut entries = Vec::new();
    for k in 0..views {
        for c in 0..n {
            let target = format!("/{c}/{k}/{}", "u".repeat(url_bytes));
            entries.push(entry(
                &format!("10.1.{}.{}", c / 250, c % 250),
                "a",
                (k * 60) as i64,
                &target,
            ));
        }
    }
    entries
}

/// Issue 51, item 9: the scripts held every URL of the sessions sampled (5.3 GB for a log of
/// 3 000 sessions with 60 KB URLs). They stay within the budget now: the sample is made
/// smaller, uniformly, and says so; one session's script is cut at its share.
#[test]
fn the_scripts_stay_within_their_byte_budget_and_say_when_the_sample_was_cut() {
    let budget = 4 << 20;
    let entries = long_urls(400, 10, 6_000);
    let mut c = ScriptCollector::new(SESSION_GAP_S, 10_000, 3).with_budget(budget);
    for e in &entries {
        c.add(e);
    }
    let s = c.finish();
    let bytes: usize = s
        .scripts
        .iter()
        .flat_map(|script| &script.views)
        .map(|v| v.page.target.len() + REQUEST_BYTES)
        .sum();
    assert!(bytes <= budget, "{bytes} bytes held, budget {budget}");
    assert!(s.budget_cut, "the sample was cut and says so");
    assert_eq!(s.sessions, 400, "every session counted");
    assert!(
        s.scripts.len() > 20 && s.scripts.len() < 400,
        "{} sessions kept",
        s.scripts.len()
    );
    assert_eq!(s.limit, s.scripts.len());
    // Whole sessions, from all over the log (a uniform sample): no script was cut.
    assert!(s
        .scripts
        .iter()
        .all(|script| script.views.len() == 10 && !script.cut));
    let clients: Vec<u64> = s
        .scripts
        .iter()
        .map(|script| {
            script.views[0].page.target[1..]
                .split('/')
                .next()
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    let mean = clients.iter().sum::<u64>() as f64 / clients.len() as f64;
    assert!(
        (120.0..280.0).contains(&mean),
        "mean client {mean} of 0..400"
    );
    // One session longer than a sixteenth of the budget is cut there.
    let one = long_urls(1, 200, 6_000);
    let mut c = ScriptCollector::new(SESSION_GAP_S, 10_000, 3).with_budget(budget);
    for e in &one {
        c.add(e);
    }
    let s = c.finish();
    assert_eq!((s.scripts.len(), s.cut_for_bytes), (1, 1));
    let script = &s.scripts[0];
    assert!(script.cut && script.views.len() < 200 && script.views.len() > 20);
    assert!(s.budget_cut);
}
