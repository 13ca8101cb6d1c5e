//! The evidence a run's verdict is drawn from: what [`crate::judge`] weighs
//! (the server's and the generator's CPUs, the machines, disks, links, ports), gathered from
//! the run's record. Not for the verdict itself, nor for the figures a page shows (a
//! point's).

use webscope_monitor::{Stat, Summary};

use crate::os_figures::{cpu_shares, server_host};
use crate::{own_time_wait, Evidence, Refused, ACTIVE_THREAD};
use webscope_record::health::Health;
use webscope_record::RunRecord;

/// The evidence a verdict is drawn from, out of a run's record.
pub fn evidence(run: &RunRecord, health: &Health) -> Evidence {
    let l = &run.load;
    let os = run.local_os();
    // The server's machine: through node_exporter when it is remote, else this one.
    let (server_host_os, generator_host) = match server_host(run) {
        Some(remote) => (Some(remote), os.and_then(cpu_shares)),
        None => (os, None),
    };
    let server_processes = (!run.env.server_processes.is_empty()).then(|| {
        let n = run.env.server_processes.len();
        let names: std::collections::BTreeSet<&str> = run
            .env
            .server_processes
            .iter()
            .filter_map(|p| p.split_once(' ').map(|(_, c)| c))
            .collect();
        format!(
            "{n} process{}: {}",
            if n == 1 { "" } else { "es" },
            names.into_iter().collect::<Vec<_>>().join(", ")
        )
    });
    let busiest_link = os.and_then(|os| {
        os.groups
            .get("net")?
            .rows
            .iter()
            .filter_map(|(name, row)| {
                let mbit = run.env.link_mbit.get(name)?;
                let kib = |c: &str| Some(row.get(c)?.mean);
                let peak = kib("rx_kib_per_s")?.max(kib("tx_kib_per_s")?);
                Some((name.clone(), peak * 8.192 / 1000.0 / mbit * 100.0))
            })
            .max_by(|a, b| a.1.total_cmp(&b.1))
    });
    let queue_wait = crate::os_figures::queue_wait(run);
    Evidence {
        clients: l.connections as f64,
        offered_rps: l
            .open_loop()
            .then(|| l.rate.unwrap_or(0.0))
            .filter(|r| *r > 0.0),
        goodput_rps: health.goodput_rps,
        mean_ms: l.total.latency_us.mean / 1000.0,
        server_busy_cores: run
            .server
            .as_ref()
            .filter(|_| {
                !run.env.server_processes.is_empty()
                    || run.server.as_ref().is_some_and(|s| s.cpu_s > 0.0)
            })
            .map(|s| s.busy_cores),
        server_cpus: run.env.server_cpus,
        server_processes,
        generator_busy: l.generator_busy,
        generator_busy_or_waiting: l.generator_busy_or_waiting,
        server_host: server_host_os.and_then(cpu_shares),
        server_host_source: server_host_os.map(|o| o.source.clone()),
        generator_host,
        disk_util_pct: server_host_os.and_then(|os| os.busiest("disk", "util_pct")),
        net_util_pct: busiest_link,
        time_wait: run_time_wait(run),
        connects: l.total.run.connects as f64,
        duration_s: l.duration_s,
        server_threads: server_threads(os).map(|t| {
            t.iter()
                .filter(|(_, run, wait)| run + wait >= ACTIVE_THREAD)
                .count() as f64
        }),
        server_busiest_thread: server_threads(os).and_then(|t| {
            t.into_iter()
                .max_by(|a, b| (a.1 + a.2).total_cmp(&(b.1 + b.2)))
        }),
        port_range: run.env.port_range,
        tw_buckets: run.env.tw_buckets,
        listen_overflows_per_s: server_host_os
            .and_then(|os| os.mean("tcp", "all", "listen_overflows_per_s")),
        accept_wait_p99_ms: queue_wait.map(|q| q.wait.p99_ms),
        accept_wait_per_request_ms: queue_wait.map(|q| q.per_request_ms),
        missed_rate: l.rate.and_then(|rate| {
            let done = l.outcomes().ended();
            webscope_load::missed_rate(rate, l.duration_s, done, l.total.run.not_sent)
        }),
        refused: Refused::of(health),
    }
}

/// The TIME_WAIT sockets this run's own connections left: what the table's TIME_WAIT column
/// shows and the ports verdict weighs, so that both count the same thing. The port's count
/// (or, for a remote server, the hosts' totals) also holds what earlier runs left; the run's
/// connects bound it ([`own_time_wait`]).
pub fn run_time_wait(run: &RunRecord) -> Option<f64> {
    let os = run.local_os();
    let measured = port_time_wait(os).or_else(|| {
        // No per-port count (a remote server): the hosts' totals, which also hold other
        // ports' sockets, are an upper bound.
        server_host(run)
            .and_then(|os| os.max("sockets", "all", "tcp_tw"))
            .into_iter()
            .chain(os.and_then(|os| os.max("sockets", "all", "tcp_tw")))
            .reduce(f64::max)
    });
    own_time_wait(
        measured,
        run.load.total.run.connects as f64,
        run.load.duration_s,
    )
}

/// The server's threads as the monitor saw them (its `threads` group, the server's pids
/// only): name, and the shares of the run spent running and waiting for a CPU.
fn server_threads(os: Option<&Summary>) -> Option<Vec<(String, f64, f64)>> {
    let rows = &os?.groups.get("threads")?.rows;
    // The mean without the monitor's last sample: that one is the partial interval after the
    // load stopped (70 ms of a 100-ms step, say), which pulls a saturated thread's 95 % under
    // the limit in a 2-s run.
    let share = |row: &std::collections::BTreeMap<String, Stat>, c: &str| -> Option<f64> {
        let Stat { mean, last, n, .. } = *row.get(c)?;
        let n = n as f64;
        Some(
            if n > 2.0 {
                (mean * n - last) / (n - 1.0)
            } else {
                mean
            } / 100.0,
        )
    };
    let threads: Vec<(String, f64, f64)> = rows
        .iter()
        .filter_map(|(key, row)| {
            let name = key.rsplit('/').next().unwrap_or(key).to_string();
            Some((name, share(row, "run_pct")?, share(row, "wait_pct")?))
        })
        .collect();
    (!threads.is_empty()).then_some(threads)
}

/// TIME_WAIT sockets of the server's port, both ends (the server's side and the clients'),
/// at their most: the connections of this run only, not the host's other ports.
fn port_time_wait(os: Option<&Summary>) -> Option<f64> {
    let os = os?;
    let port = os.ports.first()?;
    let side = |s: &str| os.max("ports", &format!("{port}/{s}"), "time_wait");
    match (side("local"), side("remote")) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{judge, Bound};
    use webscope_record::health::Expect;

    /// An open-loop run's record: `rate` asked for 2 s, 160 answered, `not_sent` never sent,
    /// on a server and a generator far from their CPU limits.
    fn open_run(rate: f64, not_sent: u64) -> (RunRecord, Health) {
        let load = serde_json::json!({
            "pacing": "open", "rate": rate, "duration_s": 2.0, "connections": 4,
            "requests": 160, "errors": {"total": 0}, "not_sent": not_sent,
            "latency_us": {"mean": 50_000.0}, "status_codes": {"200": 160},
            "generator_busy": 0.05, "generator_busy_or_waiting": 0.1,
        });
        let load: webscope_load::Report = serde_json::from_value(load).unwrap();
        let health = Health::of(&load, &Expect::parse("2xx").expect("a valid list"), 2.0);
        let run = RunRecord {
            x: 4.0,
            load_description: String::new(),
            load,
            server: None,
            os: None,
            server_os: Vec::new(),
            env: Default::default(),
            syscalls: None,
        };
        (run, health)
    }

    #[test]
    fn an_open_loop_run_short_of_its_rate_is_the_generators() {
        // 4 connections to a 50-ms server carry 80 req/s of the 400 asked.
        let (run, health) = open_run(400.0, 640);
        let v = judge(&evidence(&run, &health));
        assert_eq!(v.bound, Bound::Generator, "{}", v.reading);
        assert!(
            v.reading.contains("400 req/s asked, 80 sent"),
            "{}",
            v.reading
        );
        assert!(
            v.reading
                .contains("80 % of the requests due were never sent"),
            "{}",
            v.reading
        );
        // The same run with its rate kept (1 slot in 161 missed, under 1 %) is not.
        let (run, health) = open_run(80.0, 1);
        assert_ne!(judge(&evidence(&run, &health)).bound, Bound::Generator);
    }
}
