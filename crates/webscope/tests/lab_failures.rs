//! `webscope lab` when things go wrong, end to end: a server killed mid-sweep, a dead target,
//! a wrong root, runs of errors and Ctrl-C, each leaving one clear line and a report that says
//! what happened (or nothing written where nothing was measured).

mod lab_support;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use lab_support::{tiny_fileset, webscope, Served};

#[test]
fn a_server_killed_mid_sweep_leaves_the_partial_report_naming_the_failed_run() {
    let tmp = tempfile::tempdir().unwrap();
    let fileset = tmp.path().join("set");
    tiny_fileset(&fileset);
    let server = Served::start(&fileset);
    let out = tmp.path().join("report");
    let mut lab = webscope()
        .args([
            "lab",
            "--clients",
            "1,2,5",
            "--duration",
            "2s",
            "--target",
            &server.base_url,
        ])
        .arg("--fileset")
        .arg(&fileset)
        .arg("--out")
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let first = out.join("clients/clients-001/run.json");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !first.exists() {
        assert!(Instant::now() < deadline, "the first run never finished");
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(server);
    let deadline = Instant::now() + Duration::from_secs(60);
    while lab.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = lab.kill();
            panic!("the lab did not end after its server died");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let run = lab.wait_with_output().unwrap();
    let line = one_line_error(&run);
    assert!(
        line.contains("a run failed (clients: ") && line.contains("no response at all"),
        "{line}"
    );
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(
        html.contains("A run failed: "),
        "the failed run is named on the page"
    );
    let exp: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("clients/experiment.json")).unwrap())
            .unwrap();
    assert_eq!(exp["complete"], false);
    assert_eq!(
        exp["runs"][0], "clients-001",
        "what was measured before is kept"
    );
}

#[test]
fn a_dead_target_is_one_line_and_exit_1_with_nothing_written() {
    let tmp = tempfile::tempdir().unwrap();
    let fileset = tmp.path().join("set");
    tiny_fileset(&fileset);
    // A port with nothing listening.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = tmp.path().join("report");
    let run = lab_against(&format!("http://127.0.0.1:{port}/"), &fileset, &out, &[]);
    let line = one_line_error(&run);
    assert!(
        line.contains("does not answer") && line.contains(&port.to_string()),
        "{line}"
    );
    assert!(!out.exists(), "nothing may be left behind");
}

#[test]
fn the_preflight_catches_a_wrong_root_and_a_different_copy_of_the_set() {
    let tmp = tempfile::tempdir().unwrap();
    let fileset = tmp.path().join("set");
    tiny_fileset(&fileset);
    let out = tmp.path().join("report");
    // A server whose root is another directory: every file is a 404.
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let wrong_root = Served::start(&empty);
    let line = one_line_error(&lab_against(&wrong_root.base_url, &fileset, &out, &[]));
    assert!(
        line.contains("404 Not Found on") && line.contains("check --base/--target"),
        "{line}"
    );
    assert!(!out.exists());
    // The same names and sizes, made with another seed: only the bytes tell them apart.
    let other = tmp.path().join("other");
    lab_support::tiny_fileset_seed(&other, 99);
    let other_copy = Served::start(&other);
    let line = one_line_error(&lab_against(&other_copy.base_url, &fileset, &out, &[]));
    assert!(line.contains("right size but other bytes"), "{line}");
    assert!(!out.exists());
    // The right set passes, and the report says what the preflight checked.
    let right = Served::start(&fileset);
    let run = lab_against(
        &right.base_url,
        &fileset,
        &out,
        &["--server-pid", &right.pid.to_string()],
    );
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(
        html.contains("compared byte for byte"),
        "the preflight is not said"
    );
    assert!(
        !html.contains("class=\"banner\""),
        "a valid lab has no banner"
    );
}

#[test]
fn runs_of_errors_are_invalid_bannered_and_exit_non_zero() {
    let tmp = tempfile::tempdir().unwrap();
    let fileset = tmp.path().join("set");
    tiny_fileset(&fileset);
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let server = Served::start(&empty);
    let out = tmp.path().join("report");
    // Past the preflight, every response is a 404: fast, and no throughput at all.
    let run = lab_against(&server.base_url, &fileset, &out, &["--no-preflight"]);
    let line = one_line_error(&run);
    assert!(line.contains("no valid run"), "{line}");
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    let banner = html.find("class=\"banner\"").expect("a banner");
    assert!(
        banner < html.find("<section").unwrap(),
        "the banner opens the page"
    );
    assert!(
        html.contains("404 Not Found on 100 % of requests"),
        "the cause is named"
    );
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["validity"]["invalid"].as_array().unwrap().len(), 2);
    for run in report["clients"]["runs"].as_array().unwrap() {
        assert_eq!(run["valid"], false);
        assert_eq!(run["goodput_per_s"], 0.0, "404s are not throughput");
        assert!(run["responses_per_s"].as_f64().unwrap() > 0.0);
    }
    assert!(
        report["clients"]["knee_clients"].is_null(),
        "no knee from invalid runs"
    );
    // Accepting 404 makes the same server's runs valid: the judgement is the user's.
    let out2 = tmp.path().join("report2");
    let run = lab_against(
        &server.base_url,
        &fileset,
        &out2,
        &["--no-preflight", "--expect-status", "2xx,404"],
    );
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    // #47: the engine counts by the lab's expectation too: each run's class rows and
    // intervals have the 404s as errors by default and none when they are expected.
    let class_errors = |out: &std::path::Path| -> Vec<(u64, u64)> {
        (1..=2)
            .map(|k| {
                let path = out.join(format!("clients/clients-{k:03}/run.json"));
                let run: serde_json::Value =
                    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
                let load = &run["load"];
                let errors = load["classes"].as_array().unwrap().iter();
                let errors = errors.map(|c| c["errors"]["bad_status"].as_u64().unwrap());
                (load["requests"].as_u64().unwrap(), errors.sum())
            })
            .collect()
    };
    for (requests, errors) in class_errors(&out) {
        assert!(requests > 0 && errors == requests, "{requests} {errors}");
    }
    for (requests, errors) in class_errors(&out2) {
        assert!(requests > 0 && errors == 0, "{requests} {errors}");
    }
}

#[test]
fn ctrl_c_mid_experiment_leaves_a_valid_partial_report() {
    let tmp = tempfile::tempdir().unwrap();
    let fileset = tmp.path().join("set");
    tiny_fileset(&fileset);
    let out = tmp.path().join("report");
    let mut child = webscope()
        .args([
            "lab",
            "--clients",
            "1,2,3,4,5,6",
            "--duration",
            "1s",
            "--out",
        ])
        .arg(&out)
        .arg("--fileset")
        .arg(&fileset)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the first run is on disk, then interrupt.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !out.join("clients/clients-001/run.json").exists() {
        assert!(Instant::now() < deadline, "no run finished");
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(
        status.code(),
        Some(130),
        "interrupted, as shells expect: {status:?}"
    );
    let lab: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("lab.json")).unwrap()).unwrap();
    assert_eq!(lab["interrupted"], true);
    let exp: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("clients/experiment.json")).unwrap())
            .unwrap();
    let runs = exp["runs"].as_array().unwrap().len();
    assert!((1..6).contains(&runs), "{runs} runs");
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("interrupted"));
}

/// Runs `webscope lab` against `target` on `fileset`, with `extra` flags, into `out`.
fn lab_against(target: &str, fileset: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    webscope()
        .args([
            "lab",
            "--clients",
            "1,2",
            "--duration",
            "1s",
            "--target",
            target,
        ])
        .arg("--fileset")
        .arg(fileset)
        .arg("--out")
        .arg(out)
        .args(extra)
        .output()
        .unwrap()
}

fn one_line_error(run: &std::process::Output) -> String {
    assert_eq!(
        run.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&run.stdout)
    );
    let stderr = String::from_utf8_lossy(&run.stderr);
    let errors: Vec<&str> = stderr.lines().filter(|l| l.contains("error:")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    errors[0].to_string()
}
