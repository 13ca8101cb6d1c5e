//! One probe of the capacity search: a short warm-up at the probe's rate, the open-loop run
//! at a fixed offered rate (measured as every lab run is), the objective's verdict
//! ([`crate::objective`]), then a cool-down before the next probe. What it judged is written
//! beside the run as `probe.json`, so that the page reads it back.
//!
//! Not for: choosing rates (`search`), judging a run (`objective`) nor the runner's
//! bookkeeping (`experiment`).

use std::path::Path;
use std::time::Duration;

use webscope_load::{Config, Target as LoadTarget};
use webscope_monitor::disturbance::Limits;

use super::cooldown;
use super::Settings;
use super::{kubernetes, segments};
use crate::measure::{self, measure, measure_by};
use crate::objective::needed_requests;
use crate::runner::Ctx;
use crate::step::{self, warmup_length, Judged, Level, Spec, MOST_LENGTH};
use webscope_load::slo::Slo;
use webscope_record::{write_json, RunRecord};

/// One point of the search: its place in the search (from 1) and its offered rate.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    /// Its place in the search, from 1.
    pub number: usize,
    /// The offered rate, req/s.
    pub rate: f64,
    /// How long it runs (its warm-up not counted): [`length`].
    pub length: Duration,
}

/// A probe's length at `rate`: the lab's `--duration`, or longer, as long as it takes the
/// rate to offer the requests the objective needs to be decided ([`needed_requests`]: 2 000
/// for a p99, 3 838 for errors<=0.1 %), times `factor` (2^k after k undecided probes at the
/// rate), at most [`MOST_LENGTH`] (or the `--duration` asked, when longer).
pub fn length(rate: f64, base: Duration, slo: &Slo, factor: u32) -> Duration {
    let needed = needed_requests(slo) as f64 / rate.max(1e-3);
    let wanted = base.as_secs_f64().max(needed) * f64::from(factor.max(1));
    Duration::from_secs_f64(wanted.min(MOST_LENGTH.max(base).as_secs_f64()))
}

impl Probe {
    /// Its folder: the number keeps repeated rates apart, the rate tells them at a glance.
    pub fn name(&self) -> String {
        format!("probe-{:02}-{:.0}rps", self.number, self.rate)
    }

    /// How the bar and failure lines say it.
    pub fn label(&self) -> String {
        format!(
            "probe {} at {:.0} req/s for {:.1} s",
            self.number,
            self.rate,
            self.length.as_secs_f64()
        )
    }
}

/// Runs `probe` into `run_dir`: warm-up, the measured run, its verdict, the cool-down
/// ([`crate::step::run`]). Returns its run record and what it judged (also written as
/// `probe.json`). `after_disturbed`: the probe before it ran on a disturbed machine, so the
/// machine is waited for first ([`super::quiet::wait`]).
pub fn run(
    probe: &Probe,
    run_dir: &Path,
    ctx: &Ctx<'_>,
    settings: &Settings,
    after_disturbed: bool,
) -> anyhow::Result<(RunRecord, Judged)> {
    let mut config = open_loop(probe.rate, ctx, settings)?;
    config.duration = probe.length;
    // Segments and pods are generator processes of their own that start within the probe
    // (pods on other hosts): this process's watch would count them as others. Not measured.
    let segmented = settings.segments > 1 || settings.kubernetes.is_some();
    // Room for the next probe's connections: at most the search's growth over this rate,
    // as long as this one ran.
    let next_connections = cooldown::connections(
        probe.rate * super::search::Plan::new(probe.rate).growth,
        (probe.length + warmup_length(ctx.duration)).as_secs_f64(),
        kept_alive(ctx),
    );
    let step = Spec {
        number: probe.number,
        level: Level::Rate(probe.rate),
        label: probe.label(),
        config,
        description: format!(
            "open loop, {} arrivals at {:.0} req/s, {}",
            arrivals_word(settings),
            probe.rate,
            if kept_alive(ctx) {
                "keep-alive"
            } else {
                "a connection per request"
            }
        ),
        // Pods start from a cluster the lab's machine may not even reach the target from:
        // their Job is the probe, without a warm-up of its own.
        warm_up: settings.kubernetes.is_none(),
        watch: !segmented,
        after_disturbed,
        limits: Limits::default(),
        slo: &settings.slo,
        next_connections,
    };
    let (record, judged) = step::run(step, run_dir, ctx, |config, label| {
        if !segmented {
            return measure(run_dir, config, ctx.target, ctx.interrupt, ctx.bar, label);
        }
        let plan = segments::SegmentPlan {
            segments: settings.segments,
            exe: ctx.exe,
            server_cpu: ctx.server_cpu,
        };
        let generate =
            |config: &Config, _: &mut dyn FnMut(&webscope_load::IntervalReport)| match &settings
                .kubernetes
            {
                Some(pods) => kubernetes::run(config, &plan, pods, ctx.interrupt),
                None => segments::run(config, &plan, ctx.interrupt),
            };
        measure_by(
            run_dir,
            config,
            ctx.target,
            ctx.interrupt,
            ctx.bar,
            label,
            false,
            generate,
        )
    })?;
    write_json(&run_dir.join("probe.json"), &judged)?;
    Ok((record, judged))
}

/// Whether the probe's connections are kept: `--keep-alive`, or a multiplexed protocol
/// (HTTP/2 and HTTP/3 have no connection per request).
fn kept_alive(ctx: &Ctx<'_>) -> bool {
    ctx.options.keep_alive || ctx.target.http2 || ctx.target.http3
}

/// The probe's load: open loop at `rate` on the file set, as [`measure::open_loop`] runs it;
/// over HTTP/2 and HTTP/3, a few connections of many streams.
fn open_loop(rate: f64, ctx: &Ctx<'_>, settings: &Settings) -> anyhow::Result<Config> {
    let target = LoadTarget::fileset(ctx.fileset, &ctx.target.base_url)?;
    // A few to start with; the open loop opens more when all are busy.
    let connections = ((rate / 1000.0).ceil() as usize).clamp(1, 64);
    let mut config = measure::open_loop(target, connections, rate, settings.arrivals, ctx);
    // HTTP/2's and HTTP/3's concurrency is their streams: a few connections of many
    // streams, as a browser holds them, stand where HTTP/1.1 opens up to MAX_CONNECTIONS.
    // HTTP/3's the same as HTTP/2's, so that the two searches offer the server the same
    // concurrency and differ in the protocol alone.
    if ctx.target.http2 {
        config.connections = MUX_CONNECTIONS;
        config.http2 = Some(MUX_STREAMS);
    } else if ctx.target.http3 {
        config.connections = MUX_CONNECTIONS;
        config.http3 = Some(MUX_STREAMS);
    }
    Ok(config)
}

/// An HTTP/2 or HTTP/3 probe's connections and streams on each (the concurrency its open
/// loop may use).
const MUX_CONNECTIONS: usize = 4;
const MUX_STREAMS: usize = 100;

fn arrivals_word(settings: &Settings) -> &'static str {
    match settings.arrivals {
        webscope_load::Arrivals::Constant => "constant",
        webscope_load::Arrivals::Poisson => "Poisson",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_low_rate_probe_lasts_long_enough_for_its_percentile() {
        let slo = Slo::parse("p99<=5ms").unwrap();
        let base = Duration::from_secs(3);
        // 2 000 requests for a p99: 3 s at 1 000 req/s is 3 000, enough; 100 req/s needs
        // 20 s; 10 req/s would need 200 s, and gets the most a probe runs.
        assert_eq!(length(1_000.0, base, &slo, 1), base);
        assert_eq!(length(100.0, base, &slo, 1), Duration::from_secs(20));
        assert_eq!(length(10.0, base, &slo, 1), MOST_LENGTH);
        // Undecided twice at a rate: four times as long.
        assert_eq!(length(1_000.0, base, &slo, 4), Duration::from_secs(12));
        // A --duration longer than the cap is the user's to ask.
        let long = Duration::from_secs(120);
        assert_eq!(length(10.0, long, &slo, 1), long);
    }

    #[test]
    fn probes_have_names_of_their_own_and_a_bounded_warm_up() {
        let a = Probe {
            number: 3,
            rate: 1500.0,
            length: Duration::from_secs(1),
        };
        let b = Probe {
            number: 4,
            rate: 1500.0,
            length: Duration::from_secs(1),
        };
        assert_ne!(a.name(), b.name());
        assert_eq!(a.name(), "probe-03-1500rps");
        assert_eq!(
            warmup_length(Duration::from_secs(1)),
            Duration::from_millis(200)
        );
        assert_eq!(
            warmup_length(Duration::from_secs(5)),
            Duration::from_secs(1)
        );
        assert_eq!(
            warmup_length(Duration::from_secs(60)),
            Duration::from_secs(2)
        );
    }
}
