//! A probe's segments as a Kubernetes Job (issue #25 §3): the steps the `webscope distribute`
//! help gives a user, taken by the lab for each probe —
//!
//! ```text
//! webscope distribute --kubernetes N --apply --format json --name webscope-PROBE -- --config load-config.json
//! kubectl get job webscope-PROBE -o json        (until every pod succeeded or failed)
//! kubectl logs -l job-name=webscope-PROBE --prefix --tail=-1 > pods.log
//! webscope merge merged/ pods.log          (the pods' `--emit` results, added exactly)
//! kubectl delete job webscope-PROBE
//! ```
//!
//! Each step is the command a user would run (the lab's own binary for `distribute` and
//! `merge`, `kubectl` from PATH), so what the lab does is what the README documents, and a
//! test can play the cluster with a `kubectl` of its own.
//!
//! The probe's config file (the `segments` module's, in the run folder) goes into the Job
//! whole: `distribute` writes its JSON into the pods' arguments.
//!
//! Not for: writing the Job (that is `distribute`'s) nor merging (`merge`'s).

use std::path::Path;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{bail, Context};
use webscope_load::{Config, Report};

use super::segments::{write_config, SegmentPlan};

/// Time beyond the start margin and the probe for the pods to end and report.
const END_MARGIN: Duration = Duration::from_secs(60);

/// The pods a probe's segments run in.
#[derive(Debug, Clone)]
pub struct Pods {
    /// The container image with webscope in it.
    pub image: String,
    /// Time from writing the Job to its pods' common start: scheduling and the image's pull.
    pub start_margin: Duration,
}

/// Runs `config` as a Job of `plan.segments` pods, its files in the run folder (where
/// `config.hlog` goes).
pub fn run(
    config: &Config,
    plan: &SegmentPlan<'_>,
    pods: &Pods,
    interrupt: &AtomicBool,
) -> anyhow::Result<Report> {
    let dir = config
        .hlog
        .as_deref()
        .and_then(Path::parent)
        .context("a probe's Job needs its run folder")?;
    let name = job_name(dir);
    let n = plan.segments.to_string();
    let image = pods.image.as_str();
    let margin = format!("{}ms", pods.start_margin.as_millis());
    let mut distribute = Command::new(plan.exe);
    distribute
        .args([
            "distribute",
            "--kubernetes",
            &n,
            "--image",
            image,
            "--name",
            &name,
        ])
        .args([
            "--format",
            "json",
            "--start-margin",
            &margin,
            "--apply",
            "--",
            "--config",
        ])
        .arg(write_config(config, plan.segments, dir)?);
    checked(distribute.output(), "webscope distribute --apply")?;
    let result = collect(config, plan, pods, &name, dir, interrupt);
    // The Job's pods are done or failed either way; a Job left behind would hold its name.
    let _ = Command::new("kubectl")
        .args(["delete", "job", &name, "--wait=false"])
        .output();
    result
}

/// Waits for the Job, takes its pods' logs and merges their results.
fn collect(
    config: &Config,
    plan: &SegmentPlan<'_>,
    pods: &Pods,
    name: &str,
    dir: &Path,
    interrupt: &AtomicBool,
) -> anyhow::Result<Report> {
    let timeout = pods.start_margin + config.duration + END_MARGIN;
    let ended = wait_for_pods(name, plan.segments, timeout, interrupt)?;
    let logs = checked(
        Command::new("kubectl")
            .args([
                "logs",
                "-l",
                &format!("job-name={name}"),
                "--prefix",
                "--tail=-1",
            ])
            .arg(format!("--max-log-requests={}", plan.segments.max(5)))
            .output(),
        "kubectl logs",
    )?;
    let pods_log = dir.join("pods.log");
    webscope_sys::write_file(&pods_log, &logs.stdout)
        .with_context(|| format!("cannot write {}", pods_log.display()))?;
    let merged = dir.join("merged");
    // A pod that exited 1 (no request of its segment succeeded) has still emitted its
    // result: the merge counts it, and the objective judges the probe. Only results that are
    // missing make the probe an error.
    checked(
        Command::new(plan.exe)
            .arg("merge")
            .arg(&merged)
            .arg(&pods_log)
            .output(),
        "webscope merge",
    )
    .with_context(|| format!("the Job's pods ended {ended}"))?;
    let json = merged.join("load.json");
    let report: Report = serde_json::from_slice(
        &std::fs::read(&json).with_context(|| format!("{}", json.display()))?,
    )
    .with_context(|| format!("{}", json.display()))?;
    if let Some(hlog) = &config.hlog {
        let copied = std::fs::read(merged.join("load.hlog"))
            .and_then(|bytes| webscope_sys::write_file(hlog, &bytes));
        copied.with_context(|| format!("cannot write {}", hlog.display()))?;
    }
    Ok(report)
}

/// Polls the Job's status (`kubectl get job -o json`) until all its pods ended, succeeded or
/// failed — `kubectl wait` waits for one condition only, and a Job whose pod failed never
/// completes. Returns how they ended, for messages.
fn wait_for_pods(
    name: &str,
    pods: usize,
    timeout: Duration,
    interrupt: &AtomicBool,
) -> anyhow::Result<String> {
    let began = std::time::Instant::now();
    loop {
        if interrupt.load(Ordering::Relaxed) {
            bail!("stopped by Ctrl-C while the Job {name} ran (deleted)");
        }
        let out = checked(
            Command::new("kubectl")
                .args(["get", "job", name, "-o", "json"])
                .output(),
            &format!("kubectl get job {name}"),
        )?;
        let job: serde_json::Value = serde_json::from_slice(&out.stdout)
            .with_context(|| format!("kubectl get job {name}: not JSON"))?;
        let count = |key: &str| job["status"][key].as_u64().unwrap_or(0) as usize;
        let (succeeded, failed) = (count("succeeded"), count("failed"));
        if succeeded + failed >= pods {
            return Ok(format!("{succeeded} succeeded, {failed} failed"));
        }
        if began.elapsed() > timeout {
            bail!(
                "the Job {name} did not end within {}s ({succeeded} of {pods} pods succeeded, {failed} failed)",
                timeout.as_secs()
            );
        }
        std::thread::sleep(POLL);
    }
}

/// How often the Job's status is asked for.
const POLL: Duration = Duration::from_millis(250);

/// The Job's name: the probe's folder (`probe-03-1500rps`), a valid DNS label.
fn job_name(dir: &Path) -> String {
    let probe = dir
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let clean: String = probe
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    format!("webscope-{}", clean.trim_matches('-'))
        .chars()
        .take(63)
        .collect()
}

/// The output of a step that must succeed, or an error with its last line.
fn checked(output: std::io::Result<Output>, step: &str) -> anyhow::Result<Output> {
    let output = output.with_context(|| format!("cannot run {step}"))?;
    if !output.status.success() {
        let why = String::from_utf8_lossy(&output.stderr);
        bail!(
            "{step} failed ({}): {}",
            output.status,
            why.lines().last().unwrap_or("no message")
        );
    }
    Ok(output)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_are_named_after_their_probe_as_a_dns_label() {
        assert_eq!(
            job_name(Path::new("/r/capacity/probe-03-1500rps")),
            "webscope-probe-03-1500rps"
        );
        assert_eq!(job_name(Path::new("/r/Probe_1.5")), "webscope-probe-1-5");
        assert!(job_name(Path::new(&"x".repeat(100))).len() <= 63);
    }
}
