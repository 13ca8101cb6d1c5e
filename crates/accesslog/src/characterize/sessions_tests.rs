//! Sessions and page views counted on logs whose sessions are known by construction.

use super::*;

const T0: i64 = 1_700_000_000;

#[test]
fn a_client_s_agents_are_sessions_of_their_own_and_a_gap_ends_one() {
    let mut c = SessionCounter::new(SESSION_GAP_S);
    c.add("192.0.2.1", "firefox", T0, "/");
    c.add("192.0.2.1", "curl", T0 + 1, "/");
    c.add("192.0.2.1", "firefox", T0 + 60, "/about");
    // 30 min and 1 s after its last request: a new session.
    c.add("192.0.2.1", "firefox", T0 + 60 + SESSION_GAP_S + 1, "/");
    let s = c.finish();
    assert_eq!(s.sessions, 3);
    assert_eq!(s.single_request, 2);
    assert_eq!(s.page_views, 4);
    assert_eq!(s.duration_s.max, 60);
}

#[test]
fn a_page_view_holds_the_objects_that_follow_it_closely() {
    let mut c = SessionCounter::new(SESSION_GAP_S);
    let ua = "Mozilla/5.0";
    // A page and three objects within 5 s of each other: one view.
    for (dt, path) in [
        (0, "/index.html"),
        (0, "/a.css"),
        (1, "/b.js"),
        (3, "/c.png"),
    ] {
        c.add("198.51.100.7", ua, T0 + dt, path);
    }
    // A route without an extension 17 s after the last object: a view, think 17 s.
    c.add("198.51.100.7", ua, T0 + 20, "/blog/post");
    c.add("198.51.100.7", ua, T0 + 22, "/d.png");
    // An image after a 20 s pause: a view of its own (think 20 s); a page at once after it
    // (think 0 s).
    c.add("198.51.100.7", ua, T0 + 42, "/e.png");
    c.add("198.51.100.7", ua, T0 + 42, "/next/");
    let s = c.finish();
    assert_eq!((s.sessions, s.page_views), (1, 4));
    assert_eq!(s.requests_per_session.max, 8);
    assert_eq!(s.think.count, 3);
    assert!((s.think.mean_s - 37.0 / 3.0).abs() < 1e-9, "{:?}", s.think);
    assert!((s.think.under_1s - 1.0 / 3.0).abs() < 1e-9, "{:?}", s.think);
    assert_eq!(s.duration_s.max, 42);
}

/// A request of a generated log: client, time, path.
type Request = (String, i64, String);
/// What a generated log is known to hold: sessions, page views, requests, think times' sum
/// and count.
type Known = (u64, u64, u64, f64, u64);

/// A generated log of `users` users, each with sessions of known page views (a page and up
/// to four objects 0-2 s apart, then a think time of 6-600 s), their sessions 31-120 min
/// apart, all users' requests interleaved in time order. Returns the entries and the known
/// (sessions, page views, requests, think times' sum and count).
fn known_log(users: u64, seed: u64) -> (Vec<Request>, Known) {
    let mut rng = seed;
    let mut next = move |n: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % n
    };
    let mut entries = Vec::new();
    let (mut sessions, mut views, mut requests, mut think_sum, mut thinks) = (0, 0, 0, 0.0, 0);
    for u in 0..users {
        let client = format!("10.0.{}.{}", u / 250, u % 250);
        let mut t = T0 + next(3_600) as i64;
        for _ in 0..1 + next(3) {
            sessions += 1;
            let pages = 1 + next(6);
            for p in 0..pages {
                if p > 0 {
                    let think = 6 + next(595) as i64;
                    t += think;
                    think_sum += think as f64;
                    thinks += 1;
                }
                views += 1;
                requests += 1;
                entries.push((client.clone(), t, format!("/page{p}.html")));
                for o in 0..next(5) {
                    t += next(3) as i64;
                    requests += 1;
                    entries.push((client.clone(), t, format!("/img/{o}.png")));
                }
            }
            t += 31 * 60 + next(90 * 60) as i64;
        }
    }
    entries.sort_by_key(|e| e.1);
    (entries, (sessions, views, requests, think_sum, thinks))
}

#[test]
fn sessions_and_page_views_are_counted_exactly_on_a_generated_log() {
    for seed in [1, 7, 42] {
        let (entries, (sessions, views, requests, think_sum, thinks)) = known_log(400, seed);
        let mut c = SessionCounter::new(SESSION_GAP_S);
        for (client, t, path) in &entries {
            c.add(client, "Mozilla/5.0 (X11)", *t, path);
        }
        let s = c.finish();
        assert_eq!(s.sessions, sessions, "seed {seed}");
        assert_eq!(s.page_views, views, "seed {seed}");
        let counted = s.requests_per_session.mean * s.sessions as f64;
        assert!((counted - requests as f64).abs() < 1e-6, "seed {seed}");
        assert_eq!(s.think.count, thinks, "seed {seed}");
        assert!((s.think.mean_s - think_sum / thinks as f64).abs() < 1e-9);
        // Think times of 6-600 s: none under a second, a lognormal fit of them.
        assert_eq!(s.think.under_1s, 0.0);
        assert!(s.think.lognormal.is_some());
    }
}

#[test]
fn a_reservoir_keeps_the_exact_mean_and_a_bounded_sample() {
    let mut r = Reservoir::new(100);
    for i in 0..10_000 {
        r.add(f64::from(i));
    }
    assert_eq!(r.values().len(), 100);
    assert_eq!(r.seen, 10_000);
    assert!((r.sum - 49_995_000.0).abs() < 1e-6);
    // A uniform sample of 0..10 000: its mean near 5 000 (100 values: s.e. about 290).
    let mean = r.values().iter().sum::<f64>() / 100.0;
    assert!((3_500.0..6_500.0).contains(&mean), "{mean}");
}

#[test]
fn a_spread_s_median_is_the_workspace_s_median() {
    // Sessions of 1, 1, 3 and 3 requests: the median averages the two middle values, as
    // `webscope_model::stats::median` does; the 90th percentile is the nearest rank.
    let counts = BTreeMap::from([(1, 2), (3, 2)]);
    let s = Spread::of(&counts);
    assert_eq!((s.median, s.p90, s.max), (2.0, 3, 3));
    assert_eq!(
        Spread::of(&BTreeMap::from([(1, 2), (3, 1)])).median,
        1.0,
        "odd count: the middle value"
    );
}
