//! Figures read out of a run's record: a number at a JSON path, a statistic of the monitor's
//! summary, the CPU shares of a machine, a run's accept-queue wait (the kernel module), and
//! which machine is the server's (a remote one scraped through node_exporter, else this one). Not for judging them: that is the
//! evidence's and [`crate::bottleneck`]'s work.

use serde_json::Value;
use webscope_monitor::kernel::{KernelSummary, Latency};

use crate::bottleneck::CpuShares;
use crate::record::RunRecord;

/// A value of the monitor's summary: `groups.<group>.rows.<row>.<column>.<stat>`.
pub fn os_stat(os: &Value, group: &str, row: &str, column: &str, stat: &str) -> Option<f64> {
    os.get("groups")?
        .get(group)?
        .get("rows")?
        .get(row)?
        .get(column)?
        .get(stat)?
        .as_f64()
}

/// The number at `path` in `v`, 0 when there is none.
pub fn num(v: &Value, path: &[&str]) -> f64 {
    let mut v = v;
    for key in path {
        v = &v[*key];
    }
    v.as_f64().unwrap_or(0.0)
}

/// CPU shares of a monitor summary's "all" row.
pub fn cpu_shares(os: &Value) -> Option<CpuShares> {
    let stat = |column: &str| os_stat(os, "cpu", "all", column, "mean");
    Some(CpuShares {
        busy: stat("busy_pct")?,
        user: stat("user_pct").unwrap_or(0.0),
        system: stat("system_pct").unwrap_or(0.0),
        softirq: stat("softirq_pct").unwrap_or(0.0),
    })
}

/// The server's machine when it is another one: of the hosts scraped through node_exporter,
/// the busiest (a balanced pool is as slow as its busiest member). None for a local server,
/// or when no scrape succeeded.
pub fn server_host(run: &RunRecord) -> Option<&Value> {
    run.server_os
        .iter()
        .filter(|os| os.get("error").is_none())
        .max_by(|a, b| {
            let busy = |os: &Value| cpu_shares(os).map_or(0.0, |c| c.busy);
            busy(a).total_cmp(&busy(b))
        })
}

/// The monitor summary of the server's machine: the remote one, else this one's.
pub fn server_machine(run: &RunRecord) -> Option<&Value> {
    server_host(run).or(run.os.as_ref())
}

/// One run's accept-queue wait on the server's port.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QueueWait {
    /// The server's port.
    pub port: u16,
    /// The connections' waits (count, mean, percentiles), milliseconds.
    pub wait: Latency,
    /// The waits summed over the requests answered: what a request spent in the queue on
    /// average (a keep-alive connection waits once for all of its requests).
    pub per_request_ms: f64,
}

/// The run's accept-queue wait on its port (the monitor's kernel module, #49), where the kernel module timed any connection.
pub fn queue_wait(run: &RunRecord) -> Option<QueueWait> {
    let os = run.os.as_ref()?;
    let port = os.get("ports")?.get(0)?.as_u64()?;
    let kernel: KernelSummary = serde_json::from_value(os.get("kernel")?.clone()).ok()?;
    let figures = kernel.ports.iter().find(|p| u64::from(p.port) == port)?;
    let wait = figures.accept_wait?;
    let requests = run.server_requests();
    let per_request_ms = if requests > 0.0 {
        wait.mean_ms * wait.count as f64 / requests
    } else {
        0.0
    };
    Some(QueueWait {
        port: figures.port,
        wait,
        per_request_ms,
    })
}
