//! The `ab` experiment as the runner takes it: the candidate started (or found), the rounds'
//! order drawn, each trial warmed up and measured with the machine watched, and the looks
//! that decide when to stop; then, when `--threshold` asks for the capacity, the two
//! searches in lockstep ([`super::searches`]).

use std::collections::VecDeque;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use webscope_load::{Config, Mode, Pacing, Target as LoadTarget};
use webscope_monitor::disturbance::{Limits, Watched};

mod duet;

use super::searches::Searches;
use super::{Settings, Side, Step, CLIENTS, MOST_ROUNDS, TRIAL};
use crate::capacity::quiet;
use crate::measure::measure;
use crate::runner::{Ctx, Next, OnFailure, Points, Run, SoFar, Sweep};
use crate::step::warm_up;
use crate::target::{Find, Target};
use crate::Options;
use webscope_record::{Measured, RunRecord};

/// One trial: a round's run of one side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trial {
    /// The round, from 1.
    pub round: usize,
    /// The server it loads.
    pub side: Side,
}

/// The experiment's state between trials.
pub struct AbTrials {
    candidate: Target,
    thresholds: Vec<webscope_compare::Threshold>,
    /// The trials are over (or none were asked), and the searches' turn has come.
    trials_over: bool,
    /// The two capacity searches, when `--threshold` asks for the capacity.
    searches: Option<Searches>,
    settings: Settings,
    order: super::Order,
    /// The next trials of the round under way.
    queue: VecDeque<Trial>,
    /// The round under way (taken again under a new number when disturbed).
    round: usize,
    started: Instant,
    /// It has stopped.
    stopped: bool,
    /// The experiment's folder (the runs' parent), once a run has been measured.
    dir: Option<std::path::PathBuf>,
}

/// The capacity part's probes at most: two searches', and the check's pairs.
const SEARCH_PROBES: usize =
    2 * crate::capacity::experiment::MOST_PROBES + 2 * super::check::MOST_TRIED;

/// The file a trial's disturbance goes to, when the machine was disturbed beyond the limits.
const DISTURBED: &str = "disturbed.txt";

/// Why the trial in `run_dir` was disturbed, if it was.
pub fn disturbed(run_dir: &Path) -> Option<String> {
    std::fs::read_to_string(run_dir.join(DISTURBED)).ok()
}

impl AbTrials {
    /// A's and B's watched processes, each with the CPUs it is pinned to.
    fn watched(&self, ctx: &Ctx<'_>, side: Side) -> Watched {
        let mut w = quiet::watched(ctx);
        if side == Side::B {
            w.server = webscope_monitor::procs::tree(&self.candidate.pids)
                .iter()
                .map(|p| p.pid)
                .collect();
        }
        w
    }

    /// Queues the next round's two trials, in a random order balanced over pairs of rounds.
    fn next_round(&mut self) -> Trial {
        self.round += 1;
        let [first, second] = self.order.sides();
        if self.settings.duet {
            // One run of both at once; its side is whose generator starts first.
            return Trial {
                round: self.round,
                side: first,
            };
        }
        for side in [first, second] {
            self.queue.push_back(Trial {
                round: self.round,
                side,
            });
        }
        self.queue.pop_front().unwrap_or(Trial {
            round: self.round,
            side: first,
        })
    }
}

impl Sweep for AbTrials {
    const NAME: &'static str = "ab";
    const FACTOR: &'static str = "round";
    type Point = Step;

    fn points(options: &Options) -> Points<Step> {
        let limits = super::thresholds(&options.ab).ok();
        let trials = limits.as_ref().is_none_or(|l| !l.trials.is_empty());
        let searches = limits.as_ref().is_some_and(|l| l.capacity.is_some());
        Points::Adaptive {
            most: usize::from(trials) * 2 * MOST_ROUNDS + usize::from(searches) * SEARCH_PROBES,
        }
    }

    fn rounds(_: &Options) -> usize {
        1
    }

    /// The capacity searches follow the rounds' stop: the bar keeps their room.
    fn after_stop(&self) -> usize {
        self.searches.as_ref().map_or(0, |_| SEARCH_PROBES)
    }

    fn start(ctx: &Ctx<'_>) -> anyhow::Result<AbTrials> {
        let settings = ctx.options.ab.clone();
        let limits = super::thresholds(&settings)?;
        let candidate = match (&settings.candidate, ctx.target.admin.is_some()) {
            (Some(url), _) => {
                let same = url.trim_end_matches('/') == ctx.target.base_url.trim_end_matches('/');
                anyhow::ensure!(
                    !same,
                    "--candidate {url} is the --target itself: give B another server (or --candidate-serve-args to start one)"
                );
                let mut b = Target::external(url, Find::Port, Vec::new())?;
                b.tls = ctx.target.tls.clone();
                crate::preflight::check(&b.base_url, ctx.fileset, &ctx.options.judge.expect()?, &b.tls, b.http3)
                    .with_context(|| format!("the candidate {url} failed its preflight"))?;
                b
            }
            (None, true) => Target::embedded(
                ctx.exe,
                ctx.fileset,
                1,
                ctx.server_cpu,
                &settings.candidate_serve_args,
            )
            .with_context(|| {
                format!(
                    "cannot start the candidate, webscope serve {} (webscope serve --help lists its flags)",
                    settings.candidate_serve_args.join(" ")
                )
            })?,
            (None, false) => anyhow::bail!(
                "lab --experiment ab needs B: --candidate URL beside --target, or --candidate-serve-args '...' for a second embedded server"
            ),
        };
        let plan = crate::results::ab::AbPlan {
            thresholds: settings.thresholds.clone(),
            max_time_s: settings.max_time.as_secs_f64(),
            candidate: settings.candidate.clone().unwrap_or_else(|| {
                format!("webscope serve {}", settings.candidate_serve_args.join(" "))
            }),
            duet: settings.duet,
        };
        webscope_record::write_json(
            &ctx.options
                .out
                .join(<AbTrials as Sweep>::NAME)
                .join("plan.json"),
            &plan,
        )?;
        Ok(AbTrials {
            candidate,
            trials_over: limits.trials.is_empty(),
            searches: limits
                .capacity
                .clone()
                .map(|threshold| Searches::new(ctx.options, threshold)),
            thresholds: limits.trials,
            settings,
            order: super::Order::new(),
            queue: VecDeque::new(),
            round: 0,
            started: Instant::now(),
            stopped: false,
            dir: None,
        })
    }

    fn next(&mut self, so_far: &SoFar<'_, Step>, ctx: &Ctx<'_>) -> Next<Step> {
        if !self.trials_over {
            match self.next_trial(so_far, ctx) {
                Next::Run(trial) => return Next::Run(Step::Trial(trial)),
                Next::Stop(why) => {
                    self.trials_over = true;
                    return Next::Stop(why);
                }
                _ => self.trials_over = true,
            }
        }
        match &mut self.searches {
            Some(searches) => searches.next(so_far.runs, ctx),
            None => Next::Done,
        }
    }

    fn name(&self, step: &Step) -> String {
        match step {
            // A duet's run is named for A; its B is written beside it.
            Step::Trial(t) if self.settings.duet => super::run_name(t.round, Side::A),
            Step::Trial(t) => super::run_name(t.round, t.side),
            Step::Probe(p) => p.name(),
        }
    }

    fn label(&self, run: &Run<'_, Step>) -> String {
        match run.point {
            Step::Trial(t) => trial_label(t),
            Step::Probe(p) => p.label(),
        }
    }

    fn measure(&mut self, run: &Run<'_, Step>, ctx: &Ctx<'_>) -> anyhow::Result<RunRecord> {
        match run.point {
            Step::Trial(t) => self.measure_trial(*t, run.dir, ctx),
            Step::Probe(p) => {
                let target = match p.side {
                    Side::A => ctx.target,
                    Side::B => &self.candidate,
                };
                match &mut self.searches {
                    Some(searches) => searches.measure(p, run.name, run.dir, ctx, target),
                    None => anyhow::bail!("a capacity probe, but no search was asked for"),
                }
            }
        }
    }

    fn on_failure(&self, _: &Step) -> OnFailure {
        OnFailure::Stop
    }

    fn finish(&mut self, ctx: &Ctx<'_>) -> Vec<String> {
        let placed = placement(ctx, &self.candidate);
        self.candidate.stop();
        placed.into_iter().collect()
    }
}

/// How the bar and failure lines say a trial: "round 3 B".
fn trial_label(t: &Trial) -> String {
    format!("round {} {}", t.round, t.side.upper())
}

impl AbTrials {
    /// The next trial, or why the trials stop.
    fn next_trial(&mut self, so_far: &SoFar<'_, Step>, ctx: &Ctx<'_>) -> Next<Trial> {
        if self.stopped {
            return Next::Done;
        }
        if let Some(next) = self.queue.pop_front() {
            return Next::Run(next);
        }
        if self.round > 0 {
            let dir = self.dir.clone().unwrap_or_default();
            let names: Vec<String> = so_far.runs.iter().map(|d| d.name.clone()).collect();
            let decided = match super::rounds(&dir, &names, &ctx.options.judge) {
                Ok((kept, _)) => {
                    let n = kept.len();
                    let lookable = super::LOOK_AT.contains(&n);
                    let decided = lookable && {
                        let (c, _) = super::judge(kept);
                        super::all_decided(&c, &self.thresholds)
                    };
                    super::stop(n, decided, self.started, self.settings.max_time)
                }
                Err(e) => Some(format!("the rounds cannot be read back: {e:#}")),
            };
            if let Some(why) = decided {
                self.stopped = true;
                return Next::Stop(why);
            }
        }
        Next::Run(self.next_round())
    }

    /// The load of a trial against `target`: closed loop with `--clients`, or open loop at
    /// `--rate`.
    fn trial_config(&self, ctx: &Ctx<'_>, target: &Target) -> anyhow::Result<Config> {
        let mut config = Config::new(LoadTarget::fileset(ctx.fileset, &target.base_url)?);
        config.connections = ctx
            .options
            .clients
            .as_ref()
            .and_then(|c| c.first().copied())
            .unwrap_or(CLIENTS);
        config.threads = 1;
        config.duration = ctx.options.duration.unwrap_or(TRIAL);
        config.mode = Mode::KeepAlive;
        config.timeout = Duration::from_secs(10);
        if let Some(rate) = self.settings.rate {
            // As a capacity probe offers its rate: a few connections to start with, more
            // opened when all are busy.
            config.connections = ((rate / 1000.0).ceil() as usize).clamp(1, 64);
            config.pacing = Pacing::Open {
                rate,
                arrivals: ctx.options.capacity.arrivals,
                max_connections: crate::measure::MAX_CONNECTIONS,
            };
        }
        crate::measure::speak(&mut config, target);
        Ok(config)
    }

    /// A trial's run record: `side`'s run of round `round`, in words.
    fn record(&self, side: Side, round: usize, measured: Measured) -> RunRecord {
        let how = match self.settings.rate {
            Some(rate) => format!("open loop at {rate:.0} req/s, keep-alive"),
            None => format!(
                "{} closed-loop keep-alive clients",
                measured.load.connections
            ),
        };
        let duet = if self.settings.duet {
            ", at once with the other side"
        } else {
            ""
        };
        RunRecord::new(
            round as f64,
            format!(
                "{}: round {round}, {how}{duet}, SPECweb96 mix",
                side.upper()
            ),
            measured,
        )
    }

    /// Measures trial `t` into `run_dir`.
    fn measure_trial(
        &mut self,
        t: Trial,
        run_dir: &Path,
        ctx: &Ctx<'_>,
    ) -> anyhow::Result<RunRecord> {
        if self.settings.duet {
            return self.measure_duet(t, run_dir, ctx);
        }
        self.dir = run_dir.parent().map(Path::to_path_buf);
        let side = t.side;
        let target = match side {
            Side::A => ctx.target,
            Side::B => &self.candidate,
        };
        let label = trial_label(&t);
        let config = self.trial_config(ctx, target)?;

        let watched = self.watched(ctx, side);
        warm_up(&config, ctx, &label)?;
        let sampler = quiet::start(&watched);
        let measured = measure(run_dir, config, target, ctx.interrupt, ctx.bar, &label)?;
        if let Some(why) = sampler
            .and_then(|s| s.stop().ok())
            .and_then(|d| d.beyond(&Limits::default()))
        {
            std::fs::write(run_dir.join(DISTURBED), &why)
                .with_context(|| format!("cannot write {}", run_dir.display()))?;
            // The other trial of this round is not taken: the round is taken again.
            self.queue.clear();
            ctx.bar.set_message(format!(
                "{label}: disturbed ({why}); the round is taken again"
            ));
            quiet::wait(&watched);
        }
        Ok(self.record(side, t.round, measured))
    }
}

/// Whether A and B ran on the same CPUs; a line for the page when they did not (or it could
/// not be told).
fn placement(ctx: &Ctx<'_>, candidate: &Target) -> Option<String> {
    let cpus = |pids: &[u32]| -> Option<Vec<usize>> {
        pids.first().and_then(|&pid| quiet::pinned_cpus(pid))
    };
    let (a, b) = (cpus(&ctx.target.pids), cpus(&candidate.pids));
    match (&a, &b) {
        (Some(a), Some(b)) if a == b => None,
        _ => Some(format!(
            "A and B were not pinned to the same CPUs (A: {}, B: {}): each ran where the scheduler put it, so a difference may be the CPUs' as much as the servers' (pin both, e.g. taskset -c 0 for each, or compare two embedded servers)",
            a.map_or("any".into(), |c| format!("{c:?}")),
            b.map_or("any".into(), |c| format!("{c:?}"))
        )),
    }
}
