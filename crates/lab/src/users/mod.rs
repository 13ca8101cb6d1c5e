//! The users experiment (issue 37): how many concurrent users a server carries within an
//! objective on their page views. Each step runs N closed-loop users (webscope-load's
//! `--users`: sessions of page views, each a page and its objects over up to 6 connections,
//! then a think time) for the lab's run length; the capacity search's machinery ([`Search`],
//! its confirmations both ways, undecided and disturbed steps taken again) grows N and
//! bisects it until the objective (`page_p95<=10ms,errors<=1%` by default) fails. Beside the
//! capacity in users: MVA's prediction from the service demand per page view measured at
//! each step and the think time the users kept ([`model`]), and the interactive response
//! time law R = N/X − Z checked on every step.
//!
//! The sessions: the `--workload` log's own (sampled, with its URLs and think times), or a
//! built-in model ([`lab_model`]): SURGE's shapes with its times divided by 100, so that the
//! knee falls at tens or hundreds of users, which one machine can hold (SURGE's own think
//! times, mean 2.6 s, would put it at tens of thousands of users and 6 connections each);
//! the objective's default is divided alike (a 1-s page load becomes 10 ms). On the embedded
//! default the experiment starts a server of its own with `--services`, and each page is
//! generated (`/svc/light`, the light servlet of Hibino et al.: fib(25), under a millisecond
//! of CPU), its objects the file set's files: a site's pages cost more than its images, and
//! a page that costs what a file does would leave the server faster than the one generator
//! thread (the capacity experiment's finding on this machine). On a `--target`, pages and
//! objects are the file set's.
//!
//! Not for: open-loop rates (`capacity`) nor drawing (`webscope_pages::users`).

pub mod model;
pub mod step;

use std::sync::Arc;

use webscope_load::slo::Slo;
use webscope_load::users::{Dist, SessionModel, Sessions};

use crate::capacity::search::{Plan, Rule, Search, CONFIRM};
use crate::runner::{Ctx, Next, Points, Run, SoFar, Sweep};
use crate::step::Ledger;
use crate::Options;
use step::{Step, StepJudged};
use webscope_record::{read_json, write_json, RunRecord};

/// The objective without `--slo`.
pub const DEFAULT_SLO: &str = "page_p95<=10ms,errors<=1%";
/// The first N without `--from`.
pub const DEFAULT_FROM: usize = 4;
/// Most steps of one search.
pub const MOST_STEPS: usize = 36;

/// What the users experiment is asked.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The objective on the page views each step is judged on (`--slo`, else [`DEFAULT_SLO`]).
    pub slo: Slo,
    /// The first N.
    pub from: usize,
    /// The bracket closes when (fail − pass) / pass is at most this.
    pub precision: f64,
    /// `--think-scale`: the factor a log's think times are multiplied by.
    pub think_scale: Option<f64>,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            slo: Slo::parse(DEFAULT_SLO).unwrap_or(Slo {
                conditions: Vec::new(),
            }),
            from: DEFAULT_FROM,
            precision: crate::capacity::DEFAULT_PRECISION,
            think_scale: None,
        }
    }
}

/// The embedded default's sessions: SURGE's distributions (Barford & Crovella 1998: page
/// views geometric, our choice; objects per page Pareto α 2.43, k 1; think times Pareto
/// α 1.5) with the think times' scale divided by 100 (k 10 ms, truncated at 600 ms: mean 26
/// ms). See the module doc for why.
/// `page`: the request every page view's page is (the generated page), if any.
pub fn lab_model(page: Option<u32>) -> SessionModel {
    SessionModel {
        think: Dist::Pareto {
            alpha: 1.5,
            scale: 0.01,
            max: Some(0.6),
        },
        page,
        ..SessionModel::surge()
    }
}

/// The generated page of the embedded default's server.
pub const PAGE_PATH: &str = "/svc/light";

/// The search's plan: doubling from `--from` users, to the precision, boundaries confirmed.
fn plan(options: &Options) -> Plan {
    Plan {
        precision: options.users.precision,
        repeat: (options.repeat as u32).max(CONFIRM),
        max_probes: MOST_STEPS,
        ..Plan::new(options.users.from as f64)
    }
}

/// What the page needs to replay the search: `users.json`.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Recorded {
    /// The objective, as `--slo` reads it.
    pub slo: String,
    /// The first number of users.
    pub from: f64,
    /// The bracket closed when (fail − pass) / pass was at most this.
    pub precision: f64,
    /// Steps at each boundary number of users at least.
    pub repeat: u32,
    /// The search's budget: at most this many steps in all.
    pub max_probes: usize,
    /// Each step settled by a sign test, or left unsettled (#33; searches before it: the
    /// majority).
    #[serde(default)]
    pub settled: bool,
    /// How the users' sessions were made.
    pub sessions: String,
    /// How long the users think, said beside every number of users (labs before issue 52:
    /// empty, not said).
    #[serde(default)]
    pub thinking: String,
}

impl Recorded {
    /// The search's plan.
    pub fn plan(&self) -> Plan {
        Plan {
            precision: self.precision,
            repeat: self.repeat,
            max_probes: self.max_probes,
            rule: if self.settled {
                Rule::Settled
            } else {
                Rule::Majority
            },
            ..Plan::new(self.from)
        }
    }

    /// Reads `users.json` from the experiment's folder.
    pub fn read(dir: &std::path::Path) -> anyhow::Result<Recorded> {
        read_json(&dir.join("users.json"))
    }
}

/// The experiment: the search, the sessions every step runs, the steps' outcomes.
pub struct UsersSearch {
    search: Search,
    /// The embedded default's own server, with services (None: the lab's target).
    server: Option<crate::target::Target>,
    sessions: Arc<Sessions>,
    /// The distinct requests of logged sessions (None: the file set's mix).
    requests: Option<Arc<Vec<webscope_load::replay::ReplayRequest>>>,
    recorded: usize,
    ledger: Ledger,
    last_disturbed: bool,
    judged: Vec<StepJudged>,
}

impl Sweep for UsersSearch {
    const NAME: &'static str = "users";
    const FACTOR: &'static str = "users (N)";
    type Point = Step;

    fn points(_: &Options) -> Points<Step> {
        Points::Adaptive { most: MOST_STEPS }
    }

    /// The search repeats its own boundary steps: one round.
    fn rounds(_: &Options) -> usize {
        1
    }

    fn start(ctx: &Ctx<'_>) -> anyhow::Result<UsersSearch> {
        let own = ctx.options.target.is_none() && ctx.options.workload.is_empty();
        let server = match own {
            // Over TLS (and HTTP/2) when the lab's embedded server speaks them.
            true => Some(crate::target::Target::embedded_over(
                ctx.exe,
                ctx.fileset,
                1,
                ctx.server_cpu,
                &["--services".to_string()],
                ctx.secure,
            )?),
            false => None,
        };
        let (sessions, requests) = if ctx.options.workload.is_empty() {
            // The generated page goes after the file set's paths (step::users_config).
            let page = match &server {
                Some(s) => Some(
                    webscope_load::Target::fileset(ctx.fileset, &s.base_url)?
                        .paths
                        .len() as u32,
                ),
                None => None,
            };
            (Sessions::Model(lab_model(page)), None)
        } else {
            let logged = webscope_load::users::sessions_from_logs(
                &ctx.options.workload,
                None,
                webscope_load::users::SESSION_GAP_S,
                step::SESSION_SAMPLE,
                1,
            )?;
            let sessions = match ctx.options.users.think_scale {
                Some(scale) => logged.logged.with_think_scale(scale),
                None => logged.logged,
            };
            (Sessions::Logged(sessions), Some(Arc::new(logged.requests)))
        };
        Ok(UsersSearch {
            search: Search::new(plan(ctx.options)),
            server,
            sessions: Arc::new(sessions),
            requests,
            recorded: 0,
            ledger: Ledger::default(),
            last_disturbed: false,
            judged: Vec::new(),
        })
    }

    fn next(&mut self, so_far: &SoFar<'_, Step>, ctx: &Ctx<'_>) -> Next<Step> {
        for done in &so_far.runs[self.recorded..] {
            let (outcome, why) = self.ledger.of(&done.name);
            self.search.record(done.point.users as f64, outcome, why);
        }
        self.recorded = so_far.runs.len();
        match self.search.next_rate() {
            Some(n) => Next::Run(Step {
                number: so_far.runs.len() + 1,
                users: n.round().max(1.0) as usize,
                length: step::length(
                    n,
                    &self.sessions,
                    ctx.duration,
                    &ctx.options.users.slo,
                    self.search.length_factor(n),
                ),
            }),
            None if so_far.stopped.is_some() => Next::Done,
            None => Next::Stop(self.search.ending().map_or("the search ended".into(), |e| {
                model::ending_sentence(e, &self.sessions.thinking())
            })),
        }
    }

    fn name(&self, step: &Step) -> String {
        step.name()
    }

    fn label(&self, run: &Run<'_, Step>) -> String {
        run.point.label()
    }

    fn measure(&mut self, run: &Run<'_, Step>, ctx: &Ctx<'_>) -> anyhow::Result<RunRecord> {
        if let Some(dir) = run.dir.parent().filter(|d| !d.join("users.json").exists()) {
            let plan = plan(ctx.options);
            let users = webscope_load::users::Users {
                count: 1,
                connections: webscope_load::users::BROWSER_CONNECTIONS,
                sessions: (*self.sessions).clone(),
                ramp_up: std::time::Duration::ZERO,
            };
            write_json(
                &dir.join("users.json"),
                &Recorded {
                    slo: ctx.options.users.slo.to_string(),
                    from: plan.from,
                    precision: plan.precision,
                    repeat: plan.repeat,
                    max_probes: plan.max_probes,
                    settled: plan.rule == Rule::Settled,
                    sessions: match &self.server {
                        Some(_) => format!(
                            "{}; each page generated by {PAGE_PATH} on a server of the experiment's own (started with --services), its objects the file set's files",
                            users.describe()
                        ),
                        None => users.describe(),
                    },
                    thinking: users.thinking(),
                },
            )?;
        }
        let given = step::Given {
            sessions: &self.sessions,
            requests: self.requests.as_deref().map(Vec::as_slice),
            page: self.server.as_ref().map(|_| PAGE_PATH),
            after_disturbed: self.last_disturbed,
        };
        // The steps go to the experiment's own server when it has one.
        let own;
        let ctx = match &self.server {
            Some(server) => {
                own = Ctx {
                    target: server,
                    ..*ctx
                };
                &own
            }
            None => ctx,
        };
        let (record, judged) = step::run(run.point, run.dir, ctx, &given)?;
        self.last_disturbed = self.ledger.keep(run.name, &judged.judged);
        self.judged.push(judged);
        Ok(record)
    }
}
