//! The users experiment's page: the capacity in users at the objective, MVA's prediction
//! beside it and where the two part, the response time law checked on every step, the page
//! load against N measured and modelled, and every step's figures and verdict. Not for
//! running (`users`).

use std::path::Path;

use webscope_load::slo::Slo;
use webscope_report::human::sig3;
use webscope_report::svg::{Axis, Series, XyChart};
use webscope_report::{Block, Table};

use super::capacity::knee;
use super::page::ExperimentPage;
use super::rendered::Rendered;
use webscope_lab::capacity::search::Plan;
use webscope_lab::results::handshakes::{Handshakes, HEADINGS};
use webscope_lab::users::model::{ending_sentence, predict, Prediction};
use webscope_lab::users::step::StepJudged;
use webscope_lab::users::Recorded;
use webscope_record::ExperimentRecord;

/// Adds the users experiment to the report.
pub fn render(dir: &Path, exp: &ExperimentRecord, out: &mut Rendered) -> anyhow::Result<()> {
    let mut page = ExperimentPage::new(
        exp,
        "Users: how many the server carries within the objective",
    );
    let steps = exp
        .runs
        .iter()
        .map(|name| StepJudged::read(&dir.join(name).join("step.json")))
        .collect::<anyhow::Result<Vec<_>>>()?;
    if steps.is_empty() {
        page.push(Block::Text("No step was measured.".into()));
        page.finish(out);
        return Ok(());
    }
    let recorded = Recorded::read(dir)?;
    let slo_text = recorded.slo.clone();
    let slo = Slo::parse(&slo_text).ok();
    let ending = replay(recorded.plan(), &steps);
    let measured = ending.as_ref().map_or_else(
        || "the search was cut before its end".to_string(),
        |e| ending_sentence(e, &recorded.thinking),
    );
    let figures: Vec<_> = steps.iter().map(|s| s.figures.clone()).collect();
    let most = figures.iter().map(|f| f.users).max().unwrap_or(1) as u32 * 2;
    let prediction = slo.as_ref().and_then(|slo| predict(&figures, slo, most));
    let found = match &ending {
        Some(webscope_lab::capacity::search::Ending::Found { capacity, .. }) => Some(*capacity),
        _ => None,
    };
    let sentence = format!(
        "Measured: {measured}. {}",
        prediction.as_ref().map_or(
            "MVA: no prediction (the server's CPU was not measured, or the objective has no page percentile).".to_string(),
            |p| model_sentence(p, &recorded.thinking, found)
        )
    );
    page.push(Block::Text(sentence.clone()));
    page.push(Block::Text(format!(
        "The users' sessions: {}. Each step runs N users, closed loop: a user requests a page, then its objects over up to 6 connections, thinks, and goes on; at a session's end it takes another. The objective ({slo_text}) is judged on the step's page loads (from the page's request to its last object's answer) and requests, with their 95 % intervals, as a capacity probe is; the search grows N, bisects, and confirms each boundary both ways. The law column is R = N/X − Z with the think time the users kept: where it differs from the measured mean page load, users were not all busy or thinking for the whole step (the ramp-up, the step's end). MVA takes the server's CPU per page view D (how it was had is said above), the mean of the think times kept as Z and a page view's time outside the CPU (the lightest step's page load less D) as a delay, and predicts the mean page load; its percentile is the mean times −ln(1 − q), as if the page load were exponential (M/M/1's), which it is not below the knee (mostly fixed round trips) and may be past it.",
        recorded.sessions,
    )));
    page.chart(
        chart(&steps, prediction.as_ref()).to_svg(),
        "Where the measured line leaves the model's, the server's demand per page view was not constant: contention, or a generator that fell behind.",
    );
    page.table(
        "Every step: users, page views, page loads, the law, the model's inputs, the verdict",
        table(&steps),
    );
    let judged: Vec<_> = steps.iter().map(|s| s.judged.clone()).collect();
    let tipped = knee::tipped(&judged);
    page.extend(knee::sentence(&tipped, knee::Load::Users).map(Block::Text));
    let machine = super::capacity::reference::speed(&judged);
    page.extend(
        machine
            .as_ref()
            .map(|m| Block::Text(super::capacity::reference::sentence(m))),
    );
    page.summary("users", [sentence.clone()]);
    page.entry(&webscope_lab::results::users::UsersEntry {
        machine_reference: machine.as_ref().map(super::capacity::reference::entry),
        sentence,
        tipped: knee::entries(&tipped),
        ending: ending
            .as_ref()
            .map(webscope_lab::results::UsersEnding::from),
        capacity_users: found,
        thinking: recorded.thinking.clone(),
        prediction,
        steps: figures,
    })?;
    page.finish(out);
    Ok(())
}

/// The search replayed from the steps, as the capacity page replays its probes: how it
/// ended (None when it was cut).
fn replay(plan: Plan, steps: &[StepJudged]) -> Option<webscope_lab::capacity::search::Ending> {
    let judged: Vec<_> = steps.iter().map(|s| s.judged.clone()).collect();
    webscope_lab::capacity::experiment::replay(plan, &judged)
}

/// MVA's sentence: its inputs, its capacity with the users' think times beside it, and why a
/// capacity may lie past N* (issue 52: a capacity above the saturation point read as a
/// contradiction).
fn model_sentence(p: &Prediction, thinking: &str, measured: Option<f64>) -> String {
    let knee = (p.demand_s + p.think_s + p.outside_s) / p.demand_s.max(1e-12);
    let thinking = match thinking {
        "" => String::new(),
        t => format!(" ({t})"),
    };
    let mut said = format!(
        "MVA from D = {} ms of CPU per page view on {} CPU{}, Z = {} ms (the mean think time kept) and {} ms outside the server: {}",
        sig3(p.demand_s * 1e3),
        p.servers,
        if p.servers == 1 { "" } else { "s" },
        sig3(p.think_s * 1e3),
        sig3(p.outside_s * 1e3),
        match p.capacity_users {
            Some(n) => format!(
                "capacity {n} users{thinking} (their page load's p{:.0} predicted within {} ms; saturation at N* = (D + Z)/D ≈ {:.0} users).",
                100.0 * (1.0 - (-p.quantile).exp()),
                sig3(p.limit_s * 1e3),
                knee
            ),
            None => "no N meets the objective in the model.".into(),
        }
    );
    if !p.demand_from.is_empty() {
        said += &format!(" {}.", p.demand_from);
    }
    let past = p
        .capacity_users
        .map(f64::from)
        .into_iter()
        .chain(measured)
        .any(|n| n > knee.round());
    if past {
        said += &format!(
            " A capacity above N* is no contradiction: N* is where the server's CPU starts to be busy all the time, not where the objective fails; past it each further user adds about D = {} ms to the mean page load (R ≈ N·D − Z), and the objective's {} ms still allows some of that.",
            sig3(p.demand_s * 1e3),
            sig3(p.limit_s * 1e3)
        );
    }
    said
}

fn chart(steps: &[StepJudged], p: Option<&Prediction>) -> XyChart {
    let measured: Vec<(f64, f64)> = steps
        .iter()
        .filter(|s| s.figures.page_load_mean_s > 0.0)
        .map(|s| (s.figures.users as f64, s.figures.page_load_mean_s * 1e3))
        .collect();
    let mut series = vec![Series::line("measured mean page load", measured)];
    if let Some(p) = p {
        series.push(Series::line(
            "MVA's mean",
            p.curve
                .iter()
                .map(|&(n, _, r)| (f64::from(n), r * 1e3))
                .collect(),
        ));
    }
    XyChart {
        title: "Mean page load against users: measured and MVA's".into(),
        x: Axis::linear("users (N)"),
        y: Axis::log("mean page load (ms)"),
        series,
    }
}

/// Over TLS (HTTPS, HTTP/2, HTTP/3) two more columns: the users' handshakes and their mean.
fn table(steps: &[StepJudged]) -> Table {
    let tls = steps.iter().any(|s| s.figures.handshakes.is_some());
    let mut header = vec![
        "step",
        "users",
        "page views/s",
        "page p95 (ms)",
        "mean page load (ms)",
        "law N/X − Z (ms)",
        "think kept (ms)",
        "D per page view (ms)",
    ];
    if tls {
        header.extend(HEADINGS);
    }
    header.extend(["verdict", "why"]);
    let mut t = Table::new(header);
    for s in steps {
        let f = &s.figures;
        let mut row = vec![
            s.judged.number.to_string(),
            f.users.to_string(),
            sig3(f.page_views_per_s),
            sig3(f.page_load_p95_s * 1e3),
            sig3(f.page_load_mean_s * 1e3),
            sig3(f.law_response_s * 1e3),
            sig3(f.think_s * 1e3),
            f.demand_s.map_or("—".into(), |d| sig3(d * 1e3)),
        ];
        if tls {
            row.extend(Handshakes::cells(f.handshakes.as_ref()));
        }
        row.extend([s.judged.outcome.cell().to_string(), s.judged.reason.clone()]);
        t.row(row);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prediction(capacity: u32) -> Prediction {
        Prediction {
            demand_s: 0.001,
            demand_from:
                "D is the slope of the server's CPU over page views per second across 5 steps"
                    .into(),
            think_s: 0.099,
            outside_s: 0.0,
            servers: 1,
            capacity_users: Some(capacity),
            quantile: 3.0,
            limit_s: 0.03,
            curve: Vec::new(),
        }
    }

    #[test]
    fn regression_52_mvas_sentence_says_the_think_times_how_d_was_had_and_a_capacity_past_n_star() {
        let thinking = "thinking 10 ms-600 ms, mean 26 ms: SURGE's at 1/100";
        let said = model_sentence(&prediction(105), thinking, None);
        assert!(
            said.contains("capacity 105 users (thinking 10 ms-600 ms"),
            "{said}"
        );
        assert!(
            said.contains("Z = 99 ms (the mean think time kept)"),
            "{said}"
        );
        assert!(said.contains("across 5 steps."), "{said}");
        assert!(said.contains("N* = (D + Z)/D ≈ 100 users"), "{said}");
        assert!(
            said.contains("A capacity above N* is no contradiction"),
            "{said}"
        );
        // Below N*, nothing to explain; a measured capacity above it is explained too.
        let said = model_sentence(&prediction(90), thinking, None);
        assert!(!said.contains("above N*"), "{said}");
        let said = model_sentence(&prediction(90), "", Some(120.0));
        assert!(
            said.contains("A capacity above N* is no contradiction"),
            "{said}"
        );
        assert!(said.contains("capacity 90 users (their"), "{said}");
    }

    /// A step as step.json keeps it, `handshakes` its users' (None: plain HTTP).
    fn step(handshakes: Option<(u64, u64, f64)>) -> StepJudged {
        let handshakes = handshakes.map(|(full, resumed, mean_ms)| {
            serde_json::json!({"full": full, "resumed": resumed, "mean_ms": mean_ms})
        });
        serde_json::from_value(serde_json::json!({
            "judged": {
                "number": 1, "users": 4, "outcome": "pass", "reason": "within the objective",
                "checks": [], "not_sent_share": null, "bound": "latency", "bound_reading": "",
                "warmup_s": 0.2,
                "cooldown": {"waited_s": 0.1, "open_before": 0, "open_after": 0, "time_wait": 0,
                    "time_wait_clients": 0, "room_for": 48.0, "settled": true}
            },
            "figures": {"users": 4, "page_views_per_s": 60.3, "handshakes": handshakes}
        }))
        .unwrap()
    }

    /// Issue 50: over HTTP/3 (as over HTTPS and HTTP/2) every step says its users'
    /// handshakes, full and resumed, and their mean; over plain HTTP the columns are not there.
    #[test]
    fn steps_over_tls_show_their_handshakes_and_plain_ones_no_column() {
        let t = table(&[step(Some((3, 1, 30.12)))]);
        let at = |name: &str| t.header.iter().position(|h| h == name).unwrap();
        assert_eq!(t.rows[0][at("handshakes full/resumed")], "3/1");
        assert_eq!(t.rows[0][at("handshake mean (ms)")], "30.1");
        assert_eq!(t.rows[0][at("verdict")], t.rows[0][t.header.len() - 2]);
        let plain = table(&[step(None)]);
        assert!(!plain.header.iter().any(|h| h.contains("handshake")));
        assert_eq!(plain.header.len(), t.header.len() - 2);
    }
}
