//! The clients sweep's page: throughput and bandwidth vs clients with the USL fit, response
//! time with the Little's-law line, the server's phases, a request's time split (listen queue,
//! server, the rest) where the kernel module measured the queue, the saturation point stated.

use std::path::Path;
use webscope_report::human::pct_brief;

use webscope_report::svg::{Axis, BarChart, Series, Style, XyChart};
use webscope_report::Block;

use super::charts::goodput_series;
use super::page::ExperimentPage;
use super::per_run;
use super::point::{load_pooled, valid, Point};
use super::rendered::Rendered;
use super::sweep::{not_the_server, saturation, usl_fit, Saturation, Shape};
use webscope_lab::results::sweeps::{ClientsEntry, UslEntry};
use webscope_record::ExperimentRecord;

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
    page.extend(machine_bound(&valid));
    if valid.is_empty() {
        // Empty axes would read as a measurement of nothing; the table says what each run got.
        page.push(Block::Text(
            "No valid run: nothing to chart. The table gives what each run received.".into(),
        ));
        page.table("Per run", per_run::table(&points, "clients"));
    } else {
        charts(&mut page, dir, &valid, sat.as_ref());
        // Where the table has no accept-queue column, why: once, above it.
        page.extend(super::queue_wait::absent_note(
            points.iter().map(|p| &p.run),
        ));
        // Where they are there, what the kernel module that measured them costs.
        page.extend(super::kernel_cost::note(points.iter().map(|p| &p.run)));
        let kernel: Vec<_> = points
            .iter()
            .map(|p| (p.x, p.connections.as_ref()))
            .collect();
        page.extend(super::connections::table(&kernel, "clients"));
        page.table(
            "Per run (goodput: responses with an expected status; bound by: the verdict of each run)",
            per_run::table(&points, "clients"),
        );
    }
    page.summary("clients sweep", sat.as_ref().map(|s| s.reading.clone()));
    page.entry(&ClientsEntry {
        knee_clients: sat.as_ref().map(|s| s.knee),
        max_requests_per_s: sat.as_ref().map(|s| s.max_rps),
        reading: sat.as_ref().map(|s| s.reading.clone()),
        usl: usl_fit(&points).ok().map(|f| UslEntry {
            sigma: f.sigma,
            kappa: f.kappa,
            lambda: f.lambda,
            r_squared: f.r_squared,
            n_peak: f.n_peak,
            x_peak: f.x_peak,
        }),
        runs: per_run::json(&points, "clients"),
    })?;
    page.paper(super::paper_panels::clients(&points, sat.as_ref()));
    page.finish(out);
    Ok(())
}

/// A warning when every valid run was bound by the machine's CPUs (#52): other work on the
/// machine set the figures as much as the server did, and a quieter machine is the fix.
fn machine_bound(valid: &[Point]) -> Option<Block> {
    let all = !valid.is_empty()
        && valid
            .iter()
            .all(|p| p.verdict.bound == webscope_bottleneck::Bound::MachineCpu);
    all.then(|| {
        Block::Warning(
            "Every run was bound by the machine's CPUs: work other than the server's and the generator's took them, so these figures measure this machine's neighbours as much as the server. Rerun on a quieter machine (webscope monitor shows who else runs), or compare two servers with lab --experiment ab, whose interleaved rounds cancel a drift of the machine.".into(),
        )
    })
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
    page.push(latency_chart(points, sat));
    page.extend(phases_chart(points));
    let split: Vec<super::queue_wait::SplitPoint> = points
        .iter()
        .map(|p| super::queue_wait::SplitPoint {
            x: p.x,
            mean_ms: p.mean_ms,
            server_ms: p.server_ms,
            queue_wait: p.queue_wait,
        })
        .collect();
    page.extend(super::queue_wait::time_split(&split, sat.map(|s| s.knee)));
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
            reading.push_str(&usl_sentence(&fit, points));
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

/// What the USL's fit says, and what it describes: the server's scalability only when every
/// run is bound by the server or by the clients' round trips (the runs' verdicts); else it
/// is a curve through runs something else bounds, and its peak is not the server's.
fn usl_sentence(fit: &webscope_model::usl::Fit, points: &[Point]) -> String {
    match not_the_server(points) {
        None => format!(
            " The Universal Scalability Law fits with R² = {:.3}{}.",
            fit.r_squared,
            fit.n_peak.map_or(String::new(), |n| format!(
                ", predicting the peak at N* = {n:.1} clients"
            ))
        ),
        Some(others) => format!(
            " The Universal Scalability Law's curve (R² = {:.3}) runs through runs that the server does not bound ({others}): it describes those limits, not the server's scalability{}.",
            fit.r_squared,
            fit.n_peak.map_or(String::new(), |n| format!(
                ", so its peak at N* = {n:.1} clients is not the server's"
            ))
        ),
    }
}

/// Response time against clients, with Little's law's line for a closed loop without think
/// time (N = X R, so R = N / X) and the server's own time when every run has it.
fn latency_chart(points: &[Point], sat: Option<&Saturation>) -> Block {
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
    let server_ms = points.iter().all(|p| p.server_ms.is_some());
    if server_ms {
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
        reading: latency_reading(points, sat, little_err, server_ms),
    }
}

/// The response-time chart's sentence: how response time follows clients, said for what
/// throughput did (the sweep's shape), and the server's own share only when it was measured.
fn latency_reading(
    points: &[Point],
    sat: Option<&Saturation>,
    little_err: f64,
    server_ms: bool,
) -> String {
    let shape = match sat.map(|s| s.shape) {
        Some(Shape::Flat) => {
            "Once throughput is flat, response time grows in proportion to clients"
        }
        Some(Shape::Falls) => {
            "Past the peak throughput falls, so response time grows faster than clients"
        }
        Some(Shape::Grows) | None => {
            "While throughput still grows, response time grows less than clients"
        }
    };
    // The server's share: its own time against the clients' mean, where both were measured.
    let share = points
        .iter()
        .filter(|p| p.mean_ms > 0.0)
        .filter_map(|p| Some(p.server_ms? / p.mean_ms))
        .fold(0.0, f64::max);
    let server = if !server_ms {
        String::new()
    } else if share < 0.5 {
        format!(
            "; the server's own time per request is the small part (at most {} of the mean)",
            pct_brief(share)
        )
    } else {
        format!(
            "; the server's own time per request is up to {} of the mean",
            pct_brief(share)
        )
    };
    format!(
        "{shape}, as Little's law says (measured mean within {} of N/X){server}.",
        pct_brief(little_err)
    )
}

/// The server's phases per size class, at the largest load that has the server's figures.
fn phases_chart(points: &[Point]) -> Option<Block> {
    let run = points
        .iter()
        .rev()
        .find(|p| p.run.server.is_some())
        .map(|p| &p.run)?;
    let server = run.server.as_ref()?;
    let classes: Vec<&webscope_record::PhaseFigures> = server
        .phases_us
        .iter()
        .filter(|c| c.requests > 0.0)
        .collect();
    // A server that does not report its phases (any --target) has none to draw.
    if classes.is_empty() {
        return None;
    }
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
        reading: super::charts::phases_reading(
            &classes
                .iter()
                .map(|c| (c.class.clone(), (c.parse_us, c.process_us, c.log_us)))
                .collect::<Vec<_>>(),
            "WebMonitor's phases: processing (lookup and sending) grows with file size; parsing and logging do not.",
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::point::test_sweep;
    use webscope_bottleneck::{judge, Evidence};

    /// The quick lab of #27 on 2 CPUs, a connection per request: throughput peaks at 5
    /// clients and falls 43 %; the runs at 10 and 20 clients are bound by the ports their own
    /// connections left in TIME_WAIT.
    fn quick_lab_that_falls() -> Vec<Point> {
        let mut pts = test_sweep(
            &[
                (1.0, 6000.0),
                (2.0, 11000.0),
                (5.0, 17000.0),
                (10.0, 12000.0),
                (20.0, 9700.0),
            ],
            0.6,
            Some(0.5),
        );
        for p in pts.iter_mut().filter(|p| p.x >= 10.0) {
            p.verdict = judge(&Evidence {
                clients: p.x,
                goodput_rps: p.rps,
                generator_busy: 0.6,
                time_wait: Some(14_000.0),
                connects: 3.0 * p.rps,
                duration_s: 3.0,
                port_range: Some(28_232.0),
                ..Evidence::default()
            });
        }
        for p in &mut pts {
            p.mean_ms = 1000.0 * p.x / p.rps;
        }
        pts
    }

    /// The page's sentences about the sweep tell one story, the runs' verdicts: "falls" where
    /// throughput falls, the fall's cause is the verdict of the runs past the peak, the USL
    /// says it describes those limits, and the paper's panel tells no other cause (#27).
    #[test]
    fn every_sentence_about_the_sweep_comes_from_its_verdicts() {
        let pts = quick_lab_that_falls();
        let sat = saturation(&pts).unwrap();
        assert_eq!(sat.shape, Shape::Falls);
        let says = |text: &str| {
            assert!(!text.contains("slower, not just busier"), "{text}");
            assert!(!text.contains("Once throughput is flat"), "{text}");
            assert!(
                !text.contains("kernel work takes the server's CPUs"),
                "{text}"
            );
            assert!(!text.contains("no saturation"), "{text}");
        };
        assert!(
            sat.reading
                .contains("falls to 9 700 at 20 clients (42.9 % lower)")
                && sat
                    .reading
                    .contains("at 20 clients, this run's 29100 connections"),
            "{}",
            sat.reading
        );
        says(&sat.reading);
        let Block::Chart { reading, .. } = goodput_chart(&pts, Some(&sat)) else {
            panic!("no goodput chart");
        };
        says(&reading);
        assert!(
            reading.contains("ports/TIME_WAIT at 10, 20")
                && reading.contains("not the server's scalability"),
            "{reading}"
        );
        let Block::Chart { reading, .. } = latency_chart(&pts, Some(&sat)) else {
            panic!("no latency chart");
        };
        says(&reading);
        assert!(reading.contains("throughput falls"), "{reading}");
        for c in super::super::paper_panels::clients(&pts, Some(&sat)) {
            says(&c.reading);
            if c.reading.contains("declines") {
                assert!(c.reading.contains("ports/TIME_WAIT"), "{}", c.reading);
            }
        }
    }

    /// A sweep whose largest load is bound by the generator has reached a limit: not "no
    /// saturation" (#27).
    #[test]
    fn growth_to_a_busy_generator_is_not_called_unsaturated() {
        let mut pts = test_sweep(&[(1.0, 100.0), (2.0, 160.0), (4.0, 200.0)], 0.5, Some(0.3));
        pts[2].verdict = judge(&Evidence {
            clients: 4.0,
            goodput_rps: 200.0,
            generator_busy: 0.93,
            ..Evidence::default()
        });
        let sat = saturation(&pts).unwrap();
        assert_eq!(sat.shape, Shape::Grows);
        assert!(
            !sat.reading.contains("no saturation") && sat.reading.contains("93 % busy"),
            "{}",
            sat.reading
        );
    }

    /// A --target server reports no phases and no time of its own: no empty phases chart,
    /// no sentence about the server's share (#27).
    #[test]
    fn an_external_server_gets_no_phases_chart_and_no_server_share() {
        let mut pts = test_sweep(&[(1.0, 100.0), (2.0, 190.0)], 0.3, Some(0.5));
        for p in &mut pts {
            p.run.server = Some(webscope_record::ServerFigures {
                phases_us: vec![webscope_record::PhaseFigures {
                    class: "0-1KB".into(),
                    ..Default::default()
                }],
                ..Default::default()
            });
            p.mean_ms = 10.0;
        }
        assert!(phases_chart(&pts).is_none());
        let Block::Chart { reading, .. } = latency_chart(&pts, saturation(&pts).as_ref()) else {
            panic!("no latency chart");
        };
        assert!(!reading.contains("server's own"), "{reading}");
    }

    #[test]
    fn invalid_runs_are_left_out_of_the_knee_and_the_fit() {
        let mut pts: Vec<Point> = test_sweep(
            &[(1.0, 1000.0), (2.0, 1900.0), (5.0, 2000.0), (10.0, 2050.0)],
            0.3,
            Some(0.97),
        );
        // A run of 403s: fast responses that are no throughput at all.
        let forbidden = webscope_record::load_json(
            serde_json::json!({"duration_s": 1.0, "status_codes": {"403": 90000}}),
        );
        let expect = webscope_record::health::Expect::parse("2xx").unwrap();
        pts[3].health = webscope_record::health::Health::of(&forbidden, &expect, 1.0);
        pts[3].rps = pts[3].health.goodput_rps;
        let s = saturation(&pts).unwrap();
        assert_eq!((s.knee, s.max_rps), (2.0, 2000.0), "{}", s.reading);
        assert!(s.reading.contains("at 2 000 requests/s"), "{}", s.reading);
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

    /// #52: every run bound by the machine's CPUs gets one warning that says to rerun on a
    /// quieter machine; one run bound by the server does not.
    #[test]
    fn runs_all_bound_by_the_machine_say_to_rerun_elsewhere() {
        let mut pts = test_sweep(&[(1.0, 1000.0), (5.0, 3000.0)], 0.3, Some(0.5));
        for p in &mut pts {
            p.verdict.bound = webscope_bottleneck::Bound::MachineCpu;
        }
        let Some(Block::Warning(w)) = machine_bound(&pts) else {
            panic!("no warning");
        };
        assert!(w.contains("Rerun on a quieter machine"), "{w}");
        pts[1].verdict.bound = webscope_bottleneck::Bound::ServerCpu;
        assert!(machine_bound(&pts).is_none());
    }
}
