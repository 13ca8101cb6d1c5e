//! A child process run to its end with its peak memory: the tests of hostile inputs assert
//! that webscope's memory stays under a limit whatever the input, and that it exits rather
//! than aborts.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

/// How a child ended, what it said, and its peak resident set.
#[derive(Debug)]
pub struct Finished {
    /// Its exit code, `None` when a signal ended it.
    pub code: Option<i32>,
    /// The signal that ended it (6 is an abort, 9 the watchdog's kill).
    pub signal: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    /// Peak resident set size, MiB (`ru_maxrss` of wait4). An upper bound: Linux counts in
    /// it the resident set of the test process it was forked from, so tests keep that small
    /// (no big buffers: they write their hostile files a piece at a time).
    pub max_rss_mib: f64,
}

/// Runs `cmd` with stdout and stderr piped, `feed` writing its stdin (closed when `feed`
/// returns; none when `None`), `on_line` seeing each stdout line as it comes with the
/// child's pid, and SIGKILL after `limit`. Reaps it with wait4 for its peak memory.
pub fn run(
    cmd: &mut Command,
    feed: Option<Box<dyn FnOnce(ChildStdin) + Send>>,
    mut on_line: impl FnMut(&str, i32),
    limit: Duration,
) -> Finished {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.stdin(if feed.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    });
    let mut child = cmd.spawn().unwrap();
    let pid = child.id() as i32;
    // The watchdog kills only an unreaped child, so never a recycled pid.
    let reaped = Arc::new(Mutex::new(false));
    let (done, wait_done) = mpsc::channel::<()>();
    let watchdog = {
        let reaped = Arc::clone(&reaped);
        std::thread::spawn(move || {
            if wait_done.recv_timeout(limit).is_err() && !*reaped.lock().unwrap() {
                // SAFETY: kill(2) on our own child, not yet reaped.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        })
    };
    let feeder = feed
        .zip(child.stdin.take())
        .map(|(feed, stdin)| std::thread::spawn(move || feed(stdin)));
    let mut stderr_pipe = child.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr_pipe.read_to_string(&mut text);
        text
    });
    let mut stdout = String::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        on_line(&line, pid);
        stdout.push_str(&line);
        stdout.push('\n');
    }
    // SAFETY: waitid/wait4 on our own child; WNOWAIT leaves it a zombie (its pid held)
    // until `reaped` is set, then wait4 reaps it with its resource usage.
    let (status, usage) = unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        libc::waitid(
            libc::P_PID,
            pid as u32,
            &mut info,
            libc::WEXITED | libc::WNOWAIT,
        );
        *reaped.lock().unwrap() = true;
        let mut status = 0;
        let mut usage: libc::rusage = std::mem::zeroed();
        assert_eq!(libc::wait4(pid, &mut status, 0, &mut usage), pid);
        (status, usage)
    };
    let _ = done.send(());
    watchdog.join().unwrap();
    if let Some(feeder) = feeder {
        let _ = feeder.join();
    }
    drop(child);
    Finished {
        code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
        signal: libc::WIFSIGNALED(status).then(|| libc::WTERMSIG(status)),
        stdout,
        stderr: stderr.join().unwrap(),
        max_rss_mib: usage.ru_maxrss as f64 / 1024.0,
    }
}
