//! Shared by the `lab_*` tests: the binary, and a tiny file set to run labs on.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Stdio};

pub fn webscope() -> Command {
    Command::new(env!("CARGO_BIN_EXE_webscope"))
}

/// Writes WebStone A/4 (77 small files) to `dir`.
pub fn tiny_fileset(dir: &Path) {
    let status = webscope()
        .args(["fileset", "webstone-a", "--scale", "0.25", "--out"])
        .arg(dir)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
}
