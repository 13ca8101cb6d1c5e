//! What `webscope compare` reads: a lab run directory, a lab report (its clients sweep, point
//! by point), a `webscope load --json` file, or a directory of them (the repeated runs of one
//! configuration), each turned into groups of repeated runs.

use std::path::Path;

use anyhow::{bail, Context};
use webscope_load::Report;

use webscope_record::health::{Health, Judge};
use webscope_record::{read_json, ExperimentRecord, LabRecord, RunRecord};

/// One run: its load report, judged, its server CPU per request and its interval log.
pub struct Run {
    /// The load report.
    pub load: Report,
    /// Goodput and errors, judged as the lab that made it judged (or by default).
    pub health: Health,
    /// Server CPU microseconds per request, when the server's CPU was measured.
    pub cpu_us_per_request: Option<f64>,
    /// The intervals of its HdrHistogram log (all requests), when there is one.
    pub intervals: Vec<webscope_load::LoggedInterval>,
    /// Its directory, for a lab run.
    pub dir: Option<std::path::PathBuf>,
}

/// A side of the comparison: named groups of repeated runs (one group, "run", for a single
/// run or load result; one per client count for a lab report).
pub type Side = Vec<(String, Vec<Run>)>;

fn judged(load: Report, judge: &Judge) -> anyhow::Result<(Report, Health)> {
    let health = judge.health(&load)?;
    Ok((load, health))
}

fn intervals(hlog: &Path) -> anyhow::Result<Vec<webscope_load::LoggedInterval>> {
    if !hlog.exists() {
        return Ok(Vec::new());
    }
    webscope_load::read_intervals(hlog, None)
        .with_context(|| format!("cannot read the interval log {}", hlog.display()))
}

/// A lab run directory (`run.json`, `load.hlog`), judged by `judge`.
pub fn lab_run(dir: &Path, judge: &Judge) -> anyhow::Result<Run> {
    let record: RunRecord = read_json(&dir.join("run.json"))?;
    let cpu_us_per_request = record.server_cpu_us_per_request();
    let (load, health) = judged(record.load, judge)?;
    Ok(Run {
        load,
        health,
        cpu_us_per_request,
        intervals: intervals(&dir.join("load.hlog"))?,
        dir: Some(dir.to_path_buf()),
    })
}

/// Reads one side from `path`.
pub fn side(path: &Path) -> anyhow::Result<Side> {
    if path.join("lab.json").exists() {
        let lab: LabRecord = read_json(&path.join("lab.json"))?;
        let dir = path.join("clients");
        let exp: ExperimentRecord = read_json(&dir.join("experiment.json")).with_context(|| {
            format!(
                "{}: a lab report without a clients sweep to compare",
                path.display()
            )
        })?;
        let mut groups: Side = Vec::new();
        for name in &exp.runs {
            let record: RunRecord = read_json(&dir.join(name).join("run.json"))?;
            let scope = format!(
                "{} client{}",
                record.x,
                if record.x == 1.0 { "" } else { "s" }
            );
            let run = lab_run(&dir.join(name), &lab.judge)?;
            match groups.iter_mut().find(|g| g.0 == scope) {
                Some(g) => g.1.push(run),
                None => groups.push((scope, vec![run])),
            }
        }
        return Ok(groups);
    }
    if path.join("run.json").exists() {
        return Ok(vec![(
            "run".into(),
            vec![lab_run(path, &Judge::default())?],
        )]);
    }
    if path.is_file() {
        return Ok(vec![("run".into(), vec![load_result(path)?])]);
    }
    if path.is_dir() {
        // A directory of load --json results: the repeated runs of one configuration.
        let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(path)
            .with_context(|| format!("cannot read {}", path.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        files.sort();
        if !files.is_empty() {
            let runs = files
                .iter()
                .map(|f| load_result(f))
                .collect::<anyhow::Result<Vec<Run>>>()?;
            return Ok(vec![("run".into(), runs)]);
        }
    }
    bail!(
        "{}: not a lab report, a lab run directory, a load --json file or a directory of them (give one of those)",
        path.display()
    )
}

/// A `webscope load --json` file, with the `.hlog` of the same name if there is one.
fn load_result(path: &Path) -> anyhow::Result<Run> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let not_load = || format!("{} is not a webscope load --json result", path.display());
    let value: serde_json::Value = serde_json::from_str(&text).with_context(not_load)?;
    // Every field of a report has a default: a JSON without the one field every load report
    // has is some other file.
    if value.get("status_codes").is_none() {
        bail!("{} (no status_codes)", not_load());
    }
    let load: Report = serde_json::from_value(value).with_context(not_load)?;
    let (load, health) = judged(load, &Judge::default())?;
    Ok(Run {
        load,
        health,
        cpu_us_per_request: None,
        intervals: intervals(&path.with_extension("hlog"))?,
        dir: None,
    })
}
