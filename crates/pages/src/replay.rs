//! The replay experiment's page: per speed-up of the log, its own arrivals beside Poisson
//! arrivals at the same mean rate — offered and achieved rates, latency percentiles, the
//! objective's verdict and what bounds the run — with p99 against offered rate for both, and
//! the sentence the user came for: how far the site's traffic, burstiness included, can be
//! sped up within the objective, and what the burstiness costs. Not for running (`replay`).

use std::path::Path;

use webscope_report::human::{self, rate, sig3};
use webscope_report::svg::{Axis, Series, XyChart};
use webscope_report::{Block, Table};

use super::page::ExperimentPage;
use super::rendered::Rendered;
use webscope_lab::objective::Outcome;
use webscope_lab::replay::{ReplayArrivals, StepVerdict};
use webscope_lab::results::replay::{ReplayEntry, ReplayStep};
use webscope_load::replay::StatusPair;
use webscope_record::{read_json, ExperimentRecord, RunRecord};

/// One run as the page reads it.
struct Step {
    name: String,
    judged: StepVerdict,
    /// Responses the run got.
    answered: u64,
    /// Logged status against the one got, where they differ.
    mismatches: Vec<StatusPair>,
    achieved_rps: f64,
    p50_ms: f64,
    p99_ms: f64,
    p999_ms: f64,
}

/// Adds the replay experiment to the report.
pub fn render(dir: &Path, exp: &ExperimentRecord, out: &mut Rendered) -> anyhow::Result<()> {
    let mut page = ExperimentPage::new(exp, "The site's log replayed, sped up");
    let steps = exp
        .runs
        .iter()
        .map(|name| read_step(&dir.join(name), name))
        .collect::<anyhow::Result<Vec<_>>>()?;
    if steps.is_empty() {
        page.push(Block::Text("No run was measured.".into()));
        page.finish(out);
        return Ok(());
    }
    let sentence = sentence(&steps, exp.stopped.first().map(String::as_str));
    page.push(Block::Text(sentence.clone()));
    page.push(Block::Text(format!(
        "What each run replays: {}. Each window is one second of the run and K seconds of the log at K×, so a run offers the log's mix and mean rate from its whole span, times K, with the log's own burstiness within each window; the busiest window would measure one peak only, and the log's start only its first hours. The windows' places are drawn once, the same at every speed-up, so a longer window holds a shorter one's requests and the offered rate grows with K. The requests of a logged second are spread evenly within it. Beside each run, the same requests in the same order at the same mean rate as a Poisson process. Both are judged on the objective (--slo) as a capacity probe is, latency counted from each request's intended send; a run with too few requests for its percentile is undecided.",
        steps.last().map_or("", |s| s.judged.part.as_str())
    )));
    let chart = XyChart {
        title: "p99 against offered rate: the log's arrivals and Poisson's".into(),
        x: Axis::log("offered rate (req/s)"),
        y: Axis::log("p99 latency (ms)"),
        series: [ReplayArrivals::Logged, ReplayArrivals::Poisson]
            .into_iter()
            .map(|arrivals| {
                Series::line(
                    if arrivals == ReplayArrivals::Logged {
                        "the log's own arrivals"
                    } else {
                        "Poisson arrivals, same rate"
                    },
                    steps
                        .iter()
                        .filter(|s| s.judged.arrivals == arrivals && s.p99_ms > 0.0)
                        .map(|s| (s.judged.offered_rps, s.p99_ms))
                        .collect(),
                )
            })
            .collect(),
    };
    page.chart(
        chart.to_svg(),
        "Where the log's line runs above Poisson's, its bursts make requests wait that evenly spread arrivals would not.",
    );
    page.table(
        "Every run: speed-up, arrivals, rates, latency, the objective's verdict and the bound",
        table(&steps),
    );
    page.table(
        "Status: logged against got, where they differ (a logged status the server gave is the site's traffic, not an error)",
        mismatch_table(&steps),
    );
    page.summary("replay", [sentence.clone()]);
    page.entry(&ReplayEntry {
        sentence,
        stopped: exp.stopped.first().cloned(),
        kept_up_to_speed: kept_up_to(&steps),
        steps: steps.iter().map(step_json).collect(),
    })?;
    page.finish(out);
    Ok(())
}

fn read_step(run_dir: &Path, name: &str) -> anyhow::Result<Step> {
    let judged: StepVerdict = read_json(&run_dir.join("step.json"))?;
    let run: RunRecord = read_json(&run_dir.join("run.json"))?;
    let l = &run.load.total;
    Ok(Step {
        name: name.into(),
        answered: l.requests,
        mismatches: run
            .load
            .replay
            .as_ref()
            .map(|r| r.status_mismatches.clone())
            .unwrap_or_default(),
        achieved_rps: l.requests_per_s,
        p50_ms: l.latency_us.p50 / 1000.0,
        p99_ms: l.latency_us.p99 / 1000.0,
        p999_ms: l.latency_us.p999 / 1000.0,
        judged,
    })
}

/// The largest speed-up at which the log's own arrivals met the objective.
fn kept_up_to(steps: &[Step]) -> Option<f64> {
    steps
        .iter()
        .filter(|s| {
            s.judged.arrivals == ReplayArrivals::Logged && s.judged.outcome == Outcome::Pass
        })
        .map(|s| s.judged.speed)
        .max_by(f64::total_cmp)
}

/// What the experiment found, in one sentence: how far the log could be sped up, and the
/// burstiness's cost at the largest speed-up both arrival processes ran.
fn sentence(steps: &[Step], stopped: Option<&str>) -> String {
    let kept = match kept_up_to(steps) {
        Some(k) => {
            let offered = steps
                .iter()
                .find(|s| s.judged.arrivals == ReplayArrivals::Logged && s.judged.speed == k)
                .map_or(0.0, |s| s.judged.offered_rps);
            format!(
                "The server met the objective with the site's own traffic up to {}× the logged pace ({})",
                sig3(k),
                rate(offered)
            )
        }
        None => "The server did not meet the objective with the site's own traffic even at the logged pace".into(),
    };
    let why = stopped.map_or(String::new(), |s| format!("; {s}"));
    // A run the generator could not offer measured the generator: the cost is read at the
    // last speed-up where both runs were judged on the server.
    let judged =
        |s: &&Step| s.p99_ms > 0.0 && matches!(s.judged.outcome, Outcome::Pass | Outcome::Fail);
    let cost = steps
        .iter()
        .rev()
        .filter(|s| s.judged.arrivals == ReplayArrivals::Logged)
        .filter(judged)
        .find_map(|l| {
            let p = steps.iter().filter(judged).find(|p| {
                p.judged.arrivals == ReplayArrivals::Poisson && p.judged.speed == l.judged.speed
            })?;
            Some((l, p))
        })
        .map_or(String::new(), |(l, p)| {
            format!(
                ". At {}× the log's arrivals gave a p99 of {} ms against {} ms for Poisson arrivals at the same rate ({}×)",
                sig3(l.judged.speed),
                sig3(l.p99_ms),
                sig3(p.p99_ms),
                sig3(l.p99_ms / p.p99_ms)
            )
        });
    format!("{kept}{why}{cost}.")
}

fn table(steps: &[Step]) -> Table {
    let mut t = Table::new([
        "run",
        "speed-up",
        "arrivals",
        "replayed",
        "requests scheduled",
        "answered",
        "offered req/s",
        "achieved req/s",
        "p50 ms",
        "p99 ms",
        "p99.9 ms",
        "verdict",
        "bound by",
    ]);
    for s in steps {
        t.row([
            s.name.clone(),
            format!("{}×", sig3(s.judged.speed)),
            s.judged.arrivals.to_string(),
            s.judged.part.clone(),
            s.judged.requests.to_string(),
            s.answered.to_string(),
            sig3(s.judged.offered_rps),
            sig3(s.achieved_rps),
            sig3(s.p50_ms),
            sig3(s.p99_ms),
            sig3(s.p999_ms),
            s.judged.outcome.cell().to_string(),
            s.judged.bound.clone(),
        ]);
    }
    t
}

/// One row per run and status pair that differs from the log, saying whether a file set
/// could have answered as logged (`load`'s summary lists the others apart by the same rule);
/// one row saying so when none.
fn mismatch_table(steps: &[Step]) -> Table {
    let mut t = Table::new([
        "run",
        "logged",
        "got",
        "responses",
        "of the run's",
        "a file set gives the logged status",
    ]);
    for s in steps {
        for p in &s.mismatches {
            t.row([
                s.name.clone(),
                p.logged.to_string(),
                p.got.to_string(),
                human::count(p.count),
                human::count(s.answered),
                if webscope_workload::like::urls::set_can_give(p.logged) {
                    "yes".to_string()
                } else {
                    "no: the site's server's".to_string()
                },
            ]);
        }
    }
    if steps.iter().all(|s| s.mismatches.is_empty()) {
        t.row([
            "every run".to_string(),
            "as logged".to_string(),
            "as logged".to_string(),
            "0".to_string(),
            human::count(steps.iter().map(|s| s.answered).sum::<u64>()),
            "-".to_string(),
        ]);
    }
    t
}

fn step_json(s: &Step) -> ReplayStep {
    ReplayStep {
        requests: s.judged.requests,
        answered: s.answered,
        part: s.judged.part.clone(),
        status_mismatches: s.mismatches.clone(),
        run: s.name.clone(),
        speed: s.judged.speed,
        arrivals: s.judged.arrivals,
        offered_rps: s.judged.offered_rps,
        achieved_rps: s.achieved_rps,
        p50_ms: s.p50_ms,
        p99_ms: s.p99_ms,
        p999_ms: s.p999_ms,
        verdict: s.judged.outcome,
        reason: s.judged.reason.clone(),
        bound: s.judged.bound.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Outcome::{Generator, Pass};
    use ReplayArrivals::{Logged, Poisson};

    fn step(speed: f64, arrivals: ReplayArrivals, p99_ms: f64, outcome: Outcome) -> Step {
        Step {
            name: format!("{arrivals}-{speed}"),
            judged: StepVerdict {
                speed,
                arrivals,
                offered_rps: 100.0 * speed,
                requests: 500 * speed as u64,
                part: "5 windows".into(),
                outcome,
                reason: String::new(),
                bound: String::new(),
            },
            answered: 500 * speed as u64,
            mismatches: vec![StatusPair {
                logged: 304,
                got: 200,
                count: speed as u64,
            }],
            achieved_rps: 100.0 * speed,
            p50_ms: 1.0,
            p99_ms,
            p999_ms: p99_ms,
        }
    }

    #[test]
    fn the_burstiness_cost_is_read_where_both_runs_measured_the_server() {
        let steps = [
            step(1.0, Logged, 2.0, Pass),
            step(1.0, Poisson, 1.0, Pass),
            step(2.0, Logged, 6.0, Pass),
            step(2.0, Poisson, 2.0, Pass),
            step(4.0, Logged, 300.0, Generator),
            step(4.0, Poisson, 500.0, Generator),
        ];
        let said = sentence(&steps, Some("at 4× the generator could not offer the log"));
        assert!(
            said.contains("up to 2× the logged pace (200 req/s)"),
            "{said}"
        );
        assert!(
            said.contains("At 2× the log's arrivals gave a p99 of 6 ms against 2 ms"),
            "{said}"
        );
        assert!(
            said.contains("for Poisson arrivals at the same rate (3×)"),
            "{said}"
        );
        assert_eq!(kept_up_to(&steps), Some(2.0));
        // Every run has its request count, and its mismatches their rows.
        let t = table(&steps);
        let col = t
            .header
            .iter()
            .position(|h| h == "requests scheduled")
            .unwrap();
        let counts: Vec<&str> = t.rows.iter().map(|r| r[col].as_str()).collect();
        assert_eq!(counts, ["500", "500", "1000", "1000", "2000", "2000"]);
        let mismatches = mismatch_table(&steps);
        assert_eq!(mismatches.rows.len(), steps.len());
        assert!(mismatches
            .rows
            .iter()
            .all(|r| r[1] == "304" && r[2] == "200" && r[5] == "yes"));
    }

    #[test]
    fn rates_and_latencies_read_to_three_significant_figures() {
        // Issue #35: "open loop at 334.4040687947534 req/s".
        let mut logged = step(1.0, Logged, 2.345678, Pass);
        logged.judged.offered_rps = 334.4040687947534;
        logged.achieved_rps = 41_812.7;
        let poisson = step(1.0, Poisson, 1.0, Pass);
        let said = sentence(&[logged, poisson], None);
        assert!(
            said.contains("up to 1× the logged pace (334 req/s)"),
            "{said}"
        );
        assert!(said.contains("a p99 of 2.35 ms against 1 ms"), "{said}");
        assert!(said.contains("(2.35×)"), "{said}");
        let mut logged = step(1.0, Logged, 2.345678, Pass);
        logged.judged.offered_rps = 334.4040687947534;
        logged.achieved_rps = 41_812.7;
        let text = table(&[logged]).to_text();
        assert!(text.contains("334") && text.contains("41 813"), "{text}");
        assert!(
            !text.contains("334.4") && !text.contains("2.3456"),
            "{text}"
        );
    }
}
