use super::*;
use crate::replay::{ReplayReport, StatusPair};
use crate::slo::{Measured, Slo, Verdict};

/// A closed-loop report of `statuses` (code, count) and `failures`.
fn report(statuses: &[(u16, u64)], failures: &[(Failure, u64)]) -> Report {
    let mut r = Report {
        duration_s: 2.0,
        ..Report::default()
    };
    for &(code, n) in statuses {
        r.status_codes.insert(code.to_string(), n);
        r.total.requests += n;
        if code >= 400 {
            r.total.errors.bad_status += n;
        }
    }
    let mut kinds = [0; FAILURES.len()];
    for &(f, n) in failures {
        kinds[f as usize] = n;
    }
    r.total.errors = crate::report::Errors::of(&kinds, r.total.errors.bad_status);
    r
}

#[test]
fn regression_38_a_bad_status_is_counted_once_in_the_error_share() {
    // 1 000 responses of which 10 are 500: 1 %, not 20 / 1 010 = 1.98 %.
    let r = report(&[(200, 990), (500, 10)], &[]);
    let expect = Expect::default();
    let o = r.outcomes();
    assert_eq!(o.error_share(&expect), Some(0.01));
    assert_eq!(o.goodput_share(&expect), Some(0.99));
    let m = Measured::of_load(&r, &[], &expect);
    assert_eq!(m.error_share, Some(0.01));
    assert_eq!(m.goodput_share, Some(0.99));
    let slo = Slo::parse("errors<=1%").unwrap();
    assert_eq!(Slo::verdict(&slo.judge(&m)), Verdict::Pass);
    // A failure without a response counts once too: 10 errors and 10 resets of 1 010 ended.
    let r = report(&[(200, 990), (500, 10)], &[(Failure::Reset, 10)]);
    assert_eq!(r.outcomes().errors(&expect), 20);
    assert_eq!(r.outcomes().error_share(&expect), Some(20.0 / 1010.0));
}

#[test]
fn regression_38_a_replay_whose_404s_were_logged_has_no_errors() {
    let mut r = report(&[(200, 900), (404, 100)], &[]);
    r.rate = None;
    r.replay = Some(ReplayReport {
        // Every 404 was logged as 404: no pair differs.
        status_mismatches: vec![],
        ..ReplayReport::default()
    });
    let expect = Expect::default();
    let m = Measured::of_load(&r, &[], &expect);
    assert_eq!(m.error_share, Some(0.0));
    assert_eq!(m.goodput_share, Some(1.0));
    // A 404 where the log had 200 is an error; a 200 where it had 404 is not.
    r.replay = Some(ReplayReport {
        status_mismatches: vec![
            StatusPair {
                logged: 200,
                got: 404,
                count: 5,
            },
            StatusPair {
                logged: 404,
                got: 200,
                count: 7,
            },
        ],
        ..ReplayReport::default()
    });
    let o = r.outcomes();
    assert_eq!(o.unexpected(&expect), [(404, 5)]);
    assert_eq!(o.error_share(&expect), Some(0.005));
}

#[test]
fn the_expectation_decides_what_a_status_is() {
    let r = report(
        &[(200, 950), (404, 40), (503, 10)],
        &[(Failure::Timeout, 5)],
    );
    let o = r.outcomes();
    assert_eq!((o.responses(), o.no_response(), o.ended()), (1000, 5, 1005));
    let lax = Expect::parse("200,404").unwrap();
    assert_eq!(o.unexpected(&lax), [(503, 10)]);
    assert_eq!(o.errors(&lax), 15);
    assert_eq!(o.unexpected(&Expect::default()), [(404, 40), (503, 10)]);
    assert_eq!(o.good(&Expect::default()), 950);
    assert_eq!(o.goodput_rps(&Expect::default()), 475.0);
    assert_eq!(o.failures, [(Failure::Timeout, 5)]);
    // Nothing ended: no share at all, never a silent 0.
    let empty = report(&[], &[]).outcomes();
    assert_eq!(empty.error_share(&Expect::default()), None);
    assert_eq!(empty.goodput_share(&Expect::default()), None);
}

#[test]
fn not_sent_and_late_are_open_loop_figures_over_their_own_bases() {
    let mut r = report(&[(200, 900)], &[(Failure::Reset, 50)]);
    assert_eq!(
        r.outcomes().not_sent_share(),
        None,
        "a closed loop sends all"
    );
    assert_eq!(r.outcomes().late_share(), None);
    r.pacing = crate::report::Loop::Open;
    r.rate = Some(1000.0);
    r.total.run.not_sent = 50;
    r.total.run.late_sends = Some(95);
    r.total.unfinished = 0;
    let o = r.outcomes();
    // Never sent over due (950 ended + 50); late over sent (950).
    assert_eq!(o.not_sent_share(), Some(0.05));
    assert_eq!(o.late_share(), Some(0.1));
    // Requests never sent are no error of the server's, and no goodput lost by it.
    assert_eq!(o.goodput_share(&Expect::default()), Some(900.0 / 950.0));
}

#[test]
fn a_report_written_before_the_account_reads_the_same() {
    // An earlier version's errors.total added bad_status in; the account sums the kinds.
    let old = r#"{"requests": 100, "errors": {"reset": 2, "bad_status": 10, "total": 12},
        "status_codes": {"200": 90, "503": 10}, "duration_s": 1.0}"#;
    let r: Report = serde_json::from_str(old).unwrap();
    let o = r.outcomes();
    assert_eq!(o.no_response(), 2);
    assert_eq!(o.errors(&Expect::default()), 12);
    assert_eq!(o.error_share(&Expect::default()), Some(12.0 / 102.0));
}

#[test]
fn statuses_parse_as_codes_classes_and_ranges() {
    let e = Expect::parse("2xx, 304,400-404").unwrap();
    assert!(e.accepts(200) && e.accepts(299) && e.accepts(304) && e.accepts(403));
    assert!(!e.accepts(301) && !e.accepts(405) && !e.accepts(500));
    for bad in ["", "2xy", "6xx", "99", "404-400", "abc"] {
        let err = Expect::parse(bad).unwrap_err();
        assert!(err.contains("--expect-status"), "{bad}: {err}");
    }
    assert_eq!(
        Expect::parse(DEFAULT_EXPECT).unwrap().ranges,
        [(200, 299), (300, 399)]
    );
    for status in [100, 199, 200, 399, 400, 599] {
        assert_eq!(
            Expect::default().accepts(status),
            Expect::parse(DEFAULT_EXPECT).unwrap().accepts(status)
        );
    }
}
