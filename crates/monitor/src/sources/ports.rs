//! TCP states per port (both sides) and the listen sockets' accept queues.
//!
//! Counting states per port needs a walk of the kernel's whole established-socket hash table
//! (262 144 buckets on a 24 GiB machine: about 2.5 ms of kernel time here even when empty,
//! plus a fraction of a microsecond per matching socket). Doing that every 100 ms would cost
//! several percent of a core, more than everything else the monitor does. So the walk is
//! spaced out by what it costs: after each one, the next waits until its CPU time is below
//! `budget` (0.3 % of one core by default) of the time between walks. With few sockets and
//! a small table that is every interval; with 30 000 sockets, every second or two. The accept
//! queues need only the small listen table and are read every interval.

use super::{Ctx, Source};
use crate::table::{Group, GroupRows, Row};
use crate::tcp::{ListenQueue, PortCounts, StateCounts, TcpState, TcpTable};

/// Per-port state counts.
pub static PORTS: Group = Group {
    name: "ports",
    about: "TCP sockets per state for each --port: local = sockets whose local port it is (the server's, if it runs here), remote = sockets on this host connected to it (local clients); sampled as often as --tcp-budget allows",
    keys: &["port", "side"],
    columns: &[
        "established",
        "syn_sent",
        "syn_recv",
        "fin_wait1",
        "fin_wait2",
        "time_wait",
        "close",
        "close_wait",
        "last_ack",
        "listen",
        "closing",
        "total",
    ],
};

/// Accept queues.
pub static LISTEN: Group = Group {
    name: "listen",
    about: "listen sockets of each --port: how many, connections waiting for accept(), the backlog limit",
    keys: &["port"],
    columns: &["listen_sockets", "accept_queue", "accept_limit"],
};

/// What the summary says about the per-port walks.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct WalkStats {
    /// "sock_diag" or "proc".
    pub method: String,
    /// How many walks were made.
    pub walks: u64,
    /// Their mean CPU time, milliseconds.
    pub mean_walk_cpu_ms: f64,
    /// Their longest CPU time, milliseconds.
    pub max_walk_cpu_ms: f64,
    /// Mean seconds between walks.
    pub mean_spacing_s: f64,
    /// The budget they were held to, percent of one core.
    pub budget_pct: f64,
}

fn state_row(port: u16, side: &str, counts: &StateCounts) -> Row {
    let mut values: Vec<f64> = TcpState::ALL
        .iter()
        .map(|s| f64::from(counts.get(*s)))
        .collect();
    values.push(f64::from(counts.total()));
    Row::new([port.to_string(), side.to_string()], values)
}

pub(crate) fn port_rows(counts: &[PortCounts]) -> Vec<Row> {
    counts
        .iter()
        .flat_map(|c| {
            [
                state_row(c.port, "local", &c.local),
                state_row(c.port, "remote", &c.remote),
            ]
        })
        .collect()
}

pub(crate) fn listen_rows(queues: &[ListenQueue]) -> Vec<Row> {
    queues
        .iter()
        .map(|q| {
            Row::new(
                [q.port.to_string()],
                vec![
                    f64::from(q.sockets),
                    f64::from(q.queued),
                    q.limit.map_or(f64::NAN, f64::from),
                ],
            )
        })
        .collect()
}

/// The per-port source.
pub(crate) struct Ports {
    table: TcpTable,
    ports: Vec<u16>,
    budget: f64,
    next_walk: f64,
    first_walk: Option<f64>,
    last_walk: f64,
    stats: WalkStats,
    total_walk_cpu: f64,
}

impl Ports {
    /// `budget` is a fraction of one core (0.005 = 0.5 %); 1 or more walks at every sample.
    pub fn new(table: TcpTable, ports: Vec<u16>, budget: f64) -> Ports {
        let stats = WalkStats {
            method: table.method().to_string(),
            budget_pct: budget * 100.0,
            ..WalkStats::default()
        };
        Ports {
            table,
            ports,
            budget,
            next_walk: 0.0,
            first_walk: None,
            last_walk: 0.0,
            stats,
            total_walk_cpu: 0.0,
        }
    }

    /// What the walks cost so far.
    pub fn stats(&self) -> WalkStats {
        let mut stats = self.stats.clone();
        if stats.walks > 0 {
            stats.mean_walk_cpu_ms = self.total_walk_cpu * 1e3 / stats.walks as f64;
        }
        if let (Some(first), true) = (self.first_walk, stats.walks > 1) {
            stats.mean_spacing_s = (self.last_walk - first) / (stats.walks - 1) as f64;
        }
        stats
    }

    fn walk(&mut self, t: f64, out: &mut Vec<GroupRows>) -> Result<(), String> {
        let began = webscope_sys::thread_time();
        let (counts, queues) = self
            .table
            .port_states(&self.ports)
            .map_err(|err| format!("cannot read TCP states ({}): {err}", self.table.method()))?;
        let cost = (webscope_sys::thread_time() - began).as_secs_f64();
        self.stats.walks += 1;
        self.total_walk_cpu += cost;
        self.stats.max_walk_cpu_ms = self.stats.max_walk_cpu_ms.max(cost * 1e3);
        self.first_walk.get_or_insert(t);
        self.last_walk = t;
        self.next_walk = if self.budget >= 1.0 {
            t
        } else {
            t + cost / self.budget
        };
        out.push(GroupRows {
            group: &PORTS,
            rows: port_rows(&counts),
        });
        out.push(GroupRows {
            group: &LISTEN,
            rows: listen_rows(&queues),
        });
        Ok(())
    }
}

impl Source for Ports {
    fn name(&self) -> &'static str {
        "ports"
    }

    fn sample(&mut self, ctx: &mut Ctx<'_>, out: &mut Vec<GroupRows>) -> Result<(), String> {
        if ctx.dt <= 0.0 {
            // Counts are levels: nothing to set a baseline for, and a walk here would only
            // add to the cost. The first sample walks.
            return Ok(());
        }
        // Walk at the sample nearest to when the budget allows it (the interval is the
        // sampling period, so half of it either way).
        if ctx.t + ctx.dt / 2.0 >= self.next_walk {
            return self.walk(ctx.t, out);
        }
        if let Some(queues) = self.table.listen_queues(&self.ports) {
            let queues = queues
                .map_err(|err| format!("cannot read the listen queues (sock_diag): {err}"))?;
            out.push(GroupRows {
                group: &LISTEN,
                rows: listen_rows(&queues),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_have_a_column_per_state_and_a_total() {
        let mut counts = PortCounts {
            port: 8080,
            ..PortCounts::default()
        };
        counts.local.add(TcpState::TimeWait);
        counts.local.add(TcpState::TimeWait);
        counts.remote.add(TcpState::Established);
        let rows = port_rows(&[counts]);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].key, ["8080", "local"]);
        assert_eq!(rows[0].values.len(), PORTS.columns.len());
        let tw = PORTS
            .columns
            .iter()
            .position(|c| *c == "time_wait")
            .unwrap();
        assert_eq!(rows[0].values[tw], 2.0);
        assert_eq!(*rows[0].values.last().unwrap(), 2.0);
        assert_eq!(rows[1].values[0], 1.0);
        for (state, column) in TcpState::ALL.iter().zip(PORTS.columns) {
            assert_eq!(state.name(), *column);
        }
    }

    #[test]
    fn unknown_backlog_limit_is_an_empty_cell() {
        let rows = listen_rows(&[ListenQueue {
            port: 80,
            sockets: 1,
            queued: 2,
            limit: None,
        }]);
        assert_eq!(rows[0].values[..2], [1.0, 2.0]);
        assert!(rows[0].values[2].is_nan());
    }
}
