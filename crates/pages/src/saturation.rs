//! The saturation experiment's page (Chiarini & Couch): the mean response time as clients
//! double, each step's response-time histogram overlaid (linear and log frequency), the
//! knee and why the doubling stopped (with the accept-queue wait growing to it, where the
//! kernel module measured it), and the density map of the two-class run.

use std::path::Path;

use webscope_model::stats::Sorted;
use webscope_report::svg::{Axis, Series, Style, XyChart};
use webscope_report::{Block, Table};

use super::cells::cell;
use super::page::ExperimentPage;
use super::point::{load_points, valid, Point};
use super::rendered::Rendered;
use webscope_lab::results::sweeps::SaturationEntry;
use webscope_lab::saturation::{knee, ratios, stop_reason};
use webscope_record::ExperimentRecord;

/// One request of the two-class run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// When the request completed, seconds since the run started.
    pub end_s: f64,
    /// Its response time, ms.
    pub latency_ms: f64,
    /// Its class, as an index into the run's load classes (in `samples.csv`'s order).
    pub class: usize,
}

/// Reads `samples.csv` (`end_us,latency_us,class`); lines that do not parse are skipped.
pub fn read_samples(text: &str) -> Vec<Sample> {
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let mut f = line.split(',');
            let end: f64 = f.next()?.parse().ok()?;
            let latency: f64 = f.next()?.parse().ok()?;
            let class: usize = f.next()?.parse().ok()?;
            Some(Sample {
                end_s: end / 1e6,
                latency_ms: latency / 1e3,
                class,
            })
        })
        .collect()
}

/// At most `most` samples, evenly spaced: a map of thousands of dots, not millions.
fn thin(samples: Vec<(f64, f64)>, most: usize) -> Vec<(f64, f64)> {
    let step = samples.len().div_ceil(most.max(1)).max(1);
    samples.into_iter().step_by(step).collect()
}

fn density_map(dir: &Path, point: &Point) -> Block {
    let text = match std::fs::read_to_string(dir.join("two-class").join("samples.csv")) {
        Ok(text) => text,
        Err(e) => return Block::Warning(format!("No samples for the density map: {e}")),
    };
    let samples = read_samples(&text);
    let classes: Vec<String> = point
        .run
        .load
        .classes
        .iter()
        .map(|c| c.name.clone())
        .collect();
    let mut series = Vec::new();
    let mut medians = Vec::new();
    for (i, name) in classes.iter().enumerate() {
        let of: Vec<(f64, f64)> = samples
            .iter()
            .filter(|s| s.class == i && s.latency_ms > 0.0)
            .map(|s| (s.end_s, s.latency_ms))
            .collect();
        medians.push((
            name.clone(),
            Sorted::new(of.iter().map(|p| p.1)).median(),
            of.len(),
        ));
        series.push(Series {
            name: name.clone(),
            points: thin(of, 3000),
            style: Style::Dots,
            spread: Vec::new(),
        });
    }
    let mut reading: Vec<String> = medians
        .iter()
        .map(|(name, m, n)| match m {
            Some(m) => format!("{name} requests take {m:.2} ms (median of {n})"),
            // A class with no timed request has no median: it was not 0 ms.
            None => format!("no {name} request was timed"),
        })
        .collect();
    if let [(a, Some(ma), _), (b, Some(mb), _)] = medians.as_slice() {
        if *ma > 0.0 {
            reading.push(format!(
                "{b} takes {:.1}× as long as {a}{}",
                mb / ma,
                if mb / ma < 2.0 {
                    ": the bands overlap, queueing behind each other costs more than the bytes"
                } else {
                    ": the bands separate, the bytes dominate"
                }
            ));
        }
    }
    Block::Chart {
        svg: XyChart {
            title: "Density map: each request's completion time and duration, by class".into(),
            x: Axis::linear("completion time (s since start)"),
            y: Axis::log("response time (ms, log)"),
            series,
        }
        .to_svg(),
        reading: format!("{}.", reading.join("; ")),
    }
}

/// What bounds the knee's run: its verdict, the one place a page's causes come from (it
/// used to re-judge the two CPUs here and could call "latency" a run bound by the machine).
fn bottleneck(point: Option<&Point>) -> String {
    match point {
        Some(p) => format!(
            "what bounds it there is {}: {}",
            p.verdict.bound.label(),
            p.verdict.reading
        ),
        None => "what bounds it there was not judged".into(),
    }
}

/// Adds the saturation experiment to the report.
pub fn render(dir: &Path, exp: &ExperimentRecord, out: &mut Rendered) -> anyhow::Result<()> {
    let points = valid(&load_points(dir, exp, out)?);
    let (mut steps, mut names, mut two_class) = (Vec::new(), Vec::new(), None);
    for p in &points {
        let name = &p.name;
        if name == "two-class" {
            two_class = Some(p);
        } else {
            steps.push(p);
            names.push(name.clone());
        }
    }
    let rule: Vec<(usize, f64, f64)> = steps
        .iter()
        .map(|p| (p.x as usize, p.mean_ms, p.errors))
        .collect();
    let last = rule.last().map_or(0, |s| s.0);
    let why = stop_reason(&rule, last).unwrap_or_else(|| "an interruption".into());
    let reading = match knee(&rule) {
        Some(k) => format!(
            "The mean response time begins to double with the clients after {k} clients: the system is saturated from there (throughput flat, Little's law), and {}. The doubling stopped because of {why}.",
            bottleneck(steps.iter().find(|p| p.x as usize == k).copied())
        ),
        None => format!(
            "The mean response time never doubled as clients doubled: no saturation up to {last} clients. The sweep stopped because of {why}."
        ),
    };
    let reading = reading + &queue_growth(&steps, knee(&rule)).unwrap_or_default();
    let mut page = ExperimentPage::new(
        exp,
        "Saturation, histograms and the density map (Chiarini & Couch)",
    );
    page.chart(
        XyChart {
            title: "Mean response time as clients double".into(),
            x: Axis::log("clients (log)"),
            y: Axis::log("mean response time (ms, log)"),
            series: vec![Series::line(
                "measured mean",
                steps.iter().map(|p| (p.x, p.mean_ms)).collect(),
            )],
        }
        .to_svg(),
        reading.clone(),
    );
    let labelled: Vec<(String, String)> = names
        .iter()
        .zip(&steps)
        .map(|(n, p)| (n.clone(), format!("{} clients", p.x)))
        .collect();
    page.extend(super::charts::histograms(
        dir,
        &labelled,
        "as clients double",
    ));
    if let Some(p) = two_class {
        page.push(density_map(dir, p));
    }
    let growth = ratios(&rule);
    page.table("Per doubling step", table(&steps, &growth));
    page.summary("saturation (doubling clients)", [reading.clone()]);
    page.entry(&SaturationEntry {
        knee_clients: knee(&rule),
        stopped_because: why,
        reading,
    })?;
    let means: Vec<(usize, f64)> = rule.iter().map(|s| (s.0, s.1)).collect();
    page.paper(super::paper_panels::saturation(
        &means,
        stopped_at(&rule, &growth),
    ));
    page.finish(out);
    Ok(())
}

fn table(steps: &[&Point], growth: &[f64]) -> Table {
    // The accept-queue wait only where the kernel module measured it: a lab without it
    // renders as it always did.
    let queue = steps.iter().any(|p| p.queue_wait.is_some());
    let mut header = vec!["clients", "req/s", "mean ms", "× previous", "p99 ms"];
    if queue {
        header.push("accept queue p50/p99 ms");
    }
    header.push("errors");
    let mut table = Table::new(header);
    for (i, p) in steps.iter().enumerate() {
        let mut row = vec![
            format!("{}", p.x),
            format!("{:.0}", p.rps),
            format!("{:.3}", p.mean_ms),
            cell(i.checked_sub(1).and_then(|j| growth.get(j)).copied(), 2),
            format!("{:.2}", p.p99_ms),
        ];
        if queue {
            row.push(super::queue_wait::cell(p.queue_wait.as_ref()));
        }
        row.push(format!("{}", p.errors));
        table.row(row);
    }
    table
}

/// How the accept-queue wait grew as clients doubled, to the knee and past it: where every
/// step has it (the kernel module), else nothing.
fn queue_growth(steps: &[&Point], knee: Option<usize>) -> Option<String> {
    if !steps.iter().all(|p| p.queue_wait.is_some()) {
        return None;
    }
    let p99 = |p: &Point| p.queue_wait.map(|q| q.wait.p99_ms);
    let (first, last) = (steps.first()?, steps.last()?);
    let at = |p: &Point| -> Option<String> {
        Some(format!(
            "{} ms at {} clients",
            super::queue_wait::ms(p99(p)?),
            p.x
        ))
    };
    let knee = match knee.and_then(|k| steps.iter().find(|p| p.x as usize == k)) {
        Some(p) => format!(", {} (the knee)", at(p)?),
        None => String::new(),
    };
    Some(format!(
        " Connections waited in the listen queue (p99, the kernel module) {}{knee}, {}.",
        at(first)?,
        at(last)?
    ))
}

/// Where the doubling stopped: the load from which the next doubling no longer doubled the
/// mean (after it had).
fn stopped_at(rule: &[(usize, f64, f64)], growth: &[f64]) -> Option<usize> {
    let mut doubled = false;
    for (w, r) in rule.windows(2).zip(growth) {
        if *r >= webscope_lab::saturation::DOUBLING {
            doubled = true;
        } else if doubled {
            return Some(w[0].0);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The knee's cause is its run's verdict: a run bound by the machine's CPUs with the
    /// server at 30 % is not "latency, not CPU" (#27).
    #[test]
    fn the_knees_cause_is_its_runs_verdict() {
        let mut p = super::super::point::test_point(8.0, 3600.0, 0.5, Some(0.3));
        p.verdict = webscope_bottleneck::judge(&webscope_bottleneck::Evidence {
            clients: 8.0,
            goodput_rps: 3600.0,
            generator_busy: 0.5,
            server_busy_cores: Some(0.3),
            server_cpus: Some(1.0),
            server_host: Some(webscope_bottleneck::CpuShares {
                busy: 100.0,
                user: 8.0,
                system: 89.0,
                softirq: 3.0,
            }),
            ..Default::default()
        });
        let said = bottleneck(Some(&p));
        assert!(
            said.contains("machine CPU") && !said.contains("latency, not CPU"),
            "{said}"
        );
    }

    /// The saturation page says how the accept-queue wait grew to the knee, and only where
    /// every step has it.
    #[test]
    fn the_queue_wait_is_quoted_at_the_first_step_the_knee_and_the_last() {
        let mut steps: Vec<Point> = [(1.0, 0.2), (2.0, 0.3), (4.0, 2.5), (8.0, 9.0)]
            .iter()
            .map(|&(x, p99)| {
                let mut p = super::super::point::test_point(x, 1000.0, 0.3, Some(0.5));
                p.queue_wait = Some(super::super::queue_wait::QueueWait {
                    port: 80,
                    wait: webscope_monitor::kernel::Latency {
                        count: 10,
                        mean_ms: p99,
                        p50_ms: p99,
                        p90_ms: p99,
                        p99_ms: p99,
                        p999_ms: p99,
                        max_ms: p99,
                    },
                    per_request_ms: p99,
                });
                p
            })
            .collect();
        let refs: Vec<&Point> = steps.iter().collect();
        let said = queue_growth(&refs, Some(4)).expect("a sentence");
        assert!(
            said.contains(
                "0.200 ms at 1 clients, 2.50 ms at 4 clients (the knee), 9 ms at 8 clients"
            ),
            "{said}"
        );
        let t = table(&refs, &[1.0, 1.0, 1.0]);
        assert!(
            t.rows[2].iter().any(|c| c == "2.50/2.50"),
            "{:?}",
            t.rows[2]
        );
        steps[1].queue_wait = None;
        let refs: Vec<&Point> = steps.iter().collect();
        assert!(queue_growth(&refs, Some(4)).is_none());
        steps.iter_mut().for_each(|p| p.queue_wait = None);
        let refs: Vec<&Point> = steps.iter().collect();
        assert_eq!(
            table(&refs, &[1.0, 1.0, 1.0]).rows[0].len(),
            6,
            "no column without it"
        );
    }

    #[test]
    fn samples_parse_and_bad_lines_are_skipped() {
        let s = read_samples("end_us,latency_us,class\n1000000,2500,1\nbad\n2000000,100,0\n");
        assert_eq!(
            s,
            vec![
                Sample {
                    end_s: 1.0,
                    latency_ms: 2.5,
                    class: 1
                },
                Sample {
                    end_s: 2.0,
                    latency_ms: 0.1,
                    class: 0
                }
            ]
        );
        assert_eq!(thin((0..10).map(|i| (i as f64, 0.0)).collect(), 3).len(), 3);
    }
}
