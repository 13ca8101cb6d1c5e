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

#[test]
fn regression_52_a_logs_users_at_a_think_scale_say_it_beside_every_number_of_users() {
    let tmp = tempfile::tempdir().unwrap();
    let fileset = tmp.path().join("set");
    tiny_fileset(&fileset);
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fileset.join("manifest.json")).unwrap()).unwrap();
    let files: Vec<String> = manifest["files"]
        .as_array()
        .unwrap()
        .iter()
        .take(3)
        .map(|f| f["path"].as_str().unwrap().to_string())
        .collect();
    // Six hours logged in minute :05 alone (120 requests: enough to tell a sample): ten
    // visitors an hour, two pages 20 s apart.
    let mut log = String::new();
    for hour in 0..6 {
        for client in 0..10u64 {
            for (s, path) in [(client * 3, &files[0]), (client * 3 + 20, &files[1])] {
                log += &format!(
                    "10.0.{hour}.{client} - - [27/Oct/2026:{:02}:05:{s:02} +0000] \"GET /{path} HTTP/1.1\" 200 100 \"-\" \"Mozilla/5.0\"\n",
                    10 + hour
                );
            }
        }
    }
    let log_path = tmp.path().join("sampled.log");
    std::fs::write(&log_path, log).unwrap();
    let out = tmp.path().join("report");
    // An objective no server meets: the search ends at its first users, quickly.
    let run = webscope()
        .args(["lab", "--experiment", "users", "--duration", "1s"])
        .args(["--slo", "page_p95<=1us"])
        .arg("--workload")
        .arg(&log_path)
        .args(["--think-scale", "1/1000"])
        .arg("--out")
        .arg(&out)
        .arg("--fileset")
        .arg(&fileset)
        .arg("--work")
        .arg(tmp.path().join("work"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    let report: serde_json::Value = serde_json::from_slice(
        &std::fs::read(out.join("report.json"))
            .unwrap_or_else(|e| panic!("no report ({e}): {stderr}")),
    )
    .unwrap();
    let users = &report["users"];
    // The kept mean of 20-s thinks at 1/1000 (whatever the search found: a busy machine's
    // steps are said disturbed, at their number of users, with the same words).
    let thinking = users["thinking"].as_str().unwrap_or("");
    assert!(
        thinking.starts_with("thinking as the log's sessions at 1/1000, mean 20"),
        "{users:#}"
    );
    let sentence = users["sentence"].as_str().unwrap();
    // Beside the number of users, whatever the search ended at (a quiet machine's steps all
    // fail this objective: "capacity is below 1 user (thinking ...)"; a busy one's are
    // disturbed at 4).
    let beside = |text: &str| {
        text.contains(&format!(" users ({thinking})"))
            || text.contains(&format!(" 1 user ({thinking})"))
    };
    assert!(beside(sentence), "{sentence}");
    // On the console too, beside the number.
    assert!(beside(&stdout), "{stdout}\n{stderr}");
    // The page says the scale and that a sample's sessions are cut by its minutes.
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("think times at 1/1000 of the log"), "page");
    assert!(
        html.contains("the log is a sample (minute :05 of each hour): its sessions are cut"),
        "page"
    );
}
