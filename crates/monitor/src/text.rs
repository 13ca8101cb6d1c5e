//! The summary as a person reads it at the end of `webscope monitor`: the main figures per
//! group (means, with maxima where peaks matter), the profile, the monitor's own cost.

use std::fmt::Write;
use webscope_report::human::pct;

use webscope_report::human::bytes;

use crate::live::short;
use crate::profile::Category;
use crate::tcp::TcpState;
use crate::Summary;

/// The sources count memory in MiB and rates in KiB/s; sizes are printed in bytes' one rule.
const KIB: f64 = 1024.0;
const MIB: f64 = 1024.0 * 1024.0;

/// `v` with `decimals` decimals, or "-" when there is no figure (never "NaN"), as
/// [`short`] says it.
fn fixed(v: f64, decimals: usize) -> String {
    if v.is_finite() {
        format!("{v:.decimals$}")
    } else {
        "-".into()
    }
}

impl Summary {
    /// [`Summary::mean`], NaN (printed "-") when there is none.
    fn mean_or_nan(&self, group: &str, row: &str, column: &str) -> f64 {
        self.mean(group, row, column).unwrap_or(f64::NAN)
    }

    /// [`Summary::max`], NaN (printed "-") when there is none.
    fn max_or_nan(&self, group: &str, row: &str, column: &str) -> f64 {
        self.max(group, row, column).unwrap_or(f64::NAN)
    }

    /// A disk's time per I/O: "no I/O" when it did none over the run (there is nothing to
    /// divide), "-" when the source has no figure.
    fn per_io(&self, disk: &str) -> String {
        let ios = self.mean_or_nan("disk", disk, "reads_per_s")
            + self.mean_or_nan("disk", disk, "writes_per_s");
        let wait = self.mean_or_nan("disk", disk, "await_ms");
        if ios == 0.0 {
            "no I/O".into()
        } else {
            format!("{} ms per I/O", fixed(wait, 2))
        }
    }

    fn rows_of(&self, group: &str) -> Vec<&String> {
        self.groups
            .get(group)
            .map_or_else(Vec::new, |g| g.rows.keys().collect())
    }

    /// A few lines per group, for the terminal.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "webscope monitor: {} samples over {:.1} s (every {} ms){}",
            self.samples,
            self.duration_s,
            (self.interval_s * 1e3).round(),
            if self.interrupted {
                ", stopped early"
            } else {
                ""
            }
        );
        let m = |g: &str, r: &str, c: &str| self.mean_or_nan(g, r, c);
        let _ = writeln!(
            out,
            "  cpu      busy {}% mean, {}% max (user {}, system {}, softirq {}, iowait {}, steal {})",
            fixed(m("cpu", "all", "busy_pct"), 1),
            fixed(self.max_or_nan("cpu", "all", "busy_pct"), 1),
            fixed(m("cpu", "all", "user_pct") + m("cpu", "all", "nice_pct"), 1),
            fixed(m("cpu", "all", "system_pct"), 1),
            fixed(m("cpu", "all", "softirq_pct") + m("cpu", "all", "irq_pct"), 1),
            fixed(m("cpu", "all", "iowait_pct"), 1),
            fixed(m("cpu", "all", "steal_pct"), 1),
        );
        let _ = writeln!(
            out,
            "  system   {} context switches/s, {} interrupts/s, {} softirqs/s, run queue {} mean",
            short(m("system", "all", "ctxt_per_s")),
            short(m("system", "all", "intr_per_s")),
            short(m("system", "all", "softirq_per_s")),
            fixed(m("system", "all", "procs_running"), 1),
        );
        let _ = writeln!(
            out,
            "  memory   {} available, {} page faults/s ({} major), swap in/out {}/{} pages/s",
            bytes(m("memory", "all", "available_mib") * MIB),
            short(m("memory", "all", "pgfault_per_s")),
            short(m("memory", "all", "pgmajfault_per_s")),
            short(m("memory", "all", "pswpin_per_s")),
            short(m("memory", "all", "pswpout_per_s")),
        );
        for disk in self.rows_of("disk") {
            let _ = writeln!(
                out,
                "  disk     {disk}: {}% busy ({}% max), {} reads/s, {} writes/s, {}/s written, {}",
                fixed(m("disk", disk, "util_pct"), 1),
                fixed(self.max_or_nan("disk", disk, "util_pct"), 0),
                short(m("disk", disk, "reads_per_s")),
                short(m("disk", disk, "writes_per_s")),
                bytes(m("disk", disk, "write_kib_per_s") * KIB),
                self.per_io(disk),
            );
        }
        for iface in self.rows_of("net") {
            let rx = m("net", iface, "rx_kib_per_s");
            let tx = m("net", iface, "tx_kib_per_s");
            if rx + tx > 0.0 {
                let _ = writeln!(
                    out,
                    "  net      {iface}: rx {}/s, tx {}/s, {} drops/s",
                    bytes(rx * KIB),
                    bytes(tx * KIB),
                    short(m("net", iface, "rx_drop_per_s") + m("net", iface, "tx_drop_per_s")),
                );
            }
        }
        let _ = writeln!(
            out,
            "  tcp      {} passive and {} active opens/s, {} retransmits/s, {} resets sent/s, {} listen overflows/s, {} TIME_WAIT ended/s",
            short(m("tcp", "all", "passive_opens_per_s")),
            short(m("tcp", "all", "active_opens_per_s")),
            short(m("tcp", "all", "retrans_segs_per_s")),
            short(m("tcp", "all", "out_rsts_per_s")),
            short(m("tcp", "all", "listen_overflows_per_s")),
            short(m("tcp", "all", "time_wait_ended_per_s")),
        );
        let _ = writeln!(
            out,
            "  sockets  host TIME_WAIT {} mean ({} max), TCP in use {}, orphans {}",
            short(m("sockets", "all", "tcp_tw")),
            short(self.max_or_nan("sockets", "all", "tcp_tw")),
            short(m("sockets", "all", "tcp_inuse")),
            short(m("sockets", "all", "tcp_orphan")),
        );
        self.ports_text(&mut out);
        for row in self.rows_of("process") {
            let pid = row.split('/').next().unwrap_or(row);
            let _ = writeln!(
                out,
                "  pid {row}: cpu {}% of a core (run {}%, waiting for a CPU {}%), RSS {}, {} fds, {} threads, {} involuntary switches/s",
                fixed(m("process", row, "cpu_pct"), 1),
                fixed(m("process", row, "run_pct"), 1),
                fixed(m("process", row, "wait_pct"), 1),
                bytes(m("process", row, "rss_mib") * MIB),
                short(self.stat("process", row, "fds").map_or(f64::NAN, |s| s.last)),
                short(self.stat("process", row, "threads").map_or(f64::NAN, |s| s.last)),
                short(m("process", row, "invol_cs_per_s")),
            );
            let threads: Vec<&String> = self
                .rows_of("threads")
                .into_iter()
                .filter(|t| t.split('/').next() == Some(pid))
                .collect();
            if threads.len() > 1 {
                let list: Vec<String> = threads
                    .iter()
                    .take(8)
                    .map(|t| {
                        let name = t.splitn(3, '/').nth(2).unwrap_or(t);
                        format!(
                            "{name} run {}/wait {}",
                            fixed(m("threads", t, "run_pct"), 0),
                            fixed(m("threads", t, "wait_pct"), 0)
                        )
                    })
                    .collect();
                let more = if threads.len() > 8 {
                    format!(" (+{} more)", threads.len() - 8)
                } else {
                    String::new()
                };
                let _ = writeln!(
                    out,
                    "           threads (% of wall time): {}{more}",
                    list.join(", ")
                );
            }
        }
        if let Some(k) = &self.kernel {
            out.push_str(&k.text());
        }
        if let Some(why) = &self.kernel_error {
            let _ = writeln!(out, "  kernel   {why}");
        }
        self.profile_text(&mut out);
        let _ = writeln!(
            out,
            "  cost     sampling used {} of one core ({:.0} us per sample){}",
            pct(self.cost.pct_of_one_core / 100.0),
            self.cost.mean_sample_us,
            self.cost
                .perf_record_cpu_s
                .map_or(String::new(), |s| format!(
                    "; perf record {} more",
                    pct(s / self.duration_s.max(1e-9))
                )),
        );
        out
    }

    fn ports_text(&self, out: &mut String) {
        for port in &self.ports {
            for side in ["local", "remote"] {
                let row = format!("{port}/{side}");
                if self
                    .stat("ports", &row, "total")
                    .is_none_or(|s| s.max == 0.0)
                {
                    continue;
                }
                let states: Vec<String> = TcpState::CONNECTION
                    .into_iter()
                    .map(TcpState::name)
                    .filter(|c| self.max_or_nan("ports", &row, c) > 0.0)
                    .map(|c| format!("{} {}", c, short(self.mean_or_nan("ports", &row, c))))
                    .collect();
                let _ = writeln!(out, "  :{port:<6} {side:<6} (mean) {}", states.join(", "));
            }
            let key = port.to_string();
            if let Some(q) = self.stat("listen", &key, "accept_queue") {
                let _ = writeln!(
                    out,
                    "  :{port:<6} accept queue {:.1} mean, {} max, limit {}",
                    q.mean,
                    short(q.max),
                    short(
                        self.stat("listen", &key, "accept_limit")
                            .map_or(f64::NAN, |s| s.last)
                    ),
                );
            }
        }
        if let Some(w) = &self.tcp_walks {
            if w.walks > 0 {
                let _ = writeln!(
                    out,
                    "           states counted {} times by {} ({:.2} ms CPU each, every {:.1} s under a {}% budget)",
                    w.walks, w.method, w.mean_walk_cpu_ms, w.mean_spacing_s, w.budget_pct
                );
            }
        }
    }

    fn profile_text(&self, out: &mut String) {
        if let Some(p) = &self.profile {
            let kernel: Vec<String> = p
                .categories
                .iter()
                .filter(|c| c.category.is_kernel())
                .map(|c| {
                    format!(
                        "{} {}",
                        c.category.name(),
                        pct(c.kernel_pct.unwrap_or(0.0) / 100.0)
                    )
                })
                .collect();
            let all: Vec<String> = p
                .categories
                .iter()
                .filter(|c| !c.category.is_kernel())
                .map(|c| format!("{} {}", c.category.name(), pct(c.pct / 100.0)))
                .collect();
            let kernel_share: f64 = p
                .categories
                .iter()
                .filter(|c| c.category.is_kernel())
                .map(|c| c.pct)
                .sum();
            let _ = writeln!(
                out,
                "  profile  {} samples at {} Hz; kernel {} of all: {}",
                p.samples,
                p.frequency_hz,
                pct(kernel_share / 100.0),
                kernel.join(", ")
            );
            let _ = writeln!(out, "           of all samples: {}", all.join(", "));
            for c in Category::ALL {
                if let Some(share) = p
                    .share(c)
                    .filter(|s| s.samples > 0 && s.category != Category::Idle)
                {
                    let top: Vec<String> = share
                        .top
                        .iter()
                        .take(4)
                        .map(|s| format!("{} {}", s.symbol, pct(s.pct / 100.0)))
                        .collect();
                    let _ = writeln!(out, "           {:<12} {}", c.name(), top.join(", "));
                }
            }
        }
        if let Some(why) = &self.profile_error {
            let _ = writeln!(out, "  profile  none: {why}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A node_exporter run's summary in which disk `sr0` did no I/O (its time per I/O is
    /// never a figure: nothing to divide) and the CPU's steal and the run queue are absent.
    fn summary() -> Summary {
        serde_json::from_value(serde_json::json!({
            "version": 1, "started_unix": 0.0, "duration_s": 3.0, "interval_s": 1.0,
            "samples": 3, "interrupted": false, "pids": [], "ports": [],
            "source": "node_exporter http://127.0.0.1:9100/metrics",
            "host": {"cpus": 2, "kernel": "", "hostname": ""},
            "groups": {
                "cpu": {"about": "", "keys": [], "columns": [], "rows": {"all": {
                    "busy_pct": {"mean": 12.5, "min": 10.0, "max": 15.0, "last": 12.5, "n": 3}
                }}},
                "disk": {"about": "", "keys": [], "columns": [], "rows": {
                    "sr0": {
                        "reads_per_s": {"mean": 0.0, "min": 0.0, "max": 0.0, "last": 0.0, "n": 3},
                        "writes_per_s": {"mean": 0.0, "min": 0.0, "max": 0.0, "last": 0.0, "n": 3}
                    },
                    "vda": {
                        "reads_per_s": {"mean": 4.0, "min": 0.0, "max": 12.0, "last": 0.0, "n": 3},
                        "writes_per_s": {"mean": 0.0, "min": 0.0, "max": 0.0, "last": 0.0, "n": 3},
                        "await_ms": {"mean": 0.25, "min": 0.25, "max": 0.25, "last": 0.25, "n": 1}
                    }
                }}
            },
            "tcp_walks": null, "profile": null, "profile_error": null, "notes": [],
            "cost": {"sampler_cpu_s": 0.0, "wall_s": 3.0, "pct_of_one_core": 0.1,
                     "mean_sample_us": 100.0, "by_source": {}, "perf_record_cpu_s": null}
        }))
        .expect("a summary")
    }

    #[test]
    fn a_figure_with_no_data_is_never_nan() {
        let text = summary().text();
        assert!(!text.contains("NaN"), "{text}");
        assert!(
            text.contains("sr0: -% busy (-% max), 0 reads/s, 0 writes/s"),
            "{text}"
        );
        assert!(text.contains("-/s written, no I/O\n"), "{text}");
        assert!(
            text.contains("vda:") && text.contains("0.25 ms per I/O"),
            "{text}"
        );
        assert!(
            text.contains("busy 12.5% mean, 15.0% max (user -, system -,"),
            "{text}"
        );
        assert!(text.contains("run queue - mean"), "{text}");
    }
}
