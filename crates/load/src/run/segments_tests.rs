//! Segments end to end: N generators given one run's config share its connections and its
//! rate as one run would, start together, and merge exactly; bad segment options are refused.

use super::tests::{config, serve};
use super::*;
use crate::config::Arrivals;
use crate::report::Latency;

/// Runs the `segments` segments of `config` at once, each on its own thread, as separate
/// generators would; returns their parts (reports and interval logs).
pub(super) fn segments(
    config: &Config,
    segments: usize,
    dir: &std::path::Path,
) -> Vec<crate::Part> {
    let start = SystemTime::now() + Duration::from_millis(200);
    let handles: Vec<_> = (0..segments)
        .map(|i| {
            let mut config = config.clone();
            config.segment = Some((i, segments));
            config.start_at = Some(start);
            config.hlog = Some(dir.join(format!("seg{i}.hlog")));
            std::thread::spawn(move || {
                let report = run(&config, &AtomicBool::new(false), &mut |_| {}).unwrap();
                (report, config.hlog.unwrap())
            })
        })
        .collect();
    handles
        .into_iter()
        .map(|h| {
            let (report, hlog) = h.join().unwrap();
            let log = std::fs::read(hlog).unwrap();
            crate::Part { report, log }
        })
        .collect()
}

#[test]
fn segments_share_connections_as_one_run_would_and_merge_exactly() {
    let addr = serve(None, 100);
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(addr);
    config.connections = 10;
    config.duration = Duration::from_millis(600);
    let parts = segments(&config, 3, dir.path());
    let shares: Vec<usize> = parts.iter().map(|p| p.report.connections).collect();
    assert_eq!(shares, [4, 3, 3]);
    for (i, p) in parts.iter().enumerate() {
        assert_eq!(p.report.segment.as_deref(), Some(format!("{i}/3").as_str()));
        assert!(p.report.histograms.is_some());
        // All three began on the same instant: their logs share a base time.
        assert!((p.report.started_unix_s - parts[0].report.started_unix_s).abs() < 1e-6);
    }
    let merged_log = dir.path().join("merged.hlog");
    let merged = crate::merge(&parts, Some(&merged_log)).unwrap();
    assert_eq!(
        merged.total.requests,
        parts.iter().map(|p| p.report.total.requests).sum::<u64>()
    );
    assert_eq!(
        merged.total.run.connects,
        parts
            .iter()
            .map(|p| p.report.total.run.connects)
            .sum::<u64>()
    );
    assert_eq!(merged.connections, 10);
    assert_eq!(merged.generators.len(), 3);
    // The same requests in one histogram, by another road (every interval of every
    // segment's log): the merged percentiles are its percentiles, exactly.
    let mut one = crate::recorder::histogram();
    for p in &parts {
        for i in crate::parse_intervals(&p.log, None).unwrap() {
            one.add(&i.histogram).unwrap();
        }
    }
    assert_eq!(one.len(), merged.total.requests);
    let of = Latency::of(&one);
    assert_eq!(merged.total.latency_us.p50, of.p50);
    assert_eq!(merged.total.latency_us.p99, of.p99);
    assert_eq!(merged.total.latency_us.p999, of.p999);
    assert_eq!(merged.total.latency_us.max, of.max);
    // Intervals added by index, and the merged log holds them.
    let summed: u64 = merged.intervals.iter().map(|i| i.requests).sum();
    assert_eq!(summed, merged.total.requests);
    let logged: u64 = crate::read_intervals(&merged_log, None)
        .unwrap()
        .iter()
        .map(|i| i.histogram.len())
        .sum();
    assert_eq!(logged, merged.total.requests);
}

#[test]
fn open_loop_segments_add_up_to_the_rate() {
    let addr = serve(None, 10);
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(addr);
    config.connections = 3;
    config.duration = Duration::from_secs(1);
    config.pacing = Pacing::Open {
        rate: 900.0,
        arrivals: Arrivals::Constant,
        max_connections: 90,
    };
    let parts = segments(&config, 3, dir.path());
    for p in &parts {
        assert_eq!(p.report.rate, Some(300.0));
        let n = p.report.total.requests as f64;
        assert!((n - 300.0).abs() <= 10.0, "{n}");
    }
    let merged = crate::merge(&parts, None).unwrap();
    assert_eq!(merged.rate, Some(900.0));
    assert!(
        (merged.total.requests as f64 - 900.0).abs() <= 20.0,
        "{}",
        merged.total.requests
    );
}

#[test]
fn a_merge_of_part_of_a_run_or_of_two_runs_is_refused() {
    let addr = serve(None, 10);
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(addr);
    config.connections = 3;
    config.duration = Duration::from_millis(300);
    let mut parts = segments(&config, 3, dir.path());
    let third = parts.pop().unwrap();
    let err = crate::merge(&parts, None).unwrap_err().to_string();
    assert!(err.contains("segment 2/3 missing"), "{err}");
    parts.push(third);
    let mut again = segments(&config, 3, dir.path());
    parts[1] = again.remove(0);
    let err = crate::merge(&parts, None).unwrap_err().to_string();
    assert!(err.contains("segment 0/3 given twice"), "{err}");
    let whole = run(&config, &AtomicBool::new(false), &mut |_| {}).unwrap();
    let err = crate::merge(
        &[crate::Part {
            report: whole,
            log: Vec::new(),
        }],
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("not a segment"), "{err}");
}

#[test]
fn a_start_that_has_passed_begins_at_once_and_says_how_late() {
    let addr = serve(None, 10);
    let mut config = config(addr);
    config.start_at = Some(SystemTime::now() - Duration::from_millis(150));
    config.duration = Duration::from_millis(400);
    let report = run(&config, &AtomicBool::new(false), &mut |_| {}).unwrap();
    assert!(report.start_late_s >= 0.15, "{}", report.start_late_s);
    assert!(report
        .warnings
        .iter()
        .any(|w| w.contains("after --start-at")));
    assert!(report.total.requests > 0);
    // The window is the asked one: it ends 400 ms after the asked start.
    assert!(report.duration_s < 0.45, "{}", report.duration_s);
}

#[test]
fn segments_are_checked() {
    let addr = serve(None, 10);
    let mut config = config(addr);
    config.connections = 2;
    config.segment = Some((0, 3));
    let err = config.check().unwrap_err().to_string();
    assert!(err.contains("-c must be at least 3"), "{err}");
    config.segment = Some((3, 3));
    assert!(config
        .check()
        .unwrap_err()
        .to_string()
        .contains("0 <= I < N"));
}
