//! Figures read out of a run's record: the CPU shares of a machine, a run's accept-queue
//! wait (the kernel module), and which machine is the server's (a remote one scraped through
//! node_exporter, else this one). Not for judging them: that is the evidence's and
//! this crate's work.

use webscope_monitor::kernel::Latency;
use webscope_monitor::Summary;

use crate::CpuShares;
use webscope_record::{RunRecord, Sampled};

/// CPU shares of a monitor summary's "all" row.
pub fn cpu_shares(os: &Summary) -> Option<CpuShares> {
    let stat = |column: &str| os.mean("cpu", "all", column);
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
pub fn server_host(run: &RunRecord) -> Option<&Summary> {
    run.server_os
        .iter()
        .filter_map(Sampled::summary)
        .max_by(|a, b| {
            let busy = |os: &Summary| cpu_shares(os).map_or(0.0, |c| c.busy);
            busy(a).total_cmp(&busy(b))
        })
}

/// The monitor summary of the server's machine: the remote one, else this one's.
pub fn server_machine(run: &RunRecord) -> Option<&Summary> {
    server_host(run).or(run.local_os())
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
    let os = run.local_os()?;
    let port = *os.ports.first()?;
    let figures = os.kernel.as_ref()?.ports.iter().find(|p| p.port == port)?;
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
