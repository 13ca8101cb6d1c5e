//! Replays end to end against the tiny capturing server: each slot's own request, the
//! skipped body-carrying requests, ranges, status pairs, offered counts, segments (split by
//! client) merged to one run's counts.

use super::segments_tests::segments;
use super::tests::capture;
use super::*;
use crate::config::{Arrivals, Mode};
use crate::replay::{LoggedRequest, Replay, StatusPair};
use crate::Target;

pub(super) fn logged(
    ms: u64,
    method: &str,
    target: &str,
    status: u16,
    bytes: u64,
) -> LoggedRequest {
    LoggedRequest {
        time: SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_000 + ms),
        client: format!("192.0.2.{}", ms % 13),
        method: method.into(),
        target: target.into(),
        status,
        bytes,
    }
}

/// A two-second log: 40 GETs of /a (200), 10 of /b logged 404 (the capturing server answers
/// 200), a POST and a PUT (no body in the log), two 206 of /big of 1000 bytes.
fn log() -> Vec<LoggedRequest> {
    let mut log = Vec::new();
    for i in 0..40 {
        log.push(logged(i * 50, "GET", "/a", 200, 5));
    }
    for i in 0..10 {
        log.push(logged(i * 200 + 10, "GET", "/b?q=1", 404, 0));
    }
    log.push(logged(300, "POST", "/form", 200, 5));
    log.push(logged(1300, "PUT", "/x", 201, 0));
    log.push(logged(500, "GET", "/big", 206, 1000));
    log.push(logged(1500, "GET", "/big", 206, 1000));
    log
}

/// Every request the log made due, however it ended: answered, failed, never sent, or
/// still unanswered at the run's end (on a busy machine a response can miss the drain; an
/// account of answers alone then comes up one short).
fn accounted(report: &Report) -> u64 {
    let o = report.outcomes();
    o.due() + o.unfinished
}

/// A replay of `log` at `speed` on `addr`, open loop at the log's mean rate, in 100 ms
/// intervals: the set-up every replay test shares.
pub(super) fn replay_config(
    addr: std::net::SocketAddr,
    log: &[LoggedRequest],
    speed: f64,
) -> Config {
    let replay = Replay::new(log, speed, false).unwrap();
    let mut config = Config::new(Target::replay(&format!("http://{addr}/"), &replay).unwrap());
    config.duration = replay.span();
    config.interval = Duration::from_millis(100);
    config.pacing = Pacing::Open {
        rate: replay.mean_rate(),
        arrivals: Arrivals::Constant,
        max_connections: 20,
    };
    config.replay = Some(Arc::new(replay));
    config
}

/// A replay of `log()` at `speed` on `addr`, over two keep-alive connections.
fn config(addr: std::net::SocketAddr, speed: f64) -> Config {
    let mut config = replay_config(addr, &log(), speed);
    config.connections = 2;
    config.threads = 1;
    config.mode = Mode::KeepAlive;
    config
}

#[test]
fn a_replay_sends_each_logged_request_and_counts_what_differs() {
    let (addr, seen) = capture();
    let config = config(addr, 4.0);
    assert_eq!(config.duration, Duration::from_millis(500));
    let report = run(&config, &AtomicBool::new(false), &mut |_| {}).unwrap();
    assert_eq!(accounted(&report), 52, "{report:#?}");
    assert!(report.total.run.not_sent <= 1, "{:?}", report.total.run);
    let replay = report.replay.as_ref().unwrap();
    assert_eq!((replay.skipped_method, replay.ranges), (2, 2));
    // The capturing server answers 200 to all: /b was logged 404, /big 206.
    let heads: Vec<String> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|(h, _)| h.clone())
        .collect();
    assert!(heads.iter().all(|h| h.starts_with("GET ")), "{heads:?}");
    let b = heads
        .iter()
        .filter(|h| h.starts_with("GET /b?q=1 "))
        .count() as u64;
    let ranged: Vec<&String> = heads.iter().filter(|h| h.contains("Range:")).collect();
    assert!(ranged
        .iter()
        .all(|h| h.starts_with("GET /big ") && h.contains("Range: bytes=0-999")));
    assert!(b >= 9 && !ranged.is_empty(), "{heads:?}");
    let pair = |logged, count| StatusPair {
        logged,
        got: 200,
        count,
    };
    assert_eq!(
        replay.status_mismatches,
        [pair(404, b), pair(206, ranged.len() as u64)]
    );
    // Offered per 100 ms: the log's seconds at 4x are 250 ms each, 26 requests in each.
    let offered: Vec<u64> = report
        .intervals
        .iter()
        .map(|i| i.offered.unwrap())
        .collect();
    assert_eq!(offered.iter().sum::<u64>(), 52);
    assert_eq!(report.arrivals.as_deref(), Some("replay"));
    assert!(report.summary().contains("logged 404, got 200: "));
    // 200 where the log had 404 is no failure; nor is 404 where it had 404, but 404 where
    // it had 200 is.
    let expect = crate::Expect::default();
    assert_eq!(report.outcomes().errors(&expect), 0);
    let mut as_logged = report.clone();
    let replay = as_logged.replay.as_mut().unwrap();
    replay.status_mismatches = vec![StatusPair {
        logged: 200,
        got: 404,
        count: 3,
    }];
    as_logged.status_codes = [("200".to_string(), 37), ("404".to_string(), 13)].into();
    let outcomes = as_logged.outcomes();
    assert_eq!(outcomes.errors(&expect), 3);
    assert_eq!(outcomes.good(&expect), 50 - 3);
}

#[test]
fn replay_segments_merge_to_the_whole_log() {
    let (addr, _) = capture();
    let mut config = config(addr, 4.0);
    config.connections = 4;
    let dir = tempfile::tempdir().unwrap();
    let parts = segments(&config, 2, dir.path());
    let alone: Vec<u64> = parts.iter().map(|p| p.report.total.requests).collect();
    assert!(alone.iter().all(|n| (24..=28).contains(n)), "{alone:?}");
    let merged = crate::merge(&parts, None).unwrap();
    assert_eq!(accounted(&merged), 52);
    // The merged pairs are the segments' added.
    let mut pairs = std::collections::BTreeMap::new();
    for p in &parts {
        for pair in &p.report.replay.as_ref().unwrap().status_mismatches {
            *pairs.entry((pair.logged, pair.got)).or_insert(0) += pair.count;
        }
    }
    assert_eq!(
        merged.replay.as_ref().unwrap().status_mismatches,
        crate::replay::pairs(&pairs)
    );
    assert!(pairs[&(404, 200)] >= 9, "{pairs:?}");
    // Split by client, the segments' offered counts add up to one run's, interval by
    // interval, and a client's requests all went to one segment.
    let whole = run(&config, &AtomicBool::new(false), &mut |_| {}).unwrap();
    let per_interval =
        |r: &Report| -> Vec<u64> { r.intervals.iter().filter_map(|i| i.offered).collect() };
    assert_eq!(per_interval(&merged), per_interval(&whole));
    assert_eq!(per_interval(&merged).iter().sum::<u64>(), 52);
    assert_eq!(accounted(&whole), 52);
}

/// A stream whose writes each wait its duration first: a server that takes that long to answer.
struct Late(std::net::TcpStream, Duration);

impl std::io::Read for Late {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.read(buf)
    }
}

impl std::io::Write for Late {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        std::thread::sleep(self.1);
        self.0.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// A keep-alive server that answers each request 200 ms after it came.
fn late_server() -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            std::thread::spawn(move || {
                super::tests::answer(&mut Late(stream, Duration::from_millis(200)), None, 5)
            });
        }
    });
    addr
}

#[test]
fn a_replay_with_a_drain_waits_for_its_last_answers_and_no_longer() {
    // The log's two seconds at 40×: 50 ms of sends, each answered 200 ms later.
    let addr = late_server();
    let mut config = config(addr, 40.0);
    let cut = run(&config, &AtomicBool::new(false), &mut |_| {}).unwrap();
    assert!(cut.total.unfinished > 0, "{:#?}", cut.total);

    config.drain = Duration::from_secs(30);
    let drained = run(&config, &AtomicBool::new(false), &mut |_| {}).unwrap();
    assert_eq!(drained.total.unfinished, 0, "{:#?}", drained.total);
    assert_eq!(drained.total.run.not_sent, 0, "{:#?}", drained.total.run);
    assert_eq!(drained.total.requests, 52, "{:#?}", drained.total);
    assert_eq!(drained.total.errors.total, 0, "{:#?}", drained.total.errors);
    // The late answers belong to the interval of the last send (50 ms of sends, 100 ms
    // intervals: one), not to an interval of their own.
    assert_eq!(drained.intervals.len(), 1, "{:#?}", drained.intervals);
    // It ended when nothing was in flight, not at the drain's end.
    assert!(drained.duration_s < 30.0, "{}", drained.duration_s);
}
