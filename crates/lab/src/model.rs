//! The `model` experiment (Mughal §3): a client sweep of its own, from which the renderer
//! takes service demands (D = U / X), solves the closed queueing network they make by exact
//! MVA for the measured machine and for 2× and 4× the server's CPUs, fits the Universal
//! Scalability Law, and sets both against what was measured.

use std::path::Path;

use super::clients::{sweep, Plan};
use super::record::ExperimentRecord;
use super::{Ctx, Options};

/// Client counts of the sweep: doubling, so that the curves are sampled evenly on the way to
/// saturation and beyond.
pub const CLIENTS: [usize; 7] = [1, 2, 4, 8, 16, 32, 64];
/// The sweep of `--quick`.
pub const QUICK_CLIENTS: [usize; 5] = [1, 2, 4, 8, 16];

fn counts(options: &Options) -> &'static [usize] {
    if options.quick {
        &QUICK_CLIENTS
    } else {
        &CLIENTS
    }
}

/// Runs planned.
pub fn runs(options: &Options) -> usize {
    counts(options).len() * options.repeat
}

/// Runs the sweep into `dir` on the lab's target (a connection per request unless
/// `--keep-alive`, as the clients experiment).
pub fn run(dir: &Path, ctx: &Ctx<'_>) -> anyhow::Result<ExperimentRecord> {
    let plan = Plan {
        clients: counts(ctx.options).to_vec(),
        duration: ctx.duration,
        close: !ctx.options.keep_alive,
        fileset: ctx.fileset,
    };
    sweep(dir, "model", &plan, ctx)
}
