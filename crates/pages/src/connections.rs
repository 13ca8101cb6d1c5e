//! The kernel's view of a sweep's connections, one row per run (the monitor's kernel module,
//! #49): how long they lived (from ESTABLISHED and from the SYN), how many the server closed
//! into TIME_WAIT and how those ended (ran their 60 s, cut short by the client's next SYN on
//! the same address pair, or ended by an RST) with the time they spent in it, and the
//! segments sent again, naming the connections that retransmitted most. A table of its own
//! beside the per-run table, which is wide already and holds what the verdicts read (the
//! accept-queue wait): these are what a reader of a sweep looks at to see Yates's TIME_WAIT
//! cost and a lossy path, not what decides the run's bound. Present only where the module
//! watched the run's port, so a lab without it renders as it did. Not for the accept-queue
//! wait (`queue_wait`) nor for judging. Takes each run's x and figures, not the pages'
//! points, so that a point can hold its [`Connections`].

use webscope_lab::results::sweeps::KernelFigures;
use webscope_monitor::kernel::{Latency, Retransmitting};
use webscope_record::RunRecord;
use webscope_report::human::sig3;
use webscope_report::{Block, Table};

/// How many of a run's worst retransmitters its row names (report.json keeps them all).
const NAMED: usize = 3;

/// One run's connections on the server's port, as the kernel module saw them.
#[derive(Debug, Clone, PartialEq)]
pub struct Connections {
    /// The server's port.
    pub port: u16,
    /// ESTABLISHED to CLOSE, of the connections born and closed while watched.
    pub lifetime: Option<Latency>,
    /// From the SYN to CLOSE (of those whose SYN-ACK went once).
    pub from_syn: Option<Latency>,
    /// Closed by the server first, into TIME_WAIT.
    pub time_wait_entered: u64,
    /// TIME_WAIT sockets whose 60 s ran out during the run (those entered up to a minute
    /// before it, in earlier runs, included).
    pub time_wait_expired: u64,
    /// Cut short by a new SYN on their address pair.
    pub time_wait_cut: u64,
    /// Ended by an RST.
    pub time_wait_reset: u64,
    /// The time in TIME_WAIT of those that ended.
    pub time_in_time_wait: Option<Latency>,
    /// Segments retransmitted on the port.
    pub retrans_segs: u64,
    /// The connections that retransmitted most, most first (all ports of the run).
    pub most_retransmitting: Vec<Retransmitting>,
}

/// The run's connections on its port, where the kernel module watched it.
pub fn of(run: &RunRecord) -> Option<Connections> {
    let os = run.local_os()?;
    let port = *os.ports.first()?;
    let kernel = os.kernel.as_ref()?;
    let p = kernel.ports.iter().find(|p| p.port == port)?;
    Some(Connections {
        port,
        lifetime: p.lifetime,
        from_syn: p.lifetime_from_syn,
        time_wait_entered: p.time_wait,
        time_wait_expired: p.time_wait_expired,
        time_wait_cut: p.time_wait_cut,
        time_wait_reset: p.time_wait_reset,
        time_in_time_wait: p.time_in_time_wait,
        retrans_segs: p.retrans_segs,
        most_retransmitting: kernel.most_retransmitting.clone(),
    })
}

/// "p50/p99" of `l` in the unit `scale` turns milliseconds into, `-` where there is none.
fn spread(l: Option<&Latency>, scale: f64) -> String {
    l.map_or("-".into(), |l| {
        format!("{}/{}", sig3(l.p50_ms * scale), sig3(l.p99_ms * scale))
    })
}

/// A run's worst retransmitters as a cell: each peer with its segments sent again.
fn named(worst: &[Retransmitting]) -> String {
    if worst.is_empty() {
        return "-".into();
    }
    let mut cell: Vec<String> = worst
        .iter()
        .take(NAMED)
        .map(|r| format!("{} {}", r.peer, r.retrans))
        .collect();
    if worst.len() > NAMED {
        cell.push(format!("+{} more", worst.len() - NAMED));
    }
    cell.join(", ")
}

/// The table, with its caption, where any run has the kernel's figures: a row per run, its
/// x (headed `x`) and its figures.
pub fn table(runs: &[(f64, Option<&Connections>)], x: &str) -> Option<Block> {
    if runs.iter().all(|(_, c)| c.is_none()) {
        return None;
    }
    let mut t = Table::new([
        x,
        "lifetime p50/p99 ms",
        "from the SYN p50/p99 ms",
        "into TIME_WAIT",
        "TIME_WAIT ended: ran 60 s/new SYN/RST",
        "time in TIME_WAIT p50/p99 s",
        "segments retransmitted",
        "most retransmitting (peer, segments)",
    ]);
    for &(x, c) in runs {
        let Some(c) = c else {
            let mut row = vec![format!("{x}")];
            row.resize(8, "-".into());
            t.row(row);
            continue;
        };
        t.row([
            format!("{x}"),
            spread(c.lifetime.as_ref(), 1.0),
            spread(c.from_syn.as_ref(), 1.0),
            c.time_wait_entered.to_string(),
            format!(
                "{}/{}/{}",
                c.time_wait_expired, c.time_wait_cut, c.time_wait_reset
            ),
            spread(c.time_in_time_wait.as_ref(), 1e-3),
            c.retrans_segs.to_string(),
            named(&c.most_retransmitting),
        ]);
    }
    Some(Block::Table {
        caption: "The connections as the kernel saw them, per run (the monitor's kernel module; TIME_WAIT ended: ran its 60 s, which counts those entered up to a minute before the run, earlier runs' too / cut short by the client's next SYN on the same port pair / ended by an RST)".into(),
        table: t,
    })
}

/// A run's figures for report.json (`runs`): all absent where the module did not watch the
/// run's port; the accept-queue wait is not among them (the per-run JSON adds it).
pub fn figures(c: Option<&Connections>) -> KernelFigures {
    let Some(c) = c else {
        return KernelFigures::default();
    };
    KernelFigures {
        lifetimes: c.lifetime.map(|l| l.count),
        lifetime_p50_ms: c.lifetime.map(|l| l.p50_ms),
        lifetime_p99_ms: c.lifetime.map(|l| l.p99_ms),
        lifetime_from_syn_p50_ms: c.from_syn.map(|l| l.p50_ms),
        lifetime_from_syn_p99_ms: c.from_syn.map(|l| l.p99_ms),
        time_wait_entered: Some(c.time_wait_entered),
        time_wait_expired: Some(c.time_wait_expired),
        time_wait_cut: Some(c.time_wait_cut),
        time_wait_reset: Some(c.time_wait_reset),
        time_in_time_wait_p50_ms: c.time_in_time_wait.map(|l| l.p50_ms),
        time_in_time_wait_p99_ms: c.time_in_time_wait.map(|l| l.p99_ms),
        retrans_segs: Some(c.retrans_segs),
        most_retransmitting: c.most_retransmitting.clone(),
        ..KernelFigures::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn latency(count: u64, p50_ms: f64, p99_ms: f64) -> serde_json::Value {
        serde_json::json!({"count": count, "mean_ms": p50_ms, "p50_ms": p50_ms,
            "p90_ms": p99_ms, "p99_ms": p99_ms, "p999_ms": p99_ms, "max_ms": p99_ms})
    }

    /// A run record's monitor summary with the kernel's figures for port 8080, as
    /// monitor.json holds them.
    fn kernel_os() -> webscope_record::Sampled {
        serde_json::from_value(serde_json::json!({
            "ports": [8080],
            "kernel": {"dequeue": "", "unattached": [], "runq": {"pids": [], "untimed": 0, "wait": null},
                "most_retransmitting": [
                    {"local": "127.0.0.1:8080", "peer": "127.0.0.1:40001", "retrans": 12},
                    {"local": "127.0.0.1:8080", "peer": "127.0.0.1:40002", "retrans": 5},
                    {"local": "127.0.0.1:8080", "peer": "[::1]:40003", "retrans": 2},
                    {"local": "127.0.0.1:8080", "peer": "127.0.0.1:40004", "retrans": 1}],
                "ports": [{"port": 8080, "established": 400, "accepted_syscall": 400, "accepted_read": 0,
                    "closed": 400, "closed_unseen": 3, "closed_waiting": 0, "time_wait": 398,
                    "time_wait_expired": 7, "time_wait_cut": 390, "time_wait_reset": 1,
                    "time_in_time_wait": latency(398, 250.0, 59_870.0),
                    "retrans_segs": 20, "retransmissions": 20, "rtos": 0, "synack_retrans": 0,
                    "overflows_ack": 0, "listen_drops": 0, "conns_retransmitting": 4,
                    "most_retrans_per_conn": 12, "transitions": {}, "accept_wait": null,
                    "lifetime": latency(400, 0.25, 1.5),
                    "lifetime_from_syn": latency(398, 0.3, 1.6)}]},
        }))
        .expect("a monitor summary")
    }

    #[test]
    fn the_kernels_figures_are_a_row_per_run_with_their_units_and_json_where_measured() {
        let mut run = crate::point::test_point(2.0, 200.0, 0.3, Some(0.5)).run;
        assert_eq!(of(&run), None, "a run without kernel figures");
        assert!(
            table(&[(1.0, None), (2.0, None)], "clients").is_none(),
            "no table then"
        );
        run.os = Some(kernel_os());
        let measured = of(&run).expect("the kernel's figures");
        let runs = [(1.0, None), (2.0, Some(&measured))];
        let Some(Block::Table { caption, table: t }) = table(&runs, "clients") else {
            panic!("no table");
        };
        assert!(caption.contains("ran its 60 s"), "{caption}");
        let cell = |row: usize, name: &str| {
            let col = t.header.iter().position(|h| h == name).expect(name);
            t.rows[row][col].clone()
        };
        assert_eq!(cell(1, "lifetime p50/p99 ms"), "0.250/1.50");
        assert_eq!(cell(1, "from the SYN p50/p99 ms"), "0.300/1.60");
        assert_eq!(cell(1, "into TIME_WAIT"), "398");
        assert_eq!(cell(1, "TIME_WAIT ended: ran 60 s/new SYN/RST"), "7/390/1");
        // Seconds: a quarter of one, and the 60 s a TIME_WAIT runs.
        assert_eq!(cell(1, "time in TIME_WAIT p50/p99 s"), "0.250/59.9");
        assert_eq!(cell(1, "segments retransmitted"), "20");
        assert_eq!(
            cell(1, "most retransmitting (peer, segments)"),
            "127.0.0.1:40001 12, 127.0.0.1:40002 5, [::1]:40003 2, +1 more"
        );
        assert_eq!(cell(0, "time in TIME_WAIT p50/p99 s"), "-");
        assert_eq!(t.rows[0].len(), t.header.len());

        let j = |c: Option<&Connections>| serde_json::to_value(figures(c)).unwrap();
        let (none, some) = (j(None), j(Some(&measured)));
        assert_eq!(none, serde_json::json!({}), "absent where not measured");
        assert_eq!(some["lifetime_from_syn_p99_ms"], 1.6);
        assert_eq!(some["time_in_time_wait_p99_ms"], 59_870.0);
        assert_eq!(
            (
                &some["time_wait_expired"],
                &some["time_wait_cut"],
                &some["time_wait_reset"]
            ),
            (
                &serde_json::json!(7),
                &serde_json::json!(390),
                &serde_json::json!(1)
            )
        );
        assert_eq!(some["retrans_segs"], 20);
        let worst = some["most_retransmitting"].as_array().unwrap();
        assert_eq!(worst.len(), 4, "report.json keeps every one the run listed");
        assert_eq!(worst[0]["peer"], "127.0.0.1:40001");
        assert_eq!(worst[0]["retrans"], 12);
    }
}
