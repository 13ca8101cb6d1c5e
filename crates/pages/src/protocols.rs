//! The protocols experiment's page: goodput and the server's CPU time per request over
//! HTTP/1.1, HTTPS, HTTP/2 and HTTP/3, the handshakes the clients made, and what a handshake costs.

use std::path::Path;
use webscope_report::human::pct_brief;

use webscope_report::Table;

use super::cells::{cell, ratio_cell};
use super::charts::{bars, cpu_bars};
use super::page::ExperimentPage;
use super::point::Point;
use super::rendered::Rendered;
use webscope_lab::results::sweeps::{Handshakes, ProtocolRow, ProtocolsEntry};
use webscope_record::ExperimentRecord;

/// One row's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The protocol as the table names it (`HTTP/1.1`, `HTTPS close`, ...): the run's label.
    pub label: String,
    /// Goodput, requests/s.
    pub rps: f64,
    /// Server CPU time per request, microseconds (None without the server's figures).
    pub cpu_us: Option<f64>,
    /// 99th-percentile latency, ms.
    pub p99_ms: f64,
    /// TLS handshakes the clients made: (full, resumed).
    pub handshakes: Option<(u64, u64)>,
    /// Mean handshake, microseconds, as the clients timed it.
    pub handshake_us: Option<f64>,
    /// The handshakes' share of the clients' time (handshakes + responses), per cent.
    pub handshake_pct: Option<f64>,
    /// What bounds the run, or why it is invalid.
    pub bound: String,
}

impl Row {
    fn of(point: &Point) -> Row {
        let load = &point.run.load;
        let cpu_us = point.server_cpu_us();
        let tls = load.tls.as_ref();
        let handshakes = tls.map(|t| (t.full, t.resumed));
        let handshake_us = tls.map(|t| t.handshake_us.mean);
        let requests = load.total.requests as f64;
        let handshake_pct = match (handshakes, handshake_us) {
            (Some((full, resumed)), Some(mean)) if requests > 0.0 => {
                let shaking = (full + resumed) as f64 * mean;
                let answering = requests * point.mean_ms * 1000.0;
                (shaking + answering > 0.0).then(|| 100.0 * shaking / (shaking + answering))
            }
            _ => None,
        };
        Row {
            label: point.label(),
            rps: point.rps,
            cpu_us,
            p99_ms: point.p99_ms,
            handshakes,
            handshake_us,
            handshake_pct,
            bound: if point.valid() {
                point.verdict.bound.label().to_string()
            } else {
                "invalid run".into()
            },
        }
    }
}

fn find<'a>(rows: &'a [Row], label: &str) -> Option<&'a Row> {
    rows.iter().find(|r| r.label == label)
}

/// The sentences under the chart: what TLS adds per request, what a handshake costs, and
/// HTTP/2 against HTTPS, each quoting its figures.
pub fn reading(rows: &[Row]) -> String {
    let cpu = |label: &str| find(rows, label).and_then(|r| r.cpu_us);
    let mut parts = Vec::new();
    if let (Some(plain), Some(tls)) = (cpu("HTTP/1.1"), cpu("HTTPS")) {
        parts.push(format!(
            "Over TLS a keep-alive request costs the server {tls:.1} CPU-µs against {plain:.1} in plain HTTP/1.1 ({:.2}×)",
            tls / plain
        ));
    }
    if let (Some(kept), Some(closed)) = (cpu("HTTPS"), cpu("HTTPS close")) {
        let share = find(rows, "HTTPS close")
            .and_then(|r| r.handshake_pct)
            .map_or(String::new(), |p| {
                format!(
                    ", and the handshake takes {} of the clients' time",
                    pct_brief(p / 100.0)
                )
            });
        parts.push(format!(
            "with a connection per request it costs {closed:.1} µs: the connection and its (mostly resumed) handshake add {:.1} µs{share}",
            closed - kept
        ));
    }
    if let (Some(tls), Some(h2)) = (cpu("HTTPS"), cpu("HTTP/2")) {
        parts.push(format!(
            "HTTP/2 costs {h2:.1} µs per request, {:.2}× HTTPS/1.1",
            h2 / tls
        ));
    }
    if let (Some(h2), Some(h3)) = (cpu("HTTP/2"), cpu("HTTP/3")) {
        parts.push(format!(
            "HTTP/3 costs {h3:.1} µs per request, {:.2}× HTTP/2 (QUIC encrypts and frames every packet in user space)",
            h3 / h2
        ));
    }
    if parts.is_empty() {
        return "No server CPU figures for the rows to compare: what each protocol costs cannot be shown.".into();
    }
    let mut text = parts.join("; ");
    text.push('.');
    text
}

fn table(rows: &[Row]) -> Table {
    let mut t = Table::new([
        "protocol",
        "goodput req/s",
        "server CPU µs/req",
        "vs HTTP/1.1",
        "p99 ms",
        "handshakes full/resumed",
        "handshake mean ms",
        "handshake share",
        "bound by",
    ]);
    let base = find(rows, "HTTP/1.1").and_then(|r| r.cpu_us);
    for r in rows {
        t.row([
            r.label.clone(),
            format!("{:.0}", r.rps),
            cell(r.cpu_us, 1),
            ratio_cell(r.cpu_us, base),
            format!("{:.2}", r.p99_ms),
            r.handshakes.map_or("-".into(), |(f, s)| format!("{f}/{s}")),
            cell(r.handshake_us.map(|u| u / 1000.0), 2),
            r.handshake_pct.map_or("-".into(), |p| format!("{p:.1} %")),
            r.bound.clone(),
        ]);
    }
    t
}

/// Adds the protocols experiment to the report.
pub fn render(dir: &Path, exp: &ExperimentRecord, out: &mut Rendered) -> anyhow::Result<()> {
    // `--loss`: the loss comparison's page instead (`protocols_loss.rs`).
    let all = super::protocols_loss::points(dir, exp, out)?;
    if super::protocols_loss::is_loss(&all) {
        return super::protocols_loss::render(exp, &all, out);
    }
    let points = super::point::pool(all);
    let rows: Vec<Row> = points.iter().map(Row::of).collect();
    // A lab stored before HTTP/3 has no such row: its title stays as it was.
    let title = if rows.iter().any(|r| r.label == "HTTP/3") {
        "Protocols: HTTP/1.1, HTTPS, HTTP/2, HTTP/3"
    } else {
        "Protocols: HTTP/1.1, HTTPS, HTTP/2"
    };
    let mut page = ExperimentPage::new(exp, title);
    page.repeats_note(&points);
    let labels: Vec<String> = rows.iter().map(|r| r.label.clone()).collect();
    let reading = reading(&rows);
    let cpu: Vec<Option<f64>> = rows.iter().map(|r| r.cpu_us).collect();
    page.chart(
        cpu_bars("Server CPU time per request by protocol", &labels, &cpu),
        reading.clone(),
    );
    page.chart(
        bars("Goodput by protocol", &labels, "requests/s", "goodput", rows.iter().map(|r| r.rps).collect()),
        "Goodput: responses with an expected status per second. Where a row is bound by the load generator (TLS close mode costs the client a handshake per request too), its goodput is the generator's, not the server's: the CPU per request still compares.",
    );
    page.table(
        "Per protocol (the server pinned to one core; CPU time from /proc; handshakes as the clients timed them; share: handshakes' time over handshakes' and responses' time)",
        table(&rows),
    );
    page.summary("protocols", [reading.clone()]);
    page.entry(&ProtocolsEntry {
        reading,
        rows: rows
            .iter()
            .map(|r| ProtocolRow {
                protocol: r.label.clone(),
                requests_per_s: r.rps,
                cpu_us_per_request: r.cpu_us,
                p99_ms: r.p99_ms,
                handshakes: r
                    .handshakes
                    .map(|(full, resumed)| Handshakes { full, resumed }),
                handshake_mean_us: r.handshake_us,
                handshake_share_pct: r.handshake_pct,
                bound: r.bound.clone(),
            })
            .collect(),
    })?;
    page.finish(out);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(label: &str, cpu: Option<f64>, pct: Option<f64>) -> Row {
        Row {
            label: label.into(),
            rps: 1000.0,
            cpu_us: cpu,
            p99_ms: 1.0,
            handshakes: None,
            handshake_us: None,
            handshake_pct: pct,
            bound: "server CPU".into(),
        }
    }

    #[test]
    fn the_reading_quotes_what_tls_a_handshake_and_http2_cost() {
        let rows = [
            row("HTTP/1.1", Some(10.0), None),
            row("HTTP/1.1 close", Some(30.0), None),
            row("HTTPS", Some(15.0), Some(0.1)),
            row("HTTPS close", Some(95.0), Some(42.0)),
            row("HTTP/2", Some(18.0), Some(0.1)),
            row("HTTP/3", Some(27.0), Some(0.1)),
        ];
        let r = reading(&rows);
        assert!(
            r.contains("HTTP/3 costs 27.0 µs") && r.contains("1.50× HTTP/2"),
            "{r}"
        );
        assert!(
            r.contains("15.0 CPU-µs against 10.0") && r.contains("(1.50×)"),
            "{r}"
        );
        assert!(
            r.contains("costs 95.0 µs") && r.contains("add 80.0 µs"),
            "{r}"
        );
        assert!(r.contains("42 % of the clients' time"), "{r}");
        assert!(
            r.contains("HTTP/2 costs 18.0 µs") && r.contains("1.20×"),
            "{r}"
        );
        assert!(reading(&[row("HTTP/1.1", None, None)]).starts_with("No server CPU"));
    }
}
