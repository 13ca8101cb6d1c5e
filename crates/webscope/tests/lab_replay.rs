//! `webscope lab --experiment replay --workload LOG`, end to end: a bursty access log of a
//! file set (150 requests in its first second, 10 in its second), the set `fileset like
//! --keep-paths` makes of it served by the embedded server, and the log replayed at growing
//! speed-ups, each beside Poisson arrivals of the same requests at the same rate. And logs of
//! other shapes (issue 52): a log sampled by the clock is played on its sampled minutes back
//! to back, and a log too sparse for any run says why and what to give instead.

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

/// The first `n` files of the set made in `set`: paths under its root, with their sizes.
fn set_files(set: &std::path::Path, n: usize) -> Vec<(String, u64)> {
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(set.join("manifest.json")).unwrap()).unwrap();
    manifest["files"]
        .as_array()
        .unwrap()
        .iter()
        .take(n)
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_string(),
                f["size"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// A Combined Log Format line of `files[k]` at `unix` seconds.
fn line_at(files: &[(String, u64)], k: usize, unix: u64) -> String {
    let (path, size) = &files[k % files.len()];
    let when =
        httpdate::HttpDate::from(std::time::UNIX_EPOCH + std::time::Duration::from_secs(unix));
    // "Wed, 25 Nov 2026 10:00:05 GMT" → "25/Nov/2026:10:00:05 +0000".
    let w = when.to_string();
    let f: Vec<&str> = w.split(' ').collect();
    format!(
        "127.0.0.1 - - [{}/{}/{}:{} +0000] \"GET /{path} HTTP/1.1\" 200 {size} \"-\" \"test\"\n",
        f[1], f[2], f[3], f[4]
    )
}

/// Runs the replay experiment on `log`, the set `like` serving it: its exit status, stderr,
/// report.json's `replay` and the page.
fn replay_lab(
    tmp: &std::path::Path,
    log: &std::path::Path,
    like: &std::path::Path,
) -> (bool, String, serde_json::Value, String) {
    let out = tmp.join("r");
    let run = webscope()
        .args(["lab", "--experiment", "replay", "--workload"])
        .arg(log)
        .arg("--fileset")
        .arg(like)
        .arg("--work")
        .arg(tmp.join("work"))
        .arg("--out")
        .arg(&out)
        .args(["--duration", "1s", "--slo", "p99<=50ms,errors<=1%", "-q"])
        .output()
        .unwrap();
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap_or_default())
            .unwrap_or_default();
    (
        run.status.success(),
        String::from_utf8_lossy(&run.stderr).into_owned(),
        report["replay"].clone(),
        std::fs::read_to_string(out.join("index.html")).unwrap_or_default(),
    )
}

/// `fileset like --keep-paths` of `log` into `tmp/like`.
fn like_set(tmp: &std::path::Path, log: &std::path::Path) -> std::path::PathBuf {
    let like = tmp.join("like");
    let made = webscope()
        .args(["fileset", "like"])
        .arg(log)
        .args(["--keep-paths", "--out"])
        .arg(&like)
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    like
}

#[test]
fn regression_52_a_log_sampled_by_the_clock_is_replayed_on_its_minutes_back_to_back() {
    let tmp = tempfile::tempdir().unwrap();
    let set = tmp.path().join("set");
    tiny_fileset(&set);
    let files = set_files(&set, 20);
    // Six hours of a site logged in minute :05 alone, a request a second, and one stray
    // request outside it (under 1 %): `characterize` calls it a sample.
    let t0 = 1_789_999_200; // 2026-09-21T14:00:00Z, a whole hour
    let mut log = String::new();
    let mut k = 0;
    for hour in 0..6 {
        for s in 0..60 {
            log += &line_at(&files, k, t0 + hour * 3600 + 300 + s);
            k += 1;
        }
        if hour == 2 {
            log += &line_at(&files, k, t0 + hour * 3600 + 1800);
            k += 1;
        }
    }
    let path = tmp.path().join("sampled.log");
    std::fs::write(&path, log).unwrap();
    let like = like_set(tmp.path(), &path);
    let (ok, stderr, r, html) = replay_lab(tmp.path(), &path, &like);
    assert!(ok, "{stderr}");
    let steps = r["steps"].as_array().unwrap();
    // Before: "no request of the log falls in the run's windows", and no run.
    assert!(!steps.is_empty(), "{r:#}");
    // 360 s of traffic at 1 req/s: a 1-s run holds 20 requests from 32×, the first run.
    assert_eq!(steps[0]["speed"].as_f64(), Some(32.0), "{r:#}");
    assert!(
        html.contains("Not run: the speed-ups below 32×: at 1× a 1-s run"),
        "{html}"
    );
    for s in steps {
        let part = s["part"].as_str().unwrap();
        assert!(
            part.contains("minute :05 of each hour") && part.contains("removed"),
            "{part}"
        );
        // The rate within the minutes times the speed-up, not the span's mean (60 times
        // lower); a whole log looped offers its rate too.
        let (speed, offered) = (
            s["speed"].as_f64().unwrap(),
            s["offered_rps"].as_f64().unwrap(),
        );
        assert!(
            (offered / speed - 1.0).abs() < 0.25,
            "{offered} req/s at {speed}×: {s:#}"
        );
        assert!(s["requests"].as_u64().unwrap() >= 20, "{s:#}");
    }
    assert!(html.contains("played back to back"), "page says it");
}

#[test]
fn a_log_too_sparse_for_any_run_says_why_and_what_to_give() {
    let tmp = tempfile::tempdir().unwrap();
    let set = tmp.path().join("set");
    tiny_fileset(&set);
    let files = set_files(&set, 5);
    // Three requests over 3 d 11 h.
    let t0 = 1_789_999_200;
    let log: String = [0, 86_400 + 7, 3 * 86_400 + 11 * 3600 - 1]
        .iter()
        .enumerate()
        .map(|(k, &at)| line_at(&files, k, t0 + at))
        .collect();
    let path = tmp.path().join("sparse.log");
    std::fs::write(&path, log).unwrap();
    let like = like_set(tmp.path(), &path);
    let (ok, stderr, _, html) = replay_lab(tmp.path(), &path, &like);
    // A measured step (its windows caught a request) or a failure that says why and how.
    if ok {
        assert!(html.contains("logged-1024x"), "{html}");
        return;
    }
    assert!(
        stderr.contains("no request of the log falls in the run's"),
        "{stderr}"
    );
    assert!(stderr.contains("give a longer --duration"), "{stderr}");
    assert!(
        stderr.contains("--speed 5000 replays it in about a minute"),
        "{stderr}"
    );
    assert!(html.contains("give a longer --duration"), "{html}");
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
