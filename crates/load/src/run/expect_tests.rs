//! #47: the engine counts errors by the run's expectation (`Config::expect`), as every judge
//! does; a replay's logged status is expected too. The per-class `bad_status` feeds the
//! class rows, each interval's errors and the lab's degradation page, so a count that
//! ignored `--expect-status` made those disagree with the run's own verdict.

use super::replay_tests::{logged, replay_config};
use super::tests::{config, serve};
use super::*;
use crate::config::Mode;
use crate::replay::LoggedRequest;
use crate::Expect;

const NOT_FOUND: &[u8] = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";

/// A run against a server that answers 404 to everything, one connection per request (the
/// tiny server closes after a fixed head, so keep-alive would add resets).
fn against_missing_files(expect: Expect) -> Report {
    let mut config = config(serve(Some(NOT_FOUND), 0));
    config.mode = Mode::Close;
    config.expect = expect;
    run(&config, &AtomicBool::new(false), &mut |_| {}).unwrap()
}

/// Every response's error, as the per-class rows and the intervals count it.
fn counted(report: &Report) -> (u64, u64, u64) {
    let classes = report.classes.iter().map(|c| c.figures.errors.bad_status);
    let intervals = report.intervals.iter().map(|i| i.errors).sum::<u64>();
    (
        report.total.errors.bad_status,
        classes.sum(),
        intervals - report.total.errors.no_response(),
    )
}

#[test]
fn regression_47_a_run_expecting_404_counts_no_404_as_an_error() {
    let report = against_missing_files(Expect::parse("404").unwrap());
    assert!(report.total.requests > 0, "{report:#?}");
    assert_eq!(report.status_codes["404"], report.total.requests);
    assert_eq!(counted(&report), (0, 0, 0), "{report:#?}");
}

#[test]
fn a_default_run_counts_each_404_as_an_error_in_its_class_and_interval() {
    let report = against_missing_files(Expect::default());
    let n = report.total.requests;
    assert!(n > 0, "{report:#?}");
    assert_eq!(counted(&report), (n, n, n), "{report:#?}");
}

/// A log of `/missing` answered 404 and `/a` answered 200, replayed against a server that
/// answers 404 to both.
fn replay_of_missing_and_present() -> Config {
    let log: Vec<LoggedRequest> = (0..30)
        .map(|i| match i % 3 {
            0 => logged(i * 20, "GET", "/a", 200, 0),
            _ => logged(i * 20, "GET", "/missing", 404, 0),
        })
        .collect();
    let mut config = replay_config(serve(Some(NOT_FOUND), 0), &log, 2.0);
    config.mode = Mode::Close;
    config.drain = Duration::from_secs(2);
    config
}

#[test]
fn a_replay_counts_no_error_where_the_log_had_the_status_it_got() {
    let report = run(
        &replay_of_missing_and_present(),
        &AtomicBool::new(false),
        &mut |_| {},
    )
    .unwrap();
    let replay = report.replay.as_ref().expect("a replay's figures");
    // Only the requests the log answered 200 and the server 404 are errors.
    let wrong: u64 = replay
        .status_mismatches
        .iter()
        .inspect(|p| assert_eq!((p.logged, p.got), (200, 404)))
        .map(|p| p.count)
        .sum();
    let answered = report.status_codes["404"];
    assert!(wrong > 0 && wrong < answered, "{report:#?}");
    assert_eq!(counted(&report), (wrong, wrong, wrong), "{report:#?}");
    assert_eq!(report.outcomes().errors(&Expect::default()), wrong);
}

#[test]
fn a_stored_config_without_an_expectation_reads_as_the_default() {
    let mut config = config(serve(None, 0));
    config.expect = Expect::parse("200,404").unwrap();
    let json = config.to_json().unwrap();
    assert!(json.contains(r#""expect": "200,404""#), "{json}");
    assert_eq!(Config::from_json(&json).unwrap().expect, config.expect);
    // A config written before #47 has no `expect`: its runs counted 2xx and 3xx as good.
    let old = json.replace(
        r#",
  "expect": "200,404""#,
        "",
    );
    assert!(!old.contains("expect"), "{old}");
    assert!(Config::from_json(&old).unwrap().expect.is_default());
    let bad = json.replace(r#""200,404""#, r#""2xx,600""#);
    let err = Config::from_json(&bad).unwrap_err().to_string();
    assert!(err.contains("\"600\" is not a status"), "{err}");
}
