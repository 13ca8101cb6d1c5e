//! The degradation experiment's page (Hibino et al., Figures 1-3 and Table 1): each
//! service's throughput against heavy clients, one chart per policy and set; the light
//! service under every policy on one chart; the degradation table (throughput at the most
//! heavy clients relative to none) with the waiting / running split measured inside the
//! middleware; and the targets checked against what was measured.
//!
//! `runs` reads and pools the runs, `rows` makes the table, `targets` judges the targets;
//! this file draws the page.

mod rows;
mod runs;
mod targets;

use std::collections::BTreeMap;
use std::path::Path;
use webscope_report::human::pct_brief;

use webscope_report::svg::{Axis, Series, XyChart};
use webscope_report::Block;

use super::page::ExperimentPage;
use super::rendered::Rendered;
use rows::{degradations, json_rows, table, Degradation};
use runs::{runs_csv, service_names, Run};
use targets::targets;
use webscope_lab::degradation::{POLICIES, SETS};
use webscope_lab::results::degradation::{DegradationEntry, DegradationRow, Target};
use webscope_record::ExperimentRecord;

/// Adds the degradation experiment to the report.
pub fn render(dir: &Path, exp: &ExperimentRecord, out: &mut Rendered) -> anyhow::Result<()> {
    let runs = runs::load(dir, exp)?;
    let mut page = ExperimentPage::new(
        exp,
        "Degradation of light services under heavy load (Hibino et al.)",
    );
    page.push(Block::Text(setup(&runs)));
    let rows = degradations(&runs);
    let checks = targets(&runs, &rows);
    for (sentence, met) in &checks {
        page.push(if *met {
            Block::Text(format!("✓ {sentence}."))
        } else {
            Block::Warning(format!("Target missed: {sentence}."))
        });
    }
    for set in SETS {
        page.extend(light_chart(set.name, &runs));
        for (policy, _) in POLICIES {
            let of: Vec<&Run> = runs
                .iter()
                .filter(|r| r.set == set.name && r.policy == policy)
                .collect();
            if !of.is_empty() {
                page.push(policy_chart(set.name, policy, &of));
            }
        }
    }
    page.table(
        "Degradation: each service's throughput with the most heavy clients relative to none; at the most heavy clients, its 503s, its wait before running and its running time (means, measured by the server's executor: the paper's Table 1), slices per request, its share of the services' CPU, and how many of the server's threads wait in the OS run queue on average (monitor, from schedstat)",
        table(&rows),
    );
    page.csv(runs_csv(&runs));
    page.summary(
        "degradation",
        checks.iter().map(|(sentence, met)| {
            format!("{} {sentence}", if *met { "met:   " } else { "MISSED:" })
        }),
    );
    let mut per_set: BTreeMap<String, Vec<DegradationRow>> = BTreeMap::new();
    for set in SETS {
        let of: Vec<Degradation> = rows.iter().filter(|d| d.set == set.name).cloned().collect();
        per_set.insert(set.name.into(), json_rows(&of));
    }
    page.entry(&DegradationEntry {
        sets: per_set,
        targets: checks
            .iter()
            .map(|(s, met)| Target {
                target: s.clone(),
                met: *met,
            })
            .collect(),
    })?;
    let lost: Vec<(String, f64)> = rows
        .iter()
        .filter(|r| r.set == "set1" && r.service == "light")
        .filter_map(|r| Some((r.policy.clone(), 100.0 - r.kept_pct?)))
        .collect();
    page.paper(super::paper_panels::degradation(&lost));
    page.finish(out);
    Ok(())
}

/// The sentence on the set-up: the services, the client groups, the policies, the repeats.
fn setup(runs: &[Run]) -> String {
    let repeats = runs.iter().map(|r| r.repeats).max().unwrap_or(1);
    format!(
        "Closed-loop client groups on the services of webscope serve (light: fib(25); middle: fib(35); heavy: a DOM built from an XML catalogue and searched 100 times), a fresh server per run pinned to one CPU. Set 1: 30 light clients; set 2: 20 light and 20 middle; heavy clients added 0 … 40. Policies: {}. A refused client waits 1 s (Retry-After) before asking again. {}",
        POLICIES
            .iter()
            .map(|(p, f)| if f.is_empty() { p.to_string() } else { format!("{p} ({})", f.join(" ")) })
            .collect::<Vec<_>>()
            .join(", "),
        if repeats > 1 {
            format!("Each point is the median of {repeats} runs, taken round the whole sweep.")
        } else {
            "Each point is one run: on a small machine, repeat them (--repeat) before trusting a verdict.".into()
        }
    )
}

fn policy_chart(set: &str, policy: &str, runs: &[&Run]) -> Block {
    let series = service_names(runs.iter().copied())
        .iter()
        .map(|name| {
            let points = runs
                .iter()
                .filter_map(|r| Some((r.heavy as f64, r.service(name)?.ok_per_s)))
                .collect();
            Series::line(name, points)
        })
        .collect();
    let light: Vec<f64> = runs
        .iter()
        .filter_map(|r| r.service("light").map(|s| s.ok_per_s))
        .collect();
    let reading = match (light.first(), light.last(), runs.last()) {
        (Some(&a), Some(&b), Some(last)) if a > 0.0 && runs.len() > 1 => format!(
            "Under {policy}, light keeps {} of its throughput as heavy clients grow to {}; heavy completes {:.1} requests/s{}.",
            pct_brief(b / a),
            last.heavy,
            last.service("heavy").map_or(0.0, |s| s.ok_per_s),
            last.service("heavy")
                .filter(|s| s.refused_per_s > 0.0)
                .map_or(String::new(), |s| format!(" and is refused {:.1} times/s", s.refused_per_s))
        ),
        _ => "Too few runs to read a trend.".into(),
    };
    Block::Chart {
        svg: XyChart {
            title: format!("{set} under {policy}: throughput of each service"),
            x: Axis::linear("heavy clients"),
            // Log scale: light does thousands per second, heavy a few.
            y: Axis::log("successful requests/s (log)"),
            series,
        }
        .to_svg(),
        reading,
    }
}

fn light_chart(set: &str, runs: &[Run]) -> Option<Block> {
    let mut series = Vec::new();
    let mut kept = Vec::new();
    for (policy, _) in POLICIES {
        let of: Vec<&Run> = runs
            .iter()
            .filter(|r| r.set == set && r.policy == policy)
            .collect();
        let base = of
            .iter()
            .find(|r| r.heavy == 0)
            .and_then(|r| r.service("light"))
            .map(|s| s.ok_per_s)
            .filter(|b| *b > 0.0)?;
        let points: Vec<(f64, f64)> = of
            .iter()
            .filter_map(|r| Some((r.heavy as f64, 100.0 * r.service("light")?.ok_per_s / base)))
            .collect();
        if let Some(&(_, last)) = points.last() {
            kept.push((policy, last));
        }
        series.push(Series::line(policy, points));
    }
    let best = kept.iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
    let worst = kept.iter().min_by(|a, b| a.1.total_cmp(&b.1))?;
    Some(Block::Chart {
        svg: XyChart {
            title: format!("{set}: the light service under each policy"),
            x: Axis::linear("heavy clients"),
            y: Axis::linear("light throughput, % of heavy = 0"),
            series,
        }
        .to_svg(),
        reading: format!(
            "With the most heavy clients, light keeps {} under {} and {} under {}.",
            pct_brief(best.1 / 100.0),
            best.0,
            pct_brief(worst.1 / 100.0),
            worst.0
        ),
    })
}

#[cfg(test)]
mod tests;
