//! What the lab writes to disk, and reads back to render a report: `lab.json` at the top of
//! the report directory, `experiment.json` in each experiment's directory, `run.json` in each
//! run's. Reports read only these files, so any result can be re-rendered later, elsewhere.
//! Beside them, [`health`]: whether a run measured what it claims, which every reader of a run
//! (the lab's verdicts, `compare`, the pages) applies alike.
//!
//! Not for: what the experiments decided (their searches' endings, `webscope_lab::results`),
//! nor measuring or drawing: the lab writes these files and the pages read them.

#![deny(missing_docs)]

pub mod health;
pub mod laws;

use std::path::Path;

use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::health::Judge;

/// The whole lab session.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LabRecord {
    /// The command line that ran it.
    pub command: String,
    /// webscope's version.
    pub version: String,
    /// What was measured: "webscope serve (embedded)" or the target URL.
    pub target: String,
    /// The machine: cores, kernel.
    pub machine: String,
    /// How server and generator were placed on CPUs.
    pub placement: String,
    /// Start, seconds since the Unix epoch.
    pub started_unix_s: f64,
    /// The experiments' directory names, in order.
    pub experiments: Vec<String>,
    /// Stopped by Ctrl-C or a failure before the end.
    pub interrupted: bool,
    /// What the lab could not do or show, said plainly.
    pub warnings: Vec<String>,
    /// How runs are judged valid (expected statuses, error threshold).
    #[serde(default)]
    pub judge: Judge,
    /// The server's processes, as found (by --server-pid, by the listening port, or the
    /// embedded server), and how: said in the report.
    #[serde(default)]
    pub server_processes: String,
    /// What the preflight checked before the sweep.
    #[serde(default)]
    pub preflight: String,
    /// `--baseline`: a stored lab report the report compares itself with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
}

/// One experiment: runs that vary one factor.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExperimentRecord {
    /// The experiment's name (`clients`, ...).
    pub name: String,
    /// The factor varied, with unit (e.g. "clients").
    pub factor: String,
    /// The runs' directory names, in order.
    pub runs: Vec<String>,
    /// All planned runs were done.
    pub complete: bool,
    /// What went wrong, if something did.
    pub failures: Vec<String>,
    /// What the experiment does not do in this set-up, said rather than failed (e.g. a run
    /// that needs the embedded server, against `--target`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
    /// Why each round's search stopped, for an experiment that chooses its points as it goes
    /// (absent for the others, and in records written before it existed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stopped: Vec<String>,
}

impl ExperimentRecord {
    /// The record of an experiment that has not run yet.
    pub fn new(name: &str, factor: &str) -> ExperimentRecord {
        ExperimentRecord {
            name: name.into(),
            factor: factor.into(),
            runs: Vec::new(),
            complete: false,
            failures: Vec::new(),
            skipped: Vec::new(),
            stopped: Vec::new(),
        }
    }
}

/// One run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRecord {
    /// The factor's value.
    pub x: f64,
    /// How the load was applied (e.g. "closed loop, close, 10 clients").
    pub load_description: String,
    /// `webscope load`'s report, whole: a typed view, every field defaulted when missing, so
    /// that a run stored by an earlier version reads as it was written.
    pub load: webscope_load::Report,
    /// Server-side figures over the run (deltas from the admin endpoint), if available.
    pub server: Option<ServerFigures>,
    /// OS figures over the run, if sampled: the lab's own machine (procfs).
    pub os: Option<Sampled>,
    /// The server's machines through node_exporter (`--server-metrics`), one summary each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_os: Vec<Sampled>,
    /// The limits the run's verdict compares against, read when it ran.
    #[serde(default)]
    pub env: RunEnv,
    /// The server's syscalls per request in a short traced pass after the run (the
    /// techniques experiment); None when not traced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub syscalls: Option<Syscalls>,
}

/// What `strace -c` counted on the server while a short load ran after the timed run (the
/// timed run itself is never traced: strace slows every syscall).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Syscalls {
    /// Requests the load made while the server was traced.
    pub requests: u64,
    /// Calls per request, by syscall name.
    pub per_request: std::collections::BTreeMap<String, f64>,
    /// Why there are no counts (strace missing or refused), when there are none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Facts about the machines and the server that a verdict compares measurements against,
/// read at run time so that a re-rendered report judges the same way.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunEnv {
    /// CPUs the server's processes may run on (the union of their affinities).
    #[serde(default)]
    pub server_cpus: Option<f64>,
    /// The server's processes measured: "pid comm" each.
    #[serde(default)]
    pub server_processes: Vec<String>,
    /// Size of the generator host's ephemeral port range.
    #[serde(default)]
    pub port_range: Option<f64>,
    /// The generator host's `net.ipv4.tcp_max_tw_buckets`.
    #[serde(default)]
    pub tw_buckets: Option<f64>,
    /// Line rates of the interfaces that report one, Mbit/s.
    #[serde(default)]
    pub link_mbit: std::collections::BTreeMap<String, f64>,
    /// Why the lab did not ask the monitor for its kernel module (the accept-queue wait):
    /// `--no-kernel`, or a build without it. Absent when it asked (a module that then could
    /// not load says why in the monitor's summary, `kernel_error`), and in runs stored before
    /// it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_kernel: Option<String>,
}

/// What one measured run produced, before it is written as a [`RunRecord`].
pub struct Measured {
    /// The load report.
    pub load: webscope_load::Report,
    /// The server's own figures (admin endpoint, process CPU).
    pub server: Option<ServerFigures>,
    /// The local monitor's summary.
    pub os: Option<Sampled>,
    /// The remote monitors' summaries (node_exporter), one per `--server-metrics`.
    pub server_os: Vec<Sampled>,
    /// Limits read at run time.
    pub env: RunEnv,
}

impl RunRecord {
    /// The record of a measured run at factor value `x`.
    pub fn new(x: f64, load_description: String, m: Measured) -> RunRecord {
        let mut load = m.load;
        // What is rendered from a run must be what a re-render reads back from its run.json,
        // which carries no histogram.
        load.latency_histogram = None;
        RunRecord {
            x,
            load_description,
            load,
            server: m.server,
            os: m.os,
            server_os: m.server_os,
            env: m.env,
            syscalls: None,
        }
    }
}

/// A load report from test JSON: every field the JSON lacks at its default.
#[cfg(any(test, feature = "fixtures"))]
pub fn load_json(value: serde_json::Value) -> webscope_load::Report {
    serde_json::from_value(value).expect("a load report")
}

impl RunRecord {
    /// This machine's monitor summary of the run, when it sampled one.
    pub fn local_os(&self) -> Option<&webscope_monitor::Summary> {
        self.os.as_ref().and_then(Sampled::summary)
    }

    /// The requests the server answered in the run: its own count where it gives one (the
    /// embedded server's admin endpoint), else the complete responses the generator got (nginx,
    /// Apache, any target).
    pub fn server_requests(&self) -> f64 {
        match &self.server {
            Some(s) if s.requests > 0.0 => s.requests,
            _ => self.load.outcomes().responses() as f64,
        }
    }

    /// The server's CPU microseconds per request it answered ([`RunRecord::server_requests`]);
    /// None when its CPU was not measured or it answered nothing. The one definition the lab's
    /// pages, the capacity law and `compare` read.
    pub fn server_cpu_us_per_request(&self) -> Option<f64> {
        let server = self.server.as_ref().filter(|s| s.cpu_s > 0.0)?;
        let requests = self.server_requests();
        (requests > 0.0).then(|| server.cpu_s * 1e6 / requests)
    }
}

/// A monitor's summary of one run, or why it has none: run.json's `os` and each of its
/// `server_os`, `{"error": "..."}` when the monitor failed.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Sampled {
    /// The monitor failed: its error, one line. First, so that an `error` object never
    /// reads as a summary whose every field is defaulted.
    Failed {
        /// What went wrong.
        error: String,
    },
    /// What it sampled.
    Summary(Box<webscope_monitor::Summary>),
}

impl Sampled {
    /// The summary, unless the monitor failed.
    pub fn summary(&self) -> Option<&webscope_monitor::Summary> {
        match self {
            Sampled::Summary(s) => Some(s),
            Sampled::Failed { .. } => None,
        }
    }
}

/// What the server said about one run (differences of its counters before and after).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ServerFigures {
    /// Requests the server answered.
    pub requests: f64,
    /// Mean time per request, first byte to sent, microseconds.
    pub response_us: f64,
    /// Mean parse / process / log time per request, microseconds, by size class.
    pub phases_us: Vec<PhaseFigures>,
    /// Server CPU seconds (user + system) over the run.
    pub cpu_s: f64,
    /// CPU cores the server kept busy on average (cpu_s / duration).
    pub busy_cores: f64,
    /// Per dynamic service (with `serve --services`): what the middleware measured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub services: Vec<ServiceFigures>,
}

/// One service over a run, as its executor measured it (Hibino et al.'s Table 1, inside the
/// middleware).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ServiceFigures {
    /// `light`, `middle`, `heavy`, ...
    pub service: String,
    /// Requests completed.
    pub completed: f64,
    /// Requests refused with 503.
    pub refused: f64,
    /// CPU time spent running it, seconds.
    pub cpu_s: f64,
    /// Mean time from arrival to the first run, milliseconds.
    pub wait_ms: f64,
    /// Mean time running (all slices), milliseconds.
    pub running_ms: f64,
    /// Mean slices per completed request (1 when the policy does not slice).
    #[serde(default)]
    pub slices: f64,
}

/// The server's phase means for one size class.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PhaseFigures {
    /// The class (e.g. "1-10KB").
    pub class: String,
    /// Requests of the class.
    pub requests: f64,
    /// Mean parse time, microseconds.
    pub parse_us: f64,
    /// Mean process time, microseconds.
    pub process_us: f64,
    /// Mean log time, microseconds.
    pub log_us: f64,
}

/// Writes `value` as pretty JSON to `path`.
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(value)?;
    webscope_sys::write_file(path, (text + "\n").as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Reads JSON from `path`.
pub fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> anyhow::Result<T> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_str(&text)
        .with_context(|| format!("{} is not a webscope record", path.display()))
}

#[cfg(test)]
mod tests {
    use super::Sampled;
    use serde_json::json;

    /// A failed monitor's `{"error": ...}` reads as the failure, never as an empty summary;
    /// a summary reads typed, the fields an older one lacks at their defaults; both write
    /// back as they were.
    #[test]
    fn a_runs_monitor_summary_reads_typed_or_as_its_error() {
        let failed: Sampled = serde_json::from_value(json!({"error": "perf: not permitted"}))
            .expect("an error reads");
        assert!(failed.summary().is_none());
        assert_eq!(
            serde_json::to_value(&failed).unwrap(),
            json!({"error": "perf: not permitted"})
        );
        let old: Sampled = serde_json::from_value(json!({
            "ports": [8080],
            "groups": {"cpu": {"rows": {"all": {"busy_pct":
                {"mean": 40.0, "min": 10.0, "max": 90.0, "last": 30.0, "n": 20}}}}},
        }))
        .expect("a summary reads");
        let os = old.summary().expect("a summary");
        assert_eq!(os.ports, [8080]);
        assert_eq!(os.mean("cpu", "all", "busy_pct"), Some(40.0));
        assert_eq!(os.max("cpu", "all", "busy_pct"), Some(90.0));
        assert_eq!(os.mean("cpu", "all", "user_pct"), None);
        assert_eq!(os.source, "procfs");
        assert!(os.kernel.is_none());
        let again: Sampled = serde_json::from_value(serde_json::to_value(&old).unwrap()).unwrap();
        assert_eq!(
            again.summary().map(|s| s.busiest("cpu", "busy_pct")),
            Some(Some(40.0))
        );
    }
}
