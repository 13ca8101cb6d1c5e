//! The `clients` experiment (Yates et al. Figures 1 and 4; Mughal's tables): closed-loop
//! clients 1, 2, 5, 10 ... on the file set, each client a connection per request (HTTP/1.0
//! style, as WebStone's), one run per client count.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use webscope_load::{Config, Mode, Target as LoadTarget};

pub use super::measure::{measure, measure_with};
use super::record::{write_json, ExperimentRecord, RunRecord};
use super::target::Target;
use super::{Ctx, Options};

/// The default sweep.
pub const CLIENTS: [usize; 9] = [1, 2, 5, 10, 15, 20, 30, 45, 60];
/// The sweep of `--quick`.
pub const QUICK_CLIENTS: [usize; 5] = [1, 2, 5, 10, 20];

/// What to run.
pub struct Plan<'a> {
    pub clients: Vec<usize>,
    pub duration: Duration,
    pub close: bool,
    pub fileset: &'a Path,
}

fn client_counts(options: &Options) -> Vec<usize> {
    options.clients.clone().unwrap_or_else(|| {
        if options.quick {
            QUICK_CLIENTS.to_vec()
        } else {
            CLIENTS.to_vec()
        }
    })
}

/// Runs planned.
pub fn runs(options: &Options) -> usize {
    client_counts(options).len() * options.repeat
}

/// Runs the sweep into `dir` (one sub-directory per run) on the lab's target; stops early on
/// interrupt.
pub fn run(dir: &Path, ctx: &Ctx<'_>) -> anyhow::Result<ExperimentRecord> {
    let plan = Plan {
        clients: client_counts(ctx.options),
        duration: ctx.duration,
        close: !ctx.options.keep_alive,
        fileset: ctx.fileset,
    };
    sweep(dir, "clients", &plan, ctx)
}

/// Runs a sweep of client counts into `dir` as the experiment `name` (the clients experiment,
/// or another that needs a sweep of its own); stops early on interrupt.
pub fn sweep(
    dir: &Path,
    name: &str,
    plan: &Plan<'_>,
    ctx: &Ctx<'_>,
) -> anyhow::Result<ExperimentRecord> {
    let (target, interrupt, bar) = (ctx.target, ctx.interrupt, ctx.bar);
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut record = ExperimentRecord {
        name: name.into(),
        factor: "clients".into(),
        runs: Vec::new(),
        complete: false,
        failures: Vec::new(),
    };
    // Repeats go round the whole sweep, not point by point: a slow minute of the machine
    // then spreads over all points instead of bending one.
    let rounds = ctx.options.repeat.max(1);
    let points = (1..=rounds).flat_map(|round| plan.clients.iter().map(move |&c| (round, c)));
    for (round, clients) in points {
        if interrupt.load(Ordering::Relaxed) {
            break;
        }
        let name = super::round_name(&format!("clients-{clients:03}"), round);
        let run_dir = dir.join(&name);
        std::fs::create_dir_all(&run_dir)?;
        bar.set_message(format!("{clients} clients"));
        match one_run(&run_dir, clients, plan, target, interrupt, bar) {
            Ok(run) => {
                write_json(&run_dir.join("run.json"), &run)?;
                record.runs.push(name);
            }
            Err(err) => {
                record.failures.push(format!("{clients} clients: {err:#}"));
                break;
            }
        }
        bar.inc(1);
        write_json(&dir.join("experiment.json"), &record)?;
    }
    record.complete = record.runs.len() == plan.clients.len() * rounds;
    write_json(&dir.join("experiment.json"), &record)?;
    Ok(record)
}

/// One run of `clients` closed-loop clients on the file set, as the plan says.
pub fn one_run(
    run_dir: &Path,
    clients: usize,
    plan: &Plan<'_>,
    target: &Target,
    interrupt: &AtomicBool,
    bar: &super::progress::Progress,
) -> anyhow::Result<RunRecord> {
    let mut config = Config::new(LoadTarget::fileset(plan.fileset, &target.base_url)?);
    config.connections = clients;
    config.threads = 1;
    config.duration = plan.duration;
    config.mode = if plan.close {
        Mode::Close
    } else {
        Mode::KeepAlive
    };
    let label = format!("{clients} clients");
    let measured = measure(run_dir, config, target, interrupt, bar, &label)?;
    Ok(RunRecord::new(
        clients as f64,
        format!(
            "closed loop, {}, {clients} client{}",
            if plan.close {
                "a connection per request"
            } else {
                "keep-alive"
            },
            if clients == 1 { "" } else { "s" }
        ),
        measured,
    ))
}
