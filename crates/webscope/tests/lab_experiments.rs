//! The lab's other experiments end to end, each short: the cumulative techniques and the
//! models against a measured sweep.

mod lab_support;

use lab_support::{tiny_fileset, webscope};
use std::path::Path;

fn lab(dir: &Path, args: &[&str]) -> (serde_json::Value, String) {
    let fileset = dir.join("set");
    tiny_fileset(&fileset);
    let out = dir.join("report");
    let run = webscope()
        .arg("lab")
        .args(args)
        .arg("--out")
        .arg(&out)
        .arg("--fileset")
        .arg(&fileset)
        .arg("--work")
        .arg(dir.join("work"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout).to_string();
    assert!(
        run.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let report = serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
    (report, stdout)
}

#[test]
fn the_techniques_experiment_measures_each_cumulative_step() {
    let tmp = tempfile::tempdir().unwrap();
    let (report, stdout) = lab(
        tmp.path(),
        &[
            "--quick",
            "--experiment",
            "techniques",
            "--duration",
            "400ms",
        ],
    );
    let steps = report["techniques"]["steps"].as_array().unwrap();
    let names: Vec<&str> = steps.iter().map(|s| s["step"].as_str().unwrap()).collect();
    assert_eq!(names.len(), 11, "{names:?}");
    assert_eq!(
        (names[0], names[8], names[9], names[10]),
        ("baseline", "+async-log", "+busy-poll", "+io-uring")
    );
    for s in steps {
        assert!(s["requests_per_s"].as_f64().unwrap() > 0.0, "{s}");
        assert!(s["cpu_us_per_request"].as_f64().unwrap() > 0.0, "{s}");
        // Each step's server was traced after its run (CI installs strace).
        assert!(s["syscalls_per_request"].as_f64().unwrap() > 0.0, "{s}");
    }
    // The paper's techniques exist to save syscalls: the baseline opens, stats, reads and
    // closes each file, all of them on serve from memory.
    let calls = |i: usize| steps[i]["syscalls_per_request"].as_f64().unwrap();
    assert!(
        calls(0) > calls(8) + 2.0,
        "baseline {} vs all on {}",
        calls(0),
        calls(8)
    );
    assert!(stdout.contains("saves the most"), "{stdout}");
    // The access log of each step was written to a file, then removed.
    let run = tmp.path().join("report/techniques/step-0");
    assert!(run.join("run.json").exists() && !run.join("access.log").exists());
    let csv = std::fs::read_to_string(tmp.path().join("report/techniques.csv")).unwrap();
    assert_eq!(csv.lines().count(), 12, "{csv}");
    lab_support::assert_paper_panel(
        &tmp.path().join("report"),
        "techniques",
        "the text on Figure 10",
    );
}

#[test]
fn the_model_experiment_sets_mva_and_the_usl_against_the_sweep() {
    let tmp = tempfile::tempdir().unwrap();
    let (report, stdout) = lab(
        tmp.path(),
        &["--quick", "--experiment", "model", "--duration", "500ms"],
    );
    let model = &report["model"];
    let d = &model["demands_s"];
    // D = U / X of a loopback server: microseconds to a millisecond per request.
    let cpu = d["server_cpu"].as_f64().unwrap();
    assert!(cpu > 1e-7 && cpu < 1e-2, "{model}");
    assert!(d["generator"].as_f64().unwrap() > 0.0, "{model}");
    let ceiling = &model["ceiling_requests_per_s"];
    let (one, four) = (
        ceiling["1"].as_f64().unwrap(),
        ceiling["4"].as_f64().unwrap(),
    );
    assert!(four >= one && one > 0.0, "{model}");
    assert!(model["mva_throughput_error_pct_mean"]
        .as_f64()
        .unwrap()
        .is_finite());
    assert!(stdout.contains("X MVA"), "{stdout}");
    let html = std::fs::read_to_string(tmp.path().join("report/index.html")).unwrap();
    // A legend's name may be wrapped over lines (svg/legend.rs): read the lines together.
    let legend = html
        .split("class=\"legend\">")
        .skip(1)
        .map(|s| s.split('<').next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join(" ");
    assert!(legend.contains("MVA, 2× server CPUs"), "{legend}");
    assert!(html.contains("Prediction errors"));
    lab_support::assert_paper_panel(
        &tmp.path().join("report"),
        "model",
        "the MVA table for 4 CPUs",
    );
}

#[test]
fn the_saturation_experiment_doubles_clients_and_maps_two_classes() {
    let tmp = tempfile::tempdir().unwrap();
    let (report, stdout) = lab(
        tmp.path(),
        &[
            "--quick",
            "--experiment",
            "saturation",
            "--duration",
            "300ms",
        ],
    );
    let sat = &report["saturation"];
    let why = sat["stopped_because"].as_str().unwrap();
    assert!(
        why.contains("cap of 32") || why.contains("stopped doubling") || why.contains("errors"),
        "{sat}"
    );
    assert!(stdout.contains("× previous"), "{stdout}");
    let dir = tmp.path().join("report/saturation");
    let experiment: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("experiment.json")).unwrap()).unwrap();
    let runs: Vec<&str> = experiment["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    // Doubling from 1, then the two-class run.
    assert_eq!(&runs[..3], ["clients-001", "clients-002", "clients-004"]);
    assert_eq!(runs.last(), Some(&"two-class"));
    let samples = std::fs::read_to_string(dir.join("two-class/samples.csv")).unwrap();
    let classes: std::collections::BTreeSet<&str> = samples
        .lines()
        .skip(1)
        .filter_map(|l| l.rsplit(',').next())
        .collect();
    assert_eq!(classes.into_iter().collect::<Vec<_>>(), ["0", "1"]);
    let html = std::fs::read_to_string(tmp.path().join("report/index.html")).unwrap();
    // Re-rendered from its directory, the report is the same bytes (thinned dots included).
    let report_dir = tmp.path().join("report");
    let before = std::fs::read(report_dir.join("index.html")).unwrap();
    let again = webscope().arg("report").arg(&report_dir).output().unwrap();
    assert!(again.status.success());
    assert!(before == std::fs::read(report_dir.join("index.html")).unwrap());
    lab_support::assert_paper_panel(&report_dir, "saturation", "the text on Figure 3");
    for title in [
        "Response-time histograms, as clients double",
        "log frequency",
        "Density map",
    ] {
        assert!(html.contains(title), "{title}");
    }
}

#[test]
fn the_filesize_runs_carry_a_kernel_profile_or_say_why_not() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, _) = lab(
        tmp.path(),
        &["--quick", "--experiment", "filesize", "--duration", "300ms"],
    );
    let html = std::fs::read_to_string(tmp.path().join("report/index.html")).unwrap();
    assert!(
        html.contains("Kernel time by category") || html.contains("No kernel profile: "),
        "neither the profile nor why there is none"
    );
    for chart in [
        "TCP states of the server",
        "Where the CPUs",
        "Response-time histograms, per workload",
    ] {
        assert!(html.contains(chart), "{chart}");
    }
    lab_support::assert_paper_panel(&tmp.path().join("report"), "filesize", "Table 3");
    // With perf installed and allowed (CI installs it and runs as root), the chart is there.
    if std::env::var_os("WEBSCOPE_REQUIRE_PERF").is_some() {
        assert!(html.contains("Kernel time by category"));
    }
}
