//! From the records on disk to the report: `index.html` (charts and tables), `report.json`
//! and one CSV per table, and the terminal summary. Reads only the files the lab wrote, so
//! `webscope report DIR` gives the same bytes as the lab did.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_json::Value;
use webscope_report::{Block, Page, Section};

use super::bottleneck::{self, CpuShares, Evidence, Verdict};
use super::health::{Expect, Health, Judge};
use super::record::{read_json, ExperimentRecord, LabRecord, RunRecord};

pub mod baseline;
pub mod cells;
pub mod charts;
pub mod clients;
pub mod degradation;
pub mod filesize;
pub mod model;
pub mod page;
pub mod paper_panels;
pub mod protocols;
pub mod saturation;
pub mod techniques;

/// One run's key figures, taken from its record.
#[derive(Debug, Clone)]
pub struct Point {
    /// The run's directory name (of the median run, when repeats are pooled).
    pub name: String,
    pub x: f64,
    /// Goodput: responses with an expected status per second. Every chart, fit and verdict
    /// starts from it.
    pub rps: f64,
    /// Whether the run is valid, its errors by kind and status.
    pub health: Health,
    /// What bounds the run, with its figure.
    pub verdict: Verdict,
    pub mbit_s: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub mean_ms: f64,
    pub errors: f64,
    pub generator_busy: f64,
    pub server_ms: Option<f64>,
    pub server_cores: Option<f64>,
    /// Machine CPU shares over the run (user, system, softirq), per cent of all CPUs.
    pub cpu_pct: Option<(f64, f64, f64)>,
    /// Most TIME_WAIT sockets on the server's port during the run.
    pub time_wait: Option<f64>,
    /// Busiest disk's mean utilisation, per cent.
    pub disk_util: Option<f64>,
    /// Valid runs behind the point (`--repeat`): 1 for a single run.
    pub repeats: usize,
    /// Lowest and highest goodput of the repeats, when there were several.
    pub spread: Option<(f64, f64)>,
    pub run: RunRecord,
}

/// A value of the monitor's summary: `groups.<group>.rows.<row>.<column>.<stat>`.
pub fn os_stat(os: &Value, group: &str, row: &str, column: &str, stat: &str) -> Option<f64> {
    os.get("groups")?
        .get(group)?
        .get("rows")?
        .get(row)?
        .get(column)?
        .get(stat)?
        .as_f64()
}

pub fn num(v: &Value, path: &[&str]) -> f64 {
    let mut v = v;
    for key in path {
        v = &v[*key];
    }
    v.as_f64().unwrap_or(0.0)
}

/// CPU shares of a monitor summary's "all" row.
fn cpu_shares(os: &Value) -> Option<CpuShares> {
    let stat = |column: &str| os_stat(os, "cpu", "all", column, "mean");
    Some(CpuShares {
        busy: stat("busy_pct")?,
        user: stat("user_pct").unwrap_or(0.0),
        system: stat("system_pct").unwrap_or(0.0),
        softirq: stat("softirq_pct").unwrap_or(0.0),
    })
}

impl Point {
    /// Server CPU time per request, microseconds (None without the server's figures).
    pub fn server_cpu_us(&self) -> Option<f64> {
        self.run
            .server
            .as_ref()
            .filter(|s| s.requests > 0.0 && s.cpu_s > 0.0)
            .map(|s| s.cpu_s * 1e6 / s.requests)
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
        Point {
            name: name.to_string(),
            repeats: 1,
            spread: None,
            x: run.x,
            rps: health.goodput_rps,
            health,
            verdict,
            mbit_s: num(l, &["bytes_per_s"]) * 8.0 / 1e6,
            p50_ms: num(l, &["latency_us", "p50"]) / 1000.0,
            p90_ms: num(l, &["latency_us", "p90"]) / 1000.0,
            p99_ms: num(l, &["latency_us", "p99"]) / 1000.0,
            mean_ms: num(l, &["latency_us", "mean"]) / 1000.0,
            errors: num(l, &["errors", "total"]),
            generator_busy: num(l, &["generator_busy"]),
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
                    os_stat(os, "cpu", "all", "user_pct", "mean")?,
                    os_stat(os, "cpu", "all", "system_pct", "mean")?,
                    os_stat(os, "cpu", "all", "softirq_pct", "mean")?,
                ))
            }),
            time_wait: run.os.as_ref().and_then(|os| {
                let port = os.get("ports")?.get(0)?.as_u64()?;
                os_stat(os, "ports", &format!("{port}/local"), "time_wait", "max")
            }),
            disk_util: server_machine(&run).and_then(|os| {
                let disks = os.get("groups")?.get("disk")?.get("rows")?.as_object()?;
                disks
                    .values()
                    .filter_map(|d| d.get("util_pct")?.get("mean")?.as_f64())
                    .reduce(f64::max)
            }),
            run,
        }
    }
}

/// The server's machine when it is another one: of the hosts scraped through node_exporter,
/// the busiest (a balanced pool is as slow as its busiest member). None for a local server,
/// or when no scrape succeeded.
pub fn server_host(run: &RunRecord) -> Option<&Value> {
    run.server_os
        .iter()
        .filter(|os| os.get("error").is_none())
        .max_by(|a, b| {
            let busy = |os: &Value| cpu_shares(os).map_or(0.0, |c| c.busy);
            busy(a).total_cmp(&busy(b))
        })
}

/// The monitor summary of the server's machine: the remote one, else this one's.
pub fn server_machine(run: &RunRecord) -> Option<&Value> {
    server_host(run).or(run.os.as_ref())
}

/// The evidence a verdict is drawn from, out of a run's record.
pub fn evidence(run: &RunRecord, health: &Health) -> Evidence {
    let l = &run.load;
    let os = run.os.as_ref();
    // The server's machine: through node_exporter when it is remote, else this one.
    let (server_host_os, generator_host) = match server_host(run) {
        Some(remote) => (Some(remote), os.and_then(cpu_shares)),
        None => (os, None),
    };
    let server_processes = (!run.env.server_processes.is_empty()).then(|| {
        let n = run.env.server_processes.len();
        let names: std::collections::BTreeSet<&str> = run
            .env
            .server_processes
            .iter()
            .filter_map(|p| p.split_once(' ').map(|(_, c)| c))
            .collect();
        format!(
            "{n} process{}: {}",
            if n == 1 { "" } else { "es" },
            names.into_iter().collect::<Vec<_>>().join(", ")
        )
    });
    let busiest_link = os.and_then(|os| {
        let rows = os.get("groups")?.get("net")?.get("rows")?.as_object()?;
        rows.iter()
            .filter_map(|(name, row)| {
                let mbit = run.env.link_mbit.get(name)?;
                let kib = |c: &str| row.get(c)?.get("mean")?.as_f64();
                let peak = kib("rx_kib_per_s")?.max(kib("tx_kib_per_s")?);
                Some((name.clone(), peak * 8.192 / 1000.0 / mbit * 100.0))
            })
            .max_by(|a, b| a.1.total_cmp(&b.1))
    });
    Evidence {
        clients: num(l, &["connections"]),
        goodput_rps: health.goodput_rps,
        mean_ms: num(l, &["latency_us", "mean"]) / 1000.0,
        server_busy_cores: run
            .server
            .as_ref()
            .filter(|_| {
                !run.env.server_processes.is_empty()
                    || run.server.as_ref().is_some_and(|s| s.cpu_s > 0.0)
            })
            .map(|s| s.busy_cores),
        server_cpus: run.env.server_cpus,
        server_processes,
        generator_busy: num(l, &["generator_busy"]),
        generator_busy_or_waiting: num(l, &["generator_busy_or_waiting"]),
        server_host: server_host_os.and_then(cpu_shares),
        server_host_source: server_host_os
            .and_then(|o| o.get("source")?.as_str().map(String::from)),
        generator_host,
        disk_util_pct: server_host_os.and_then(|os| {
            let disks = os.get("groups")?.get("disk")?.get("rows")?.as_object()?;
            disks
                .values()
                .filter_map(|d| d.get("util_pct")?.get("mean")?.as_f64())
                .reduce(f64::max)
        }),
        net_util_pct: busiest_link,
        time_wait: port_time_wait(os).or_else(|| {
            // No per-port count (a remote server): the hosts' totals, which also hold other
            // ports' sockets, are an upper bound.
            server_host_os
                .and_then(|os| os_stat(os, "sockets", "all", "tcp_tw", "max"))
                .into_iter()
                .chain(os.and_then(|os| os_stat(os, "sockets", "all", "tcp_tw", "max")))
                .reduce(f64::max)
        }),
        port_range: run.env.port_range,
        tw_buckets: run.env.tw_buckets,
        listen_overflows_per_s: server_host_os
            .and_then(|os| os_stat(os, "tcp", "all", "listen_overflows_per_s", "mean")),
    }
}

/// TIME_WAIT sockets of the server's port, both ends (the server's side and the clients'),
/// at their most: the connections of this run only, not the host's other ports.
fn port_time_wait(os: Option<&Value>) -> Option<f64> {
    let os = os?;
    let port = os.get("ports")?.get(0)?.as_u64()?;
    let side = |s: &str| os_stat(os, "ports", &format!("{port}/{s}"), "time_wait", "max");
    match (side("local"), side("remote")) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
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

/// The banner a report opens with when runs were invalid: how many, and the first cause.
pub fn banner(out: &Rendered) -> Option<String> {
    let first = out.invalid.first()?;
    let n = out.invalid.len();
    Some(if n == out.judged {
        format!(
            "No valid run: all {n} runs failed more than {} % of their requests, so nothing here is a measurement of the server. First: {first}.",
            out.judge.max_error_pct
        )
    } else {
        format!(
            "{n} of {} runs are invalid (more than {} % of requests failed or got a status other than {}) and are left out of knees, fits and models. First: {first}.",
            out.judged, out.judge.max_error_pct, out.judge.expect_status
        )
    })
}

/// What rendering found, beside the files it wrote.
pub struct Outcome {
    /// `index.html`.
    pub index: PathBuf,
    /// The terminal summary.
    pub summary: String,
    /// Runs judged.
    pub judged: usize,
    /// Runs judged invalid, "experiment run: why".
    pub invalid: Vec<String>,
    /// Runs that failed (no result at all), "experiment: what failed".
    pub failures: Vec<String>,
    /// The lab was stopped (Ctrl-C) before its end: a cut run is not a failure.
    pub interrupted: bool,
}

impl Outcome {
    /// Every judged run was invalid: the lab measured nothing it can stand behind.
    pub fn nothing_valid(&self) -> bool {
        self.judged > 0 && self.invalid.len() == self.judged
    }
}

/// Least-squares line y = a + b x; None with fewer than two distinct x.
pub fn line_fit(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    let n = points.len() as f64;
    if points.len() < 2 {
        return None;
    }
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let b = sxy / sxx;
    Some((my - b * mx, b))
}

/// What the experiments' renderers produce, gathered into the page, the terminal summary,
/// `report.json` and the CSV files.
pub struct Rendered {
    pub sections: Vec<Section>,
    pub summary: String,
    pub json: serde_json::Map<String, Value>,
    /// CSV files to write at the top of the report directory: name, content.
    pub csv: Vec<(String, String)>,
    /// How runs are judged.
    pub judge: Judge,
    /// Invalid runs, "experiment, run: why", for the banner at the top of the page.
    pub invalid: Vec<String>,
    /// Runs judged, valid or not.
    pub judged: usize,
}

/// Renders the report for the lab directory `dir`.
pub fn render(dir: &Path) -> anyhow::Result<Outcome> {
    let lab: LabRecord = read_json(&dir.join("lab.json"))
        .with_context(|| format!("{} is not a webscope lab directory", dir.display()))?;
    let mut setup = vec![Block::Text(format!(
        "Target: {}. Machine: {}. Placement: {}. Server processes measured: {}. Runs are valid when at most {} % of requests fail or get a status other than {}; throughput is goodput (those responses only). {} Command: {}.",
        lab.target,
        lab.machine,
        lab.placement,
        if lab.server_processes.is_empty() { "unknown" } else { &lab.server_processes },
        lab.judge.max_error_pct,
        lab.judge.expect_status,
        lab.preflight,
        lab.command
    ))];
    for w in &lab.warnings {
        setup.push(Block::Warning(w.clone()));
    }
    if lab.interrupted {
        setup.push(Block::Warning(
            "The lab was interrupted: this report shows what was measured before it stopped."
                .into(),
        ));
    }
    let mut out = Rendered {
        sections: vec![Section {
            heading: "Set-up".into(),
            blocks: setup,
        }],
        summary: String::new(),
        json: serde_json::Map::new(),
        csv: Vec::new(),
        judge: lab.judge.clone(),
        invalid: Vec::new(),
        judged: 0,
    };
    let mut failures = Vec::new();
    for name in &lab.experiments {
        let exp_dir = dir.join(name);
        let exp: ExperimentRecord = read_json(&exp_dir.join("experiment.json"))?;
        failures.extend(exp.failures.iter().map(|f| format!("{}: {f}", exp.name)));
        let experiment = super::experiment(&exp.name)
            .with_context(|| format!("{}: unknown experiment {:?}", dir.display(), exp.name))?;
        (experiment.render)(&exp_dir, &exp, &mut out)?;
    }
    for (name, content) in &out.csv {
        std::fs::write(dir.join(name), content)
            .with_context(|| format!("cannot write {}", dir.join(name).display()))?;
    }
    if let Some(baseline) = &lab.baseline {
        let (section, json) = baseline::section(dir, Path::new(baseline));
        out.sections.push(section);
        out.json.insert("baseline".into(), json);
    }
    let banner = banner(&out);
    if let Some(b) = &banner {
        out.summary = format!("{b}\n{}", out.summary);
    }
    out.json.insert(
        "validity".into(),
        serde_json::json!({
            "expect_status": out.judge.expect_status,
            "max_error_pct": out.judge.max_error_pct,
            "runs": out.judged,
            "invalid": out.invalid,
        }),
    );
    let page = Page {
        title: "webscope lab report".into(),
        subtitle: format!("webscope {} — {}", lab.version, lab.target),
        banners: banner.into_iter().collect(),
        sections: out.sections,
    };
    let index = dir.join("index.html");
    std::fs::write(&index, page.to_html())
        .with_context(|| format!("cannot write {}", index.display()))?;
    let text = serde_json::to_string_pretty(&Value::Object(out.json))? + "\n";
    std::fs::write(dir.join("report.json"), text)?;
    Ok(Outcome {
        index,
        summary: out.summary,
        judged: out.judged,
        invalid: out.invalid,
        failures,
        interrupted: lab.interrupted,
    })
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
            &serde_json::json!({"duration_s": 1.0, "status_codes": {"200": rps as u64}}),
            &Expect::parse("2xx").expect("a valid list"),
            1.0,
        ),
        verdict: bottleneck::judge(&Evidence {
            goodput_rps: rps,
            generator_busy: gen,
            server_busy_cores: cores,
            server_cpus: Some(1.0),
            ..Evidence::default()
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
        run: RunRecord {
            x,
            load_description: String::new(),
            load: Value::Null,
            server: None,
            os: None,
            server_os: Vec::new(),
            env: Default::default(),
            syscalls: None,
        },
    }
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
                include_str!("../../tests/data/runs/server-cpu.json"),
                "server-cpu",
                "of the 1 core they may use",
            ),
            (
                "generator",
                include_str!("../../tests/data/runs/generator.json"),
                "generator",
                "measures the generator",
            ),
            (
                "machine-cpu",
                include_str!("../../tests/data/runs/machine-cpu.json"),
                "machine-cpu",
                "softirq",
            ),
            (
                "ports",
                include_str!("../../tests/data/runs/ports.json"),
                "ports",
                "ephemeral ports",
            ),
            (
                "latency",
                include_str!("../../tests/data/runs/latency.json"),
                "latency",
                "Little's law",
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
        let forbidden = serde_json::json!({"duration_s": 1.0, "status_codes": {"403": 5000}});
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
        assert!(page::repeats_note(&pooled).is_none());
    }
}
