//! The targets for the degradation experiment (fair shares, progress of the heavy
//! service, admission's latency, the cost of the middleware alone), each judged from the
//! measured figures and said as a sentence.

use super::rows::Degradation;
use super::runs::Run;
use webscope_report::human::pct_brief;

/// The targets, each as a sentence with its measured figures and a verdict.
pub fn targets(runs: &[Run], rows: &[Degradation]) -> Vec<(String, bool)> {
    let find = |policy: &str, service: &str| {
        rows.iter()
            .find(|d| d.set == "set1" && d.policy == policy && d.service == service)
    };
    let mut out = Vec::new();
    if let (Some(light), Some(heavy)) = (find("fair", "light"), find("fair", "heavy")) {
        if let Some(kept) = light.kept_pct {
            out.push((
                format!(
                    "fair, set 1: light keeps {} of its throughput at {} heavy clients (target ≥ 80 %)",
                    pct_brief(kept / 100.0),
                    light.heavy_max
                ),
                kept >= 80.0,
            ));
        }
        if let Some(share) = light.cpu_share_pct {
            // Weights light=8, heavy=1: light is owed 8/9 of the CPU when both are backlogged.
            let owed = 800.0 / 9.0;
            out.push((
                format!(
                    "fair, set 1: light has {} of the services' CPU, heavy {} (weights 8:1 give {}, target ± 10 points)",
                    pct_brief(share / 100.0),
                    pct_brief(heavy.cpu_share_pct.unwrap_or(0.0) / 100.0),
                    pct_brief(owed / 100.0)
                ),
                (share - owed).abs() <= 10.0,
            ));
        }
        out.push((
            format!(
                "fair, set 1: heavy completes {:.1} requests/s at {} heavy clients (target: more than none)",
                heavy.last_per_s, heavy.heavy_max
            ),
            heavy.last_per_s > 0.0,
        ));
    }
    if let Some(light) = find("threads", "light") {
        if let Some(kept) = light.kept_pct {
            out.push((
                format!(
                    "threads, set 1: light keeps {} (no target: what this OS's scheduler does; the paper saw 1-3 % on Linux 2.6)",
                    pct_brief(kept / 100.0)
                ),
                true,
            ));
        }
    }
    if let (Some(light), Some(heavy)) = (find("admission", "light"), find("admission", "heavy")) {
        if let Some(base) = light.base_p99_ms {
            // The light service's own target: its p99 with no heavy load, plus the admission
            // rule's queueing-delay target (5 ms) — what it should cost to share the server.
            let target = base + 5.0;
            out.push((
                format!(
                    "admission, set 1: light p99 {:.1} ms at {} heavy clients against {target:.1} ms (its p99 alone + the 5 ms queueing target), heavy refused {:.1}/s",
                    light.last.p99_ms, light.heavy_max, heavy.last.refused_per_s
                ),
                light.last.p99_ms <= target && heavy.last.refused_per_s > 0.0,
            ));
        }
    }
    let light0 = |policy: &str| {
        runs.iter()
            .find(|r| r.set == "set1" && r.policy == policy && r.heavy == 0)
            .and_then(|r| r.service("light"))
            .map(|s| s.ok_per_s)
    };
    if let (Some(fair), Some(threads)) = (light0("fair"), light0("threads")) {
        if threads > 0.0 {
            let ratio = fair / threads;
            out.push((
                format!(
                    "no contention: light alone does {fair:.0} req/s under fair, {threads:.0} under threads ({ratio:.2}×, target ≥ 0.95×)"
                ),
                ratio >= 0.95,
            ));
        }
    }
    out
}
