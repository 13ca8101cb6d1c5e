//! `webscope compare` on real runs: two runs of one server are not told apart; the naive
//! server of Hu et al.'s baseline (`serve --baseline --hostname-lookups`: open, read, close, a
//! reverse lookup and a log write per request) is flagged as slower, and a crossed threshold
//! fails the command.

mod lab_support;

use std::path::Path;

use lab_support::{tiny_fileset, webscope, Served};

const LAB: &[&str] = &[
    "lab",
    "--clients",
    "1",
    "--keep-alive",
    "--duration",
    "2s",
    "--repeat",
    "4",
];

/// The timed tests take turns: two labs at once would each measure the other's load.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// One keep-alive client, four runs of 2 s taken round (a rank test over repeats, which a
/// single run's few intervals cannot stand in for): latency is the server's time per request
/// plus loopback.
fn one_run(server: &Served, set: &Path, out: &Path) {
    let run = webscope()
        .args(LAB)
        .arg("--target")
        .arg(&server.base_url)
        .arg("--fileset")
        .arg(set)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
}

#[test]
fn a_slower_server_is_flagged_and_the_same_one_is_not() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let set = tmp.path().join("set");
    tiny_fileset(&set);
    let fast = Served::start_with(&set, &[], Some(0));
    let slow = Served::start_with(
        &set,
        &[
            "--baseline",
            "--hostname-lookups",
            "--access-log",
            tmp.path().join("access.log").to_str().unwrap(),
        ],
        Some(0),
    );
    let (a, b, c) = (
        tmp.path().join("a"),
        tmp.path().join("b"),
        tmp.path().join("c"),
    );
    // The two runs of one server back to back: the machine drifts over minutes.
    one_run(&fast, &set, &a);
    one_run(&fast, &set, &b);
    one_run(&slow, &set, &c);
    let compare = |x: &Path, y: &Path, json: &Path| {
        webscope()
            .arg("compare")
            .arg(x)
            .arg(y)
            // Server CPU per request: the figure that survives this machine's noise (latency
            // of one client moves by tens of per cent between minutes, with the host's wake-ups).
            .args(["--threshold", "cpu_us<+30%"])
            .arg("--json")
            .arg(json)
            .arg("--html")
            .arg(json.with_extension("html"))
            .output()
            .unwrap()
    };
    let same = compare(&a, &b, &tmp.path().join("same.json"));
    assert!(
        same.status.success(),
        "two runs of one server: {}{}",
        String::from_utf8_lossy(&same.stdout),
        String::from_utf8_lossy(&same.stderr)
    );
    let slower = compare(&a, &c, &tmp.path().join("slower.json"));
    let stdout = String::from_utf8_lossy(&slower.stdout);
    assert_eq!(slower.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("CROSSED"), "{stdout}");
    let stderr = String::from_utf8_lossy(&slower.stderr);
    assert!(
        stderr.contains("1 threshold crossed: 1 client: cpu_us<+30%"),
        "{stderr}"
    );
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(tmp.path().join("slower.json")).unwrap()).unwrap();
    let cpu = json[0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == "cpu_us")
        .unwrap();
    assert_eq!(cpu["significant"], true, "{cpu}");
    assert_eq!(cpu["worse"], true, "{cpu}");
    assert_eq!(cpu["test"], "rank test, 4 and 4 runs", "{cpu}");
    // The page: the table, both distributions overlaid, and their difference.
    let html = std::fs::read_to_string(tmp.path().join("slower.html")).unwrap();
    for part in [
        "Response-time histograms, 1 client",
        "Response-time histograms, 1 client, log frequency",
        "Candidate minus baseline, per bin, 1 client",
        "Density maps, candidate minus baseline, 1 client",
        "yes, worse",
    ] {
        assert!(html.contains(part), "{part}");
    }
}

#[test]
fn bad_inputs_are_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let out = webscope()
        .arg("compare")
        .arg(tmp.path())
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("not a lab report, a lab run directory or a load --json file"));
    let out = webscope()
        .args(["compare", "a", "b", "--threshold", "p99=5%"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("e.g. p99<+5%"));
}

#[test]
fn a_lab_against_its_baseline_says_what_got_worse() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let set = tmp.path().join("set");
    tiny_fileset(&set);
    let fast = Served::start_with(&set, &[], Some(0));
    let slow = Served::start_with(
        &set,
        &[
            "--baseline",
            "--hostname-lookups",
            "--access-log",
            tmp.path().join("access.log").to_str().unwrap(),
        ],
        Some(0),
    );
    let before = tmp.path().join("before");
    one_run(&fast, &set, &before);
    let after = tmp.path().join("after");
    let run = webscope()
        .args(LAB)
        .arg("--target")
        .arg(&slow.base_url)
        .arg("--fileset")
        .arg(&set)
        .arg("--out")
        .arg(&after)
        .arg("--baseline")
        .arg(&before)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let html = std::fs::read_to_string(after.join("index.html")).unwrap();
    assert!(html.contains("Against the baseline ("), "no section");
    assert!(
        html.contains("Significantly worse than the baseline: "),
        "the slower server is not flagged"
    );
    assert!(html.contains("Response-time histograms, baseline and this lab at 1 client"));
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(after.join("report.json")).unwrap()).unwrap();
    let rows = report["baseline"]["comparisons"][0]["rows"]
        .as_array()
        .unwrap();
    let cpu = rows.iter().find(|r| r["metric"] == "cpu_us").unwrap();
    assert_eq!(
        (cpu["significant"].as_bool(), cpu["worse"].as_bool()),
        (Some(true), Some(true)),
        "{cpu}"
    );
    // A baseline that is not a report is one line before anything runs.
    let bad = webscope()
        .args(["lab", "--baseline"])
        .arg(tmp.path().join("nowhere"))
        .arg("--out")
        .arg(tmp.path().join("x"))
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("is not a lab report"));
    assert!(!tmp.path().join("x").exists());
}
