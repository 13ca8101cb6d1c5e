//! `webscope compare` on real runs: two runs of one server are not told apart; Apache-style
//! naive serving (`serve --baseline`: open, read, close and a log write per request) is
//! flagged as slower, and a crossed threshold fails the command.

mod lab_support;

use std::path::Path;

use lab_support::{tiny_fileset, webscope, Served};

/// One keep-alive client for 3 s: latency is the server's time per request plus loopback.
fn one_run(server: &Served, set: &Path, out: &Path) {
    let run = webscope()
        .args([
            "lab",
            "--clients",
            "1",
            "--keep-alive",
            "--duration",
            "3s",
            "--target",
        ])
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
    let tmp = tempfile::tempdir().unwrap();
    let set = tmp.path().join("set");
    tiny_fileset(&set);
    let fast = Served::start_with(&set, &[], Some(0));
    let slow = Served::start_with(
        &set,
        &[
            "--baseline",
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
    one_run(&fast, &set, &a);
    one_run(&slow, &set, &c);
    one_run(&fast, &set, &b);
    let compare = |x: &Path, y: &Path, json: &Path| {
        webscope()
            .arg("compare")
            .arg(x)
            .arg(y)
            .args(["--threshold", "p50<+10%"])
            .arg("--json")
            .arg(json)
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
        stderr.contains("1 threshold crossed: 1 clients: p50<+10%"),
        "{stderr}"
    );
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(tmp.path().join("slower.json")).unwrap()).unwrap();
    let p50 = json[0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == "p50")
        .unwrap();
    assert_eq!(p50["significant"], true, "{p50}");
    assert_eq!(p50["worse"], true, "{p50}");
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
