//! The compact live line: the figures a performance engineer glances at while a run goes on.
//!
//! `  12.3s cpu 45% (us 20 sy 18 si 7) ctx 12k/s | mem 20.1 GiB avail | lo 310.2 MiB/s | tw 1.4k | :8080 est 50 tw 1.4k q 0/128 | 4242 98% run 95 wait 3`

use webscope_report::human::bytes;

use crate::Monitor;

/// A count with a k/M suffix, three significant figures at most.
pub(crate) fn short(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let (scaled, suffix) = match v.abs() {
        a if a >= 1e9 => (v / 1e9, "G"),
        a if a >= 1e6 => (v / 1e6, "M"),
        a if a >= 1e3 => (v / 1e3, "k"),
        _ => (v, ""),
    };
    let digits = if scaled.abs() >= 100.0 || suffix.is_empty() && scaled.fract() == 0.0 {
        0
    } else if scaled.abs() >= 10.0 {
        1
    } else {
        2
    };
    format!("{scaled:.digits$}{suffix}")
}

impl Monitor {
    /// The live line for the latest sample.
    pub fn live_line(&self) -> String {
        let v = |g: &str, k: &str, c: &str| self.latest_value(g, k, c).unwrap_or(f64::NAN);
        let mut parts = vec![format!(
            "{:6.1}s cpu {:.0}% (us {:.0} sy {:.0} si {:.0}) ctx {}/s",
            self.elapsed().as_secs_f64(),
            v("cpu", "all", "busy_pct"),
            v("cpu", "all", "user_pct") + v("cpu", "all", "nice_pct"),
            v("cpu", "all", "system_pct"),
            v("cpu", "all", "softirq_pct") + v("cpu", "all", "irq_pct"),
            short(v("system", "all", "ctxt_per_s")),
        )];
        parts.push(format!(
            "mem {} avail",
            bytes(v("memory", "all", "available_mib") * 1024.0 * 1024.0)
        ));
        // The busiest interface.
        if let Some(net) = self.latest().find(|g| g.group.name == "net") {
            let busiest = net.rows.iter().max_by(|a, b| {
                let load = |r: &crate::Row| r.values[0] + r.values[1];
                load(a).total_cmp(&load(b))
            });
            if let Some(row) = busiest {
                parts.push(format!(
                    "{} {}/s",
                    row.key[0],
                    bytes((row.values[0] + row.values[1]) * 1024.0)
                ));
            }
        }
        parts.push(format!("tw {}", short(v("sockets", "all", "tcp_tw"))));
        for port in &self.config().ports {
            let local = |c: &str| v("ports", &format!("{port}/local"), c);
            let limit = v("listen", &port.to_string(), "accept_limit");
            parts.push(format!(
                ":{port} est {} tw {} q {}/{}",
                short(local("established")),
                short(local("time_wait") + v("ports", &format!("{port}/remote"), "time_wait")),
                short(v("listen", &port.to_string(), "accept_queue")),
                short(limit),
            ));
        }
        if let Some(process) = self.latest().find(|g| g.group.name == "process") {
            for row in &process.rows {
                parts.push(format!(
                    "{} {:.0}% run {:.0} wait {:.0}",
                    row.key[0], row.values[2], row.values[3], row.values[4]
                ));
            }
        }
        parts.join(" | ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_numbers_keep_three_figures() {
        assert_eq!(short(0.0), "0");
        assert_eq!(short(7.0), "7");
        assert_eq!(short(7.25), "7.25");
        assert_eq!(short(1399.85), "1.40k");
        assert_eq!(short(12_345.0), "12.3k");
        assert_eq!(short(310e6), "310M");
        assert_eq!(short(f64::NAN), "-");
    }
}
