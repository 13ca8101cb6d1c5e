//! What webscope writes can be trusted (#34): `--force` removes only a file set webscope
//! wrote; `report DIR` and `characterize --out` replace a symlink planted in the directory
//! instead of writing through it; `fileset like --keep-paths` gives a rank name to a path no
//! file can have and to a path named like the set's own files, says how many, and goes on.
//! Each test builds its hostile directory or log itself.

mod lab_support;

use std::collections::BTreeMap;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::{Command, Output};

use lab_support::webscope;
use serde_json::Value;

/// Every file under `dir` (symlinks as their target), path to bytes.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut all = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        if meta.is_dir() {
            all.extend(snapshot(&path));
        } else if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&path).unwrap();
            all.insert(
                path.display().to_string(),
                target.display().to_string().into(),
            );
        } else {
            all.insert(path.display().to_string(), std::fs::read(&path).unwrap());
        }
    }
    all
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("webscope runs")
}

/// Exit 1 and one line on stderr holding `needle`; the line.
fn one_line_error(out: &Output, needle: &str) -> String {
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains(needle), "{stderr}");
    stderr
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A Common Log Format line: a GET of `path` answered 200 with `bytes`.
fn line(path: &str, bytes: u64) -> String {
    format!("192.0.2.1 - - [25/Nov/2026:10:00:00 +0000] \"GET {path} HTTP/1.1\" 200 {bytes}\n")
}

fn like(log: &Path, out: &Path, extra: &[&str]) -> Output {
    run(webscope()
        .args(["fileset", "like", "-q"])
        .arg(log)
        .arg("--out")
        .arg(out)
        .args(extra))
}

fn manifest(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap()
}

/// Every file the manifest lists is on disk with its size; the list.
fn listed_and_present(dir: &Path) -> Vec<(String, u64)> {
    let m = manifest(dir);
    assert_eq!(m["format"], "webscope-fileset/1");
    let files: Vec<(String, u64)> = m["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let path = f["path"].as_str().unwrap().to_string();
            (path, f["size"].as_u64().unwrap())
        })
        .collect();
    for (path, size) in &files {
        let on_disk = std::fs::metadata(dir.join(path)).map(|m| m.len()).ok();
        assert_eq!(on_disk, Some(*size), "{path}");
    }
    files
}

/// #34 §1: a web app's directory (its `manifest.json` is a PWA's, or plain text, or a
/// webscope manifest written by hand over the user's own files) survives `--force` of every
/// fileset subcommand: exit 1, one line saying why, every byte and name left as it was.
#[test]
fn force_removes_only_a_set_webscope_wrote() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("access.log");
    std::fs::write(&log, line("/a.html", 100)).unwrap();
    let site = tmp.path().join("site");
    std::fs::create_dir_all(site.join("img")).unwrap();
    std::fs::write(site.join("index.html"), "<h1>my site</h1>").unwrap();
    std::fs::write(site.join("img/logo.png"), [0x89, b'P', b'N', b'G']).unwrap();
    let hand_written = r#"{"format":"webscope-fileset/1","kind":"mine","description":"my site",
        "seed":1,"parameters":{},"copies":1,"total_bytes":16,"mean_response_bytes":16.0,
        "classes":[{"name":"all","probability":1.0,"files":1,"bytes":16}],
        "files":[{"path":"index.html","size":16,"class":"all","probability":1.0}]}"#;
    let manifests = [
        (
            r#"{"name":"My PWA","start_url":"/"}"#,
            "is not one webscope writes",
        ),
        ("just some notes\n", "is not one webscope writes"),
        (hand_written, "holds \"img\""),
    ];
    for (text, why) in manifests {
        std::fs::write(site.join("manifest.json"), text).unwrap();
        let before = snapshot(&site);
        let attempts: [&[&str]; 3] = [
            &["like", log.to_str().unwrap()],
            &["single", "--size", "1k"],
            &["heavy-tail", "--files", "3", "--mean", "1k"],
        ];
        for args in attempts {
            let out = run(webscope()
                .arg("fileset")
                .args(args)
                .arg("--out")
                .arg(&site)
                .args(["--force", "-q"]));
            let said = one_line_error(&out, "so --force will not delete it");
            assert!(said.contains(why), "{said}");
            let after = snapshot(&site);
            assert!(
                after == before,
                "{args:?} changed the site: {:?}",
                after.keys().collect::<Vec<_>>()
            );
        }
    }
    // Only the user's files, under that hand-written manifest: still not webscope's bytes.
    std::fs::remove_dir_all(site.join("img")).unwrap();
    let out = run(webscope()
        .args(["fileset", "single", "--size", "1", "--force", "--out"])
        .arg(&site));
    one_line_error(&out, "is not the bytes webscope draws");
    assert!(site.join("index.html").exists());

    // A set webscope wrote is replaced, with its marker or (an earlier version's) without.
    let set = tmp.path().join("set");
    let single = |size: &str| {
        run(webscope()
            .args(["fileset", "single", "--force", "--size", size, "--out"])
            .arg(&set))
    };
    ok(&single("1"));
    assert!(set.join(".webscope-fileset").is_file());
    ok(&single("2"));
    std::fs::remove_file(set.join(".webscope-fileset")).unwrap();
    ok(&single("3"));
    assert_eq!(listed_and_present(&set), [("file-3.bin".to_string(), 3)]);
    // A user's file put into a set since: the set is no longer webscope's alone.
    std::fs::write(set.join("notes.txt"), "mine").unwrap();
    one_line_error(&single("4"), "\"notes.txt\"");
    assert_eq!(std::fs::read(set.join("notes.txt")).unwrap(), b"mine");
}

/// #34 §2: with `clients.csv`, `index.html` and `report.json` of a stored lab symlinked to
/// files outside it, `webscope report DIR` writes its report in DIR and leaves those files
/// as they were; a dangling symlink does not make its target appear.
#[test]
fn report_replaces_symlinks_in_its_directory_instead_of_writing_through_them() {
    let tmp = tempfile::tempdir().unwrap();
    let archive = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/stored-lab.tar.gz");
    let untar = Command::new("tar")
        .arg("xzf")
        .arg(&archive)
        .arg("-C")
        .arg(tmp.path())
        .status()
        .unwrap();
    assert!(untar.success());
    let lab = tmp.path().join("stored-lab");
    let outside = tmp.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    let mut stored = BTreeMap::new();
    for name in ["clients.csv", "index.html", "report.json"] {
        stored.insert(name, std::fs::read(lab.join(name)).unwrap());
        let theirs = outside.join(name);
        std::fs::write(&theirs, format!("the user's own {name}")).unwrap();
        std::fs::remove_file(lab.join(name)).unwrap();
        symlink(&theirs, lab.join(name)).unwrap();
    }
    let dangling = outside.join("never-made.csv");
    std::fs::remove_file(lab.join("filesize.csv")).unwrap();
    symlink(&dangling, lab.join("filesize.csv")).unwrap();
    // The outside files hold what the user wrote, and nothing else appeared beside them.
    let untouched = || {
        for name in ["clients.csv", "index.html", "report.json"] {
            let text = std::fs::read_to_string(outside.join(name)).unwrap();
            assert!(
                text == format!("the user's own {name}"),
                "{name} was written through"
            );
        }
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 3);
    };

    ok(&run(webscope().arg("report").arg(&lab)));
    untouched();
    assert!(!dangling.exists());
    for (name, bytes) in &stored {
        let meta = std::fs::symlink_metadata(lab.join(name)).unwrap();
        assert!(meta.is_file(), "{name} is still a symlink");
        assert!(&std::fs::read(lab.join(name)).unwrap() == bytes, "{name}");
    }
    assert!(std::fs::symlink_metadata(lab.join("filesize.csv"))
        .unwrap()
        .is_file());
    // No temporary is left beside them.
    let hidden: Vec<String> = std::fs::read_dir(&lab)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(hidden.is_empty(), "{hidden:?}");

    // `characterize --out` writes its report.json and index.html the same way.
    let log = tmp.path().join("access.log");
    std::fs::write(&log, line("/a.html", 100).repeat(20)).unwrap();
    let site = tmp.path().join("site");
    std::fs::create_dir(&site).unwrap();
    for name in ["report.json", "index.html"] {
        symlink(outside.join(name), site.join(name)).unwrap();
    }
    ok(&run(webscope()
        .arg("characterize")
        .arg(&log)
        .arg("--out")
        .arg(&site)));
    untouched();
    let report: Value =
        serde_json::from_slice(&std::fs::read(site.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["requests"], 20);
}

/// #34 §9 and §10: with --keep-paths, a logged path with a 300-byte part, one longer than
/// MAX_PATH, a logged `/manifest.json` and `/.webscope-fileset` each get a rank name; the run
/// goes on, says how many and why, and never prints the long name. The set's manifest is its
/// own, and every file it lists is on disk.
#[test]
fn keep_paths_renames_what_no_file_can_be_and_the_sets_own_names() {
    let tmp = tempfile::tempdir().unwrap();
    let long_part = format!("/{}.html", "a".repeat(300));
    let long_path = format!("/{}/x.html", vec!["b".repeat(200); 11].join("/"));
    let log = tmp.path().join("access.log");
    let text = [
        line(&long_part, 100),
        line(&long_path, 200),
        line("/manifest.json", 1234),
        line("/.webscope-fileset", 77),
        line("/img/logo.gif", 500),
        line("/index.html", 300),
    ]
    .concat();
    std::fs::write(&log, text).unwrap();
    let set = tmp.path().join("site");
    let out = like(&log, &set, &["--keep-paths"]);
    let stdout = ok(&out);
    assert!(
        stdout.contains(
            "2 paths kept, 4 given rank names (2 too long for a file name, \
             2 named like the set's own manifest.json, .webscope-fileset, urls.json, nginx-*.conf, \
             apache.conf or apache-urls.txt)"
        ),
        "{stdout}"
    );
    let all = format!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(!all.contains(&"a".repeat(100)), "{all}");

    let files = listed_and_present(&set);
    let paths: Vec<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
    for kept in ["img/logo.gif", "index.html"] {
        assert!(paths.contains(&kept), "{paths:?}");
    }
    assert!(!paths.contains(&"manifest.json"), "{paths:?}");
    assert!(!paths.contains(&".webscope-fileset"), "{paths:?}");
    assert_eq!(files.len(), 6);
    // The 1 234 bytes logged as /manifest.json are a rank-named file on disk.
    assert!(files
        .iter()
        .any(|(p, s)| *s == 1234 && p.starts_with("d0000/")));
    // The marker is the set's own, so --force may replace the set.
    let marker = std::fs::read_to_string(set.join(".webscope-fileset")).unwrap();
    assert!(marker.contains("written by webscope"), "{marker}");
    ok(&like(&log, &set, &["--keep-paths", "--force"]));
}
