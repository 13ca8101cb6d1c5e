//! The capacity search's entry in report.json, as the page writes it: every field typed, so
//! that the keys are spelt once and [`super::SearchEntry`] reads back what was written (a
//! test renders a search and reads it so). The page (`webscope_pages::capacity`) fills it from its
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
    /// The bracket's width at which the search stopped: (fail − pass) / pass, a share.
    pub precision: f64,
    /// Probes at each boundary rate at least (the search's `repeat`).
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
    /// The capacity over the operational bound, 0..1 when the bound holds: how much of
    /// the server's CPU the capacity uses.
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
    /// The last rate that passed, req/s.
    pub last_pass_rps: f64,
    /// The generator thread's busy share at that rate, 0..1.
    pub generator_busy: f64,
    /// Generator CPU per request there, µs.
    pub generator_us_per_request: f64,
    /// What one generator thread offers at its CPU limit, req/s.
    pub per_generator_rps: f64,
    /// The rate the search would have probed next, req/s.
    pub next_rate_rps: f64,
    /// Generators needed for that rate, each on a core of its own.
    pub generators: u32,
}

/// The first failing probe whose latency the server's CPU cannot explain.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BeyondTheCpu {
    /// The probe's offered rate, req/s.
    pub rate_rps: f64,
    /// Busy share of the CPUs the server may use, 0..1.
    pub utilisation: f64,
    /// Server CPU per request at that probe, µs.
    pub demand_us: f64,
    /// The mean response time the CPU alone predicts, D / (1 − ρ), ms.
    pub predicted_mean_ms: f64,
    /// The mean response time measured, ms.
    pub measured_mean_ms: f64,
}

/// The machine's reference loop over the search (#33): its readings' statistics, ms.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MachineReference {
    #[serde(default)]
    /// Readings of the loop in all.
    pub samples: usize,
    /// The mean of its readings (what `compare` sets against the other search's).
    pub mean_ms: Option<f64>,
    #[serde(default)]
    /// Their median, ms (None in searches written before it).
    pub median_ms: Option<f64>,
    #[serde(default)]
    /// Their 10th percentile, ms.
    pub p10_ms: Option<f64>,
    #[serde(default)]
    /// Their 90th percentile, ms.
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
    /// The offered rate, req/s (or the number of users, in a users search).
    pub rate_rps: f64,
    /// The condition, as the objective writes it: `p99<=5ms`.
    pub condition: String,
    /// Probes that met the objective.
    pub passed: usize,
    /// Lowest and highest figure of the passing probes on this condition, µs.
    pub pass_us: [f64; 2],
    /// Probes that failed on this condition.
    pub failed: usize,
    /// Of those, the ones ten times past the passing probes.
    pub far: usize,
    /// Lowest and highest figure of the far probes, µs.
    pub far_us: [f64; 2],
}

/// The server's own peak: the goodput of the probes where it had fallen behind.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Peak {
    #[serde(default)]
    /// Probes where the server had fallen behind.
    pub probes: usize,
    #[serde(default)]
    /// Their lowest goodput, req/s.
    pub low_rps: f64,
    #[serde(default)]
    /// Their median goodput, req/s.
    pub median_rps: f64,
    #[serde(default)]
    /// Their highest goodput, req/s.
    pub high_rps: f64,
    /// (high − low) / median: how far the peak moved within the search.
    pub spread: Option<f64>,
    #[serde(default)]
    /// The first of them, numbered as in [`ProbeRow::probe`].
    pub first_probe: usize,
    #[serde(default)]
    /// The last of them.
    pub last_probe: usize,
    #[serde(default)]
    /// Whether the capacity found lies above their median (None without a capacity).
    pub capacity_above_median: Option<bool>,
}

/// One probe, as the page's table and report.json give it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProbeRow {
    /// The probe's number in the search.
    pub probe: usize,
    /// Its run's directory name.
    pub run: String,
    /// The rate offered, req/s.
    pub offered_rps: f64,
    /// Goodput achieved, req/s.
    pub achieved_rps: f64,
    /// Latency percentiles of the probe, µs.
    pub p50_us: f64,
    /// 90th percentile, µs.
    pub p90_us: f64,
    /// 99th percentile, µs.
    pub p99_us: f64,
    /// 99.9th percentile, µs.
    pub p999_us: f64,
    /// The slowest response, µs.
    pub max_us: f64,
    /// Share of attempts that failed or got an unexpected status, 0..1.
    pub error_share: f64,
    /// Share of the scheduled requests the generator could not send, 0..1 (None in closed
    /// loops and in probes written before it).
    pub not_sent_share: Option<f64>,
    /// The probe's verdict on the objective.
    pub verdict: Outcome,
    /// The verdict's reason, in one sentence.
    pub reason: String,
    /// Each of the objective's conditions, as measured.
    pub conditions: Vec<Condition>,
    /// The bottleneck verdict's label ("server CPU", "machine CPU" ...).
    pub bound: String,
    /// The figure behind the bound, in words (the bottleneck verdict's reading).
    pub bound_reading: String,
    /// The probe's measured length, seconds.
    pub probe_s: f64,
    /// What disturbed the machine during the probe, if anything did.
    pub disturbance: Option<Disturbance>,
    /// The reference loop's readings before the probe, ms (None: the server is not on this
    /// machine).
    pub reference_ms: Option<Vec<f64>>,
    /// The server's CPU per request in this probe, µs (None without the server's figures).
    pub server_cpu_per_request_us: Option<f64>,
    /// The cool-down before the probe.
    pub cooldown: ProbeCooldown,
}

/// One condition's verdict in a probe.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Condition {
    /// The condition, as the objective writes it.
    pub condition: String,
    /// What was measured for it, in the condition's unit (None: nothing to measure, e.g. no
    /// responses).
    pub measured: Option<f64>,
    /// Whether it was met.
    pub verdict: Verdict,
}

/// The cool-down before a probe.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProbeCooldown {
    /// Seconds waited in all.
    pub waited_s: f64,
    /// Whether the port got back to its count before the probe within the wait.
    pub settled: bool,
    /// TIME_WAIT sockets on the port when the wait ended, both sides.
    pub time_wait: u32,
    /// Of those, the clients' (None in probes written before the count).
    pub time_wait_clients: Option<u32>,
}
