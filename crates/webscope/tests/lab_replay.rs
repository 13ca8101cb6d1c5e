//! `webscope lab --experiment replay --workload LOG`, end to end: a bursty access log of a
//! file set (150 requests in its first second, 10 in its second), the set `fileset like
//! --keep-paths` makes of it served by the embedded server, and the log replayed at growing
//! speed-ups, each beside Poisson arrivals of the same requests at the same rate.

mod lab_support;

use lab_support::{tiny_fileset, webscope};

/// A Combined Log Format log of `files` (paths under the set's root, with their sizes):
/// `per_second[i]` requests in second `i`, cycling through the files.
fn bursty_log(files: &[(String, u64)], per_second: &[usize]) -> String {
    let mut log = String::new();
    let mut k = 0;
    for (second, n) in per_second.iter().enumerate() {
        for _ in 0..*n {
            let (path, size) = &files[k % files.len()];
            k += 1;
            log.push_str(&format!(
                "127.0.0.1 - - [25/Nov/2026:10:00:{:02} +0000] \"GET /{path} HTTP/1.1\" 200 {size} \"-\" \"test\"\n",
                second
            ));
        }
    }
    log
}

#[test]
fn the_log_is_replayed_at_growing_speed_ups_beside_poisson_arrivals_of_the_same_rate() {
    let tmp = tempfile::tempdir().unwrap();
    let set = tmp.path().join("set");
    tiny_fileset(&set);
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(set.join("manifest.json")).unwrap()).unwrap();
    let files: Vec<(String, u64)> = manifest["files"]
        .as_array()
        .unwrap()
        .iter()
        .take(20)
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_string(),
                f["size"].as_u64().unwrap(),
            )
        })
        .collect();
    let log = tmp.path().join("access.log");
    std::fs::write(&log, bursty_log(&files, &[150, 10])).unwrap();
    let like = tmp.path().join("like");
    let made = webscope()
        .args(["fileset", "like"])
        .arg(&log)
        .args(["--keep-paths", "--out"])
        .arg(&like)
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let out = tmp.path().join("r");
    let run = webscope()
        .args(["lab", "--experiment", "replay", "--workload"])
        .arg(&log)
        .arg("--fileset")
        .arg(&like)
        .arg("--work")
        .arg(tmp.path().join("work"))
        .arg("--out")
        .arg(&out)
        .args(["--duration", "2s", "--slo", "p99<=20ms,errors<=1%", "-q"])
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
    let r = &report["replay"];
    let steps = r["steps"].as_array().unwrap();
    assert!(!steps.is_empty(), "{r:#}");
    // Pairs: the log's arrivals, then Poisson's, at 1×, 2×, 4× ...
    for (i, pair) in steps.chunks(2).enumerate() {
        let speed = f64::from(1u32 << i);
        assert_eq!(pair[0]["arrivals"], "logged", "{r:#}");
        assert_eq!(pair[0]["speed"].as_f64(), Some(speed), "{r:#}");
        if let Some(poisson) = pair.get(1) {
            assert_eq!(poisson["arrivals"], "poisson", "{r:#}");
            assert_eq!(poisson["speed"].as_f64(), Some(speed));
            // The same requests at the same rate: what the run offered is the same.
            let (a, b) = (
                pair[0]["offered_rps"].as_f64().unwrap(),
                poisson["offered_rps"].as_f64().unwrap(),
            );
            assert!((a - b).abs() <= 0.02 * a, "offered {a} and {b}");
            assert!(
                (a - 80.0 * speed).abs() <= 0.02 * 80.0 * speed,
                "{a} at {speed}×"
            );
        }
    }
    // The log's paths are the set's: at the logged pace every request was answered as logged.
    assert!(steps[0]["achieved_rps"].as_f64().unwrap() > 0.0, "{r:#}");
    let first: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("replay/logged-0001x/run.json")).unwrap())
            .unwrap();
    let load = &first["load"];
    assert_eq!(load["arrivals"], "replay", "{load:#}");
    assert_eq!(
        load["replay"]["status_mismatches"].as_array().map(Vec::len),
        Some(0),
        "{load:#}"
    );
    // How far the log was sped up agrees with the verdicts: the largest logged speed-up that
    // passed, and a stop on the first that did not.
    let passed: Vec<f64> = steps
        .iter()
        .filter(|s| s["arrivals"] == "logged" && s["verdict"] == "pass")
        .map(|s| s["speed"].as_f64().unwrap())
        .collect();
    assert_eq!(
        r["kept_up_to_speed"].as_f64(),
        passed.last().copied(),
        "{r:#}"
    );
    let last_logged = steps
        .iter()
        .rev()
        .find(|s| s["arrivals"] == "logged")
        .unwrap();
    if last_logged["verdict"] != "pass" {
        assert!(r["stopped"].as_str().is_some(), "{r:#}");
    }
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("p99 against offered rate: the log"));
}
