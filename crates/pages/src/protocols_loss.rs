//! The protocols experiment's page under `--loss`: page loads over HTTP/2 and HTTP/3 across
//! the lossy, delayed link of `webscope-lossylink` (`loss/experiment.rs`), the page-load p50 and p99 per loss
//! rate, and HTTP/3's page load over HTTP/2's with its interval beside what the literature
//! reports.
//!
//! The interval is over `--repeat`'s rounds, each round's HTTP/2 and HTTP/3 runs a pair (the
//! experiment runs them back to back, in an order that alternates): a t interval on the
//! rounds' log-ratios (`webscope_model::stats::change`, paired, as `compare` judges runs).
//! Not a bootstrap over page loads: a run's page loads are not independent draws (its four
//! connections carry their congestion state from one page to the next, and the machine's
//! moment weighs on all of them), so resampling them would give an interval far narrower
//! than the next run's scatter; the round is the independent unit.

use std::path::Path;

use webscope_lab::results::handshakes::{Handshakes, HEADINGS};
use webscope_lab::results::loss::{Estimate, LossEntry, LossRatio, LossRow};
use webscope_report::Table;

use super::charts::bars;
use super::page::ExperimentPage;
use super::point::{load_points, Point};
use super::rendered::Rendered;
use webscope_model::stats::{change, Confidence, Pairing};
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
    /// The round of `--repeat` it was taken in, from 1 (pooled rows: how many rounds).
    pub round: usize,
    /// The users' handshakes (TLS over TCP for HTTP/2, QUIC's for HTTP/3).
    pub handshakes: Option<Handshakes>,
}

/// The round of a run, from its folder's name (`row-6`, `row-6-r2`: the runner's
/// `round_name`).
fn round_of(name: &str) -> usize {
    name.rsplit_once("-r")
        .and_then(|(_, n)| n.parse().ok())
        .unwrap_or(1)
}

/// Every run, one row each.
fn runs(points: &[Point]) -> Vec<Row> {
    points
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
                round: round_of(&p.name),
                handshakes: Handshakes::of(&p.run.load),
            })
        })
        .collect()
}

/// One row per (loss, protocol): the median run by page-load p50, with the runs' count as
/// its `round`.
fn rows(all: &[Row]) -> Vec<Row> {
    let mut all = all.to_vec();
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
        pooled.push(Row {
            round: same,
            ..all[i + same / 2].clone()
        });
        i += same;
    }
    pooled
}

/// HTTP/3's page load over HTTP/2's at one loss rate, at the median and at p99: above 1,
/// HTTP/3 loaded slower.
#[derive(Debug, Clone, PartialEq)]
pub struct Ratio {
    /// The loss rate, per cent.
    pub loss_pct: f64,
    /// Rounds with both protocols' runs.
    pub pairs: usize,
    /// (estimate, its 95 % interval when 2 rounds or more) of p50's ratio.
    pub p50: (f64, Option<(f64, f64)>),
    /// The same for p99.
    pub p99: (f64, Option<(f64, f64)>),
}

/// The ratio at `loss` over the rounds that ran both protocols: the geometric mean of the
/// rounds' ratios, with a paired t interval from 2 rounds on.
fn ratio(runs: &[Row], loss: f64) -> Option<Ratio> {
    let of = |name: &str, round: usize| {
        runs.iter()
            .find(|r| r.loss_pct == loss && r.protocol == name && r.round == round)
    };
    let mut rounds: Vec<usize> = runs.iter().map(|r| r.round).collect();
    rounds.sort_unstable();
    rounds.dedup();
    let pairs: Vec<(&Row, &Row)> = rounds
        .iter()
        .filter_map(|&k| Some((of("HTTP/2", k)?, of("HTTP/3", k)?)))
        .filter(|(h2, h3)| h2.p50_ms > 0.0 && h3.p50_ms > 0.0 && h2.p99_ms > 0.0 && h3.p99_ms > 0.0)
        .collect();
    if pairs.is_empty() {
        return None;
    }
    let one = |figure: fn(&Row) -> f64| {
        let (h2, h3): (Vec<f64>, Vec<f64>) =
            pairs.iter().map(|(a, b)| (figure(a), figure(b))).unzip();
        let logs: f64 = h2.iter().zip(&h3).map(|(a, b)| (b / a).ln()).sum();
        let estimate = (logs / pairs.len() as f64).exp();
        let interval = change(&h2, &h3, Pairing::Paired, Confidence::P95)
            .ok()
            .map(|c| (1.0 + c.interval.low, 1.0 + c.interval.high));
        (estimate, interval)
    };
    Some(Ratio {
        loss_pct: loss,
        pairs: pairs.len(),
        p50: one(|r| r.p50_ms),
        p99: one(|r| r.p99_ms),
    })
}

/// A ratio as text: "2.03 (95 % interval 1.71-2.41)", or "2.03 (one round: give --repeat 3
/// for an interval)".
fn ratio_text((estimate, interval): (f64, Option<(f64, f64)>)) -> String {
    match interval {
        Some((low, high)) => format!("{estimate:.2}× (95 % interval {low:.2}-{high:.2})"),
        None => format!("{estimate:.2}× (one round: --repeat 3 or more gives an interval)"),
    }
}

/// What the literature reports, to read the figures against.
pub const LITERATURE: &str = "What others measured: Langley et al. (\"The QUIC Transport Protocol: Design and Internet-Scale Deployment\", SIGCOMM 2017) report QUIC's largest gains on the slowest, lossiest connections; Kakhki et al. (\"Taking a Long Look at QUIC\", IMC 2017) found QUIC ahead of TCP+HTTP/2 in most emulated conditions and further ahead as loss grew, but behind when packets were reordered; Wolsing et al. (\"A Performance Perspective on Web Optimized Protocol Stacks: TCP+TLS+HTTP/2 vs. QUIC\", ANRW 2019) tuned TCP as QUIC is and still found QUIC faster, mostly by its shorter handshake and, on lossy links, by avoiding head-of-line blocking. A ratio below 1 here (HTTP/3's page load over HTTP/2's) agrees with them; above 1 says that this client and server's QUIC (quinn, in user space) cost more than the head-of-line blocking it avoids at this loss and RTT.";

/// The reading: the ratio at each loss rate.
fn reading(runs: &[Row]) -> String {
    let mut losses: Vec<f64> = runs.iter().map(|r| r.loss_pct).collect();
    losses.sort_by(f64::total_cmp);
    losses.dedup();
    let parts: Vec<String> = losses
        .iter()
        .filter_map(|&loss| {
            let r = ratio(runs, loss)?;
            Some(format!(
                "at {loss} % loss HTTP/3's page load is {} HTTP/2's at the median and {} at p99 ({} round{})",
                ratio_text(r.p50),
                ratio_text(r.p99),
                r.pairs,
                if r.pairs == 1 { "" } else { "s" }
            ))
        })
        .collect();
    if parts.is_empty() {
        return "No loss rate has both protocols' page loads.".into();
    }
    format!(
        "HTTP/3 against HTTP/2, page loads over the same lossy link (below 1: HTTP/3 faster): {}.",
        parts.join("; ")
    )
}

/// Adds the loss comparison's page.
pub fn render(exp: &ExperimentRecord, points: &[Point], out: &mut Rendered) -> anyhow::Result<()> {
    let runs = runs(points);
    let rows = rows(&runs);
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
    let reading = reading(&runs);
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
    let [handshakes, handshake_mean] = HEADINGS;
    let mut t = Table::new([
        "loss",
        "protocol",
        "page views",
        "page load p50 (ms)",
        "page load p99 (ms)",
        handshakes,
        handshake_mean,
        "errors",
        "runs",
        "HTTP/3 ÷ HTTP/2 p50",
        "HTTP/3 ÷ HTTP/2 p99",
    ]);
    for r in &rows {
        let ratio = ratio(&runs, r.loss_pct).filter(|_| r.protocol == "HTTP/3");
        let [handshakes, handshake_mean] = Handshakes::cells(r.handshakes.as_ref());
        t.row([
            format!("{} %", r.loss_pct),
            r.protocol.clone(),
            r.views.to_string(),
            format!("{:.1}", r.p50_ms),
            format!("{:.1}", r.p99_ms),
            handshakes,
            handshake_mean,
            r.errors.to_string(),
            r.round.to_string(),
            ratio.as_ref().map_or("-".into(), |q| ratio_text(q.p50)),
            ratio.as_ref().map_or("-".into(), |q| ratio_text(q.p99)),
        ]);
    }
    page.table(
        format!(
            "Per loss rate and protocol, the median run of each ({})",
            description.split(": ").nth(1).unwrap_or("")
        ),
        t,
    );
    page.summary("protocols under loss", [reading.clone()]);
    page.entry(&LossEntry {
        reading: reading.clone(),
        literature: LITERATURE.to_string(),
        rows: rows
            .iter()
            .map(|r| LossRow {
                protocol: r.protocol.clone(),
                loss_pct: r.loss_pct,
                page_views: r.views,
                page_load_p50_ms: r.p50_ms,
                page_load_p99_ms: r.p99_ms,
                errors: r.errors,
                runs: r.round,
                handshakes: r.handshakes,
            })
            .collect(),
        h3_over_h2: rows
            .iter()
            .filter(|r| r.protocol == "HTTP/3")
            .filter_map(|r| ratio(&runs, r.loss_pct))
            .map(|q| LossRatio {
                loss_pct: q.loss_pct,
                pairs: q.pairs,
                p50: Estimate::of(q.p50),
                p99: Estimate::of(q.p99),
            })
            .collect(),
    })?;
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

    fn row(protocol: &str, loss: f64, round: usize, p50: f64, p99: f64) -> Row {
        Row {
            protocol: protocol.into(),
            loss_pct: loss,
            views: 10,
            p50_ms: p50,
            p99_ms: p99,
            errors: 0,
            round,
            handshakes: None,
        }
    }

    #[test]
    fn the_round_is_read_from_the_runs_folder() {
        assert_eq!(round_of("row-6"), 1);
        assert_eq!(round_of("row-6-r3"), 3);
        assert_eq!(round_of("row-12-r10"), 10);
    }

    #[test]
    fn one_round_gives_http3s_page_load_over_http2s_without_an_interval() {
        let runs = [
            row("HTTP/2", 1.0, 1, 200.0, 900.0),
            row("HTTP/3", 1.0, 1, 100.0, 300.0),
            row("HTTP/2", 3.0, 1, 300.0, 1200.0),
        ];
        let r = ratio(&runs, 1.0).unwrap();
        assert_eq!((r.pairs, r.p50, r.p99), (1, (0.5, None), (1.0 / 3.0, None)));
        assert_eq!(ratio(&runs, 3.0), None);
        let text = reading(&runs);
        assert!(
            text.contains("at 1 % loss HTTP/3's page load is 0.50× (one round"),
            "{text}"
        );
        assert!(text.contains("0.33× (one round"), "{text}");
        assert!(!text.contains("at 3 %"), "{text}");
        assert!(reading(&runs[2..]).starts_with("No loss rate"));
    }

    #[test]
    fn rounds_pair_up_and_give_an_interval_round_the_geometric_mean() {
        // Three rounds; HTTP/3 1.8, 2.0 and 2.2 times HTTP/2 at the median.
        let mut runs = Vec::new();
        for (round, (h2, h3)) in [(100.0, 180.0), (150.0, 300.0), (120.0, 264.0)]
            .into_iter()
            .enumerate()
        {
            runs.push(row("HTTP/2", 1.0, round + 1, h2, 2.0 * h2));
            runs.push(row("HTTP/3", 1.0, round + 1, h3, 2.0 * h2));
        }
        // A round with HTTP/2 alone pairs with nothing.
        runs.push(row("HTTP/2", 1.0, 4, 10.0, 10.0));
        let r = ratio(&runs, 1.0).unwrap();
        assert_eq!(r.pairs, 3);
        let geometric = (1.8f64 * 2.0 * 2.2).powf(1.0 / 3.0);
        assert!((r.p50.0 - geometric).abs() < 1e-9, "{r:?}");
        let (low, high) = r.p50.1.unwrap();
        assert!(low < geometric && geometric < high, "{r:?}");
        assert!(low > 1.0 && high < 3.0, "{r:?}");
        // p99 equal in every round: a ratio of 1, an interval of none.
        assert!((r.p99.0 - 1.0).abs() < 1e-9, "{r:?}");
        // The median run per protocol, with the number of runs.
        let pooled = rows(&runs);
        let h2 = pooled.iter().find(|p| p.protocol == "HTTP/2").unwrap();
        assert_eq!((h2.round, h2.p50_ms), (4, 120.0));
    }
}
