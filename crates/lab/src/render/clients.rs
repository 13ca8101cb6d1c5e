//! The clients sweep's page: throughput and bandwidth vs clients with the USL fit, response
//! time with the Little's-law line, the server's phases, the saturation point stated.

use std::path::Path;

use webscope_report::svg::{Axis, BarChart, Series, Style, XyChart};
use webscope_report::Block;

use super::charts::goodput_series;
use super::page::ExperimentPage;
use super::per_run;
use super::point::{load_pooled, valid, Point};
use super::rendered::Rendered;
use super::sweep::{saturation, usl_fit, Saturation};
use crate::record::ExperimentRecord;

/// Adds the clients sweep to the report.
pub fn render(dir: &Path, exp: &ExperimentRecord, out: &mut Rendered) -> anyhow::Result<()> {
    let points = load_pooled(dir, exp, out)?;
    let sat = saturation(&points);
    let mut page = ExperimentPage::new(exp, "Clients sweep");
    for p in points.iter().filter(|p| !p.valid()) {
        page.push(Block::Warning(format!(
            "The run with {} client{} is invalid and left out of the charts and fits: {}.",
            p.x,
            if p.x == 1.0 { "" } else { "s" },
            p.health.invalid.as_deref().unwrap_or("")
        )));
    }
    page.repeats_note(&points);
    let valid = valid(&points);
    if valid.is_empty() {
        // Empty axes would read as a measurement of nothing; the table says what each run got.
        page.push(Block::Text(
            "No valid run: nothing to chart. The table gives what each run received.".into(),
        ));
        page.table("Per run", per_run::table(&points, "clients"));
    } else {
        charts(&mut page, dir, &valid, sat.as_ref());
        page.table(
            "Per run (goodput: responses with an expected status; bound by: the verdict of each run)",
            per_run::table(&points, "clients"),
        );
    }
    page.summary("clients sweep", sat.as_ref().map(|s| s.reading.clone()));
    page.json(serde_json::json!({
        "knee_clients": sat.as_ref().map(|s| s.knee),
        "max_requests_per_s": sat.as_ref().map(|s| s.max_rps),
        "reading": sat.as_ref().map(|s| s.reading.clone()),
        "usl": usl_fit(&points).ok().map(|f| serde_json::json!({
            "sigma": f.sigma, "kappa": f.kappa, "lambda": f.lambda,
            "r_squared": f.r_squared, "n_peak": f.n_peak, "x_peak": f.x_peak,
        })),
        "runs": per_run::json(&points, "clients"),
    }));
    page.paper(super::paper_panels::clients(&points, sat.as_ref()));
    page.finish(out);
    Ok(())
}

/// The sweep's charts, from its valid points: goodput with the USL, bandwidth, response time
/// with Little's law, the server's phases, histograms, CPU and TCP states.
fn charts(page: &mut ExperimentPage, dir: &Path, points: &[Point], sat: Option<&Saturation>) {
    let xs = |f: &dyn Fn(&Point) -> f64| -> Vec<(f64, f64)> {
        points.iter().map(|p| (p.x, f(p))).collect()
    };
    page.push(goodput_chart(points, sat));
    page.chart(
        XyChart {
            title: "Bandwidth vs clients".into(),
            x: Axis::linear("clients"),
            y: Axis::linear("Mbit/s"),
            series: vec![Series::line("measured", xs(&|p| p.mbit_s))],
        }
        .to_svg(),
        "Bandwidth follows throughput: the mix's mean response size is fixed.",
    );
    page.push(latency_chart(points));
    page.extend(phases_chart(points));
    let labels: Vec<String> = points.iter().map(|p| format!("{}", p.x)).collect();
    let runs: Vec<(String, String)> = points
        .iter()
        .map(|p| (p.name.clone(), format!("{} clients", p.x)))
        .collect();
    page.extend(super::charts::histograms(dir, &runs, "per client count"));
    page.extend(super::charts::cpu_stack(points, &labels, "client count"));
    if let Some((name, label)) = runs.last() {
        page.push(super::charts::tcp_states(&dir.join(name), label));
    }
}

/// Goodput against clients, with the USL's curve and the saturation point in the reading.
fn goodput_chart(points: &[Point], sat: Option<&Saturation>) -> Block {
    let mut throughput = vec![goodput_series(points)];
    let mut reading = sat.map_or("Too few runs to judge saturation.".into(), |s| {
        s.reading.clone()
    });
    match usl_fit(points) {
        Ok(fit) => {
            let last = points.last().map_or(1.0, |p| p.x);
            let curve: Vec<(f64, f64)> = (0..=50)
                .map(|i| 1.0 + (last - 1.0) * f64::from(i) / 50.0)
                .map(|n| (n, fit.throughput_at(n)))
                .collect();
            throughput.push(Series {
                name: format!("USL σ={:.3} κ={:.4}", fit.sigma, fit.kappa),
                points: curve,
                style: Style::Dashed,
                spread: Vec::new(),
            });
            reading.push_str(&format!(
                " The Universal Scalability Law fits with R² = {:.3}{}.",
                fit.r_squared,
                fit.n_peak.map_or(String::new(), |n| format!(
                    ", predicting the peak at N* = {n:.1} clients"
                ))
            ));
        }
        Err(why) => reading.push_str(&format!(" No USL fit: {why}.")),
    }
    Block::Chart {
        svg: XyChart {
            title: "Goodput vs clients".into(),
            x: Axis::linear("clients"),
            y: Axis::linear("successful requests/s"),
            series: throughput,
        }
        .to_svg(),
        reading,
    }
}

/// Response time against clients, with Little's law's line for a closed loop without think
/// time (N = X R, so R = N / X) and the server's own time when every run has it.
fn latency_chart(points: &[Point]) -> Block {
    let xs = |f: &dyn Fn(&Point) -> f64| -> Vec<(f64, f64)> {
        points.iter().map(|p| (p.x, f(p))).collect()
    };
    let little: Vec<(f64, f64)> = points
        .iter()
        .filter(|p| p.rps > 0.0)
        .map(|p| (p.x, p.x / p.rps * 1000.0))
        .collect();
    let mut latency = vec![
        Series::line("mean", xs(&|p| p.mean_ms)),
        Series::line("p50", xs(&|p| p.p50_ms)),
        Series::line("p99", xs(&|p| p.p99_ms)),
        Series {
            name: "Little's law N/X".into(),
            points: little.clone(),
            style: Style::Dashed,
            spread: Vec::new(),
        },
    ];
    if points.iter().all(|p| p.server_ms.is_some()) {
        latency.push(Series::line("server", xs(&|p| p.server_ms.unwrap_or(0.0))));
    }
    let little_err = points
        .iter()
        .zip(&little)
        .map(|(p, (_, l))| {
            if *l > 0.0 {
                (p.mean_ms - l).abs() / l
            } else {
                0.0
            }
        })
        .fold(0.0, f64::max);
    Block::Chart {
        svg: XyChart {
            title: "Response time vs clients".into(),
            x: Axis::linear("clients"),
            y: Axis::linear("ms"),
            series: latency,
        }
        .to_svg(),
        reading: format!(
            "Once throughput is flat, response time grows in proportion to clients, as Little's law says (measured mean within {:.0} % of N/X); the server's own time per request is the small part.",
            100.0 * little_err
        ),
    }
}

/// The server's phases per size class, at the largest load that has the server's figures.
fn phases_chart(points: &[Point]) -> Option<Block> {
    let run = points
        .iter()
        .rev()
        .find(|p| p.run.server.is_some())
        .map(|p| &p.run)?;
    let server = run.server.as_ref()?;
    let classes: Vec<&crate::record::PhaseFigures> = server
        .phases_us
        .iter()
        .filter(|c| c.requests > 0.0)
        .collect();
    Some(Block::Chart {
        svg: BarChart {
            title: format!("Server time per request by size class ({} clients)", run.x),
            categories: classes.iter().map(|c| c.class.clone()).collect(),
            y: Axis::linear("µs"),
            series: vec![
                ("parse".into(), classes.iter().map(|c| c.parse_us).collect()),
                ("process".into(), classes.iter().map(|c| c.process_us).collect()),
                ("log".into(), classes.iter().map(|c| c.log_us).collect()),
            ],
            stacked: true,
        }
        .to_svg(),
        reading: "WebMonitor's phases: processing (lookup and sending) grows with file size; parsing and logging do not.".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::point::test_sweep;

    #[test]
    fn invalid_runs_are_left_out_of_the_knee_and_the_fit() {
        let mut pts: Vec<Point> = test_sweep(
            &[(1.0, 1000.0), (2.0, 1900.0), (5.0, 2000.0), (10.0, 2050.0)],
            0.3,
            Some(0.97),
        );
        // A run of 403s: fast responses that are no throughput at all.
        let forbidden = serde_json::json!({"duration_s": 1.0, "status_codes": {"403": 90000}});
        let expect = crate::health::Expect::parse("2xx").unwrap();
        pts[3].health = crate::health::Health::of(&forbidden, &expect, 1.0);
        pts[3].rps = pts[3].health.goodput_rps;
        let s = saturation(&pts).unwrap();
        assert_eq!((s.knee, s.max_rps), (2.0, 2000.0), "{}", s.reading);
        assert!(
            s.reading.contains("at 2000 requests/s") || s.reading.contains("2000"),
            "{}",
            s.reading
        );
        let table = per_run::table(&pts, "clients");
        let last = table.rows.last().unwrap();
        assert!(last.iter().any(|c| c == "403×90000"), "{last:?}");
        assert!(
            last.iter()
                .any(|c| c.starts_with("no: 403 Forbidden on 100 %")),
            "{last:?}"
        );
        assert!(
            !last.iter().any(|c| c == "server CPU"),
            "no verdict on an invalid run"
        );
    }
}
