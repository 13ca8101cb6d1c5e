//! `webscope lab --experiment capacity`, end to end, against servers whose capacity is known
//! by construction: nginx with `limit_req` (capacity = the limit, the excess answered 503, so
//! errors are the failing condition), and a generator with two noisy neighbours on its CPU
//! (the search must end in "beyond what this generator can offer", never a server capacity).
//! Probes of 1 s and a coarse precision keep each search to a few seconds.

mod lab_support;

use std::path::Path;
use std::sync::Mutex;

use lab_support::{webscope, Nginx, Spinner};

/// The searches measure latency and CPU: they take turns.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Runs a capacity search and returns its report.json entry.
fn capacity(target: &str, fileset: &Path, out: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "--experiment",
        "capacity",
        "--duration",
        "1s",
        "--no-preflight",
    ];
    args.extend_from_slice(extra);
    lab_support::lab_on(target, fileset, out, &args)["capacity"].clone()
}

#[test]
fn a_rate_limited_nginx_has_its_limit_as_capacity_and_errors_as_the_failing_condition() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let set = tmp.path().join("set");
    lab_support::tiny_fileset(&set);
    // 400 req/s with a burst of 8: the burst absorbs the sends' jitter at the limit, and is
    // used up within the first 40 ms of a probe 2 % over it (0.2 s of warm-up + 1 s at
    // 408 req/s brings 9.6 requests beyond it: 1.6 refused, 0.4 % > the 0.1 % allowed).
    const LIMIT: f64 = 400.0;
    let Some(nginx) = Nginx::start_limited(&set, tmp.path(), LIMIT as u32, 8) else {
        return;
    };
    let out = tmp.path().join("r");
    let c = capacity(
        &nginx.base_url,
        &set,
        &out,
        &[
            "--slo",
            "p99<=200ms,errors<=0.1%",
            "--from",
            "100",
            "--precision",
            "0.1",
            "--keep-alive",
        ],
    );
    let ending = &c["ending"];
    assert_eq!(ending["kind"], "found", "{c:#}");
    let found = ending["capacity_rps"].as_f64().unwrap();
    let fails_at = ending["fails_at_rps"].as_f64().unwrap();
    // Above the limit every probe fails (refusals beyond the burst); at or below it a probe
    // fails only when the busy machine bunches the sends past the burst, so the capacity
    // found is the limit or, on a busy machine, up to a growth step or two below it.
    assert!(
        (LIMIT * 0.7..=LIMIT * 1.02).contains(&found),
        "capacity {found} for a limit of {LIMIT}: {c:#}"
    );
    assert!(
        (fails_at - found) / found <= 0.1 + 1e-9,
        "bracket {found}..{fails_at}"
    );
    // The probe that failed at the bracket's top failed on errors (503s), its latency fine.
    let probes = c["probes"].as_array().unwrap();
    let top = probes
        .iter()
        .find(|p| p["offered_rps"].as_f64() == Some(fails_at))
        .unwrap();
    assert_eq!(top["verdict"], "fail", "{top:#}");
    let conditions = top["conditions"].as_array().unwrap();
    let verdict_of = |name: &str| {
        conditions
            .iter()
            .find(|k| k["condition"].as_str().unwrap().starts_with(name))
            .map(|k| k["verdict"].as_str().unwrap().to_string())
    };
    assert_eq!(verdict_of("errors").as_deref(), Some("fail"), "{top:#}");
    // The report's figures and files: every probe in the CSV, the SLO, the sentence.
    assert_eq!(c["slo"], "p99<=200ms,errors<=0.1%,goodput>=99%");
    let sentence = c["sentence"].as_str().unwrap();
    assert!(sentence.starts_with("capacity "), "{sentence}");
    let csv = std::fs::read_to_string(out.join("capacity.csv")).unwrap();
    assert_eq!(csv.lines().count(), probes.len() + 1, "{csv}");
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("Latency percentiles vs offered rate"));
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
        eprintln!("skipping: the lab pins server and generator to two CPUs");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let set = tmp.path().join("set");
    lab_support::tiny_fileset(&set);
    // nginx on CPU 0 answers at once; the generator (the lab pins it to CPU 1) shares its
    // CPU with two spinning neighbours, so it runs out of CPU long before nginx does.
    let Some(nginx) = Nginx::start_with(&set, tmp.path(), Some(0), 1) else {
        return;
    };
    let _neighbours = (Spinner::on(1), Spinner::on(1));
    let c = capacity(
        &nginx.base_url,
        &set,
        &tmp.path().join("r"),
        &[
            "--slo",
            "p99<=1s,errors<=1%",
            "--from",
            "2000",
            "--precision",
            "0.5",
            "--keep-alive",
        ],
    );
    let sentence = c["sentence"].as_str().unwrap();
    assert!(
        sentence.contains("beyond what this generator can offer")
            || sentence.contains("the generator fell behind"),
        "{sentence}\n{c:#}"
    );
    assert_eq!(c["ending"]["kind"], "generator", "{c:#}");
    assert!(c["capacity_rps"].is_null(), "{c:#}");
}
