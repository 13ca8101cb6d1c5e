//! The capacity experiment's page: the search replayed from the probes' files (its sentence,
//! capacity and bracket), latency percentiles against offered rate with the objective's lines
//! and the capacity marked (the "hockey stick"), achieved against offered, every probe in the
//! order of the search with each condition's verdict and what bounds it, the server's CPU per
//! request at capacity, and the operational-law bound 1/D_max beside the measured capacity.
//! Not for running or judging probes (`capacity::probe`).

use std::path::Path;
use webscope_report::human::pct_brief;

use webscope_lab::results::capacity::{
    BeyondTheCpu, CapacityEntry, Condition, GeneratorsNeeded, ProbeCooldown, ProbeRow,
};
use webscope_report::svg::{Axis, Series, Style, XyChart};
use webscope_report::{Block, Table};

use super::page::ExperimentPage;
use super::point::{load_points, Point};
use super::rendered::Rendered;
use generators::Needed;
use law::Law;
use webscope_lab::capacity::experiment::{read, replay, Recorded};
use webscope_lab::capacity::search::{Ending, Rule};
use webscope_lab::objective::Outcome;
use webscope_lab::step::Judged;
use webscope_load::slo::Verdict;
use webscope_record::ExperimentRecord;

mod failed;
pub mod generators;
pub mod knee;
mod law;
mod peak;
pub mod reference;

/// The search's ending as the page says it, for the lab's closing line too.
pub use generators::said_of as ending_sentence;

/// The percentiles drawn, with their keys in the load report.
type Pick = fn(&webscope_load::Latency) -> f64;
const PERCENTILES: [(&str, Pick); 4] = [
    ("p50", |l| l.p50),
    ("p90", |l| l.p90),
    ("p99", |l| l.p99),
    ("p99.9", |l| l.p999),
];

/// Adds the capacity experiment to the report.
pub fn render(dir: &Path, exp: &ExperimentRecord, out: &mut Rendered) -> anyhow::Result<()> {
    let points = load_points(dir, exp, out)?;
    let mut page = ExperimentPage::new(exp, "Capacity at a latency objective");
    if points.is_empty() {
        page.push(Block::Text("No probe was measured.".into()));
        page.finish(out);
        return Ok(());
    }
    let (recorded, probes) = read(dir, &exp.runs)?;
    let ending = replay(recorded.plan(), &probes);
    let sentence = ending.as_ref().map_or_else(
        || "the search was stopped before its end".into(),
        |e| generators::said(e, &points, &probes),
    );
    let capacity = match &ending {
        Some(Ending::Found { capacity, .. }) => Some(*capacity),
        _ => None,
    };
    page.push(Block::Text(format!("{}.", capitalise(&sentence))));
    page.push(Block::Text(plan_sentence(&recorded)));
    page.extend(machine_warning(&probes));
    let machine = reference::speed(&probes);
    page.extend(
        machine
            .as_ref()
            .map(|m| Block::Text(reference::sentence(m))),
    );
    let tipped = knee::tipped(&probes);
    page.extend(knee::sentence(&tipped, knee::Load::Rate).map(Block::Text));
    let peak = peak::of(points.iter().zip(&probes));
    page.extend(peak.as_ref().map(|p| Block::Text(peak::sentence(p))));
    page.extend(
        peak.as_ref()
            .zip(capacity)
            .and_then(|(p, c)| peak::above(p, c))
            .map(Block::Text),
    );
    let needed = ending
        .as_ref()
        .and_then(|e| Needed::of(&points, &probes, e, recorded.growth));
    page.extend(needed.iter().map(|n| Block::Text(n.sentence())));
    let law = Law::of(&points, &probes, capacity);
    page.extend(law.sentences().into_iter().map(Block::Text));
    let marks = markers(ending.as_ref());
    page.push(latency_chart(&points, &recorded, &marks));
    page.push(achieved_chart(&points, &marks));
    page.push(Block::Text(cooldown_sentence(&probes)));
    page.table(
        "Every probe in the order of the search (conditions: each one's verdict; bound by: the lab's verdict on what bounds the probe)",
        table(&points, &probes),
    );
    page.summary(
        "capacity",
        [sentence.clone()].into_iter().chain(law.sentences()),
    );
    let entry = CapacityEntry {
        slo: recorded.slo.to_string(),
        arrivals: recorded.arrivals.clone(),
        precision: recorded.precision,
        repeat: recorded.repeat,
        probe_s: recorded.probe_s,
        sentence,
        ending: ending.as_ref().map(webscope_lab::results::RpsEnding::from),
        capacity_rps: capacity,
        server_cpu_per_request_us: law.cpu_us,
        operational_bound_rps: law.bound,
        capacity_over_bound: law.ratio(),
        generators_needed: needed.as_ref().map(|n| GeneratorsNeeded {
            last_pass_rps: n.rate,
            generator_busy: n.busy,
            generator_us_per_request: n.us_per_request,
            per_generator_rps: n.per_generator,
            next_rate_rps: n.next_rate,
            generators: n.generators,
        }),
        beyond_the_cpu: law.not_cpu.as_ref().map(|n| BeyondTheCpu {
            rate_rps: n.rate,
            utilisation: n.utilisation,
            demand_us: n.demand_us,
            predicted_mean_ms: n.predicted_ms,
            measured_mean_ms: n.measured_ms,
        }),
        machine_reference: machine.as_ref().map(reference::entry),
        tipped: knee::entries(&tipped),
        peak: peak.as_ref().map(|p| peak::entry(p, capacity)),
        probes: probe_rows(&points, &probes),
    };
    page.entry(&entry)?;
    page.finish(out);
    Ok(())
}

/// A warning when failing probes were bound by the machine's CPUs rather than the server's:
/// other work on the machine (or loopback's kernel work) weighs on the figure.
fn machine_warning(probes: &[Judged]) -> Option<Block> {
    let failed: Vec<&Judged> = probes
        .iter()
        .filter(|j| j.outcome == Outcome::Fail)
        .collect();
    let machine = failed
        .iter()
        .filter(|j| j.bound == webscope_bottleneck::Bound::MachineCpu)
        .count();
    (machine > 0).then(|| {
        Block::Warning(format!(
            "{machine} of the {} failing probes were bound by the machine's CPUs, not the server's: whatever else runs on this machine (and loopback's kernel work) weighs on the capacity found; a quieter machine, or the server on a host of its own, may carry more.",
            failed.len()
        ))
    })
}

fn capitalise(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map_or(String::new(), |c| c.to_uppercase().chain(chars).collect())
}

fn plan_sentence(r: &Recorded) -> String {
    format!(
        "Objective: {}, each condition judged on its 95 % interval (a percentile's from the order statistics of the probe's requests, a share's by Wilson): it passes only when all of the interval meets the limit, fails only when none of it does, and a probe whose interval straddles a limit is undecided and taken again, twice as long. Open-loop probes of {} s ({} arrivals) after {} s of warm-up at the probe's rate, longer at rates too low to offer the requests the objective needs in that time ({} for these conditions; at most 60 s). The search starts at {:.0} req/s, grows ×{}, then bisects until the bracket is within {} %; it never moves on one probe: a fail is confirmed by a second {}{}. A probe that failed on a machine other processes disturbed (their share of the server's or the generator's CPU, steal, CPU or I/O pressure past their limits) is disturbed, not failed: the machine is waited for and the probe taken again; three in a row end the search without a capacity. A probe the generator could not offer (its verdict says generator, or more than {} of its requests were never sent while no condition failed) ends the search (unless other processes took its CPU or steal did while it ran: then it is disturbed too): it says nothing of the server. Goodput counts good responses over the requests that ended (those in flight when a probe ends are dropped by the generator, and are not the server's failures).",
        r.slo,
        r.probe_s,
        r.arrivals,
        r.warmup_s,
        webscope_lab::objective::needed_requests(&r.slo),
        r.from,
        r.growth,
        100.0 * r.precision,
        match r.rule() {
            Rule::Range => "at its rate; a lone fail that 2 passes there clear is a stall, and the search goes on above it (the rate is never L: not every probe there passed; once a higher rate passes every probe, a lone miss below it is the machine's stall, not the server's limit, and the ending names it). The search finds the capacity as the range it is: L, reliably up to, the highest rate where every probe met the objective, with no confirmed miss below it (the capacity, which compare and --baseline use, bracketed by the lowest rate above it that missed); then U, the lowest rate above every rate where any probe passed, where every probe failed; between them the server tips, meeting the objective in some probes and not in others; L and U are each confirmed by 3 probes or more that agree",
            Rule::Every => "(or stands after 6 probes with a fail among them: a rate passes only when every probe there passed, so the capacity is a rate the server meets reliably, not one it meets more often than not)",
            Rule::Majority => "(a third when two disagree, the majority deciding)",
            Rule::Settled => "(and a third: a rate is settled only when its probes agree as a server meeting the objective in half its probes would agree at most one time in eight (3 of 3, 4 of 4, 5 of 6); a rate whose 6 probes do not settle it is unsettled, the server meeting the objective there in some probes and not in others, and the bracket spans such rates)",
        },
        if r.rule() == Rule::Range {
            String::new()
        } else {
            format!(
                ", and the bracket's two rates are each confirmed by {} probes or more",
                r.repeat
            )
        },
        pct_brief(webscope_load::not_sent_limit(r.probe_s))
    )
}

/// Points sorted by offered rate, as (x, f).
fn by_rate(points: &[Point], f: impl Fn(&Point) -> f64) -> Vec<(f64, f64)> {
    let mut v: Vec<(f64, f64)> = points.iter().map(|p| (p.x, f(p))).collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    v
}

fn vertical(name: String, x: f64, lo: f64, hi: f64) -> Series {
    Series {
        name,
        points: vec![(x, lo), (x, hi)],
        style: Style::Dashed,
        spread: Vec::new(),
    }
}

fn dashed(name: String, points: Vec<(f64, f64)>) -> Series {
    Series {
        name,
        points,
        style: Style::Dashed,
        spread: Vec::new(),
    }
}

/// Where the charts mark the search's result: the capacity (a range's two edges), or the
/// highest rate that passed before the generator fell behind.
fn markers(ending: Option<&Ending>) -> Vec<(f64, String)> {
    match ending {
        Some(Ending::Found {
            capacity,
            fails_at,
            first_miss: Some(_),
            ..
        }) => vec![
            (*capacity, format!("reliably up to {capacity:.0} req/s")),
            (*fails_at, format!("failing from {fails_at:.0} req/s")),
        ],
        Some(Ending::Found { capacity, .. }) => {
            vec![(*capacity, format!("capacity {capacity:.0} req/s"))]
        }
        Some(Ending::GeneratorBound { above: Some(r), .. }) => {
            vec![(*r, format!("capacity above {r:.0} req/s (generator-bound)"))]
        }
        _ => Vec::new(),
    }
}

/// How the latency chart's reading names its vertical lines: " and the capacity 41800
/// req/s", or a range's two edges.
fn marked(marks: &[(f64, String)]) -> String {
    match marks {
        [] => String::new(),
        [(_, name)] => format!(" and the {name}"),
        [(l, _), (u, _), ..] => format!(
            "; the vertical lines are the range's edges: reliably up to {l:.0} req/s (every probe there met the objective) and failing from {u:.0} req/s (every probe there failed)"
        ),
    }
}

/// Latency percentiles against offered rate, the objective's latency limits, the capacity.
fn latency_chart(points: &[Point], r: &Recorded, marks: &[(f64, String)]) -> Block {
    let mut series: Vec<Series> = PERCENTILES
        .iter()
        .map(|(name, pick)| {
            Series::line(
                *name,
                by_rate(points, |p| {
                    (pick(&p.run.load.total.latency_us) / 1000.0).max(1e-3)
                }),
            )
        })
        .collect();
    let xs: Vec<f64> = points.iter().map(|p| p.x).collect();
    let (lo_x, hi_x) = (
        xs.iter().copied().fold(f64::INFINITY, f64::min),
        xs.iter().copied().fold(0.0, f64::max),
    );
    for c in &r.slo.conditions {
        if let webscope_load::slo::Metric::Latency { .. } = c.metric {
            let ms = c.limit / 1000.0;
            series.push(dashed(format!("SLO {c}"), vec![(lo_x, ms), (hi_x, ms)]));
        }
    }
    let ys: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .collect();
    let lo = ys.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = ys.iter().copied().fold(0.0, f64::max);
    for (x, name) in marks {
        series.push(vertical(name.clone(), *x, lo, hi));
    }
    Block::Chart {
        svg: XyChart {
            title: "Latency percentiles vs offered rate".into(),
            x: Axis::linear("offered req/s"),
            y: Axis::log("ms"),
            series,
        }
        .to_svg(),
        reading: format!(
            "Latency from each request's intended send (open loop, corrected for coordinated omission) at each probe's offered rate; the dashed lines are the objective's limits{}.",
            marked(marks)
        ),
    }
}

/// Achieved (goodput) against offered, with the line where they are equal.
fn achieved_chart(points: &[Point], marks: &[(f64, String)]) -> Block {
    let hi = points.iter().map(|p| p.x.max(p.rps)).fold(0.0, f64::max);
    let mut series = vec![
        Series {
            style: Style::Points,
            ..Series::line("achieved (goodput)", by_rate(points, |p| p.rps))
        },
        dashed("achieved = offered".into(), vec![(0.0, 0.0), (hi, hi)]),
    ];
    for (x, name) in marks {
        series.push(vertical(name.clone(), *x, 0.0, hi));
    }
    Block::Chart {
        svg: XyChart {
            title: "Achieved vs offered rate".into(),
            x: Axis::linear("offered req/s"),
            y: Axis::linear("goodput req/s"),
            series,
        }
        .to_svg(),
        reading: "Below capacity every offered request is answered (the points sit on the dashed line); past it the server answers fewer, or answers them with errors.".into(),
    }
}

fn cooldown_sentence(probes: &[Judged]) -> String {
    let waits: Vec<f64> = probes.iter().map(|j| j.cooldown.waited_s).collect();
    let longest = waits.iter().copied().fold(0.0, f64::max);
    let mean = waits.iter().sum::<f64>() / waits.len().max(1) as f64;
    let unsettled = probes.iter().filter(|j| !j.cooldown.settled).count();
    format!(
        "Cool-down after each probe: the port's open connections (every state but LISTEN and TIME_WAIT) were waited for until back to their count before the probe (at most 5 s), TIME_WAIT only while the clients' TIME_WAIT sockets (each holds an ephemeral port; the server's hold none) and the next probe's connections, where known, would pass {} of the ephemeral port range (at most 30 s: it lasts a minute and holds no server work), then 0.1 s more. Mean wait {mean:.2} s, longest {longest:.2} s; {unsettled} of {} probes did not settle in time.",
        pct_brief(webscope_bottleneck::PORTS_LIMIT),
        probes.len()
    )
}

/// Every probe in search order, with each condition's verdict.
fn table(points: &[Point], probes: &[Judged]) -> Table {
    let conditions: Vec<String> = probes
        .first()
        .map(|j| j.checks.iter().map(|c| c.condition.clone()).collect())
        .unwrap_or_default();
    let mut head: Vec<String> = [
        "probe",
        "offered/s",
        "probe s",
        "achieved/s",
        "p50 ms",
        "p90 ms",
        "p99 ms",
        "p99.9 ms",
        "error %",
        "not sent %",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    head.extend(conditions.iter().cloned());
    head.extend(["verdict".into(), "bound by".into()]);
    let mut t = Table::new(head);
    for (p, j) in points.iter().zip(probes) {
        let l = &p.run.load.total.latency_us;
        let ms = |us: f64| format!("{:.2}", us / 1000.0);
        let mut row = vec![
            j.number.to_string(),
            format!("{:.0}", j.level.value()),
            format!("{:.1}", j.probe_s),
            format!("{:.0}", p.rps),
            ms(l.p50),
            ms(l.p90),
            ms(l.p99),
            ms(l.p999),
            format!("{:.2}", 100.0 * p.health.error_share),
            j.not_sent_share
                .map_or("-".into(), |l| format!("{:.2}", 100.0 * l)),
        ];
        row.extend(j.checks.iter().map(|c| match c.verdict {
            Verdict::Pass => "pass".to_string(),
            Verdict::Fail => "FAIL".to_string(),
            Verdict::Undecided => "?".to_string(),
        }));
        row.push(j.outcome.cell().into());
        row.push(j.bound.label().to_string());
        t.row(row);
    }
    t
}

fn probe_rows(points: &[Point], probes: &[Judged]) -> Vec<ProbeRow> {
    let probe = |(p, j): (&Point, &Judged)| {
        let l = &p.run.load.total.latency_us;
        ProbeRow {
            probe: j.number,
            run: p.name.clone(),
            offered_rps: j.level.value(),
            achieved_rps: p.rps,
            p50_us: l.p50,
            p90_us: l.p90,
            p99_us: l.p99,
            p999_us: l.p999,
            max_us: l.max,
            error_share: p.health.error_share,
            not_sent_share: j.not_sent_share,
            verdict: j.outcome,
            reason: j.reason.clone(),
            conditions: j
                .checks
                .iter()
                .map(|c| Condition {
                    condition: c.condition.clone(),
                    measured: c.measured,
                    verdict: c.verdict,
                })
                .collect(),
            bound: j.bound.label().to_string(),
            bound_reading: j.bound_reading.clone(),
            probe_s: j.probe_s,
            disturbance: j.disturbance.clone(),
            reference_ms: j.reference.as_ref().map(|r| r.ms.clone()),
            server_cpu_per_request_us: p.server_cpu_us(),
            cooldown: ProbeCooldown {
                waited_s: j.cooldown.waited_s,
                settled: j.cooldown.settled,
                time_wait: j.cooldown.time_wait,
                time_wait_clients: j.cooldown.time_wait_clients,
            },
        }
    };
    points.iter().zip(probes).map(probe).collect()
}

#[cfg(test)]
mod tests;
