//! The model experiment's page (Mughal §3): service demands from the measured utilisations
//! (D = U / X), the exact MVA curves of the closed network they make — the measured machine,
//! and 2× and 4× the server's CPUs — and the USL fit, drawn over the measured throughput and
//! response time, with the prediction error at each measured point.

use std::path::Path;
use webscope_report::human::pct_brief;

use webscope_model::mva;
use webscope_model::stats::Sorted;
use webscope_model::Network;
use webscope_report::svg::{Axis, Series, Style, XyChart};
use webscope_report::{Block, Table};

use super::cells::cell;
use super::charts::goodput_series;
use super::page::ExperimentPage;
use super::point::{load_pooled, valid, Point};
use super::rendered::Rendered;
use super::sweep::usl_fit;
use webscope_lab::results::sweeps::{Ceilings, ModelEntry, ServiceDemands};
use webscope_record::ExperimentRecord;

/// Service demands per request, seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Demands {
    /// The server's CPU (one core: the embedded server is pinned to one).
    pub cpu: f64,
    /// The load generator's busiest thread: it is a queue too, and on loopback often the
    /// first to saturate.
    pub generator: f64,
    /// The busiest disk (0 when the files are in the page cache).
    pub disk: f64,
    /// What is left of a request's cycle with one client: loopback, system calls on the
    /// client's side, wake-ups. A delay: nobody queues for it.
    pub delay: f64,
}

/// The demands of the sweep: D = U / X at each run, the median over runs (the law says they
/// are constant; the median shrugs off a noisy run). None without the server's CPU figures.
pub fn demands(points: &[Point]) -> Option<Demands> {
    let ok: Vec<&Point> = points.iter().filter(|p| p.rps > 0.0).collect();
    let cpu = Sorted::new(ok.iter().filter_map(|p| Some(p.server_cores? / p.rps))).median()?;
    let generator = Sorted::new(ok.iter().map(|p| p.generator_busy / p.rps))
        .median()
        .unwrap_or(0.0);
    let disk = Sorted::new(
        ok.iter()
            .map(|p| p.disk_util.unwrap_or(0.0) / 100.0 / p.rps),
    )
    .median()
    .unwrap_or(0.0);
    // The lightest run's cycle time N / X, less the queues' demands, is the delay.
    let first = ok.first()?;
    let delay = (first.x / first.rps - cpu - generator - disk).max(0.0);
    Some(Demands {
        cpu,
        generator,
        disk,
        delay,
    })
}

/// The closed network of `demands` with `cpus` server cores.
pub fn network(d: &Demands, cpus: u32) -> Result<Network, String> {
    let mut stations = vec![("server CPU", cpus, d.cpu), ("generator", 1, d.generator)];
    if d.disk > 0.0 {
        stations.push(("disk", 1, d.disk));
    }
    if d.delay > 0.0 {
        stations.push(("loopback and client", 0, d.delay));
    }
    Network::single_class("clients", 1, 0.0, &stations).map_err(|e| e.to_string())
}

/// MVA's throughput (req/s) and response time (s) at each N of `ns`.
pub fn mva_curve(d: &Demands, cpus: u32, ns: &[u32]) -> Result<Vec<(u32, f64, f64)>, String> {
    let (_, points) =
        mva::curve(&network(d, cpus)?, ns, &mva::Options::default()).map_err(|e| e.to_string())?;
    Ok(points
        .iter()
        .map(|p| (p.population, p.throughput, p.response_time))
        .collect())
}

/// Relative error of a prediction, percent.
pub fn error_pct(predicted: f64, measured: f64) -> f64 {
    if measured == 0.0 {
        0.0
    } else {
        100.0 * (predicted - measured) / measured
    }
}

fn mean_abs(v: &[f64]) -> f64 {
    v.iter().map(|e| e.abs()).sum::<f64>() / v.len().max(1) as f64
}

/// Adds the model experiment to the report.
pub fn render(dir: &Path, exp: &ExperimentRecord, out: &mut Rendered) -> anyhow::Result<()> {
    let points = valid(&load_pooled(dir, exp, out)?);
    let mut page = ExperimentPage::new(exp, "Models against measurement (Mughal)");
    page.repeats_note(&points);
    let Some(d) = demands(&points) else {
        page.push(Block::Warning(
            "No server CPU figures (an external target without --server-pid): the service demands, hence the MVA model, cannot be computed.".into(),
        ));
        page.finish(out);
        return Ok(());
    };
    let last_n = points.last().map_or(1, |p| p.x.round().max(1.0) as u32);
    let ns: Vec<u32> = (1..=last_n.max(2)).collect();
    let mut curves = Vec::new();
    for cpus in [1u32, 2, 4] {
        match mva_curve(&d, cpus, &ns) {
            Ok(c) => curves.push((cpus, c)),
            Err(e) => page.push(Block::Warning(format!("MVA with {cpus} CPUs: {e}"))),
        }
    }
    let usl = usl_fit(&points);
    let measured_r: Vec<(f64, f64)> = points.iter().map(|p| (p.x, p.mean_ms)).collect();
    let mut x_series = vec![goodput_series(&points)];
    let mut r_series = vec![Series::line("measured mean", measured_r)];
    for (cpus, c) in &curves {
        // Short: the legend is narrow; the demands are in the reading and the summary.
        let name = if *cpus == 1 {
            format!("MVA, D {:.0}+{:.0} µs", d.cpu * 1e6, d.generator * 1e6)
        } else {
            format!("MVA, {cpus}× server CPUs")
        };
        x_series.push(Series {
            name: name.clone(),
            points: c.iter().map(|&(n, x, _)| (f64::from(n), x)).collect(),
            style: Style::Dashed,
            spread: Vec::new(),
        });
        r_series.push(Series {
            name,
            points: c.iter().map(|&(n, _, r)| (f64::from(n), r * 1e3)).collect(),
            style: Style::Dashed,
            spread: Vec::new(),
        });
    }
    if let Ok(fit) = &usl {
        let name = format!("USL σ={:.2} κ={:.4}", fit.sigma, fit.kappa);
        let curve = |f: &dyn Fn(f64) -> f64| {
            ns.iter()
                .map(|&n| (f64::from(n), f(f64::from(n))))
                .collect()
        };
        x_series.push(Series {
            name: name.clone(),
            points: curve(&|n| fit.throughput_at(n)),
            style: Style::Dashed,
            spread: Vec::new(),
        });
        r_series.push(Series {
            name,
            points: curve(&|n| fit.response_time_at(n) * 1e3),
            style: Style::Dashed,
            spread: Vec::new(),
        });
    }
    // Errors at the measured points.
    let one = curves.iter().find(|(c, _)| *c == 1).map(|(_, c)| c);
    let at = |n: f64| one.and_then(|c| c.iter().find(|p| f64::from(p.0) == n));
    let mut table = Table::new([
        "clients",
        "X measured",
        "X MVA",
        "error %",
        "X USL",
        "error %",
        "R measured ms",
        "R MVA ms",
        "error %",
        "U server CPU",
        "D_cpu µs",
    ]);
    let (mut mva_x_err, mut usl_err, mut mva_r_err) = (Vec::new(), Vec::new(), Vec::new());
    for p in &points {
        let m = at(p.x);
        let u = usl.as_ref().ok().map(|f| f.throughput_at(p.x));
        if let Some(&(_, x, r)) = m {
            mva_x_err.push(error_pct(x, p.rps));
            mva_r_err.push(error_pct(r * 1e3, p.mean_ms));
        }
        if let Some(u) = u {
            usl_err.push(error_pct(u, p.rps));
        }
        table.row([
            format!("{}", p.x),
            format!("{:.0}", p.rps),
            cell(m.map(|m| m.1), 0),
            cell(m.map(|m| error_pct(m.1, p.rps)), 1),
            cell(u, 0),
            cell(u.map(|u| error_pct(u, p.rps)), 1),
            format!("{:.3}", p.mean_ms),
            cell(m.map(|m| m.2 * 1e3), 3),
            cell(m.map(|m| error_pct(m.2 * 1e3, p.mean_ms)), 1),
            cell(p.server_cores, 2),
            cell(p.server_cores.map(|u| u / p.rps * 1e6), 1),
        ]);
    }
    let ceiling = |cpus: f64| 1.0 / (d.cpu / cpus).max(d.generator).max(d.disk);
    // The demand that sets the ceiling names the bottleneck: the sentence cannot say "the
    // server's CPU" and give another resource's rate as the reason.
    let (name, demand) = [
        ("the load generator's core", d.generator),
        ("the disk", d.disk),
    ]
    .into_iter()
    .fold(
        ("the server's CPU", d.cpu),
        |a, b| if b.1 > a.1 { b } else { a },
    );
    let more_cpus = if demand > d.cpu {
        format!(
            "The bottleneck is {name} ({:.1} µs per request): 2× and 4× the server's CPUs would give {:.0} and {:.0} requests/s against {:.0} now, because {name} ({:.0}/s at most) binds before the server's CPU ({:.0}/s per core)",
            demand * 1e6,
            ceiling(2.0),
            ceiling(4.0),
            ceiling(1.0),
            1.0 / demand.max(1e-12),
            1.0 / d.cpu.max(1e-12)
        )
    } else {
        format!(
            "The bottleneck is the server's CPU: 2× and 4× its CPUs raise the ceiling from {:.0} to {:.0} and {:.0} requests/s",
            ceiling(1.0),
            ceiling(2.0),
            ceiling(4.0)
        )
    };
    let reading_x = format!(
        "Exact MVA with the measured demands (server CPU {:.1} µs, load generator {:.1} µs, disk {:.1} µs per request, and a {:.1} µs delay) predicts throughput within {} on average ({}); the USL (λ = {}) {}. {more_cpus}.",
        d.cpu * 1e6,
        d.generator * 1e6,
        d.disk * 1e6,
        d.delay * 1e6,
        pct_brief(mean_abs(&mva_x_err) / 100.0),
        if mva_x_err.is_empty() { "no point to compare".to_string() } else { format!("largest {}", pct_brief(mva_x_err.iter().fold(0.0f64, |a, e| a.max(e.abs())) / 100.0)) },
        usl.as_ref().map_or("-".to_string(), |f| format!("{:.0}/s", f.lambda)),
        match (&usl, super::sweep::not_the_server(&points)) {
            (Ok(_), None) => format!("within {}", pct_brief(mean_abs(&usl_err) / 100.0)),
            // The runs' verdicts say what the curve goes through.
            (Ok(_), Some(others)) => format!(
                "within {}, but it runs through runs the server does not bound ({others}): it describes those limits, not the server's scalability",
                pct_brief(mean_abs(&usl_err) / 100.0)
            ),
            (Err(why), _) => format!("does not fit ({why})"),
        },
    );
    page.chart(
        XyChart {
            title: "Throughput: measured, MVA (1×, 2×, 4× CPUs) and USL".into(),
            x: Axis::linear("clients"),
            y: Axis::linear("requests/s"),
            series: x_series,
        }
        .to_svg(),
        reading_x.clone(),
    );
    page.chart(
        XyChart {
            title: "Response time: measured, MVA (1×, 2×, 4× CPUs) and USL".into(),
            x: Axis::linear("clients"),
            y: Axis::linear("ms"),
            series: r_series,
        }
        .to_svg(),
        format!(
            "MVA predicts the mean response time within {} on average: past the knee it grows by one bottleneck demand per client, as Little's law requires.",
            pct_brief(mean_abs(&mva_r_err) / 100.0)
        ),
    );
    page.table(
        "Prediction errors at each measured point (model − measured) / measured",
        table,
    );
    page.summary(
        format!(
            "model: D_cpu {:.1} µs, D_generator {:.1} µs, D_disk {:.1} µs, delay {:.1} µs per request",
            d.cpu * 1e6,
            d.generator * 1e6,
            d.disk * 1e6,
            d.delay * 1e6,
        ),
        [reading_x.clone()],
    );
    page.entry(&ModelEntry {
        demands_s: ServiceDemands {
            server_cpu: d.cpu,
            generator: d.generator,
            disk: d.disk,
            delay: d.delay,
        },
        mva_throughput_error_pct_mean: mean_abs(&mva_x_err),
        mva_response_time_error_pct_mean: mean_abs(&mva_r_err),
        usl_throughput_error_pct_mean: usl.as_ref().ok().map(|_| mean_abs(&usl_err)),
        ceiling_requests_per_s: Ceilings {
            one: ceiling(1.0),
            two: ceiling(2.0),
            four: ceiling(4.0),
        },
        reading: reading_x,
    })?;
    let x_by_cpus: Vec<(u32, f64)> = curves
        .iter()
        .filter_map(|(cpus, c)| Some((*cpus, c.last()?.1)))
        .collect();
    page.paper(super::paper_panels::model(d.cpu, d.disk, &x_by_cpus));
    page.finish(out);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_single_queue_saturates_at_one_over_its_demand_and_more_cpus_lift_it() {
        let d = Demands {
            cpu: 0.001,
            generator: 0.0002,
            disk: 0.0,
            delay: 0.0005,
        };
        let one = mva_curve(&d, 1, &[1, 50]).unwrap();
        // One client: one cycle of all demands.
        assert!((one[0].1 - 1.0 / 0.0017).abs() < 1e-6, "{one:?}");
        // Many: the CPU's 1000 req/s.
        assert!((one[1].1 - 1000.0).abs() < 1.0, "{one:?}");
        // Two CPUs: 2000/s; four: 4000/s, still short of the generator's 5000/s.
        let two = mva_curve(&d, 2, &[50]).unwrap();
        assert!((two[0].1 - 2000.0).abs() < 5.0, "{two:?}");
        let four = mva_curve(&d, 4, &[200]).unwrap();
        assert!((four[0].1 - 4000.0).abs() < 20.0, "{four:?}");
        assert_eq!(error_pct(110.0, 100.0), 10.0);
    }

    #[test]
    fn demands_are_utilisation_over_throughput() {
        // Server 1 ms and generator 0.2 ms per request at every load.
        let p = |x: f64, rps: f64, u: f64| {
            let mut p = super::super::point::test_point(x, rps, rps * 0.0002, Some(u));
            p.disk_util = Some(0.0);
            p
        };
        let pts = [p(1.0, 500.0, 0.5), p(2.0, 800.0, 0.8), p(4.0, 1000.0, 1.0)];
        let d = demands(&pts).unwrap();
        assert!((d.cpu - 0.001).abs() < 1e-9, "{d:?}");
        // Cycle at N = 1: 2 ms; less 1 ms CPU and 0.2 ms generator (0.1 / 500).
        assert!((d.delay - 0.0008).abs() < 1e-9, "{d:?}");
    }
}
