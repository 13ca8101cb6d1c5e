//! The degradation table: for each set, policy and service, the throughput with the most
//! heavy clients relative to none, with the figures behind it (503s, wait and running time,
//! CPU share, the run queue). Not for the targets judged from it.

use webscope_lab::results::degradation::DegradationRow;
use webscope_report::Table;

use super::runs::{Run, Service};
use crate::cells::cell;
use webscope_lab::degradation::{POLICIES, SETS};

/// One service's degradation under one policy in one set.
#[derive(Debug, Clone)]
pub struct Degradation {
    pub set: String,
    pub policy: String,
    pub service: String,
    pub heavy_max: usize,
    /// Throughput with no heavy clients (None for the heavy service itself).
    pub base_per_s: Option<f64>,
    /// Throughput with the most heavy clients.
    pub last_per_s: f64,
    /// `last / base`, percent.
    pub kept_pct: Option<f64>,
    pub last: Service,
    pub cpu_share_pct: Option<f64>,
    pub base_p99_ms: Option<f64>,
    /// The server's threads' run-queue wait at the most heavy clients (monitor), % of a core.
    pub runqueue_wait_pct: Option<f64>,
}

/// The degradation table's rows, in set, policy, service order.
pub fn degradations(runs: &[Run]) -> Vec<Degradation> {
    let mut rows = Vec::new();
    for set in SETS {
        for (policy, _) in POLICIES {
            let of: Vec<&Run> = runs
                .iter()
                .filter(|r| r.set == set.name && r.policy == policy)
                .collect();
            let (Some(first), Some(last)) = (
                of.iter().min_by_key(|r| r.heavy),
                of.iter().max_by_key(|r| r.heavy),
            ) else {
                continue;
            };
            for service in &last.services {
                let base = (first.heavy == 0 && last.heavy > 0)
                    .then(|| first.service(&service.name))
                    .flatten();
                rows.push(Degradation {
                    set: set.name.into(),
                    policy: policy.into(),
                    service: service.name.clone(),
                    heavy_max: last.heavy,
                    base_per_s: base.map(|b| b.ok_per_s),
                    last_per_s: service.ok_per_s,
                    kept_pct: base
                        .filter(|b| b.ok_per_s > 0.0)
                        .map(|b| 100.0 * service.ok_per_s / b.ok_per_s),
                    last: service.clone(),
                    cpu_share_pct: last.cpu_share(&service.name),
                    base_p99_ms: base.map(|b| b.p99_ms),
                    runqueue_wait_pct: last.runqueue_wait_pct,
                });
            }
        }
    }
    rows
}

/// The degradation table: one row per set, policy and service.
pub fn table(rows: &[Degradation]) -> Table {
    let mut t = Table::new([
        "set",
        "policy",
        "service",
        "req/s heavy=0",
        "req/s heavy=max",
        "kept %",
        "503/s",
        "p99 ms (0 → max)",
        "wait ms",
        "running ms",
        "slices",
        "CPU share %",
        "threads in run queue",
    ]);
    for d in rows {
        t.row([
            d.set.clone(),
            d.policy.clone(),
            d.service.clone(),
            cell(d.base_per_s, 1),
            format!("{:.1}", d.last_per_s),
            cell(d.kept_pct, 0),
            format!("{:.1}", d.last.refused_per_s),
            format!("{} → {:.1}", cell(d.base_p99_ms, 1), d.last.p99_ms),
            cell(d.last.wait_ms, 1),
            cell(d.last.running_ms, 2),
            cell(d.last.slices, 1),
            cell(d.cpu_share_pct, 0),
            // Time waiting for a CPU summed over threads, in cores: how many wait, on average.
            cell(d.runqueue_wait_pct.map(|p| p / 100.0), 1),
        ]);
    }
    t
}

/// The rows as report.json holds them.
pub fn json_rows(rows: &[Degradation]) -> Vec<DegradationRow> {
    rows.iter()
        .map(|d| DegradationRow {
            set: d.set.clone(),
            policy: d.policy.clone(),
            service: d.service.clone(),
            heavy_clients: d.heavy_max,
            base_per_s: d.base_per_s,
            last_per_s: d.last_per_s,
            kept_pct: d.kept_pct,
            refused_per_s: d.last.refused_per_s,
            p99_ms: d.last.p99_ms,
            wait_ms: d.last.wait_ms,
            running_ms: d.last.running_ms,
            slices: d.last.slices,
            runqueue_wait_pct: d.runqueue_wait_pct,
            cpu_share_pct: d.cpu_share_pct,
        })
        .collect()
}
