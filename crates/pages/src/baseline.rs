//! `lab --baseline DIR`: the report's comparison with a stored run, point by point of the
//! clients sweep, with `webscope compare`'s tests, and the latency histograms of the largest
//! common point overlaid; and the two capacity searches (and the two users searches) side by
//! side by their brackets, as `webscope compare` sets them.

use std::path::Path;

use webscope_report::{Block, Section};

use crate::compare::table::{table, Layout};
use webscope_compare::{compare, input, Comparison};
use webscope_lab::capacity::compare::{sentence_of, Bracket, Searched};
use webscope_lab::results::report::{BaselineEntry, BaselineSearch, RpsSide, UsersSide};
use webscope_lab::results::{search_in, Search, Searches};

/// The section comparing `dir` (this lab, whose report.json entries so far are `ours`: its
/// `capacity` and `users` searches when it ran them) with `baseline`, and its report.json
/// entry.
pub fn section(
    dir: &Path,
    baseline: &Path,
    ours: &serde_json::Value,
) -> (Section, Option<BaselineEntry>) {
    let heading = format!("Against the baseline ({})", baseline.display());
    let (mut section, mut json) = sweep(dir, baseline, heading);
    let mut first = true;
    for what in Searched::ALL {
        let (blocks, compared) = capacities(baseline, ours.get(what.name), what);
        if blocks.is_empty() {
            continue;
        }
        let entry = json.get_or_insert_with(|| {
            // No clients sweep on both sides (a lab of the searches alone): its "nothing to
            // compare" would only hide the comparison there is.
            section.blocks.clear();
            BaselineEntry {
                baseline: baseline.display().to_string(),
                comparisons: None,
                capacity: None,
                users: None,
            }
        });
        if what == Searched::USERS {
            entry.users = Some(compared.map(|c| c.entry(|b| UsersSide::from(b))));
        } else {
            entry.capacity = Some(compared.map(|c| c.entry(|b| RpsSide::from(b))));
        }
        let at = if first { 0 } else { 1 };
        section.blocks.splice(at..at, blocks);
        first = false;
    }
    (section, json)
}

/// Two searches' brackets, compared.
struct Compared {
    sentence: String,
    base: Bracket,
    cand: Bracket,
}

impl Compared {
    /// As report.json keeps it, each bracket in its unit's keys.
    fn entry<S>(self, side: impl Fn(&Bracket) -> S) -> BaselineSearch<S> {
        BaselineSearch {
            sentence: self.sentence,
            baseline: side(&self.base),
            this_lab: side(&self.cand),
            overlap: self.base.overlaps(&self.cand),
        }
    }
}

/// The two labs' searches of `what` side by side, when this lab ran one.
fn capacities(
    baseline: &Path,
    ours: Option<&serde_json::Value>,
    what: Searched,
) -> (Vec<Block>, Option<Compared>) {
    let Some(ours) = ours else {
        return (Vec::new(), None);
    };
    let theirs = match Searches::of_lab(baseline) {
        Ok(searches) => searches.get(what),
        Err(e) => {
            let why = format!("The baseline's {} search cannot be read: {e:#}.", what.name);
            return (vec![Block::Warning(why)], None);
        }
    };
    let name = what.name;
    if theirs == Search::None {
        let why = format!(
            "The baseline ran no {name} search: this lab's has nothing to be compared with."
        );
        return (vec![Block::Warning(why)], None);
    }
    match (theirs, search_in(ours, what)) {
        (Search::Bracket(base), Search::Bracket(cand)) => {
            let said = sentence_of(&base, &cand, what);
            let mut text = said.clone();
            if let Some(first) = text.get_mut(0..1) {
                first.make_ascii_uppercase();
            }
            let compared = Compared {
                sentence: said,
                base,
                cand,
            };
            (vec![Block::Text(format!("{text}."))], Some(compared))
        }
        _ => (
            vec![Block::Warning(format!(
                "The {name} searches: one of the two ended without a bracket (a probe that could not be judged, or a search cut short): nothing to compare."
            ))],
            None,
        ),
    }
}

/// The clients sweep's comparison.
fn sweep(dir: &Path, baseline: &Path, heading: String) -> (Section, Option<BaselineEntry>) {
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
                None,
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
        return (Section { heading, blocks }, None);
    }
    let worse: Vec<String> = comparisons
        .iter()
        .flat_map(|c| {
            c.rows
                .iter()
                .filter(|r| r.significant && r.worse)
                .map(move |r| {
                    format!(
                        "{} at {} ({})",
                        r.metric,
                        c.scope,
                        webscope_report::human::change(r.change_pct / 100.0)
                    )
                })
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
            "{undecided} figure{} cannot be decided (the table says why; an interval needs 2 or more runs a side, and 4 or more make one narrow enough to decide: lab --repeat 4), and none of the others is worse than the baseline's beyond its interval.",
            if undecided == 1 { "" } else { "s" }
        )
    } else if worse.is_empty() {
        format!(
            "No figure is worse than the baseline's beyond its interval at the {} client count{} both swept.",
            comparisons.len(),
            if comparisons.len() == 1 { "" } else { "s" }
        )
    } else {
        format!(
            "Worse than the baseline, the whole 95 % interval of the change: {}.",
            worse.join(", ")
        )
    }));
    blocks.push(Block::Table {
        caption: "Per client count and metric (geometric means over repeats; the change with its 95 % interval, pair by pair where the runs were interleaved)".into(),
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
    let json = BaselineEntry {
        baseline: baseline.display().to_string(),
        comparisons: Some(comparisons),
        capacity: None,
        users: None,
    };
    (Section { heading, blocks }, Some(json))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_baseline_sets_both_searches_side_by_side_each_in_its_unit() {
        let tmp = tempfile::tempdir().unwrap();
        let (dir, baseline) = (tmp.path().join("now"), tmp.path().join("before"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::create_dir_all(&baseline).unwrap();
        let entry = |c: f64, f: f64, u: &str| {
            serde_json::json!({"ending": {
                "kind": "found", format!("capacity_{u}"): c, format!("fails_at_{u}"): f,
            }})
        };
        let before = serde_json::json!({
            "capacity": entry(1000.0, 1050.0, "rps"),
            "users": entry(120.0, 128.0, "users"),
        });
        std::fs::write(baseline.join("report.json"), before.to_string()).unwrap();
        let ours = serde_json::json!({
            "capacity": entry(1010.0, 1060.0, "rps"),
            "users": entry(96.0, 104.0, "users"),
        });
        let (section, json) = section(&dir, &baseline, &ours);
        let json = serde_json::to_value(json).unwrap();
        assert_eq!(
            json["users"]["sentence"],
            "users 120 → 96 users (−20.0 %; the brackets allow −25.0 .. −13.3 %)"
        );
        assert_eq!(json["users"]["baseline"]["capacity_users"], 120.0);
        assert_eq!(json["capacity"]["overlap"], true);
        let texts: Vec<String> = section
            .blocks
            .iter()
            .filter_map(|b| match b {
                Block::Text(t) => Some(t.clone()),
                _ => None,
            })
            .collect();
        assert!(
            texts
                .iter()
                .any(|t| t.starts_with("Capacity 1000 → 1010 req/s")),
            "{texts:?}"
        );
        assert!(
            texts.iter().any(|t| t.starts_with("Users 120 → 96 users")),
            "{texts:?}"
        );
    }
}
