//! The `filesize` experiment (Yates et al. Figures 2, 3, 5, 6 and Table 3): WebStone workload A
//! scaled A/4 .. A*4 at a fixed number of clients, a connection per request as WebStone's
//! clients: throughput and bandwidth against the mean file size, the TCP states the closes
//! leave behind, the server's phases per workload, and the fixed cost of a connection read
//! off the latency-vs-size line.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use anyhow::Context;
use webscope_load::{Config, Mode, Target as LoadTarget};
use webscope_workload::{Manifest, Spec, WriteOptions};

use crate::measure::measure_with;
use crate::runner::{Ctx, Points, Run, Sweep};
use crate::target::Target;
use crate::Options;
use webscope_record::RunRecord;

/// WebStone A's size scales (Yates et al. Table 2).
pub const SCALES: [f64; 5] = [0.25, 0.5, 1.0, 2.0, 4.0];
/// The scales of `--quick`.
pub const QUICK_SCALES: [f64; 3] = [0.25, 1.0, 4.0];

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

/// The experiment: its sets, and the server of its own rooted at them.
pub struct Filesize {
    root: PathBuf,
    target: Target,
    clients: usize,
}

impl Sweep for Filesize {
    const NAME: &'static str = "filesize";
    const FACTOR: &'static str = "mean file size (KB)";
    const NEEDS_EMBEDDED: bool = true;
    type Point = f64;

    fn points(options: &Options) -> Points<f64> {
        Points::Fixed(scales(options))
    }

    fn start(ctx: &Ctx<'_>) -> anyhow::Result<Filesize> {
        let root = sets(&ctx.options.work, &scales(ctx.options), ctx.interrupt)?;
        let target = Target::embedded_over(ctx.exe, &root, 1, ctx.server_cpu, &[], ctx.secure)?;
        Ok(Filesize {
            root,
            target,
            clients: if ctx.options.quick { 10 } else { 30 },
        })
    }

    fn name(&self, scale: &f64) -> String {
        set_name(*scale)
    }

    fn label(&self, run: &Run<'_, f64>) -> String {
        label(*run.point)
    }

    fn measure(&mut self, run: &Run<'_, f64>, ctx: &Ctx<'_>) -> anyhow::Result<RunRecord> {
        let scale = *run.point;
        let name = set_name(scale);
        let set = self.root.join(&name);
        let manifest = Manifest::load(&set)?;
        let base = format!("{}{name}/", self.target.base_url);
        let mut config = Config::new(LoadTarget::fileset(&set, &base)?);
        config.connections = self.clients;
        config.threads = 1;
        config.duration = ctx.duration;
        config.mode = Mode::Close;
        let label = label(scale);
        // The kernel-time breakdown of Yates et al. (Figure 3) per workload.
        let measured = measure_with(
            run.dir,
            config,
            &self.target,
            ctx.interrupt,
            ctx.bar,
            &label,
            ctx.options.profile,
        )?;
        Ok(RunRecord::new(
            manifest.mean_response_bytes / 1024.0,
            format!(
                "{label}, closed loop, a connection per request, {} clients",
                self.clients
            ),
            measured,
        ))
    }
}

fn scales(options: &Options) -> Vec<f64> {
    if options.quick {
        QUICK_SCALES.to_vec()
    } else {
        SCALES.to_vec()
    }
}

fn label(scale: f64) -> String {
    format!("WebStone A x{scale}")
}
