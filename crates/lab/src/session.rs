//! One `webscope lab`, from options to report, as a list of steps:
//!
//! ```text
//!   Options ─→ check ─→ file set ─→ placement ─→ target ─→ preflight ─→ lab.json
//!           ─→ for each experiment: runner::run ─→ <out>/<name>/…  (lab.json after each)
//! ```
//!
//! Not for: what each step does (`setup`), how an experiment's runs are taken (`runner`), nor
//! the report (the pages crate draws it from `out` once this returns).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;

use crate::progress::Progress;
use crate::runner::Ctx;
use crate::{setup, Experiment, Options};
use webscope_record::{write_json, LabRecord};

/// Runs the lab into `options.out`; its report is drawn from there afterwards.
pub fn run(options: &Options, interrupt: &AtomicBool) -> anyhow::Result<()> {
    let (chosen, expect) = setup::check(options)?;
    crate::measure::set_no_kernel(options.no_kernel);
    let fileset = setup::fileset(options, interrupt)?;
    let mut warnings = Vec::new();
    let placement = setup::placement(options, &mut warnings);
    let exe = std::env::current_exe().context("cannot find the webscope executable")?;
    let secure = setup::secure(options)?;
    let mut target = setup::target(
        options,
        &exe,
        &fileset,
        placement.server_cpu,
        secure.as_ref(),
        &mut warnings,
    )?;
    // Before anything is written: a dead or misconfigured target is one line and exit 1.
    let preflight = setup::preflight(options, &target, &fileset, &expect)?;
    let preflight = format!("{preflight} {}", setup::warm_page_cache(&target, &fileset));
    setup::prepare_out(&options.out)?;
    let (server_cpu, load_cpu) = (placement.server_cpu, placement.load_cpu);
    let mut lab = setup::lab_record(
        options,
        &target,
        secure.as_ref(),
        placement,
        warnings,
        preflight,
    );
    if let Some(cpu) = load_cpu {
        webscope_sys::cpus::set_affinity(&[cpu]).context("cannot pin the load generator")?;
    }
    write_json(&options.out.join("lab.json"), &lab)?;
    let runs: usize = chosen.iter().map(|e| (e.runs)(options)).sum();
    let bar = Progress::new(
        setup::bar(runs as u64, options.quiet),
        options.live.as_ref(),
        &options.judge,
    )?;
    let ctx = Ctx {
        options,
        fileset: &fileset,
        exe: &exe,
        server_cpu,
        target: &target,
        secure: secure.as_ref(),
        duration: run_length(options),
        interrupt,
        bar: &bar,
    };
    take(&chosen, &ctx, &mut lab)?;
    bar.finish_and_clear();
    lab.interrupted |= interrupt.load(Ordering::Relaxed);
    write_json(&options.out.join("lab.json"), &lab)?;
    target.stop();
    Ok(())
}

/// `--duration`, else 15 s (3 s with `--quick`).
fn run_length(options: &Options) -> Duration {
    options.duration.unwrap_or(if options.quick {
        Duration::from_secs(3)
    } else {
        Duration::from_secs(15)
    })
}

/// Runs the `chosen` experiments in order, each into its folder under `--out`, `lab.json`
/// rewritten after each; stops at Ctrl-C.
fn take(chosen: &[&Experiment], ctx: &Ctx<'_>, lab: &mut LabRecord) -> anyhow::Result<()> {
    let out: &Path = &ctx.options.out;
    for experiment in chosen {
        if ctx.interrupt.load(Ordering::Relaxed) {
            break;
        }
        ctx.bar.set_prefix(experiment.name);
        if experiment.needs_embedded && ctx.options.target.is_some() {
            lab.warnings.push(format!(
                "The {} experiment needs the embedded server (it starts servers of its own): not run against --target.",
                experiment.name
            ));
            continue;
        }
        let record = (experiment.run)(&out.join(experiment.name), ctx)?;
        lab.experiments.push(experiment.name.into());
        // An experiment cut short by a failure says so in its record; only Ctrl-C makes the
        // lab "interrupted".
        if !record.complete && ctx.interrupt.load(Ordering::Relaxed) {
            lab.interrupted = true;
        }
        write_json(&out.join("lab.json"), lab)?;
    }
    Ok(())
}
