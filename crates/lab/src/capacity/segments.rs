//! A probe beyond one generator (issue #25 §3): its open loop run as N `webscope load
//! --segment I/N` processes started together (`--start-at`, a moment ahead so that all are
//! ready), each offering its share of the rate, and their reports and interval logs added
//! exactly by `webscope_load::merge` — the same steps a user takes across hosts, and the ones
//! `webscope distribute --kubernetes N` writes into a Job. Locally the processes run on every
//! CPU but the embedded server's.
//!
//! The same segments as the pods of an Indexed Job are the `kubernetes` module's, on this
//! module's [`Plan`] and its load flags (`load_args`).
//!
//! Not for: choosing the probes (the search) nor judging them (`probe`); TLS, whose settings
//! the lab holds in memory rather than as flags a process could be given.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context};
use webscope_load::{Arrivals, Config, Mode, Pacing, Part, Report};

/// How far ahead of now the segments are told to start: time for N processes to start, read
/// the file set and open their first connections.
const START_AHEAD: Duration = Duration::from_millis(500);

/// What the processes need beside the probe's load config.
pub struct Plan<'a> {
    pub segments: usize,
    /// The `webscope` binary.
    pub exe: &'a Path,
    pub fileset: &'a Path,
    pub base_url: &'a str,
    /// The embedded server's CPU, which the generators keep off.
    pub server_cpu: Option<usize>,
}

/// Runs `config` as `plan.segments` processes and merges them; the merged interval log goes
/// to `config.hlog`. Ctrl-C (`interrupt`) is passed on to the processes, which end early and
/// report what they measured.
pub fn run(config: &Config, plan: &Plan<'_>, interrupt: &AtomicBool) -> anyhow::Result<Report> {
    let dir = config
        .hlog
        .as_deref()
        .and_then(Path::parent)
        .context("a segmented probe needs its run folder")?;
    let start_at = SystemTime::now() + START_AHEAD;
    let mut children = Vec::new();
    for i in 0..plan.segments {
        let (json, hlog) = files(dir, i);
        let child = Command::new(plan.exe)
            .args(args(config, plan, i, start_at)?)
            .arg("--json")
            .arg(&json)
            .arg("--hlog")
            .arg(&hlog)
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

/// The `webscope load` flags of segment `i`: the probe's load as the lab built it.
fn args(
    config: &Config,
    plan: &Plan<'_>,
    i: usize,
    start_at: SystemTime,
) -> anyhow::Result<Vec<String>> {
    let start = start_at
        .duration_since(UNIX_EPOCH)
        .context("the clock is before 1970")?
        .as_secs_f64();
    let mut args = vec!["load".to_string()];
    args.extend(load_args(config, plan)?);
    args.extend([
        "--segment".into(),
        format!("{i}/{}", plan.segments),
        "--start-at".into(),
        format!("{start:.3}"),
        "-q".into(),
    ]);
    Ok(args)
}

/// The probe's load as `webscope load` flags, the same for every segment (the whole run's
/// rate and connections: each segment takes its share).
pub(super) fn load_args(config: &Config, plan: &Plan<'_>) -> anyhow::Result<Vec<String>> {
    let Pacing::Open {
        rate,
        arrivals,
        max_connections,
    } = config.pacing
    else {
        bail!("segments are for open-loop probes");
    };
    let ms = |d: Duration| format!("{}ms", d.as_millis().max(1));
    let mut args: Vec<String> = vec![
        "--fileset".into(),
        plan.fileset.display().to_string(),
        "--base".into(),
        plan.base_url.into(),
        "--rate".into(),
        format!("{rate}"),
        "--arrivals".into(),
        match arrivals {
            Arrivals::Constant => "constant".into(),
            Arrivals::Poisson => "poisson".into(),
        },
        "--max-connections".into(),
        max_connections.to_string(),
        "-c".into(),
        // Each segment's thread needs a connection of its own to start with.
        config.connections.max(plan.segments).to_string(),
        "-t".into(),
        "1".into(),
        "-d".into(),
        ms(config.duration),
        "--timeout".into(),
        ms(config.timeout),
        "--interval".into(),
        ms(config.interval),
        "--seed".into(),
        config.seed.to_string(),
    ];
    if config.mode == Mode::Close {
        args.push("--close".into());
    }
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
