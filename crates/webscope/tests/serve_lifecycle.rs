//! Starting and stopping `webscope serve`: operator errors, graceful shutdown, a complete
//! access log.

mod serve_support;

use std::io::{Read, Write};
use std::process::Command;
use std::time::{Duration, Instant};

use serve_support::*;

fn serve_error(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_webscope"))
        .arg("serve")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn operator_errors_are_one_clear_line_and_a_nonzero_exit() {
    let (code, err) = serve_error(&["--root", "/no/such/dir", "--listen", "127.0.0.1:0"]);
    assert_ne!(code, 0);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("/no/such/dir") && err.contains("--root"),
        "{err}"
    );

    let file = tempfile::NamedTempFile::new().unwrap();
    let (code, err) = serve_error(&[
        "--root",
        file.path().to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("not a directory"), "{err}");

    let site = Site::new();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let (code, err) = serve_error(&["--root", site.root().to_str().unwrap(), "--listen", &addr]);
    assert_ne!(code, 0);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("cannot listen") && err.contains("--listen"),
        "{err}"
    );

    let (code, err) = serve_error(&["--root", ".", "--listen", "nonsense"]);
    assert_ne!(code, 0);
    assert!(err.contains("--listen"), "{err}");

    let (code, err) = serve_error(&[
        "--root",
        site.root().to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
        "--access-log",
        "/no/such/dir/access.log",
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("access log"), "{err}");
    let root = site.root().to_str().unwrap();
    let (code, err) = serve_error(&["--root", root, "--listen", "127.0.0.1:0", "--io", "kqueue"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("kqueue") && err.contains("epoll or uring"),
        "{err}"
    );
    let (code, err) = serve_error(&[
        "--root",
        root,
        "--listen",
        "127.0.0.1:0",
        "--io",
        "uring",
        "--tls-cert",
        "/no/such/cert.pem",
        "--tls-key",
        "/no/such/key.pem",
    ]);
    assert_ne!(code, 0);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("--io uring") && err.contains("--io epoll"),
        "{err}"
    );
}

#[test]
fn sigterm_finishes_responses_in_flight_and_flushes_every_log_line() {
    let site = Site::new();
    // A sparse 32 MiB file: a response that takes a while for a slow reader.
    const BIG: usize = 32 << 20;
    std::fs::File::create(site.root().join("big.bin"))
        .unwrap()
        .set_len(BIG as u64)
        .unwrap();
    let logdir = tempfile::tempdir().unwrap();
    let log = logdir.path().join("access.log");
    let log_arg = log.to_str().unwrap().to_string();
    let server = Server::start(site.root(), &["--workers", "2", "--access-log", &log_arg]);

    // A burst of requests over several connections.
    let mut sent = 0;
    for _ in 0..10 {
        let mut stream = server.connect();
        let mut batch = Vec::new();
        for _ in 0..50 {
            batch
                .extend_from_slice(b"GET /1k.bin HTTP/1.1\r\nHost: t\r\nUser-Agent: burst\r\n\r\n");
        }
        stream.write_all(&batch).unwrap();
        assert_eq!(read_responses(&mut stream, 50, false).len(), 50);
        sent += 50;
    }
    // An idle keep-alive connection, and a download in flight.
    let mut idle = server.connect();
    idle.write_all(b"GET /1k.bin HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    assert_eq!(read_responses(&mut idle, 1, false).len(), 1);
    sent += 1;
    let mut download = server.connect();
    download
        .write_all(b"GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    sent += 1;
    let progress = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = std::sync::Arc::clone(&progress);
    let reader = std::thread::spawn(move || {
        let mut total = 0usize;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match download.read(&mut buf) {
                Ok(0) | Err(_) => return total,
                Ok(n) => {
                    total += n;
                    seen.store(total, std::sync::atomic::Ordering::Relaxed);
                    // About 1.5 s for the whole file: it outlasts the signal.
                    std::thread::sleep(Duration::from_millis(3));
                }
            }
        }
    });
    std::thread::sleep(Duration::from_millis(200));
    let at_signal = progress.load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        at_signal > 0 && at_signal < BIG,
        "the download is not in flight: {at_signal}"
    );

    let start = Instant::now();
    let (status, _stdout, stderr) = server.stop(Duration::from_secs(20));
    assert!(status.success(), "exit status {status:?}, stderr {stderr}");
    let received = reader.join().unwrap();
    assert!(
        received > BIG,
        "the download in flight was cut: {received} bytes"
    );
    assert!(
        closed_within(&mut idle, Duration::from_secs(1)),
        "idle connection left open"
    );
    assert!(start.elapsed() < Duration::from_secs(15));

    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), sent, "access log lines");
    assert!(lines
        .iter()
        .all(|l| l.contains("\"GET /") && l.contains(" 200 ")));
    assert_eq!(
        lines.iter().filter(|l| l.contains("\"burst\"")).count(),
        500
    );
}

#[test]
fn sigint_stops_an_idle_server_at_once() {
    let site = Site::new();
    let server = Server::start(site.root(), &[]);
    assert_eq!(get(&server, "/1k.bin").status, 200);
    let start = Instant::now();
    let (status, _, _) = server.stop(Duration::from_secs(5));
    assert!(status.success());
    assert!(start.elapsed() < Duration::from_secs(2));
}

#[test]
fn the_access_log_goes_to_stdout_with_dash() {
    let site = Site::new();
    let server = Server::start(site.root(), &["--access-log", "-"]);
    let resp = exchange(
        &server,
        b"GET /index.html HTTP/1.1\r\nHost: t\r\nReferer: http://ref/\r\nUser-Agent: agent/1\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(resp.status, 200);
    assert_eq!(get(&server, "/missing").status, 404);
    let _ = exchange(&server, b"BAD\r\n\r\n");
    let (status, stdout, _) = server.stop(Duration::from_secs(5));
    assert!(status.success());
    // The server's own start-up lines (the engine, ...) come before the log's.
    let stdout: Vec<String> = stdout
        .into_iter()
        .filter(|line| !line.starts_with("webscope serve:"))
        .collect();
    assert_eq!(stdout.len(), 3, "{stdout:?}");
    assert!(stdout[0].starts_with("127.0.0.1 - - ["), "{}", stdout[0]);
    assert!(
        stdout[0].ends_with("\"GET /index.html HTTP/1.1\" 200 14 \"http://ref/\" \"agent/1\""),
        "{}",
        stdout[0]
    );
    assert!(
        stdout[1].contains("\"GET /missing HTTP/1.1\" 404 "),
        "{}",
        stdout[1]
    );
    assert!(stdout[2].contains("\"BAD\" 400 "), "{}", stdout[2]);
}

/// #28 §4: the log's bytes field is the body bytes written, not the file's length: a client
/// that reads 1 MB of a 64 MiB file and closes, and one that stops reading and is cut by the
/// shutdown timeout, by sendfile and by the buffered way (`--disable sendfile,mmap`). Before,
/// both were logged 10485760.
#[test]
fn the_access_log_counts_the_body_bytes_written_not_promised() {
    // Larger than loopback's socket buffers can take (a client that read 1 MB of a 10 MiB
    // file and closed was once logged 10485760 here: the kernel had taken the rest).
    const BIG: u64 = 64 << 20;
    for disable in [&[][..], &["--disable", "sendfile,mmap"][..]] {
        let site = Site::new();
        std::fs::File::create(site.root().join("big.bin"))
            .unwrap()
            .set_len(BIG)
            .unwrap();
        let logdir = tempfile::tempdir().unwrap();
        let log = logdir.path().join("access.log");
        let log_arg = log.to_str().unwrap().to_string();
        let mut args = vec!["--access-log", &log_arg, "--shutdown-timeout", "1s"];
        args.extend_from_slice(disable);
        let server = Server::start(site.root(), &args);
        let read_1mb = || {
            let mut stream = server.connect();
            stream
                .set_read_timeout(Some(Duration::from_secs(5)))
                .unwrap();
            stream
                .write_all(b"GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\n")
                .unwrap();
            let mut got = vec![0u8; 1_000_000];
            stream.read_exact(&mut got).unwrap();
            stream
        };
        drop(read_1mb());
        let stalled = read_1mb();
        std::thread::sleep(Duration::from_millis(300));
        let (status, _, _) = server.stop(Duration::from_secs(10));
        assert!(status.success());
        drop(stalled);
        let text = std::fs::read_to_string(&log).unwrap();
        let bytes: Vec<u64> = text
            .lines()
            .filter_map(|line| line.split("/big.bin HTTP/1.1\" 200 ").nth(1))
            .filter_map(|rest| rest.split(' ').next()?.parse().ok())
            .collect();
        assert_eq!(bytes.len(), 2, "{disable:?}: {text}");
        for b in bytes {
            assert!(
                (900_000..BIG).contains(&b),
                "{disable:?}: logged {b} for a client that read 1 MB: {text}"
            );
        }
    }
}
