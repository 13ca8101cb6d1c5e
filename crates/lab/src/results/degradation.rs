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

#[cfg(test)]
mod tests {
    use super::*;

    /// An entry as the stored lab of `report_stored` (crates/webscope/tests/data) has it.
    const STORED: &str = r#"{"sets": {"set1": [{"base_per_s": 180.0, "cpu_share_pct": 100.0, "heavy_clients": 40, "kept_pct": 36.666666666666664, "last_per_s": 66.0, "p99_ms": 490.471423, "policy": "threads", "refused_per_s": 0.0, "running_ms": 238.97606023529417, "runqueue_wait_pct": 4722.9928619880475, "service": "light", "set": "set1", "slices": 1.0, "wait_ms": 47.58344282352942}], "set2": []}, "targets": [{"met": true, "target": "fair, set 1: light keeps 88 % of its throughput at 40 heavy clients (target \u2265 80 %)"}]}"#;

    #[test]
    fn a_stored_entry_reads_into_its_type_and_writes_back_the_same() {
        let entry: DegradationEntry = serde_json::from_str(STORED).unwrap();
        let row = &entry.sets["set1"][0];
        assert_eq!(
            (row.heavy_clients, row.kept_pct),
            (40, Some(36.666666666666664))
        );
        assert!(entry.targets[0].met);
        let stored: serde_json::Value = serde_json::from_str(STORED).unwrap();
        let written = serde_json::to_value(&entry).unwrap();
        assert_eq!(written, stored);
        let again: DegradationEntry = serde_json::from_value(written).unwrap();
        assert_eq!(again, entry);
    }
}
