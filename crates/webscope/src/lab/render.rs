//! From the records on disk to the report: `index.html` (charts and tables), `report.json`
//! and one CSV per table, and the terminal summary. Reads only the files the lab wrote, so
//! `webscope report DIR` gives the same bytes as the lab did.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_json::Value;
use webscope_report::svg::{Axis, BarChart, Series, Style, XyChart};
use webscope_report::{Block, Page, Section, Table};

use super::record::{read_json, ExperimentRecord, LabRecord, RunRecord};

/// One run's key figures, taken from its record.
#[derive(Debug, Clone)]
pub struct Point {
    pub x: f64,
    pub rps: f64,
    pub mbit_s: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub mean_ms: f64,
    pub errors: f64,
    pub generator_busy: f64,
    pub server_ms: Option<f64>,
    pub server_cores: Option<f64>,
    /// Machine CPU shares over the run (user, system, softirq), per cent of all CPUs.
    pub cpu_pct: Option<(f64, f64, f64)>,
    /// Most TIME_WAIT sockets on the server's port during the run.
    pub time_wait: Option<f64>,
    /// Busiest disk's mean utilisation, per cent.
    pub disk_util: Option<f64>,
    pub run: RunRecord,
}

/// A value of the monitor's summary: `groups.<group>.rows.<row>.<column>.<stat>`.
fn os_stat(os: &Value, group: &str, row: &str, column: &str, stat: &str) -> Option<f64> {
    os.get("groups")?
        .get(group)?
        .get("rows")?
        .get(row)?
        .get(column)?
        .get(stat)?
        .as_f64()
}

fn num(v: &Value, path: &[&str]) -> f64 {
    let mut v = v;
    for key in path {
        v = &v[*key];
    }
    v.as_f64().unwrap_or(0.0)
}

impl Point {
    fn of(run: RunRecord) -> Point {
        let l = &run.load;
        Point {
            x: run.x,
            rps: num(l, &["requests_per_s"]),
            mbit_s: num(l, &["bytes_per_s"]) * 8.0 / 1e6,
            p50_ms: num(l, &["latency_us", "p50"]) / 1000.0,
            p90_ms: num(l, &["latency_us", "p90"]) / 1000.0,
            p99_ms: num(l, &["latency_us", "p99"]) / 1000.0,
            mean_ms: num(l, &["latency_us", "mean"]) / 1000.0,
            errors: num(l, &["errors", "total"]),
            generator_busy: num(l, &["generator_busy"]),
            server_ms: run.server.as_ref().map(|s| s.response_us / 1000.0),
            server_cores: run.server.as_ref().map(|s| s.busy_cores),
            cpu_pct: run.os.as_ref().and_then(|os| {
                Some((
                    os_stat(os, "cpu", "all", "user_pct", "mean")?,
                    os_stat(os, "cpu", "all", "system_pct", "mean")?,
                    os_stat(os, "cpu", "all", "softirq_pct", "mean")?,
                ))
            }),
            time_wait: run.os.as_ref().and_then(|os| {
                let port = os.get("ports")?.get(0)?.as_u64()?;
                os_stat(os, "ports", &format!("{port}/local"), "time_wait", "max")
            }),
            disk_util: run.os.as_ref().and_then(|os| {
                let disks = os.get("groups")?.get("disk")?.get("rows")?.as_object()?;
                disks
                    .values()
                    .filter_map(|d| d.get("util_pct")?.get("mean")?.as_f64())
                    .reduce(f64::max)
            }),
            run,
        }
    }
}

/// Loads an experiment's runs, in order.
pub fn load_points(dir: &Path, exp: &ExperimentRecord) -> anyhow::Result<Vec<Point>> {
    exp.runs
        .iter()
        .map(|name| read_json::<RunRecord>(&dir.join(name).join("run.json")).map(Point::of))
        .collect()
}

/// Where throughput stops growing, and what limits it.
#[derive(Debug, Clone, PartialEq)]
pub struct Saturation {
    /// The smallest load at which throughput reached 90 % of its maximum.
    pub knee: f64,
    /// The highest throughput measured.
    pub max_rps: f64,
    /// One sentence for the reader.
    pub reading: String,
}

/// Finds the knee of a throughput sweep (points in increasing x).
pub fn saturation(points: &[Point], server_cores: usize) -> Option<Saturation> {
    let max_rps = points.iter().map(|p| p.rps).fold(0.0, f64::max);
    if points.len() < 2 || max_rps <= 0.0 {
        return None;
    }
    let knee_point = points.iter().find(|p| p.rps >= 0.9 * max_rps)?;
    let last = points.last()?;
    let knee = knee_point.x;
    let flat = knee < last.x;
    let limit = if knee_point.generator_busy > 0.9 {
        "the load generator's core is saturated, so this measures the generator, not the server"
            .to_string()
    } else if knee_point
        .server_cores
        .is_some_and(|c| c >= 0.9 * server_cores as f64)
    {
        "the server's CPU is saturated".to_string()
    } else if let Some(c) = knee_point.server_cores {
        format!(
            "neither side's CPU is saturated (server {:.0} % of its {} core{}): latency, not CPU, bounds throughput",
            100.0 * c / server_cores.max(1) as f64,
            server_cores,
            if server_cores == 1 { "" } else { "s" }
        )
    } else {
        "the server's CPU use is unknown (no PID to watch)".to_string()
    };
    let peak = points
        .iter()
        .max_by(|a, b| a.rps.total_cmp(&b.rps))
        .map_or(knee_point, |p| p);
    let reading = if last.rps < 0.8 * max_rps && last.x > peak.x {
        format!(
            "Throughput peaks at {:.0} requests/s with {} clients and falls to {:.0} at {} clients ({:.0} % lower): more load makes the system slower, not just busier; at the peak, {limit}.",
            max_rps,
            peak.x,
            last.rps,
            last.x,
            100.0 * (1.0 - last.rps / max_rps)
        )
    } else if flat {
        format!(
            "Throughput flattens at {:.0} requests/s from {} clients on: {limit}.",
            max_rps, knee
        )
    } else {
        format!(
            "Throughput still grows at the largest load ({} clients, {:.0} requests/s): no saturation reached.",
            last.x, last.rps
        )
    };
    Some(Saturation {
        knee,
        max_rps,
        reading,
    })
}

/// The USL fit of a sweep (throughput vs clients), or why there is none.
pub fn usl_fit(points: &[Point]) -> Result<webscope_model::usl::Fit, String> {
    let data: Vec<webscope_model::usl::Point> = points
        .iter()
        .filter(|p| p.rps > 0.0)
        .map(|p| webscope_model::usl::Point {
            concurrency: p.x,
            throughput: p.rps,
        })
        .collect();
    webscope_model::usl::fit(&data)
        .map(|s| s.usl)
        .map_err(|e| e.to_string())
}

/// The clients experiment's table.
pub fn clients_table(points: &[Point]) -> Table {
    let mut t = Table::new([
        "clients",
        "conn/s",
        "Mbit/s",
        "p50 ms",
        "p90 ms",
        "p99 ms",
        "server ms",
        "server cores",
        "generator busy",
        "CPU usr/sys/si %",
        "TIME_WAIT",
        "disk %",
        "errors",
    ]);
    for p in points {
        t.row([
            format!("{}", p.x),
            format!("{:.0}", p.rps),
            format!("{:.1}", p.mbit_s),
            format!("{:.2}", p.p50_ms),
            format!("{:.2}", p.p90_ms),
            format!("{:.2}", p.p99_ms),
            p.server_ms.map_or("-".into(), |v| format!("{v:.3}")),
            p.server_cores.map_or("-".into(), |v| format!("{v:.2}")),
            format!("{:.0}%", 100.0 * p.generator_busy),
            p.cpu_pct
                .map_or("-".into(), |(u, s, si)| format!("{u:.0}/{s:.0}/{si:.0}")),
            p.time_wait.map_or("-".into(), |v| format!("{v:.0}")),
            p.disk_util.map_or("-".into(), |v| format!("{v:.0}")),
            format!("{}", p.errors),
        ]);
    }
    t
}

fn clients_section(points: &[Point], server_cores: usize, exp: &ExperimentRecord) -> Section {
    let mut blocks = Vec::new();
    for failure in &exp.failures {
        blocks.push(Block::Warning(format!("A run failed: {failure}")));
    }
    if !exp.complete && exp.failures.is_empty() {
        blocks.push(Block::Warning(
            "The experiment was stopped before its last run: what is shown is what was measured."
                .into(),
        ));
    }
    let sat = saturation(points, server_cores);
    let xs = |f: &dyn Fn(&Point) -> f64| -> Vec<(f64, f64)> {
        points.iter().map(|p| (p.x, f(p))).collect()
    };
    let mut throughput = vec![Series::line("measured", xs(&|p| p.rps))];
    let mut reading = sat
        .as_ref()
        .map_or("Too few runs to judge saturation.".into(), |s| {
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
    blocks.push(Block::Chart {
        svg: XyChart {
            title: "Throughput vs clients".into(),
            x: Axis::linear("clients"),
            y: Axis::linear("connections/s"),
            series: throughput,
        }
        .to_svg(),
        reading,
    });
    blocks.push(Block::Chart {
        svg: XyChart {
            title: "Bandwidth vs clients".into(),
            x: Axis::linear("clients"),
            y: Axis::linear("Mbit/s"),
            series: vec![Series::line("measured", xs(&|p| p.mbit_s))],
        }
        .to_svg(),
        reading: "Bandwidth follows throughput: the mix's mean response size is fixed.".into(),
    });
    // Little's law for a closed loop without think time: N = X R, so R = N / X.
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
    blocks.push(Block::Chart {
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
    });
    if let Some(run) = points
        .iter()
        .rev()
        .find(|p| p.run.server.is_some())
        .map(|p| &p.run)
    {
        if let Some(server) = &run.server {
            let classes: Vec<&super::record::PhaseFigures> = server
                .phases_us
                .iter()
                .filter(|c| c.requests > 0.0)
                .collect();
            blocks.push(Block::Chart {
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
            });
        }
    }
    blocks.push(Block::Table {
        caption: "Per run".into(),
        table: clients_table(points),
    });
    Section {
        heading: "Clients sweep".into(),
        blocks,
    }
}

/// Least-squares line y = a + b x; None with fewer than two distinct x.
pub fn line_fit(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    let n = points.len() as f64;
    if points.len() < 2 {
        return None;
    }
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let b = sxy / sxx;
    Some((my - b * mx, b))
}

/// The server's phase means over all size classes of a run (µs): parse, process, log.
fn phases_overall(run: &RunRecord) -> Option<(f64, f64, f64)> {
    let server = run.server.as_ref()?;
    let n: f64 = server.phases_us.iter().map(|c| c.requests).sum();
    if n <= 0.0 {
        return None;
    }
    let mean = |f: &dyn Fn(&super::record::PhaseFigures) -> f64| {
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

fn filesize_section(points: &[Point], exp: &ExperimentRecord) -> (Section, Table) {
    let mut blocks = Vec::new();
    for failure in &exp.failures {
        blocks.push(Block::Warning(format!("A run failed: {failure}")));
    }
    let xs = |f: &dyn Fn(&Point) -> f64| -> Vec<(f64, f64)> {
        points.iter().map(|p| (p.x, f(p))).collect()
    };
    blocks.push(Block::Chart {
        svg: XyChart {
            title: "Connections per second vs mean file size".into(),
            x: Axis::linear("mean file size (KB)"),
            y: Axis::linear("connections/s"),
            series: vec![Series::line("measured", xs(&|p| p.rps))],
        }
        .to_svg(),
        reading: "Connections per second fall as files grow: each connection carries more bytes."
            .into(),
    });
    blocks.push(Block::Chart {
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
            });
            format!(
                "Response time grows about linearly with size: the line's intercept, {a:.3} ms, is the fixed cost of a connection at this load (the Yates paper found 25 ms on its 1997 hardware), and each KB adds {:.1} µs.",
                b * 1000.0
            )
        }
        None => "Too few runs for a line.".into(),
    };
    blocks.push(Block::Chart {
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
        blocks.push(Block::Chart {
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
            reading: "The server's own work per request: processing grows with the files' size; parsing and logging stay flat.".into(),
        });
    }
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
        let os = p.run.os.as_ref();
        let port = os.and_then(|o| o.get("ports")?.get(0)?.as_u64());
        let state = |s: &str| {
            port.and_then(|port| os_stat(os?, "ports", &format!("{port}/local"), s, "max"))
                .map_or("-".into(), |v| format!("{v:.0}"))
        };
        let ph = phases_overall(&p.run);
        let fmt = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.1}"));
        table.row([
            workload(&p.run),
            format!("{:.1}", p.x),
            format!("{:.0}", p.rps),
            format!("{:.1}", p.mbit_s),
            format!("{:.2}", p.mean_ms),
            format!("{:.2}", p.p99_ms),
            state("time_wait"),
            state("established"),
            fmt(ph.map(|p| p.0)),
            fmt(ph.map(|p| p.1)),
            fmt(ph.map(|p| p.2)),
        ]);
    }
    blocks.push(Block::Table {
        caption: "Per workload (TCP states: the most seen on the server's port during the run)"
            .into(),
        table: table.clone(),
    });
    (
        Section {
            heading: "File size (WebStone A/4 .. A*4)".into(),
            blocks,
        },
        table,
    )
}

/// Renders the report for the lab directory `dir`; returns the path of `index.html` and the
/// terminal summary.
pub fn render(dir: &Path) -> anyhow::Result<(PathBuf, String)> {
    let lab: LabRecord = read_json(&dir.join("lab.json"))
        .with_context(|| format!("{} is not a webscope lab directory", dir.display()))?;
    let server_cores = 1;
    let mut sections = vec![Section {
        heading: "Set-up".into(),
        blocks: {
            let mut b = vec![Block::Text(format!(
                "Target: {}. Machine: {}. Placement: {}. Command: {}.",
                lab.target, lab.machine, lab.placement, lab.command
            ))];
            for w in &lab.warnings {
                b.push(Block::Warning(w.clone()));
            }
            if lab.interrupted {
                b.push(Block::Warning("The lab was interrupted: this report shows what was measured before it stopped.".into()));
            }
            b
        },
    }];
    let mut summary = String::new();
    let mut report_json = serde_json::Map::new();
    for name in &lab.experiments {
        let exp_dir = dir.join(name);
        let exp: ExperimentRecord = read_json(&exp_dir.join("experiment.json"))?;
        let points = load_points(&exp_dir, &exp)?;
        if exp.name == "clients" {
            let table = clients_table(&points);
            std::fs::write(dir.join("clients.csv"), table.to_csv())?;
            summary.push_str(&format!("clients sweep\n{}", table.to_text()));
            if let Some(sat) = saturation(&points, server_cores) {
                summary.push_str(&sat.reading);
                summary.push('\n');
                report_json.insert(
                    "clients".into(),
                    serde_json::json!({
                        "knee_clients": sat.knee,
                        "max_requests_per_s": sat.max_rps,
                        "reading": sat.reading,
                        "usl": usl_fit(&points).ok().map(|f| serde_json::json!({
                            "sigma": f.sigma, "kappa": f.kappa, "lambda": f.lambda,
                            "r_squared": f.r_squared, "n_peak": f.n_peak, "x_peak": f.x_peak,
                        })),
                        "runs": points.iter().map(|p| serde_json::json!({
                            "clients": p.x, "requests_per_s": p.rps, "mbit_s": p.mbit_s,
                            "p50_ms": p.p50_ms, "p99_ms": p.p99_ms, "server_ms": p.server_ms,
                        })).collect::<Vec<_>>(),
                    }),
                );
            }
            sections.push(clients_section(&points, server_cores, &exp));
        }
        if exp.name == "filesize" {
            let (section, table) = filesize_section(&points, &exp);
            std::fs::write(dir.join("filesize.csv"), table.to_csv())?;
            summary.push_str(&format!("filesize (WebStone A)\n{}", table.to_text()));
            if let Some((a, b)) =
                line_fit(&points.iter().map(|p| (p.x, p.mean_ms)).collect::<Vec<_>>())
            {
                summary.push_str(&format!(
                    "fixed cost per connection {a:.3} ms, {:.1} µs per KB\n",
                    b * 1000.0
                ));
                report_json.insert(
                    "filesize".into(),
                    serde_json::json!({ "fixed_cost_ms": a, "per_kb_ms": b }),
                );
            }
            sections.push(section);
        }
    }
    let page = Page {
        title: "webscope lab report".into(),
        subtitle: format!("webscope {} — {}", lab.version, lab.target),
        sections,
    };
    let index = dir.join("index.html");
    std::fs::write(&index, page.to_html())
        .with_context(|| format!("cannot write {}", index.display()))?;
    let text = serde_json::to_string_pretty(&Value::Object(report_json))? + "\n";
    std::fs::write(dir.join("report.json"), text)?;
    Ok((index, summary))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(x: f64, rps: f64, gen: f64, cores: Option<f64>) -> Point {
        Point {
            x,
            rps,
            mbit_s: 0.0,
            p50_ms: 0.0,
            p90_ms: 0.0,
            p99_ms: 0.0,
            mean_ms: 0.0,
            errors: 0.0,
            generator_busy: gen,
            server_ms: None,
            server_cores: cores,
            cpu_pct: None,
            time_wait: None,
            disk_util: None,
            run: RunRecord {
                x,
                load_description: String::new(),
                load: Value::Null,
                server: None,
                os: None,
            },
        }
    }

    #[test]
    fn the_knee_is_where_throughput_reaches_nine_tenths_of_its_peak() {
        let pts: Vec<Point> = [
            (1.0, 1000.0),
            (2.0, 1900.0),
            (5.0, 4200.0),
            (10.0, 4500.0),
            (20.0, 4550.0),
        ]
        .into_iter()
        .map(|(x, r)| point(x, r, 0.3, Some(0.97)))
        .collect();
        let s = saturation(&pts, 1).unwrap();
        assert_eq!(s.knee, 5.0);
        assert!(
            s.reading.contains("from 5 clients") && s.reading.contains("server's CPU is saturated"),
            "{}",
            s.reading
        );
    }

    #[test]
    fn a_fall_after_the_peak_is_said() {
        let pts: Vec<Point> = [(1.0, 1000.0), (2.0, 3000.0), (5.0, 1200.0)]
            .into_iter()
            .map(|(x, r)| point(x, r, 0.3, Some(0.5)))
            .collect();
        let s = saturation(&pts, 1).unwrap();
        assert!(
            s.reading.contains("peaks at 3000") && s.reading.contains("60 % lower"),
            "{}",
            s.reading
        );
    }

    #[test]
    fn growth_to_the_end_is_no_saturation_and_a_busy_generator_is_named() {
        let growing: Vec<Point> = [(1.0, 100.0), (2.0, 200.0), (4.0, 400.0)]
            .into_iter()
            .map(|(x, r)| point(x, r, 0.2, Some(0.2)))
            .collect();
        assert!(saturation(&growing, 1)
            .unwrap()
            .reading
            .contains("no saturation"));
        let gen_bound: Vec<Point> = [(1.0, 100.0), (2.0, 190.0), (4.0, 195.0)]
            .into_iter()
            .map(|(x, r)| point(x, r, 0.99, Some(0.5)))
            .collect();
        assert!(saturation(&gen_bound, 1)
            .unwrap()
            .reading
            .contains("load generator"));
        assert!(saturation(&gen_bound[..1], 1).is_none());
    }
}
