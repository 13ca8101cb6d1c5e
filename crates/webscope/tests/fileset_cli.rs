//! `webscope fileset` from the command line: the papers' tables, determinism, copies, and
//! bad input (one line, non-zero exit, nothing left that looks like a set).

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::Value;

fn webscope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_webscope"))
        .args(args)
        .output()
        .expect("run webscope")
}

fn fileset(out: &Path, args: &[&str]) -> Output {
    let mut all = vec!["fileset"];
    all.extend_from_slice(&args[..1]);
    all.extend_from_slice(&["--out", out.to_str().unwrap()]);
    all.extend_from_slice(&args[1..]);
    webscope(&all)
}

fn manifest(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap()
}

/// Every file's bytes, by manifest order, checked against the manifest's sizes.
fn contents(dir: &Path) -> Vec<Vec<u8>> {
    let m = manifest(dir);
    m["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let bytes = std::fs::read(dir.join(f["path"].as_str().unwrap())).unwrap();
            assert_eq!(bytes.len() as u64, f["size"].as_u64().unwrap());
            bytes
        })
        .collect()
}

fn disk_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let meta = entry.metadata().unwrap();
        if meta.is_dir() {
            total += disk_bytes(&entry.path());
        } else if entry.file_name() != "manifest.json" {
            total += meta.len();
        }
    }
    total
}

fn assert_one_line_error(out: &Output) {
    assert!(!out.status.success(), "should fail: {out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    // clap's own usage errors add a blank line and a "--help" hint after the one line.
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with("For more information"))
        .collect();
    assert_eq!(lines.len(), 1, "one line: {stderr:?}");
    assert!(lines[0].contains("error"), "{stderr:?}");
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn specweb96_at_1_op_per_second_is_the_tables_22_mb() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("spec");
    let run = fileset(&out, &["specweb96", "--ops", "1"]);
    assert!(run.status.success(), "{run:?}");
    let mb = disk_bytes(&out) as f64 / (1 << 20) as f64;
    assert!((mb / 22.0 - 1.0).abs() < 0.03, "{mb} MB");
    let m = manifest(&out);
    let classes = m["classes"].as_array().unwrap();
    let probs: Vec<f64> = classes
        .iter()
        .map(|c| c["probability"].as_f64().unwrap())
        .collect();
    for (p, want) in probs.iter().zip([0.35, 0.50, 0.14, 0.01]) {
        assert!((p - want).abs() < 1e-9, "{probs:?}");
    }
    assert!(String::from_utf8_lossy(&run.stdout).contains("class3"));
}

#[test]
fn webstone_a_variants_have_table_2s_mean_sizes() {
    let tmp = tempfile::tempdir().unwrap();
    for (scale, kb) in [("0.25", 7.00), ("0.5", 14.82), ("1", 29.31)] {
        let out = tmp.path().join(format!("a{scale}"));
        let run = fileset(&out, &["webstone-a", "--scale", scale]);
        assert!(run.status.success(), "{run:?}");
        let m = manifest(&out);
        // Recompute the access-weighted mean from the files on disk, not from the summary.
        let mean: f64 = m["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                let size = std::fs::metadata(out.join(f["path"].as_str().unwrap()))
                    .unwrap()
                    .len();
                f["probability"].as_f64().unwrap() * size as f64
            })
            .sum::<f64>()
            / 1024.0;
        assert!(
            (mean / kb - 1.0).abs() < 0.02,
            "scale {scale}: {mean} KB vs {kb}"
        );
        assert_eq!(m["files"].as_array().unwrap().len(), 77);
    }
}

#[test]
fn same_seed_same_bytes_different_seed_different_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let gen = |name: &str, seed: &str| {
        let out = tmp.path().join(name);
        let run = fileset(
            &out,
            &[
                "heavy-tail",
                "--files",
                "50",
                "--mean",
                "4k",
                "--seed",
                seed,
            ],
        );
        assert!(run.status.success(), "{run:?}");
        contents(&out)
    };
    let a = gen("a", "7");
    let b = gen("b", "7");
    let c = gen("c", "8");
    assert_eq!(a, b);
    assert_ne!(a, c);
    let total: usize = a.iter().map(Vec::len).sum();
    assert_eq!(total, 50 * 4096);
}

#[test]
fn copies_multiply_the_files_and_split_the_probability() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("copies");
    let run = fileset(&out, &["webstone-a", "--scale", "0.25", "--copies", "3"]);
    assert!(run.status.success(), "{run:?}");
    let m = manifest(&out);
    let files = m["files"].as_array().unwrap();
    assert_eq!(files.len(), 3 * 77);
    let sum: f64 = files
        .iter()
        .map(|f| f["probability"].as_f64().unwrap())
        .sum();
    assert!((sum - 1.0).abs() < 1e-9);
    assert_eq!(
        entries(&out),
        [
            ".webscope-fileset",
            "copy01",
            "copy02",
            "copy03",
            "manifest.json"
        ]
    );
    // Copies are distinct files (different inodes), so the page cache holds each separately.
    let bytes = contents(&out);
    assert_eq!(bytes.len(), 3 * 77);
}

#[test]
fn single_and_dry_run() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("one");
    let dry = fileset(&out, &["single", "--size", "1k", "--dry-run"]);
    assert!(dry.status.success());
    assert!(!out.exists(), "a dry run writes nothing");
    let run = fileset(&out, &["single", "--size", "1k"]);
    assert!(run.status.success(), "{run:?}");
    assert_eq!(
        std::fs::metadata(out.join("file-1024.bin")).unwrap().len(),
        1024
    );
}

#[test]
fn bad_input_is_one_line_and_leaves_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("set");
    let cases: Vec<Vec<&str>> = vec![
        vec!["single", "--size", "-1"],
        vec!["single", "--size", "12q"],
        vec!["heavy-tail", "--files", "10", "--mean", "0"],
        vec!["specweb96", "--ops", "-5"],
        vec!["heavy-tail", "--files", "-1", "--mean", "1k"],
        vec!["webstone-a", "--scale", "3"],
        vec!["single", "--size", "1k", "--copies", "0"],
        // 10*sqrt(1e10/5) = 447,214 directories: 16 million files, over the limit.
        vec!["specweb96", "--ops", "1e10"],
        vec!["single", "--size", "1k", "--copies", "20000000"],
        // 500 TiB: more than any disk here.
        vec!["single", "--size", "500t"],
    ];
    for case in cases {
        let run = fileset(&out, &case);
        assert_one_line_error(&run);
        assert!(
            entries(tmp.path()).is_empty(),
            "{case:?} left {:?}",
            entries(tmp.path())
        );
    }
    let space = fileset(&out, &["single", "--size", "500t"]);
    assert!(String::from_utf8_lossy(&space.stderr).contains("not enough space"));
    let unknown = webscope(&["fileset", "specweb99", "--out", out.to_str().unwrap()]);
    assert!(!unknown.status.success());
}

#[test]
fn unwritable_or_occupied_destinations_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    // A path below a regular file cannot be created, even by root.
    let file = tmp.path().join("plain");
    std::fs::write(&file, b"x").unwrap();
    let run = fileset(&file.join("set"), &["single", "--size", "1"]);
    assert_one_line_error(&run);
    assert!(String::from_utf8_lossy(&run.stderr).contains("--out"));

    let busy = tmp.path().join("busy");
    std::fs::create_dir(&busy).unwrap();
    std::fs::write(busy.join("mine.txt"), b"keep").unwrap();
    for extra in [&[][..], &["--force"][..]] {
        let mut args = vec!["single", "--size", "1"];
        args.extend_from_slice(extra);
        assert_one_line_error(&fileset(&busy, &args));
        assert_eq!(entries(&busy), ["mine.txt"]);
    }
    // --force replaces a set webscope wrote.
    let set = tmp.path().join("set");
    assert!(fileset(&set, &["single", "--size", "1"]).status.success());
    assert!(fileset(&set, &["single", "--size", "2", "--force"])
        .status
        .success());
    assert_eq!(
        entries(&set),
        [".webscope-fileset", "file-2.bin", "manifest.json"]
    );
}

#[test]
fn ctrl_c_while_writing_removes_the_partial_set() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("big");
    // 4 copies of the 690 MB set: far more than can be written before the signal.
    let mut child = Command::new(env!("CARGO_BIN_EXE_webscope"))
        .args([
            "fileset",
            "specweb96",
            "--ops",
            "1000",
            "--copies",
            "4",
            "--out",
        ])
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until writing has begun (the hidden partial directory exists).
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while entries(tmp.path()).is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    // 130, as the lab and the reading of logs end on a signal (#52 §6).
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    assert!(
        entries(tmp.path()).is_empty(),
        "left {:?}",
        entries(tmp.path())
    );
}
