//! The `ab` experiment's page: one verdict sentence per threshold (B against A, the change
//! with its interval over the rounds as pairs), how the rounds went (their number, order,
//! the disturbed ones taken again, why it stopped), each round's B/A ratio over time, each
//! side's absolute figures drifting (why interleaving was needed), and every round in a
//! table. Read back from the rounds' run folders, so `webscope report` redraws it.

use std::path::Path;

use webscope_report::human;
use webscope_report::svg::{Axis, Series, Style, XyChart};
use webscope_report::{Block, Table};

use super::page::ExperimentPage;
use super::rendered::Rendered;
use crate::compare::table::{self, table, Layout};
use webscope_compare::{self as compare, Comparison, Threshold};
use webscope_lab::ab::{self, Round};
use webscope_lab::results::ab::{AbCapacity, AbEntry, AbPlan, AbReport, AbVerdict};
use webscope_record::{read_json, ExperimentRecord, LabRecord};

/// Adds the A/B experiment to the report.
pub fn render(dir: &Path, exp: &ExperimentRecord, out: &mut Rendered) -> anyhow::Result<()> {
    let mut page = ExperimentPage::new(exp, "Which is faster: B against A, interleaved");
    let settings = settings_of(dir);
    let limits = ab::thresholds(&settings)?;
    // Each part's reason to stop, in the order they ran: the trials', then the searches'.
    let mut stopped = exp.stopped.iter();
    let mut verdicts = Vec::new();
    let (mut kept, mut disturbed, mut comparison, mut searched) = (0, 0, None, None);
    if !limits.trials.is_empty() {
        let trials = trials(dir, exp, &limits.trials, settings.duet, &mut page)?;
        stopped.next();
        (kept, disturbed) = (trials.kept, trials.disturbed);
        comparison = trials.comparison;
        verdicts.extend(trials.verdicts);
    }
    if let Some((written, least)) = &limits.capacity {
        let found =
            super::ab_capacity::render(dir, exp, (written, *least), stopped.next(), &mut page)?;
        verdicts.push(found.verdict.clone());
        searched = Some(found);
    }
    let entry = AbEntry {
        thresholds: verdicts.iter().map(|v| v.threshold.clone()).collect(),
        verdicts,
        rounds: kept,
        disturbed,
        confidence: ab::CONFIDENCE,
        stopped: exp.stopped.first().cloned(),
    };
    page.summary("ab", entry.verdicts.iter().map(|v| v.sentence.clone()));
    page.entry(&AbReport {
        verdict: entry,
        comparison,
        capacity: searched.map(|s| AbCapacity {
            a: s.a,
            b: s.b,
            steps: s.steps,
            check: s.check,
        }),
    })?;
    page.finish(out);
    Ok(())
}

/// The trials' part of the page, and what it judged.
struct Trials {
    verdicts: Vec<AbVerdict>,
    kept: usize,
    disturbed: usize,
    comparison: Option<Comparison>,
}

/// Adds the rounds' part to `page`: each threshold's verdict on the rounds as pairs, how
/// they went, the charts and the tables.
fn trials(
    dir: &Path,
    exp: &ExperimentRecord,
    thresholds: &[Threshold],
    duet: bool,
    page: &mut ExperimentPage,
) -> anyhow::Result<Trials> {
    let judge = dir
        .parent()
        .and_then(|lab| read_json::<LabRecord>(&lab.join("lab.json")).ok())
        .map(|l| l.judge)
        .unwrap_or_default();
    let (rounds, disturbed) = ab::rounds(dir, &exp.runs, &judge)?;
    if rounds.len() < 2 {
        page.push(Block::Text(format!(
            "{} round{} kept ({disturbed} disturbed): too few to compare B with A. Every threshold on the rounds cannot be decided.",
            rounds.len(),
            if rounds.len() == 1 { "" } else { "s" }
        )));
        let entry = AbEntry::undecided(
            thresholds,
            rounds.len(),
            disturbed,
            exp.stopped.first().cloned(),
        );
        return Ok(Trials {
            verdicts: entry.verdicts,
            kept: rounds.len(),
            disturbed,
            comparison: None,
        });
    }
    let (c, rounds) = ab::judge(rounds);
    let verdicts: Vec<AbVerdict> = thresholds.iter().map(|t| verdict(t, &c)).collect();
    for v in &verdicts {
        page.push(Block::Text(format!("{}.", v.sentence)));
    }
    page.push(Block::Text(how_it_went(exp, &rounds, disturbed, duet)));
    page.push(ratio_chart(&rounds));
    page.extend(narrowing_chart(&rounds, thresholds));
    page.push(drift_chart(&rounds));
    page.table(
        format!(
            "B against A over the rounds as pairs ({} intervals: 95 % spent over up to {} looks)",
            human::pct(ab::CONFIDENCE),
            ab::LOOKS
        ),
        table([&c], &Layout::ONE_POINT),
    );
    page.table("Every round kept, in order", rounds_table(&rounds));
    Ok(Trials {
        verdicts,
        kept: rounds.len(),
        disturbed,
        comparison: Some(c),
    })
}

/// What the experiment was asked (its `plan.json`); the defaults for a folder without one.
fn settings_of(dir: &Path) -> ab::Settings {
    let plan = read_json::<AbPlan>(&dir.join("plan.json")).ok();
    ab::Settings {
        duet: plan.as_ref().is_some_and(|p| p.duet),
        thresholds: plan.map_or_else(|| ab::DEFAULT_THRESHOLDS.into(), |p| p.thresholds),
        ..ab::Settings::default()
    }
}

/// One threshold's verdict on the comparison.
fn verdict(t: &Threshold, c: &Comparison) -> AbVerdict {
    let row = c.rows.iter().find(|r| r.metric == t.metric);
    AbVerdict::new(t, t.judge(row), format!("B against A: {}", t.verdict(row)))
}

/// The rounds in words: how many, their order, the disturbed ones, why it stopped.
fn how_it_went(exp: &ExperimentRecord, rounds: &[Round], disturbed: usize, duet: bool) -> String {
    let b_first = rounds.iter().filter(|r| r.b_first).count();
    // A duet's two runs take the same seconds.
    let seconds: f64 = rounds
        .iter()
        .map(|r| r.a.load.duration_s + if duet { 0.0 } else { r.b.load.duration_s })
        .sum();
    let stopped = exp.stopped.first().map_or_else(
        || "it was cut short before a look decided".to_string(),
        |s| s.clone(),
    );
    let how = if duet {
        "A and B at once (duet), each by its own generator, whose start order is random and balanced over pairs of rounds"
    } else {
        "each A and B back to back under the same load, in a random order balanced over pairs of rounds"
    };
    format!(
        "{} rounds kept, {how} (A first in {}, B first in {}); {} disturbed round{} taken again and not used; {} of measuring. Stopped: {stopped}. The rounds are compared as pairs, so a drift of the machine that moves both runs of a round cancels in their ratio.",
        rounds.len(),
        rounds.len() - b_first,
        b_first,
        disturbed,
        if disturbed == 1 { "" } else { "s" },
        human::duration(seconds)
    )
}

/// Each round's change of B against A, per cent, for goodput and server CPU per request.
fn ratio_chart(rounds: &[Round]) -> Block {
    let change = |metric: &str| -> Vec<(f64, f64)> {
        rounds
            .iter()
            .filter_map(|r| {
                let (a, b) = (
                    compare::metric(&r.a, metric)?,
                    compare::metric(&r.b, metric)?,
                );
                (a > 0.0).then(|| (r.number as f64, 100.0 * (b / a - 1.0)))
            })
            .collect()
    };
    let series = ["goodput", "cpu_us", "p99"]
        .into_iter()
        .map(|m| Series::line(m, change(m)))
        .filter(|s| !s.points.is_empty())
        .collect();
    Block::Chart {
        svg: XyChart {
            title: "B against A, round by round".into(),
            x: Axis::linear("round"),
            y: Axis::linear("change of B against A, %"),
            series,
        }
        .to_svg(),
        reading: "Each round's change of B against A: the pairs' spread is what the interval rests on, and it is far narrower than either side's drift below.".into(),
    }
}

/// Each threshold's interval at each look (the first 4, 8, 16 ... rounds, and all of them),
/// against its limit: how the rounds narrowed it until it fell on one side, or did not.
fn narrowing_chart(rounds: &[Round], thresholds: &[Threshold]) -> Option<Block> {
    let confidence = ab::confidence();
    let looks: Vec<usize> = ab::LOOK_AT
        .into_iter()
        .filter(|&n| n < rounds.len())
        .chain([rounds.len()])
        .collect();
    let mut series = Vec::new();
    for t in thresholds {
        let (mut low, mut high) = (Vec::new(), Vec::new());
        for &n in &looks {
            let a: Vec<&compare::input::Run> = rounds[..n].iter().map(|r| &r.a).collect();
            let b: Vec<&compare::input::Run> = rounds[..n].iter().map(|r| &r.b).collect();
            if let Some([lo, hi]) =
                compare::row(&t.metric, &a, &b, true, confidence).and_then(|r| r.interval_pct)
            {
                low.push((n as f64, lo));
                high.push((n as f64, hi));
            }
        }
        if low.is_empty() {
            continue;
        }
        series.push(Series::line(format!("{} interval, low", t.metric), low));
        series.push(Series::line(format!("{} interval, high", t.metric), high));
        series.push(Series {
            name: format!("limit {t}"),
            points: vec![(0.0, t.limit_pct), (rounds.len() as f64, t.limit_pct)],
            style: Style::Dashed,
            spread: Vec::new(),
        });
    }
    (!series.is_empty()).then(|| Block::Chart {
        svg: XyChart {
            title: "Each threshold's interval as the rounds came in".into(),
            x: Axis::linear("rounds"),
            y: Axis::linear("change of B against A, %"),
            series,
        }
        .to_svg(),
        reading: format!(
            "At each look (after {} rounds, and at the end) the {} interval of B against A over the rounds so far, with each threshold's limit dashed: a threshold is decided once its interval lies wholly on one side of its limit.",
            ab::LOOK_AT.map(|n| n.to_string()).join(", "),
            human::pct(ab::CONFIDENCE)
        ),
    })
}

/// Each side's goodput over the rounds: what a single measurement of either would have met.
fn drift_chart(rounds: &[Round]) -> Block {
    let of = |pick: fn(&Round) -> &compare::input::Run| -> Vec<(f64, f64)> {
        rounds
            .iter()
            .map(|r| (r.number as f64, pick(r).health.goodput_rps))
            .collect()
    };
    Block::Chart {
        svg: XyChart {
            title: "Each side's goodput, round by round".into(),
            x: Axis::linear("round"),
            y: Axis::linear("goodput req/s"),
            series: vec![Series::line("A", of(|r| &r.a)), Series::line("B", of(|r| &r.b))],
        }
        .to_svg(),
        reading: "Each server's own figure drifts with the machine; two searches minutes apart would compare the drift, interleaved rounds compare the servers.".into(),
    }
}

/// Every round kept: its order and each side's figures.
fn rounds_table(rounds: &[Round]) -> Table {
    let mut t = Table::new([
        "round",
        "first",
        "A goodput",
        "B goodput",
        "A cpu µs/req",
        "B cpu µs/req",
        "A p99",
        "B p99",
    ]);
    let cpu = |r: &compare::input::Run| r.cpu_us_per_request.map_or("-".into(), human::sig3);
    let p99 = |r: &compare::input::Run| table::value("p99", r.load.total.latency_us.p99);
    for r in rounds {
        t.row([
            r.number.to_string(),
            if r.b_first { "B" } else { "A" }.to_string(),
            human::rate(r.a.health.goodput_rps),
            human::rate(r.b.health.goodput_rps),
            cpu(&r.a),
            cpu(&r.b),
            p99(&r.a),
            p99(&r.b),
        ]);
    }
    t
}
