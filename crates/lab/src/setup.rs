//! The steps of a lab before its first run, each a function `session` calls in order: refuse
//! what cannot work before any work (experiments, protocols, `--out`, `--baseline`), the file
//! set (made once, cached), where server and generator run, the target, the preflight, and the
//! session's record (`lab.json`).
//!
//! Not for: running experiments (`runner`), nor what a run measures (`measure`).

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use webscope_workload::{Manifest, Spec, WriteOptions};

use crate::preflight;
use crate::target::{Find, Secure, Target};
use crate::{experiment, Experiment, Options, EXPERIMENTS, PLANNED};
use webscope_record::health::Expect;
use webscope_record::LabRecord;

/// The experiments `--experiment` names, in the order given; refuses what cannot work (unknown
/// names, protocols an experiment cannot speak, an `--out` or `--baseline` that would lose
/// something) before any work, in one line.
pub fn check(options: &Options) -> anyhow::Result<(Vec<&'static Experiment>, Expect)> {
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
    if options.experiments.iter().any(|e| e == "ab") {
        crate::ab::check(options)?;
    }
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
    Ok((chosen, expect))
}

/// Experiments that run over TLS and HTTP/2 when asked (protocols runs all protocols itself).
const SECURE_EXPERIMENTS: [&str; 6] = [
    "clients",
    "filesize",
    "model",
    "protocols",
    "capacity",
    "users",
];

/// Experiments that run over HTTP/3 when asked (the capacity search's open-loop probes as
/// over HTTP/2: a few QUIC connections of many streams; the users search's users a QUIC
/// connection each, issue 50): the same as over TLS and HTTP/2.
const HTTP3_EXPERIMENTS: [&str; 6] = SECURE_EXPERIMENTS;

/// `--tls`, `--http2` and `--http3` apply to some experiments only, `--tls` to the embedded
/// server only, `--http3` to an https `--target` only: anything else is refused before any
/// work, in one line.
fn check_protocol(options: &Options, chosen: &[&Experiment]) -> anyhow::Result<()> {
    if options.capacity.kubernetes.is_some() && options.target.is_none() {
        bail!("--kubernetes runs the probes from pods, which cannot reach the embedded server on this machine's loopback: give the --target they reach");
    }
    if options.capacity.segments > 1 || options.capacity.kubernetes.is_some() {
        if let Some(other) = chosen.iter().find(|e| e.name != "capacity") {
            bail!(
                "--segments and --kubernetes split the capacity experiment's probes; {} runs one generator: run it in a lab without them",
                other.name
            );
        }
    }
    if options.loss.is_some() {
        if let Some(other) = chosen.iter().find(|e| e.name != "protocols") {
            bail!(
                "--loss is the protocols experiment's loss comparison; {} does not run over a lossy link: give --experiment protocols",
                other.name
            );
        }
        if options.target.is_some() || options.http2 || options.http3 || options.embedded_tls {
            bail!("--loss runs its own servers over HTTP/2 and HTTP/3 in network namespaces: leave out --target, --tls, --http2 and --http3");
        }
        // Root and network namespaces, or one line now rather than a failed run later.
        webscope_lossylink::check()?;
    }
    if options.embedded_tls && options.target.is_some() {
        bail!("--tls is for the embedded server: an https:// --target is measured over TLS already (with --cacert or --insecure)");
    }
    if options.http3 {
        if let Some(url) = options
            .target
            .as_deref()
            .filter(|u| !u.starts_with("https://"))
        {
            bail!("--http3 speaks QUIC, which is always encrypted: give an https:// --target (its UDP port serving HTTP/3), not {url}");
        }
        if let Some(other) = chosen.iter().find(|e| !HTTP3_EXPERIMENTS.contains(&e.name)) {
            bail!(
                "--http3 applies to the {} experiments; {} does not run over HTTP/3 yet: run it in a lab without --http3",
                HTTP3_EXPERIMENTS.join(", "),
                other.name
            );
        }
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
pub fn prepare_out(out: &Path) -> anyhow::Result<()> {
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

/// `--fileset` (checked), or the SPECweb96 set of the lab's size, made once and cached.
pub fn fileset(options: &Options, interrupt: &AtomicBool) -> anyhow::Result<PathBuf> {
    match &options.fileset {
        Some(dir) => {
            Manifest::load(dir).with_context(|| {
                format!(
                    "--fileset {} is not a file set (make one with webscope fileset)",
                    dir.display()
                )
            })?;
            Ok(dir.clone())
        }
        None => cached_fileset(
            &options.work,
            if options.quick { 1.0 } else { 5.0 },
            interrupt,
            options.quiet,
        ),
    }
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

/// Where server and generator run.
pub struct Placement {
    /// CPUs this machine offers the lab.
    pub cores: usize,
    /// The CPU the embedded servers are pinned to.
    pub server_cpu: Option<usize>,
    /// The CPU the generator (this process) is pinned to.
    pub load_cpu: Option<usize>,
    /// Said in the report's set-up.
    pub text: String,
}

/// Server on CPU 0 and generator on CPU 1 when there are two; a warning in `warnings` when
/// there is one.
pub fn placement(options: &Options, warnings: &mut Vec<String>) -> Placement {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let (server_cpu, load_cpu) = if cores >= 2 {
        (Some(0), Some(1))
    } else {
        (None, None)
    };
    let text = match (server_cpu, load_cpu) {
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
    Placement {
        cores,
        server_cpu,
        load_cpu,
        text,
    }
}

/// The lab's certificate, when the embedded server speaks TLS or HTTP/2.
pub fn secure(options: &Options) -> anyhow::Result<Option<Secure>> {
    if options.target.is_none() && (options.embedded_tls || options.http2 || options.http3) {
        let mut secure = Secure::make(&options.work, options.http2)?;
        // The embedded server serves HTTP/3 beside HTTPS (`serve --http3`), and runs speak it.
        secure.http3 = options.http3;
        Ok(Some(secure))
    } else {
        Ok(None)
    }
}

/// The server measured: `--target` (its processes found as asked), or the embedded server on
/// the file set; what cannot be seen of it goes to `warnings`.
pub fn target(
    options: &Options,
    exe: &Path,
    fileset: &Path,
    server_cpu: Option<usize>,
    secure: Option<&Secure>,
    warnings: &mut Vec<String>,
) -> anyhow::Result<Target> {
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
        None => Target::embedded_over(exe, fileset, 1, server_cpu, &[], secure)?,
    };
    target.http2 |= options.http2;
    if options.http2 {
        warnings.push("HTTP/2 (--http2): each client is one connection with one stream, kept alive (HTTP/2 has no connection per request); a capacity probe opens 4 connections of 100 streams.".into());
    }
    target.http3 |= options.http3;
    if options.http3 {
        warnings.push("HTTP/3 (--http3): each client is one QUIC connection with one stream, kept alive, as over HTTP/2; a capacity probe opens 4 QUIC connections of 100 streams.".into());
    }
    Ok(target)
}

/// The preflight's line for the report; before anything is written, a dead or misconfigured
/// target is one line and exit 1.
pub fn preflight(
    options: &Options,
    target: &Target,
    fileset: &Path,
    expect: &Expect,
) -> anyhow::Result<String> {
    if options.no_preflight {
        return Ok("Preflight skipped (--no-preflight).".to_string());
    }
    let checked = preflight::check(&target.base_url, fileset, expect, &target.tls, target.http3)?;
    Ok(format!(
        "Preflight: {} files of the set fetched{}, sizes as the manifest says, {} compared byte for byte.",
        checked.files,
        if target.http3 { " over HTTP/3" } else { "" },
        checked.compared
    ))
}

/// Reads the file set once, so that the first runs do not measure the disk: a server whose
/// files are not in the page cache blocks its worker on reads (a 280-ms stall in the first
/// capacity probe on the embedded default, 100-KB-1-MB files at 52 ms each), and every later
/// run finds them cached; the papers measured warm caches. Only for a server on this machine,
/// only a set that fits in half the memory available and was not copied to miss the caches,
/// and only what is read in 30 s at most.
/// Returns what was done, for the report's set-up.
pub fn warm_page_cache(target: &Target, fileset: &Path) -> String {
    const MOST: std::time::Duration = std::time::Duration::from_secs(30);
    if !target.is_local() {
        return "The file set was not read ahead: the server is on another host (its page cache is its own).".into();
    }
    let Ok(manifest) = webscope_workload::Manifest::load(fileset) else {
        return "The file set was not read ahead: its manifest cannot be read.".into();
    };
    if manifest.copies > 1 {
        return format!(
            "The file set was not read ahead: it is {} copies of its base set, made to miss the caches.",
            manifest.copies
        );
    }
    let available = memory_available().unwrap_or(0);
    if manifest.total_bytes.saturating_mul(2) > available {
        return format!(
            "The file set ({}) was not read ahead: it is larger than half the memory available ({}), so the runs read part of it from disk, as a server of such a set does.",
            webscope_report::human::bytes(manifest.total_bytes as f64),
            webscope_report::human::bytes(available as f64)
        );
    }
    let began = std::time::Instant::now();
    let mut read = 0u64;
    let mut buf = vec![0u8; 1 << 20];
    for file in &manifest.files {
        if began.elapsed() > MOST {
            break;
        }
        let Ok(mut f) = std::fs::File::open(fileset.join(&file.path)) else {
            continue;
        };
        while let Ok(n) = std::io::Read::read(&mut f, &mut buf) {
            if n == 0 {
                break;
            }
            read += n as u64;
        }
    }
    format!(
        "The file set was read once before the runs ({} in {:.1} s), so that they find it in the page cache, as the papers' warm runs did.",
        webscope_report::human::bytes(read as f64),
        began.elapsed().as_secs_f64()
    )
}

/// MemAvailable from /proc/meminfo, bytes.
fn memory_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The session's record as it starts: what runs against what, where, and what was said.
pub fn lab_record(
    options: &Options,
    target: &Target,
    secure: Option<&Secure>,
    placement: Placement,
    warnings: Vec<String>,
    preflight: String,
) -> LabRecord {
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
    let mut warnings = warnings;
    if !options.server_metrics.is_empty() {
        warnings.push(format!("The server's machine is seen through node_exporter at {}: its CPU, TCP and disk figures come from there (the busiest host where there are several); the generator's machine from this one's /proc.", options.server_metrics.join(", ")));
    }
    LabRecord {
        command: options.command.clone(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        target: match &options.target {
            Some(url) => url.clone(),
            None => format!(
                "webscope serve (embedded{}) at {}",
                match (secure, options.http2, options.http3) {
                    (Some(_), true, _) => ", HTTP/2 over TLS",
                    (Some(_), _, true) => ", HTTP/3 over QUIC",
                    (Some(_), false, false) => ", HTTPS",
                    _ => "",
                },
                target.base_url
            ),
        },
        machine: machine(placement.cores),
        placement: placement.text,
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
    }
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

/// The bar over all runs: the experiment, the run, the time spent and the time left (indicatif
/// draws on stderr only when it is a terminal; `--quiet` hides it).
pub fn bar(runs: u64, quiet: bool) -> ProgressBar {
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
