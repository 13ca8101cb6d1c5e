//! `webscope lab` and `webscope report` end to end, bounded: a tiny file set, two short runs,
//! the embedded server on 127.0.0.1.

mod lab_support;

use std::path::Path;
use std::process::{Command, Stdio};

use lab_support::{chromium, tiny_fileset, webscope};

#[test]
fn a_short_lab_writes_a_report_that_re_renders_byte_for_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let fileset = tmp.path().join("set");
    tiny_fileset(&fileset);
    let out = tmp.path().join("report");
    let run = webscope()
        .args(["lab", "--clients", "1,2", "--duration", "1s", "--out"])
        .arg(&out)
        .arg("--fileset")
        .arg(&fileset)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{}\n{}",
        stdout,
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(
        stdout.contains("clients sweep") && stdout.contains("report: "),
        "{stdout}"
    );
    for file in [
        "index.html",
        "report.json",
        "clients.csv",
        "lab.json",
        "clients/experiment.json",
    ] {
        assert!(out.join(file).exists(), "{file} missing");
    }
    for run in ["clients-001", "clients-002"] {
        let record: serde_json::Value = serde_json::from_slice(
            &std::fs::read(out.join("clients").join(run).join("run.json")).unwrap(),
        )
        .unwrap();
        assert!(
            record["load"]["requests"].as_u64().unwrap() > 0,
            "{run}: no requests"
        );
        assert!(
            record["server"]["requests"].as_f64().unwrap() > 0.0,
            "{run}: no server figures"
        );
        assert!(out.join("clients").join(run).join("load.hlog").exists());
    }
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.matches("<svg").count() >= 3, "charts missing");
    assert!(html.contains("Goodput vs clients"));
    lab_support::assert_paper_panel(&out, "clients", "the text on Figure 1");
    // The operational laws apply to a run directory as it stands.
    let laws = webscope()
        .args(["model", "laws", "--json", "--run"])
        .arg(out.join("clients/clients-002"))
        .output()
        .unwrap();
    assert!(
        laws.status.success(),
        "{}",
        String::from_utf8_lossy(&laws.stderr)
    );
    let laws: serde_json::Value = serde_json::from_slice(&laws.stdout).unwrap();
    let run: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("clients/clients-002/run.json")).unwrap())
            .unwrap();
    assert_eq!(laws["throughput"], run["load"]["requests_per_s"], "{laws}");
    let first = std::fs::read(out.join("index.html")).unwrap();
    let first_json = std::fs::read(out.join("report.json")).unwrap();
    let again = webscope().arg("report").arg(&out).output().unwrap();
    assert!(again.status.success());
    assert_eq!(
        std::fs::read(out.join("index.html")).unwrap(),
        first,
        "re-rendered index.html differs"
    );
    assert_eq!(std::fs::read(out.join("report.json")).unwrap(), first_json);
}

#[test]
fn bad_requests_get_one_clear_line() {
    let tmp = tempfile::tempdir().unwrap();
    let out = webscope()
        .args(["lab", "--experiment", "warp"])
        .arg("--out")
        .arg(tmp.path().join("r"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unknown experiment") && err.contains("clients"),
        "{err}"
    );
    let out = webscope()
        .args(["report"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a webscope lab directory"));
    // A directory that holds something else is not overwritten.
    std::fs::write(tmp.path().join("precious.txt"), b"keep me").unwrap();
    let out = webscope()
        .args(["lab", "--out"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a webscope report"));
    assert!(tmp.path().join("precious.txt").exists());
    for (flags, says) in [
        (["--expect-status", "6xx"], "--expect-status"),
        (
            ["--max-error-pct", "200"],
            "--max-error-pct 200 is out of range",
        ),
    ] {
        let out = webscope()
            .arg("lab")
            .args(flags)
            .arg("--out")
            .arg(tmp.path().join("r"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says) && err.contains("e.g."), "{err}");
        assert!(!tmp.path().join("r").exists());
    }
}

#[test]
fn repeats_go_round_the_sweep_and_the_page_shows_medians_with_their_spread() {
    let tmp = tempfile::tempdir().unwrap();
    let fileset = tmp.path().join("set");
    tiny_fileset(&fileset);
    let out = tmp.path().join("report");
    let run = webscope()
        .args([
            "lab",
            "--clients",
            "1,2",
            "--duration",
            "1s",
            "--repeat",
            "2",
            "--out",
        ])
        .arg(&out)
        .arg("--fileset")
        .arg(&fileset)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let exp: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("clients/experiment.json")).unwrap())
            .unwrap();
    let names: Vec<&str> = exp["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "clients-001",
            "clients-002",
            "clients-001-r2",
            "clients-002-r2"
        ],
        "round the sweep"
    );
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
    let runs = report["clients"]["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "one point per client count");
    for p in runs {
        assert_eq!(p["repeats"], 2);
        let (lo, hi) = (
            p["goodput_min"].as_f64().unwrap(),
            p["goodput_max"].as_f64().unwrap(),
        );
        let median = p["goodput_per_s"].as_f64().unwrap();
        assert!(lo <= median && median <= hi, "{p}");
    }
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("median of 2") && html.contains("median run of 2 valid repeats"));
    let csv = std::fs::read_to_string(out.join("clients.csv")).unwrap();
    assert!(
        csv.lines()
            .next()
            .unwrap()
            .contains("repeats,goodput min-max"),
        "{csv}"
    );
}

fn headless(browser: &Path, profile: &Path) -> Command {
    let mut cmd = Command::new(browser);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .stdin(Stdio::null());
    cmd
}

#[test]
fn the_report_loads_in_a_real_browser_with_its_charts() {
    let Some(browser) = chromium() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let fileset = tmp.path().join("set");
    tiny_fileset(&fileset);
    let out = tmp.path().join("report");
    let run = webscope()
        .args(["lab", "--clients", "1,2,3", "--duration", "1s", "--out"])
        .arg(&out)
        .arg("--fileset")
        .arg(&fileset)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let url = format!("file://{}", out.join("index.html").display());
    // The DOM as the browser built it: the page parsed, the charts are SVG elements.
    let dom = headless(&browser, &tmp.path().join("profile1"))
        .arg("--dump-dom")
        .arg(&url)
        .output()
        .unwrap();
    assert!(
        dom.status.success(),
        "{}",
        String::from_utf8_lossy(&dom.stderr)
    );
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert!(dom.contains("<title>webscope lab report</title>"), "{dom}");
    assert!(
        dom.matches("<svg").count() >= 4,
        "charts missing from the DOM"
    );
    assert!(dom.contains("Goodput vs clients") && dom.contains("Per run"));
    // And a picture of it, large enough to hold the charts.
    let shot = tmp.path().join("report.png");
    let status = headless(&browser, &tmp.path().join("profile2"))
        .arg(format!("--screenshot={}", shot.display()))
        .arg("--window-size=1000,2400")
        .arg(&url)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let png = std::fs::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG"), "not a PNG");
    assert!(
        png.len() > 30_000,
        "a blank page is small: {} bytes",
        png.len()
    );
}

#[test]
fn the_filesize_experiment_reads_the_fixed_cost_off_the_size_line() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("report");
    let run = webscope()
        .args([
            "lab",
            "--quick",
            "--experiment",
            "filesize",
            "--duration",
            "1s",
            // The size line needs quiet runs: perf's post-processing beside the other tests'
            // labs would blur it (the profile has its own test).
            "--no-profile",
            "--work",
        ])
        .arg(tmp.path().join("work"))
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(stdout.contains("fixed cost per connection"), "{stdout}");
    let csv = std::fs::read_to_string(out.join("filesize.csv")).unwrap();
    assert_eq!(csv.lines().count(), 4, "header and three workloads: {csv}");
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
    // The line's intercept is the fixed cost per connection, and it is what the experiment
    // reads. Its slope (the cost per KiB) is not asserted: A/4 .. A*4 differ by tens of
    // microseconds per request, less than a 1-s run's noise here (with the machine busy it
    // came out negative 3 runs in 3, on a quiet one positive), so its sign is not a fact.
    let fixed = report["filesize"]["fixed_cost_ms"].as_f64().unwrap();
    let per_kb = report["filesize"]["per_kb_ms"].as_f64().unwrap();
    assert!(fixed > 0.0 && per_kb.is_finite(), "{report}");
    // Mean sizes grow with the scale (WebStone A/4, A, A*4).
    let sizes: Vec<f64> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(1).unwrap().parse().unwrap())
        .collect();
    assert!(sizes.windows(2).all(|w| w[0] < w[1]), "{sizes:?}");
}

#[test]
fn quiet_prints_only_the_reports_path() {
    let tmp = tempfile::tempdir().unwrap();
    let fileset = tmp.path().join("set");
    tiny_fileset(&fileset);
    let out = tmp.path().join("report");
    let run = webscope()
        .args([
            "lab",
            "-q",
            "--clients",
            "1",
            "--duration",
            "500ms",
            "--out",
        ])
        .arg(&out)
        .arg("--fileset")
        .arg(&fileset)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert_eq!(
        stdout.trim(),
        format!("report: {}", out.join("index.html").display())
    );
    assert!(
        run.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
}

/// Lengths and experiment names are refused before anything is said or written: no "report
/// to ..." line, no report folder.
#[test]
fn bad_lengths_and_names_are_refused_up_front() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("report");
    for (args, code, said) in [
        (&["--duration", "0s"][..], 2, "0s is zero"),
        (&["--duration", "-3s"][..], 2, "-3s is negative"),
        (
            &["--experiment", "nope"][..],
            1,
            "unknown experiment \"nope\"",
        ),
    ] {
        let run = webscope()
            .arg("lab")
            .args(args)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(code), "{args:?}: {stderr}");
        assert!(stderr.contains(said), "{args:?}: {stderr}");
        assert!(!stderr.contains("report to"), "{args:?}: {stderr}");
        assert!(!out.exists(), "{args:?}: a report folder was made");
    }
}
