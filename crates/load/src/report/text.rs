//! The report as people read it: the wrk-like summary a run prints at its end, the live line
//! of each interval, and the table of a merged run's generators. Not for the JSON (the types'
//! own serialisation, in `mod.rs`).

use std::fmt::Write as _;
use webscope_report::human::pct;

use super::{Generator, IntervalReport, Latency, Report};
use crate::replay::ReplayReport;

/// `41800.3` as `41 800`: rates people compare at a glance (a space rather than a thin
/// space, which not every terminal shows).
pub fn thousands(v: f64) -> String {
    webscope_report::human::count(v.max(0.0).round() as u64)
}

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

/// The label column's width: the longest label (a class's name), at least 14 characters as
/// wrk's own rows need and at most [`LABEL_CAP`], so that every row's figures start at the
/// same column however long a class's name is.
fn label_width<'a>(labels: impl Iterator<Item = &'a str>) -> usize {
    labels
        .map(|l| l.chars().count())
        .fold(14, usize::max)
        .min(LABEL_CAP)
}

/// The widest the label column gets: a longer class name is cut short with an ellipsis (the
/// summary says so; the JSON keeps it whole) rather than push the figures off a terminal.
const LABEL_CAP: usize = 40;

/// `label` in at most `width` characters: cut short with an ellipsis when longer.
fn fit(label: &str, width: usize) -> String {
    if label.chars().count() <= width {
        label.to_string()
    } else {
        label.chars().take(width - 1).chain(['…']).collect()
    }
}

fn latency_row(label: &str, w: usize, l: &Latency) -> String {
    format!(
        "  {:<w$} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n",
        fit(label, w),
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
                "open loop at {} ({})",
                webscope_report::human::rate(rate),
                self.arrivals.as_deref().unwrap_or("constant")
            ),
            None => "closed loop".to_string(),
        };
        let _ = writeln!(
            out,
            "{:.2}s {} @ {}\n  {} thread{}, {}{}, {}, {}",
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
            match (&self.users, self.connections) {
                (Some(_), 1) => " user",
                (Some(_), _) => " users",
                (None, 1) => " connection",
                (None, _) => " connections",
            },
            if self.protocol.starts_with("HTTP/2") || self.protocol.starts_with("HTTP/3") {
                self.protocol.as_str()
            } else {
                self.mode.as_str()
            },
            pacing
        );
        let w = label_width(self.classes.iter().map(|c| c.name.as_str()));
        let _ = writeln!(
            out,
            "  {:<w$} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "Latency", "p50", "p90", "p99", "p99.9", "max", "mean"
        );
        if self.total.latency_us.count == 0 {
            // Rows of zeros would read as instant answers.
            out.push_str("  total          none: no response came\n");
        } else {
            out.push_str(&latency_row("total", w, &self.total.latency_us));
            if let Some(uncorrected) = &self.total.uncorrected_latency_us {
                out.push_str(&latency_row("uncorrected", w, uncorrected));
            }
            out.push_str(&latency_row("first byte", w, &self.total.ttfb_us));
        }
        if let Some(connect) = &self.total.connect_us {
            out.push_str(&latency_row("connect", w, connect));
        }
        if let Some(tls) = &self.tls {
            out.push_str(&latency_row("TLS handshake", w, &tls.handshake_us));
        }
        if self.classes.len() > 1 {
            for class in &self.classes {
                out.push_str(&latency_row(&class.name, w, &class.figures.latency_us));
            }
            let _ = writeln!(
                out,
                "  {:<w$} {:>9} {:>11} {:>11} {:>9}",
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
                    "  {:<w$} {:>8.2}% {:>11} {:>11.1} {:>9}",
                    fit(&class.name, w),
                    share,
                    class.figures.requests,
                    class.figures.requests_per_s,
                    class.figures.errors.with_bad_status()
                );
            }
            if self.classes.iter().any(|c| c.name.chars().count() > w) {
                let _ = writeln!(
                    out,
                    "  (class names longer than {w} characters are cut short with …; the JSON has them whole)"
                );
            }
        }
        let _ = writeln!(
            out,
            "  {} requests in {:.2}s, {} read, {} connect{}",
            self.total.requests,
            self.duration_s,
            webscope_report::human::bytes(self.total.bytes as f64),
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
            let _ = write!(
                out,
                "  TLS handshakes: {} full, {} resumed",
                tls.full, tls.resumed
            );
            if tls.early > 0 {
                let _ = write!(
                    out,
                    " ({} with 0-RTT accepted: requests sent before the handshake's end)",
                    tls.early
                );
            }
            out.push('\n');
        }
        // As wrk says it: the responses a success rate must not count (in a replay too, where
        // the judges also expect the logged statuses).
        let expect = &self.expect;
        let outcomes = self.outcomes();
        let unexpected: u64 = outcomes.unreadable_statuses
            + outcomes
                .statuses
                .iter()
                .filter(|(code, _)| !expect.accepts(**code))
                .map(|(_, n)| n)
                .sum::<u64>();
        if unexpected > 0 && expect.is_default() {
            let _ = writeln!(out, "  Non-2xx or 3xx responses: {unexpected}");
        } else if unexpected > 0 {
            let _ = writeln!(
                out,
                "  Responses outside --expect-status {expect}: {unexpected}"
            );
        }
        if self.rate.is_some() {
            let _ = writeln!(
                out,
                "  Not sent (no free connection in time): {}",
                self.total.run.not_sent
            );
        }
        if let Some(replay) = &self.replay {
            out.push_str(&replay_lines(replay, &self.intervals));
        }
        if let Some(users) = &self.users {
            out.push_str(&users.summary());
        }
        let _ = writeln!(out, "Requests/sec: {:>12.2}", self.total.requests_per_s);
        let _ = writeln!(
            out,
            "Transfer/sec: {:>12.2} Mbit/s",
            self.total.bytes_per_s * 8.0 / 1e6
        );
        let _ = writeln!(
            out,
            "Generator:    {:.2}s CPU, {:.2}us per request, busiest thread {} busy ({} running or waiting for a CPU)",
            self.generator_cpu_s,
            self.generator_cpu_per_request_us,
            pct(self.generator_busy),
            pct(self.generator_busy_or_waiting)
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

/// How many intervals' offered and answered counts the summary shows (the JSON has all).
const SHOWN_INTERVALS: usize = 12;

/// A replay's lines: the log, the late sends, the status pairs, offered against answered.
fn replay_lines(replay: &ReplayReport, intervals: &[IntervalReport]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "  Replay: {} logged requests over {:.2}s at {}x{}; {} neither GET nor HEAD skipped (a log keeps no body, and a replay changes nothing on its target); {} logged 206 replayed as ranges; {} logged 304 sent conditional",
        replay.log_requests,
        replay.span_s,
        replay.speed,
        if replay.looped { ", looped" } else { "" },
        replay.skipped_method,
        replay.ranges,
        replay.conditional
    );
    if let Some(error) = &replay.read_error {
        let _ = writeln!(
            out,
            "  The log could not be read to the run's end ({error}): later requests were not offered"
        );
    }
    let _ = writeln!(
        out,
        "  Late sends (over 1 ms after their logged time): {} (largest {})",
        replay.late_sends,
        format_us(replay.max_send_delay_us)
    );
    status_lines(&mut out, &replay.status_mismatches);
    let shown: Vec<String> = intervals
        .iter()
        .take(SHOWN_INTERVALS)
        .map(|i| format!("{}/{}", i.offered.unwrap_or(0), i.requests))
        .collect();
    let _ = writeln!(
        out,
        "  Offered/answered per interval: {}{}",
        shown.join(" "),
        if intervals.len() > SHOWN_INTERVALS {
            " ..."
        } else {
            ""
        }
    );
    let _ = writeln!(out, "  Timing: {}", replay.note);
    out
}

/// The replay's status lines: responses that differ from the log where the set could have
/// answered as logged, then apart those whose logged status no file set gives (5xx, 403, ...:
/// [`webscope_workload::like::urls::set_can_give`]), which are the site's server's, not the set's.
fn status_lines(out: &mut String, mismatches: &[crate::replay::StatusPair]) {
    if mismatches.is_empty() {
        let _ = writeln!(out, "  Status: every response as logged");
        return;
    }
    let (set, server): (Vec<_>, Vec<_>) = mismatches
        .iter()
        .partition(|p| webscope_workload::like::urls::set_can_give(p.logged));
    let list = |pairs: &[&crate::replay::StatusPair]| {
        pairs
            .iter()
            .map(|p| {
                format!(
                    "logged {}, got {}: {}",
                    p.logged,
                    p.got,
                    webscope_report::human::count(p.count)
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    if !set.is_empty() {
        let _ = writeln!(out, "  Status differs from the log: {}", list(&set));
    }
    if !server.is_empty() {
        let _ = writeln!(
            out,
            "  Logged statuses a file set cannot give (the site's server's): {}",
            list(&server)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The end column of each of a row's last `n` fields (figures hold no spaces).
    fn field_ends(row: &str, n: usize) -> Vec<usize> {
        let chars: Vec<char> = row.chars().collect();
        let mut ends: Vec<usize> = (1..=chars.len())
            .filter(|&i| chars[i - 1] != ' ' && (i == chars.len() || chars[i] == ' '))
            .collect();
        ends.split_off(ends.len().saturating_sub(n))
    }

    /// The summary of a two-class run whose classes have these names.
    fn summary_with(names: [&str; 2]) -> String {
        let mut report: Report =
            serde_json::from_str(include_str!("../../testdata/report-segment.json")).unwrap();
        for (class, name) in report.classes.iter_mut().zip(names) {
            class.name = name.to_string();
        }
        report.summary()
    }

    /// The lines from the one starting with `first` while they are indented (the table).
    fn block<'a>(text: &'a str, first: &str, rows: usize) -> Vec<&'a str> {
        let start = text
            .lines()
            .position(|l| l.trim_start().starts_with(first))
            .unwrap();
        text.lines().skip(start).take(rows).collect()
    }

    #[test]
    fn long_class_names_do_not_shift_the_columns() {
        let long = "GET /api/v1/catalogue/items?category=books&sort=price-desc-x";
        assert_eq!(long.chars().count(), 60);
        let medium = "static-assets-under-30-chars";
        for names in [[medium, "large"], [long, "small"]] {
            let text = summary_with(names);
            // Latency: header, total, uncorrected, first byte, connect, TLS, two classes.
            let latency = block(&text, "Latency", 8);
            let classes = block(&text, "Class", 3);
            for (rows, fields) in [(&latency, 6), (&classes, 4)] {
                let header = field_ends(rows[0], fields);
                for row in rows.iter() {
                    assert_eq!(field_ends(row, fields), header, "\n{}", rows.join("\n"));
                }
            }
            // Both tables' figures start after the same label column.
            assert_eq!(
                field_ends(latency[0], 6)[0] - 9,
                field_ends(classes[0], 4)[0] - 9,
                "\n{text}"
            );
        }
        // The medium name fits whole; the long one is cut at 40 characters and the summary
        // says so.
        let text = summary_with([medium, "large"]);
        assert!(text.contains(&format!("  {medium} ")), "{text}");
        assert!(!text.contains("cut short"), "{text}");
        let text = summary_with([long, "small"]);
        let cut: String = long.chars().take(39).chain(['…']).collect();
        assert!(text.contains(&format!("  {cut} ")), "{text}");
        // (The line of unfinished requests names classes whole: it is prose, not a column.)
        assert!(
            !text
                .lines()
                .filter(|l| !l.trim_start().starts_with("Unfinished"))
                .any(|l| l.contains(long)),
            "{text}"
        );
        assert!(
            text.contains("class names longer than 40 characters are cut short"),
            "{text}"
        );
    }

    #[test]
    fn a_replays_mismatches_the_set_cannot_give_are_listed_apart() {
        let pair = |logged, got, count| crate::replay::StatusPair { logged, got, count };
        let mut out = String::new();
        status_lines(
            &mut out,
            &[pair(200, 404, 1_595), pair(500, 200, 3), pair(403, 404, 2)],
        );
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines,
            [
                "  Status differs from the log: logged 200, got 404: 1 595",
                "  Logged statuses a file set cannot give (the site's server's): \
                 logged 500, got 200: 3; logged 403, got 404: 2",
            ]
        );
        out.clear();
        status_lines(&mut out, &[pair(500, 200, 3)]);
        assert!(!out.contains("differs"), "{out}");
        out.clear();
        status_lines(&mut out, &[]);
        assert_eq!(out, "  Status: every response as logged\n");
    }
}
