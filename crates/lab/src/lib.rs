//! The lab: webscope's experiments, from a file set and a server to a report. `webscope lab`
//! is this crate's [`run`]: a file set (made once, cached), a server (webscope's own on
//! loopback, or any URL), the load generator pinned apart from it, the experiments' runs
//! written to disk as they finish, and the report rendered from those files ([`render`], which
//! `webscope report` calls alone). Ctrl-C stops the current run, and the report of what was
//! measured is still written. Beside it: the verdicts on what bounds a run ([`bottleneck`],
//! [`health`]), the preflight, the papers' findings as data, [`compare`] (a baseline against a
//! candidate, with significance; `webscope compare` and the lab's `--baseline` section) and
//! the [`live`] page a lab or a load run publishes to.
//!
//! Not for: argument parsing, exit codes or `--help` texts (the `webscope` binary owns them
//! and turns them into this crate's configuration types), nor measuring, serving or modelling
//! itself (the `webscope-load`, `-server`, `-monitor` and `-model` crates do; the lab only
//! orchestrates them and reads what they wrote).

pub mod bottleneck;
pub mod capacity;
pub mod clients;
pub mod compare;
pub mod degradation;
pub mod filesize;
pub mod health;
pub mod live;
pub mod measure;
pub mod model;
pub mod papers;
pub mod preflight;
pub mod progress;
pub mod protocols;
pub mod record;
pub mod render;
pub mod saturation;
pub mod target;
pub mod techniques;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use webscope_workload::{Manifest, Spec, WriteOptions};

use crate::live::Live;
use health::{Expect, Judge};
use progress::Progress;
use record::{write_json, ExperimentRecord, LabRecord};
use target::{Find, Secure, Target};

/// An experiment: how many runs it plans, how it runs, how its page is drawn.
pub struct Experiment {
    pub name: &'static str,
    /// It starts servers of its own (the embedded webscope), so `--target` cannot stand in.
    pub needs_embedded: bool,
    /// Runs it will do, for the progress bar.
    pub runs: fn(&Options) -> usize,
    /// Runs it into its directory; returns its record (also written as experiment.json).
    pub run: fn(&Path, &Ctx<'_>) -> anyhow::Result<ExperimentRecord>,
    /// Adds its section, tables and summary to the report, from its directory only.
    pub render: fn(&Path, &ExperimentRecord, &mut render::Rendered) -> anyhow::Result<()>,
}

/// The experiments `--experiment` may name, in the order they run.
pub const EXPERIMENTS: &[Experiment] = &[
    Experiment {
        name: "clients",
        needs_embedded: false,
        runs: clients::runs,
        run: clients::run,
        render: render::clients::render,
    },
    Experiment {
        name: "filesize",
        needs_embedded: true,
        runs: filesize::runs,
        run: filesize::run,
        render: render::filesize::render,
    },
    Experiment {
        name: "techniques",
        needs_embedded: true,
        runs: techniques::runs,
        run: techniques::run,
        render: render::techniques::render,
    },
    Experiment {
        name: "saturation",
        needs_embedded: false,
        runs: saturation::runs,
        run: saturation::run,
        render: render::saturation::render,
    },
    Experiment {
        name: "model",
        needs_embedded: false,
        runs: model::runs,
        run: model::run,
        render: render::model::render,
    },
    Experiment {
        name: "protocols",
        needs_embedded: true,
        runs: protocols::runs,
        run: protocols::run,
        render: render::protocols::render,
    },
    Experiment {
        name: "degradation",
        needs_embedded: true,
        runs: degradation::runs,
        run: degradation::run,
        render: render::degradation::render,
    },
];

/// Experiments the lab issue plans that are not built yet.
pub const PLANNED: &[&str] = &[];

/// The name of a run in round `round` of `--repeat`: the first round keeps the plain name, so
/// a lab without repeats writes what it always wrote.
pub fn round_name(name: &str, round: usize) -> String {
    if round <= 1 {
        name.to_string()
    } else {
        format!("{name}-r{round}")
    }
}

/// The experiment named `name`.
pub fn experiment(name: &str) -> Option<&'static Experiment> {
    EXPERIMENTS.iter().find(|e| e.name == name)
}

/// What every experiment may use while it runs.
pub struct Ctx<'a> {
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
    pub interrupt: &'a AtomicBool,
    /// The progress bar over all runs (each run sets its live line as the message), and the
    /// live page with `--live`.
    pub bar: &'a Progress<'a>,
}

/// What the lab was asked to do.
pub struct Options {
    pub out: PathBuf,
    pub work: PathBuf,
    pub quick: bool,
    pub fileset: Option<PathBuf>,
    pub target: Option<String>,
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
    pub experiments: Vec<String>,
    pub clients: Option<Vec<usize>>,
    pub duration: Option<Duration>,
    pub keep_alive: bool,
    /// Take a kernel profile (perf) in the runs that draw one (filesize).
    pub profile: bool,
    /// Runs of each point of the degradation experiment (its page shows medians).
    pub repeat: usize,
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

/// Runs the lab; returns what the report found (its path, the summary, the invalid runs).
pub fn run(options: &Options, interrupt: &AtomicBool) -> anyhow::Result<render::Outcome> {
    let built: Vec<&str> = EXPERIMENTS.iter().map(|e| e.name).collect();
    let mut chosen = Vec::new();
    for name in &options.experiments {
        match experiment(name) {
            Some(e) => chosen.push(e),
            None if PLANNED.contains(&name.as_str()) => bail!(
                "--experiment {name} is not built yet (available now: {}); it is planned in the lab issue",
                built.join(", ")
            ),
            None => bail!(
                "unknown experiment {name:?} (known: {})",
                built.join(", ")
            ),
        }
    }
    check_protocol(options, &chosen)?;
    let expect = Expect::parse(&options.judge.expect_status).map_err(anyhow::Error::msg)?;
    check_out(&options.out)?;
    if let Some(baseline) = &options.baseline {
        if !baseline.join("lab.json").exists() {
            bail!(
                "--baseline {} is not a lab report (give the --out directory of an earlier webscope lab)",
                baseline.display()
            );
        }
        let same = |p: &Path| std::fs::canonicalize(p).ok();
        if same(baseline).is_some() && same(baseline) == same(&options.out) {
            bail!("--baseline and --out are the same directory: the new report would overwrite its baseline; give another --out");
        }
    }
    let fileset = match &options.fileset {
        Some(dir) => {
            Manifest::load(dir).with_context(|| {
                format!(
                    "--fileset {} is not a file set (make one with webscope fileset)",
                    dir.display()
                )
            })?;
            dir.clone()
        }
        None => cached_fileset(
            &options.work,
            if options.quick { 1.0 } else { 5.0 },
            interrupt,
            options.quiet,
        )?,
    };
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let mut warnings = Vec::new();
    let (server_cpu, load_cpu) = if cores >= 2 {
        (Some(0), Some(1))
    } else {
        (None, None)
    };
    let placement = match (server_cpu, load_cpu) {
        (Some(s), Some(l)) if options.target.is_none() => {
            format!("server pinned to CPU {s} (1 worker, access log written to /dev/null), load generator to CPU {l} (1 thread)")
        }
        (_, Some(l)) => {
            format!("load generator pinned to CPU {l}; the target's placement is its own")
        }
        _ => {
            warnings.push(
                "One CPU only: server and load generator share it, so neither figure is clean."
                    .into(),
            );
            "one CPU: no pinning".into()
        }
    };
    let exe = std::env::current_exe().context("cannot find the webscope executable")?;
    let secure = if options.target.is_none() && (options.embedded_tls || options.http2) {
        Some(Secure::make(&options.work, options.http2)?)
    } else {
        None
    };
    let mut target = match &options.target {
        Some(url) => {
            let find = match (options.server_pid, options.no_server_pid) {
                (Some(pid), _) => Find::Pid(pid),
                (None, true) => Find::None,
                (None, false) => Find::Port,
            };
            let mut target = Target::external(url, find, options.server_metrics.clone())?;
            target.tls = options.tls.clone();
            if target.pids.is_empty() {
                warnings.push(format!("The server's processes were {}: its CPU use and threads cannot be shown, and no verdict can name the server's CPU.", target.found_by));
            }
            target
        }
        None => Target::embedded_over(&exe, &fileset, 1, server_cpu, &[], secure.as_ref())?,
    };
    target.http2 |= options.http2;
    if options.http2 {
        warnings.push("HTTP/2 (--http2): each client is one connection with one stream, kept alive (HTTP/2 has no connection per request).".into());
    }
    // Before anything is written: a dead or misconfigured target is one line and exit 1.
    let preflight = if options.no_preflight {
        "Preflight skipped (--no-preflight).".to_string()
    } else {
        let checked = preflight::check(&target.base_url, &fileset, &expect, &target.tls)?;
        format!(
            "Preflight: {} files of the set fetched, sizes as the manifest says, {} compared byte for byte.",
            checked.files, checked.compared
        )
    };
    prepare_out(&options.out)?;
    let processes = target.processes();
    let server_processes = if processes.is_empty() {
        target.found_by.clone()
    } else {
        format!(
            "{} ({})",
            processes
                .iter()
                .map(|p| format!("{} {}", p.pid, p.comm))
                .collect::<Vec<_>>()
                .join(", "),
            target.found_by
        )
    };
    if !options.server_metrics.is_empty() {
        warnings.push(format!("The server's machine is seen through node_exporter at {}: its CPU, TCP and disk figures come from there (the busiest host where there are several); the generator's machine from this one's /proc.", options.server_metrics.join(", ")));
    }
    if let Some(cpu) = load_cpu {
        target::pin_current(cpu).context("cannot pin the load generator")?;
    }
    let mut lab = LabRecord {
        command: options.command.clone(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        target: match &options.target {
            Some(url) => url.clone(),
            None => format!(
                "webscope serve (embedded{}) at {}",
                match (&secure, options.http2) {
                    (Some(_), true) => ", HTTP/2 over TLS",
                    (Some(_), false) => ", HTTPS",
                    _ => "",
                },
                target.base_url
            ),
        },
        machine: machine(cores),
        placement,
        started_unix_s: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64()),
        experiments: Vec::new(),
        interrupted: false,
        warnings,
        judge: options.judge.clone(),
        server_processes,
        preflight,
        baseline: options.baseline.as_ref().map(|b| {
            std::fs::canonicalize(b)
                .unwrap_or_else(|_| b.clone())
                .display()
                .to_string()
        }),
    };
    write_json(&options.out.join("lab.json"), &lab)?;
    let duration = options.duration.unwrap_or(if options.quick {
        Duration::from_secs(3)
    } else {
        Duration::from_secs(15)
    });
    let runs: usize = chosen.iter().map(|e| (e.runs)(options)).sum();
    let bar = Progress::new(
        progress(runs as u64, options.quiet),
        options.live.as_ref(),
        &options.judge,
    )?;
    let ctx = Ctx {
        options,
        fileset: &fileset,
        exe: &exe,
        server_cpu,
        target: &target,
        secure: secure.as_ref(),
        duration,
        interrupt,
        bar: &bar,
    };
    for experiment in chosen {
        if interrupt.load(Ordering::Relaxed) {
            break;
        }
        bar.set_prefix(experiment.name);
        if experiment.needs_embedded && options.target.is_some() {
            lab.warnings.push(format!(
                "The {} experiment needs the embedded server (it starts servers of its own): not run against --target.",
                experiment.name
            ));
            continue;
        }
        let record = (experiment.run)(&options.out.join(experiment.name), &ctx)?;
        lab.experiments.push(experiment.name.into());
        // An experiment cut short by a failure says so in its record; only Ctrl-C makes the
        // lab "interrupted".
        if !record.complete && interrupt.load(Ordering::Relaxed) {
            lab.interrupted = true;
        }
        write_json(&options.out.join("lab.json"), &lab)?;
    }
    bar.finish_and_clear();
    lab.interrupted |= interrupt.load(Ordering::Relaxed);
    write_json(&options.out.join("lab.json"), &lab)?;
    target.stop();
    render::render(&options.out)
}

/// Experiments that run over TLS and HTTP/2 when asked (protocols runs all protocols itself).
const SECURE_EXPERIMENTS: [&str; 4] = ["clients", "filesize", "model", "protocols"];

/// `--tls` and `--http2` apply to some experiments only, and `--tls` to the embedded server
/// only: anything else is refused before any work, in one line.
fn check_protocol(options: &Options, chosen: &[&Experiment]) -> anyhow::Result<()> {
    if options.embedded_tls && options.target.is_some() {
        bail!("--tls is for the embedded server: an https:// --target is measured over TLS already (with --cacert or --insecure)");
    }
    if !(options.embedded_tls || options.http2) {
        return Ok(());
    }
    if let Some(other) = chosen
        .iter()
        .find(|e| !SECURE_EXPERIMENTS.contains(&e.name))
    {
        bail!(
            "--tls and --http2 apply to the {} experiments; {} runs plain HTTP/1.1: run it in a lab without them",
            SECURE_EXPERIMENTS.join(", "),
            other.name
        );
    }
    Ok(())
}

/// Refuses an `out` that holds something other than an earlier report (checked before any
/// work, changed only after the preflight).
fn check_out(out: &Path) -> anyhow::Result<()> {
    if out.exists() {
        let is_report = out.join("lab.json").exists();
        let empty = std::fs::read_dir(out)
            .map(|mut d| d.next().is_none())
            .unwrap_or(false);
        if !is_report && !empty {
            bail!(
                "--out {} exists and is not a webscope report: choose another directory",
                out.display()
            );
        }
    }
    Ok(())
}

/// Makes `out` ready: created if missing, cleared if it holds an earlier report, refused if it
/// holds something else.
fn prepare_out(out: &Path) -> anyhow::Result<()> {
    check_out(out)?;
    if out.join("lab.json").exists() {
        for name in EXPERIMENTS
            .iter()
            .map(|e| e.name)
            .chain(PLANNED.iter().copied())
        {
            let _ = std::fs::remove_dir_all(out.join(name));
        }
    }
    std::fs::create_dir_all(out).with_context(|| format!("cannot create --out {}", out.display()))
}

/// The SPECweb96 set for `ops`, made once under `work` and reused.
fn cached_fileset(
    work: &Path,
    ops: f64,
    interrupt: &AtomicBool,
    quiet: bool,
) -> anyhow::Result<PathBuf> {
    let dir = work.join(format!("specweb96-ops{ops}"));
    if Manifest::load(&dir).is_ok() {
        return Ok(dir);
    }
    let manifest = Spec::SpecWeb96 { ops }.plan(1)?;
    let bar = if quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(manifest.total_bytes)
    };
    bar.set_style(
        ProgressStyle::with_template(
            "making the SPECweb96 file set {bar:30} {bytes}/{total_bytes}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let options = WriteOptions { force: true };
    webscope_workload::write(&manifest, &dir, &options, interrupt, &mut |done, _| {
        bar.set_position(done)
    })
    .with_context(|| format!("cannot make the file set under {}", work.display()))?;
    bar.finish_and_clear();
    Ok(dir)
}

/// The bar over all runs: the experiment, the run, the time spent and the time left (indicatif
/// draws on stderr only when it is a terminal; `--quiet` hides it).
fn progress(runs: u64, quiet: bool) -> ProgressBar {
    // Hidden, it still counts: the live page shows its step and time left.
    let bar = if quiet {
        ProgressBar::with_draw_target(Some(runs), ProgressDrawTarget::hidden())
    } else {
        ProgressBar::new(runs)
    };
    bar.set_style(
        ProgressStyle::with_template(
            "{prefix} {bar:20} run {pos}/{len}, {elapsed} spent, ~{eta} left  {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}

fn machine(cores: usize) -> String {
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into());
    format!(
        "{cores} CPU{}, Linux {kernel}",
        if cores == 1 { "" } else { "s" }
    )
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
        profile: true,
        repeat: 1,
        command: "webscope lab".into(),
    }
}
