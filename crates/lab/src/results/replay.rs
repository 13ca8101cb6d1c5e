//! The replay experiment's entry in report.json: typed, so that its keys are spelt once and
//! what the page wrote reads back. The page (`webscope_pages::replay`) fills it.

use serde::{Deserialize, Serialize};
use webscope_load::replay::StatusPair;

use crate::objective::Outcome;
use crate::replay::ReplayArrivals;

/// `report.json`'s `replay`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayEntry {
    /// What the replay found, in words.
    pub sentence: String,
    /// Why it stopped, when it stopped by itself.
    pub stopped: Option<String>,
    /// The highest speed-up the server kept up with.
    pub kept_up_to_speed: Option<f64>,
    /// Every run.
    pub steps: Vec<ReplayStep>,
}

/// One replay run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayStep {
    /// Requests the run sent.
    pub requests: u64,
    /// Responses it got.
    pub answered: u64,
    /// The part of the log it replayed ("5 windows").
    pub part: String,
    /// Logged status against the one got, where they differ.
    pub status_mismatches: Vec<StatusPair>,
    /// The run's directory name.
    pub run: String,
    /// The speed-up.
    pub speed: f64,
    /// The arrivals: the log's own, or Poisson's at its rate.
    pub arrivals: ReplayArrivals,
    /// Offered rate, requests/s.
    pub offered_rps: f64,
    /// Achieved rate, requests/s.
    pub achieved_rps: f64,
    /// Median latency, ms.
    pub p50_ms: f64,
    /// 99th-percentile latency, ms.
    pub p99_ms: f64,
    /// 99.9th-percentile latency, ms.
    pub p999_ms: f64,
    /// The objective's verdict.
    pub verdict: Outcome,
    /// Its reason.
    pub reason: String,
    /// What bounds the run.
    pub bound: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An entry as the replay page writes it (no stored lab in the repository ran a replay).
    const WRITTEN: &str = r#"{"kept_up_to_speed": 2.0, "sentence": "It kept up.", "steps": [{"achieved_rps": 199.0, "answered": 1000, "arrivals": "logged", "bound": "latency", "offered_rps": 200.0, "p50_ms": 1.0, "p999_ms": 9.0, "p99_ms": 5.0, "part": "5 windows", "reason": "", "requests": 1000, "run": "logged-2", "speed": 2.0, "status_mismatches": [], "verdict": "pass"}], "stopped": null}"#;

    #[test]
    fn an_entry_reads_into_its_type_and_writes_back_the_same() {
        let entry: ReplayEntry = serde_json::from_str(WRITTEN).unwrap();
        assert_eq!(entry.steps[0].arrivals, ReplayArrivals::Logged);
        assert_eq!(entry.steps[0].verdict, Outcome::Pass);
        let written = serde_json::to_value(&entry).unwrap();
        assert_eq!(
            written,
            serde_json::from_str::<serde_json::Value>(WRITTEN).unwrap()
        );
        let again: ReplayEntry = serde_json::from_value(written).unwrap();
        assert_eq!(again, entry);
    }

    #[test]
    fn a_misspelt_key_is_an_error_not_a_default() {
        let misspelt = WRITTEN.replace("\"p99_ms\"", "\"p99ms\"");
        let err = serde_json::from_str::<ReplayEntry>(&misspelt).unwrap_err();
        assert!(err.to_string().contains("p99_ms"), "{err}");
    }
}
