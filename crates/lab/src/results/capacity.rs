//! The capacity search's entry in report.json, as the page writes it: every field typed, so
//! that the keys are spelt once and [`super::SearchEntry`] reads back what was written (a
//! test renders a search and reads it so). The page (`render/capacity`) fills it from its
//! analyses; nothing here decides or draws.

use serde::{Deserialize, Serialize};
use webscope_monitor::disturbance::Disturbance;

use super::RpsEnding;
use webscope_load::slo::Verdict;

use crate::objective::Outcome;

/// `report.json`'s `capacity`. Fields in the order report.json has always had them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CapacityEntry {
    /// The objective, as `--slo` reads it (the goodput floor added).
    pub slo: String,
    /// `constant` or `poisson`.
    pub arrivals: String,
    pub precision: f64,
    pub repeat: u32,
    /// Each probe's length, seconds (its warm-up not counted).
    pub probe_s: f64,
    /// The ending in one sentence, as the page and the console say it.
    pub sentence: String,
    /// How the search ended; none when it was cut before its end.
    pub ending: Option<RpsEnding>,
    /// The capacity found (a range's L).
    pub capacity_rps: Option<f64>,
    /// The server's CPU time per request at the capacity's probes, µs.
    pub server_cpu_per_request_us: Option<f64>,
    /// The operational law's bound, 1 / D.
    pub operational_bound_rps: Option<f64>,
    pub capacity_over_bound: Option<f64>,
    /// A search that ended generator-bound: the generators the next rate needs.
    pub generators_needed: Option<GeneratorsNeeded>,
    /// Where the CPU cannot explain the first failing probe's latency.
    pub beyond_the_cpu: Option<BeyondTheCpu>,
    /// The machine's reference loop over the search.
    pub machine_reference: Option<MachineReference>,
    /// The rates where the probes tipped.
    pub tipped: Vec<Tipped>,
    /// The server's own peak in the probes where it fell behind.
    pub peak: Option<Peak>,
    /// Every probe, in the order of the search.
    pub probes: Vec<ProbeRow>,
}

/// What a generator-bound search needed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GeneratorsNeeded {
    pub last_pass_rps: f64,
    pub generator_busy: f64,
    pub generator_us_per_request: f64,
    pub per_generator_rps: f64,
    pub next_rate_rps: f64,
    pub generators: u32,
}

/// The first failing probe whose latency the server's CPU cannot explain.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BeyondTheCpu {
    pub rate_rps: f64,
    pub utilisation: f64,
    pub demand_us: f64,
    pub predicted_mean_ms: f64,
    pub measured_mean_ms: f64,
}

/// The machine's reference loop over the search (#33): its readings' statistics, ms.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MachineReference {
    #[serde(default)]
    pub samples: usize,
    /// The mean of its readings (what `compare` sets against the other search's).
    pub mean_ms: Option<f64>,
    #[serde(default)]
    pub median_ms: Option<f64>,
    #[serde(default)]
    pub p10_ms: Option<f64>,
    #[serde(default)]
    pub p90_ms: Option<f64>,
    /// The CPU it ran on (the server's).
    #[serde(default)]
    pub cpu: Option<usize>,
    /// Probes with readings.
    #[serde(default)]
    pub probes: usize,
    /// The standard error of the mean over the probes' own means (none for one probe).
    #[serde(default)]
    pub se_ms: Option<f64>,
}

/// A rate where the probes tipped: some met a condition, others failed it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Tipped {
    pub rate_rps: f64,
    pub condition: String,
    pub passed: usize,
    pub pass_us: [f64; 2],
    pub failed: usize,
    pub far: usize,
    pub far_us: [f64; 2],
}

/// The server's own peak: the goodput of the probes where it had fallen behind.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Peak {
    #[serde(default)]
    pub probes: usize,
    #[serde(default)]
    pub low_rps: f64,
    #[serde(default)]
    pub median_rps: f64,
    #[serde(default)]
    pub high_rps: f64,
    /// (high − low) / median: how far the peak moved within the search.
    pub spread: Option<f64>,
    #[serde(default)]
    pub first_probe: usize,
    #[serde(default)]
    pub last_probe: usize,
    #[serde(default)]
    pub capacity_above_median: Option<bool>,
}

/// One probe, as the page's table and report.json give it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProbeRow {
    pub probe: usize,
    pub run: String,
    pub offered_rps: f64,
    pub achieved_rps: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
    pub error_share: f64,
    pub not_sent_share: Option<f64>,
    pub verdict: Outcome,
    pub reason: String,
    pub conditions: Vec<Condition>,
    /// The bottleneck verdict's label ("server CPU", "machine CPU" ...).
    pub bound: String,
    pub bound_reading: String,
    pub probe_s: f64,
    pub disturbance: Option<Disturbance>,
    pub reference_ms: Option<Vec<f64>>,
    pub server_cpu_per_request_us: Option<f64>,
    pub cooldown: ProbeCooldown,
}

/// One condition's verdict in a probe.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Condition {
    pub condition: String,
    pub measured: Option<f64>,
    pub verdict: Verdict,
}

/// The cool-down before a probe.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProbeCooldown {
    pub waited_s: f64,
    pub settled: bool,
    pub time_wait: u32,
    pub time_wait_clients: Option<u32>,
}
