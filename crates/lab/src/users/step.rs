//! One step of the users search: N users for a while (a warm-up first), measured as every
//! lab run is, judged on the objective (its page conditions on the page loads the run's
//! interval log carries under `page`), the machine's quiet checked as a capacity probe's, and
//! the step's figures for the model ([`super::model`]). What it judged is written beside the
//! run as `step.json`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use webscope_load::replay::ReplayRequest;
use webscope_load::slo::Slo;
use webscope_load::users::{Sessions, Users, BROWSER_CONNECTIONS};
use webscope_load::{Config, Mode, Target as LoadTarget};

use super::model::StepFigures;
use crate::measure::measure;
use crate::objective::needed_requests;
use crate::runner::Ctx;
use crate::step::{Judged, Level, MOST_LENGTH};

use webscope_monitor::disturbance::Limits;
use webscope_record::{read_json, write_json, RunRecord};

/// Sessions a `--workload` log gives the users to draw from.
pub const SESSION_SAMPLE: usize = 10_000;

/// One step: its place in the search (from 1), its users and how long it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// Its place in the search, from 1.
    pub number: usize,
    /// Closed-loop users it runs.
    pub users: usize,
    /// How long it runs, its warm-up not counted ([`length`]).
    pub length: Duration,
}

impl Step {
    /// Its folder: the number keeps repeated steps apart.
    pub fn name(&self) -> String {
        format!("step-{:02}-{}users", self.number, self.users)
    }

    /// How the progress bar and the console name it.
    pub fn label(&self) -> String {
        format!(
            "step {} with {} users for {:.1} s",
            self.number,
            self.users,
            self.length.as_secs_f64()
        )
    }
}

/// A step's length: the lab's `--duration`, or as long as `users` thinking the sessions'
/// mean think time take to make the page views the objective needs ([`needed_requests`]:
/// 400 for a p95), times `factor` (after undecided steps), at most [`MOST_LENGTH`].
pub fn length(users: f64, sessions: &Sessions, base: Duration, slo: &Slo, factor: u32) -> Duration {
    let think = match sessions {
        Sessions::Model(m) => m.think.mean(),
        Sessions::Logged(l) => l.mean_think_s(),
    };
    // At most N/Z page views a second (none of them taking any time).
    let views_per_s = users.max(1.0) / think.max(1e-3);
    let needed = needed_requests(slo) as f64 / views_per_s;
    let wanted = base.as_secs_f64().max(needed) * f64::from(factor.max(1));
    Duration::from_secs_f64(wanted.min(MOST_LENGTH.max(base).as_secs_f64()))
}

/// What every step is given besides its users.
pub struct Given<'a> {
    /// What the users go through: the model's sessions or a `--workload` log's.
    pub sessions: &'a Sessions,
    /// A log's distinct requests (None: the file set's mix).
    pub requests: Option<&'a [ReplayRequest]>,
    /// The generated page's path, put after the file set's (the model's `page`).
    pub page: Option<&'a str>,
    /// The step before ran on a disturbed machine: wait for a quiet one first.
    pub after_disturbed: bool,
}

/// What a step said, as `step.json` keeps it: the verdict as a capacity probe's and the
/// figures the model takes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepJudged {
    /// The verdict, as a capacity probe's.
    pub judged: Judged,
    /// The figures the model takes from the step.
    pub figures: StepFigures,
}

impl StepJudged {
    /// Reads a step's `step.json`. Steps written before #47 kept their users as a `rate`:
    /// read as the users they were.
    pub fn read(path: &Path) -> anyhow::Result<StepJudged> {
        let mut step: StepJudged = read_json(path)?;
        if let Level::Rate(users) = step.judged.level {
            step.judged.level = Level::Users(users.round().max(0.0) as usize);
        }
        Ok(step)
    }
}

/// Runs `step` into `run_dir`: warm-up, the measured run, its verdict, the cool-down
/// ([`crate::step::run`]).
pub fn run(
    step: &Step,
    run_dir: &Path,
    ctx: &Ctx<'_>,
    given: &Given<'_>,
) -> anyhow::Result<(RunRecord, StepJudged)> {
    let one_connection = match (ctx.target.http2, ctx.target.http3) {
        (true, _) => Some("HTTP/2"),
        (_, true) => Some("HTTP/3 (QUIC)"),
        _ => None,
    };
    let description = if let Some(protocol) = one_connection {
        format!(
            "closed loop, {} users of one {protocol} connection each, up to {} streams at once",
            step.users, BROWSER_CONNECTIONS
        )
    } else {
        format!(
            "closed loop, {} users of {} connections each, keep-alive",
            step.users, BROWSER_CONNECTIONS
        )
    };
    // The experiment's own server runs its pages on executor threads beside its worker, all
    // on the server's CPU: their waits for each other, and the CPU pressure they make, are
    // the server's own work, not a disturbance (the default limits would refuse every step
    // near the knee). Others on the CPUs, steal and I/O pressure still name a disturbed
    // machine.
    let limits = match given.page {
        Some(_) => Limits {
            wait: 1.0,
            cpu_pressure: 1.0,
            ..Limits::default()
        },
        None => Limits::default(),
    };
    let run = crate::step::Spec {
        number: step.number,
        level: Level::Users(step.users),
        label: step.label(),
        config: users_config(step, ctx, given)?,
        description,
        warm_up: true,
        watch: true,
        after_disturbed: given.after_disturbed,
        limits,
        slo: &ctx.options.users.slo,
        // Keep-alive: the next step's connections are the users' at most twice as many.
        next_connections: (2 * step.users * BROWSER_CONNECTIONS) as f64,
    };
    let (record, judged) = crate::step::run(run, run_dir, ctx, |config, label| {
        measure(run_dir, config, ctx.target, ctx.interrupt, ctx.bar, label)
    })?;
    let judged = StepJudged {
        judged,
        figures: StepFigures::of(&record, step.users),
    };
    write_json(&run_dir.join("step.json"), &judged)?;
    Ok((record, judged))
}

/// The step's load: N users on the file set's mix (or the log's requests), closed loop,
/// kept alive as browsers keep them, one generator thread as every lab run.
fn users_config(step: &Step, ctx: &Ctx<'_>, given: &Given<'_>) -> anyhow::Result<Config> {
    let base = &ctx.target.base_url;
    let mut target = match given.requests {
        Some(requests) => LoadTarget::logged(base, requests, "users", "with the log's users")?,
        None => LoadTarget::fileset(ctx.fileset, base)?,
    };
    if let Some(page) = given.page {
        // Never drawn (weight 0): every page view names it. Its class is not `page`, the
        // page loads' tag in the interval log.
        target.classes.push("generated page".into());
        let class = (target.classes.len() - 1) as u16;
        target.paths.push((page.to_string(), class));
        target.weights.push(0.0);
        target.description = format!("{} and pages from {page}", target.description);
    }
    let mut config = Config::new(target);
    config.threads = 1;
    config.connections = step.users;
    config.duration = step.length;
    config.mode = Mode::KeepAlive;
    // Over TLS, and HTTP/2 (each user one connection, its objects on streams), as asked.
    crate::measure::speak(&mut config, ctx.target);
    let sessions = given.sessions.clone();
    let mut users = Users {
        count: step.users,
        connections: BROWSER_CONNECTIONS,
        sessions,
        ramp_up: Duration::ZERO,
    };
    users.ramp_up = Duration::from_secs_f64(users.mean_think_s()).min(step.length / 4);
    config.users = Some(Arc::new(users));
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::{Find, Target};

    /// Issue 52: the users experiment refused `--http2`. A step's load speaks as the target
    /// is spoken to: over HTTP/2, users each with a connection, kept alive, and a config the
    /// load generator takes.
    #[test]
    fn regression_52_a_steps_users_speak_http2_when_the_target_does() {
        let options = crate::tests_options(true);
        let mut target = Target::external("https://127.0.0.1:9/", Find::None, Vec::new())
            .expect("a target by URL");
        let bar = crate::progress::Progress::new(
            indicatif::ProgressBar::hidden(),
            None,
            &webscope_record::health::Judge::default(),
        )
        .expect("a bar");
        let interrupt = std::sync::atomic::AtomicBool::new(false);
        let dir = Path::new("/nonexistent");
        let requests = [ReplayRequest {
            method: "GET".into(),
            target: "/index.html".into(),
            range: None,
            not_modified: false,
        }];
        let sessions = Sessions::Model(super::super::lab_model(None));
        let step = Step {
            number: 1,
            users: 4,
            length: Duration::from_secs(1),
        };
        for http2 in [false, true] {
            target.http2 = http2;
            let ctx = Ctx {
                options: &options,
                fileset: dir,
                exe: dir,
                server_cpu: None,
                target: &target,
                secure: None,
                duration: Duration::from_secs(1),
                interrupt: &interrupt,
                bar: &bar,
            };
            let given = Given {
                sessions: &sessions,
                requests: Some(&requests),
                page: None,
                after_disturbed: false,
            };
            let config = users_config(&step, &ctx, &given).expect("the step's config");
            assert_eq!(config.http2.is_some(), http2);
            assert_eq!(config.mode, Mode::KeepAlive);
            assert_eq!(config.users.as_ref().map(|u| u.count), Some(4));
            config.check().expect("a config the load generator takes");
        }
    }
}
