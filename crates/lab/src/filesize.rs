//! The `filesize` experiment (Yates et al. Figures 2, 3, 5, 6 and Table 3): WebStone workload A
//! scaled A/4 .. A*4 at a fixed number of clients, a connection per request as WebStone's
//! clients: throughput and bandwidth against the mean file size, the TCP states the closes
//! leave behind, the server's phases per workload, and the fixed cost of a connection read
//! off the latency-vs-size line.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use webscope_load::{Config, Mode, Target as LoadTarget};
use webscope_workload::{Manifest, Spec, WriteOptions};

use super::clients::measure_with;
use super::record::{write_json, ExperimentRecord, RunRecord};
use super::target::Target;
use super::{Ctx, Options};

/// WebStone A's size scales (Yates et al. Table 2).
pub const SCALES: [f64; 5] = [0.25, 0.5, 1.0, 2.0, 4.0];
/// The scales of `--quick`.
pub const QUICK_SCALES: [f64; 3] = [0.25, 1.0, 4.0];

/// What to run.
pub struct Plan<'a> {
    pub scales: Vec<f64>,
    pub clients: usize,
    pub duration: Duration,
    pub work: &'a Path,
}

fn set_name(scale: f64) -> String {
    format!("scale-{scale}")
}

/// The WebStone sets under `work/webstone-a/`, made once.
fn sets(work: &Path, scales: &[f64], interrupt: &AtomicBool) -> anyhow::Result<PathBuf> {
    let root = work.join("webstone-a");
    for &scale in scales {
        let dir = root.join(set_name(scale));
        if Manifest::load(&dir).is_ok() {
            continue;
        }
        let manifest = Spec::WebStoneA { scale }.plan(1)?;
        webscope_workload::write(
            &manifest,
            &dir,
            &WriteOptions { force: true },
            interrupt,
            &mut |_, _| {},
        )
        .with_context(|| format!("cannot make WebStone A x{scale} under {}", root.display()))?;
    }
    Ok(root)
}

fn scales(options: &Options) -> Vec<f64> {
    if options.quick {
        QUICK_SCALES.to_vec()
    } else {
        SCALES.to_vec()
    }
}

/// Runs planned.
pub fn runs(options: &Options) -> usize {
    scales(options).len() * options.repeat
}

/// Runs the sweep into `dir` on a server of its own (rooted at the WebStone sets).
pub fn run(dir: &Path, ctx: &Ctx<'_>) -> anyhow::Result<ExperimentRecord> {
    let plan = &Plan {
        scales: scales(ctx.options),
        clients: if ctx.options.quick { 10 } else { 30 },
        duration: ctx.duration,
        work: &ctx.options.work,
    };
    let (interrupt, bar) = (ctx.interrupt, ctx.bar);
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut record = ExperimentRecord {
        name: "filesize".into(),
        factor: "mean file size (KB)".into(),
        runs: Vec::new(),
        complete: false,
        failures: Vec::new(),
    };
    let root = sets(plan.work, &plan.scales, interrupt)?;
    let target = Target::embedded_over(ctx.exe, &root, 1, ctx.server_cpu, &[], ctx.secure)?;
    let rounds = ctx.options.repeat.max(1);
    let points = (1..=rounds).flat_map(|round| plan.scales.iter().map(move |&s| (round, s)));
    for (round, scale) in points {
        if interrupt.load(Ordering::Relaxed) {
            break;
        }
        let name = set_name(scale);
        let run_name = super::round_name(&name, round);
        let run_dir = dir.join(&run_name);
        std::fs::create_dir_all(&run_dir)?;
        let set = root.join(&name);
        let result = (|| -> anyhow::Result<RunRecord> {
            let manifest = Manifest::load(&set)?;
            let base = format!("{}{name}/", target.base_url);
            let mut config = Config::new(LoadTarget::fileset(&set, &base)?);
            config.connections = plan.clients;
            config.threads = 1;
            config.duration = plan.duration;
            config.mode = Mode::Close;
            let label = format!("WebStone A x{scale}");
            // The kernel-time breakdown of Yates et al. (Figure 3) per workload.
            let measured = measure_with(
                &run_dir,
                config,
                &target,
                interrupt,
                bar,
                &label,
                ctx.options.profile,
            )?;
            Ok(RunRecord::new(
                manifest.mean_response_bytes / 1024.0,
                format!(
                    "{label}, closed loop, a connection per request, {} clients",
                    plan.clients
                ),
                measured,
            ))
        })();
        match result {
            Ok(run) => {
                write_json(&run_dir.join("run.json"), &run)?;
                record.runs.push(run_name);
            }
            Err(err) => {
                record
                    .failures
                    .push(format!("WebStone A x{scale}: {err:#}"));
                break;
            }
        }
        bar.inc(1);
        write_json(&dir.join("experiment.json"), &record)?;
    }
    record.complete = record.runs.len() == plan.scales.len() * rounds;
    write_json(&dir.join("experiment.json"), &record)?;
    Ok(record)
}
