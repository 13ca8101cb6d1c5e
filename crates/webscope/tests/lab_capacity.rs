//! `webscope lab --experiment capacity`, end to end, against servers whose capacity is known
//! by construction: nginx with `limit_req` (capacity = the limit, the excess answered 503, so
//! errors are the failing condition), and a generator held to a tenth of a CPU by a cgroup
//! (the search must end in "beyond what this generator can offer", never a server capacity).
//! Probes of 1 s and a coarse precision keep each search to a few seconds.

mod capacity_support;
mod lab_support;

use std::sync::Mutex;

use capacity_support::{
    capacity, capacity_in, capacity_or_refusal, failed_below, CpuQuota, FixedCost,
};
use lab_support::{webscope, Nginx, Spinner};

/// The searches measure latency and CPU: they take turns.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

#[test]
fn a_rate_limited_nginx_has_its_limit_as_capacity_and_errors_as_the_failing_condition() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let set = tmp.path().join("set");
    lab_support::tiny_fileset(&set);
    // 400 req/s with a burst of 40: the burst absorbs the generator's stalls on a busy
    // machine (up to 100 ms of sends bunched together), and is used up by a probe 10 % over
    // the limit (0.2 s of warm-up + 1 s at 440 req/s bring 48 requests beyond it: 8 refused,
    // 1.5 %, whose interval straddles the 1 % allowed: the probe is taken again twice as
    // long, 48 refused of 1 000, and fails), so the bracket's top is at most 10 % over the
    // limit. p90 and errors<=1 %: the conditions that 400 requests decide (a p99 would need
    // 2 000, errors<=0.1 % 3 838: probes of 10 to 40 s at these rates).
    const LIMIT: f64 = 400.0;
    let Some(nginx) = Nginx::start_limited(&set, tmp.path(), LIMIT as u32, 40) else {
        return;
    };
    let out = tmp.path().join("r");
    let Some(c) = capacity(
        &nginx.base_url,
        &set,
        &out,
        &[
            "--slo",
            "p90<=200ms,errors<=1%,goodput>=90%",
            // The grid doubles from here to the limit (200, 400, 800): a first probe at 100
            // would take 3.8 s (381 requests decide these conditions) and check nothing more.
            "--from",
            "200",
            "--precision",
            "0.1",
            "--keep-alive",
        ],
    ) else {
        return;
    };
    let probes = c["probes"].as_array().unwrap();
    let rate = |p: &serde_json::Value| p["offered_rps"].as_f64().unwrap();
    let condition = |p: &serde_json::Value, name: &str| {
        p["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["condition"].as_str().unwrap().starts_with(name))
            .map(|k| k["verdict"].as_str().unwrap().to_string())
    };
    // Above the limit + 10 % every probe fails, on errors (the 503s beyond the burst) —
    // unless the generator could not offer it on a busy machine, which ends the search
    // without a capacity and is checked below, or the probe was too short to decide its
    // error share (taken again, longer) or ran on a disturbed machine (taken again): those
    // are no verdict, and the rate's own comes from the probes that follow.
    for p in probes.iter().filter(|p| rate(p) > LIMIT * 1.1) {
        if ["generator", "undecided", "disturbed"].contains(&p["verdict"].as_str().unwrap()) {
            continue;
        }
        assert_eq!(p["verdict"], "fail", "{p:#}");
        assert_eq!(condition(p, "errors").as_deref(), Some("fail"), "{p:#}");
        // #33: what refused, with its status and share, not "latency" beside a p99 that
        // passed.
        assert_eq!(p["bound"], "refuses load", "{p:#}");
        let reading = p["bound_reading"].as_str().unwrap();
        assert!(
            reading.contains("the server refuses load beyond")
                && reading.contains("503 Service Unavailable on"),
            "{reading}"
        );
    }
    // At or below the limit a probe fails only when the machine stalls the generator past
    // the burst (a busy CI host, or five builds on two cores): the lab then names the
    // machine or the generator as the bound, or the refusals of the sends the stall bunched
    // together; never the server's CPU or latency.
    let busy: Vec<&serde_json::Value> = probes
        .iter()
        .filter(|p| rate(p) <= LIMIT && p["verdict"] != "pass")
        .collect();
    for p in &busy {
        let bound = p["bound"].as_str().unwrap();
        assert!(
            ["machine CPU", "generator", "refuses load"].contains(&bound),
            "a probe below the limit failed with the server as its bound: {p:#}"
        );
    }
    let ending = &c["ending"];
    if ending["kind"] == "generator" {
        lab_support::unchecked(&format!(
            "the generator could not offer a rate on this busy machine: {}",
            c["sentence"]
        ));
    } else if busy.is_empty() {
        // A machine that kept up: the capacity is the limit, within the burst's 10 % above
        // it and the precision's 10 % below.
        assert_eq!(ending["kind"], "found", "{c:#}");
        let found = ending["capacity_rps"].as_f64().unwrap();
        let fails_at = ending["fails_at_rps"].as_f64().unwrap();
        assert!(
            (LIMIT / 1.1..=LIMIT * 1.1).contains(&found),
            "capacity {found} for a limit of {LIMIT}: {c:#}"
        );
        assert!(
            (fails_at - found) / found <= 0.1 + 1e-9,
            "bracket {found}..{fails_at}"
        );
    } else {
        lab_support::unchecked(&format!(
            "the machine was busy ({} probes at or below the limit failed, bound by the machine or the generator): {}",
            busy.len(),
            c["sentence"]
        ));
    }
    // The report's figures and files: every probe in the CSV, the SLO, the sentence.
    assert_eq!(c["slo"], "p90<=200ms,errors<=1%,goodput>=90%");
    assert!(
        c["sentence"].as_str().unwrap().contains("capacity"),
        "{c:#}"
    );
    let csv = std::fs::read_to_string(out.join("capacity.csv")).unwrap();
    assert_eq!(csv.lines().count(), probes.len() + 1, "{csv}");
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("Latency percentiles vs offered rate"));
    // The law paragraph follows the condition that failed: the first failing probe failed
    // on errors, so the page says the server refused load, not that latency bound it.
    let first_fail = probes
        .iter()
        .filter(|p| p["verdict"] == "fail")
        .min_by(|a, b| rate(a).total_cmp(&rate(b)));
    if first_fail.is_some_and(|p| p["bound"] == "refuses load") {
        assert!(html.contains("the server refused load: 503"), "{c:#}");
        assert!(!html.contains("A latency objective binds"), "{c:#}");
    }
    // The page is drawn from the folder alone: webscope report gives the same figures.
    let again = webscope().args(["report"]).arg(&out).output().unwrap();
    assert!(again.status.success());
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["capacity"]["sentence"], c["sentence"]);
}

#[test]
fn a_generator_that_cannot_offer_the_rate_ends_the_search_without_a_server_capacity() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if std::thread::available_parallelism().map_or(1, usize::from) < 2 {
        lab_support::unchecked(
            "the lab pins server and generator to two CPUs; this machine has one",
        );
        return;
    }
    // A generator out of its own CPU: the lab (the generator with it) held to a tenth of a
    // CPU by a cgroup. Not neighbours spinning on its CPU: a generator behind while others
    // take its CPU is the machine's disturbance, and the search then waits and ends
    // "disturbed" (#33), never at the generator.
    let quota = match CpuQuota::new(0.1) {
        Ok(q) => q,
        Err(why) => {
            lab_support::unchecked(&format!("no CPU quota for the generator: {why}"));
            return;
        }
    };
    let tmp = tempfile::tempdir().unwrap();
    let set = tmp.path().join("set");
    lab_support::tiny_fileset(&set);
    // nginx on CPU 0 answers at once, with all of its CPU.
    let Some(nginx) = Nginx::start_with(&set, tmp.path(), Some(0), 1) else {
        return;
    };
    let Some(c) = capacity_in(
        Some(&quota),
        &nginx.base_url,
        &set,
        &tmp.path().join("r"),
        &[
            "--slo",
            "p99<=1s,errors<=1%",
            // A tenth of a CPU carried 2 000 req/s in a debug build and fell behind at 4 000
            // (a release build goes further, nginx's whole CPU further still): a probe that
            // passes first, so that the generators needed are said.
            "--from",
            "1000",
            "--precision",
            "0.5",
            "--keep-alive",
        ],
    ) else {
        return;
    };
    let sentence = c["sentence"].as_str().unwrap();
    assert!(
        sentence.contains("beyond what this generator can offer"),
        "{sentence}\n{c:#}"
    );
    // #33: the ending quotes the figure that ended it (the generator's thread busy or kept
    // from its CPU, or requests never sent), not "fell behind" beside a row that kept up.
    assert!(
        sentence.contains(" req/s the load generator") || sentence.contains("never sent"),
        "{sentence}"
    );
    assert_eq!(c["ending"]["kind"], "generator", "{c:#}");
    assert!(c["capacity_rps"].is_null(), "{c:#}");
    // How many generators the next step needs, from the last probe that passed.
    let passed = c["probes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["verdict"] == "pass");
    if passed {
        let needed = &c["generators_needed"];
        assert!(needed["generators"].as_u64().unwrap() >= 2, "{needed:#}");
        assert!(
            needed["per_generator_rps"].as_f64().unwrap() > 0.0,
            "{needed:#}"
        );
    }
}

#[test]
fn a_server_that_waits_10ms_a_request_one_at_a_time_carries_100_per_second_not_what_its_cpu_could()
{
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // Capacity by construction: one request at a time, 10 ms each, is 100 req/s. Above it
    // the queue grows by the excess every second, and the latency with it (constant
    // arrivals: 3 % over for 1.2 s is 4 requests waiting, 40 ms more); below it each request
    // waits only for itself.
    const COST_MS: f64 = 10.0;
    let (tmp, set, server) = FixedCost::with_set("sleep", COST_MS);
    let Some(c) = capacity(
        &server.base_url,
        &set,
        &tmp.path().join("r"),
        &[
            "--slo",
            "p90<=40ms,errors<=5%,goodput>=95%",
            "--from",
            "50",
            "--precision",
            "0.1",
        ],
    ) else {
        return;
    };
    // The same search again with each probe split over two generator processes, against
    // the first as --baseline: the two capacities side by side by their brackets, whatever
    // the machine made of each.
    let again = tmp.path().join("again");
    let first = tmp.path().join("r");
    let Some(b) = capacity(
        &server.base_url,
        &set,
        &again,
        &[
            "--slo",
            "p90<=40ms,errors<=5%,goodput>=95%",
            "--from",
            "50",
            "--precision",
            "0.1",
            "--segments",
            "2",
            "--baseline",
            first.to_str().unwrap(),
        ],
    ) else {
        return;
    };
    // Every probe ran as two segments, and its report is their exact sum.
    for probe in b["probes"].as_array().unwrap() {
        let dir = again.join("capacity").join(probe["run"].as_str().unwrap());
        let read = |name: &str| -> serde_json::Value {
            serde_json::from_slice(&std::fs::read(dir.join(name)).unwrap()).unwrap()
        };
        let parts = [read("segment-0.json"), read("segment-1.json")];
        let whole = read("run.json")["load"].clone();
        let sum: u64 = parts.iter().map(|p| p["requests"].as_u64().unwrap()).sum();
        assert_eq!(whole["requests"].as_u64(), Some(sum), "{}", dir.display());
        for (i, part) in parts.iter().enumerate() {
            assert_eq!(part["segment"], format!("{i}/2"), "{part:#}");
        }
    }
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(again.join("report.json")).unwrap()).unwrap();
    let side = &report["baseline"]["capacity"];
    if let (Some(was), Some(now)) = (c["capacity_rps"].as_f64(), b["capacity_rps"].as_f64()) {
        let said = side["sentence"].as_str().unwrap();
        assert!(
            said.starts_with(&format!("capacity {was:.0} → {now:.0} req/s")),
            "{said}"
        );
        assert_eq!(side["baseline"]["capacity_rps"], was);
        assert!(side["overlap"].is_boolean());
    }
    let by_construction = 1000.0 / COST_MS;
    let busy = failed_below(&c, 0.7 * by_construction);
    // #33, #53: two searches of one server are never a regression by `compare --threshold
    // 'capacity>-5%'` either way round, when the machine let both find a capacity (a busy
    // one may not: then the searches' brackets are the search's to make honest, and the pair
    // is only printed). Within (0), or, brackets allowing a larger drop than 5 % (the grid's
    // steps), cannot be decided (3).
    let quiet = busy.is_empty() && failed_below(&b, 0.7 * by_construction).is_empty();
    let found_both = c["ending"]["kind"] == "found" && b["ending"]["kind"] == "found";
    // Each search timed the machine's reference loop before every probe, five readings
    // each, on the server's machine, with the mean's standard error.
    for r in [&c, &b] {
        let m = &r["machine_reference"];
        let probes = r["probes"].as_array().map_or(0, |p| p.len());
        assert_eq!(m["samples"].as_u64(), Some(5 * probes as u64), "{m:#}");
        assert_eq!(m["probes"].as_u64(), Some(probes as u64), "{m:#}");
        assert!(m["se_ms"].as_f64().is_some_and(|se| se >= 0.0), "{m:#}");
    }
    for (base, cand) in [(&first, &again), (&again, &first)] {
        let out = webscope()
            .arg("compare")
            .arg(base)
            .arg(cand)
            .args(["--threshold", "capacity>-5%"])
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        // compare's own machine rule may leave the pair undecided (machines apart, as a
        // shared machine's may be): it says so, and that is not the brackets' verdict.
        let machines_apart = said.contains("the machine itself ran");
        if quiet && found_both && !machines_apart {
            assert!(
                matches!(out.status.code(), Some(0 | 3)),
                "{said}\n{c:#}\n{b:#}"
            );
        } else {
            lab_support::unchecked(&format!("a busy machine's pair: {}", said.trim()));
        }
    }
    assert!(
        busy.iter().all(|b| b == "machine CPU" || b == "generator"),
        "a probe well below capacity failed with the server as its bound: {c:#}"
    );
    if !busy.is_empty() {
        lab_support::unchecked(&format!(
            "the machine was busy ({busy:?}): {}",
            c["sentence"]
        ));
        return;
    }
    assert_eq!(c["ending"]["kind"], "found", "{c:#}");
    let found = c["capacity_rps"].as_f64().unwrap();
    assert!(
        (0.7 * by_construction..=1.05 * by_construction).contains(&found),
        "capacity {found} req/s for a server that carries {by_construction}: {c:#}"
    );
    // The CPU is not what bounds it: the page says so rather than blaming the objective.
    // (Python's 0.3 ms a request may be too little CPU time to divide for a bound.)
    if let Some(bound) = c["operational_bound_rps"].as_f64() {
        assert!(bound > 3.0 * found, "CPU bound {bound} vs capacity {found}");
    }
    let beyond = &c["beyond_the_cpu"];
    assert!(beyond["utilisation"].as_f64().unwrap() < 0.5, "{beyond:#}");
    let text = std::fs::read_to_string(tmp.path().join("r").join("index.html")).unwrap();
    assert!(
        text.contains("something other than the server's CPU bounds it"),
        "the page must say the CPU is not the bound"
    );
}

#[test]
fn a_server_that_spends_4ms_of_cpu_a_request_has_the_operational_law_bound_of_250_per_second() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // D = 4 ms of CPU a request on one CPU (the server is pinned to CPU 0): 1/D = 250 req/s,
    // whatever else runs on that CPU, because D = U/X counts the server's own CPU time.
    // Python's own work per request (accept, read, the file, send) adds a little to it.
    const COST_MS: f64 = 4.0;
    let (tmp, set, server) = FixedCost::with_set("spin", COST_MS);
    let Some(c) = capacity(
        &server.base_url,
        &set,
        &tmp.path().join("r"),
        &[
            "--slo",
            "p90<=50ms,errors<=5%,goodput>=95%",
            // 100, 200, 400: the grid from 50 but for its first probe, which would take 4 s
            // (200 requests decide these conditions) below any rate checked here.
            "--from",
            "100",
            "--precision",
            "0.1",
        ],
    ) else {
        return;
    };
    let by_construction = 1000.0 / COST_MS;
    let Some(bound) = c["operational_bound_rps"].as_f64() else {
        // No probe passed with enough CPU time to divide: only a machine too busy to give
        // the server its CPU excuses that.
        let busy = failed_below(&c, by_construction);
        assert!(
            !busy.is_empty() && busy.iter().all(|b| b == "machine CPU" || b == "generator"),
            "no bound, and the machine was not to blame: {c:#}"
        );
        lab_support::unchecked(&format!(
            "the machine was busy ({busy:?}): {}",
            c["sentence"]
        ));
        return;
    };
    assert!(
        (0.75 * by_construction..=1.02 * by_construction).contains(&bound),
        "1/D_max {bound} req/s for D = {COST_MS} ms: {c:#}"
    );
    // No capacity above the bound (beyond the search's precision): the law and the search
    // tell one story.
    if let Some(found) = c["capacity_rps"].as_f64() {
        assert!(
            found <= bound * 1.1,
            "capacity {found} above 1/D_max {bound}: {c:#}"
        );
        if failed_below(&c, 0.6 * by_construction).is_empty() {
            assert!(found >= 0.6 * by_construction, "capacity {found}: {c:#}");
        }
    }
}

#[test]
fn a_cpu_hog_on_the_servers_cpu_makes_the_search_wait_or_refuse_never_a_wrong_capacity() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        lab_support::unchecked(
            "the lab pins server and generator to two CPUs; this machine has one",
        );
        return;
    }
    // The 250-req/s server (4 ms of CPU a request on CPU 0) shares its CPU with a hog of
    // another process for the search's first 15 s: a probe that fails then is the machine's,
    // not the server's. The search waits the hog out and goes on (a capacity near the quiet
    // one), or, on a machine that stays busy, ends without one (exit 4) — never a capacity
    // read off probes the hog failed.
    const COST_MS: f64 = 4.0;
    let (tmp, set, server) = FixedCost::with_set("spin", COST_MS);
    let hog = Spinner::on(0);
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_secs(15));
        drop(hog);
    });
    let (code, c, stderr) = capacity_or_refusal(
        &server.base_url,
        &set,
        &tmp.path().join("r"),
        &[
            "--slo",
            "p90<=50ms,errors<=5%,goodput>=95%",
            "--from",
            "100",
            "--precision",
            "0.1",
        ],
    );
    stopper.join().unwrap();
    let sentence = c["sentence"].as_str().unwrap_or_default();
    if code == Some(4) {
        assert_eq!(c["ending"]["kind"], "disturbed", "{c:#}");
        assert!(
            sentence.starts_with("no capacity: the machine was disturbed ("),
            "{sentence}"
        );
        assert!(stderr.contains(sentence), "{stderr}");
        assert!(c["capacity_rps"].is_null(), "{c:#}");
        lab_support::unchecked(&format!("the machine stayed disturbed: {sentence}"));
        return;
    }
    assert_eq!(code, Some(0), "{stderr}");
    // The watch saw the hog: the first probe ran within its 15 s, and others took much of the
    // server's CPU then (a share of the region the server runs in).
    let probes = c["probes"].as_array().unwrap();
    let others_on_the_server = |p: &serde_json::Value| -> f64 {
        p["disturbance"]["regions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|r| {
                r["roles"]
                    .as_array()
                    .is_some_and(|a| a.contains(&"server".into()))
            })
            .filter_map(|r| r["others"].as_f64())
            .fold(0.0, f64::max)
    };
    assert!(
        others_on_the_server(&probes[0]) > 0.3,
        "the first probe did not see the hog: {:#}",
        probes[0]
    );
    // Every probe the hog failed is marked so, and names what took the CPU.
    for p in probes.iter().filter(|p| p["verdict"] == "disturbed") {
        let reason = p["reason"].as_str().unwrap();
        assert!(
            reason.starts_with("the machine was disturbed: "),
            "{reason}"
        );
    }
    let by_construction = 1000.0 / COST_MS;
    match c["ending"]["kind"].as_str() {
        Some("found") => {
            let found = c["capacity_rps"].as_f64().unwrap();
            // What the quiet search finds: at most the CPU's bound, and not the hog's half.
            assert!(
                (0.6 * by_construction..=1.1 * by_construction).contains(&found),
                "capacity {found} req/s for a server that carries {by_construction}: {c:#}"
            );
        }
        // A machine busy beyond the hog (other tests, a build) may end the search another
        // way that gives no capacity; never one with a number.
        _ => assert!(c["capacity_rps"].is_null(), "{c:#}"),
    }
}
