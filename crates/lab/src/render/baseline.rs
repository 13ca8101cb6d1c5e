//! `lab --baseline DIR`: the report's comparison with a stored run, point by point of the
//! clients sweep, with `webscope compare`'s tests, and the latency histograms of the largest
//! common point overlaid; and the two capacity searches side by side by their brackets, as
//! `webscope compare` sets them.

use std::path::Path;

use webscope_report::{Block, Section};

use crate::capacity::compare::{sentence, Bracket};
use crate::compare::table::{table, Layout};
use crate::compare::{compare, input, Comparison};

/// The section comparing `dir` (this lab, whose capacity entry is `capacity` when it ran the
/// search) with `baseline`, and its report.json entry.
pub fn section(
    dir: &Path,
    baseline: &Path,
    capacity: Option<&serde_json::Value>,
) -> (Section, serde_json::Value) {
    let heading = format!("Against the baseline ({})", baseline.display());
    let (capacity_blocks, capacity_json) = capacities(baseline, capacity);
    let (mut section, mut json) = sweep(dir, baseline, heading);
    if !capacity_blocks.is_empty() {
        if json.is_null() {
            // No clients sweep on both sides (a lab of the capacity search alone): its
            // "nothing to compare" would only hide the comparison there is.
            section.blocks.clear();
            json = serde_json::json!({"baseline": baseline.display().to_string()});
        }
        section.blocks.splice(0..0, capacity_blocks);
        json["capacity"] = capacity_json;
    }
    (section, json)
}

/// The capacity searches side by side, when both labs ran one.
fn capacities(
    baseline: &Path,
    ours: Option<&serde_json::Value>,
) -> (Vec<Block>, serde_json::Value) {
    let Some(ours) = ours else {
        return (Vec::new(), serde_json::Value::Null);
    };
    let theirs = std::fs::read(baseline.join("report.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .map(|r| r["capacity"].clone())
        .filter(|c| !c.is_null());
    let Some(theirs) = theirs else {
        let why = "The baseline ran no capacity search: this lab's capacity has nothing to be compared with.";
        return (vec![Block::Warning(why.into())], serde_json::Value::Null);
    };
    match (Bracket::of(&theirs), Bracket::of(ours)) {
        (Some(base), Some(cand)) => {
            let said = sentence(&base, &cand);
            let json = serde_json::json!({
                "sentence": said,
                "baseline": {"low_rps": base.low, "high_rps": finite(base.high), "capacity_rps": base.capacity},
                "this_lab": {"low_rps": cand.low, "high_rps": finite(cand.high), "capacity_rps": cand.capacity},
                "overlap": base.overlaps(&cand),
            });
            (vec![Block::Text(format!("Capacity: {said}."))], json)
        }
        _ => (
            vec![Block::Warning(
                "Capacity: one of the two searches ended without a bracket (a probe that could not be judged, or a search cut short): nothing to compare.".into(),
            )],
            serde_json::Value::Null,
        ),
    }
}

/// JSON has no infinity: an open top is null.
fn finite(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

/// The clients sweep's comparison.
fn sweep(dir: &Path, baseline: &Path, heading: String) -> (Section, serde_json::Value) {
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
