//! The summary as a person reads it at the end of `webscope monitor`: the main figures per
//! group (means, with maxima where peaks matter), the profile, the monitor's own cost.

use std::fmt::Write;

use crate::live::short;
use crate::profile::Category;
use crate::tcp::TcpState;
use crate::Summary;

impl Summary {
    fn mean(&self, group: &str, row: &str, column: &str) -> f64 {
        self.stat(group, row, column).map_or(f64::NAN, |s| s.mean)
    }

    fn max(&self, group: &str, row: &str, column: &str) -> f64 {
        self.stat(group, row, column).map_or(f64::NAN, |s| s.max)
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
        let m = |g: &str, r: &str, c: &str| self.mean(g, r, c);
        let _ = writeln!(
            out,
            "  cpu      busy {:.1}% mean, {:.1}% max (user {:.1}, system {:.1}, softirq {:.1}, iowait {:.1}, steal {:.1})",
            m("cpu", "all", "busy_pct"),
            self.max("cpu", "all", "busy_pct"),
            m("cpu", "all", "user_pct") + m("cpu", "all", "nice_pct"),
            m("cpu", "all", "system_pct"),
            m("cpu", "all", "softirq_pct") + m("cpu", "all", "irq_pct"),
            m("cpu", "all", "iowait_pct"),
            m("cpu", "all", "steal_pct"),
        );
        let _ = writeln!(
            out,
            "  system   {} context switches/s, {} interrupts/s, {} softirqs/s, run queue {:.1} mean",
            short(m("system", "all", "ctxt_per_s")),
            short(m("system", "all", "intr_per_s")),
            short(m("system", "all", "softirq_per_s")),
            m("system", "all", "procs_running"),
        );
        let _ = writeln!(
            out,
            "  memory   {:.1} GiB available, {} page faults/s ({} major), swap in/out {}/{} pages/s",
            m("memory", "all", "available_mib") / 1024.0,
            short(m("memory", "all", "pgfault_per_s")),
            short(m("memory", "all", "pgmajfault_per_s")),
            short(m("memory", "all", "pswpin_per_s")),
            short(m("memory", "all", "pswpout_per_s")),
        );
        for disk in self.rows_of("disk") {
            let _ = writeln!(
                out,
                "  disk     {disk}: {:.1}% busy ({:.0}% max), {} reads/s, {} writes/s, {}B/s written, {:.2} ms per I/O",
                m("disk", disk, "util_pct"),
                self.max("disk", disk, "util_pct"),
                short(m("disk", disk, "reads_per_s")),
                short(m("disk", disk, "writes_per_s")),
                short(m("disk", disk, "write_kib_per_s") * 1024.0),
                m("disk", disk, "await_ms"),
            );
        }
        for iface in self.rows_of("net") {
            let rx = m("net", iface, "rx_kib_per_s");
            let tx = m("net", iface, "tx_kib_per_s");
            if rx + tx > 0.0 {
                let _ = writeln!(
                    out,
                    "  net      {iface}: rx {}B/s, tx {}B/s, {} drops/s",
                    short(rx * 1024.0),
                    short(tx * 1024.0),
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
            short(self.max("sockets", "all", "tcp_tw")),
            short(m("sockets", "all", "tcp_inuse")),
            short(m("sockets", "all", "tcp_orphan")),
        );
        self.ports_text(&mut out);
        for row in self.rows_of("process") {
            let pid = row.split('/').next().unwrap_or(row);
            let _ = writeln!(
                out,
                "  pid {row}: cpu {:.1}% of a core (run {:.1}%, waiting for a CPU {:.1}%), RSS {:.0} MiB, {} fds, {} threads, {} involuntary switches/s",
                m("process", row, "cpu_pct"),
                m("process", row, "run_pct"),
                m("process", row, "wait_pct"),
                m("process", row, "rss_mib"),
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
                            "{name} run {:.0}/wait {:.0}",
                            m("threads", t, "run_pct"),
                            m("threads", t, "wait_pct")
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
        self.profile_text(&mut out);
        let _ = writeln!(
            out,
            "  cost     sampling used {:.2}% of one core ({:.0} us per sample){}",
            self.cost.pct_of_one_core,
            self.cost.mean_sample_us,
            self.cost
                .perf_record_cpu_s
                .map_or(String::new(), |s| format!(
                    "; perf record {:.1}% more",
                    s * 100.0 / self.duration_s.max(1e-9)
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
                    .filter(|c| self.max("ports", &row, c) > 0.0)
                    .map(|c| format!("{} {}", c, short(self.mean("ports", &row, c))))
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
                .map(|c| format!("{} {:.1}%", c.category.name(), c.kernel_pct.unwrap_or(0.0)))
                .collect();
            let all: Vec<String> = p
                .categories
                .iter()
                .filter(|c| !c.category.is_kernel())
                .map(|c| format!("{} {:.1}%", c.category.name(), c.pct))
                .collect();
            let kernel_share: f64 = p
                .categories
                .iter()
                .filter(|c| c.category.is_kernel())
                .map(|c| c.pct)
                .sum();
            let _ = writeln!(
                out,
                "  profile  {} samples at {} Hz; kernel {:.1}% of all: {}",
                p.samples,
                p.frequency_hz,
                kernel_share,
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
                        .map(|s| format!("{} {:.0}%", s.symbol, s.pct))
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
