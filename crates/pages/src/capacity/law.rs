//! The operational laws set beside a measured capacity: the server's CPU per request at
//! capacity, the bound 1/D_max from the demand D = U/X measured on the probes that passed,
//! and whether the CPU can explain the latency that failed the objective at all. A server
//! that holds one request at a time, or waits on a backend, fails its objective with its CPU
//! nearly idle: its capacity is then far below 1/D_max, and the page must not blame the
//! objective's tightness for a gap that another resource makes. The reasoning follows the
//! condition that failed ([`Failed`]): refusals, other errors or one size class's own time
//! are said as such, and the latency reasoning (the CPU's queue) is kept for latency.
//!
//! Not for: drawing (the page's charts are `super`'s) nor judging probes.

use webscope_model::stats::Sorted;
use webscope_report::human::pct_brief;

use super::failed::Failed;
use crate::model::demands;
use crate::point::Point;
use webscope_lab::objective::Outcome;
use webscope_lab::step::Judged;

/// How much slower than waiting for the CPU alone the first failing probe's mean response
/// must be before the page says the CPU does not explain it: an M/M/1 queue at the measured
/// utilisation gives D/(1−ρ); constant arrivals wait less than that, so ten times it is
/// far outside what the CPU's queue can make.
const BEYOND_THE_CPU: f64 = 10.0;
/// Utilisation of the server's CPUs above which the CPU explains any latency.
const SATURATED: f64 = 0.9;

/// Why the CPU does not explain the first failing probe: what it was measured at.
#[derive(Debug, Clone, PartialEq)]
pub struct NotTheCpu {
    pub rate: f64,
    /// Busy share of the CPUs the server may use.
    pub utilisation: f64,
    /// Server CPU per request at that probe, µs.
    pub demand_us: f64,
    /// D / (1 − ρ), ms.
    pub predicted_ms: f64,
    pub measured_ms: f64,
}

/// The server's CPU per request at capacity and the operational-law bound.
pub struct Law {
    pub capacity: Option<f64>,
    /// Server CPU time per request at the capacity's probes, µs.
    pub cpu_us: Option<f64>,
    /// 1 / D_max: D = U / X at the highest-rate probe that passed at or below capacity.
    pub bound: Option<f64>,
    /// Set when the CPU cannot explain the latency of the first probe that failed.
    pub not_cpu: Option<NotTheCpu>,
    /// What failed the first probe that failed.
    pub failed: Option<Failed>,
}

impl Law {
    pub fn of(points: &[Point], probes: &[Judged], capacity: Option<f64>) -> Law {
        let at_or_below = |p: &&Point, j: &&Judged| {
            j.outcome == Outcome::Pass && capacity.is_none_or(|c| p.x <= c + 0.5)
        };
        let lower: Vec<Point> = points
            .iter()
            .zip(probes)
            .filter(|(p, j)| at_or_below(p, j) && measurable(p))
            .map(|(p, _)| p.clone())
            .collect();
        let cpus = points
            .iter()
            .find_map(|p| p.run.env.server_cpus)
            .filter(|c| *c > 0.0)
            .unwrap_or(1.0);
        // The server's own demand only: on loopback the disks and the generator are the
        // machine's, shared with everything else that runs on it. Taken at the highest rate
        // that passed, nearest the saturation the bound is about: a server's CPU per request
        // falls as its load grows (batched wake-ups and syscalls: 57 µs at 1 000 req/s and
        // 12 µs at 64 000 on the embedded default), so a median over the lighter probes
        // would put the bound below rates that passed.
        let highest: Vec<Point> = lower
            .iter()
            .max_by(|a, b| a.x.total_cmp(&b.x))
            .cloned()
            .into_iter()
            .collect();
        let bound = demands(&highest)
            .filter(|d| d.cpu > 0.0)
            .map(|d| cpus / d.cpu);
        let cpu_us = capacity.and_then(|c| {
            Sorted::new(
                points
                    .iter()
                    .filter(|p| (p.x - c).abs() < 0.5 && measurable(p))
                    .filter_map(Point::server_cpu_us),
            )
            .median()
        });
        let failed = Failed::of(points, probes);
        // The CPU's queue is weighed against a latency that failed, not against refusals.
        let on_latency = failed.as_ref().is_none_or(Failed::is_latency);
        Law {
            capacity,
            cpu_us,
            bound,
            not_cpu: not_the_cpu(points, probes, cpus).filter(|_| on_latency),
            failed,
        }
    }

    pub fn ratio(&self) -> Option<f64> {
        Some(self.capacity? / self.bound?)
    }

    pub fn sentences(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(us) = self.cpu_us {
            out.push(format!(
                "The server's CPU per request at capacity: {us:.1} µs."
            ));
        }
        out.extend(self.failed.as_ref().and_then(Failed::sentence));
        if let Some(n) = &self.not_cpu {
            out.push(format!(
                "At {:.0} req/s, the first rate that failed, the server's CPU was at most {} busy and a request took at most {:.0} µs of it: waiting for the CPU would make a mean response near {:.2} ms, but it was {:.1} ms. So something other than the server's CPU bounds it: too few threads or connections for the load (one request at a time), a lock, a backend it waits for, or a rate limit; the lab measures CPUs, not these.",
                n.rate,
                pct_brief(n.utilisation),
                n.demand_us,
                n.predicted_ms,
                n.measured_ms
            ));
        }
        match (self.bound, self.ratio()) {
            (Some(bound), Some(ratio)) => out.push(format!(
                "Operational-law bound 1/D_max = {bound:.0} req/s (D = U/X of the server's CPU at the highest rate that passed, for the cores it may use): the measured capacity is {} of it.{}",
                pct_brief(ratio),
                if self.not_cpu.is_some() {
                    ""
                } else if !self.failed.as_ref().is_none_or(Failed::is_latency) {
                    " The objective did not fail on the latency of a busy resource (above): the gap to the bound is not queueing."
                } else if ratio < 1.0 {
                    " A latency objective binds before the resource is full: waiting grows as its utilisation nears 1 (ρ/(1−ρ) service times in an M/M/1 queue), so the objective fails short of the throughput bound."
                } else {
                    " The capacity reaches the bound: the objective is loose enough to hold up to saturation, or the demand measured at light load is larger than at heavy load (batching, warmer caches)."
                }
            )),
            (Some(bound), None) => out.push(format!(
                "Operational-law bound 1/D_max = {bound:.0} req/s (D = U/X of the server's CPU at the highest rate that passed); no measured capacity to set it against."
            )),
            _ => out.push(
                "No operational-law bound: no probe that passed measured enough of the server's CPU (an external target without --server-pid, no pass, or under 50 ms of CPU: five clock ticks).".into(),
            ),
        }
        out
    }
}

/// Whether a probe's server CPU time is long enough to divide: at least [`MIN_CPU_S`], so
/// that the clock's 10-ms ticks do not set the demand (one tick over 3 requests reads as
/// 3 333 µs a request).
fn measurable(p: &Point) -> bool {
    p.run.server.as_ref().is_some_and(|s| s.cpu_s >= MIN_CPU_S)
}

/// Server CPU time a probe needs for its demand to count: five clock ticks.
const MIN_CPU_S: f64 = 0.05;

/// Whether the CPU's queue can explain the mean response of the lowest-rate probe that
/// failed; None when it can, or when the figures to tell are not there. The server's CPU
/// time is read in clock ticks, so a nearly idle server's is uncertain by one: the test takes
/// the most it can have been (one tick more), and speaks only when even that is far short.
fn not_the_cpu(points: &[Point], probes: &[Judged], cpus: f64) -> Option<NotTheCpu> {
    let (point, _) = points
        .iter()
        .zip(probes)
        .filter(|(p, j)| j.outcome == Outcome::Fail && p.run.server.is_some())
        .min_by(|a, b| a.0.x.total_cmp(&b.0.x))?;
    let server = point.run.server.as_ref()?;
    let duration = point.run.load.duration_s;
    let requests = point.run.server_requests();
    if duration <= 0.0 || requests <= 0.0 {
        return None;
    }
    let cpu_s = server.cpu_s + CLOCK_TICK_S;
    let utilisation = cpu_s / duration / cpus;
    let demand_us = cpu_s * 1e6 / requests;
    if utilisation >= SATURATED {
        return None;
    }
    let predicted_ms = demand_us / 1000.0 / (1.0 - utilisation);
    (point.mean_ms > BEYOND_THE_CPU * predicted_ms).then_some(NotTheCpu {
        rate: point.x,
        utilisation,
        demand_us,
        predicted_ms,
        measured_ms: point.mean_ms,
    })
}

/// The resolution of a process's CPU time in /proc (USER_HZ = 100).
const CLOCK_TICK_S: f64 = 0.01;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::point::test_point;
    use webscope_record::ServerFigures;

    /// A failing probe at `rate` with the server's CPU `busy` of one core, `demand_us` a
    /// request and a mean response of `mean_ms`.
    fn failed(rate: f64, busy: f64, demand_us: f64, mean_ms: f64) -> (Point, Judged) {
        let mut p = test_point(rate, rate, 0.1, Some(busy));
        p.mean_ms = mean_ms;
        p.run.load = webscope_record::load_json(serde_json::json!({"duration_s": 2.0}));
        // A 2-s probe, so that even 3 % of a core is enough CPU time to divide.
        let cpu_s = 2.0 * busy;
        p.run.server = Some(ServerFigures {
            requests: cpu_s / (demand_us * 1e-6),
            cpu_s,
            busy_cores: busy,
            ..Default::default()
        });
        let j: Judged = serde_json::from_value(serde_json::json!({
            "number": 1, "rate": rate, "outcome": "fail", "reason": "", "checks": [],
            "late_share": 0.0, "bound": "latency", "bound_reading": "", "warmup_s": 0.2,
            "cooldown": {"waited_s": 0.0, "open_before": 0, "open_after": 0, "time_wait": 0, "settled": true}
        }))
        .unwrap();
        (p, j)
    }

    fn verdict(rate: f64, busy: f64, demand_us: f64, mean_ms: f64) -> Option<NotTheCpu> {
        let (p, j) = failed(rate, busy, demand_us, mean_ms);
        not_the_cpu(&[p], &[j], 1.0)
    }

    #[test]
    fn the_cpu_explains_a_latency_only_as_far_as_its_queue_can() {
        // One request at a time for 10 ms: the CPU 3 % busy at 300 µs a request, responses
        // of 400 ms: D/(1-ρ) is 0.31 ms (0.36 ms with a tick more), so the CPU cannot be
        // what made them wait.
        let n = verdict(100.0, 0.03, 300.0, 400.0).expect("not the CPU");
        assert!((n.utilisation - 0.035).abs() < 1e-9, "{n:?}");
        assert!(n.predicted_ms < 0.4, "{n:?}");
        // A CPU-bound server near saturation: the CPU explains any wait.
        assert_eq!(verdict(2_000.0, 0.95, 475.0, 400.0), None);
        // Half busy with a mean of 3 D/(1-ρ): a queue at the CPU, as M/M/1 gives.
        assert_eq!(verdict(1_000.0, 0.5, 500.0, 3.0), None);
        // Without the server's CPU figures nothing is said.
        let (mut p, j) = failed(100.0, 0.03, 300.0, 400.0);
        p.run.server = None;
        assert_eq!(not_the_cpu(&[p], &[j], 1.0), None);
    }

    #[test]
    fn the_bound_is_the_demand_at_the_highest_rate_that_passed() {
        // 57 µs a request at 1 000 req/s, 12 µs at 64 000 (batching): 1/D from the lighter
        // probe, 17 544 req/s, would be below a rate that passed.
        let probe = |rate: f64, us: f64| {
            let cores = rate * us * 1e-6;
            let mut p = test_point(rate, rate, 0.1, Some(cores));
            p.run.server = Some(ServerFigures {
                requests: rate * 3.0,
                cpu_s: cores * 3.0,
                busy_cores: cores,
                ..Default::default()
            });
            let (_, mut j) = failed(rate, cores, us, 1.0);
            j.outcome = Outcome::Pass;
            (p, j)
        };
        let (a, ja) = probe(1_000.0, 57.0);
        let (b, jb) = probe(64_000.0, 12.0);
        let law = Law::of(&[a, b], &[ja, jb], None);
        let bound = law.bound.expect("a bound");
        assert!((bound - 1e6 / 12.0).abs() < 1.0, "{bound}");
    }
}
