//! The filesize experiment's page: throughput, bandwidth and response time vs mean file size,
//! the fixed cost per connection from the latency-vs-size line, phases and TCP states per
//! workload.

use std::path::Path;

use webscope_report::svg::{Axis, BarChart, Series, Style, XyChart};
use webscope_report::{Block, Table};

use super::cells::cell;
use super::charts::goodput_series;
use super::page::ExperimentPage;
use super::point::{load_pooled, valid, Point};
use super::rendered::Rendered;
use super::sweep::line_fit;
use webscope_record::{ExperimentRecord, RunRecord};

/// The server's phase means over all size classes of a run (µs): parse, process, log.
fn phases_overall(run: &RunRecord) -> Option<(f64, f64, f64)> {
    let server = run.server.as_ref()?;
    let n: f64 = server.phases_us.iter().map(|c| c.requests).sum();
    if n <= 0.0 {
        return None;
    }
    let mean = |f: &dyn Fn(&webscope_record::PhaseFigures) -> f64| {
        server
            .phases_us
            .iter()
            .map(|c| f(c) * c.requests)
            .sum::<f64>()
            / n
    };
    Some((
        mean(&|c| c.parse_us),
        mean(&|c| c.process_us),
        mean(&|c| c.log_us),
    ))
}

fn workload(run: &RunRecord) -> String {
    run.load_description
        .split(',')
        .next()
        .unwrap_or("")
        .trim_start_matches("WebStone ")
        .to_string()
}

/// The page's charts: connections, bandwidth and response time against size (with the
/// line whose intercept is the fixed cost of a connection), then per workload its phases,
/// histograms, CPU, kernel profile and TCP states.
fn charts(page: &mut ExperimentPage, dir: &Path, points: &[Point]) {
    let xs = |f: &dyn Fn(&Point) -> f64| -> Vec<(f64, f64)> {
        points.iter().map(|p| (p.x, f(p))).collect()
    };
    page.push(Block::Chart {
        svg: XyChart {
            title: "Connections per second vs mean file size".into(),
            x: Axis::linear("mean file size (KB)"),
            y: Axis::linear("connections/s"),
            series: vec![goodput_series(points)],
        }
        .to_svg(),
        reading: "Connections per second fall as files grow: each connection carries more bytes."
            .into(),
    });
    page.push(Block::Chart {
        svg: XyChart {
            title: "Bandwidth vs mean file size".into(),
            x: Axis::linear("mean file size (KB)"),
            y: Axis::linear("Mbit/s"),
            series: vec![Series::line("measured", xs(&|p| p.mbit_s))],
        }
        .to_svg(),
        reading: "Bandwidth grows with file size while the fixed cost of a connection is amortised over more bytes.".into(),
    });
    let latency = xs(&|p| p.mean_ms);
    let mut series = vec![Series::line("mean response time", latency.clone())];
    let reading = match line_fit(&latency) {
        Some((a, b)) => {
            let last = points.last().map_or(0.0, |p| p.x);
            series.push(Series {
                name: format!("fit {a:.3} ms + {:.4} ms/KB", b),
                points: vec![(0.0, a), (last, a + b * last)],
                style: Style::Dashed,
                spread: Vec::new(),
            });
            format!(
                "Response time grows about linearly with size: the line's intercept, {a:.3} ms, is the fixed cost of a connection at this load (the Yates paper found 25 ms on its 1997 hardware), and each KB adds {:.1} µs.",
                b * 1000.0
            )
        }
        None => "Too few runs for a line.".into(),
    };
    page.push(Block::Chart {
        svg: XyChart {
            title: "Response time vs mean file size".into(),
            x: Axis::linear("mean file size (KB)"),
            y: Axis::linear("ms"),
            series,
        }
        .to_svg(),
        reading,
    });
    let phases: Vec<(String, (f64, f64, f64))> = points
        .iter()
        .filter_map(|p| Some((workload(&p.run), phases_overall(&p.run)?)))
        .collect();
    if !phases.is_empty() {
        page.push(Block::Chart {
            svg: BarChart {
                title: "Server time per request by workload".into(),
                categories: phases.iter().map(|(w, _)| w.clone()).collect(),
                y: Axis::linear("µs"),
                series: vec![
                    ("parse".into(), phases.iter().map(|(_, p)| p.0).collect()),
                    ("process".into(), phases.iter().map(|(_, p)| p.1).collect()),
                    ("log".into(), phases.iter().map(|(_, p)| p.2).collect()),
                ],
                stacked: true,
            }
            .to_svg(),
            reading: super::charts::phases_reading(
                &phases,
                "The server's own work per request: processing grows with the files' size; parsing and logging stay flat.",
            ),
        });
    }
    let labels: Vec<String> = points.iter().map(|p| workload(&p.run)).collect();
    let runs: Vec<(String, String)> = points
        .iter()
        .map(|p| p.name.clone())
        .zip(labels.clone())
        .collect();
    page.extend(super::charts::histograms(dir, &runs, "per workload"));
    page.extend(super::charts::cpu_stack(points, &labels, "workload"));
    page.extend(super::charts::kernel_profile(points, &labels, "workload"));
    for (name, label) in [runs.first(), runs.last()].into_iter().flatten() {
        page.push(super::charts::tcp_states(&dir.join(name), label));
    }
}

/// One row per workload: its size, rates, TCP states and the server's phases.
fn table(points: &[Point]) -> Table {
    let mut table = Table::new([
        "workload",
        "mean KB",
        "conn/s",
        "Mbit/s",
        "mean ms",
        "p99 ms",
        "TIME_WAIT",
        "ESTABLISHED",
        "parse µs",
        "process µs",
        "log µs",
    ]);
    for p in points {
        let os = p.run.local_os();
        let port = os.and_then(|o| o.ports.first());
        let state = |s: &str| {
            cell(
                port.and_then(|port| os?.max("ports", &format!("{port}/local"), s)),
                0,
            )
        };
        let ph = phases_overall(&p.run);
        table.row([
            workload(&p.run),
            format!("{:.1}", p.x),
            format!("{:.0}", p.rps),
            format!("{:.1}", p.mbit_s),
            format!("{:.2}", p.mean_ms),
            format!("{:.2}", p.p99_ms),
            state("time_wait"),
            state("established"),
            cell(ph.map(|p| p.0), 1),
            cell(ph.map(|p| p.1), 1),
            cell(ph.map(|p| p.2), 1),
        ]);
    }
    table
}

/// Adds the filesize experiment to the report.
pub fn render(dir: &Path, exp: &ExperimentRecord, out: &mut Rendered) -> anyhow::Result<()> {
    let points = valid(&load_pooled(dir, exp, out)?);
    let mut page = ExperimentPage::new(exp, "File size (WebStone A/4 .. A*4)");
    page.repeats_note(&points);
    charts(&mut page, dir, &points);
    page.table(
        "Per workload (TCP states: the most seen on the server's port during the run)",
        table(&points),
    );
    let fit = line_fit(&points.iter().map(|p| (p.x, p.mean_ms)).collect::<Vec<_>>());
    page.summary(
        "filesize (WebStone A)",
        fit.map(|(a, b)| {
            format!(
                "fixed cost per connection {a:.3} ms, {:.1} µs per KB",
                b * 1000.0
            )
        }),
    );
    if let Some((a, b)) = fit {
        page.entry(&webscope_lab::results::sweeps::FilesizeEntry {
            fixed_cost_ms: a,
            per_kb_ms: b,
        })?;
    }
    page.paper(super::paper_panels::filesize(&points, &|p| {
        workload(&p.run)
    }));
    page.finish(out);
    Ok(())
}
