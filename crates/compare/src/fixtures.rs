//! Runs made up for tests: latencies from a seeded log-normal with a heavier upper sixth,
//! and their interval logs. Here, not in a test module, because the pages crate's tests of
//! compare's page draw the same runs (the `fixtures` feature).

use hdrhistogram::Histogram;
use serde_json::json;
use webscope_workload::Rng;

use super::input::Run;
use webscope_record::health::{Expect, Health};

/// A run of `intervals` one-second intervals of `per` latencies each, drawn from a log-normal
/// whose upper sixth (above one standard deviation) is stretched by `tail` (1.0: none): the
/// p90, p99 and p99.9 move by `tail`, the median not at all.
pub fn run(seed: u64, intervals: usize, per: usize, tail: f64) -> Run {
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
    run_of(&all, intervals as f64, logged)
}

/// A run of `seconds` whose latencies (ns) are `all`, all of them good, with its interval log.
pub fn run_of(
    all: &Histogram<u64>,
    seconds: f64,
    intervals: Vec<webscope_load::LoggedInterval>,
) -> Run {
    let us = |q: f64| all.value_at_quantile(q) as f64 / 1000.0;
    let n = all.len();
    let load = json!({
        "duration_s": seconds,
        "requests": n,
        "status_codes": { "200": n },
        "errors": {},
        "latency_us": { "p50": us(0.5), "p90": us(0.9), "p99": us(0.99), "p999": us(0.999) },
    });
    let load: webscope_load::Report = serde_json::from_value(load).unwrap();
    let health = Health::of(&load, &Expect::parse("2xx").unwrap(), 1.0);
    Run {
        load,
        health,
        cpu_us_per_request: None,
        intervals,
        dir: None,
    }
}
