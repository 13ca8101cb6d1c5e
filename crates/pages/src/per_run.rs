//! A sweep's runs one by one: the table (and its report.json form) with every figure of each
//! point — goodput, latency, the accept-queue wait and the connections' lifetimes (where the
//! kernel module measured them), the
//! server's and the generator's CPU, the machine, errors, the verdict, validity and repeats.
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
    let lives = points.iter().any(|p| p.lifetimes.is_some());
    let mut header = vec![x, "goodput/s", "Mbit/s", "p50 ms", "p90 ms", "p99 ms"];
    if queue {
        header.push("accept queue p50/p99 ms");
    }
    if lives {
        header.extend(["lifetime p50/p99 ms", "into TIME_WAIT"]);
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
        if lives {
            row.extend(lifetime_cells(p));
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

/// A run's lifetime cells: "p50/p99" of its connections' lifetimes and how many the server
/// closed into TIME_WAIT, `-` where it has none.
fn lifetime_cells(p: &Point) -> [String; 2] {
    p.lifetimes.map_or(["-".into(), "-".into()], |l| {
        [
            format!(
                "{}/{}",
                super::queue_wait::ms(l.lifetime.p50_ms),
                super::queue_wait::ms(l.lifetime.p99_ms)
            ),
            l.time_wait_entered.to_string(),
        ]
    })
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
            lifetimes: p.lifetimes.map(|l| l.lifetime.count),
            lifetime_p50_ms: p.lifetimes.map(|l| l.lifetime.p50_ms),
            lifetime_p99_ms: p.lifetimes.map(|l| l.lifetime.p99_ms),
            time_wait_entered: p.lifetimes.map(|l| l.time_wait_entered),
        },
    };
    points.iter().map(run).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::point::test_sweep;
    use webscope_bottleneck::os_figures::Lifetimes;
    use webscope_monitor::kernel::Latency;

    fn lives(count: u64, p50: f64, p99: f64, time_wait: u64) -> Option<Lifetimes> {
        Some(Lifetimes {
            port: 80,
            lifetime: Latency {
                count,
                mean_ms: p50,
                p50_ms: p50,
                p90_ms: p99,
                p99_ms: p99,
                p999_ms: p99,
                max_ms: p99,
            },
            time_wait_entered: time_wait,
        })
    }

    #[test]
    fn lifetimes_are_columns_and_json_only_where_a_run_has_them() {
        let mut points = test_sweep(&[(1.0, 100.0), (2.0, 200.0)], 0.3, Some(0.5));
        let as_value = |p: &[Point]| serde_json::to_value(json(p, "clients")).unwrap();
        let before = (table(&points, "clients"), as_value(&points));
        assert!(!before.0.header.iter().any(|h| h.contains("lifetime")));
        assert!(before.1[0].get("lifetime_p50_ms").is_none());

        points[1].lifetimes = lives(412, 0.25, 1.5, 410);
        let t = table(&points, "clients");
        let col = |name: &str| t.header.iter().position(|h| h == name).unwrap();
        let (life, tw) = (col("lifetime p50/p99 ms"), col("into TIME_WAIT"));
        assert_eq!((&*t.rows[1][life], &*t.rows[1][tw]), ("0.250/1.50", "410"));
        assert_eq!((&*t.rows[0][life], &*t.rows[0][tw]), ("-", "-"));
        let j = as_value(&points);
        assert!(j[0].get("lifetimes").is_none(), "{}", j[0]);
        assert_eq!(j[1]["lifetimes"], 412);
        assert_eq!(j[1]["lifetime_p99_ms"], 1.5);
        assert_eq!(j[1]["time_wait_entered"], 410);
    }
}
