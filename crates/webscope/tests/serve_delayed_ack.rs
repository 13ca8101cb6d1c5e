//! A keep-alive client asking for large files one after another never waits for a delayed ACK.
//!
//! Without TCP_NODELAY on the server's sockets, the last partial segment of a response that
//! spans several (a 100 KiB file: the head with MSG_MORE, then sendfile) may wait under Nagle
//! for the ACK of the segment before it, and a client that reads as wrk does (8 KiB at a time)
//! delays that ACK by 40 ms: wrk -c1 saw p99 41 ms where nginx gave 0.4 ms, on both engines.
//! Nothing else flagged it because no test looked at latency tails.
//!
//! The proof counts events, not milliseconds: the test runs in a network namespace of its own
//! (a thread that unshares its network; the server it starts inherits it), so the kernel's
//! `TcpExt DelayedACKs` counter there counts only this client's delayed-ACK timer firings. Each
//! such firing is a response that waited 40 ms. Before the fix, 3 000 requests saw tens of
//! them (and as many responses over 35 ms); after it, none.

mod serve_support;

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use serve_support::{Server, Site};

const REQUESTS: usize = 3000;
const SIZE: usize = 100 * 1024;

/// The delayed ACKs the calling thread's network namespace has sent so far.
fn delayed_acks() -> u64 {
    let text = std::fs::read_to_string("/proc/thread-self/net/netstat").expect("netstat");
    let mut lines = text.lines();
    while let (Some(names), Some(values)) = (lines.next(), lines.next()) {
        if names.starts_with("TcpExt:") {
            let at = names
                .split_whitespace()
                .position(|n| n == "DelayedACKs")
                .expect("DelayedACKs in TcpExt");
            return values
                .split_whitespace()
                .nth(at)
                .and_then(|v| v.parse().ok())
                .expect("a count");
        }
    }
    panic!("no TcpExt in netstat")
}

/// Puts the calling thread in a network namespace of its own with loopback up; false (with
/// a note) where that cannot be done, unless WEBSCOPE_REQUIRE_NETNS is set.
fn own_network() -> bool {
    // SAFETY: unshare affects only the calling thread's namespaces.
    let made = unsafe { libc::unshare(libc::CLONE_NEWNET) } == 0;
    let up = made
        && std::process::Command::new("ip")
            .args(["link", "set", "lo", "up"])
            .status()
            .is_ok_and(|s| s.success());
    if !up {
        assert!(
            std::env::var_os("WEBSCOPE_REQUIRE_NETNS").is_none(),
            "WEBSCOPE_REQUIRE_NETNS is set but no network namespace could be made: {}",
            std::io::Error::last_os_error()
        );
        eprintln!("skipping: no network namespace here (needs root, unshare and ip)");
    }
    up
}

/// (delayed ACKs, responses over 35 ms) for `REQUESTS` keep-alive requests of the 100 KiB file,
/// read 8 KiB at a time.
fn ask(server: &Server) -> (u64, usize) {
    let mut stream = server.connect();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let request = b"GET /100k.bin HTTP/1.1\r\nHost: t\r\n\r\n";
    let mut buf = vec![0u8; 8192];
    let before = delayed_acks();
    let mut slow = 0;
    for _ in 0..REQUESTS {
        let start = Instant::now();
        stream.write_all(request).unwrap();
        let mut seen: Vec<u8> = Vec::new();
        let head_end = loop {
            let n = stream.read(&mut buf).expect("a response");
            assert!(n > 0, "the server closed the connection");
            seen.extend_from_slice(&buf[..n]);
            if let Some(at) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
        };
        let mut body = seen.len() - head_end;
        while body < SIZE {
            let n = stream.read(&mut buf).expect("the body");
            assert!(n > 0, "the server closed the connection mid-body");
            body += n;
        }
        assert_eq!(body, SIZE, "one response, nothing after it");
        if start.elapsed() > Duration::from_millis(35) {
            slow += 1;
        }
    }
    (delayed_acks() - before, slow)
}

#[test]
fn large_keep_alive_responses_never_wait_for_a_delayed_ack() {
    let handle = std::thread::spawn(|| {
        if !own_network() {
            return;
        }
        let site = Site::new();
        site.write("100k.bin", &serve_support::pattern(SIZE));
        for engine in ["uring", "epoll"] {
            let server = Server::start(site.root(), &["--io", engine]);
            let (delayed, slow) = ask(&server);
            server.stop(Duration::from_secs(10));
            // One firing is left for the machine: a client descheduled for 40 ms between a
            // response and its next request lets the timer fire once, whatever the server does.
            assert!(
                delayed <= 1,
                "--io {engine}: {delayed} delayed ACKs and {slow} responses over 35 ms in {REQUESTS} keep-alive requests of 100 KiB"
            );
        }
    });
    if let Err(panic) = handle.join() {
        std::panic::resume_unwind(panic);
    }
}
