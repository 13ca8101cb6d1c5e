use std::sync::Arc;

use super::*;

fn logged(second: u64, method: &str, target: &str, status: u16, bytes: u64) -> LoggedRequest {
    LoggedRequest {
        time: UNIX_EPOCH + Duration::from_secs(1_700_000_000 + second),
        client: format!("10.0.0.{}", second % 7),
        method: method.into(),
        target: target.into(),
        status,
        bytes,
    }
}

/// Every slot the feed hands to `threads` threads of segment `segment`, by thread.
fn fed(replay: Replay, segment: (usize, usize), threads: usize, end_ns: u64) -> Vec<Vec<Slot>> {
    let plan = FeedPlan {
        segment,
        threads,
        interval_ns: 1_000_000_000,
        end_ns,
    };
    let (feed, schedules) = Feed::start(Arc::new(replay), plan).unwrap();
    let out = schedules
        .into_iter()
        .map(|mut s| {
            let mut slots = Vec::new();
            loop {
                match s.peek() {
                    Next::Due(_, slot) => {
                        slots.push(slot);
                        s.advance();
                    }
                    Next::Pending => std::thread::yield_now(),
                    Next::End => break slots,
                }
            }
        })
        .collect();
    drop(feed);
    out
}

#[test]
fn a_second_is_spread_evenly_and_the_speed_divides_time() {
    // Unsorted, as real logs are: two requests in second 1, four in second 0.
    let log = [
        logged(1, "GET", "/b", 200, 10),
        logged(0, "GET", "/a", 200, 10),
        logged(0, "GET", "/a", 200, 10),
        logged(1, "HEAD", "/b", 200, 0),
        logged(0, "GET", "/a?x=1", 404, 0),
        logged(0, "GET", "/a", 200, 10),
    ];
    let r = Replay::new(&log, 1.0, false).unwrap();
    let times: Vec<u64> = r.slots.iter().map(|s| s.at_ns / 1_000_000).collect();
    assert_eq!(times, [0, 250, 500, 750, 1000, 1500]);
    assert_eq!(r.span(), Duration::from_secs(2));
    assert_eq!(r.requests.len(), 4); // /a, /a?x=1, GET /b, HEAD /b
    assert_eq!(r.slots[2].status, 404);
    let fast = Replay::new(&log, 4.0, false).unwrap();
    assert_eq!(fast.slots[5].at_ns, 375_000_000);
    assert_eq!(fast.span(), Duration::from_millis(500));
    assert!((fast.mean_rate() - 12.0).abs() < 1e-9);
}

#[test]
fn only_gets_and_heads_are_sent_206_become_ranges_and_304_conditional() {
    let log = [
        logged(0, "POST", "/form", 200, 5),
        logged(0, "DELETE", "/big", 204, 0),
        logged(0, "OPTIONS", "/big", 200, 0),
        logged(0, "GET", "/big", 206, 1000),
        logged(0, "PUT", "/x", 201, 0),
        logged(0, "GET", "/big", 200, 5000),
        logged(0, "GET", "/big", 304, 0),
    ];
    let r = Replay::new(&log, 1.0, false).unwrap();
    assert_eq!((r.skipped_method, r.ranges, r.slots.len()), (4, 1, 3));
    assert_eq!(r.conditional, 1);
    assert_eq!(r.requests[0].range, Some(1000));
    assert_eq!(r.requests[1].range, None);
    assert!(!r.requests[1].not_modified && r.requests[2].not_modified);
    assert!(Replay::new(&log[..1], 1.0, false).is_none());
}

#[test]
fn threads_split_a_segment_by_request_and_segments_split_by_client() {
    let log: Vec<LoggedRequest> = (0..40)
        .map(|i| LoggedRequest {
            client: format!("c{}", i % 5),
            ..logged(i / 10, "GET", &format!("/{i}"), 200, 1)
        })
        .collect();
    let whole = Replay::new(&log, 1.0, false).unwrap();
    let end = u64::MAX / 4;
    // Two segments of three threads: each slot once, a client's in one segment, in order.
    let mut all: Vec<Slot> = Vec::new();
    for segment in 0..2 {
        let threads = fed(whole.clone(), (segment, 2), 3, end);
        let here: Vec<Slot> = threads.iter().flatten().copied().collect();
        assert!(here
            .iter()
            .all(|s| s.client as usize % 2 == segment && s.at_ns < 4_000_000_000));
        for t in &threads {
            assert!(t.windows(2).all(|w| w[0].at_ns <= w[1].at_ns));
        }
        // Threads take turns: their counts differ by one at most.
        let counts: Vec<usize> = threads.iter().map(Vec::len).collect();
        assert!(counts.iter().max().unwrap() - counts.iter().min().unwrap() <= 1);
        all.extend(here);
    }
    all.sort_by_key(|s| (s.at_ns, s.request));
    assert_eq!(all, whole.slots);
}

#[test]
fn a_looped_feed_repeats_the_period_until_the_end_and_counts_per_interval() {
    let log: Vec<LoggedRequest> = (0..10).map(|i| logged(i / 5, "GET", "/", 200, 1)).collect();
    // At 2x the log's two seconds last one; a looped run of 2.5 s holds 2.5 passes.
    let replay = Replay::new(&log, 2.0, true).unwrap();
    let plan = FeedPlan {
        segment: (0, 1),
        threads: 2,
        interval_ns: 500_000_000,
        end_ns: 2_500_000_000,
    };
    let (feed, schedules) = Feed::start(Arc::new(replay), plan).unwrap();
    let mut times = Vec::new();
    for mut s in schedules {
        loop {
            match s.peek() {
                Next::Due(at, _) => {
                    times.push(at);
                    s.advance();
                }
                Next::Pending => std::thread::yield_now(),
                Next::End => break,
            }
        }
    }
    times.sort();
    assert_eq!(times.len(), 25);
    assert_eq!(times[10], 1_000_000_000);
    let (offered, error) = feed.finish();
    assert_eq!(
        offered.values().copied().collect::<Vec<_>>(),
        [5, 5, 5, 5, 5]
    );
    assert_eq!(offered.keys().copied().collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
    assert_eq!(error, None);
}

#[test]
fn a_whole_log_is_read_by_the_feed_as_the_plan_in_memory_has_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("access.log");
    let mut text = String::new();
    for i in 0..30 {
        let (s, client) = (i / 4, i % 3);
        text += &format!(
            "10.0.0.{client} - - [14/Nov/2023:22:13:{:02} +0000] \"GET /f{} HTTP/1.1\" {} 10 \"-\" \"t\"\n",
            20 + s,
            i % 4,
            if i % 5 == 0 { 304 } else { 200 }
        );
    }
    std::fs::write(&path, text).unwrap();
    let paths = [path];
    let plan = crate::replay_log::plan(&paths, None, 2.0, false).unwrap();
    assert_eq!((plan.replay.per_pass, plan.replay.conditional), (30, 6));
    assert!(plan.replay.slots.is_empty());
    let logged = crate::replay_log::collect(&paths, None, &|_| true).unwrap();
    let memory = Replay::new(&logged, 2.0, false).unwrap();
    assert_eq!(plan.replay.requests, memory.requests);
    assert_eq!(plan.replay.period_ns, memory.period_ns);
    let mut streamed: Vec<Slot> = fed(plan.replay, (0, 1), 2, u64::MAX / 4)
        .into_iter()
        .flatten()
        .collect();
    streamed.sort_by_key(|s| s.at_ns);
    assert_eq!(streamed, memory.slots);
}

#[test]
fn poisson_times_keep_the_requests_the_count_and_the_span() {
    // A burst: 100 requests logged in one second, then 9 quiet seconds.
    let logged: Vec<LoggedRequest> = (0..100)
        .map(|i| {
            logged(
                if i < 99 { 0 } else { 9 },
                "GET",
                &format!("/f{}", i % 7),
                200,
                10,
            )
        })
        .collect();
    let replay = Replay::new(&logged, 1.0, false).unwrap();
    let poisson = replay.with_poisson_times(7);
    assert_eq!(poisson.slots.len(), replay.slots.len());
    assert_eq!(poisson.requests, replay.requests);
    assert_eq!(poisson.period_ns, replay.period_ns);
    assert!(poisson.slots.windows(2).all(|w| w[0].at_ns <= w[1].at_ns));
    assert!(poisson.slots.iter().all(|s| s.at_ns < poisson.period_ns));
    // The burst is spread: far fewer than 99 of the requests in the first second.
    let first_second = poisson
        .slots
        .iter()
        .filter(|s| s.at_ns < 1_000_000_000)
        .count();
    assert!(first_second < 40, "{first_second}");
    // Four times faster: a quarter of the span, four times the rate, the same slots.
    let fast = replay.sped_up(4.0);
    assert_eq!(fast.period_ns, replay.period_ns / 4);
    assert!((fast.mean_rate() - 4.0 * replay.mean_rate()).abs() < 1e-6);
    assert_eq!(fast.speed, 4.0);
}

#[test]
fn a_logged_304_asks_if_modified_since_a_date_not_after_the_send() {
    let log = [
        logged(0, "GET", "/a", 304, 0),
        logged(0, "GET", "/a", 200, 10),
    ];
    let r = Replay::new(&log, 1.0, false).unwrap();
    let before = webscope_http::date::unix_now();
    let target = crate::Target::replay("http://127.0.0.1:1/", &r).unwrap();
    let after = webscope_http::date::unix_now();
    let since: Vec<i64> = target.specs[0]
        .headers
        .iter()
        .filter_map(|h| h.strip_prefix("If-Modified-Since: "))
        .filter_map(webscope_http::date::parse_http_date)
        .collect();
    assert_eq!(since.len(), 1, "{:?}", target.specs[0].headers);
    assert!((before..=after).contains(&since[0]), "{since:?}");
    assert!(target.specs[1].headers.is_empty());
}
