use super::*;
use serde_json::json;
use webscope_lab::objective::CheckLine;
use webscope_record::health::Judge;
use webscope_record::{write_json, RunRecord, ServerFigures};

/// How the recorded server fails above 800 req/s.
#[derive(Clone, Copy, PartialEq)]
enum Limit {
    /// Its CPU: it answers 850 req/s, late (p99 80 ms).
    Cpu,
    /// A rate limit: it answers 800 req/s at once and the rest 503, its p99 passing.
    Refusing,
}

/// A search recorded as the lab writes it: a server of 1 core at 100 µs a request that
/// meets p99<=5ms up to 800 req/s (probes 100, 200, 400, 800 pass; 1600, 1200, 1000, 900
/// fail as `limit` says, each boundary confirmed: the rates as the search chose them), with
/// the files the page reads.
fn recorded(dir: &Path, limit: Limit) -> ExperimentRecord {
    recorded_by(dir, limit, None)
}

/// [`recorded`] by the rule `rule` (None: as searches recorded before the settled rule).
fn recorded_by(dir: &Path, limit: Limit, rule: Option<Rule>) -> ExperimentRecord {
    let plan = Recorded {
        slo: "p99<=5ms,errors<=0.1%,goodput>=99%".parse().unwrap(),
        from: 100.0,
        growth: 2.0,
        precision: 0.15,
        repeat: 2,
        need: 2,
        max_probes: 40,
        every: false,
        // Recorded by the majority rule, as searches before the settled one were: the page
        // replays such a search as it ran.
        settled: false,
        rule,
        arrivals: "constant".into(),
        probe_s: 1.0,
        warmup_s: 0.2,
    };
    write_json(&dir.join("capacity.json"), &plan).unwrap();
    let mut runs = Vec::new();
    let mut search = webscope_lab::capacity::search::Search::new(plan.plan());
    let mut rates = Vec::new();
    while let Some(rate) = search.next_rate() {
        rates.push(rate);
        let outcome = if rate <= 800.0 {
            webscope_lab::objective::Outcome::Pass
        } else {
            webscope_lab::objective::Outcome::Fail
        };
        search.record(rate, outcome, "");
    }
    for (i, rate) in rates.into_iter().enumerate() {
        let pass = rate <= 800.0;
        let refused = if pass || limit == Limit::Cpu {
            0
        } else {
            (rate - 800.0) as u64
        };
        let achieved: f64 = match (pass, limit) {
            (true, _) => rate,
            (false, Limit::Cpu) => 850.0,
            (false, Limit::Refusing) => 800.0,
        };
        let p99_us = if pass || limit == Limit::Refusing {
            1_000.0
        } else {
            80_000.0
        };
        let name = format!("probe-{:02}-{rate:.0}rps", i + 1);
        let run_dir = dir.join(&name);
        std::fs::create_dir_all(&run_dir).unwrap();
        let run = RunRecord {
            x: rate,
            load_description: "open loop".into(),
            load: webscope_record::load_json(json!({
                "duration_s": 1.0, "requests": achieved as u64 + refused,
                // At its CPU's limit every request waited for the server: sent late.
                "late_sends": if !pass && limit == Limit::Cpu { achieved as u64 } else { 0 },
                "status_codes": {"200": achieved as u64, "503": refused},
                "latency_us": {"p50": 200.0, "p90": 400.0, "p99": p99_us, "p999": p99_us * 1.5, "max": p99_us * 2.0},
            })),
            server: Some(ServerFigures {
                requests: achieved,
                cpu_s: achieved * 100e-6,
                busy_cores: achieved * 100e-6,
                ..Default::default()
            }),
            os: None,
            server_os: Vec::new(),
            env: Default::default(),
            syscalls: None,
        };
        write_json(&run_dir.join("run.json"), &run).unwrap();
        let verdict = |ok: bool| if ok { Verdict::Pass } else { Verdict::Fail };
        let check = |condition: &str, measured: f64, ok: bool| CheckLine {
            condition: condition.into(),
            measured: Some(measured),
            verdict: verdict(ok),
            line: format!(
                "{condition}: {measured}, {}",
                if ok { "passed" } else { "FAILED" }
            ),
        };
        let errors = refused as f64 / (achieved + refused as f64);
        let judged = Judged {
            number: i + 1,
            level: webscope_lab::step::Level::Rate(rate),
            outcome: if pass { Outcome::Pass } else { Outcome::Fail },
            reason: String::new(),
            checks: vec![
                check("p99<=5ms", p99_us, p99_us <= 5_000.0),
                check("errors<=0.1%", errors, errors <= 0.001),
            ],
            not_sent_share: Some(0.0),
            bound: if refused > 0 {
                webscope_bottleneck::Bound::Refused
            } else {
                webscope_bottleneck::Bound::ServerCpu
            },
            bound_reading: String::new(),
            warmup_s: 0.2,
            probe_s: 1.0,
            disturbance: None,
            cooldown: Default::default(),
            reference: Some(webscope_lab::step::Reference {
                cpu: Some(0),
                ms: vec![17.0, 18.0, 19.5],
            }),
        };
        write_json(&run_dir.join("probe.json"), &judged).unwrap();
        runs.push(name);
    }
    serde_json::from_value(json!({
        "name": "capacity", "factor": "offered rate (req/s)", "runs": runs,
        "complete": true, "failures": [],
    }))
    .unwrap()
}

/// The page's text blocks, joined.
fn text(out: &Rendered) -> String {
    out.sections[0]
        .blocks
        .iter()
        .filter_map(|b| match b {
            Block::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_page_gives_the_capacity_its_bracket_every_probe_and_the_law_beside_it() {
    let tmp = tempfile::tempdir().unwrap();
    let exp = recorded(tmp.path(), Limit::Cpu);
    let mut out = Rendered::new(Judge::default());
    render(tmp.path(), &exp, &mut out).unwrap();
    let c = &out.json["capacity"];
    assert_eq!(c["capacity_rps"], 800.0, "{c:#}");
    assert_eq!(c["ending"]["fails_at_rps"], 900.0, "{c:#}");
    assert_eq!(
        c["sentence"],
        "capacity 800 req/s (passes 2/2; 900 fails 2/2; bracket ±6.2 %)"
    );
    // D = 100 µs on one core: the bound is 10 000 req/s, the capacity 8 % of it.
    let bound = c["operational_bound_rps"].as_f64().unwrap();
    assert!((bound - 10_000.0).abs() < 1.0, "{bound}");
    assert!((c["server_cpu_per_request_us"].as_f64().unwrap() - 100.0).abs() < 1e-6);
    let probes = c["probes"].as_array().unwrap().len();
    assert_eq!(probes, exp.runs.len());
    assert!(probes >= 12, "every boundary confirmed: {probes}");
    let (name, csv) = &out.csv[0];
    assert_eq!(name, "capacity.csv");
    assert_eq!(csv.lines().count(), probes + 1, "{csv}");
    assert!(csv.lines().next().unwrap().contains("p99<=5ms"), "{csv}");
    assert!(
        out.summary.contains("capacity 800 req/s"),
        "{}",
        out.summary
    );
    let blocks = &out.sections[0].blocks;
    let charts = blocks
        .iter()
        .filter(|b| matches!(b, Block::Chart { .. }))
        .count();
    assert_eq!(charts, 2);
    // It failed on latency with the CPU 9 % busy at 900 req/s: the laws' reasoning, no
    // refusal.
    let said = text(&out);
    assert!(!said.contains("refused load"), "{said}");
    // The machine's speed: the mean of every probe's reference readings.
    let m = &c["machine_reference"];
    assert_eq!(m["median_ms"], 18.0, "{m:#}");
    assert!(
        (m["mean_ms"].as_f64().unwrap() - 18.1667).abs() < 1e-3,
        "{m:#}"
    );
    assert_eq!(m["samples"], 3 * probes, "{m:#}");
    assert_eq!(m["cpu"], 0, "{m:#}");
    // Its failing probes carried 850 req/s each, behind their rates throughout: a steady peak.
    let peak = &c["peak"];
    assert_eq!(peak["median_rps"], 850.0, "{peak:#}");
    assert_eq!(peak["spread"], 0.0, "{peak:#}");
    assert!(peak["probes"].as_u64().unwrap() >= 8, "{peak:#}");
    // 800 req/s lies below the 850 it carried once behind: it catches up at its capacity.
    assert_eq!(peak["capacity_above_median"], false, "{peak:#}");
    assert!(!said.contains("probes it had fallen behind in"), "{said}");
    assert!(
        said.contains("carried 850 req/s each. It held within 5.0 %"),
        "{said}"
    );
    // Every probe read the same three figures: their means agree, nothing to be unsure of.
    assert_eq!(m["probes"].as_u64(), Some(probes as u64), "{m:#}");
    assert!(m["se_ms"].as_f64().is_some_and(|se| se < 1e-9), "{m:#}");
    assert!(
        said.contains("took 18.2 ms") && said.contains("on the server's CPU 0"),
        "{said}"
    );
}

/// #33: a 503-limited server's failing probes say "refuses load", and the law paragraph
/// follows the condition that failed (errors), not a latency that held.
#[test]
fn a_503_limited_servers_page_says_it_refuses_load() {
    let tmp = tempfile::tempdir().unwrap();
    let exp = recorded(tmp.path(), Limit::Refusing);
    let mut out = Rendered::new(Judge::default());
    render(tmp.path(), &exp, &mut out).unwrap();
    let c = &out.json["capacity"];
    assert_eq!(c["capacity_rps"], 800.0, "{c:#}");
    let said = text(&out);
    for words in [
        "At 900 req/s, the first rate that failed, the server refused load: 503 Service Unavailable on 11 % of requests, while its latency held (p99<=5ms: 1000, passed)",
        "A rate or connection limit bounds the capacity",
        "the gap to the bound is not queueing",
    ] {
        assert!(said.contains(words), "{words:?} in {said}");
    }
    // It answered at once what it served: never behind its rate, so no peak was reached.
    assert!(c["peak"].is_null(), "{c:#}");
    for wrong in [
        "A latency objective binds",
        "something other than the server's CPU",
    ] {
        assert!(!said.contains(wrong), "{wrong:?} in {said}");
    }
    // The verdict drawn from each failing probe's run (what probe.json keeps as its bound)
    // names the refusal with its status and share.
    let points = load_points(tmp.path(), &exp, &mut out).unwrap();
    let failing: Vec<&Point> = points.iter().filter(|p| p.x > 800.0).collect();
    assert!(failing.len() >= 4, "{}", failing.len());
    for p in failing {
        assert_eq!(
            p.verdict.bound,
            webscope_bottleneck::Bound::Refused,
            "{}",
            p.verdict.reading
        );
        assert!(
            p.verdict.reading.contains("refuses load beyond 800 req/s")
                && p.verdict.reading.contains("503 Service Unavailable on"),
            "{}",
            p.verdict.reading
        );
    }
}

#[test]
fn the_plan_says_which_rule_decided_a_rate() {
    let plan = |every, settled| Recorded {
        slo: "p99<=5ms,errors<=0.1%,goodput>=99%".parse().unwrap(),
        from: 100.0,
        growth: 2.0,
        precision: 0.05,
        repeat: 3,
        need: 0,
        max_probes: 40,
        every,
        settled,
        rule: None,
        arrivals: "constant".into(),
        probe_s: 3.0,
        warmup_s: 0.6,
    };
    let majority = plan_sentence(&plan(false, false));
    assert!(majority.contains("the majority deciding"), "{majority}");
    assert!(!majority.contains("every probe there passed"), "{majority}");
    let every = plan_sentence(&plan(true, false));
    assert!(
        every.contains("a rate passes only when every probe there passed"),
        "{every}"
    );
    assert!(!every.contains("the majority deciding"), "{every}");
    let settled = plan_sentence(&plan(false, true));
    assert!(
        settled.contains("(3 of 3, 4 of 4, 5 of 6)") && settled.contains("unsettled"),
        "{settled}"
    );
    assert!(!settled.contains("the majority deciding"), "{settled}");
}

#[test]
fn a_range_search_states_both_edges_and_reads_back_as_l_in_its_own_bracket() {
    let tmp = tempfile::tempdir().unwrap();
    let exp = recorded_by(tmp.path(), Limit::Cpu, Some(Rule::Range));
    let mut out = Rendered::new(Judge::default());
    render(tmp.path(), &exp, &mut out).unwrap();
    let c = &out.json["capacity"];
    let sentence = c["sentence"].as_str().unwrap();
    assert!(
        sentence.starts_with(
            "capacity: reliably up to 800 req/s (every probe there met the objective, 3/3"
        ) && sentence.contains("every probe failing from 900 req/s (3/3): no tipping range"),
        "{sentence}"
    );
    assert_eq!(c["ending"]["first_miss_rps"], 900.0, "{c:#}");
    assert_eq!(c["ending"]["fails_at_rps"], 900.0, "{c:#}");
    assert!(
        out.summary.contains("reliably up to 800 req/s"),
        "{}",
        out.summary
    );
    let readings: Vec<&str> = out.sections[0]
        .blocks
        .iter()
        .filter_map(|b| match b {
            Block::Chart { reading, .. } => Some(reading.as_str()),
            _ => None,
        })
        .collect();
    assert!(
        readings[0].contains("reliably up to 800 req/s (every probe there met the objective) and failing from 900 req/s"),
        "{readings:?}"
    );
    assert!(text(&out).contains("L and U are each confirmed by 3 probes or more"));
    // What compare and --baseline read: L, bracketed by its first miss.
    let entry: webscope_lab::results::SearchEntry<webscope_lab::results::RpsEnding> =
        serde_json::from_value(c.clone()).unwrap();
    assert_eq!(
        entry.bracket().map(|b| (b.low, b.high)),
        Some((800.0, 900.0))
    );
}
