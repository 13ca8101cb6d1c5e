use super::*;

fn one(text: &str) -> Condition {
    let slo = Slo::parse(text).unwrap();
    assert_eq!(slo.conditions.len(), 1);
    slo.conditions[0].clone()
}

#[test]
fn every_condition_parses_and_prints_back() {
    let cases = [
        (
            "p99<=5ms",
            Metric::Latency { quantile: 0.99 },
            false,
            5000.0,
        ),
        ("p50<200us", Metric::Latency { quantile: 0.5 }, true, 200.0),
        (
            "p99.9<=1.5ms",
            Metric::Latency { quantile: 0.999 },
            false,
            1500.0,
        ),
        (
            "p99.99<=1s",
            Metric::Latency { quantile: 0.9999 },
            false,
            1e6,
        ),
        (
            "p999<=20ms",
            Metric::Latency { quantile: 0.999 },
            false,
            20_000.0,
        ),
        (
            "max<=100ms",
            Metric::Latency { quantile: 1.0 },
            false,
            100_000.0,
        ),
        ("errors<=0.1%", Metric::Errors, false, 0.001),
        ("goodput>=99%", Metric::Goodput, false, 0.99),
        ("cpu<80%", Metric::Cpu, true, 0.8),
        ("late<=1%", Metric::Late, false, 0.01),
        ("not_sent<=1%", Metric::NotSent, false, 0.01),
    ];
    for (text, metric, strict, limit) in cases {
        let c = one(text);
        assert_eq!(c.metric, metric, "{text}");
        assert_eq!(c.strict, strict, "{text}");
        assert!((c.limit - limit).abs() < 1e-9, "{text}: {}", c.limit);
    }
    let slo = Slo::parse(" p99<=5ms , errors<=0.1% ").unwrap();
    assert_eq!(slo.to_string(), "p99<=5ms,errors<=0.1%");
    assert_eq!(one("p99.9<=250us").to_string(), "p99.9<=250us");
    assert_eq!(Slo::parse(&slo.to_string()).unwrap(), slo);
}

#[test]
fn bad_input_is_refused_naming_the_bad_part() {
    let cases = [
        ("", "empty"),
        ("  ", "empty"),
        ("p99<=5ms,,errors<=1%", "empty condition"),
        ("latency<=5ms", "unknown metric \"latency\""),
        ("p101<=5ms", "\"p101\" is not a percentile"),
        ("p0<=5ms", "\"p0\" is not a percentile"),
        ("p100<=5ms", "\"p100\" is not a percentile"),
        ("p99<=5", "\"5\" has no unit: write 5ms"),
        ("p99<=5kg", "unknown unit \"kg\""),
        ("p99<=500000000000years", "longest length"),
        ("errors<=1", "\"1\" has no unit: write 1%"),
        ("errors<=150%", "more than 100 %"),
        ("p99<=", "no limit"),
        ("p99=5ms", "no comparison"),
        ("goodput<=99%", "goodput is a floor: write goodput>=99%"),
        ("p99>=5ms", "p99 is a ceiling: write p99<=5ms"),
        ("p99<=fast", "not a number"),
    ];
    for (text, said) in cases {
        let err = Slo::parse(text).unwrap_err();
        assert!(err.contains(said), "{text:?}: {err}");
        assert!(!err.contains('\n'), "one line: {err}");
    }
}

#[test]
fn a_run_passes_only_when_every_figure_was_measured_and_holds() {
    let slo = Slo::parse("p99<=5ms,errors<=0.1%")
        .unwrap()
        .with_goodput_floor(0.99);
    assert_eq!(slo.to_string(), "p99<=5ms,errors<=0.1%,goodput>=99%");
    assert_eq!(slo.quantiles(), [0.99]);
    let good = Measured {
        latency_us: vec![(0.99, 4_900.0)],
        error_share: Some(0.0),
        goodput_share: Some(0.995),
        ..Measured::default()
    };
    let checks = slo.judge(&good);
    assert_eq!(Slo::verdict(&checks), Verdict::Pass);
    assert_eq!(checks[0].measured, Some(4_900.0));

    let slow = Measured {
        latency_us: vec![(0.99, 5_100.0)],
        ..good.clone()
    };
    let checks = slo.judge(&slow);
    assert_eq!(checks[0].verdict, Verdict::Fail);
    assert_eq!(Slo::verdict(&checks), Verdict::Fail);

    // A figure that was not measured is undecided, and so is the run: never a pass.
    let unmeasured = Measured {
        goodput_share: None,
        ..good.clone()
    };
    let checks = slo.judge(&unmeasured);
    assert_eq!(checks[2].verdict, Verdict::Undecided);
    assert_eq!(Slo::verdict(&checks), Verdict::Undecided);
    let nan = Measured {
        latency_us: vec![(0.99, f64::NAN)],
        ..good.clone()
    };
    assert_eq!(Slo::verdict(&slo.judge(&nan)), Verdict::Undecided);

    // A failure outweighs an undecided figure.
    let both = Measured {
        error_share: Some(0.5),
        goodput_share: None,
        ..good
    };
    assert_eq!(Slo::verdict(&slo.judge(&both)), Verdict::Fail);
}

#[test]
fn strict_and_inclusive_limits_differ_at_the_limit() {
    let at = Measured {
        error_share: Some(0.01),
        ..Measured::default()
    };
    let inclusive = Slo::parse("errors<=1%").unwrap();
    let strict = Slo::parse("errors<1%").unwrap();
    assert_eq!(Slo::verdict(&inclusive.judge(&at)), Verdict::Pass);
    assert_eq!(Slo::verdict(&strict.judge(&at)), Verdict::Fail);
    // A goodput condition given by the user is kept as given.
    let own = Slo::parse("goodput>=95%").unwrap().with_goodput_floor(0.99);
    assert_eq!(own.conditions.len(), 1);
    assert_eq!(own.conditions[0].limit, 0.95);
}

#[test]
fn a_figure_with_an_interval_passes_or_fails_only_on_all_of_it() {
    let slo = Slo::parse("p99<=5ms,errors<=1%").unwrap();
    let figures = |p99: (f64, f64), errors: (f64, f64)| Measured {
        latency_us: vec![(0.99, (p99.0 + p99.1) / 2.0)],
        error_share: Some((errors.0 + errors.1) / 2.0),
        intervals: vec![
            (
                Metric::Latency { quantile: 0.99 },
                None,
                Range {
                    low: p99.0,
                    high: p99.1,
                },
            ),
            (
                Metric::Errors,
                None,
                Range {
                    low: errors.0,
                    high: errors.1,
                },
            ),
        ],
        ..Measured::default()
    };
    let verdicts =
        |m: &Measured| -> Vec<Verdict> { slo.judge(m).iter().map(|c| c.verdict).collect() };
    // Wholly within, wholly beyond, straddling.
    let m = figures((3_000.0, 4_900.0), (0.0, 0.009));
    assert_eq!(verdicts(&m), [Verdict::Pass, Verdict::Pass]);
    let m = figures((5_100.0, f64::INFINITY), (0.02, 0.05));
    assert_eq!(verdicts(&m), [Verdict::Fail, Verdict::Fail]);
    let m = figures((4_000.0, 6_800.0), (0.0, 0.013));
    assert_eq!(verdicts(&m), [Verdict::Undecided, Verdict::Undecided]);
    assert_eq!(Slo::verdict(&slo.judge(&m)), Verdict::Undecided);
    // A side the data do not bound: the figure cannot pass, and can still fail.
    let m = figures((f64::NEG_INFINITY, f64::INFINITY), (0.0, 0.0));
    assert_eq!(verdicts(&m)[0], Verdict::Undecided);
    let line = slo.judge(&figures((4_000.0, 6_800.0), (0.0, 0.0)))[0].line();
    assert!(
        line.contains("(4.00ms .. 6.80ms), cannot be decided"),
        "{line}"
    );
    let line = slo.judge(&figures((5_100.0, f64::INFINITY), (0.0, 0.0)))[0].line();
    assert!(line.contains("(5.10ms .. ?), FAILED"), "{line}");
}

#[test]
fn a_latency_condition_may_be_on_one_class() {
    let slo = Slo::parse("p99[0-1KB]<=5ms,p99<=1s").unwrap();
    assert_eq!(slo.conditions[0].class.as_deref(), Some("0-1KB"));
    assert_eq!(slo.to_string(), "p99[0-1KB]<=5ms,p99<=1s");
    assert_eq!(Slo::parse(&slo.to_string()).unwrap(), slo);
    assert_eq!(slo.quantiles(), [0.99]);
    assert_eq!(slo.class_quantiles(), [("0-1KB".to_string(), 0.99)]);
    // The class's figure judges its condition, the run's the other: a heavy tail of
    // large files fails the run's p99 and not the small files'.
    let m = Measured {
        latency_us: vec![(0.99, 2_000_000.0)],
        class_latency_us: vec![("0-1KB".into(), 0.99, 900.0)],
        ..Measured::default()
    };
    let checks = slo.judge(&m);
    assert_eq!(checks[0].verdict, Verdict::Pass, "{}", checks[0].line());
    assert_eq!(checks[1].verdict, Verdict::Fail);
    // A class the run did not have is not measured: undecided, never passed.
    let other = Slo::parse("p99[over-1MB]<=5ms").unwrap();
    assert_eq!(other.judge(&m)[0].verdict, Verdict::Undecided);
    for (bad, said) in [
        ("errors[0-1KB]<=1%", "only a latency percentile"),
        ("p99[<=5ms", "a class goes in brackets"),
        ("p99[]<=5ms", "a class goes in brackets"),
    ] {
        let err = Slo::parse(bad).unwrap_err();
        assert!(err.contains(said), "{bad}: {err}");
    }
}

#[test]
fn figures_are_shown_in_the_conditions_unit() {
    let p99 = one("p99<=5ms");
    assert!(p99.show(4_900.0).contains("ms"), "{}", p99.show(4_900.0));
    assert_eq!(one("errors<=0.1%").show(0.0012), "0.120 %");
    // Issue #35: a share measured over 23 requests read "8.695652 %".
    assert_eq!(one("errors<=1%").show(2.0 / 23.0), "8.70 %");
}

#[test]
fn a_page_objective_is_on_a_users_runs_page_loads() {
    let slo = Slo::parse("page_p95<=1s,errors<=1%").unwrap();
    assert_eq!(slo.conditions[0].class.as_deref(), Some(PAGE));
    assert_eq!(slo.conditions[0].metric, Metric::Latency { quantile: 0.95 });
    assert_eq!(slo.to_string(), "page_p95<=1s,errors<=1%");
    assert_eq!(
        Slo::parse("p95[page]<=1s").unwrap().to_string(),
        "page_p95<=1s"
    );
    // Judged on the report's page loads; a run without users has none: undecided.
    let mut report = crate::Report::default();
    let expect = Expect::default();
    let checks = slo.judge(&Measured::of_run(&report, &slo, &expect));
    assert_eq!(checks[0].verdict, Verdict::Undecided);
    report.users = Some(crate::report::users::UsersReport {
        page_load_us: crate::report::Latency {
            count: 100,
            p50: 200_000.0,
            ..Default::default()
        },
        page_load_p95_us: 1_500_000.0,
        ..Default::default()
    });
    let checks = slo.judge(&Measured::of_run(&report, &slo, &expect));
    assert_eq!(checks[0].measured, Some(1_500_000.0));
    assert_eq!(checks[0].verdict, Verdict::Fail);
}

#[test]
fn an_objective_is_stored_as_its_text_and_read_back_the_same() {
    for text in [
        "p99<=5ms,errors<=0.1%",
        "p99<=10ms,errors<=0.1%,goodput>=99%",
        "page_p95<=1s",
        "p99[0-1KB]<=5ms,p50[over-1MB]<=20ms",
    ] {
        let slo = Slo::parse(text).unwrap();
        let stored = serde_json::to_string(&slo).unwrap();
        let back: Slo = serde_json::from_str(&stored).unwrap();
        assert_eq!(back, slo, "{text} stored as {stored}");
        assert_eq!(text.parse::<Slo>().unwrap(), slo);
        // Its text is a fixed point: written again, the same.
        assert_eq!(serde_json::to_string(&back).unwrap(), stored);
    }
    let bad = serde_json::from_str::<Slo>("\"p99<5\"").unwrap_err();
    assert!(bad.to_string().contains("p99<5"), "{bad}");
}

/// The one rule for a quantile's name: what the pages, compare and `--slo` write, and what
/// `--slo` reads back to the same quantile.
#[test]
fn quantiles_are_named_as_people_write_them_and_read_back() {
    for (q, name) in [
        (0.5, "p50"),
        (0.99, "p99"),
        (0.999, "p99.9"),
        (0.9999, "p99.99"),
        (1.0, "max"),
    ] {
        assert_eq!(quantile_name(q), name);
        assert_eq!(
            one(&format!("{name}<=5ms")).metric,
            Metric::Latency { quantile: q },
            "{name}"
        );
    }
}
