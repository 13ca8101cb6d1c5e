//! From the records on disk to the report: `index.html` (charts and tables), `report.json`
//! and one CSV per table, and the terminal summary. Reads only the files the lab wrote, so
//! `webscope report DIR` gives the same bytes as the lab did.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_json::Value;
use webscope_report::{Block, Page, Section};

use super::record::{read_json, ExperimentRecord, LabRecord, RunRecord};

pub mod charts;
pub mod clients;
pub mod degradation;
pub mod filesize;
pub mod model;
pub mod saturation;
pub mod techniques;

/// One run's key figures, taken from its record.
#[derive(Debug, Clone)]
pub struct Point {
    pub x: f64,
    pub rps: f64,
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

impl Point {
    fn of(run: RunRecord) -> Point {
        let l = &run.load;
        Point {
            x: run.x,
            rps: num(l, &["requests_per_s"]),
            mbit_s: num(l, &["bytes_per_s"]) * 8.0 / 1e6,
            p50_ms: num(l, &["latency_us", "p50"]) / 1000.0,
            p90_ms: num(l, &["latency_us", "p90"]) / 1000.0,
            p99_ms: num(l, &["latency_us", "p99"]) / 1000.0,
            mean_ms: num(l, &["latency_us", "mean"]) / 1000.0,
            errors: num(l, &["errors", "total"]),
            generator_busy: num(l, &["generator_busy"]),
            server_ms: run.server.as_ref().map(|s| s.response_us / 1000.0),
            server_cores: run.server.as_ref().map(|s| s.busy_cores),
            cpu_pct: run.os.as_ref().and_then(|os| {
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
            disk_util: run.os.as_ref().and_then(|os| {
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

/// Loads an experiment's runs, in order.
pub fn load_points(dir: &Path, exp: &ExperimentRecord) -> anyhow::Result<Vec<Point>> {
    exp.runs
        .iter()
        .map(|name| read_json::<RunRecord>(&dir.join(name).join("run.json")).map(Point::of))
        .collect()
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
    /// Cores the server may use (the embedded server has one worker).
    pub server_cores: usize,
}

/// Warnings every experiment section starts with: failed runs, an early stop.
pub fn failure_blocks(exp: &ExperimentRecord) -> Vec<Block> {
    let mut blocks: Vec<Block> = exp
        .failures
        .iter()
        .map(|f| Block::Warning(format!("A run failed: {f}")))
        .collect();
    if !exp.complete && exp.failures.is_empty() {
        blocks.push(Block::Warning(
            "The experiment was stopped before its last run: what is shown is what was measured."
                .into(),
        ));
    }
    blocks
}

/// Renders the report for the lab directory `dir`; returns the path of `index.html` and the
/// terminal summary.
pub fn render(dir: &Path) -> anyhow::Result<(PathBuf, String)> {
    let lab: LabRecord = read_json(&dir.join("lab.json"))
        .with_context(|| format!("{} is not a webscope lab directory", dir.display()))?;
    let mut setup = vec![Block::Text(format!(
        "Target: {}. Machine: {}. Placement: {}. Command: {}.",
        lab.target, lab.machine, lab.placement, lab.command
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
        server_cores: 1,
    };
    for name in &lab.experiments {
        let exp_dir = dir.join(name);
        let exp: ExperimentRecord = read_json(&exp_dir.join("experiment.json"))?;
        let experiment = super::experiment(&exp.name)
            .with_context(|| format!("{}: unknown experiment {:?}", dir.display(), exp.name))?;
        (experiment.render)(&exp_dir, &exp, &mut out)?;
    }
    for (name, content) in &out.csv {
        std::fs::write(dir.join(name), content)
            .with_context(|| format!("cannot write {}", dir.join(name).display()))?;
    }
    let page = Page {
        title: "webscope lab report".into(),
        subtitle: format!("webscope {} — {}", lab.version, lab.target),
        banners: Vec::new(),
        sections: out.sections,
    };
    let index = dir.join("index.html");
    std::fs::write(&index, page.to_html())
        .with_context(|| format!("cannot write {}", index.display()))?;
    let text = serde_json::to_string_pretty(&Value::Object(out.json))? + "\n";
    std::fs::write(dir.join("report.json"), text)?;
    Ok((index, out.summary))
}

/// A run's point with only what the tests of the renderers look at.
#[cfg(test)]
pub fn test_point(x: f64, rps: f64, gen: f64, cores: Option<f64>) -> Point {
    Point {
        x,
        rps,
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
        },
    }
}
