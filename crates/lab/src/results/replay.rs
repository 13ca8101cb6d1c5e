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
