//! The report as people read it: the wrk-like summary a run prints at its end, the live line
//! of each interval, and the table of a merged run's generators. Not for the JSON (the types'
//! own serialisation, in `mod.rs`).

use std::fmt::Write as _;

use super::{Generator, IntervalReport, Latency, Report};

/// Formats microseconds for people: `85us`, `1.25ms`, `2.00s`.
pub fn format_us(us: f64) -> String {
    if us < 1000.0 {
        format!("{us:.0}us")
    } else if us < 1_000_000.0 {
        format!("{:.2}ms", us / 1000.0)
    } else {
        format!("{:.2}s", us / 1_000_000.0)
    }
}

fn latency_row(label: &str, l: &Latency) -> String {
    format!(
        "  {label:<14} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n",
        format_us(l.p50),
        format_us(l.p90),
        format_us(l.p99),
        format_us(l.p999),
        format_us(l.max),
        format_us(l.mean)
    )
}

impl Report {
    /// The terminal summary, in the spirit of wrk's.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        let pacing = match self.rate {
            Some(rate) => format!(
                "open loop at {rate} req/s ({})",
                self.arrivals.as_deref().unwrap_or("constant")
            ),
            None => "closed loop".to_string(),
        };
        let _ = writeln!(
            out,
            "{:.2}s {} @ {}\n  {} thread{}, {} connection{}, {}, {}",
            self.duration_s,
            if self.interrupted {
                "run (interrupted)"
            } else {
                "run"
            },
            self.target,
            self.threads,
            if self.threads == 1 { "" } else { "s" },
            self.connections,
            if self.connections == 1 { "" } else { "s" },
            if self.protocol.starts_with("HTTP/2") {
                self.protocol.as_str()
            } else {
                self.mode.as_str()
            },
            pacing
        );
        let _ = writeln!(
            out,
            "  {:<14} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "Latency", "p50", "p90", "p99", "p99.9", "max", "mean"
        );
        if self.total.latency_us.count == 0 {
            // Rows of zeros would read as instant answers.
            out.push_str("  total          none: no response came\n");
        } else {
            out.push_str(&latency_row("total", &self.total.latency_us));
            if let Some(uncorrected) = &self.total.uncorrected_latency_us {
                out.push_str(&latency_row("uncorrected", uncorrected));
            }
            out.push_str(&latency_row("first byte", &self.total.ttfb_us));
        }
        if let Some(connect) = &self.total.connect_us {
            out.push_str(&latency_row("connect", connect));
        }
        if let Some(tls) = &self.tls {
            out.push_str(&latency_row("TLS handshake", &tls.handshake_us));
        }
        if self.classes.len() > 1 {
            for class in &self.classes {
                out.push_str(&latency_row(&class.name, &class.figures.latency_us));
            }
            let _ = writeln!(
                out,
                "  {:<14} {:>9} {:>11} {:>11} {:>9}",
                "Class", "share", "requests", "req/s", "errors"
            );
            for class in &self.classes {
                let share = if self.total.requests > 0 {
                    class.figures.requests as f64 * 100.0 / self.total.requests as f64
                } else {
                    0.0
                };
                let _ = writeln!(
                    out,
                    "  {:<14} {:>8.2}% {:>11} {:>11.1} {:>9}",
                    class.name,
                    share,
                    class.figures.requests,
                    class.figures.requests_per_s,
                    class.figures.errors.total
                );
            }
        }
        let _ = writeln!(
            out,
            "  {} requests in {:.2}s, {:.1} MB read, {} connect{}",
            self.total.requests,
            self.duration_s,
            self.total.bytes as f64 / 1e6,
            self.total.run.connects,
            if self.total.run.connects == 1 {
                ""
            } else {
                "s"
            }
        );
        let _ = writeln!(out, "  Errors: {}", self.total.errors.describe());
        if let Some(line) = self.unfinished_line() {
            out.push_str(&line);
        }
        if let Some(tls) = &self.tls {
            let _ = writeln!(
                out,
                "  TLS handshakes: {} full, {} resumed",
                tls.full, tls.resumed
            );
        }
        // As wrk says it: the responses a success rate must not count.
        let unexpected: u64 = self
            .status_codes
            .iter()
            .filter(|(code, _)| !(code.starts_with('2') || code.starts_with('3')))
            .map(|(_, n)| n)
            .sum();
        if unexpected > 0 {
            let _ = writeln!(out, "  Non-2xx or 3xx responses: {unexpected}");
        }
        if self.rate.is_some() {
            let _ = writeln!(
                out,
                "  Not sent (no free connection in time): {}",
                self.total.run.not_sent
            );
        }
        let _ = writeln!(out, "Requests/sec: {:>12.2}", self.total.requests_per_s);
        let _ = writeln!(
            out,
            "Transfer/sec: {:>12.2} Mbit/s",
            self.total.bytes_per_s * 8.0 / 1e6
        );
        let _ = writeln!(
            out,
            "Generator:    {:.2}s CPU, {:.2}us per request, busiest thread {:.0}% busy ({:.0}% running or waiting for a CPU)",
            self.generator_cpu_s,
            self.generator_cpu_per_request_us,
            self.generator_busy * 100.0,
            self.generator_busy_or_waiting * 100.0
        );
        if !self.generators.is_empty() {
            out.push_str(&generators_table(&self.generators));
        }
        for warning in &self.warnings {
            let _ = writeln!(out, "warning: {warning}");
        }
        out
    }

    /// The requests unanswered at the end, their ages, and per class when there are classes.
    fn unfinished_line(&self) -> Option<String> {
        let ages = self.total.unfinished_age_us?;
        let classes: Vec<String> = self
            .classes
            .iter()
            .filter(|c| self.classes.len() > 1 && c.figures.unfinished > 0)
            .map(|c| format!("{} {}", c.name, c.figures.unfinished))
            .collect();
        Some(format!(
            "  Unfinished at the end: {} (age: oldest {}, median {}){}\n",
            self.total.unfinished,
            format_us(ages.max),
            format_us(ages.p50),
            if classes.is_empty() {
                String::new()
            } else {
                format!("; {}", classes.join(", "))
            }
        ))
    }

    /// The one-line progress display for an interval.
    pub fn live_line(interval: &IntervalReport, elapsed_s: f64) -> String {
        format!(
            "[{elapsed_s:6.1}s] {:>10.0} req/s {:>8.1} Mbit/s  p50 {:>8}  p99 {:>8}  max {:>8}  errors {}  conns {}",
            interval.requests_per_s,
            interval.bytes_per_s * 8.0 / 1e6,
            format_us(interval.latency_us.p50),
            format_us(interval.latency_us.p99),
            format_us(interval.latency_us.max),
            interval.errors,
            interval.connections
        )
    }
}

/// The generators of a merged run as a table.
fn generators_table(generators: &[Generator]) -> String {
    let mut out = String::from("Generators:\n");
    let _ = writeln!(
        out,
        "  {:<8} {:<20} {:>11} {:>8} {:>7} {:>12} {:>9}",
        "segment", "host", "requests", "CPU s", "busy", "busy+wait", "late"
    );
    for g in generators {
        let _ = writeln!(
            out,
            "  {:<8} {:<20} {:>11} {:>8.2} {:>6.0}% {:>11.0}% {:>8.3}s{}",
            g.segment,
            g.host,
            g.requests,
            g.cpu_s,
            g.busy * 100.0,
            g.busy_or_waiting * 100.0,
            g.start_late_s,
            if g.saturated { "  saturated" } else { "" }
        );
    }
    out
}
