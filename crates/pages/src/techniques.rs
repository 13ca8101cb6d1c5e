//! The techniques experiment's page (Hu et al., Figure 10): the server's CPU time per request
//! and its throughput at each cumulative step, and which technique saved the most.

use std::path::Path;

use webscope_report::Table;

use super::cells::{cell, ratio_cell};
use super::charts::{bars, cpu_bars};
use super::page::ExperimentPage;
use super::point::{load_pooled, Point};
use super::rendered::Rendered;
use webscope_lab::results::sweeps::{TechniqueStep, TechniquesEntry};
use webscope_record::ExperimentRecord;

/// One step's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// The step as the table names it: the run's label.
    pub label: String,
    /// Goodput, requests/s.
    pub rps: f64,
    /// Server CPU time per request, microseconds (None without the server's figures).
    pub cpu_us: Option<f64>,
    /// 99th-percentile latency, ms.
    pub p99_ms: f64,
    /// The server's syscalls per request in the step's traced pass, and the commonest three
    /// ("recvfrom 1.00, writev 1.00, ..."); None when not traced (or why not).
    pub syscalls: Option<f64>,
    /// The commonest three syscalls per request, or why there is no count.
    pub top_syscalls: String,
}

impl Step {
    fn of(point: &Point) -> Step {
        let cpu_us = point.server_cpu_us();
        let traced = point.run.syscalls.as_ref();
        let syscalls = traced
            .filter(|t| t.error.is_none())
            .map(|t| t.per_request.values().sum());
        let top_syscalls = match traced {
            Some(t) if t.error.is_none() => {
                let mut calls: Vec<(&String, &f64)> = t.per_request.iter().collect();
                calls.sort_by(|a, b| b.1.total_cmp(a.1));
                calls
                    .iter()
                    .take(3)
                    .map(|(name, n)| format!("{name} {n:.2}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
            Some(t) => t.error.clone().unwrap_or_default(),
            None => "-".into(),
        };
        Step {
            syscalls,
            top_syscalls,
            label: point.label(),
            rps: point.rps,
            cpu_us,
            p99_ms: point.p99_ms,
        }
    }
}

/// The sentence under the chart: the whole gain and the step that saved the most CPU.
pub fn reading(steps: &[Step]) -> String {
    let cpu: Vec<(usize, f64)> = steps
        .iter()
        .enumerate()
        .filter_map(|(i, s)| Some((i, s.cpu_us?)))
        .collect();
    let (Some(&(_, first)), Some(&(_, last))) = (cpu.first(), cpu.last()) else {
        return "No server CPU figures: the gain of each technique cannot be shown.".into();
    };
    let best = cpu
        .windows(2)
        .map(|w| (w[1].0, w[0].1 - w[1].1))
        .max_by(|a, b| a.1.total_cmp(&b.1));
    let mut text = format!(
        "All techniques together take the server from {first:.1} to {last:.1} CPU-µs per request ({:.2}× the baseline's cost",
        last / first
    );
    if let (Some(a), Some(b)) = (steps.first(), steps.last()) {
        if a.rps > 0.0 {
            text.push_str(&format!(
                ", {:+.0} % throughput",
                100.0 * (b.rps / a.rps - 1.0)
            ));
        }
    }
    text.push(')');
    match best {
        Some((i, saved)) if saved > 0.0 => text.push_str(&format!(
            "; {} saves the most, {saved:.1} µs per request.",
            steps[i].label
        )),
        _ => text.push_str("; no step saves CPU time."),
    }
    text
}

/// The sentence under the throughput chart: how far throughput followed the CPU cost.
pub fn throughput_reading(steps: &[Step]) -> String {
    let (Some(a), Some(b)) = (steps.first(), steps.last()) else {
        return "No steps measured.".into();
    };
    let gain = if a.rps > 0.0 { b.rps / a.rps } else { 0.0 };
    let cheaper = match (a.cpu_us, b.cpu_us) {
        (Some(x), Some(y)) if y > 0.0 => x / y,
        _ => 0.0,
    };
    format!(
        "Throughput goes from {:.0} to {:.0} requests/s ({gain:.2}×) while the cost per request falls {cheaper:.2}×: {}.",
        a.rps,
        b.rps,
        if cheaper > 0.0 && gain < 0.8 * cheaper {
            "the server's core is not the only limit (the load generator's is near saturation)"
        } else {
            "the server's core is the limit, so throughput follows its cost"
        }
    )
}

fn table(steps: &[Step]) -> Table {
    let mut t = Table::new([
        "step",
        "req/s",
        "server CPU µs/req",
        "vs baseline",
        "p99 ms",
        "syscalls/req",
        "commonest syscalls per request",
    ]);
    let base = steps.first().and_then(|s| s.cpu_us);
    for s in steps {
        t.row([
            s.label.clone(),
            format!("{:.0}", s.rps),
            cell(s.cpu_us, 1),
            ratio_cell(s.cpu_us, base),
            format!("{:.2}", s.p99_ms),
            cell(s.syscalls, 2),
            s.top_syscalls.clone(),
        ]);
    }
    t
}

/// Adds the techniques experiment to the report.
pub fn render(dir: &Path, exp: &ExperimentRecord, out: &mut Rendered) -> anyhow::Result<()> {
    let points = load_pooled(dir, exp, out)?;
    let steps: Vec<Step> = points.iter().map(Step::of).collect();
    let mut page = ExperimentPage::new(exp, "Techniques, cumulatively (Hu, Nanda & Yang)");
    page.repeats_note(&points);
    let labels: Vec<String> = steps.iter().map(|s| s.label.clone()).collect();
    let reading = reading(&steps);
    let cpu: Vec<Option<f64>> = steps.iter().map(|s| s.cpu_us).collect();
    page.chart(
        cpu_bars(
            "Server CPU time per request, techniques enabled cumulatively",
            &labels,
            &cpu,
        ),
        reading.clone(),
    );
    page.chart(
        bars(
            "Throughput, techniques enabled cumulatively",
            &labels,
            "requests/s",
            "throughput",
            steps.iter().map(|s| s.rps).collect(),
        ),
        throughput_reading(&steps),
    );
    page.extend(super::charts::kernel_profile(&points, &labels, "step"));
    page.table(
        "Per step (the server pinned to one core; CPU time from /proc; syscalls: strace -c on the server during a short load after the timed run, which is never traced)",
        table(&steps),
    );
    page.summary("techniques (cumulative)", [reading.clone()]);
    page.entry(&TechniquesEntry {
        reading,
        steps: steps
            .iter()
            .map(|s| TechniqueStep {
                step: s.label.clone(),
                requests_per_s: s.rps,
                cpu_us_per_request: s.cpu_us,
                p99_ms: s.p99_ms,
                syscalls_per_request: s.syscalls,
            })
            .collect(),
    })?;
    let ours: Vec<(String, f64)> = steps.iter().map(|s| (s.label.clone(), s.rps)).collect();
    page.paper(super::paper_panels::techniques(&ours));
    page.finish(out);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(label: &str, rps: f64, cpu: Option<f64>) -> Step {
        Step {
            label: label.into(),
            rps,
            cpu_us: cpu,
            p99_ms: 1.0,
            syscalls: None,
            top_syscalls: "-".into(),
        }
    }

    #[test]
    fn the_reading_names_the_step_that_saved_the_most() {
        let steps = [
            step("baseline", 1000.0, Some(40.0)),
            step("+dns-cache", 1500.0, Some(30.0)),
            step("+string-cache", 1600.0, Some(28.0)),
            step("+sendfile", 2000.0, Some(10.0)),
        ];
        let r = reading(&steps);
        assert!(r.contains("from 40.0 to 10.0"), "{r}");
        assert!(r.contains("0.25×") && r.contains("+100 %"), "{r}");
        assert!(r.contains("+sendfile saves the most, 18.0 µs"), "{r}");
        assert!(reading(&[step("baseline", 1.0, None)]).starts_with("No server CPU"));
    }
}
