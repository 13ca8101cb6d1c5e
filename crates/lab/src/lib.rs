//! The lab: webscope's experiments, from a file set and a server to the results on disk.
//! `webscope lab` is this crate's [`run`]: a file set (made once, cached), a server (webscope's
//! own on loopback, or any URL), the load generator pinned apart from it, and the experiments'
//! runs written to disk as they finish (`run.json`, `experiment.json`, `lab.json`, each
//! experiment's own files). Ctrl-C stops the current run and keeps what was measured. Beside it:
//! the verdict on the objective ([`objective`]; what bounds a run is `webscope-bottleneck`'s,
//! a run's health `webscope_record::health`), the preflight, and the interleaved A/B experiment ([`ab`]),
//! which decides by `webscope-compare`'s rule. It publishes to the live page
//! (`webscope-live`) as it goes.
//!
//! The way an experiment takes through the crate:
//!
//! ```text
//! Options ─→ session::run ─→ setup (check, file set, CPUs, target, preflight, lab.json)
//!         ─→ runner::run::<S: Sweep> for each of EXPERIMENTS ─→ S's points ─→ S::measure
//!            (measure.rs: load + monitor) ─→ webscope-record (run.json, experiment.json)
//! ```
//!
//! Not for: the pages (`webscope-pages` draws them from the files this crate writes, and this
//! crate never calls it), argument parsing, exit codes or `--help` texts (the `webscope` binary
//! owns them), nor measuring, serving or modelling itself (the `webscope-load`, `-server`,
//! `-monitor` and `-model` crates do; the lab only orchestrates them and reads what they wrote),
//! the run files' types (`webscope-record`) nor comparing stored runs (`webscope-compare`).

#![deny(missing_docs)]

pub mod ab;
pub mod capacity;
pub mod clients;
pub mod degradation;
pub mod filesize;

pub mod loss;
pub mod measure;
pub mod model;
pub mod objective;

pub mod preflight;
pub mod progress;
pub mod protocols;
pub mod replay;
pub mod results;
pub mod runner;
pub mod saturation;
pub mod session;
pub mod setup;
pub mod step;
pub mod target;
pub mod techniques;
pub mod users;

use std::path::{Path, PathBuf};
use std::time::Duration;

use runner::{Ctx, Sweep};
use webscope_live::Live;
use webscope_record::health::Judge;
use webscope_record::ExperimentRecord;

pub use session::run;

/// An experiment as the lab lists it: how many runs it plans, how it runs. Made from its
/// [`Sweep`] by [`Experiment::of`]; its page is the pages crate's, found by its name.
pub struct Experiment {
    /// The name `--experiment` takes and the pages crate finds its page by.
    pub name: &'static str,
    /// It starts servers of its own (the embedded webscope), so `--target` cannot stand in.
    pub needs_embedded: bool,
    /// Runs it will do, for the progress bar.
    pub runs: fn(&Options) -> usize,
    /// Runs it into its directory; returns its record (also written as experiment.json).
    pub run: fn(&Path, &Ctx<'_>) -> anyhow::Result<ExperimentRecord>,
}

impl Experiment {
    /// The experiment `S` taken by the runner.
    pub const fn of<S: Sweep>() -> Experiment {
        Experiment {
            name: S::NAME,
            needs_embedded: S::NEEDS_EMBEDDED,
            runs: S::planned,
            run: runner::run::<S>,
        }
    }
}

/// The experiments `--experiment` may name (they run in the order it names them). Adding one:
/// its file (a [`Sweep`]), a line here, and its page in the pages crate's table.
pub const EXPERIMENTS: &[Experiment] = &[
    Experiment::of::<clients::ClientSweep<clients::Clients>>(),
    Experiment::of::<filesize::Filesize>(),
    Experiment::of::<techniques::Techniques>(),
    Experiment::of::<saturation::Saturation>(),
    Experiment::of::<clients::ClientSweep<model::Model>>(),
    Experiment::of::<protocols::Protocols>(),
    Experiment::of::<degradation::Degradation>(),
    Experiment::of::<capacity::experiment::Capacity>(),
    Experiment::of::<replay::ReplaySweep>(),
    Experiment::of::<users::UsersSearch>(),
    Experiment::of::<ab::trial::AbTrials>(),
];

/// Experiments the lab issue plans that are not built yet.
pub const PLANNED: &[&str] = &[];

/// The experiment named `name`.
pub fn experiment(name: &str) -> Option<&'static Experiment> {
    EXPERIMENTS.iter().find(|e| e.name == name)
}

/// What the lab was asked to do.
pub struct Options {
    /// `--out`: where the report goes (index.html, report.json, CSV files, the runs' data).
    pub out: PathBuf,
    /// `--work`: where file sets are made and kept between labs (the cache).
    pub work: PathBuf,
    /// `--quick`: short runs (3 s) and fewer points, about a minute in all.
    pub quick: bool,
    /// `--fileset`: a file set made by `webscope fileset`, used instead of the cached
    /// SPECweb96 one (None: the cache's).
    pub fileset: Option<PathBuf>,
    /// `--target`: the URL of a server to measure (None: webscope's own, started on loopback).
    pub target: Option<String>,
    /// `--server-pid`: the server's process, when looking it up by its port would not find it.
    pub server_pid: Option<u32>,
    /// `--no-server-pid`: do not look for the server's processes.
    pub no_server_pid: bool,
    /// `--server-metrics`: the server host's node_exporter.
    pub server_metrics: Vec<String>,
    /// How runs are judged (`--expect-status`, `--max-error-pct`).
    pub judge: Judge,
    /// `--no-preflight`: skip the sample fetch before the sweep.
    pub no_preflight: bool,
    /// `--baseline`: a stored lab report to compare with.
    pub baseline: Option<PathBuf>,
    /// `--quiet`: no progress bar, no summary table.
    pub quiet: bool,
    /// `--live`: the page that shows the sweep as it goes.
    pub live: Option<Live>,
    /// `--cacert`, `--insecure`: how an https target is spoken to.
    pub tls: webscope_load::TlsSettings,
    /// `--tls`: the embedded server serves HTTPS (with the lab's own certificate).
    pub embedded_tls: bool,
    /// `--http2`: runs speak HTTP/2 (over TLS to the embedded server).
    pub http2: bool,
    /// `--http3`: runs speak HTTP/3 over QUIC (to the embedded server, which serves it).
    pub http3: bool,
    /// `--loss` (and `--rtt`): the protocols experiment loads pages over HTTP/2 and HTTP/3
    /// across a lossy, delayed link instead of its rows.
    pub loss: Option<loss::Settings>,
    /// `--experiment`: the experiments to run, by name, in this order.
    pub experiments: Vec<String>,
    /// `--clients`: the connection counts the sweeps step through (None: each experiment's own).
    pub clients: Option<Vec<usize>>,
    /// `--duration`: each run's measured length (None: 15 s, 3 s with `--quick`).
    pub duration: Option<Duration>,
    /// `--keep-alive`: runs reuse connections (without it, each request opens a connection of
    /// its own, except over HTTP/2 and HTTP/3).
    pub keep_alive: bool,
    /// Take a kernel profile (perf) in the runs that draw one (filesize).
    pub profile: bool,
    /// `--no-kernel`: the runs' monitor leaves its kernel module (the accept-queue wait) off.
    pub no_kernel: bool,
    /// `--repeat`: rounds taken round each experiment's whole sweep (pages show medians).
    pub repeat: usize,
    /// The capacity experiment's objective, first rate, precision and arrivals.
    pub capacity: capacity::Settings,
    /// The users experiment's objective, first N and precision.
    pub users: users::Settings,
    /// The A/B experiment's candidate, thresholds and time.
    pub ab: ab::Settings,
    /// `--workload`: access logs the replay experiment replays, and whose sessions the users
    /// experiment's users go through.
    pub workload: Vec<PathBuf>,
    /// The command line the lab was started with, for lab.json (so a report says how it was made).
    pub command: String,
}

/// The default cache of file sets: `$XDG_CACHE_HOME/webscope`, `~/.cache/webscope`, or
/// `./.webscope-cache` without a home.
pub fn default_work_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir).join("webscope");
    }
    match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        Some(home) => PathBuf::from(home).join(".cache").join("webscope"),
        None => PathBuf::from(".webscope-cache"),
    }
}

/// Options as the command line gives them with no flags (`--quick` or not), for tests.
#[cfg(test)]
pub fn tests_options(quick: bool) -> Options {
    Options {
        out: PathBuf::from("report"),
        work: PathBuf::from("work"),
        quick,
        fileset: None,
        target: None,
        server_pid: None,
        no_server_pid: false,
        server_metrics: Vec::new(),
        judge: Judge::default(),
        no_preflight: false,
        baseline: None,
        quiet: false,
        experiments: vec!["clients".into()],
        clients: None,
        duration: None,
        keep_alive: false,
        live: None,
        tls: Default::default(),
        embedded_tls: false,
        http2: false,
        http3: false,
        loss: None,
        profile: true,
        no_kernel: false,
        repeat: 1,
        capacity: capacity::Settings::default(),
        users: users::Settings::default(),
        ab: ab::Settings::default(),
        workload: Vec::new(),
        command: "webscope lab".into(),
    }
}
