//! A lab stored on disk re-renders to the same bytes: `webscope report` on the runs of a lab
//! recorded by an earlier build gives back its index.html, report.json and CSV tables exactly.
//! The guard for refactors of the lab and its pages, which must not change what a user reads.
//!
//! The archive `data/stored-lab.tar.gz` is the output of
//! `webscope lab --quick --experiment clients --experiment filesize --experiment techniques
//! --experiment saturation --experiment model --experiment degradation --experiment protocols
//! --clients 1,2 --duration 1s --no-profile` on a 2-CPU VM, every experiment in one report.
//! A change that is meant to alter the page re-renders the archive's lab and stores it again
//! (`tar xzf`, `webscope report stored-lab`, `tar czf`), saying why in its commit.

mod lab_support;

use lab_support::webscope;
use std::path::Path;
use std::process::Command;

/// What `webscope report` writes (everything else in the directory is the runs' data).
fn rendered_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n == "index.html" || n == "report.json" || n.ends_with(".csv"))
        .collect();
    names.sort();
    names
}

#[test]
fn a_stored_lab_re_renders_to_the_same_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let archive = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/stored-lab.tar.gz");
    let status = Command::new("tar")
        .arg("xzf")
        .arg(&archive)
        .arg("-C")
        .arg(tmp.path())
        .status()
        .expect("tar runs");
    assert!(status.success(), "cannot unpack {}", archive.display());
    let stored = tmp.path().join("stored-lab");
    let names = rendered_files(&stored);
    // Every experiment's table and the page itself are checked.
    for expected in [
        "clients.csv",
        "degradation.csv",
        "filesize.csv",
        "index.html",
        "model.csv",
        "protocols.csv",
        "report.json",
        "saturation.csv",
        "techniques.csv",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} missing in the archive"
        );
    }
    let before: Vec<Vec<u8>> = names
        .iter()
        .map(|n| std::fs::read(stored.join(n)).unwrap())
        .collect();
    for name in &names {
        std::fs::remove_file(stored.join(name)).unwrap();
    }
    let out = webscope().arg("report").arg(&stored).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(rendered_files(&stored), names, "the same files are written");
    for (name, old) in names.iter().zip(&before) {
        let new = std::fs::read(stored.join(name)).unwrap();
        if &new != old {
            let first = old
                .iter()
                .zip(&new)
                .position(|(a, b)| a != b)
                .unwrap_or(old.len().min(new.len()));
            let from = first.saturating_sub(120);
            panic!(
                "{name} differs from the stored lab's at byte {first}:\nstored:  {}\nrendered: {}",
                String::from_utf8_lossy(&old[from..(first + 120).min(old.len())]),
                String::from_utf8_lossy(&new[from..(first + 120).min(new.len())]),
            );
        }
    }
}
