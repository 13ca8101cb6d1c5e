//! `characterize` and `fileset like` under SIGINT and SIGTERM (#51, left open from the first
//! pass): the reading stops, what was read is summarised, nothing is written (nor left
//! half-written), and the exit code is 130. The logs are fed through a FIFO by a writer that
//! never runs out, so the signal always lands while the command is reading; a writer that
//! stops writing but keeps the FIFO open is a read blocked for good, which a watchdog ends.

mod lab_support;

use std::ffi::CString;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use lab_support::webscope;

fn fifo(dir: &Path) -> PathBuf {
    let path = dir.join("access.log");
    let c = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path; mkfifo reads it and nothing else.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
    path
}

/// A Combined line, twenty a second from 1 November 2023 (20 million lines: 12 days).
fn line(i: u64) -> String {
    let t = i / 20;
    format!(
        "192.0.2.{} - - [{:02}/Nov/2023:{:02}:{:02}:{:02} +0000] \"GET /f{}.html HTTP/1.1\" 200 {} \"-\" \"agent\"\n",
        i % 200,
        1 + t / 86_400,
        t / 3600 % 24,
        t / 60 % 60,
        t % 60,
        i % 500,
        100 + i % 5000
    )
}

/// Writes lines into `path` until the reader goes (or `stall_after` lines, then holds the
/// FIFO open without writing until `release`), counting them in `written`.
fn writer(
    path: PathBuf,
    written: Arc<AtomicU64>,
    stall_after: Option<u64>,
    release: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(&path) else {
            return;
        };
        // Bounded: 20 million lines is far more than any reader here takes before the signal.
        for i in 0..20_000_000u64 {
            if stall_after == Some(i) {
                let since = Instant::now();
                while !release.load(Ordering::Relaxed) && since.elapsed() < Duration::from_secs(30)
                {
                    std::thread::sleep(Duration::from_millis(20));
                }
                return;
            }
            if f.write_all(line(i).as_bytes()).is_err() {
                return; // the reader is gone
            }
            written.store(i + 1, Ordering::Relaxed);
        }
    })
}

/// Waits until `written` reaches `lines` (or fails after a minute), then sends `signal`.
fn signal_after(child: &Child, written: &AtomicU64, lines: u64, signal: i32) {
    let since = Instant::now();
    while written.load(Ordering::Relaxed) < lines {
        assert!(
            since.elapsed() < Duration::from_secs(60),
            "the command read only {} lines in a minute",
            written.load(Ordering::Relaxed)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: a signal to the child this test started and has not reaped.
    unsafe { libc::kill(child.id() as i32, signal) };
}

/// The child's output, or a failure (and the child killed) after `limit`.
fn finish(mut child: Child, limit: Duration) -> (Output, Duration) {
    let since = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return (child.wait_with_output().unwrap(), since.elapsed());
        }
        if since.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "still running {limit:?} after the signal: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Names in `dir` other than `keep`: what a command left behind.
fn left_in(dir: &Path, keep: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p != keep)
        .map(|p| p.display().to_string())
        .collect()
}

#[test]
fn characterize_interrupted_summarises_what_it_read_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let log = fifo(tmp.path());
    let written = Arc::new(AtomicU64::new(0));
    let release = Arc::new(AtomicBool::new(true));
    let feeding = writer(log.clone(), written.clone(), None, release);
    let child = webscope()
        .args(["characterize", "-q", "--out"])
        .arg(tmp.path().join("report"))
        .arg(&log)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    signal_after(&child, &written, 30_000, libc::SIGINT);
    let (out, _) = finish(child, Duration::from_secs(30));
    feeding.join().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(130), "{stdout}\n{stderr}");
    assert!(stdout.starts_with("Interrupted after "), "{stdout}");
    // The summary of what was read: its requests, at least those before the signal, less
    // than the FIFO took (the pipe holds some the reader never saw).
    let requests: u64 = stdout
        .lines()
        .find(|l| l.contains(" requests over "))
        .and_then(|l| l.split_once(": ")?.1.split(" requests over").next())
        // Digits grouped by a space (of whichever width `human::count` uses).
        .and_then(|n| {
            n.chars()
                .filter(char::is_ascii_digit)
                .collect::<String>()
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no request count: {stdout}"));
    assert!(requests >= 1000, "{requests}: {stdout}");
    assert!(requests <= written.load(Ordering::Relaxed));
    assert!(stdout.contains("Statuses:  200 100 %"), "{stdout}");
    assert!(
        stderr.contains("characterize interrupted after"),
        "{stderr}"
    );
    assert!(stderr.contains("report not written"), "{stderr}");
    // --out was made for this run and nothing was written in it: it is gone, and nothing
    // half-written lies beside it.
    assert_eq!(left_in(tmp.path(), &log), Vec::<String>::new());
}

#[test]
fn fileset_like_terminated_says_what_it_counted_and_makes_no_set() {
    let tmp = tempfile::tempdir().unwrap();
    let log = fifo(tmp.path());
    let written = Arc::new(AtomicU64::new(0));
    let release = Arc::new(AtomicBool::new(true));
    let feeding = writer(log.clone(), written.clone(), None, release);
    let child = webscope()
        .args(["fileset", "like", "-q", "--out"])
        .arg(tmp.path().join("site"))
        .arg(&log)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    signal_after(&child, &written, 30_000, libc::SIGTERM);
    let (out, _) = finish(child, Duration::from_secs(30));
    feeding.join().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(130), "{stdout}\n{stderr}");
    assert!(
        stdout.starts_with("webscope fileset like: ") && stdout.contains("GET and HEAD requests"),
        "{stdout}"
    );
    assert!(stderr.contains("nothing written"), "{stderr}");
    assert_eq!(left_in(tmp.path(), &log), Vec::<String>::new());
}

#[test]
fn a_read_blocked_for_good_is_ended_by_the_watchdog() {
    let tmp = tempfile::tempdir().unwrap();
    let log = fifo(tmp.path());
    let written = Arc::new(AtomicU64::new(0));
    let release = Arc::new(AtomicBool::new(false));
    // 2 000 lines, then the writer holds the FIFO open and writes nothing.
    let feeding = writer(log.clone(), written.clone(), Some(2000), release.clone());
    let child = webscope()
        .args(["characterize", "-q"])
        .arg(&log)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    signal_after(&child, &written, 2000, libc::SIGINT);
    let (out, took) = finish(child, Duration::from_secs(20));
    release.store(true, Ordering::Relaxed);
    feeding.join().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("the input did not stop within"), "{stderr}");
    assert!(took < Duration::from_secs(15), "{took:?}");
}
