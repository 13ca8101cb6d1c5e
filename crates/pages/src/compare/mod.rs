//! `compare --html`: the comparison as a page — the table of each point, the two latency
//! distributions overlaid (linear and log frequency, as Chiarini and Couch drew them), their
//! difference bin by bin, and the difference of their density maps over the run's time.

pub mod table;

use webscope_report::svg::{Axis, HeatMap, Series, Style, XyChart};
use webscope_report::{Block, Page, Section};

use crate::charts::{edges_ns, shares};
use table::{table, Layout};
use webscope_compare::input::Run;
use webscope_compare::Comparison;

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

/// Per interval index (the runs' i-th seconds merged over their repeats), the requests per
/// latency bin.
fn density(runs: &[Run], edges: &[u64]) -> Vec<Vec<u64>> {
    let longest = runs.iter().map(|r| r.intervals.len()).max().unwrap_or(0);
    (0..longest)
        .map(|i| {
            let mut counts = vec![0u64; edges.len() - 1];
            for interval in runs.iter().filter_map(|r| r.intervals.get(i)) {
                for (count, w) in counts.iter_mut().zip(edges.windows(2)) {
                    if w[1] > w[0] {
                        *count += interval.histogram.count_between(w[0], w[1] - 1);
                    }
                }
            }
            counts
        })
        .collect()
}

/// The candidate's density map minus the baseline's: for each second of the run and each
/// latency bin, the difference of the shares of that second's requests, in percentage points.
fn difference_map(scope: &str, base: &[Run], cand: &[Run]) -> Option<Block> {
    let map = difference(scope, base, cand)?;
    let cell = |sign: f64| {
        let mut best: Option<(f64, usize, usize)> = None;
        for (i, column) in map.values.iter().enumerate() {
            for (j, v) in column.iter().enumerate() {
                if v.is_finite() && sign * v > best.map_or(0.0, |b| sign * b.0) {
                    best = Some((*v, i, j));
                }
            }
        }
        best.map(|(v, i, j)| {
            let centre = (map.y_edges[j] * map.y_edges[j + 1]).sqrt();
            format!("{v:+.1} points in second {} near {centre:.2} ms", i + 1)
        })
    };
    let extremes: Vec<String> = [cell(1.0), cell(-1.0)].into_iter().flatten().collect();
    Some(Block::Chart {
        svg: map.to_svg(),
        reading: format!(
            "Each second of the candidate set against the same second of the baseline (their repeats merged): vermilion where the candidate has more of that second's requests at that response time, blue where it has fewer; a regression that sets in late in a run shows as colour on the right only. {}",
            if extremes.is_empty() {
                "No cell differs.".to_string()
            } else {
                format!("The strongest: {}.", extremes.join("; "))
            }
        ),
    })
}

/// The map behind [`difference_map`]: columns are the seconds both sides have, rows the
/// latency bins either side used.
fn difference(scope: &str, base: &[Run], cand: &[Run]) -> Option<HeatMap> {
    let edges = edges_ns();
    let (a, b) = (density(base, &edges), density(cand, &edges));
    let columns = a.len().min(b.len());
    // Rows: the latency bins either side used at all.
    let used = |m: &[Vec<u64>], bin: usize| m.iter().take(columns).any(|c| c[bin] > 0);
    let rows: Vec<usize> = (0..edges.len() - 1)
        .filter(|&bin| used(&a, bin) || used(&b, bin))
        .collect();
    let (first, last) = (*rows.first()?, *rows.last()?);
    let seconds = base
        .iter()
        .find_map(|r| r.intervals.first())
        .map_or(1.0, |i| i.length_s.max(1e-3));
    let share = |c: &[u64], bin: usize| {
        let total: u64 = c.iter().sum();
        (total > 0).then(|| 100.0 * c[bin] as f64 / total as f64)
    };
    let values: Vec<Vec<f64>> = (0..columns)
        .map(|i| {
            (first..=last)
                .map(|bin| match (share(&a[i], bin), share(&b[i], bin)) {
                    (Some(x), Some(y)) => y - x,
                    _ => f64::NAN,
                })
                .collect()
        })
        .collect();
    Some(HeatMap {
        title: format!("Density maps, candidate minus baseline, {scope}"),
        x: Axis::linear("seconds since the run's start"),
        y: Axis::log("response time (ms)"),
        x_edges: (0..=columns).map(|i| i as f64 * seconds).collect(),
        y_edges: edges[first..=last + 1]
            .iter()
            .map(|&e| e as f64 / 1e6)
            .collect(),
        values,
        legend: "percentage points of the second's requests".into(),
    })
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
    let mut blocks = vec![
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
    ];
    blocks.extend(difference_map(scope, base, cand));
    blocks
}

/// The page of `comparisons`, each with its runs.
pub fn page(title: &str, comparisons: &[(Comparison, &[Run], &[Run])]) -> String {
    let mut sections = Vec::new();
    for (c, base, cand) in comparisons {
        let mut blocks = vec![Block::Table {
            caption: format!(
                "{} baseline run(s), {} candidate run(s)",
                c.runs.0, c.runs.1
            ),
            table: table([c], &Layout::ONE_POINT),
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

#[cfg(test)]
mod tests {
    use webscope_compare::fixtures::run;

    use super::difference;

    #[test]
    fn a_regression_in_the_second_half_of_a_run_colours_the_right_of_the_difference_map() {
        let base = vec![run(5, 10, 20_000, 1.0)];
        let mut cand = vec![run(6, 10, 20_000, 1.0)];
        // From second 6 on, the candidate's upper sixth takes three times as long.
        let slow = run(7, 10, 20_000, 3.0);
        for (i, interval) in slow.intervals.into_iter().enumerate().skip(5) {
            cand[0].intervals[i] = interval;
        }
        let map = difference("run", &base, &cand).unwrap();
        assert_eq!(map.values.len(), 10);
        let most = |columns: std::ops::Range<usize>, sign: f64| {
            map.values[columns]
                .iter()
                .flatten()
                .filter(|v| v.is_finite())
                .fold(0.0f64, |m, v| m.max(sign * v))
        };
        let (early, late) = (most(0..5, 1.0).max(most(0..5, -1.0)), most(5..10, 1.0));
        assert!(late > 3.0, "the late seconds show no regression: {late}");
        assert!(
            late > 3.0 * early,
            "noise {early} points early against {late} late"
        );
        let svg = map.to_svg();
        assert!(svg.contains("Density maps, candidate minus baseline, run"));
    }
}
