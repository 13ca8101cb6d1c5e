//! The `saturation` experiment (Chiarini & Couch): closed-loop clients doubling 1, 2, 4 ...
//! on the lab's target until the mean response time stops doubling with them (or errors
//! start, or a cap), each step's response-time histogram kept; then a two-class run (a ~22 KB
//! and a ~1.1 MB file, as in the paper) on a server of its own with every request's
//! completion time and duration written out, for the density map.
//!
//! The rule, from the paper: below saturation the mean response time hardly moves as clients
//! double; once the server is saturated it doubles with them (Little's law: N = X R with X
//! flat); when it then stops doubling, the server has gone past saturation into erratic
//! behaviour (refusals, drops), and figures beyond are not reliable. So: keep doubling while
//! no step has doubled yet or the last step doubled; stop at the first step that does not
//! double after one that did, at the first errors, or at the cap.

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use webscope_load::{Config, Group, Mode, Target as LoadTarget};

use crate::clients;
use crate::measure::measure;
use crate::runner::{Ctx, Next, OnFailure, Points, Run, SoFar, Sweep};
use crate::target::Target;
use crate::Options;
use webscope_record::RunRecord;

/// A step "doubles" the mean response time when it grows by this factor or more as clients
/// double (2 less the noise of short runs).
pub const DOUBLING: f64 = 1.7;

/// Most clients of the default sweep.
pub const CAP: usize = 256;
/// Most clients of `--quick`'s sweep.
pub const QUICK_CAP: usize = 32;

/// The density run's two files (Chiarini's 22 KB and 1.1 MB) and their clients.
pub const SMALL_BYTES: usize = 22 * 1024;
/// The large file of the density run, bytes (Chiarini's 1.1 MB).
pub const LARGE_BYTES: usize = 1_100 * 1024;
const SMALL_CLIENTS: usize = 8;
const LARGE_CLIENTS: usize = 2;

/// What the rule says after the steps so far: `None` to go on, or why to stop.
/// `steps` are (clients, mean response time, errors), in order.
pub fn stop_reason(steps: &[(usize, f64, f64)], cap: usize) -> Option<String> {
    let &(clients, _, errors) = steps.last()?;
    if errors > 0.0 {
        return Some(format!("errors started at {clients} clients"));
    }
    let ratios = ratios(steps);
    let doubled_before = ratios[..ratios.len().saturating_sub(1)]
        .iter()
        .any(|r| *r >= DOUBLING);
    if let Some(&last) = ratios.last() {
        if doubled_before && last < DOUBLING {
            return Some(format!(
                "the mean response time stopped doubling at {clients} clients (×{last:.2})"
            ));
        }
    }
    (clients * 2 > cap).then(|| format!("the cap of {cap} clients"))
}

/// Each step's mean response time over the previous step's.
pub fn ratios(steps: &[(usize, f64, f64)]) -> Vec<f64> {
    steps
        .windows(2)
        .map(|w| if w[0].1 > 0.0 { w[1].1 / w[0].1 } else { 0.0 })
        .collect()
}

/// The knee: the last load before the mean response time began to double with the clients
/// (there throughput stopped growing). None if it never doubled.
pub fn knee(steps: &[(usize, f64, f64)]) -> Option<usize> {
    let first = ratios(steps).iter().position(|r| *r >= DOUBLING)?;
    Some(steps[first].0)
}

/// One point: a doubling step, or the two-class run after the rule stopped them.
#[derive(Clone)]
pub enum Step {
    /// A doubling step with this many closed-loop clients.
    Clients(usize),
    /// The two-class run: small and large files at once, every request sampled.
    TwoClass,
}

/// The experiment: doubling steps on the lab's target until [`stop_reason`] says stop, then
/// the two-class run on a server of its own.
pub struct Saturation {
    cap: usize,
    /// The two-class run has been asked for.
    two_class: bool,
    /// Which statuses count as served (`--expect-status`), for the steps' errors.
    expect: webscope_load::Expect,
}

impl Saturation {
    fn cap(options: &Options) -> usize {
        if options.quick {
            QUICK_CAP
        } else {
            CAP
        }
    }
}

impl Sweep for Saturation {
    const NAME: &'static str = "saturation";
    const FACTOR: &'static str = "clients";
    /// Its page reads why the doubling stopped from the runs ([`stop_reason`] again).
    const RECORD_STOP: bool = false;
    type Point = Step;

    /// The doubling steps up to the cap.
    fn points(options: &Options) -> Points<Step> {
        Points::Adaptive {
            most: (Self::cap(options) as f64).log2() as usize + 1,
        }
    }

    /// It stops where its rule says, so it runs once.
    fn rounds(_: &Options) -> usize {
        1
    }

    /// The doubling steps up to the cap, and the two-class run.
    fn planned(options: &Options) -> usize {
        (Self::cap(options) as f64).log2() as usize + 2
    }

    fn start(ctx: &Ctx<'_>) -> anyhow::Result<Saturation> {
        Ok(Saturation {
            cap: Self::cap(ctx.options),
            two_class: false,
            expect: ctx.options.judge.expect()?,
        })
    }

    fn next(&mut self, so_far: &SoFar<'_, Step>, ctx: &Ctx<'_>) -> Next<Step> {
        if so_far.stopped.is_some() {
            if self.two_class || ctx.options.target.is_some() {
                return Next::Done;
            }
            self.two_class = true;
            return Next::Run(Step::TwoClass);
        }
        let steps: Vec<(usize, f64, f64)> = so_far
            .runs
            .iter()
            .filter_map(|done| match done.point {
                Step::Clients(clients) => Some((
                    clients,
                    done.run.load.total.latency_us.mean,
                    done.run.load.outcomes().errors(&self.expect) as f64,
                )),
                Step::TwoClass => None,
            })
            .collect();
        match (stop_reason(&steps, self.cap), steps.last()) {
            (Some(why), _) => Next::Stop(why),
            (None, Some(&(clients, _, _))) => Next::Run(Step::Clients(clients * 2)),
            (None, None) => Next::Run(Step::Clients(1)),
        }
    }

    fn name(&self, step: &Step) -> String {
        match step {
            Step::Clients(clients) => clients::run_name(*clients),
            Step::TwoClass => "two-class".into(),
        }
    }

    fn label(&self, run: &Run<'_, Step>) -> String {
        match run.point {
            Step::Clients(clients) => clients::label(*clients),
            Step::TwoClass => "the two-class run".into(),
        }
    }

    fn measure(&mut self, run: &Run<'_, Step>, ctx: &Ctx<'_>) -> anyhow::Result<RunRecord> {
        match run.point {
            Step::Clients(clients) => clients::one_run(run.dir, *clients, ctx),
            Step::TwoClass => density_run(run.dir, ctx),
        }
    }

    /// A failed step ends the doubling (and the two-class run with it); the two-class run is
    /// the last anyway.
    fn on_failure(&self, step: &Step) -> OnFailure {
        match step {
            Step::Clients(_) => OnFailure::Stop,
            Step::TwoClass => OnFailure::Continue,
        }
    }

    fn finish(&mut self, ctx: &Ctx<'_>) -> Vec<String> {
        if ctx.options.target.is_some() {
            vec!["the two-class run needs the embedded server (it serves its own two files): not run against --target".into()]
        } else {
            Vec::new()
        }
    }
}

/// The two-class run into `run_dir`: its own server on a directory holding the two files, a
/// client group per file, every request written to `samples.csv`.
fn density_run(run_dir: &Path, ctx: &Ctx<'_>) -> anyhow::Result<RunRecord> {
    let root = ctx.options.work.join("chiarini-two-class");
    for (name, size) in [("small.bin", SMALL_BYTES), ("large.bin", LARGE_BYTES)] {
        let path = root.join(name);
        if std::fs::metadata(&path).map(|m| m.len() as usize).ok() != Some(size) {
            std::fs::create_dir_all(&root)
                .with_context(|| format!("cannot create {}", root.display()))?;
            webscope_sys::write_file(&path, &vec![b'x'; size])
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
    }
    let mut target = Target::embedded(ctx.exe, &root, 1, ctx.server_cpu, &[])?;
    let groups = [
        Group {
            name: "22KB".into(),
            connections: SMALL_CLIENTS,
            url: "/small.bin".into(),
        },
        Group {
            name: "1.1MB".into(),
            connections: LARGE_CLIENTS,
            url: "/large.bin".into(),
        },
    ];
    let mut config = Config::new(LoadTarget::groups(Some(&target.base_url), &groups)?);
    config.connections = SMALL_CLIENTS + LARGE_CLIENTS;
    config.threads = 1;
    config.duration = ctx.duration;
    config.mode = if ctx.options.keep_alive {
        Mode::KeepAlive
    } else {
        Mode::Close
    };
    config.timeout = Duration::from_secs(10);
    config.samples = Some(run_dir.join("samples.csv"));
    let label = "two classes, 22 KB and 1.1 MB";
    let measured = measure(run_dir, config, &target, ctx.interrupt, ctx.bar, label);
    target.stop();
    Ok(RunRecord::new(
        (SMALL_CLIENTS + LARGE_CLIENTS) as f64,
        format!(
            "{label}: {SMALL_CLIENTS} clients on the 22 KB file and {LARGE_CLIENTS} on the 1.1 MB one, closed loop"
        ),
        measured?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_waits_for_doubling_then_stops_when_it_ends() {
        // Flat below saturation: go on.
        let flat = [(1, 1.0, 0.0), (2, 1.05, 0.0), (4, 1.1, 0.0)];
        assert_eq!(stop_reason(&flat, 256), None);
        assert_eq!(knee(&flat), None);
        // Doubling from 4 clients on: still going.
        let doubling = [
            (1, 1.0, 0.0),
            (2, 1.0, 0.0),
            (4, 1.1, 0.0),
            (8, 2.2, 0.0),
            (16, 4.3, 0.0),
        ];
        assert_eq!(stop_reason(&doubling, 256), None);
        assert_eq!(knee(&doubling), Some(4));
        // Then only ×1.3: stop there.
        let mut ended = doubling.to_vec();
        ended.push((32, 5.6, 0.0));
        let why = stop_reason(&ended, 256).unwrap();
        assert!(why.contains("stopped doubling at 32 clients"), "{why}");
        // Errors stop at once; so does the cap.
        assert!(stop_reason(&[(1, 1.0, 0.0), (2, 1.0, 3.0)], 256)
            .unwrap()
            .contains("errors started at 2"));
        assert!(stop_reason(&flat, 4).unwrap().contains("cap of 4"));
        assert_eq!(Saturation::planned(&crate::tests_options(false)), 10);
    }
}
