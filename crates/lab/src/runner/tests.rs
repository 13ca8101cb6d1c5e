//! The runner with made-up experiments (no server, no load): names, rounds, failures, Ctrl-C,
//! adaptive points and why they stopped, the bar, `experiment.json`.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use indicatif::ProgressBar;

use super::*;
use crate::target::Find;
use webscope_record::health::Judge;
use webscope_record::{read_json, Measured, RunEnv};

fn measured(x: usize) -> RunRecord {
    let m = Measured {
        load: serde_json::from_value(serde_json::json!({ "requests": x })).unwrap(),
        server: None,
        os: None,
        server_os: Vec::new(),
        env: RunEnv::default(),
    };
    RunRecord::new(x as f64, format!("{x} made up"), m)
}

/// Fixed points 1, 2, 3; point 2 fails, and the sweep goes on after it if `CONTINUE`.
struct Listed<const CONTINUE: bool>;

impl<const CONTINUE: bool> Sweep for Listed<CONTINUE> {
    const NAME: &'static str = "listed";
    const FACTOR: &'static str = "n";
    type Point = usize;
    fn points(_: &Options) -> Points<usize> {
        Points::Fixed(vec![1, 2, 3])
    }
    fn start(_: &Ctx<'_>) -> anyhow::Result<Self> {
        Ok(Listed)
    }
    fn name(&self, n: &usize) -> String {
        format!("n-{n}")
    }
    fn label(&self, run: &Run<'_, usize>) -> String {
        format!("{} things", run.point)
    }
    fn measure(&mut self, run: &Run<'_, usize>, _: &Ctx<'_>) -> anyhow::Result<RunRecord> {
        anyhow::ensure!(*run.point != 2, "boom");
        Ok(measured(*run.point))
    }
    fn on_failure(&self, _: &usize) -> OnFailure {
        if CONTINUE {
            OnFailure::Continue
        } else {
            OnFailure::Stop
        }
    }
}

/// One point, and a part it does not do in this set-up.
struct Partial;

impl Sweep for Partial {
    const NAME: &'static str = "partial";
    const FACTOR: &'static str = "n";
    type Point = usize;
    fn points(_: &Options) -> Points<usize> {
        Points::Fixed(vec![1])
    }
    fn start(_: &Ctx<'_>) -> anyhow::Result<Self> {
        Ok(Partial)
    }
    fn name(&self, n: &usize) -> String {
        format!("n-{n}")
    }
    fn label(&self, run: &Run<'_, usize>) -> String {
        run.name.to_string()
    }
    fn measure(&mut self, run: &Run<'_, usize>, _: &Ctx<'_>) -> anyhow::Result<RunRecord> {
        Ok(measured(*run.point))
    }
    fn finish(&mut self, _: &Ctx<'_>) -> Vec<String> {
        vec!["the other part needs the embedded server".into()]
    }
}

#[test]
fn what_an_experiment_does_not_do_here_is_said_and_not_a_failure() {
    let (record, written, _, dir) = take::<Partial>(1, false);
    assert!(record.failures.is_empty(), "{:?}", record.failures);
    assert!(record.complete);
    assert_eq!(record.skipped, ["the other part needs the embedded server"]);
    assert_eq!(written.skipped, record.skipped);
    let _ = std::fs::remove_dir_all(dir);
}

/// Doubles from 1 until a run reaches 8 (at most 6 runs a round), then one run after the stop;
/// in the second round point 2 fails, and the doubling goes on past it.
struct Doubling {
    after: bool,
}

impl Sweep for Doubling {
    const NAME: &'static str = "doubling";
    const FACTOR: &'static str = "n";
    type Point = usize;
    fn points(_: &Options) -> Points<usize> {
        Points::Adaptive { most: 6 }
    }
    fn start(_: &Ctx<'_>) -> anyhow::Result<Self> {
        Ok(Doubling { after: false })
    }
    fn after_stop(&self) -> usize {
        1
    }
    fn next(&mut self, so_far: &SoFar<'_, usize>, _: &Ctx<'_>) -> Next<usize> {
        if so_far.stopped.is_some() {
            self.after = !self.after;
            return if self.after {
                Next::Run(100)
            } else {
                Next::Done
            };
        }
        let last_run = so_far.runs.last().map(|done| done.point);
        match last_run.max(so_far.failed.last().copied()) {
            None => Next::Run(1),
            Some(8) => Next::Stop(format!("reached 8 in round {}", so_far.round)),
            Some(last) => Next::Run(last * 2),
        }
    }
    fn name(&self, n: &usize) -> String {
        format!("n-{n}")
    }
    fn label(&self, run: &Run<'_, usize>) -> String {
        run.name.to_string()
    }
    fn measure(&mut self, run: &Run<'_, usize>, _: &Ctx<'_>) -> anyhow::Result<RunRecord> {
        anyhow::ensure!(run.name != "n-2-r2", "boom");
        Ok(measured(*run.point))
    }
    fn on_failure(&self, _: &usize) -> OnFailure {
        OnFailure::Continue
    }
}

/// Runs `S` in a fresh folder with `repeat` rounds; returns its record, the record on disk,
/// the bar's position and the folder.
fn take<S: Sweep>(
    repeat: usize,
    interrupted: bool,
) -> (ExperimentRecord, ExperimentRecord, u64, PathBuf) {
    let dir = std::env::temp_dir().join(format!(
        "webscope-runner-{}-{}-{repeat}-{interrupted}",
        S::NAME,
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let mut options = crate::tests_options(true);
    options.repeat = repeat;
    let target =
        Target::external("http://127.0.0.1:9/", Find::None, Vec::new()).expect("a target by URL");
    let bar = Progress::new(ProgressBar::hidden(), None, &Judge::default()).expect("a bar");
    let interrupt = AtomicBool::new(interrupted);
    let ctx = Ctx {
        options: &options,
        fileset: &dir,
        exe: &dir,
        server_cpu: None,
        target: &target,
        secure: None,
        duration: Duration::from_secs(1),
        interrupt: &interrupt,
        bar: &bar,
    };
    let record = run::<S>(&dir, &ctx).expect("the runner");
    let written = read_json(&dir.join("experiment.json")).expect("experiment.json");
    (record, written, bar.position(), dir)
}

#[test]
fn fixed_points_go_round_the_sweep_and_a_failure_stops_it_or_not() {
    let (record, written, bar, dir) = take::<Listed<false>>(2, false);
    assert_eq!(record.runs, ["n-1"]);
    assert_eq!(record.failures, ["2 things: boom"]);
    assert!(!record.complete && record.stopped.is_empty());
    assert_eq!(
        bar, 1,
        "a failure that stops the sweep does not move the bar"
    );
    assert_eq!(written.runs, record.runs);
    assert!(dir.join("n-1/run.json").exists() && !dir.join("n-2/run.json").exists());
    let _ = std::fs::remove_dir_all(dir);

    let (record, _, bar, dir) = take::<Listed<true>>(2, false);
    assert_eq!(record.runs, ["n-1", "n-3", "n-1-r2", "n-3-r2"]);
    assert_eq!(record.failures, ["2 things: boom", "2 things: boom"]);
    assert!(!record.complete);
    assert_eq!(bar, 6);
    let run: RunRecord = read_json(&dir.join("n-3-r2/run.json")).expect("run.json");
    assert_eq!(run.load_description, "3 made up");
    let _ = std::fs::remove_dir_all(dir);
    assert_eq!(Listed::<true>::planned(&crate::tests_options(true)), 3);
}

#[test]
fn adaptive_points_stop_with_a_reason_and_the_bar_jumps_over_the_rest() {
    let (record, written, bar, dir) = take::<Doubling>(2, false);
    let _ = std::fs::remove_dir_all(dir);
    assert_eq!(
        record.runs,
        ["n-1", "n-2", "n-4", "n-8", "n-100", "n-1-r2", "n-4-r2", "n-8-r2", "n-100-r2"]
    );
    assert_eq!(
        record.stopped,
        ["reached 8 in round 1", "reached 8 in round 2"]
    );
    assert_eq!(record.failures, ["n-2-r2: boom"]);
    assert!(!record.complete);
    assert_eq!(written.stopped, record.stopped);
    // Each round: 4 runs (a failed one moves the bar too), a jump at the stop that leaves
    // room for the run after it, that run: the bar ends each round at its 6, not beyond.
    assert_eq!(bar, 12);
    assert_eq!(Doubling::planned(&crate::tests_options(true)), 6);

    let (record, _, bar, dir) = take::<Doubling>(1, false);
    let _ = std::fs::remove_dir_all(dir);
    assert_eq!(record.runs, ["n-1", "n-2", "n-4", "n-8", "n-100"]);
    assert!(record.complete && record.failures.is_empty());
    assert_eq!(bar, 6);
}

#[test]
fn ctrl_c_takes_no_run_and_leaves_the_experiment_incomplete() {
    let (record, written, bar, dir) = take::<Doubling>(1, true);
    let _ = std::fs::remove_dir_all(dir);
    assert!(record.runs.is_empty() && !record.complete && !written.complete);
    assert_eq!(
        bar, 6,
        "an adaptive round cut short still jumps over its points"
    );
}
