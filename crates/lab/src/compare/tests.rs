//! Synthetic runs with known shifts: a 10 % p99 shift on a million samples is found, two
//! samples of one distribution are not told apart.

use hdrhistogram::Histogram;
use serde_json::json;
use webscope_workload::Rng;

use super::input::Run;
use super::*;
use crate::health::{Expect, Health};

/// A run of `intervals` one-second intervals of `per` latencies each, drawn from a log-normal
/// whose upper sixth (above one standard deviation) is stretched by `tail` (1.0: none): the
/// p90, p99 and p99.9 move by `tail`, the median not at all.
fn run(seed: u64, intervals: usize, per: usize, tail: f64) -> Run {
    let mut rng = Rng::new(seed);
    let mut all = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).unwrap();
    let mut logged = Vec::new();
    for i in 0..intervals {
        let mut h = all.clone();
        h.reset();
        for _ in 0..per {
            let z = rng.normal();
            let mut ns = (200_000.0 * (0.5 * z).exp()) as u64;
            if z > 1.0 {
                ns = (ns as f64 * tail) as u64;
            }
            h.record(ns.max(1)).unwrap();
        }
        all.add(&h).unwrap();
        logged.push(webscope_load::LoggedInterval {
            start_s: i as f64,
            length_s: 1.0,
            histogram: h,
        });
    }
    let us = |q: f64| all.value_at_quantile(q) as f64 / 1000.0;
    let n = all.len();
    let load = json!({
        "duration_s": intervals as f64,
        "requests": n,
        "status_codes": { "200": n },
        "errors": {},
        "latency_us": { "p50": us(0.5), "p90": us(0.9), "p99": us(0.99), "p999": us(0.999) },
    });
    let health = Health::of(&load, &Expect::parse("2xx").unwrap(), 1.0);
    Run {
        load,
        health,
        cpu_us_per_request: None,
        intervals: logged,
        dir: None,
    }
}

fn row<'a>(c: &'a Comparison, metric: &str) -> &'a Row {
    c.rows.iter().find(|r| r.metric == metric).unwrap()
}

#[test]
fn a_ten_percent_p99_shift_on_a_million_samples_is_found() {
    let base = vec![run(1, 10, 100_000, 1.0)];
    let cand = vec![run(2, 10, 100_000, 1.10)];
    let c = compare("run", &base, &cand);
    let p99 = row(&c, "p99");
    assert!(
        p99.change_pct > 5.0 && p99.significant && p99.worse,
        "{p99:?}"
    );
    assert_eq!(p99.test, "bootstrap over intervals");
    let p50 = row(&c, "p50");
    assert!(!p50.significant, "the body did not move: {p50:?}");
    let t = &Threshold::parse_list("p99<+5%").unwrap()[0];
    assert!(t.crossed(p99), "{}", t.verdict(p99));
    assert!(t.verdict(p99).ends_with("CROSSED"));
}

#[test]
fn two_samples_of_one_distribution_are_not_told_apart() {
    let base = vec![run(3, 10, 100_000, 1.0)];
    let cand = vec![run(4, 10, 100_000, 1.0)];
    let c = compare("run", &base, &cand);
    for r in &c.rows {
        assert!(!r.significant, "{r:?}");
    }
    let d = c.distributions.as_ref().unwrap();
    assert!(d.ks_d < 0.01, "{d:?}");
    let t = &Threshold::parse_list("p99<+5%,goodput>-3%").unwrap();
    assert!(!t[0].crossed(row(&c, "p99")));
}

#[test]
fn repeated_runs_use_the_rank_test() {
    let base: Vec<Run> = (0..5).map(|s| run(10 + s, 3, 20_000, 1.0)).collect();
    let cand: Vec<Run> = (0..5).map(|s| run(20 + s, 3, 20_000, 1.3)).collect();
    let c = compare("run", &base, &cand);
    let p99 = row(&c, "p99");
    assert_eq!(p99.test, "rank test, 5 and 5 runs");
    assert!(p99.significant && p99.p.unwrap() < 0.05, "{p99:?}");
}

#[test]
fn thresholds_parse_and_bad_ones_say_how() {
    let t = Threshold::parse_list("p99<+5%, goodput>-3%").unwrap();
    assert_eq!(
        t,
        vec![
            Threshold {
                metric: "p99".into(),
                below: true,
                limit_pct: 5.0
            },
            Threshold {
                metric: "goodput".into(),
                below: false,
                limit_pct: -3.0
            },
        ]
    );
    for bad in ["p99=5%", "latency<5%", "p99<fast"] {
        assert!(
            Threshold::parse_list(bad)
                .unwrap_err()
                .contains("--threshold"),
            "{bad}"
        );
    }
}

#[test]
fn a_regression_in_the_second_half_of_a_run_colours_the_right_of_the_difference_map() {
    let base = vec![run(5, 10, 20_000, 1.0)];
    let mut cand = vec![run(6, 10, 20_000, 1.0)];
    // From second 6 on, the candidate's upper sixth takes three times as long.
    let slow = run(7, 10, 20_000, 3.0);
    for (i, interval) in slow.intervals.into_iter().enumerate().skip(5) {
        cand[0].intervals[i] = interval;
    }
    let map = super::html::difference("run", &base, &cand).unwrap();
    assert_eq!(map.values.len(), 10);
    let most = |columns: std::ops::Range<usize>, sign: f64| {
        map.values[columns]
            .iter()
            .flatten()
            .filter(|v| v.is_finite())
            .fold(0.0f64, |m, v| m.max(sign * v))
    };
    let (early, late) = (most(0..5, 1.0).max(most(0..5, -1.0)), most(5..10, 1.0));
    assert!(late > 3.0, "the late seconds show no regression: {late}");
    assert!(
        late > 3.0 * early,
        "noise {early} points early against {late} late"
    );
    let svg = map.to_svg();
    assert!(svg.contains("Density maps, candidate minus baseline, run"));
}
