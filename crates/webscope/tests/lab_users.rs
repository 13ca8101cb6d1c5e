//! `webscope lab --experiment users` end to end on the embedded server: a search over the
//! number of users that ends with a capacity in users (or, on a machine too busy, refuses,
//! exit 4), MVA's prediction beside it, the response time law on every step, and the log's
//! own sessions with --workload.

mod lab_support;

use lab_support::{tiny_fileset, webscope};
use std::path::Path;

/// Runs the users experiment; returns its exit code, its report.json entry and its stderr.
fn users_lab(dir: &Path, extra: &[&str]) -> (Option<i32>, serde_json::Value, String) {
    let fileset = dir.join("set");
    tiny_fileset(&fileset);
    let out = dir.join("report");
    let run = webscope()
        .args([
            "lab",
            "--quick",
            "--experiment",
            "users",
            "--duration",
            "1s",
        ])
        .arg("--out")
        .arg(&out)
        .arg("--fileset")
        .arg(&fileset)
        .arg("--work")
        .arg(dir.join("work"))
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    let report: serde_json::Value = serde_json::from_slice(
        &std::fs::read(out.join("report.json"))
            .unwrap_or_else(|e| panic!("no report ({e}): {stderr}")),
    )
    .unwrap();
    (run.status.code(), report["users"].clone(), stderr)
}

#[test]
fn the_users_search_finds_a_capacity_in_users_with_mvas_beside_it() {
    let tmp = tempfile::tempdir().unwrap();
    // A debug build's generated page alone takes a few ms of CPU: an objective a few pages
    // deep, so that the knee is at a handful of users, not at one.
    let (code, users, stderr) = users_lab(tmp.path(), &["--slo", "page_p95<=50ms,errors<=1%"]);
    let steps = users["steps"].as_array().unwrap();
    assert!(!steps.is_empty(), "{users:#}");
    if code == Some(4) {
        // The machine stayed disturbed: no capacity, never a number.
        assert_eq!(users["ending"]["kind"], "disturbed", "{users:#}");
        assert!(users["capacity_users"].is_null(), "{users:#}");
        lab_support::unchecked(&format!("the machine stayed disturbed: {}", stderr.trim()));
        return;
    }
    assert_eq!(code, Some(0), "{stderr}");
    // Every step: users thought as told (the built-in model's mean, 26 ms, kept within a
    // few ms), and the response time law's R beside the measured page load.
    for s in steps {
        let think = s["think_s"].as_f64().unwrap();
        assert!((0.015..0.045).contains(&think), "{s}");
        assert!(s["page_views_per_s"].as_f64().unwrap() > 0.0, "{s}");
        assert!(s["law_response_s"].is_f64(), "{s}");
    }
    let kind = users["ending"]["kind"].as_str().unwrap_or("");
    // A quick search ends on a capacity, or on the generator (a debug build's generator may
    // fall behind the embedded server first): either way it says so, with MVA beside it.
    assert!(["found", "generator"].contains(&kind), "{users:#}");
    if kind == "found" {
        let n = users["capacity_users"].as_f64().unwrap();
        assert!(n >= 1.0, "{users:#}");
        // The users it found passed the objective, the ones above failed it.
        let fails_at = users["ending"]["fails_at_users"].as_f64().unwrap();
        assert!(fails_at > n, "{users:#}");
    }
    // MVA beside it: from D, the kept Z and the page's time outside the server.
    assert!(prediction_in(&users).is_some(), "{users:#}");
    let prediction = prediction_in(&users).unwrap();
    assert!(
        prediction["demand_s"].as_f64().unwrap() > 0.0,
        "{prediction:#}"
    );
    assert!(
        (prediction["think_s"].as_f64().unwrap() - 0.026).abs() < 0.01,
        "{prediction:#}"
    );
    assert!(!prediction["curve"].as_array().unwrap().is_empty());
    let sentence = users["sentence"].as_str().unwrap();
    assert!(sentence.starts_with("Measured: "), "{sentence}");
    assert!(sentence.contains("MVA from D = "), "{sentence}");
    // The steps are read for two states at one N as the capacity page reads its probes.
    assert!(users["tipped"].is_array(), "{users:#}");
}

/// The report's MVA prediction, when it made one.
fn prediction_in(users: &serde_json::Value) -> Option<&serde_json::Value> {
    Some(&users["prediction"]).filter(|p| p.is_object())
}
