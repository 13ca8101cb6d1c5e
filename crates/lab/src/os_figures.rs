//! Figures read out of a run's record: a number at a JSON path, a statistic of the monitor's
//! summary, the CPU shares of a machine, and which machine is the server's (a remote one
//! scraped through node_exporter, else this one). Not for judging them: that is the
//! evidence's and [`crate::bottleneck`]'s work.

use serde_json::Value;

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
