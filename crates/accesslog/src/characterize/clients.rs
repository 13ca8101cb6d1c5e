//! Requests per client, and how concentrated they are.

use std::collections::HashMap;

use webscope_model::stats::median;

use crate::line::Entry;

/// The client figures. Addresses themselves are never reported.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Clients {
    /// Distinct clients (`%h` values).
    pub distinct: usize,
    /// Mean requests per client.
    pub mean_requests: f64,
    /// Median requests per client.
    pub median_requests: f64,
    /// Most requests from one client.
    pub max_requests: u64,
    /// Share of requests from the busiest 10 % of clients (at least one).
    pub top10_share: f64,
}

/// Counts requests per client over all entries.
pub fn clients(entries: &[Entry]) -> Clients {
    let mut per: HashMap<&str, u64> = HashMap::new();
    for e in entries {
        *per.entry(e.client.as_str()).or_insert(0) += 1;
    }
    let mut counts: Vec<u64> = per.into_values().collect();
    counts.sort_unstable_by(|a, b| b.cmp(a));
    let n = counts.len();
    let total: u64 = counts.iter().sum();
    let as_f: Vec<f64> = counts.iter().map(|&c| c as f64).collect();
    Clients {
        distinct: n,
        mean_requests: if n > 0 { total as f64 / n as f64 } else { 0.0 },
        median_requests: median(&as_f).unwrap_or(0.0),
        max_requests: counts.first().copied().unwrap_or(0),
        top10_share: if total > 0 {
            counts.iter().take(n.div_ceil(10)).sum::<u64>() as f64 / total as f64
        } else {
            0.0
        },
    }
}
