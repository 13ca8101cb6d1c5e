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

/// `webscope serve` on `root`, on 127.0.0.1 with one worker, killed on drop: a server the
/// lab did not start, as `--target` sees one.
pub struct Served {
    child: std::process::Child,
    pub base_url: String,
    pub pid: u32,
}

impl Served {
    pub fn start(root: &Path) -> Served {
        Served::start_with(root, &[], None)
    }

    /// With more `serve` flags, pinned to `cpu` if given.
    pub fn start_with(root: &Path, extra: &[&str], cpu: Option<usize>) -> Served {
        use std::io::BufRead;
        use std::os::unix::process::CommandExt;
        let mut cmd = webscope();
        cmd.args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--workers",
            "1",
            "--root",
        ])
        .arg(root)
        .args(["--access-log", "/dev/null"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
        if let Some(cpu) = cpu {
            // SAFETY: sched_setaffinity on the child itself, before exec.
            unsafe {
                cmd.pre_exec(move || {
                    let mut set: libc::cpu_set_t = std::mem::zeroed();
                    libc::CPU_SET(cpu, &mut set);
                    if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0
                    {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let mut child = cmd.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut line = String::new();
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .split("listening on http://")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("webscope serve said {line:?}"))
            .to_string();
        let pid = child.id();
        Served {
            child,
            base_url: format!("http://{addr}/"),
            pid,
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Writes WebStone A/4 with another seed: the same names and sizes, other bytes.
pub fn tiny_fileset_seed(dir: &Path, seed: u64) {
    let status = webscope()
        .args(["fileset", "webstone-a", "--scale", "0.25", "--seed"])
        .arg(seed.to_string())
        .arg("--out")
        .arg(dir)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
}
