//! The protocols experiment's page under `--loss`: page loads over HTTP/2 and HTTP/3 across
//! the lossy, delayed link of `webscope-lossylink` (`loss/experiment.rs`), the page-load p50 and p99 per loss
//! rate, and the head-of-line-blocking figure (HTTP/2's page load over HTTP/3's) beside what
//! the literature reports.

use std::path::Path;

use serde_json::json;
use webscope_report::Table;

use super::charts::bars;
use super::page::ExperimentPage;
use super::point::{load_points, Point};
use super::rendered::Rendered;
use webscope_record::ExperimentRecord;

/// Whether the experiment's runs are the loss comparison's (users' page loads; the
/// protocols rows have none).
pub fn is_loss(points: &[Point]) -> bool {
    !points.is_empty() && points.iter().all(|p| p.run.load.users.is_some())
}

/// One protocol at one loss rate (the median of its repeats by page-load p50).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// `HTTP/2` or `HTTP/3`: the run's label.
    pub protocol: String,
    /// The link's loss rate, per cent of packets (the run's x).
    pub loss_pct: f64,
    /// Page views the users completed.
    pub views: u64,
    /// Median page load, ms.
    pub p50_ms: f64,
    /// 99th-percentile page load, ms.
    pub p99_ms: f64,
    /// Exchanges that got no response (the load report's `errors.total`).
    pub errors: u64,
}

fn rows(points: &[Point]) -> Vec<Row> {
    let mut all: Vec<Row> = points
        .iter()
        .filter_map(|p| {
            let users = p.run.load.users.as_ref()?;
            Some(Row {
                protocol: p.label(),
                loss_pct: p.x,
                views: users.page_views,
                p50_ms: users.page_load_us.p50 / 1000.0,
                p99_ms: users.page_load_us.p99 / 1000.0,
                errors: p.run.load.total.errors.total,
            })
        })
        .collect();
    all.sort_by(|a, b| {
        (a.loss_pct, &a.protocol, a.p50_ms)
            .partial_cmp(&(b.loss_pct, &b.protocol, b.p50_ms))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    // The median repeat of each (loss, protocol).
    let mut pooled: Vec<Row> = Vec::new();
    let mut i = 0;
    while i < all.len() {
        let same = all[i..]
            .iter()
            .take_while(|r| r.loss_pct == all[i].loss_pct && r.protocol == all[i].protocol)
            .count();
        pooled.push(all[i + same / 2].clone());
        i += same;
    }
    pooled
}

/// HTTP/2's page load over HTTP/3's at `loss` (p50, p99): above 1, HTTP/3 loaded faster.
fn ratio(rows: &[Row], loss: f64) -> Option<(f64, f64)> {
    let of = |name: &str| {
        rows.iter()
            .find(|r| r.loss_pct == loss && r.protocol == name)
    };
    let (h2, h3) = (of("HTTP/2")?, of("HTTP/3")?);
    (h3.p50_ms > 0.0 && h3.p99_ms > 0.0).then(|| (h2.p50_ms / h3.p50_ms, h2.p99_ms / h3.p99_ms))
}

/// What the literature reports, to read the figures against.
pub const LITERATURE: &str = "What others measured: Langley et al. (\"The QUIC Transport Protocol: Design and Internet-Scale Deployment\", SIGCOMM 2017) report QUIC's largest gains on the slowest, lossiest connections; Kakhki et al. (\"Taking a Long Look at QUIC\", IMC 2017) found QUIC ahead of TCP+HTTP/2 in most emulated conditions and further ahead as loss grew, but behind when packets were reordered; Wolsing et al. (\"A Performance Perspective on Web Optimized Protocol Stacks: TCP+TLS+HTTP/2 vs. QUIC\", ANRW 2019) tuned TCP as QUIC is and still found QUIC faster, mostly by its shorter handshake and, on lossy links, by avoiding head-of-line blocking. A ratio above 1 here (HTTP/2's page load over HTTP/3's) agrees with them; below 1 says that this client and server's QUIC (quinn, in user space) cost more than the head-of-line blocking it avoids at this loss and RTT.";

/// The reading: the ratio at each loss rate.
fn reading(rows: &[Row]) -> String {
    let mut losses: Vec<f64> = rows.iter().map(|r| r.loss_pct).collect();
    losses.dedup();
    let parts: Vec<String> = losses
        .iter()
        .filter_map(|&loss| {
            let (p50, p99) = ratio(rows, loss)?;
            Some(format!(
                "at {loss} % loss HTTP/2's page load is {p50:.2}× HTTP/3's at the median and {p99:.2}× at p99"
            ))
        })
        .collect();
    if parts.is_empty() {
        return "No loss rate has both protocols' page loads.".into();
    }
    format!(
        "Head-of-line blocking, as page loads show it: {}.",
        parts.join("; ")
    )
}

/// Adds the loss comparison's page.
pub fn render(exp: &ExperimentRecord, points: &[Point], out: &mut Rendered) -> anyhow::Result<()> {
    let rows = rows(points);
    let mut page = ExperimentPage::new(
        exp,
        "Protocols under loss: page loads over HTTP/2 and HTTP/3",
    );
    let description = points
        .first()
        .map(|p| p.run.load_description.clone())
        .unwrap_or_default();
    let labels: Vec<String> = rows
        .iter()
        .map(|r| format!("{} {} %", r.protocol, r.loss_pct))
        .collect();
    let reading = reading(&rows);
    page.chart(
        bars(
            "Page load p99 by protocol and loss",
            &labels,
            "ms",
            "page load p99",
            rows.iter().map(|r| r.p99_ms).collect(),
        ),
        format!("{reading} {LITERATURE}"),
    );
    let mut t = Table::new([
        "loss",
        "protocol",
        "page views",
        "page load p50 (ms)",
        "page load p99 (ms)",
        "errors",
        "HTTP/2 ÷ HTTP/3 p50",
        "HTTP/2 ÷ HTTP/3 p99",
    ]);
    for r in &rows {
        let ratio = ratio(&rows, r.loss_pct).filter(|_| r.protocol == "HTTP/3");
        t.row([
            format!("{} %", r.loss_pct),
            r.protocol.clone(),
            r.views.to_string(),
            format!("{:.1}", r.p50_ms),
            format!("{:.1}", r.p99_ms),
            r.errors.to_string(),
            ratio.map_or("-".into(), |(a, _)| format!("{a:.2}")),
            ratio.map_or("-".into(), |(_, b)| format!("{b:.2}")),
        ]);
    }
    page.table(
        format!(
            "Per loss rate and protocol ({})",
            description.split(": ").nth(1).unwrap_or("")
        ),
        t,
    );
    page.summary("protocols under loss", [reading.clone()]);
    page.json(json!({
        "reading": reading,
        "literature": LITERATURE,
        "rows": rows.iter().map(|r| json!({
            "protocol": r.protocol, "loss_pct": r.loss_pct, "page_views": r.views,
            "page_load_p50_ms": r.p50_ms, "page_load_p99_ms": r.p99_ms, "errors": r.errors,
        })).collect::<Vec<_>>(),
    }));
    page.finish(out);
    Ok(())
}

/// The experiment's points, unpooled (HTTP/2 and HTTP/3 share a loss rate's x).
pub fn points(
    dir: &Path,
    exp: &ExperimentRecord,
    out: &mut Rendered,
) -> anyhow::Result<Vec<Point>> {
    load_points(dir, exp, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(protocol: &str, loss: f64, p50: f64, p99: f64) -> Row {
        Row {
            protocol: protocol.into(),
            loss_pct: loss,
            views: 10,
            p50_ms: p50,
            p99_ms: p99,
            errors: 0,
        }
    }

    #[test]
    fn the_reading_gives_http2s_page_load_over_http3s_at_each_loss() {
        let rows = [
            row("HTTP/2", 1.0, 200.0, 900.0),
            row("HTTP/3", 1.0, 100.0, 300.0),
            row("HTTP/2", 3.0, 300.0, 1200.0),
        ];
        assert_eq!(ratio(&rows, 1.0), Some((2.0, 3.0)));
        assert_eq!(ratio(&rows, 3.0), None);
        let r = reading(&rows);
        assert!(
            r.contains(
                "at 1 % loss HTTP/2's page load is 2.00× HTTP/3's at the median and 3.00× at p99"
            ),
            "{r}"
        );
        assert!(!r.contains("at 3 %"), "{r}");
        assert!(reading(&rows[2..]).starts_with("No loss rate"));
    }
}
