//! The server's host seen through its Prometheus node_exporter: the same groups, row keys and
//! columns as the local `/proc` sources (`cpu`, `system`, `memory`, `disk`, `net`, `tcp`,
//! `sockets`), so that charts and verdicts read either alike.
//!
//! node_exporter counts what `/proc` counts (it reads the same files on its host), so each
//! column is the same counter turned into a rate the same way. What it does not export is
//! NaN, an empty CSV cell: the `softirq` count of `/proc/stat` (its softirqs collector is off
//! by default), the TCP counters outside its default `netstat` field list (AttemptFails,
//! EstabResets, TW, TWKilled, SYN cookies' sent/recv/failed are partly there), and every
//! per-process figure: the `processes` collector only counts processes by state, so the host's
//! CPU stands in for the server's processes. Counters that go backwards (an exporter or host
//! restart) give NaN, never a negative rate.

mod scrape;

use std::collections::{BTreeMap, HashMap};

pub(crate) use scrape::{scrape, split, Series};

use crate::sources::{cpu::CPU, cpu::SYSTEM, disk::DISK, memory::MEMORY, net::NET};
use crate::sources::{snmp::COUNTERS, snmp::TCP, sockstat::SOCKETS};
use crate::sources::{Ctx, Source};
use crate::table::{Group, GroupRows, Row};

/// The modes of `node_cpu_seconds_total`, in the local cpu group's column order.
const MODES: [&str; 8] = [
    "user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal",
];

/// The node_exporter source.
pub(crate) struct NodeExporter {
    url: String,
    previous: Option<Series>,
}

impl NodeExporter {
    /// Scrapes `url` once: an exporter that does not answer now is an error at start.
    pub fn start(url: &str) -> Result<NodeExporter, String> {
        let first = scrape(url).map_err(|why| {
            format!("cannot scrape node_exporter at {url}: {why} (is prometheus-node-exporter running there, and the port open?)")
        })?;
        if !first.has("node_cpu_seconds_total") {
            return Err(format!(
                "{url} answers but is not a node_exporter (no node_cpu_seconds_total): give the URL of its /metrics"
            ));
        }
        Ok(NodeExporter {
            url: url.to_string(),
            previous: Some(first),
        })
    }
}

/// Groups, with the CSV columns a remote source cannot fill, for the summary's notes.
pub(crate) const UNFILLED: &str = "per-process figures (the host's CPU stands in for the server's processes), softirq_per_s, and the TCP counters outside node_exporter's default netstat fields";

impl Source for NodeExporter {
    fn name(&self) -> &'static str {
        "node_exporter"
    }

    fn sample(&mut self, ctx: &mut Ctx<'_>, out: &mut Vec<GroupRows>) -> Result<(), String> {
        let now = match scrape(&self.url) {
            Ok(now) => now,
            Err(why) => {
                // Scraping goes on; the next good scrape starts a new baseline.
                self.previous = None;
                return Err(format!("cannot scrape {}: {why}", self.url));
            }
        };
        if let Some(before) = self.previous.as_ref().filter(|_| ctx.dt > 0.0) {
            out.extend(rows(before, &now, ctx.dt));
        }
        self.previous = Some(now);
        Ok(())
    }
}

/// A counter's rate between two scrapes; NaN when it went backwards or is missing.
fn rate(before: Option<f64>, after: Option<f64>, dt: f64) -> f64 {
    match (before, after) {
        (Some(b), Some(a)) if a >= b && dt > 0.0 => (a - b) / dt,
        _ => f64::NAN,
    }
}

fn level(v: Option<f64>) -> f64 {
    v.unwrap_or(f64::NAN)
}

/// Every group's rows between two scrapes `dt` seconds apart.
pub(crate) fn rows(before: &Series, after: &Series, dt: f64) -> Vec<GroupRows> {
    vec![
        group(&CPU, cpu_rows(before, after)),
        group(&SYSTEM, vec![system_row(before, after, dt)]),
        group(&MEMORY, vec![memory_row(before, after, dt)]),
        group(
            &DISK,
            per_device(
                before,
                after,
                dt,
                &DISK_COLUMNS,
                Some(crate::sources::disk::ignored),
            ),
        ),
        group(&NET, per_device(before, after, dt, &NET_COLUMNS, None)),
        group(&TCP, vec![tcp_row(before, after, dt)]),
        group(&SOCKETS, vec![sockets_row(after)]),
    ]
}

fn group(group: &'static Group, rows: Vec<Row>) -> GroupRows {
    GroupRows { group, rows }
}

/// cpu label → mode → seconds.
fn cpu_seconds(s: &Series) -> BTreeMap<u32, HashMap<String, f64>> {
    let mut out: BTreeMap<u32, HashMap<String, f64>> = BTreeMap::new();
    for (labels, v) in s.all("node_cpu_seconds_total") {
        let (Some(cpu), Some(mode)) = (labels.get("cpu"), labels.get("mode")) else {
            continue;
        };
        let Ok(cpu) = cpu.parse::<u32>() else {
            continue;
        };
        out.entry(cpu).or_default().insert(mode.clone(), *v);
    }
    out
}

/// The eight shares and busy, in per cent, as the local cpu group has them.
fn shares(before: &HashMap<String, f64>, after: &HashMap<String, f64>) -> Vec<f64> {
    let deltas: Vec<f64> = MODES
        .iter()
        .map(|m| {
            let d = after.get(*m).unwrap_or(&0.0) - before.get(*m).unwrap_or(&0.0);
            d.max(0.0)
        })
        .collect();
    let total: f64 = deltas.iter().sum();
    let mut out: Vec<f64> = deltas
        .iter()
        .map(|d| {
            if total > 0.0 {
                d * 100.0 / total
            } else {
                f64::NAN
            }
        })
        .collect();
    out.push(100.0 - out[3] - out[4]);
    out
}

fn cpu_rows(before: &Series, after: &Series) -> Vec<Row> {
    let (b, a) = (cpu_seconds(before), cpu_seconds(after));
    let sum = |m: &BTreeMap<u32, HashMap<String, f64>>| {
        let mut all: HashMap<String, f64> = HashMap::new();
        for modes in m.values() {
            for (mode, v) in modes {
                *all.entry(mode.clone()).or_default() += v;
            }
        }
        all
    };
    let mut rows = vec![Row::new(["all"], shares(&sum(&b), &sum(&a)))];
    for (cpu, modes) in &a {
        if let Some(old) = b.get(cpu) {
            rows.push(Row::new([format!("cpu{cpu}")], shares(old, modes)));
        }
    }
    rows
}

fn system_row(before: &Series, after: &Series, dt: f64) -> Row {
    let r = |m: &str| rate(before.value(m), after.value(m), dt);
    Row::new(
        Vec::<String>::new(),
        vec![
            r("node_context_switches_total"),
            r("node_intr_total"),
            // node_softirqs_total needs the softirqs collector, off by default.
            r("node_softirqs_total"),
            r("node_forks_total"),
            level(after.value("node_procs_running")),
            level(after.value("node_procs_blocked")),
            level(after.value("node_load1")),
        ],
    )
}

fn memory_row(before: &Series, after: &Series, dt: f64) -> Row {
    let mib = |m: &str| level(after.value(&format!("node_memory_{m}_bytes"))) / (1024.0 * 1024.0);
    let vm = |m: &str| {
        let name = format!("node_vmstat_{m}");
        rate(before.value(&name), after.value(&name), dt)
    };
    let swap_used = mib("SwapTotal") - mib("SwapFree");
    Row::new(
        Vec::<String>::new(),
        vec![
            mib("MemTotal"),
            mib("MemFree"),
            mib("MemAvailable"),
            mib("Buffers"),
            mib("Cached"),
            mib("Dirty"),
            mib("Writeback"),
            swap_used,
            vm("pgfault"),
            vm("pgmajfault"),
            vm("pswpin"),
            vm("pswpout"),
            vm("pgpgin"),
            vm("pgpgout"),
        ],
    )
}

/// How one per-device column comes from the exporter.
enum Col {
    /// A counter's rate, divided by the number.
    Rate(&'static str, f64),
    /// A counter's rate times 100 (seconds busy per second → per cent).
    Pct(&'static str),
    /// A gauge.
    Level(&'static str),
    /// Milliseconds per operation: Δ(time counters) / Δ(operation counters).
    Await,
}

const DISK_COLUMNS: [Col; 7] = [
    Col::Rate("node_disk_reads_completed_total", 1.0),
    Col::Rate("node_disk_writes_completed_total", 1.0),
    Col::Rate("node_disk_read_bytes_total", 1024.0),
    Col::Rate("node_disk_written_bytes_total", 1024.0),
    Col::Pct("node_disk_io_time_seconds_total"),
    Col::Await,
    Col::Level("node_disk_io_now"),
];

const NET_COLUMNS: [Col; 8] = [
    Col::Rate("node_network_receive_bytes_total", 1024.0),
    Col::Rate("node_network_transmit_bytes_total", 1024.0),
    Col::Rate("node_network_receive_packets_total", 1.0),
    Col::Rate("node_network_transmit_packets_total", 1.0),
    Col::Rate("node_network_receive_drop_total", 1.0),
    Col::Rate("node_network_transmit_drop_total", 1.0),
    Col::Rate("node_network_receive_errs_total", 1.0),
    Col::Rate("node_network_transmit_errs_total", 1.0),
];

/// One row per `device` label of the first column's metric, sorted, as the local sources.
fn per_device(
    before: &Series,
    after: &Series,
    dt: f64,
    columns: &[Col],
    ignored: Option<fn(&str) -> bool>,
) -> Vec<Row> {
    let device_value = |s: &Series, metric: &str, device: &str| {
        s.all(metric)
            .iter()
            .find(|(l, _)| l.get("device").map(String::as_str) == Some(device))
            .map(|(_, v)| *v)
    };
    let Some(Col::Rate(first, _)) = columns.first() else {
        return Vec::new();
    };
    let mut devices: Vec<String> = after
        .all(first)
        .iter()
        .filter_map(|(l, _)| l.get("device").cloned())
        .filter(|d| !ignored.is_some_and(|f| f(d)))
        .collect();
    devices.sort();
    devices.dedup();
    devices
        .into_iter()
        .map(|dev| {
            let r = |m: &str| {
                rate(
                    device_value(before, m, &dev),
                    device_value(after, m, &dev),
                    dt,
                )
            };
            let values = columns
                .iter()
                .map(|c| match c {
                    Col::Rate(m, div) => r(m) / div,
                    Col::Pct(m) => r(m) * 100.0,
                    Col::Level(m) => level(device_value(after, m, &dev)),
                    Col::Await => {
                        let ops = r("node_disk_reads_completed_total")
                            + r("node_disk_writes_completed_total");
                        let time = r("node_disk_read_time_seconds_total")
                            + r("node_disk_write_time_seconds_total");
                        if ops > 0.0 {
                            time * 1000.0 / ops
                        } else {
                            f64::NAN
                        }
                    }
                })
                .collect();
            Row::new([dev], values)
        })
        .collect()
}

fn tcp_row(before: &Series, after: &Series, dt: f64) -> Row {
    let values = COUNTERS
        .iter()
        .map(|c| {
            let metric = format!("node_netstat_{}_{}", c.prefix, c.field);
            if c.level {
                level(after.value(&metric))
            } else {
                rate(before.value(&metric), after.value(&metric), dt)
            }
        })
        .collect();
    Row::new(Vec::<String>::new(), values)
}

fn sockets_row(after: &Series) -> Row {
    let v = |m: &str| level(after.value(m));
    Row::new(
        Vec::<String>::new(),
        vec![
            v("node_sockstat_sockets_used"),
            v("node_sockstat_TCP_inuse"),
            v("node_sockstat_TCP_orphan"),
            v("node_sockstat_TCP_tw"),
            v("node_sockstat_TCP_alloc"),
            v("node_sockstat_TCP_mem"),
            v("node_sockstat_TCP6_inuse"),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(n: u8) -> Series {
        let text = match n {
            0 => include_str!("../../tests/data/node_exporter.0"),
            _ => include_str!("../../tests/data/node_exporter.1"),
        };
        Series::parse(text).expect("fixture parses")
    }

    /// A value of the fixture, read independently of the parser.
    fn raw(n: u8, series: &str) -> f64 {
        let text = match n {
            0 => include_str!("../../tests/data/node_exporter.0"),
            _ => include_str!("../../tests/data/node_exporter.1"),
        };
        text.lines()
            .find_map(|l| {
                l.strip_prefix(series)?
                    .strip_prefix(' ')?
                    .trim()
                    .parse()
                    .ok()
            })
            .unwrap_or_else(|| panic!("{series} not in fixture {n}"))
    }

    fn column(groups: &[GroupRows], group: &str, row: &str, column: &str) -> f64 {
        let g = groups.iter().find(|g| g.group.name == group).unwrap();
        let i = g.group.columns.iter().position(|c| *c == column).unwrap();
        g.rows.iter().find(|r| r.key_name() == row).unwrap().values[i]
    }

    #[test]
    fn the_exporters_series_map_to_the_local_groups() {
        let groups = rows(&fixture(0), &fixture(1), 2.0);
        let names: Vec<&str> = groups.iter().map(|g| g.group.name).collect();
        assert_eq!(
            names,
            ["cpu", "system", "memory", "disk", "net", "tcp", "sockets"]
        );
        for g in &groups {
            for r in &g.rows {
                assert_eq!(r.values.len(), g.group.columns.len(), "{}", g.group.name);
            }
        }
        // Rates are the counters' differences over the interval.
        let ctxt =
            (raw(1, "node_context_switches_total") - raw(0, "node_context_switches_total")) / 2.0;
        assert_eq!(column(&groups, "system", "all", "ctxt_per_s"), ctxt);
        let opens =
            (raw(1, "node_netstat_Tcp_ActiveOpens") - raw(0, "node_netstat_Tcp_ActiveOpens")) / 2.0;
        assert_eq!(column(&groups, "tcp", "all", "active_opens_per_s"), opens);
        assert_eq!(
            column(&groups, "tcp", "all", "curr_estab"),
            raw(1, "node_netstat_Tcp_CurrEstab")
        );
        assert_eq!(
            column(&groups, "sockets", "all", "tcp_tw"),
            raw(1, "node_sockstat_TCP_tw")
        );
        let eth = |n| raw(n, "node_network_receive_bytes_total{device=\"eth0\"}");
        assert_eq!(
            column(&groups, "net", "eth0", "rx_kib_per_s"),
            (eth(1) - eth(0)) / 2.0 / 1024.0
        );
        let vda = |n| raw(n, "node_disk_io_time_seconds_total{device=\"vda\"}");
        assert_eq!(
            column(&groups, "disk", "vda", "util_pct"),
            (vda(1) - vda(0)) / 2.0 * 100.0
        );
        let g = groups.iter().find(|g| g.group.name == "disk").unwrap();
        assert!(
            g.rows.iter().all(|r| !r.key_name().starts_with("zram")),
            "as the local source"
        );
        // CPU shares add up to 100 and busy is what idle and iowait leave.
        for row in ["all", "cpu0", "cpu1"] {
            let sum: f64 = [
                "user_pct",
                "nice_pct",
                "system_pct",
                "idle_pct",
                "iowait_pct",
                "irq_pct",
                "softirq_pct",
                "steal_pct",
            ]
            .iter()
            .map(|c| column(&groups, "cpu", row, c))
            .sum();
            assert!((sum - 100.0).abs() < 1e-9, "{row}: {sum}");
            let busy = column(&groups, "cpu", row, "busy_pct");
            let rest = 100.0
                - column(&groups, "cpu", row, "idle_pct")
                - column(&groups, "cpu", row, "iowait_pct");
            assert!((busy - rest).abs() < 1e-9);
        }
        // What the exporter does not export by default is unknown, not zero.
        assert!(column(&groups, "system", "all", "softirq_per_s").is_nan());
        assert!(column(&groups, "tcp", "all", "attempt_fails_per_s").is_nan());
        assert_eq!(
            column(&groups, "memory", "all", "total_mib"),
            raw(1, "node_memory_MemTotal_bytes") / 1048576.0
        );
    }

    #[test]
    fn counters_going_back_are_unknown_not_negative() {
        // An exporter restarted between scrapes: every counter starts again.
        let groups = rows(&fixture(1), &fixture(0), 1.0);
        assert!(column(&groups, "system", "all", "ctxt_per_s").is_nan());
        assert!(column(&groups, "tcp", "all", "active_opens_per_s").is_nan());
    }
}
