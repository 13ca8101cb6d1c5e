//! `webscope fileset like LOG`: a set made from a log, served by `webscope serve` and loaded
//! with `webscope load --fileset`, gives the log's per-path mix; nothing of the log's clients
//! or query strings is written; --keep-paths and --synthetic; a bad log is one line, exit 1.

mod lab_support;

use std::collections::HashMap;
use std::path::Path;

use lab_support::{webscope, Served};
use serde_json::Value;

const CLIENTS: [&str; 2] = ["203.0.113.77", "198.51.100.23"];
const SECRET: &str = "token=s3cr3tQ";

/// A log of 95 successful requests: /index.html 50 (1000 bytes), /img/a.gif 30 (5000),
/// /files/big.bin 15 (20000; one 206, one 304), plus 404s and a POST that make no file.
fn write_log(path: &Path) {
    let mut text = String::new();
    let mut add = |i: usize, request: &str, status: u16, bytes: u64| {
        text += &format!(
            "{} - - [25/Nov/2026:10:00:{:02} +0000] \"{request} HTTP/1.1\" {status} {bytes} \"http://ref.example/?{SECRET}\" \"agent\"\n",
            CLIENTS[i % 2],
            i % 60
        );
    };
    for i in 0..50 {
        add(i, &format!("GET /index.html?{SECRET}"), 200, 1000);
    }
    for i in 0..30 {
        add(i, "GET /img/a.gif", 200, 5000);
    }
    for i in 0..13 {
        add(i, "GET /files/big.bin", 200, 20000);
    }
    add(1, "GET /files/big.bin", 206, 500);
    add(2, "GET /files/big.bin", 304, 0);
    for i in 0..7 {
        add(i, "GET /missing.html", 404, 150);
    }
    add(3, "POST /form", 200, 12);
    std::fs::write(path, text).unwrap();
}

fn like(log: &Path, out: &Path, extra: &[&str]) -> String {
    let run = webscope()
        .args(["fileset", "like"])
        .arg(log)
        .arg("--out")
        .arg(out)
        .arg("-q")
        .args(extra)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    String::from_utf8_lossy(&run.stdout).into_owned()
}

/// Every byte under `dir`, file names included.
fn everything(dir: &Path) -> Vec<u8> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        all.extend_from_slice(path.to_string_lossy().as_bytes());
        if path.is_dir() {
            all.extend(everything(&path));
        } else {
            all.extend(std::fs::read(&path).unwrap());
        }
    }
    all
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[test]
fn a_set_like_a_log_serves_the_logs_mix_and_keeps_nothing_private() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("access.log");
    write_log(&log);
    let set = tmp.path().join("site");
    let stdout = like(&log, &set, &[]);
    // POST /form is left out: a set answers GET and HEAD (the replay skips bodies).
    assert!(
        stdout.contains("102 GET and HEAD requests to 4 distinct URLs"),
        "{stdout}"
    );

    let manifest: Value =
        serde_json::from_slice(&std::fs::read(set.join("manifest.json")).unwrap()).unwrap();
    let files = manifest["files"].as_array().unwrap();
    let by_size: HashMap<u64, f64> = files
        .iter()
        .map(|f| {
            (
                f["size"].as_u64().unwrap(),
                f["probability"].as_f64().unwrap(),
            )
        })
        .collect();
    let expected = [
        (1000u64, 50.0 / 95.0),
        (5000, 30.0 / 95.0),
        (20000, 15.0 / 95.0),
    ];
    for (size, share) in expected {
        assert!((by_size[&size] - share).abs() < 1e-9, "{by_size:?}");
    }
    // Privacy: no client, no query, no referer, no logged path in any name or byte.
    let all = everything(&set);
    for private in CLIENTS.iter().copied().chain([
        SECRET,
        "s3cr3tQ",
        "index",
        "a.gif",
        "big.bin",
        "ref.example",
    ]) {
        assert!(!contains(&all, private), "{private} is in the set");
    }

    // Served and loaded, the server's log has the site's mix, path for path.
    let served_log = tmp.path().join("served.log");
    let served = Served::start_with(&set, &["--access-log", served_log.to_str().unwrap()], None);
    let load = webscope()
        .args(["load", "--fileset"])
        .arg(&set)
        .args([
            "--base",
            &served.base_url,
            "-c",
            "2",
            "-t",
            "1",
            "-d",
            "1500ms",
            "-q",
        ])
        .output()
        .unwrap();
    assert!(
        load.status.success(),
        "{}",
        String::from_utf8_lossy(&load.stderr)
    );
    served.stop();
    let size_of: HashMap<String, u64> = files
        .iter()
        .map(|f| {
            (
                format!("/{}", f["path"].as_str().unwrap()),
                f["size"].as_u64().unwrap(),
            )
        })
        .collect();
    let mut counts: HashMap<u64, u64> = HashMap::new();
    let text = std::fs::read_to_string(&served_log).unwrap();
    for line in text.lines() {
        let path = line.split('"').nth(1).unwrap().split(' ').nth(1).unwrap();
        *counts.entry(size_of[path]).or_insert(0) += 1;
    }
    let total: u64 = counts.values().sum();
    assert!(total > 500, "{total} requests");
    for (size, share) in expected {
        let got = counts[&size] as f64 / total as f64;
        assert!(
            (got - share).abs() < 0.04,
            "{size}: {got} against {share} of {total}"
        );
    }
}

#[test]
fn kept_paths_synthetic_sets_and_bad_logs() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("access.log.1");
    write_log(&log);
    let kept = tmp.path().join("kept");
    like(&log, &kept, &["--keep-paths"]);
    for (path, size) in [
        ("index.html", 1000),
        ("img/a.gif", 5000),
        ("files/big.bin", 20000),
    ] {
        assert_eq!(
            std::fs::metadata(kept.join(path)).unwrap().len(),
            size,
            "{path}"
        );
    }
    let all = everything(&kept);
    for private in CLIENTS.iter().copied().chain([SECRET, "ref.example"]) {
        assert!(!contains(&all, private), "{private} is in the set");
    }

    let synthetic = tmp.path().join("synthetic");
    like(&log, &synthetic, &["--synthetic", "40", "--seed", "3"]);
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(synthetic.join("manifest.json")).unwrap()).unwrap();
    let files = manifest["files"].as_array().unwrap();
    assert_eq!(files.len(), 40);
    assert!(files
        .iter()
        .all(|f| [1000, 5000, 20000].contains(&f["size"].as_u64().unwrap())));

    let junk = tmp.path().join("junk.log");
    std::fs::write(&junk, "not a log\n").unwrap();
    let out = webscope()
        .args(["fileset", "like"])
        .arg(&junk)
        .arg("--out")
        .arg(tmp.path().join("none"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.lines().count() == 1 && err.contains("junk.log"),
        "{err}"
    );
    assert!(!tmp.path().join("none").exists());

    // The Apache snippet names the set's path: one Apache would read as a variable is refused
    // before anything is written.
    let unsayable = tmp.path().join("${HOME}");
    let out = webscope()
        .args(["fileset", "like", "--keep-paths", "-q"])
        .arg(&log)
        .arg("--out")
        .arg(&unsayable)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.lines().count() == 1 && err.contains("Apache config") && err.contains("--out"),
        "{err}"
    );
    assert!(!unsayable.exists());
}

#[test]
fn a_synthetic_set_is_drawn_from_the_logs_fits() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("access.log");
    // 100 documents, rank r asked for 1000/r times (Zipf 1), sizes spread over 1-100 KB.
    let mut text = String::new();
    for r in 1..=100u64 {
        let size = 1000 + (r * 7919) % 99_000;
        for i in 0..(1000 / r) {
            text += &format!(
                "{} - - [25/Nov/2026:10:00:{:02} +0000] \"GET /doc{r}.html HTTP/1.1\" 200 {size} \"-\" \"agent\"\n",
                CLIENTS[(i % 2) as usize],
                i % 60
            );
        }
    }
    std::fs::write(&log, text).unwrap();
    let set = tmp.path().join("synthetic");
    like(&log, &set, &["--synthetic", "300", "--dry-run"]);
    assert!(!set.exists(), "--dry-run wrote the set");
    like(&log, &set, &["--synthetic", "300"]);
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(set.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["files"].as_array().unwrap().len(), 300);
    let zipf = manifest["parameters"]["model"]["zipf"].as_f64().unwrap();
    assert!((zipf - 1.0).abs() < 0.15, "fitted Zipf {zipf}");
    assert!(manifest["description"]
        .as_str()
        .unwrap()
        .contains("drawn from the fits"));
}

#[test]
fn characterize_and_fileset_like_count_distinct_urls_by_one_rule() {
    // #52 §5: "1 390 distinct in 9 616 references" against "1 496 in 9 994 GET and HEAD":
    // each counted by a rule of its own. A log with every kind the rules tell apart.
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("access.log");
    let mut text = String::new();
    let mut add = |request: &str, status: u16| {
        text += &format!(
            "192.0.2.1 - - [25/Nov/2026:10:00:00 +0000] \"{request} HTTP/1.1\" {status} 10 \"-\" \"a\"\n"
        );
    };
    add("GET /a.html", 200); // referenced
    add("GET /a.html", 304);
    add("HEAD /b.html", 200); // referenced (HEAD)
    add("GET /c.html", 206); // referenced (a part)
    add("GET /d", 204); // referenced (2xx, no file answers it)
    add("GET /e.html", 404); // a GET URL, not referenced
    add("GET /f.html", 301); // a GET URL, not referenced
    add("POST /g", 200); // neither: a replay does not send it
    add("OPTIONS /h", 200);
    add("DELETE /i", 204);
    text += "192.0.2.1 - - [25/Nov/2026:10:00:01 +0000] \"-\" 400 0 \"-\" \"-\"\n";
    std::fs::write(&log, text).unwrap();

    let report = tmp.path().join("report");
    let run = webscope()
        .args(["characterize", "-q", "--out"])
        .arg(&report)
        .arg(&log)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let said = String::from_utf8_lossy(&run.stdout);
    assert!(
        said.contains("URLs:      4 distinct in 5 references"),
        "{said}"
    );
    assert!(said.contains("a GET or HEAD answered 2xx or 304"), "{said}");
    assert!(
        said.contains("9 distinct URLs with any method and status"),
        "{said}"
    );
    let r: Value =
        serde_json::from_slice(&std::fs::read(report.join("report.json")).unwrap()).unwrap();
    assert_eq!(r["popularity"]["distinct_urls"], 4);

    let stdout = like(&log, &tmp.path().join("set"), &["--dry-run"]);
    assert!(
        stdout.contains(
            "7 GET and HEAD requests to 6 distinct URLs, 4 of them referenced (answered 2xx or 304: the distinct URLs `webscope characterize` counts)"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("4 requests of other methods or unreadable left out"),
        "{stdout}"
    );
}
