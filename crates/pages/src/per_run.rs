//! A sweep's runs one by one: the table (and its report.json form) with every figure of each
//! point — goodput, latency, the accept-queue wait (where the kernel module measured it), the
//! server's and the generator's CPU, the machine, errors, the verdict, validity and repeats.
//! The kernel's other figures of the connections (lifetimes, TIME_WAIT, retransmits) are a
//! table of their own ([`super::connections`]), in report.json beside these.
//! The clients sweep shows it; any experiment whose runs are points over some x (offered
//! rate, speed-up) can, with its own x. Not for judging a sweep as a whole (`sweep`).

use webscope_lab::results::sweeps::{KernelFigures, SweepRun};
use webscope_report::Table;

use super::point::Point;

/// One row per point; the first column, headed `x`, holds the point's x.
pub fn table(points: &[Point], x: &str) -> Table {
    // The accept-queue wait only where a run has it (the kernel module): a lab without it
    // renders as it always did.
    let queue = points.iter().any(|p| p.queue_wait.is_some());
    let mut header = vec![x, "goodput/s", "Mbit/s", "p50 ms", "p90 ms", "p99 ms"];
    if queue {
        header.push("accept queue p50/p99 ms");
    }
    header.extend([
        "server ms",
        "server cores",
        "generator busy",
        "CPU usr/sys/si %",
        "TIME_WAIT",
        "disk %",
        "errors",
        "error %",
        "bound by",
        "valid",
        "repeats",
        "goodput min-max",
    ]);
    let mut t = Table::new(header);
    for p in points {
        let mut row = vec![
            format!("{}", p.x),
            format!("{:.0}", p.rps),
            format!("{:.1}", p.mbit_s),
            format!("{:.2}", p.p50_ms),
            format!("{:.2}", p.p90_ms),
            format!("{:.2}", p.p99_ms),
        ];
        if queue {
            row.push(super::queue_wait::cell(p.queue_wait.as_ref()));
        }
        row.extend([
            p.server_ms.map_or("-".into(), |v| format!("{v:.3}")),
            p.server_cores.map_or("-".into(), |v| format!("{v:.2}")),
            format!("{:.0}%", 100.0 * p.generator_busy),
            p.cpu_pct
                .map_or("-".into(), |(u, s, si)| format!("{u:.0}/{s:.0}/{si:.0}")),
            p.time_wait.map_or("-".into(), |v| format!("{v:.0}")),
            p.disk_util.map_or("-".into(), |v| format!("{v:.0}")),
            p.health.errors_cell(),
            format!("{:.2}", 100.0 * p.health.error_share),
            // An invalid run measured its errors: no verdict on what bounds it.
            if p.valid() {
                p.verdict.bound.label().to_string()
            } else {
                "-".into()
            },
            p.health
                .invalid
                .as_ref()
                .map_or("yes".into(), |why| format!("no: {why}")),
            p.repeats.to_string(),
            p.spread
                .map_or("-".into(), |(lo, hi)| format!("{lo:.0}-{hi:.0}")),
        ]);
        t.row(row);
    }
    t
}

/// The points as report.json's `runs`: the figures of [`table`], unrounded, each point's x
/// under the key `x` names.
pub fn json(points: &[Point], x: &str) -> Vec<SweepRun> {
    let run = |p: &Point| SweepRun {
        x: [(x.to_string(), p.x)].into(),
        goodput_per_s: p.rps,
        responses_per_s: p.health.responses_rps,
        mbit_s: p.mbit_s,
        p50_ms: p.p50_ms,
        p99_ms: p.p99_ms,
        server_ms: p.server_ms,
        error_share: p.health.error_share,
        errors: p.health.unexpected_map(),
        valid: p.valid(),
        invalid_because: p.health.invalid.clone(),
        bound: p.valid().then_some(p.verdict.bound),
        verdict: p.valid().then(|| p.verdict.reading.clone()),
        run: p.name.clone(),
        repeats: p.repeats,
        goodput_min: p.spread.map(|s| s.0),
        goodput_max: p.spread.map(|s| s.1),
        // Only where measured: report.json of a lab without the kernel module is unchanged.
        kernel: KernelFigures {
            accept_wait_p50_ms: p.queue_wait.as_ref().map(|q| q.wait.p50_ms),
            accept_wait_p99_ms: p.queue_wait.as_ref().map(|q| q.wait.p99_ms),
            accept_wait_per_request_ms: p.queue_wait.as_ref().map(|q| q.per_request_ms),
            ..super::connections::figures(p.connections.as_ref())
        },
    };
    points.iter().map(run).collect()
}
