//! What `lab_capacity`'s searches share: running a search and reading its report.json entry
//! (a refusal on a disturbed machine told apart), the known-cost server, and the probes that
//! failed well below a capacity. (`lab_kubernetes` takes only the server.)
#![allow(dead_code)]

mod quota;

use std::path::Path;

pub use quota::CpuQuota;

use crate::lab_support::{self, webscope};

/// Runs a capacity search and returns its report.json entry.
/// A capacity search's result, or None when the machine was too disturbed to find one: the
/// search then refuses (exit 4, "the machine was disturbed ..."), which is the right answer
/// on a busy machine (#33) and is checked here, while the figures are checked only where a
/// capacity was found. Any other failure fails the test.
pub fn capacity(
    target: &str,
    fileset: &Path,
    out: &Path,
    extra: &[&str],
) -> Option<serde_json::Value> {
    capacity_in(None, target, fileset, out, extra)
}

/// [`capacity`], the lab (the generator with it) held to `quota` when given.
pub fn capacity_in(
    quota: Option<&CpuQuota>,
    target: &str,
    fileset: &Path,
    out: &Path,
    extra: &[&str],
) -> Option<serde_json::Value> {
    let (code, c, stderr) = capacity_or_refusal_in(quota, target, fileset, out, extra);
    if code == Some(4) {
        assert!(stderr.contains("the machine was disturbed"), "{stderr}");
        assert_eq!(c["ending"]["kind"], "disturbed", "{c}");
        lab_support::unchecked(&format!(
            "the machine was disturbed, no capacity to check: {}",
            stderr.trim()
        ));
        return None;
    }
    assert_eq!(code, Some(0), "{stderr}");
    Some(c)
}

/// A capacity search as `capacity` runs it, with its exit code: 0 with a capacity (or any
/// ending the report gives), 4 when the machine stayed disturbed.
pub fn capacity_or_refusal(
    target: &str,
    fileset: &Path,
    out: &Path,
    extra: &[&str],
) -> (Option<i32>, serde_json::Value, String) {
    capacity_or_refusal_in(None, target, fileset, out, extra)
}

/// [`capacity_or_refusal`], the lab moved into `quota` as soon as it started (its first
/// milliseconds, before any probe, run unthrottled).
pub fn capacity_or_refusal_in(
    quota: Option<&CpuQuota>,
    target: &str,
    fileset: &Path,
    out: &Path,
    extra: &[&str],
) -> (Option<i32>, serde_json::Value, String) {
    let mut child = webscope()
        .args(["lab", "--target", target, "--fileset"])
        .arg(fileset)
        .arg("--out")
        .arg(out)
        .args([
            "--experiment",
            "capacity",
            "--duration",
            "1s",
            "--no-preflight",
        ])
        .args(extra)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(Err(why)) = quota.map(|q| q.add(child.id())) {
        let _ = child.kill();
        let _ = child.wait();
        panic!("{why}");
    }
    let run = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    let report: serde_json::Value = serde_json::from_slice(
        &std::fs::read(out.join("report.json"))
            .unwrap_or_else(|e| panic!("no report ({e}): {stderr}")),
    )
    .unwrap();
    (run.status.code(), report["capacity"].clone(), stderr)
}

/// `lab_support/fixed_cost.py` on CPU 0, killed on drop: one request at a time, each costing
/// a fixed time asleep or a fixed CPU time spinning.
pub struct FixedCost {
    child: std::process::Child,
    pub base_url: String,
}

impl FixedCost {
    /// A temporary folder with a file set in it, and the server serving it.
    pub fn with_set(
        mode: &str,
        cost_ms: f64,
    ) -> (tempfile::TempDir, std::path::PathBuf, FixedCost) {
        let tmp = tempfile::tempdir().unwrap();
        let set = tmp.path().join("set");
        lab_support::tiny_fileset(&set);
        let server = FixedCost::start(mode, cost_ms, &set, tmp.path());
        (tmp, set, server)
    }

    /// The server on `root`, its script written into `dir`.
    pub fn start(mode: &str, cost_ms: f64, root: &Path, dir: &Path) -> FixedCost {
        use std::io::BufRead;
        let script = dir.join("fixed_cost.py");
        std::fs::write(&script, include_str!("../lab_support/fixed_cost.py")).unwrap();
        let mut child = std::process::Command::new("taskset")
            .args(["-c", "0", "python3"])
            .arg(&script)
            .args([mode, &cost_ms.to_string()])
            .arg(root)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("taskset and python3 run the fixed-cost server");
        let mut port = String::new();
        let stdout = child.stdout.take().unwrap();
        std::io::BufReader::new(stdout)
            .read_line(&mut port)
            .unwrap();
        let port: u16 = port.trim().parse().expect("the server prints its port");
        FixedCost {
            child,
            base_url: format!("http://127.0.0.1:{port}/"),
        }
    }
}

impl Drop for FixedCost {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The probes below `rate` that did not pass, with what bound them: on a busy machine they
/// must be the machine's or the generator's, never the server's.
pub fn failed_below(c: &serde_json::Value, rate: f64) -> Vec<String> {
    c["probes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["offered_rps"].as_f64().unwrap() < rate && p["verdict"] != "pass")
        .map(|p| p["bound"].as_str().unwrap().to_string())
        .collect()
}
