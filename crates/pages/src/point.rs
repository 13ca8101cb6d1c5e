//! The data model of the pages: a [`Point`] is one run's key figures with its health and its
//! verdict; an experiment's runs load as points ([`load_points`]) and repeats pool into one
//! point each ([`pool`]). Not for drawing anything (the pages and their builder do).

use std::path::Path;

use super::connections::Connections;
use super::queue_wait::QueueWait;
use super::rendered::Rendered;
use webscope_bottleneck::evidence::{evidence, run_time_wait};
use webscope_bottleneck::os_figures::server_machine;
use webscope_bottleneck::{self as bottleneck, Verdict};
use webscope_record::health::{Expect, Health, Judge};
use webscope_record::{read_json, ExperimentRecord, RunRecord};

/// One run's key figures, taken from its record.
#[derive(Debug, Clone)]
pub struct Point {
    /// The run's directory name (of the median run, when repeats are pooled).
    pub name: String,
    /// The factor's value (the run record's `x`): what the experiment varied, the charts' x axis.
    pub x: f64,
    /// Goodput: responses with an expected status per second. Every chart, fit and verdict
    /// starts from it.
    pub rps: f64,
    /// Whether the run is valid, its errors by kind and status.
    pub health: Health,
    /// What bounds the run, with its figure.
    pub verdict: Verdict,
    /// Bytes received, in Mbit/s over the run.
    pub mbit_s: f64,
    /// Latency percentiles over the whole run, milliseconds.
    pub p50_ms: f64,
    /// 90th percentile, ms.
    pub p90_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// Mean latency, ms.
    pub mean_ms: f64,
    /// Attempts that were not good: failures plus responses with an unexpected status.
    pub errors: f64,
    /// The busiest generator thread's CPU share of the run, 0..1.
    pub generator_busy: f64,
    /// The server's own time per response, ms (None: only `webscope serve`'s admin endpoint
    /// says it).
    pub server_ms: Option<f64>,
    /// CPU cores the server's processes kept busy on average (None without the server's figures).
    pub server_cores: Option<f64>,
    /// Machine CPU shares over the run (user, system, softirq), per cent of all CPUs.
    pub cpu_pct: Option<(f64, f64, f64)>,
    /// TIME_WAIT sockets this run's own connections left: the figure the verdict weighs.
    pub time_wait: Option<f64>,
    /// Busiest disk's mean utilisation, per cent.
    pub disk_util: Option<f64>,
    /// The connections' wait in the server's accept queue (the monitor's kernel module),
    /// where it was measured.
    pub queue_wait: Option<QueueWait>,
    /// How long the connections lived, their TIME_WAITs and retransmits (the monitor's
    /// kernel module), where it watched the run's port.
    pub connections: Option<Connections>,
    /// Valid runs behind the point (`--repeat`): 1 for a single run.
    pub repeats: usize,
    /// Lowest and highest goodput of the repeats, when there were several.
    pub spread: Option<(f64, f64)>,
    /// The run's record as the lab wrote it, for figures the point does not copy.
    pub run: RunRecord,
}

impl Point {
    /// Server CPU time per request, microseconds (None without the server's figures).
    pub fn server_cpu_us(&self) -> Option<f64> {
        self.run.server_cpu_us_per_request()
    }

    /// The run's label: its load's description up to the first colon (a protocol, a step).
    pub fn label(&self) -> String {
        self.run
            .load_description
            .split(':')
            .next()
            .unwrap_or("")
            .to_string()
    }

    /// Whether the run counts: left out of knees, fits and models when it does not.
    pub fn valid(&self) -> bool {
        self.health.invalid.is_none()
    }

    fn of(name: &str, run: RunRecord, expect: &Expect, judge: &Judge) -> Point {
        let l = &run.load;
        let health = Health::of(l, expect, judge.max_error_pct);
        let verdict = bottleneck::judge(&evidence(&run, &health));
        let errors = (health.attempts - health.good) as f64;
        Point {
            name: name.to_string(),
            repeats: 1,
            spread: None,
            x: run.x,
            rps: health.goodput_rps,
            health,
            verdict,
            mbit_s: l.total.bytes_per_s * 8.0 / 1e6,
            p50_ms: l.total.latency_us.p50 / 1000.0,
            p90_ms: l.total.latency_us.p90 / 1000.0,
            p99_ms: l.total.latency_us.p99 / 1000.0,
            mean_ms: l.total.latency_us.mean / 1000.0,
            errors,
            generator_busy: l.generator_busy,
            // Only webscope serve's admin endpoint says how long it took; other servers'
            // figures are their CPU time alone.
            server_ms: run
                .server
                .as_ref()
                .filter(|s| s.requests > 0.0)
                .map(|s| s.response_us / 1000.0),
            server_cores: run.server.as_ref().map(|s| s.busy_cores),
            // The server's machine: the remote one through node_exporter, when given.
            cpu_pct: server_machine(&run).and_then(|os| {
                Some((
                    os.mean("cpu", "all", "user_pct")?,
                    os.mean("cpu", "all", "system_pct")?,
                    os.mean("cpu", "all", "softirq_pct")?,
                ))
            }),
            time_wait: run_time_wait(&run),
            disk_util: server_machine(&run).and_then(|os| os.busiest("disk", "util_pct")),
            queue_wait: super::queue_wait::of(&run),
            connections: super::connections::of(&run),
            run,
        }
    }
}

/// Loads an experiment's runs, in order, judged as the lab's `judge` says; invalid runs are
/// noted in `out` for the banner.
pub fn load_points(
    dir: &Path,
    exp: &ExperimentRecord,
    out: &mut Rendered,
) -> anyhow::Result<Vec<Point>> {
    let expect = Expect::parse(&out.judge.expect_status).map_err(anyhow::Error::msg)?;
    let mut points = Vec::with_capacity(exp.runs.len());
    for name in &exp.runs {
        let run = read_json::<RunRecord>(&dir.join(name).join("run.json"))?;
        let point = Point::of(name, run, &expect, &out.judge);
        out.judged += 1;
        if let Some(why) = &point.health.invalid {
            out.invalid.push(format!("{}/{name}: {why}", exp.name));
        }
        points.push(point);
    }
    Ok(points)
}

/// An experiment's runs as points with their repeats pooled: what a sweep's page draws.
pub fn load_pooled(
    dir: &Path,
    exp: &ExperimentRecord,
    out: &mut Rendered,
) -> anyhow::Result<Vec<Point>> {
    Ok(pool(load_points(dir, exp, out)?))
}

/// Pools the repeats of each point (runs at the same x): the median run by goodput stands
/// for the point, with the lowest and highest goodput as its spread. Valid runs only, unless
/// none is valid (then the point stays, invalid, so that tables show it). In x order.
pub fn pool(points: Vec<Point>) -> Vec<Point> {
    let mut groups: Vec<Vec<Point>> = Vec::new();
    for p in points {
        match groups.iter_mut().find(|g| g[0].x == p.x) {
            Some(g) => g.push(p),
            None => groups.push(vec![p]),
        }
    }
    let mut pooled: Vec<Point> = groups
        .into_iter()
        .map(|group| {
            let (mut good, bad): (Vec<Point>, Vec<Point>) =
                group.into_iter().partition(Point::valid);
            if good.is_empty() {
                return bad.into_iter().next().expect("a group has a run");
            }
            good.sort_by(|a, b| a.rps.total_cmp(&b.rps));
            let n = good.len();
            let spread = (n > 1).then(|| (good[0].rps, good[n - 1].rps));
            // The lower middle for an even count: a run that was measured, not an average.
            let mut median = good.swap_remove((n - 1) / 2);
            median.repeats = n;
            median.spread = spread;
            median
        })
        .collect();
    pooled.sort_by(|a, b| a.x.total_cmp(&b.x));
    pooled
}

/// Error bars of goodput for pooled points: (x, lowest, highest).
pub fn goodput_spread(points: &[Point]) -> Vec<(f64, f64, f64)> {
    points
        .iter()
        .filter_map(|p| p.spread.map(|(lo, hi)| (p.x, lo, hi)))
        .collect()
}

/// The valid points only: what knees, fits and models are drawn from.
pub fn valid(points: &[Point]) -> Vec<Point> {
    points.iter().filter(|p| p.valid()).cloned().collect()
}

/// A run's point with only what the tests of the renderers look at.
#[cfg(test)]
pub fn test_point(x: f64, rps: f64, gen: f64, cores: Option<f64>) -> Point {
    Point {
        name: format!("run-{x}"),
        repeats: 1,
        spread: None,
        x,
        rps,
        health: Health::of(
            &webscope_record::load_json(
                serde_json::json!({"duration_s": 1.0, "status_codes": {"200": rps as u64}}),
            ),
            &Expect::parse("2xx").expect("a valid list"),
            1.0,
        ),
        verdict: bottleneck::judge(&bottleneck::Evidence {
            goodput_rps: rps,
            generator_busy: gen,
            server_busy_cores: cores,
            server_cpus: Some(1.0),
            ..bottleneck::Evidence::default()
        }),
        mbit_s: 0.0,
        p50_ms: 0.0,
        p90_ms: 0.0,
        p99_ms: 0.0,
        mean_ms: 0.0,
        errors: 0.0,
        generator_busy: gen,
        server_ms: None,
        server_cores: cores,
        cpu_pct: None,
        time_wait: None,
        disk_util: None,
        queue_wait: None,
        connections: None,
        run: RunRecord {
            x,
            load_description: String::new(),
            load: webscope_load::Report::default(),
            server: None,
            os: None,
            server_os: Vec::new(),
            env: Default::default(),
            syscalls: None,
        },
    }
}

/// A sweep of test points, one per (x, goodput), alike but for those.
#[cfg(test)]
pub fn test_sweep(runs: &[(f64, f64)], gen: f64, cores: Option<f64>) -> Vec<Point> {
    runs.iter()
        .map(|&(x, rps)| test_point(x, rps, gen, cores))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each recorded run (tests/data/runs) leads to the bound it was recorded for, from the
    /// figures the monitor and the load generator wrote.
    #[test]
    fn recorded_runs_get_the_verdict_they_were_recorded_for() {
        let recorded = [
            (
                "server-cpu",
                include_str!("../tests/data/runs/server-cpu.json"),
                "server-cpu",
                "of the 1 core they may use",
            ),
            (
                "generator",
                include_str!("../tests/data/runs/generator.json"),
                "generator",
                "measures the generator",
            ),
            (
                "machine-cpu",
                include_str!("../tests/data/runs/machine-cpu.json"),
                "machine-cpu",
                "softirq",
            ),
            (
                "ports",
                include_str!("../tests/data/runs/ports.json"),
                "ports",
                "ephemeral ports",
            ),
            (
                "latency",
                include_str!("../tests/data/runs/latency.json"),
                "latency",
                "Little's law",
            ),
            // #27: keep-alive right after a connection-per-request lab, 28 connects; the
            // port still held 14 028 sockets of the earlier lab in TIME_WAIT.
            (
                "leftover-time-wait",
                include_str!("../tests/data/runs/leftover-time-wait.json"),
                "latency",
                "Little's law",
            ),
            // #27: nginx with worker_processes 1, unpinned on 2 CPUs: its one worker is the
            // limit, not the two CPUs.
            (
                "one-worker",
                include_str!("../tests/data/runs/one-worker.json"),
                "server-cpu",
                "of the 1 core they may use (its 1 busy thread on 2 CPUs)",
            ),
        ];
        for (name, text, bound, says) in recorded {
            let run: RunRecord = serde_json::from_str(text).unwrap();
            let point = Point::of(
                name,
                run,
                &Expect::parse("2xx,3xx").unwrap(),
                &Judge::default(),
            );
            assert!(point.valid(), "{name}");
            let got = serde_json::to_value(point.verdict.bound).unwrap();
            assert_eq!(got, bound, "{name}: {}", point.verdict.reading);
            assert!(
                point.verdict.reading.contains(says),
                "{name}: {}",
                point.verdict.reading
            );
        }
    }

    /// The table's TIME_WAIT column and the ports verdict count the same thing, the sockets
    /// this run's own connections left: never more than it opened, whatever earlier runs
    /// left on the port (#27).
    #[test]
    fn time_wait_counts_what_the_run_left_not_the_hosts_leftover() {
        for text in [
            include_str!("../tests/data/runs/leftover-time-wait.json"),
            include_str!("../tests/data/runs/ports.json"),
        ] {
            let run: RunRecord = serde_json::from_str(text).unwrap();
            let connects = run.load.total.run.connects as f64;
            let point = Point::of(
                "run",
                run,
                &Expect::parse("2xx").unwrap(),
                &Judge::default(),
            );
            let evidence = evidence(&point.run, &point.health);
            assert_eq!(point.time_wait, evidence.time_wait);
            let tw = point.time_wait.unwrap();
            assert!(tw <= connects, "{tw} TIME_WAIT from {connects} connects");
            let row = super::super::per_run::table(std::slice::from_ref(&point), "clients");
            assert!(
                row.rows[0].contains(&format!("{tw:.0}")),
                "{:?}",
                row.rows[0]
            );
            if point.verdict.bound == bottleneck::Bound::Ports {
                assert!(
                    point
                        .verdict
                        .reading
                        .contains(&format!("left {tw:.0} sockets")),
                    "{}",
                    point.verdict.reading
                );
            }
        }
    }

    #[test]
    fn repeats_pool_to_the_median_run_with_their_spread() {
        let mut points: Vec<Point> = [
            (2.0, 300.0),
            (1.0, 100.0),
            (2.0, 200.0),
            (1.0, 120.0),
            (2.0, 260.0),
        ]
        .into_iter()
        .map(|(x, r)| test_point(x, r, 0.3, Some(0.5)))
        .collect();
        // An invalid repeat is left out of the median and the spread.
        let forbidden = webscope_record::load_json(
            serde_json::json!({"duration_s": 1.0, "status_codes": {"403": 5000}}),
        );
        points[4].health = Health::of(&forbidden, &Expect::parse("2xx").unwrap(), 1.0);
        points[4].rps = 0.0;
        let pooled = pool(points);
        assert_eq!(pooled.len(), 2);
        assert_eq!(
            (pooled[0].x, pooled[0].rps, pooled[0].repeats),
            (1.0, 100.0, 2)
        );
        assert_eq!(pooled[0].spread, Some((100.0, 120.0)));
        assert_eq!(
            (pooled[1].x, pooled[1].rps, pooled[1].repeats),
            (2.0, 200.0, 2)
        );
        assert_eq!(
            goodput_spread(&pooled),
            vec![(1.0, 100.0, 120.0), (2.0, 200.0, 300.0)]
        );
        // A point with no valid run stays, invalid, for the tables.
        let mut lone = test_point(4.0, 0.0, 0.3, None);
        lone.health = Health::of(&forbidden, &Expect::parse("2xx").unwrap(), 1.0);
        let pooled = pool(vec![lone]);
        assert!(!pooled[0].valid() && pooled[0].spread.is_none());
        assert!(super::super::page::repeats_note(&pooled).is_none());
    }
}
