//! The `techniques` experiment (Hu, Nanda & Yang, Figure 10): the cumulative ablation of the
//! server's techniques. The first step serves with every technique off (`--baseline`); each
//! next step turns one more on, in the paper's order, until all are on. Each step is its own
//! embedded server on the SPECweb96 set with host-name logging on (what the DNS cache saves)
//! and the access log written to a real file (what the asynchronous log saves), loaded by
//! keep-alive clients: the figure that matters is the server's CPU time per request.
//!
//! After Hu's seven (and the asynchronous log), today's techniques follow in the same
//! cumulative way: `busy-poll` (SO_BUSY_POLL; on loopback there is no NAPI to poll, so it should
//! change nothing there), then `io-uring` (the worker on one io_uring, `serve --io uring`: its
//! syscalls per request are `io_uring_enter`s). A step whose technique the kernel refuses
//! says so (the server then runs without it). Each step's server
//! is also traced for a moment after its timed run (`strace -c` while a short load runs: the
//! timed run itself is never traced) to give its syscalls per request, and with `--profile`
//! (the default) perf records where its kernel time went.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

use webscope_load::{Config, Mode, Target as LoadTarget};
use webscope_server::TECHNIQUES as NAMES;

use crate::measure::measure_with;
use crate::runner::{Ctx, Points, Run, Sweep};
use crate::target::Target;
use crate::Options;
use webscope_record::{RunRecord, Syscalls};

/// Keep-alive clients of every step: enough to keep one server core busy.
const CLIENTS: usize = 20;

/// Today's techniques, after the paper's: each step turns one more on.
pub const TODAY: [&str; 2] = ["busy-poll", "io-uring"];

/// Busy-poll budget of the busy-poll step, microseconds (a common production value).
const BUSY_POLL_US: u32 = 50;

/// Steps after the baseline.
fn steps() -> usize {
    NAMES.len() + TODAY.len()
}

/// The paper's techniques on at step `step` (0: none; from `NAMES.len()` on: all).
pub fn enabled(step: usize) -> &'static [&'static str] {
    &NAMES[..step.min(NAMES.len())]
}

/// The name of the technique step `step` turns on (None for the baseline).
fn technique(step: usize) -> Option<&'static str> {
    match step {
        0 => None,
        n if n <= NAMES.len() => Some(NAMES[n - 1]),
        n => TODAY.get(n - NAMES.len() - 1).copied(),
    }
}

/// The step's label: "baseline" or "+name".
pub fn label(step: usize) -> String {
    technique(step).map_or("baseline".into(), |name| format!("+{name}"))
}

/// `serve` flags for step `step`: the techniques not yet enabled are disabled.
fn flags(step: usize, log: &Path) -> Vec<String> {
    let off: Vec<&str> = NAMES[step.min(NAMES.len())..].to_vec();
    // Hu's steps on epoll, the engine they were measured on; io_uring is a step of its own.
    let io = if step > NAMES.len() + 1 {
        "uring"
    } else {
        "epoll"
    };
    let mut flags = vec![
        "--hostname-lookups".to_string(),
        "--access-log".to_string(),
        log.display().to_string(),
        "--io".to_string(),
        io.to_string(),
    ];
    if !off.is_empty() {
        flags.push("--disable".into());
        flags.push(off.join(","));
    }
    if step > NAMES.len() {
        flags.push("--busy-poll".into());
        flags.push(BUSY_POLL_US.to_string());
    }
    flags
}

/// Today's techniques on at step `step`, each with why the kernel refuses it (if it does).
fn today_on(step: usize) -> Vec<(&'static str, Option<String>)> {
    let mut on = Vec::new();
    if step > NAMES.len() {
        on.push(("busy-poll", busy_poll_refused()));
    }
    if step > NAMES.len() + 1 {
        on.push(("io-uring", webscope_server::uring_probe().err()));
    }
    on
}

/// Why the kernel refuses SO_BUSY_POLL from this process (the server runs as we do), if it does.
fn busy_poll_refused() -> Option<String> {
    webscope_load::busy_poll_probe(BUSY_POLL_US).err()
}

/// The experiment: one step per technique, each its own server.
pub struct Techniques;

impl Sweep for Techniques {
    const NAME: &'static str = "techniques";
    const FACTOR: &'static str = "techniques enabled (cumulative)";
    const NEEDS_EMBEDDED: bool = true;
    /// The step: 0 the baseline, then one more technique each.
    type Point = usize;

    fn points(_: &Options) -> Points<usize> {
        Points::Fixed((0..=steps()).collect())
    }

    fn start(_: &Ctx<'_>) -> anyhow::Result<Techniques> {
        Ok(Techniques)
    }

    fn name(&self, step: &usize) -> String {
        format!("step-{step}")
    }

    fn label(&self, run: &Run<'_, usize>) -> String {
        label(*run.point)
    }

    fn measure(&mut self, run: &Run<'_, usize>, ctx: &Ctx<'_>) -> anyhow::Result<RunRecord> {
        one_run(run.dir, ctx, *run.point)
    }
}

fn one_run(run_dir: &Path, ctx: &Ctx<'_>, step: usize) -> anyhow::Result<RunRecord> {
    // The log is written for real, then removed: its cost is measured, its bytes not kept.
    let log = run_dir.join("access.log");
    let mut target = Target::embedded(ctx.exe, ctx.fileset, 1, ctx.server_cpu, &flags(step, &log))?;
    let mut config = Config::new(LoadTarget::fileset(ctx.fileset, &target.base_url)?);
    config.connections = CLIENTS;
    config.threads = 1;
    config.duration = ctx.duration;
    config.mode = Mode::KeepAlive;
    config.timeout = Duration::from_secs(10);
    let measured = measure_with(
        run_dir,
        config,
        &target,
        ctx.interrupt,
        ctx.bar,
        &label(step),
        ctx.options.profile,
    );
    let syscalls = match &measured {
        Ok(_) if !ctx.interrupt.load(Ordering::Relaxed) => Some(trace(&target, ctx)),
        _ => None,
    };
    target.stop();
    let _ = std::fs::remove_file(&log);
    let measured = measured?;
    let mut on: Vec<&str> = enabled(step).to_vec();
    let mut note = String::new();
    for (name, refused) in today_on(step) {
        on.push(name);
        if let Some(why) = refused {
            note.push_str(&format!(" ({name} refused by the kernel: {why})"));
        }
    }
    let mut run = RunRecord::new(
        step as f64,
        format!(
            "{}: techniques on: {}{note}; SPECweb96 mix, {CLIENTS} keep-alive clients, host-name logging, access log to a file",
            label(step),
            if on.is_empty() { "none".to_string() } else { on.join(", ") }
        ),
        measured,
    );
    run.syscalls = syscalls;
    Ok(run)
}

/// Requests of the traced pass: enough for stable counts per request, few enough that the
/// pass (strace slows each syscall tenfold) stays short.
const TRACED_REQUESTS_S: Duration = Duration::from_millis(500);

/// Counts the server's syscalls per request with `strace -f -c` while 4 keep-alive clients
/// run on the same mix for half a second.
fn trace(target: &Target, ctx: &Ctx<'_>) -> Syscalls {
    let failed = |error: String| Syscalls {
        error: Some(error),
        ..Syscalls::default()
    };
    let Some(&pid) = target.pids.first() else {
        return failed("the server's process is unknown".into());
    };
    let out = match tempfile_path() {
        Ok(path) => path,
        Err(e) => return failed(format!("no temporary file for strace: {e}")),
    };
    let strace = std::process::Command::new("strace")
        .args(["-f", "-c", "-o"])
        .arg(&out)
        .args(["-p", &pid.to_string()])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    let mut strace = match strace {
        Ok(child) => child,
        Err(e) => {
            return failed(format!(
                "strace could not run ({e}): apt-get install strace"
            ))
        }
    };
    // strace attaches to each thread in turn.
    std::thread::sleep(Duration::from_millis(300));
    let result = (|| -> anyhow::Result<u64> {
        let mut config = Config::new(LoadTarget::fileset(ctx.fileset, &target.base_url)?);
        config.connections = 4;
        config.threads = 1;
        config.duration = TRACED_REQUESTS_S;
        config.mode = Mode::KeepAlive;
        let report = webscope_load::run(&config, ctx.interrupt, &mut |_| {})?;
        Ok(report.total.requests)
    })();
    std::thread::sleep(Duration::from_millis(100));
    // SAFETY: signalling the strace we started; it detaches and writes its table.
    unsafe { libc::kill(strace.id() as i32, libc::SIGINT) };
    let _ = strace.wait();
    let text = std::fs::read_to_string(&out).unwrap_or_default();
    let _ = std::fs::remove_file(&out);
    let requests = match result {
        Ok(n) if n > 0 => n,
        Ok(_) => return failed("no request completed while traced".into()),
        Err(e) => return failed(format!("the traced load failed: {e:#}")),
    };
    let per_request = parse_strace(&text)
        .into_iter()
        .map(|(name, calls)| (name, calls as f64 / requests as f64))
        .collect::<std::collections::BTreeMap<_, _>>();
    if per_request.is_empty() {
        return failed("strace counted nothing (ptrace refused?)".into());
    }
    Syscalls {
        requests,
        per_request,
        error: None,
    }
}

fn tempfile_path() -> std::io::Result<std::path::PathBuf> {
    let path = std::env::temp_dir().join(format!(
        "webscope-strace-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    // A name planted there (a symlink) is replaced, so strace writes a file of ours.
    webscope_sys::create_file(&path)?;
    Ok(path)
}

/// (syscall, calls) from `strace -c`'s table.
fn parse_strace(text: &str) -> Vec<(String, u64)> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() < 5 || fields[0].parse::<f64>().is_err() {
                return None;
            }
            let calls = fields[3].parse::<u64>().ok()?;
            let name = fields.last()?;
            (*name != "total").then(|| (name.to_string(), calls))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_enable_one_more_technique_each() {
        assert_eq!(label(0), "baseline");
        assert_eq!(label(1), "+dns-cache");
        assert_eq!(label(NAMES.len() + 1), "+busy-poll");
        assert!(enabled(0).is_empty());
        assert_eq!(enabled(NAMES.len()), NAMES);
        assert!(
            flags(NAMES.len() + 1, Path::new("/tmp/x.log")).contains(&"--busy-poll".to_string())
        );
        assert!(!flags(NAMES.len(), Path::new("/tmp/x.log")).contains(&"--busy-poll".to_string()));
        assert_eq!(label(NAMES.len() + 2), "+io-uring");
        let uring = flags(NAMES.len() + 2, Path::new("/tmp/x.log"));
        assert!(
            uring.windows(2).any(|w| w == ["--io", "uring"]),
            "{uring:?}"
        );
        assert!(
            uring.contains(&"--busy-poll".to_string()),
            "cumulative: {uring:?}"
        );
        let before = flags(NAMES.len() + 1, Path::new("/tmp/x.log"));
        assert!(
            before.windows(2).any(|w| w == ["--io", "epoll"]),
            "{before:?}"
        );
        let log = Path::new("/tmp/x.log");
        let first = flags(0, log);
        assert_eq!(
            first.last().map(String::as_str),
            Some(NAMES.join(",").as_str())
        );
        let second = flags(1, log);
        assert!(!second.last().unwrap().contains("dns-cache"));
        assert!(!flags(NAMES.len(), log).contains(&"--disable".to_string()));
    }
}

#[cfg(test)]
mod strace_tests {
    use super::parse_strace;

    #[test]
    fn strace_tables_are_read_by_name_without_the_total() {
        let text = "% time     seconds  usecs/call     calls    errors syscall\n\
------ ----------- ----------- --------- --------- ----------------\n\
 60.68    0.321851        4074        79         1 futex\n\
 30.54    0.161998          13     12021         2 writev\n\
  7.77    0.041218           3     12069        48 recvfrom\n\
------ ----------- ----------- --------- --------- ----------------\n\
100.00    0.530427          21     24169        51 total\n";
        let counts = parse_strace(text);
        assert_eq!(
            counts,
            vec![
                ("futex".to_string(), 79),
                ("writev".to_string(), 12021),
                ("recvfrom".to_string(), 12069)
            ]
        );
    }
}
