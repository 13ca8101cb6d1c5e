//! The `clients` experiment (Yates et al. Figures 1 and 4; Mughal's tables): closed-loop
//! clients 1, 2, 5, 10 ... on the file set, each client a connection per request (HTTP/1.0
//! style, as WebStone's), one run per client count. Its run (one client count on the lab's
//! target) is also the model experiment's and each of saturation's doubling steps.

use std::marker::PhantomData;
use std::path::Path;

use webscope_load::{Config, Mode, Target as LoadTarget};

use crate::measure::measure;
use crate::runner::{Ctx, Points, Run, Sweep};
use crate::Options;
use webscope_record::RunRecord;

/// The default sweep.
pub const CLIENTS: [usize; 9] = [1, 2, 5, 10, 15, 20, 30, 45, 60];
/// The sweep of `--quick`.
pub const QUICK_CLIENTS: [usize; 5] = [1, 2, 5, 10, 20];

/// An experiment that is a sweep of client counts on the lab's target: this one, and the
/// model experiment at its own counts.
pub trait Counts {
    /// The experiment's name, as `--experiment` takes it.
    const NAME: &'static str;
    /// The client counts, in order.
    fn counts(options: &Options) -> Vec<usize>;
}

/// The experiment: `--clients`, or the sweep above.
pub struct Clients;

impl Counts for Clients {
    const NAME: &'static str = "clients";

    fn counts(options: &Options) -> Vec<usize> {
        options.clients.clone().unwrap_or_else(|| {
            if options.quick {
                QUICK_CLIENTS.to_vec()
            } else {
                CLIENTS.to_vec()
            }
        })
    }
}

/// The sweep of the experiment `C`'s client counts, one run each.
pub struct ClientSweep<C>(PhantomData<C>);

impl<C: Counts> Sweep for ClientSweep<C> {
    const NAME: &'static str = C::NAME;
    const FACTOR: &'static str = "clients";
    type Point = usize;

    fn points(options: &Options) -> Points<usize> {
        Points::Fixed(C::counts(options))
    }

    fn start(_: &Ctx<'_>) -> anyhow::Result<Self> {
        Ok(ClientSweep(PhantomData))
    }

    fn name(&self, clients: &usize) -> String {
        run_name(*clients)
    }

    fn label(&self, run: &Run<'_, usize>) -> String {
        label(*run.point)
    }

    fn measure(&mut self, run: &Run<'_, usize>, ctx: &Ctx<'_>) -> anyhow::Result<RunRecord> {
        ctx.bar.set_message(label(*run.point));
        one_run(run.dir, *run.point, ctx)
    }
}

/// A client count's folder name.
pub fn run_name(clients: usize) -> String {
    format!("clients-{clients:03}")
}

/// A client count as the bar and failure lines say it.
pub fn label(clients: usize) -> String {
    format!("{clients} clients")
}

/// One run of `clients` closed-loop clients on the file set against the lab's target, a
/// connection per request unless `--keep-alive`.
pub fn one_run(run_dir: &Path, clients: usize, ctx: &Ctx<'_>) -> anyhow::Result<RunRecord> {
    // HTTP/2 and HTTP/3 keep their connections (`measure::speak`), whatever the flag says.
    let close = !ctx.options.keep_alive && !ctx.target.http2 && !ctx.target.http3;
    let mut config = Config::new(LoadTarget::fileset(ctx.fileset, &ctx.target.base_url)?);
    config.connections = clients;
    config.threads = 1;
    config.duration = ctx.duration;
    config.mode = if close { Mode::Close } else { Mode::KeepAlive };
    let label = label(clients);
    let measured = measure(run_dir, config, ctx.target, ctx.interrupt, ctx.bar, &label)?;
    Ok(RunRecord::new(
        clients as f64,
        format!(
            "closed loop, {}, {clients} client{}",
            if close {
                "a connection per request"
            } else {
                "keep-alive"
            },
            if clients == 1 { "" } else { "s" }
        ),
        measured,
    ))
}
