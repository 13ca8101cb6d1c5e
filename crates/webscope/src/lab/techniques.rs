//! The `techniques` experiment (Hu, Nanda & Yang, Figure 10): the cumulative ablation of the
//! server's techniques. The first step serves with every technique off (`--baseline`); each
//! next step turns one more on, in the paper's order, until all are on. Each step is its own
//! embedded server on the SPECweb96 set with host-name logging on (what the DNS cache saves)
//! and the access log written to a real file (what the asynchronous log saves), loaded by
//! keep-alive clients: the figure that matters is the server's CPU time per request.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::Context;
use webscope_load::{Config, Mode, Target as LoadTarget};
use webscope_server::TECHNIQUES as NAMES;

use super::clients::measure;
use super::record::{write_json, ExperimentRecord, RunRecord};
use super::target::Target;
use super::{Ctx, Options};

/// Keep-alive clients of every step: enough to keep one server core busy.
const CLIENTS: usize = 20;

/// Runs planned: the baseline and one per technique.
pub fn runs(options: &Options) -> usize {
    (NAMES.len() + 1) * options.repeat
}

/// The techniques on at step `step` (0: none; `NAMES.len()`: all).
pub fn enabled(step: usize) -> &'static [&'static str] {
    &NAMES[..step.min(NAMES.len())]
}

/// The step's label: "baseline" or "+name".
pub fn label(step: usize) -> String {
    match step {
        0 => "baseline".into(),
        n => format!("+{}", NAMES[n - 1]),
    }
}

/// `serve` flags for step `step`: the techniques not yet enabled are disabled.
fn flags(step: usize, log: &Path) -> Vec<String> {
    let off: Vec<&str> = NAMES[step.min(NAMES.len())..].to_vec();
    let mut flags = vec![
        "--hostname-lookups".to_string(),
        "--access-log".to_string(),
        log.display().to_string(),
    ];
    if !off.is_empty() {
        flags.push("--disable".into());
        flags.push(off.join(","));
    }
    flags
}

/// Runs the steps into `dir`; stops early on interrupt.
pub fn run(dir: &Path, ctx: &Ctx<'_>) -> anyhow::Result<ExperimentRecord> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut record = ExperimentRecord {
        name: "techniques".into(),
        factor: "techniques enabled (cumulative)".into(),
        runs: Vec::new(),
        complete: false,
        failures: Vec::new(),
    };
    let rounds = ctx.options.repeat.max(1);
    let points = (1..=rounds).flat_map(|round| (0..=NAMES.len()).map(move |s| (round, s)));
    for (round, step) in points {
        if ctx.interrupt.load(Ordering::Relaxed) {
            break;
        }
        let name = super::round_name(&format!("step-{step}"), round);
        let run_dir = dir.join(&name);
        std::fs::create_dir_all(&run_dir)?;
        match one_run(&run_dir, ctx, step) {
            Ok(run) => {
                write_json(&run_dir.join("run.json"), &run)?;
                record.runs.push(name);
            }
            Err(err) => {
                record.failures.push(format!("{}: {err:#}", label(step)));
                break;
            }
        }
        ctx.bar.inc(1);
        write_json(&dir.join("experiment.json"), &record)?;
    }
    record.complete = record.runs.len() == runs(ctx.options);
    write_json(&dir.join("experiment.json"), &record)?;
    Ok(record)
}

fn one_run(run_dir: &Path, ctx: &Ctx<'_>, step: usize) -> anyhow::Result<RunRecord> {
    // The log is written for real, then removed: its cost is measured, its bytes not kept.
    let log = run_dir.join("access.log");
    let mut target = Target::embedded(ctx.exe, ctx.fileset, 1, ctx.server_cpu, &flags(step, &log))?;
    let mut config = Config::new(LoadTarget::fileset(ctx.fileset, &target.base_url)?);
    config.connections = CLIENTS;
    config.threads = 1;
    config.duration = ctx.duration;
    config.mode = Mode::KeepAlive;
    config.timeout = Duration::from_secs(10);
    let measured = measure(
        run_dir,
        config,
        &target,
        ctx.interrupt,
        ctx.bar,
        &label(step),
    );
    target.stop();
    let _ = std::fs::remove_file(&log);
    let measured = measured?;
    let on = enabled(step);
    Ok(RunRecord::new(
        step as f64,
        format!(
            "{}: techniques on: {}; SPECweb96 mix, {CLIENTS} keep-alive clients, host-name logging, access log to a file",
            label(step),
            if on.is_empty() { "none".to_string() } else { on.join(", ") }
        ),
        measured,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_enable_one_more_technique_each() {
        assert_eq!(label(0), "baseline");
        assert_eq!(label(1), "+dns-cache");
        assert!(enabled(0).is_empty());
        assert_eq!(enabled(NAMES.len()), NAMES);
        let log = Path::new("/tmp/x.log");
        let first = flags(0, log);
        assert_eq!(
            first.last().map(String::as_str),
            Some(NAMES.join(",").as_str())
        );
        let second = flags(1, log);
        assert!(!second.last().unwrap().contains("dns-cache"));
        assert!(!flags(NAMES.len(), log).contains(&"--disable".to_string()));
    }
}
