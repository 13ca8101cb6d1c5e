//! `webscope lab`: the whole experiment in one command — a file set (made once, cached), a
//! server (webscope's own on loopback, or any URL), the load generator pinned apart from it,
//! the experiments' runs written to disk as they finish, and the report rendered from those
//! files. Ctrl-C stops the current run, and the report of what was measured is still written.

pub mod clients;
pub mod filesize;
pub mod record;
pub mod render;
pub mod target;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context};
use indicatif::{ProgressBar, ProgressStyle};
use webscope_workload::{Manifest, Spec, WriteOptions};

use record::{write_json, LabRecord};
use target::Target;

/// The experiments `--experiment` may name, and whether they are built.
pub const EXPERIMENTS: [(&str, bool); 6] = [
    ("clients", true),
    ("filesize", true),
    ("techniques", false),
    ("saturation", false),
    ("model", false),
    ("degradation", false),
];

/// What the lab was asked to do.
pub struct Options {
    pub out: PathBuf,
    pub work: PathBuf,
    pub quick: bool,
    pub fileset: Option<PathBuf>,
    pub target: Option<String>,
    pub server_pid: Option<u32>,
    pub experiments: Vec<String>,
    pub clients: Option<Vec<usize>>,
    pub duration: Option<Duration>,
    pub keep_alive: bool,
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

/// Runs the lab; returns the path of `index.html` and the terminal summary.
pub fn run(options: &Options, interrupt: &AtomicBool) -> anyhow::Result<(PathBuf, String)> {
    for name in &options.experiments {
        match EXPERIMENTS.iter().find(|(n, _)| n == name) {
            Some((_, true)) => {}
            Some((_, false)) => bail!(
                "--experiment {name} is not built yet (available now: clients, filesize); it is planned in the lab issue"
            ),
            None => bail!(
                "unknown experiment {name:?} (known: {})",
                EXPERIMENTS.map(|(n, _)| n).join(", ")
            ),
        }
    }
    prepare_out(&options.out)?;
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
    let mut target = match &options.target {
        Some(url) => {
            if options.server_pid.is_none() {
                warnings.push("No --server-pid: the server's CPU use and busy threads cannot be shown; its phase timing needs webscope serve's admin endpoint.".into());
            }
            Target::external(url, options.server_pid)
        }
        None => Target::embedded(&exe, &fileset, 1, server_cpu)?,
    };
    if let Some(cpu) = load_cpu {
        target::pin_current(cpu).context("cannot pin the load generator")?;
    }
    let mut lab = LabRecord {
        command: options.command.clone(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        target: match &options.target {
            Some(url) => url.clone(),
            None => format!("webscope serve (embedded) at {}", target.base_url),
        },
        machine: machine(cores),
        placement,
        started_unix_s: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64()),
        experiments: Vec::new(),
        interrupted: false,
        warnings,
    };
    write_json(&options.out.join("lab.json"), &lab)?;
    let clients = options.clients.clone().unwrap_or_else(|| {
        if options.quick {
            clients::QUICK_CLIENTS.to_vec()
        } else {
            clients::CLIENTS.to_vec()
        }
    });
    let duration = options.duration.unwrap_or(if options.quick {
        Duration::from_secs(3)
    } else {
        Duration::from_secs(15)
    });
    let scales = if options.quick {
        filesize::QUICK_SCALES.to_vec()
    } else {
        filesize::SCALES.to_vec()
    };
    let runs: usize = options
        .experiments
        .iter()
        .map(|e| match e.as_str() {
            "clients" => clients.len(),
            "filesize" => scales.len(),
            _ => 0,
        })
        .sum();
    let bar = progress(runs as u64);
    for name in &options.experiments {
        if name == "clients" {
            let plan = clients::Plan {
                clients: clients.clone(),
                duration,
                close: !options.keep_alive,
                fileset: &fileset,
            };
            let record = clients::run(
                &options.out.join("clients"),
                &plan,
                &target,
                interrupt,
                &bar,
            )?;
            lab.experiments.push("clients".into());
            if !record.complete {
                lab.interrupted = true;
            }
            write_json(&options.out.join("lab.json"), &lab)?;
        }
        if name == "filesize" {
            if options.target.is_some() {
                lab.warnings.push("The filesize experiment needs the embedded server (it serves the WebStone sets it makes): not run against --target.".into());
                continue;
            }
            let plan = filesize::Plan {
                scales: scales.clone(),
                clients: if options.quick { 10 } else { 30 },
                duration,
                work: &options.work,
            };
            let record = filesize::run(
                &options.out.join("filesize"),
                &plan,
                &exe,
                server_cpu,
                interrupt,
                &bar,
            )?;
            lab.experiments.push("filesize".into());
            if !record.complete {
                lab.interrupted = true;
            }
            write_json(&options.out.join("lab.json"), &lab)?;
        }
    }
    bar.finish_and_clear();
    lab.interrupted |= interrupt.load(Ordering::Relaxed);
    write_json(&options.out.join("lab.json"), &lab)?;
    target.stop();
    render::render(&options.out)
}

/// Makes `out` ready: created if missing, cleared if it holds an earlier report, refused if it
/// holds something else.
fn prepare_out(out: &Path) -> anyhow::Result<()> {
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
        if is_report {
            for (name, _) in EXPERIMENTS {
                let _ = std::fs::remove_dir_all(out.join(name));
            }
        }
    }
    std::fs::create_dir_all(out).with_context(|| format!("cannot create --out {}", out.display()))
}

/// The SPECweb96 set for `ops`, made once under `work` and reused.
fn cached_fileset(work: &Path, ops: f64, interrupt: &AtomicBool) -> anyhow::Result<PathBuf> {
    let dir = work.join(format!("specweb96-ops{ops}"));
    if Manifest::load(&dir).is_ok() {
        return Ok(dir);
    }
    let manifest = Spec::SpecWeb96 { ops }.plan(1)?;
    let bar = ProgressBar::new(manifest.total_bytes);
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

fn progress(runs: u64) -> ProgressBar {
    let bar = ProgressBar::new(runs);
    bar.set_style(
        ProgressStyle::with_template("{bar:20} run {pos}/{len} {msg}")
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
