//! `webscope load` against the real `webscope serve`: file-set mixes with per-class figures,
//! keep-alive and close, the interval log, bounded memory, and Ctrl-C keeping the results.

mod load_support;

use std::io::Read;
use std::process::Stdio;
use std::time::{Duration, Instant};

use load_support::{f, fileset, load_json, u, wait_bounded, webscope, Behavior, Serve, TestServer};

const LIMIT: Duration = Duration::from_secs(20);

#[test]
fn a_fileset_mix_is_reported_per_class() {
    let tmp = tempfile::tempdir().unwrap();
    let set = tmp.path().join("wsA4");
    fileset(&set, &["webstone-a", "--scale", "0.25"]);
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(set.join("manifest.json")).unwrap()).unwrap();
    let server = Serve::start(&set);
    let set_arg = set.to_str().unwrap();
    for mode in [&[][..], &["--close"][..]] {
        let mut args = vec!["--fileset", set_arg, "--base"];
        let base = server.base();
        args.push(&base);
        args.extend_from_slice(&["-c", "4", "-t", "2", "-d", "1500ms"]);
        args.extend_from_slice(mode);
        let (r, out) = load_json(&args, LIMIT);
        let total = u(&r, "requests");
        assert!(total > 500, "{mode:?}: {r}");
        assert_eq!(u(&r["errors"], "total"), 0, "{mode:?}: {}", r["errors"]);
        let classes = r["classes"].as_array().unwrap();
        let names: Vec<&str> = classes
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["html", "image", "sound", "video"]);
        let summed: u64 = classes.iter().map(|c| u(c, "requests")).sum();
        assert_eq!(summed, total);
        for (class, expected) in classes.iter().zip(manifest["classes"].as_array().unwrap()) {
            // Shares follow the manifest's probabilities (binomial noise allowed).
            let share = u(class, "requests") as f64 / total as f64;
            let p = f(expected, "probability");
            let sigma = (p * (1.0 - p) / total as f64).sqrt();
            assert!(
                (share - p).abs() < 5.0 * sigma + 0.005,
                "{}: {share} vs {p}",
                class["name"]
            );
            // Each class's bytes per response sit within its files' sizes (plus a head).
            let requests = u(class, "requests");
            if requests > 0 {
                let per = u(class, "bytes") as f64 / requests as f64;
                let sizes: Vec<u64> = manifest["files"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|file| file["class"] == class["name"])
                    .map(|file| u(file, "size"))
                    .collect();
                let (lo, hi) = (*sizes.iter().min().unwrap(), *sizes.iter().max().unwrap());
                assert!(
                    per >= lo as f64 && per <= hi as f64 + 400.0,
                    "{}: {per}",
                    class["name"]
                );
            }
        }
        assert!(String::from_utf8_lossy(&out.stdout).contains("image"));
    }
}

#[test]
fn the_interval_log_is_in_hdrhistogram_format() {
    let tmp = tempfile::tempdir().unwrap();
    let set = tmp.path().join("spec");
    fileset(&set, &["specweb96", "--ops", "1"]);
    let server = Serve::start(&set);
    let hlog = tmp.path().join("run.hlog");
    let base = server.base();
    let (r, _) = load_json(
        &[
            "--fileset",
            set.to_str().unwrap(),
            "--base",
            &base,
            "-c",
            "2",
            "-t",
            "1",
            "-d",
            "1s",
            "--interval",
            "250ms",
            "--hlog",
            hlog.to_str().unwrap(),
        ],
        LIMIT,
    );
    let text = std::fs::read_to_string(&hlog).unwrap();
    assert!(text.contains("#[StartTime: "), "{text}");
    assert!(text.contains("#[BaseTime: "));
    assert!(text.contains(
        "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\""
    ));
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with('"'))
        .collect();
    let intervals = r["intervals"].as_array().unwrap().len();
    assert!((4..=5).contains(&intervals), "{intervals}");
    // One untagged line per interval and one per class (4 SPECweb96 classes).
    assert_eq!(lines.len(), intervals * 5, "{text}");
    for class in ["class0", "class1", "class2", "class3"] {
        assert_eq!(
            lines
                .iter()
                .filter(|l| l.starts_with(&format!("Tag={class},")))
                .count(),
            intervals
        );
    }
    // start,length,max,histogram: the histogram is base64 of a V2 compressed HdrHistogram.
    let untagged: Vec<&&str> = lines.iter().filter(|l| !l.starts_with("Tag=")).collect();
    for (i, line) in untagged.iter().enumerate() {
        let fields: Vec<&str> = line.split(',').collect();
        assert_eq!(fields.len(), 4, "{line}");
        let start: f64 = fields[0].parse().unwrap();
        assert!((start - i as f64 * 0.25).abs() < 0.01, "{line}");
        assert!(
            fields[3].starts_with("HISTFAA"),
            "V2 compressed cookie: {line}"
        );
    }
}

#[test]
fn memory_stays_bounded_on_a_long_run() {
    let server = TestServer::start(Behavior::Ok { body: 64 });
    let child = webscope()
        .args([
            "load",
            &server.url("/"),
            "-c",
            "8",
            "-t",
            "2",
            "-d",
            "3s",
            "--quiet",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut peak_kib = 0u64;
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        if let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) {
            for line in status.lines() {
                if let Some(rest) = line.strip_prefix("VmHWM:") {
                    let kib: u64 = rest
                        .trim()
                        .trim_end_matches("kB")
                        .trim()
                        .parse()
                        .unwrap_or(0);
                    peak_kib = peak_kib.max(kib);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = wait_bounded(child, LIMIT);
    assert!(out.status.success(), "{out:?}");
    let summary = String::from_utf8_lossy(&out.stdout);
    let requests: u64 = summary
        .lines()
        .find(|l| l.contains("requests in"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(requests > 10_000, "{summary}");
    // Histograms, not lists of requests: the peak stays far below 64 MiB.
    assert!(
        peak_kib > 0 && peak_kib < 64 * 1024,
        "peak RSS {peak_kib} KiB"
    );
}

#[test]
fn ctrl_c_ends_the_run_and_keeps_what_was_measured() {
    let server = TestServer::start(Behavior::Ok { body: 100 });
    let tmp = tempfile::tempdir().unwrap();
    let json = tmp.path().join("r.json");
    let hlog = tmp.path().join("r.hlog");
    let mut child = webscope()
        .args([
            "load",
            &server.url("/"),
            "-c",
            "2",
            "-t",
            "1",
            "-d",
            "30s",
            "--quiet",
            "--json",
        ])
        .arg(&json)
        .arg("--hlog")
        .arg(&hlog)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1300));
    let sent = Instant::now();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    let out = wait_bounded(child, Duration::from_secs(5));
    assert!(
        sent.elapsed() < Duration::from_secs(3),
        "took {:?} to stop",
        sent.elapsed()
    );
    // Ctrl-C exits 130 as the lab does (issue 52, item 6: it exited 0), after the summary.
    assert_eq!(out.status.code(), Some(130), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("interrupted"),
        "{out:?}"
    );
    assert!(
        stdout.contains("interrupted") && stdout.contains("Requests/sec:"),
        "{stdout}"
    );
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(r["interrupted"], true);
    let duration = f(&r, "duration_s");
    assert!((1.0..2.5).contains(&duration), "{duration}");
    assert!(u(&r, "requests") > 0);
    let logged = std::fs::read_to_string(&hlog).unwrap();
    assert!(
        logged
            .lines()
            .filter(|l| !l.starts_with('#') && !l.starts_with('"'))
            .count()
            >= 1
    );
}

#[test]
fn load_groups_keep_their_own_url_and_samples_list_every_request() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("www");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("small.txt"), vec![b's'; 100]).unwrap();
    std::fs::write(root.join("big.bin"), vec![b'b'; 100_000]).unwrap();
    let server = Serve::start(&root);
    let samples = tmp.path().join("samples.csv");
    let base = server.base();
    let samples_arg = samples.to_str().unwrap();
    let args = [
        base.as_str(),
        "--group",
        "small=3:/small.txt",
        "--group",
        "big=1:/big.bin",
        "-t",
        "2",
        "-d",
        "1s",
        "--samples",
        samples_arg,
    ];
    let (r, _) = load_json(&args, LIMIT);
    assert_eq!(u(&r, "connections"), 4, "{r}");
    let classes = r["classes"].as_array().unwrap();
    let names: Vec<&str> = classes
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["small", "big"]);
    // Each group asked for its own file only: bytes per response tell which.
    for (class, (lo, hi)) in classes.iter().zip([(100.0, 500.0), (100_000.0, 100_500.0)]) {
        let n = u(class, "requests");
        assert!(n > 10, "{class}");
        let per = u(class, "bytes") as f64 / n as f64;
        assert!(
            per >= lo && per <= hi,
            "{}: {per} bytes per response",
            class["name"]
        );
    }
    // One sample line per completed request, inside the run, with the right classes.
    let text = std::fs::read_to_string(&samples).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("end_us,latency_us,class"));
    let mut per_class = [0u64; 2];
    for line in lines {
        let v: Vec<u64> = line.split(',').map(|x| x.parse().unwrap()).collect();
        assert!(v[0] <= 1_500_000 && v[1] <= v[0] + 1000, "{line}");
        per_class[v[2] as usize] += 1;
    }
    assert_eq!(per_class[0], u(&classes[0], "requests"));
    assert_eq!(per_class[1], u(&classes[1], "requests"));
}

#[test]
fn a_bad_group_is_one_clear_line() {
    for (args, expected) in [
        (
            &["http://127.0.0.1:1/", "--group", "light"][..],
            "NAME=N:URL",
        ),
        (&["--group", "light=3:/x"][..], "needs the server's URL"),
        (
            &["http://127.0.0.1:1/", "--group", "a=1:http://127.0.0.1:2/x"][..],
            "all groups load one server",
        ),
    ] {
        let out = webscope().arg("load").args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(expected),
            "{args:?}: {err}"
        );
    }
}
