//! The degradation experiment's entry in report.json: typed, so that its keys are spelt once
//! and what the page wrote reads back. The page (`webscope_pages::degradation`) fills it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// `report.json`'s `degradation`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DegradationEntry {
    /// Each set's rows, by the set's name.
    pub sets: BTreeMap<String, Vec<DegradationRow>>,
    /// The paper's targets and whether each was met.
    pub targets: Vec<Target>,
}

/// A target and whether the run met it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Target {
    /// The target in words.
    pub target: String,
    /// Whether it was met.
    pub met: bool,
}

/// One service under one policy as the heavy clients grew.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DegradationRow {
    /// The set of services.
    pub set: String,
    /// The scheduling policy.
    pub policy: String,
    /// The service.
    pub service: String,
    /// Heavy clients at the last step.
    pub heavy_clients: usize,
    /// Its rate without heavy clients, per second.
    pub base_per_s: Option<f64>,
    /// Its rate at the last step, per second.
    pub last_per_s: f64,
    /// last / base, per cent.
    pub kept_pct: Option<f64>,
    /// Refused at the last step, per second.
    pub refused_per_s: f64,
    /// 99th-percentile latency at the last step, ms.
    pub p99_ms: f64,
    /// Time waiting for a CPU per request, ms.
    pub wait_ms: Option<f64>,
    /// Time running per request, ms.
    pub running_ms: Option<f64>,
    /// Time slices per request.
    pub slices: Option<f64>,
    /// Time waiting for a CPU summed over threads, per cent of a core.
    pub runqueue_wait_pct: Option<f64>,
    /// The service's share of the CPU, per cent.
    pub cpu_share_pct: Option<f64>,
}
