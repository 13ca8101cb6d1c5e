//! Running `perf record -a -g` beside the monitor, and `perf script` on what it recorded.

use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::classify::{classify, Profile};

/// A running `perf record`.
pub(crate) struct Recording {
    child: Child,
    perf: PathBuf,
    data: PathBuf,
    hz: u32,
}

/// Why there is no profile: one line that says how to get one.
pub(crate) fn missing_perf(perf: &Path) -> String {
    format!(
        "--profile: {} not found; install perf (Debian: apt-get install linux-perf) to get the kernel-time breakdown; the rest of the monitor runs",
        perf.display()
    )
}

fn paranoid() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()?
        .trim()
        .parse()
        .ok()
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// The one line to show when perf ran but refused or failed.
fn refusal(perf: &Path, stderr: &str) -> String {
    let first = stderr
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("no message");
    match paranoid() {
        Some(level) if level > 0 && !is_root() => format!(
            "--profile: perf may not sample all CPUs (kernel.perf_event_paranoid = {level}): run as root or `sysctl kernel.perf_event_paranoid=-1`; the rest of the monitor runs"
        ),
        _ => format!(
            "--profile: {} record failed ({first}); the rest of the monitor runs",
            perf.display()
        ),
    }
}

impl Recording {
    /// Starts `perf record` on every CPU, writing to `data`. Waits until perf has written
    /// its header (or failed), so that a refusal is known at once.
    pub fn start(perf: &Path, hz: u32, data: &Path) -> Result<Recording, String> {
        let mut child = Command::new(perf)
            .args(["record", "-e", "cpu-clock", "-F"])
            .arg(hz.to_string())
            .args(["-a", "-g", "-q", "-o"])
            .arg(data)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|err| match err.kind() {
                std::io::ErrorKind::NotFound => missing_perf(perf),
                _ => format!(
                    "--profile: cannot start {}: {err}; the rest of the monitor runs",
                    perf.display()
                ),
            })?;
        let deadline = Instant::now() + Duration::from_secs(3);
        loop {
            if let Ok(Some(_)) = child.try_wait() {
                let mut stderr = String::new();
                if let Some(mut pipe) = child.stderr.take() {
                    let _ = pipe.read_to_string(&mut stderr);
                }
                // Nothing half-written left behind to look like a recording.
                let _ = std::fs::remove_file(data);
                return Err(refusal(perf, &stderr));
            }
            let written = std::fs::metadata(data)
                .map(|m| m.len() > 0)
                .unwrap_or(false);
            if written || Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(Recording {
            child,
            perf: perf.to_path_buf(),
            data: data.to_path_buf(),
            hz,
        })
    }

    /// CPU seconds perf has used so far.
    pub fn cpu_seconds(&self) -> Option<f64> {
        let stat = procfs::process::Process::new(self.child.id() as i32)
            .ok()?
            .stat()
            .ok()?;
        Some((stat.utime + stat.stime) as f64 / procfs::ticks_per_second() as f64)
    }

    /// Stops perf (SIGINT, as Ctrl-C would) and classifies what it recorded.
    pub fn finish(mut self, server_pids: &[u32]) -> Result<Profile, String> {
        let pid = self.child.id();
        // SAFETY: kill with a pid we spawned and have not reaped yet.
        unsafe {
            libc::kill(pid as libc::pid_t, libc::SIGINT);
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return Err("--profile: perf record did not stop within 10 s".into());
                }
            }
        };
        let mut stderr = String::new();
        if let Some(mut pipe) = self.child.stderr.take() {
            let _ = pipe.read_to_string(&mut stderr);
        }
        let recorded = std::fs::metadata(&self.data)
            .map(|m| m.len() > 0)
            .unwrap_or(false);
        if !recorded {
            return Err(format!(
                "--profile: perf record wrote nothing (exit {status}): {}",
                stderr.trim()
            ));
        }
        self.script(server_pids, pid)
    }

    fn script(&self, server_pids: &[u32], perf_pid: u32) -> Result<Profile, String> {
        let mut child = Command::new(&self.perf)
            .args([
                "script",
                "-F",
                "comm,pid,tid,ip,sym,dso",
                "--no-inline",
                "-i",
            ])
            .arg(&self.data)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|err| format!("--profile: cannot run perf script: {err}"))?;
        let Some(stdout) = child.stdout.take() else {
            return Err("--profile: perf script gave no output".into());
        };
        let profile = classify(BufReader::new(stdout), server_pids, Some(perf_pid), self.hz);
        let status = child
            .wait()
            .map_err(|err| format!("--profile: perf script: {err}"))?;
        match profile {
            Ok(p) if status.success() => Ok(p),
            Ok(_) => Err(format!("--profile: perf script failed ({status})")),
            Err(err) => Err(format!("--profile: cannot read perf script output: {err}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_perf_says_how_to_get_it() {
        let dir = tempfile::tempdir().unwrap();
        let err = Recording::start(
            Path::new("/nonexistent/perf"),
            99,
            &dir.path().join("p.data"),
        )
        .err()
        .expect("no such program");
        assert!(err.contains("apt-get install linux-perf"), "{err}");
        assert_eq!(err.lines().count(), 1);
    }

    #[test]
    fn a_failing_perf_is_reported_in_one_line() {
        let dir = tempfile::tempdir().unwrap();
        // `false` stands in for a perf that refuses at once.
        let err = Recording::start(Path::new("false"), 99, &dir.path().join("p.data"))
            .err()
            .expect("false fails");
        assert!(err.starts_with("--profile:"), "{err}");
        assert_eq!(err.lines().count(), 1);
    }
}
