//! `lab --baseline DIR`: the report's comparison with a stored run, point by point of the
//! clients sweep, with `webscope compare`'s tests, and the latency histograms of the largest
//! common point overlaid.

use std::path::Path;

use webscope_report::{Block, Section};

use crate::compare::table::{table, Layout};
use crate::compare::{compare, input, Comparison};

/// The section comparing `dir` (this lab) with `baseline`, and its report.json entry.
pub fn section(dir: &Path, baseline: &Path) -> (Section, serde_json::Value) {
    let heading = format!("Against the baseline ({})", baseline.display());
    let sides = input::side(baseline).and_then(|b| Ok((b, input::side(dir)?)));
    let (base, ours) = match sides {
        Ok(s) => s,
        Err(e) => {
            let block = Block::Warning(format!("No comparison with the baseline: {e:#}."));
            return (
                Section {
                    heading,
                    blocks: vec![block],
                },
                serde_json::Value::Null,
            );
        }
    };
    let mut comparisons: Vec<Comparison> = Vec::new();
    let mut pairs = Vec::new();
    for (scope, runs) in &ours {
        if let Some((_, theirs)) = base.iter().find(|(s, _)| s == scope) {
            comparisons.push(compare(scope, theirs, runs));
            pairs.push((theirs, runs));
        }
    }
    let mut blocks = Vec::new();
    if comparisons.is_empty() {
        blocks.push(Block::Warning(
            "The baseline's clients sweep shares no client count with this one: nothing to compare.".into(),
        ));
        return (Section { heading, blocks }, serde_json::Value::Null);
    }
    let worse: Vec<String> = comparisons
        .iter()
        .flat_map(|c| {
            c.rows
                .iter()
                .filter(|r| r.significant && r.worse)
                .map(move |r| format!("{} at {} ({:+.1} %)", r.metric, c.scope, r.change_pct))
        })
        .collect();
    let undecided = comparisons
        .iter()
        .flat_map(|c| &c.rows)
        .filter(|r| !r.decided)
        .count();
    blocks.push(Block::Text(if worse.is_empty() && undecided > 0 {
        // "No figure is worse" would read as a pass of what no test could judge.
        format!(
            "{undecided} figure{} cannot be decided (the table says why; a test needs 4 or more runs a side: lab --repeat 4), and none of the others is significantly worse than the baseline's.",
            if undecided == 1 { "" } else { "s" }
        )
    } else if worse.is_empty() {
        format!(
            "No figure is significantly worse than the baseline's at the {} client count{} both swept.",
            comparisons.len(),
            if comparisons.len() == 1 { "" } else { "s" }
        )
    } else {
        format!("Significantly worse than the baseline: {}.", worse.join(", "))
    }));
    blocks.push(Block::Table {
        caption: "Per client count and metric (medians over repeats; rank test over repeats, 4 or more a side)".into(),
        table: table(&comparisons, &Layout::LAB_BASELINE),
    });
    // The largest common point's distributions, overlaid as the paper draws them.
    if let (Some(c), Some((theirs, runs))) = (comparisons.last(), pairs.last()) {
        let first = |rs: &[input::Run]| rs.iter().find_map(|r| r.dir.clone());
        if let (Some(a), Some(b)) = (first(theirs), first(runs)) {
            blocks.extend(super::charts::overlaid_histograms(
                &[(a, "baseline".into()), (b, "this lab".into())],
                &format!("baseline and this lab at {}", c.scope),
            ));
        }
    }
    let json = serde_json::json!({
        "baseline": baseline.display().to_string(),
        "comparisons": comparisons,
    });
    (Section { heading, blocks }, json)
}
