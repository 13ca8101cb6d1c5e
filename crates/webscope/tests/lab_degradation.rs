//! `webscope lab --experiment degradation` end to end, short: every set under every policy on
//! the embedded server's services, the page, the table, the CSV and the targets' verdicts.

mod lab_support;

use lab_support::{tiny_fileset, webscope};

#[test]
fn the_degradation_experiment_runs_every_policy_and_tabulates_them() {
    let tmp = tempfile::tempdir().unwrap();
    let fileset = tmp.path().join("set");
    tiny_fileset(&fileset);
    let out = tmp.path().join("report");
    let run = webscope()
        .args([
            "lab",
            "--quick",
            "--experiment",
            "degradation",
            "--duration",
            "700ms",
            "--repeat",
            "2",
            "--out",
        ])
        .arg(&out)
        .arg("--fileset")
        .arg(&fileset)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    // Two sets x four policies x heavy 0 and 40, twice.
    let experiment: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("degradation/experiment.json")).unwrap())
            .unwrap();
    let runs = experiment["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 32, "{experiment}");
    assert!(
        runs.iter().any(|r| r == "set2-priority-heavy-040-r2"),
        "{experiment}"
    );
    // The heaviest fair run: three groups' worth of classes, and the server's own split of
    // waiting and running per service.
    let record: serde_json::Value = serde_json::from_slice(
        &std::fs::read(out.join("degradation/set2-fair-heavy-040/run.json")).unwrap(),
    )
    .unwrap();
    let classes: Vec<&str> = record["load"]["classes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(classes, ["light", "middle", "heavy"]);
    let services = record["server"]["services"].as_array().unwrap();
    let light = services.iter().find(|s| s["service"] == "light").unwrap();
    assert!(light["completed"].as_f64().unwrap() > 0.0, "{light}");
    assert!(light["running_ms"].as_f64().unwrap() > 0.0, "{light}");
    // Under threads a job runs whole: one slice per request, as the server counts them.
    let threads: serde_json::Value = serde_json::from_slice(
        &std::fs::read(out.join("degradation/set1-threads-heavy-000/run.json")).unwrap(),
    )
    .unwrap();
    let light = &threads["server"]["services"][0];
    assert_eq!(light["service"], "light");
    assert_eq!(light["slices"].as_f64(), Some(1.0), "{light}");
    // The page, the CSV, the summary and report.json all carry the table and the verdicts.
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("the median of 2 runs"));
    for policy in ["threads", "fair", "priority", "admission"] {
        assert!(html.contains(&format!("set1 under {policy}")), "{policy}");
    }
    let csv = std::fs::read_to_string(out.join("degradation.csv")).unwrap();
    assert!(csv.lines().count() > 16, "{csv}");
    assert!(stdout.contains("kept %"), "{stdout}");
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
    let targets = report["degradation"]["targets"].as_array().unwrap();
    assert!(
        targets.iter().any(|t| t["target"]
            .as_str()
            .unwrap()
            .starts_with("fair, set 1: light keeps")),
        "{report}"
    );
    lab_support::assert_paper_panel(&out, "degradation", "workload set 1, the text on Figure 2");
    let set1 = report["degradation"]["sets"]["set1"].as_array().unwrap();
    assert!(set1
        .iter()
        .any(|r| r["policy"] == "admission" && r["service"] == "heavy"));
}
