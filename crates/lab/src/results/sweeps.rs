//! The sweeps' entries in report.json (clients, saturation, filesize, model, techniques,
//! protocols) and the runs a sweep lists: typed, so that their keys are spelt once and what
//! a page wrote reads back. The pages (`webscope_pages`) fill them; nothing here decides or
//! draws. Units are in the field names, as the keys have always had them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::bottleneck::Bound;

/// One run of a sweep (report.json's `runs`): the figures of the page's table, unrounded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepRun {
    /// The run's x under the name the sweep varies (`clients`, `files`, ...): one key.
    #[serde(flatten)]
    pub x: BTreeMap<String, f64>,
    /// Responses with an expected status, per second.
    pub goodput_per_s: f64,
    /// Every response, per second.
    pub responses_per_s: f64,
    /// Bytes received, Mbit/s.
    pub mbit_s: f64,
    /// Median latency, ms.
    pub p50_ms: f64,
    /// 99th-percentile latency, ms.
    pub p99_ms: f64,
    /// Server CPU time per request, ms (none without the server's figures).
    pub server_ms: Option<f64>,
    /// Unexpected responses and failures over attempts.
    pub error_share: f64,
    /// Unexpected statuses and how many of each.
    pub errors: BTreeMap<String, u64>,
    /// Whether the run is valid.
    pub valid: bool,
    /// Why it is not.
    pub invalid_because: Option<String>,
    /// What bounds it (valid runs only).
    pub bound: Option<Bound>,
    /// Its verdict in words (valid runs only).
    pub verdict: Option<String>,
    /// The run's directory name.
    pub run: String,
    /// Valid runs behind it (`--repeat`).
    pub repeats: usize,
    /// Lowest goodput of the repeats, when there were several.
    pub goodput_min: Option<f64>,
    /// Highest goodput of the repeats.
    pub goodput_max: Option<f64>,
    /// The accept-queue wait and connection lifetimes, where the kernel module measured them
    /// (absent otherwise, so a lab without it keeps its report.json).
    #[serde(flatten)]
    pub kernel: KernelFigures,
}

/// A run's figures from the monitor's kernel module, each absent where not measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KernelFigures {
    /// Median wait in the accept queue, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accept_wait_p50_ms: Option<f64>,
    /// 99th-percentile wait in the accept queue, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accept_wait_p99_ms: Option<f64>,
    /// Accept-queue wait per request, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accept_wait_per_request_ms: Option<f64>,
    /// Connections whose lifetime was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifetimes: Option<u64>,
    /// Median connection lifetime, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifetime_p50_ms: Option<f64>,
    /// 99th-percentile connection lifetime, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifetime_p99_ms: Option<f64>,
    /// Connections the server closed into TIME_WAIT.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_wait_entered: Option<u64>,
}

/// `report.json`'s `clients`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientsEntry {
    /// Clients at the knee.
    pub knee_clients: Option<f64>,
    /// The highest goodput, requests/s.
    pub max_requests_per_s: Option<f64>,
    /// The sweep in words.
    pub reading: Option<String>,
    /// The Universal Scalability Law fitted to the runs.
    pub usl: Option<UslEntry>,
    /// Every run.
    pub runs: Vec<SweepRun>,
}

/// The USL's fit as report.json keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UslEntry {
    /// Contention.
    pub sigma: f64,
    /// Coherency.
    pub kappa: f64,
    /// Throughput of one client, requests/s.
    pub lambda: f64,
    /// The fit's R².
    pub r_squared: f64,
    /// Clients at the peak (none when κ is 0).
    pub n_peak: Option<f64>,
    /// Throughput at the peak, requests/s.
    pub x_peak: Option<f64>,
}

/// `report.json`'s `saturation`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SaturationEntry {
    /// Clients after which the mean response time doubles with them.
    pub knee_clients: Option<usize>,
    /// Why the doubling stopped, in words.
    pub stopped_because: String,
    /// The sweep in words.
    pub reading: String,
}

/// `report.json`'s `filesize`: the line fitted to mean response time against file size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FilesizeEntry {
    /// The line's intercept: a connection's fixed cost, ms.
    pub fixed_cost_ms: f64,
    /// Its slope, ms per KB.
    pub per_kb_ms: f64,
}

/// `report.json`'s `model`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelEntry {
    /// The service demands, seconds per request.
    pub demands_s: ServiceDemands,
    /// MVA's mean throughput error, per cent.
    pub mva_throughput_error_pct_mean: f64,
    /// MVA's mean response-time error, per cent.
    pub mva_response_time_error_pct_mean: f64,
    /// The USL's mean throughput error, per cent (none without a fit).
    pub usl_throughput_error_pct_mean: Option<f64>,
    /// The model's ceiling on 1, 2 and 4 CPUs, requests/s.
    pub ceiling_requests_per_s: Ceilings,
    /// The model in words.
    pub reading: String,
}

/// Service demands, seconds per request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServiceDemands {
    /// The server's CPU.
    pub server_cpu: f64,
    /// The load generator.
    pub generator: f64,
    /// The disk.
    pub disk: f64,
    /// Pure delay.
    pub delay: f64,
}

/// A ceiling per number of CPUs, keyed by that number as report.json has it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ceilings {
    /// On one CPU.
    #[serde(rename = "1")]
    pub one: f64,
    /// On two.
    #[serde(rename = "2")]
    pub two: f64,
    /// On four.
    #[serde(rename = "4")]
    pub four: f64,
}

/// `report.json`'s `techniques`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TechniquesEntry {
    /// The steps in words.
    pub reading: String,
    /// Each step, cumulative.
    pub steps: Vec<TechniqueStep>,
}

/// One technique step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TechniqueStep {
    /// The step's label.
    pub step: String,
    /// Goodput, requests/s.
    pub requests_per_s: f64,
    /// Server CPU time per request, µs.
    pub cpu_us_per_request: Option<f64>,
    /// 99th-percentile latency, ms.
    pub p99_ms: f64,
    /// The server's syscalls per request, where traced.
    pub syscalls_per_request: Option<f64>,
}

/// `report.json`'s `protocols`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProtocolsEntry {
    /// The rows in words.
    pub reading: String,
    /// One per protocol.
    pub rows: Vec<ProtocolRow>,
}

/// One protocol's row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProtocolRow {
    /// The protocol's label (`HTTP/1.1`, `HTTPS close`, ...).
    pub protocol: String,
    /// Goodput, requests/s.
    pub requests_per_s: f64,
    /// Server CPU time per request, µs.
    pub cpu_us_per_request: Option<f64>,
    /// 99th-percentile latency, ms.
    pub p99_ms: f64,
    /// TLS handshakes the clients made.
    pub handshakes: Option<Handshakes>,
    /// Mean handshake, µs.
    pub handshake_mean_us: Option<f64>,
    /// Handshakes' share of the clients' time, per cent.
    pub handshake_share_pct: Option<f64>,
    /// What bounds the run, or why it is invalid.
    pub bound: String,
}

/// TLS handshakes by kind.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Handshakes {
    /// Full handshakes.
    pub full: u64,
    /// Resumed ones.
    pub resumed: u64,
}
