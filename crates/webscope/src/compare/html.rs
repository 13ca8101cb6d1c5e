//! `compare --html`: the comparison as a page — the table of each point, the two latency
//! distributions overlaid (linear and log frequency, as Chiarini and Couch drew them) and
//! their difference bin by bin.

use webscope_report::svg::{Axis, Series, Style, XyChart};
use webscope_report::{Block, Page, Section, Table};

use super::input::Run;
use super::Comparison;
use crate::lab::render::charts::{edges_ns, shares};

/// The runs' latencies, all intervals merged, as shares of requests per bin.
fn distribution(runs: &[Run], edges: &[u64]) -> Option<Vec<u64>> {
    let mut merged: Option<hdrhistogram::Histogram<u64>> = None;
    for i in runs.iter().flat_map(|r| r.intervals.iter()) {
        match merged.as_mut() {
            Some(m) => {
                let _ = m.add(&i.histogram);
            }
            None => merged = Some(i.histogram.clone()),
        }
    }
    let h = merged?;
    Some(
        edges
            .windows(2)
            .map(|w| {
                if w[1] > w[0] {
                    h.count_between(w[0], w[1] - 1)
                } else {
                    0
                }
            })
            .collect(),
    )
}

fn charts(scope: &str, base: &[Run], cand: &[Run]) -> Vec<Block> {
    let edges = edges_ns();
    let (Some(a), Some(b)) = (distribution(base, &edges), distribution(cand, &edges)) else {
        return vec![Block::Text(
            "No interval logs on both sides: no distributions to draw.".into(),
        )];
    };
    let series = vec![
        Series::line("baseline", shares(&a, &edges)),
        Series::line("candidate", shares(&b, &edges)),
    ];
    let chart = |title: String, y: Axis| XyChart {
        title,
        x: Axis::log("response time (ms)"),
        y,
        series: series.clone(),
    };
    // The difference per bin in percentage points, over the bins either side has.
    let (ta, tb) = (
        a.iter().sum::<u64>().max(1) as f64,
        b.iter().sum::<u64>().max(1) as f64,
    );
    let difference: Vec<(f64, f64)> = a
        .iter()
        .zip(&b)
        .zip(edges.windows(2))
        .filter(|((x, y), _)| **x + **y > 0)
        .map(|((x, y), w)| {
            let centre_ms = (w[0] as f64 * w[1] as f64).sqrt() / 1e6;
            (centre_ms, 100.0 * (*y as f64 / tb - *x as f64 / ta))
        })
        .collect();
    let (most, at) = difference
        .iter()
        .map(|(ms, d)| (d.abs(), *ms))
        .max_by(|p, q| p.0.total_cmp(&q.0))
        .unwrap_or((0.0, 0.0));
    vec![
        Block::Chart {
            svg: chart(format!("Response-time histograms, {scope}"), Axis::linear("% of requests")).to_svg(),
            reading: "The two distributions overlaid: a shift right is a slower server.".into(),
        },
        Block::Chart {
            svg: chart(
                format!("Response-time histograms, {scope}, log frequency"),
                Axis::log("% of requests (log)"),
            )
            .to_svg(),
            reading: "Log frequency shows the tails, where a regression usually starts.".into(),
        },
        Block::Chart {
            svg: XyChart {
                title: format!("Candidate minus baseline, per bin, {scope}"),
                x: Axis::log("response time (ms)"),
                y: Axis::linear("percentage points"),
                series: vec![Series {
                    name: "candidate − baseline".into(),
                    points: difference,
                    style: Style::Line,
                    spread: Vec::new(),
                }],
            }
            .to_svg(),
            reading: format!(
                "Above zero, the candidate has more of its requests at that response time. The largest difference: {most:.1} points near {at:.2} ms."
            ),
        },
    ]
}

/// The page of `comparisons`, each with its runs.
pub fn page(title: &str, comparisons: &[(Comparison, &[Run], &[Run])]) -> String {
    let mut sections = Vec::new();
    for (c, base, cand) in comparisons {
        let mut table = Table::new([
            "metric",
            "baseline",
            "candidate",
            "change",
            "significant",
            "test",
        ]);
        for r in &c.rows {
            table.row([
                r.metric.clone(),
                format!("{:.2}", r.baseline),
                format!("{:.2}", r.candidate),
                format!("{:+.1} %", r.change_pct),
                match (r.significant, r.worse) {
                    (true, true) => "yes, worse".to_string(),
                    (true, false) => "yes, better".to_string(),
                    _ => "no".to_string(),
                },
                r.test.clone(),
            ]);
        }
        let mut blocks = vec![Block::Table {
            caption: format!(
                "{} baseline run(s), {} candidate run(s)",
                c.runs.0, c.runs.1
            ),
            table,
        }];
        blocks.extend(charts(&c.scope, base, cand));
        if let Some(d) = &c.distributions {
            blocks.push(Block::Text(format!(
                "Kolmogorov-Smirnov distance between the distributions: D = {:.4} (p = {:.3}; with this many samples even a difference of no practical size has a small p).",
                d.ks_d, d.ks_p
            )));
        }
        sections.push(Section {
            heading: c.scope.clone(),
            blocks,
        });
    }
    Page {
        title: "webscope compare".into(),
        subtitle: title.to_string(),
        banners: Vec::new(),
        sections,
    }
    .to_html()
}
