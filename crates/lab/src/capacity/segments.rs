//! A probe beyond one generator (issue #25 §3): its open loop run as N `webscope load
//! --segment I/N` processes started together (`--start-at`, a moment ahead so that all are
//! ready), each offering its share of the rate, and their reports and interval logs added
//! exactly by `webscope_load::merge` — the same steps a user takes across hosts, and the ones
//! `webscope distribute --kubernetes N` writes into a Job. Locally the processes run on every
//! CPU but the embedded server's.
//!
//! Each segment is given the probe's `Config` itself, written once into the run folder
//! ([`write_config`]) and read by `webscope load --config`, with only what is its own as flags
//! on top (`--segment`, `--start-at`, `--json`, `--hlog`): a field added to the config
//! reaches the segments without a flag of its own. The same segments as the pods of an
//! Indexed Job are the `kubernetes` module's, on this module's [`SegmentPlan`] and config file.
//!
//! Not for: choosing the probes (the search) nor judging them (`probe`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context};
use webscope_load::{Config, Pacing, Part, Report};

/// How far ahead of now the segments are told to start: time for N processes to start, read
/// the file set and open their first connections.
const START_AHEAD: Duration = Duration::from_millis(500);

/// What the processes need beside the probe's load config.
pub struct SegmentPlan<'a> {
    /// Load processes the probe is split across (`--segments`).
    pub segments: usize,
    /// The `webscope` binary.
    pub exe: &'a Path,
    /// The embedded server's CPU, which the generators keep off.
    pub server_cpu: Option<usize>,
}

/// Runs `config` as `plan.segments` processes and merges them; the merged interval log goes
/// to `config.hlog`. Ctrl-C (`interrupt`) is passed on to the processes, which end early and
/// report what they measured.
pub fn run(
    config: &Config,
    plan: &SegmentPlan<'_>,
    interrupt: &AtomicBool,
) -> anyhow::Result<Report> {
    let dir = config
        .hlog
        .as_deref()
        .and_then(Path::parent)
        .context("a segmented probe needs its run folder")?;
    let config_file = write_config(config, plan.segments, dir)?;
    let start_at = SystemTime::now() + START_AHEAD;
    let mut children = Vec::new();
    for i in 0..plan.segments {
        let (json, hlog) = files(dir, i);
        let child = Command::new(plan.exe)
            .args(args(
                &config_file,
                (i, plan.segments),
                start_at,
                (&json, &hlog),
            )?)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("cannot start segment {i}/{}", plan.segments))?;
        keep_off(child.id(), plan.server_cpu);
        children.push(child);
    }
    let reports: Vec<PathBuf> = (0..plan.segments).map(|i| files(dir, i).0).collect();
    wait(&mut children, &reports, interrupt)?;
    let parts = (0..plan.segments)
        .map(|i| {
            let (json, hlog) = files(dir, i);
            let report: Report = serde_json::from_slice(
                &std::fs::read(&json).with_context(|| format!("{}", json.display()))?,
            )
            .with_context(|| format!("{}", json.display()))?;
            let log = std::fs::read(&hlog).with_context(|| format!("{}", hlog.display()))?;
            Ok(Part { report, log })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(webscope_load::merge(&parts, config.hlog.as_deref())?)
}

fn files(dir: &Path, i: usize) -> (PathBuf, PathBuf) {
    (
        dir.join(format!("segment-{i}.json")),
        dir.join(format!("segment-{i}.hlog")),
    )
}

/// The file in the run folder that every segment (and `webscope distribute`, which puts it
/// into the Job) is given: the probe's config, written once.
pub const CONFIG_FILE: &str = "load-config.json";

/// Writes the config the segments run to `dir` ([`CONFIG_FILE`]) and returns its path.
pub fn write_config(config: &Config, segments: usize, dir: &Path) -> anyhow::Result<PathBuf> {
    let path = dir.join(CONFIG_FILE);
    let json = for_segments(config, segments).to_json()?;
    std::fs::write(&path, json).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

/// The probe's config as its segments are given it: the whole run's (each segment takes its
/// share of the rate and connections), save that every segment's threads need a connection
/// each to start with.
pub fn for_segments(config: &Config, segments: usize) -> Config {
    let mut whole = config.clone();
    whole.connections = whole.connections.max(segments * whole.threads);
    if let Pacing::Open {
        max_connections, ..
    } = &mut whole.pacing
    {
        *max_connections = (*max_connections).max(whole.connections);
    }
    whole
}

/// The `webscope load` arguments of segment `i` of `segments`: the config file, and on top
/// of it what is this process's own (its share, the common start, its two output files).
pub fn args(
    config_file: &Path,
    (i, segments): (usize, usize),
    start_at: SystemTime,
    (json, hlog): (&Path, &Path),
) -> anyhow::Result<Vec<OsString>> {
    let start = start_at
        .duration_since(UNIX_EPOCH)
        .context("the clock is before 1970")?
        .as_secs_f64();
    let mut args: Vec<OsString> = vec!["load".into(), "--config".into(), config_file.into()];
    args.extend([
        "--segment".into(),
        format!("{i}/{segments}").into(),
        "--start-at".into(),
        format!("{start:.3}").into(),
        "--json".into(),
        json.into(),
        "--hlog".into(),
        hlog.into(),
        "-q".into(),
    ]);
    Ok(args)
}

/// Runs the process `pid` on every CPU but `server` (all of them when there is no server CPU).
fn keep_off(pid: u32, server: Option<usize>) {
    let Some(server) = server else { return };
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    if cpus < 2 {
        return;
    }
    // SAFETY: a zeroed cpu_set_t with bits set below CPU_SETSIZE, passed with its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for cpu in (0..cpus.min(libc::CPU_SETSIZE as usize)).filter(|c| *c != server) {
            libc::CPU_SET(cpu, &mut set);
        }
        // A process that could not be moved still runs: on the lab's CPU, which is no error.
        libc::sched_setaffinity(pid as i32, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// Waits for every segment, passing Ctrl-C on as SIGINT once; a segment that failed stops
/// the others and is an error with its last line.
fn wait(children: &mut [Child], reports: &[PathBuf], interrupt: &AtomicBool) -> anyhow::Result<()> {
    let mut passed_on = false;
    loop {
        if interrupt.load(Ordering::Relaxed) && !passed_on {
            for child in children.iter() {
                // SAFETY: a signal to a child we started and have not reaped.
                unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
            }
            passed_on = true;
        }
        let mut running = false;
        let mut failed = None;
        for (i, child) in children.iter_mut().enumerate() {
            match child.try_wait()? {
                None => running = true,
                Some(status) if status.success() => {}
                // 1 with a report: no request succeeded, which the merged report says for
                // itself; 130 after Ctrl-C: ended early, with its report.
                Some(status) if matches!(status.code(), Some(1 | 130)) && reports[i].exists() => {}
                Some(status) => {
                    failed = Some((i, status));
                    break;
                }
            }
        }
        if let Some((i, status)) = failed {
            let mut said = String::new();
            if let Some(mut err) = children[i].stderr.take() {
                use std::io::Read;
                let _ = err.read_to_string(&mut said);
            }
            for other in children.iter_mut() {
                let _ = other.kill();
                let _ = other.wait();
            }
            bail!(
                "segment {i}/{} failed ({status}): {}",
                children.len(),
                said.lines().last().unwrap_or("no message")
            );
        }
        if !running {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
