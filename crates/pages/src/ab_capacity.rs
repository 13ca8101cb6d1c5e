//! The capacity part of the `ab` page: the verdict on `capacity>-5%` from the two searches
//! in lockstep, each side's range in the capacity page's words, how the steps went, each
//! side's probed rates step by step (passes and fails apart), and every step in a table.
//! Both searches are replayed from their probes' `probe.json` files by the plan in the
//! experiment's `capacity.json`, as the capacity page replays one; the check of a crossing
//! (`webscope_lab::ab::check`) from its probes' files beside them.

use std::path::Path;

use webscope_report::human;
use webscope_report::svg::{Axis, Series, Style, XyChart};
use webscope_report::{Block, Table};

use super::page::ExperimentPage;
use webscope_lab::ab::capacity::{verdict, SideProbe};
use webscope_lab::ab::check::{self, Rates};
use webscope_lab::ab::Side;
use webscope_lab::capacity::experiment::{replay, Recorded};
use webscope_lab::capacity::search::Ending;
use webscope_lab::objective::Outcome;
use webscope_lab::results::ab::AbVerdict;
use webscope_lab::results::ab::Tally;
use webscope_lab::results::RpsEnding;
use webscope_lab::step::Judged;
use webscope_record::{read_json, ExperimentRecord};

/// One step: each side's probe in it, and which side ran first.
struct Step {
    a: Option<Judged>,
    b: Option<Judged>,
    b_first: bool,
}

/// What the searches found: the threshold's verdict, and report.json's `ab.capacity`
/// (`webscope_lab::results::ab::AbCapacity`).
#[derive(Debug, Clone)]
pub struct Searched {
    /// The threshold's verdict.
    pub verdict: AbVerdict,
    /// Each side's ending, as a capacity search's report.json keeps it (None: cut before
    /// its end).
    pub a: Option<RpsEnding>,
    /// Side B's ending, likewise.
    pub b: Option<RpsEnding>,
    /// Steps the searches took in lockstep (each probes both sides).
    pub steps: usize,
    /// The check of a crossing, when one ran.
    pub check: Option<Tally>,
}

/// Adds the searches' part to `page`; what they found and their verdict on the threshold
/// `written` (the least change `least`). `stopped`: why the searches stopped, when they did
/// by themselves.
pub fn render(
    dir: &Path,
    exp: &ExperimentRecord,
    (written, least): (&str, f64),
    stopped: Option<&String>,
    page: &mut ExperimentPage,
) -> anyhow::Result<Searched> {
    let steps = steps(dir, exp)?;
    let recorded = read_json::<Recorded>(&dir.join("capacity.json")).ok();
    let ending = |side: Side| -> Option<Ending> {
        let probes: Vec<Judged> = steps
            .iter()
            .filter_map(|s| match side {
                Side::A => s.a.clone(),
                Side::B => s.b.clone(),
            })
            .collect();
        replay(recorded.as_ref()?.plan(), &probes)
    };
    let (a, b) = (ending(Side::A), ending(Side::B));
    let brackets = verdict(written, least, a.as_ref(), b.as_ref(), steps.len());
    let pairs = check_pairs(dir, exp)?;
    let rates = a.as_ref().and_then(|a| Rates::of(a, least));
    let said = check::judge(brackets, rates, &pairs);
    page.push(Block::Text(format!("{}.", said.sentence)));
    for (side, e) in [("A", &a), ("B", &b)] {
        page.push(Block::Text(match e {
            Some(e) => format!("{side}'s search: {}.", e.sentence()),
            None => format!("{side}'s search was cut before its end."),
        }));
    }
    page.push(Block::Text(how_it_went(&steps, stopped)));
    if !steps.is_empty() {
        page.push(rates_chart(&steps));
        page.table(
            "Every step of the two searches, in order",
            steps_table(&steps),
        );
    }
    if !pairs.is_empty() {
        page.table(
            "The crossing checked: A at its lower edge and B at the least it may carry, pair by pair",
            check_table(&pairs, rates),
        );
    }
    Ok(Searched {
        verdict: said,
        a: a.as_ref().map(RpsEnding::from),
        b: b.as_ref().map(RpsEnding::from),
        steps: steps.len(),
        check: (!pairs.is_empty()).then(|| Tally::of(&pairs)),
    })
}

/// The check's pairs, each (A's outcome, B's), in the order they ran; a pair cut in half
/// (Ctrl-C) is left out.
fn check_pairs(dir: &Path, exp: &ExperimentRecord) -> anyhow::Result<Vec<(Outcome, Outcome)>> {
    let mut by_pair: std::collections::BTreeMap<usize, [Option<Outcome>; 2]> = Default::default();
    for name in &exp.runs {
        if let Some((side, pair)) = SideProbe::check_of(name) {
            let judged = read_json::<Judged>(&dir.join(name).join("probe.json"))?;
            by_pair.entry(pair).or_default()[usize::from(side == Side::B)] = Some(judged.outcome);
        }
    }
    Ok(by_pair
        .into_values()
        .filter_map(|[a, b]| Some((a?, b?)))
        .collect())
}

/// The check's pairs: each side's rate and verdict.
fn check_table(pairs: &[(Outcome, Outcome)], rates: Option<Rates>) -> Table {
    let mut t = Table::new(["pair", "A rate", "A", "B rate", "B"]);
    let rate = |side| rates.map_or("-".into(), |r: Rates| human::rate(r.of_side(side)));
    for (i, (a, b)) in pairs.iter().enumerate() {
        t.row([
            (i + 1).to_string(),
            rate(Side::A),
            a.cell().to_string(),
            rate(Side::B),
            b.cell().to_string(),
        ]);
    }
    t
}

/// The probes of both searches, grouped into their steps. A step's probes ran back to
/// back, so they stand next to each other in the run list: a step is a probe and the next
/// one when it is the other side's (one side's probe alone once the other search ended).
fn steps(dir: &Path, exp: &ExperimentRecord) -> anyhow::Result<Vec<Step>> {
    let mut probes = Vec::new();
    for name in &exp.runs {
        if let Some(side) = SideProbe::side_of(name) {
            probes.push((
                side,
                read_json::<Judged>(&dir.join(name).join("probe.json"))?,
            ));
        }
    }
    let mut steps = Vec::new();
    let mut it = probes.into_iter().peekable();
    while let Some((side, first)) = it.next() {
        let second = it.next_if(|(s, _)| *s != side).map(|(_, j)| j);
        let (a, b) = match side {
            Side::A => (Some(first), second),
            Side::B => (second, Some(first)),
        };
        steps.push(Step {
            b_first: side == Side::B && a.is_some(),
            a,
            b,
        });
    }
    Ok(steps)
}

/// The steps in words: how many, their order, the probes' time, why they stopped.
fn how_it_went(steps: &[Step], stopped: Option<&String>) -> String {
    let both = steps.iter().filter(|s| s.a.is_some() && s.b.is_some());
    let (paired, b_first) = both.fold((0, 0), |(n, b), s| (n + 1, b + usize::from(s.b_first)));
    let seconds: f64 = steps
        .iter()
        .flat_map(|s| [&s.a, &s.b])
        .flatten()
        .map(|j| j.probe_s + j.warmup_s)
        .sum();
    format!(
        "{} steps: in {paired} both searches probed their next rate back to back, in a random order balanced over pairs of steps (A first in {}, B first in {b_first}); in the rest one search had ended. {} of probing. Stopped: {}. Both searches ran in the same minutes, so a drift of the machine meets both alike.",
        steps.len(),
        paired - b_first,
        human::duration(seconds),
        stopped.map_or("cut short before both searches ended", |s| s.as_str())
    )
}

/// Each side's probed rate at each step, passes and the rest apart.
fn rates_chart(steps: &[Step]) -> Block {
    let mut series = Vec::new();
    for (side, pick) in [
        (
            "A",
            (|s: &Step| s.a.as_ref()) as fn(&Step) -> Option<&Judged>,
        ),
        ("B", |s: &Step| s.b.as_ref()),
    ] {
        for (what, passed) in [("met the objective", true), ("did not", false)] {
            let points: Vec<(f64, f64)> = steps
                .iter()
                .enumerate()
                .filter_map(|(i, s)| pick(s).map(|j| (i as f64 + 1.0, j)))
                .filter(|(_, j)| (j.outcome == Outcome::Pass) == passed)
                .map(|(x, j)| (x, j.level.value()))
                .collect();
            if !points.is_empty() {
                series.push(Series {
                    name: format!("{side}: {what}"),
                    points,
                    style: Style::Points,
                    spread: Vec::new(),
                });
            }
        }
    }
    Block::Chart {
        svg: XyChart {
            title: "Each search's probes, step by step".into(),
            x: Axis::linear("step"),
            y: Axis::linear("offered rate, req/s"),
            series,
        }
        .to_svg(),
        reading: "Each step probed A's and B's next rate back to back: where B's misses begin below A's, B carries less at the objective.".into(),
    }
}

/// Every step: its order and each side's rate and verdict.
fn steps_table(steps: &[Step]) -> Table {
    let mut t = Table::new(["step", "first", "A rate", "A", "B rate", "B"]);
    let rate = |j: &Option<Judged>| {
        j.as_ref()
            .map_or("-".into(), |j| human::rate(j.level.value()))
    };
    let cell = |j: &Option<Judged>| j.as_ref().map_or("-", |j| j.outcome.cell());
    for (i, s) in steps.iter().enumerate() {
        let first = match (&s.a, &s.b) {
            (Some(_), Some(_)) if s.b_first => "B",
            (Some(_), Some(_)) => "A",
            _ => "-",
        };
        t.row([
            (i + 1).to_string(),
            first.to_string(),
            rate(&s.a),
            cell(&s.a).to_string(),
            rate(&s.b),
            cell(&s.b).to_string(),
        ]);
    }
    t
}
