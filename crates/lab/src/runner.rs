//! The one way an experiment runs. An experiment describes itself as a [`Sweep`]: its name and
//! factor, its points (a fixed list, or chosen one after another from what was measured so
//! far), and how one point is measured. The runner ([`run`]) owns everything else: the
//! experiment's folder and one folder per run (named by [`round_name`]), `run.json` or a
//! failure line, `experiment.json` rewritten after each run, Ctrl-C, the bar and the live page,
//! the rounds of `--repeat` (taken round the whole sweep), and why an adaptive sequence ended.
//!
//! ```text
//!   for each round of --repeat:
//!     next point ── Fixed: the list, in order
//!                └─ Adaptive: Sweep::next(runs so far) ─→ Run(p) | Stop(why) | Done
//!     Ctrl-C? ─→ cut
//!     <dir>/<round_name(name(p))>/ ─→ Sweep::measure ─→ run.json   (or a failure line)
//!     bar +1, experiment.json rewritten
//! ```
//!
//! Not for: what a run measures (the experiments, over `measure`), the lab's set-up (`session`)
//! nor the pages (`webscope-pages`, which reads only the files written here).

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{bail, Context};

use crate::progress::Progress;
use crate::target::{Secure, Target};
use crate::Options;
use webscope_record::{write_json, ExperimentRecord, RunRecord};

/// What every experiment may use while it runs.
pub struct Ctx<'a> {
    /// What the lab was asked to do.
    pub options: &'a Options,
    /// The SPECweb96 set (or `--fileset`).
    pub fileset: &'a Path,
    /// webscope's own executable, to start embedded servers with.
    pub exe: &'a Path,
    /// The CPU embedded servers are pinned to, if any.
    pub server_cpu: Option<usize>,
    /// The server measured by experiments that take any target (the embedded one by default).
    pub target: &'a Target,
    /// `--tls`/`--http2`: how the embedded servers the experiments start are spoken to.
    pub secure: Option<&'a Secure>,
    /// Length of each run.
    pub duration: Duration,
    /// Raised by Ctrl-C: the current run stops and keeps what it measured.
    pub interrupt: &'a AtomicBool,
    /// The progress bar over all runs (each run sets its live line as the message), and the
    /// live page with `--live`.
    pub bar: &'a Progress<'a>,
}

/// An experiment's points.
pub enum Points<P> {
    /// The same points in every round, in this order.
    Fixed(Vec<P>),
    /// Chosen one after another by [`Sweep::next`] from the runs so far. `most` is what the
    /// bar counts for one round's search; when the search stops sooner, the bar jumps over
    /// the rest.
    Adaptive {
        /// Runs the bar counts for one round's search.
        most: usize,
    },
}

/// What an adaptive experiment does next.
pub enum Next<P> {
    /// Measure this point.
    Run(P),
    /// The search is over, and why ("the mean response time stopped doubling at ..."): kept in
    /// the record, and the bar jumps over the points the search did not need. [`Sweep::next`]
    /// is asked again afterwards, for points that follow a search (saturation's two-class run);
    /// a second `Stop` in the round ends it.
    Stop(String),
    /// Nothing more to run in this round.
    Done,
}

/// What a failed run means for the rest of the sequence.
pub enum OnFailure {
    /// The sequence ends here (a failing target fails every later point too).
    Stop,
    /// The failure is noted, the bar moves on, and so does the sequence (each point has its
    /// own server, so one failing says nothing of the next).
    Continue,
}

/// One run about to be measured.
pub struct Run<'a, P> {
    /// The point to measure.
    pub point: &'a P,
    /// The round of `--repeat`, from 1.
    pub round: usize,
    /// Its folder's name ([`round_name`] of [`Sweep::name`]).
    pub name: &'a str,
    /// Its folder, made and empty: the load's histogram and the monitor's files go there.
    pub dir: &'a Path,
}

/// One measured run, as an adaptive experiment sees it when it chooses the next point.
pub struct Done<P> {
    /// The point that was measured.
    pub point: P,
    /// Its folder's name.
    pub name: String,
    /// What was written as its `run.json`.
    pub run: RunRecord,
}

/// The runs of the current round so far, for [`Sweep::next`].
pub struct SoFar<'a, P> {
    /// The round of `--repeat`, from 1.
    pub round: usize,
    /// This round's measured runs, in order.
    pub runs: &'a [Done<P>],
    /// This round's points whose run failed (with [`OnFailure::Continue`]), in order.
    pub failed: &'a [P],
    /// Why this round's search stopped, once it has.
    pub stopped: Option<&'a str>,
}

/// An experiment, as the runner takes it: what it is called, its points, how one is measured.
/// The rest (folders, records, interrupts, progress, repeats) is [`run`]'s.
pub trait Sweep: Sized {
    /// Its name: `--experiment`'s word, its folder, its record's `name`.
    const NAME: &'static str;
    /// The factor its runs vary, with unit: its record's `factor`.
    const FACTOR: &'static str;
    /// It starts servers of its own (the embedded webscope), so `--target` cannot stand in.
    const NEEDS_EMBEDDED: bool = false;
    /// Whether why its search stopped is written in `experiment.json` (saturation's page
    /// derives it from the runs, and its record stays as it always was).
    const RECORD_STOP: bool = true;
    /// One point of the sweep: a client count, a step, a row, an offered rate ...
    type Point: Clone;

    /// Its points, from the options alone (the bar counts them before anything is set up).
    fn points(options: &Options) -> Points<Self::Point>;

    /// Rounds of `--repeat`.
    fn rounds(options: &Options) -> usize {
        options.repeat.max(1)
    }

    /// Runs planned at most, for the bar.
    fn planned(options: &Options) -> usize {
        let per_round = match Self::points(options) {
            Points::Fixed(points) => points.len(),
            Points::Adaptive { most } => most,
        };
        per_round * Self::rounds(options)
    }

    /// Sets up what its runs share (file sets, certificates, a server of its own), once its
    /// folder exists; an error here ends the lab.
    fn start(ctx: &Ctx<'_>) -> anyhow::Result<Self>;

    /// [`Points::Adaptive`] only: the next point, from this round's runs so far.
    fn next(&mut self, so_far: &SoFar<'_, Self::Point>, ctx: &Ctx<'_>) -> Next<Self::Point> {
        let _ = (so_far, ctx);
        Next::Done
    }

    /// The folder name of `point` in the first round (later rounds add `-r2`, `-r3` ...).
    fn name(&self, point: &Self::Point) -> String;

    /// How a failure line names the run ("10 clients", "+epoll", ...).
    fn label(&self, run: &Run<'_, Self::Point>) -> String;

    /// Measures one run (its folder is made); the runner writes what it returns as `run.json`.
    fn measure(&mut self, run: &Run<'_, Self::Point>, ctx: &Ctx<'_>) -> anyhow::Result<RunRecord>;

    /// [`Points::Adaptive`] only: runs the bar keeps room for when the search stops, because
    /// more follow it (the A/B experiment's capacity searches after its rounds). The bar jumps
    /// over the rest of the round at its end.
    fn after_stop(&self) -> usize {
        0
    }

    /// What a failure of `point` means for the rest.
    fn on_failure(&self, point: &Self::Point) -> OnFailure {
        let _ = point;
        OnFailure::Stop
    }

    /// After the last run: what it does not do in this set-up (e.g. a run that needs the
    /// embedded server, against `--target`), said on its page; not a failure.
    fn finish(&mut self, ctx: &Ctx<'_>) -> Vec<String> {
        let _ = ctx;
        Vec::new()
    }
}

/// The name of a run in round `round` of `--repeat`: the first round keeps the plain name, so
/// a lab without repeats writes what it always wrote.
pub fn round_name(name: &str, round: usize) -> String {
    if round <= 1 {
        name.to_string()
    } else {
        format!("{name}-r{round}")
    }
}

/// Runs the experiment `S` into `dir`, one sub-folder per run; stops early on Ctrl-C. Returns
/// its record, also written as `dir/experiment.json` after each run.
pub fn run<S: Sweep>(dir: &Path, ctx: &Ctx<'_>) -> anyhow::Result<ExperimentRecord> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut taking = Taking {
        sweep: S::start(ctx)?,
        dir,
        ctx,
        record: ExperimentRecord::new(S::NAME, S::FACTOR),
        cut: false,
        taken: HashSet::new(),
    };
    let points = S::points(ctx.options);
    for round in 1..=S::rounds(ctx.options) {
        taking.round(round, &points)?;
        if taking.cut {
            break;
        }
    }
    let skipped = taking.sweep.finish(ctx);
    let mut record = taking.record;
    record.skipped.extend(skipped);
    // Complete: every point it meant to run was run, and none failed.
    record.complete = !taking.cut && record.failures.is_empty();
    if !S::RECORD_STOP {
        record.stopped.clear();
    }
    write_json(&dir.join("experiment.json"), &record)?;
    Ok(record)
}

/// An experiment being taken: its description, its record so far.
struct Taking<'a, S: Sweep> {
    sweep: S,
    dir: &'a Path,
    ctx: &'a Ctx<'a>,
    record: ExperimentRecord,
    /// Ended by Ctrl-C or a failure before its points were done.
    cut: bool,
    /// The run folders made so far: a point named twice would overwrite a run.
    taken: HashSet<String>,
}

impl<S: Sweep> Taking<'_, S> {
    /// One round of the points.
    fn round(&mut self, round: usize, points: &Points<S::Point>) -> anyhow::Result<()> {
        let mut fixed = match points {
            Points::Fixed(list) => Some(list.iter()),
            Points::Adaptive { .. } => None,
        };
        let mut runs: Vec<Done<S::Point>> = Vec::new();
        let mut failed: Vec<S::Point> = Vec::new();
        let mut stopped: Option<String> = None;
        // Runs the bar was moved over without being run.
        let mut jumped = 0;
        loop {
            let next = match fixed.as_mut() {
                Some(list) => list.next().cloned().map_or(Next::Done, Next::Run),
                None => {
                    let so_far = SoFar {
                        round,
                        runs: &runs,
                        failed: &failed,
                        stopped: stopped.as_deref(),
                    };
                    self.sweep.next(&so_far, self.ctx)
                }
            };
            let point = match next {
                Next::Run(point) => point,
                Next::Stop(why) if stopped.is_none() => {
                    let moved = runs.len() + failed.len() + jumped;
                    jumped += self.jump(points, moved, self.sweep.after_stop());
                    self.record.stopped.push(why.clone());
                    stopped = Some(why);
                    continue;
                }
                Next::Stop(_) | Next::Done => break,
            };
            if self.ctx.interrupt.load(Ordering::Relaxed) {
                self.cut = true;
                break;
            }
            match self.one(&point, round)? {
                Ok(done) => runs.push(done),
                Err(OnFailure::Stop) => {
                    self.cut = true;
                    break;
                }
                Err(OnFailure::Continue) => failed.push(point),
            }
            self.ctx.bar.inc(1);
            write_json(&self.dir.join("experiment.json"), &self.record)?;
        }
        self.jump(points, runs.len() + failed.len() + jumped, 0);
        Ok(())
    }

    /// Measures `point` into its folder: its run.json and its name in the record, or a
    /// failure line and what the failure means.
    fn one(
        &mut self,
        point: &S::Point,
        round: usize,
    ) -> anyhow::Result<Result<Done<S::Point>, OnFailure>> {
        let name = round_name(&self.sweep.name(point), round);
        if !self.taken.insert(name.clone()) {
            // A repeated point needs a name of its own (e.g. its probe's number in it).
            bail!("{}: two runs named {name}", S::NAME);
        }
        let dir = self.dir.join(&name);
        std::fs::create_dir_all(&dir)?;
        let run = Run {
            point,
            round,
            name: &name,
            dir: &dir,
        };
        match self.sweep.measure(&run, self.ctx) {
            Ok(measured) => {
                write_json(&dir.join("run.json"), &measured)?;
                self.record.runs.push(name.clone());
                Ok(Ok(Done {
                    point: point.clone(),
                    name,
                    run: measured,
                }))
            }
            Err(err) => {
                let label = self.sweep.label(&run);
                self.record.failures.push(format!("{label}: {err:#}"));
                Ok(Err(self.sweep.on_failure(point)))
            }
        }
    }

    /// An adaptive round's search is over after the bar moved `moved` runs: it jumps over the
    /// points the search did not need, but for `leave` still to come, so that the time left
    /// stays honest. Returns how far it jumped.
    fn jump(&self, points: &Points<S::Point>, moved: usize, leave: usize) -> usize {
        let Points::Adaptive { most } = points else {
            return 0;
        };
        let over = most.saturating_sub(moved).saturating_sub(leave);
        self.ctx.bar.inc(over as u64);
        over
    }
}

#[cfg(test)]
mod tests;
