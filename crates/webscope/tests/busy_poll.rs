//! `--busy-poll` on both sides, proved on and off by the syscalls themselves (strace): the
//! server sets SO_BUSY_POLL and SO_PREFER_BUSY_POLL once per listener (accepted sockets
//! inherit them), the load generator once per connection; without the flag, never.

mod lab_support;

use std::process::{Command, Stdio};
use std::time::Duration;
fn exe() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_BIN_EXE_webscope"))
}

/// Lines of `strace -f -e trace=setsockopt` naming `option`.
fn count(trace: &str, option: &str) -> usize {
    trace.lines().filter(|l| l.contains(option)).count()
}

fn traced_serve(root: &std::path::Path, extra: &[&str]) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace");
    let mut child = Command::new("strace")
        .args(["-f", "-e", "trace=setsockopt", "-o"])
        .arg(&trace)
        .arg(exe())
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--workers",
            "2",
            "--root",
        ])
        .arg(root)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("strace is needed for this test (apt-get install strace)");
    let mut said = String::new();
    {
        use std::io::Read;
        let mut stdout = child.stdout.take().unwrap();
        let mut buf = [0u8; 4096];
        // The start-up lines come in one write.
        let n = stdout.read(&mut buf).unwrap();
        said.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    std::thread::sleep(Duration::from_millis(200));
    // The server's PID is the one that set up its listeners; stopped, strace exits too.
    let server = std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .find(|l| l.contains("SO_REUSEPORT"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|pid| pid.parse::<i32>().ok());
    if let Some(pid) = server {
        // SAFETY: signalling the server we started.
        unsafe { libc::kill(pid, libc::SIGTERM) };
    }
    let _ = child.wait();
    (said, std::fs::read_to_string(&trace).unwrap())
}

#[test]
fn serve_sets_busy_polling_on_its_listeners_only_when_asked() {
    let root = tempfile::tempdir().unwrap();
    let (said, trace) = traced_serve(root.path(), &["--busy-poll", "50"]);
    assert!(said.contains("busy polling 50 µs"), "{said}");
    assert_eq!(count(&trace, "SO_BUSY_POLL, [50]"), 2, "{trace}");
    assert_eq!(count(&trace, "SO_PREFER_BUSY_POLL, [1]"), 2, "{trace}");
    let (said, trace) = traced_serve(root.path(), &[]);
    assert!(!said.contains("busy polling"), "{said}");
    assert_eq!(count(&trace, "BUSY_POLL"), 0, "{trace}");
}

#[test]
fn load_sets_busy_polling_on_each_connection_only_when_asked() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("a.txt"), b"hello").unwrap();
    let served = lab_support::Served::start(root.path());
    let url = format!("{}a.txt", served.base_url);
    for (extra, expected) in [(&["--busy-poll", "30"][..], 1 + 3), (&[][..], 0)] {
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("trace");
        let out = Command::new("strace")
            .args(["-f", "-e", "trace=setsockopt", "-o"])
            .arg(&trace)
            .arg(exe())
            .args(["load", &url, "-c", "3", "-t", "1", "-d", "300ms"])
            .args(extra)
            .output()
            .expect("strace is needed for this test (apt-get install strace)");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let trace = std::fs::read_to_string(&trace).unwrap();
        // The probe at start, then each of the 3 keep-alive connections.
        assert_eq!(
            count(&trace, "SO_BUSY_POLL,"),
            expected,
            "{extra:?}: {trace}"
        );
        assert_eq!(
            count(&trace, "SO_PREFER_BUSY_POLL"),
            expected,
            "{extra:?}: {trace}"
        );
    }
    served.stop();
}
