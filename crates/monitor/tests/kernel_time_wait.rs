//! The kernel module's time in TIME_WAIT against known truth: a client that comes back from
//! the same port after a gap the test measures cuts the server's TIME_WAIT short (the
//! kernel reuses the pair for the new SYN), so each TIME_WAIT lasts that gap.
//!
//! Needs root (CI sets WEBSCOPE_REQUIRE_KERNEL); elsewhere it says why it is skipped. A
//! TIME_WAIT that runs its course lasts the kernel's 60 s, too long for a test: that end
//! (the timer firing) is not checked here.
#![cfg(feature = "kernel")]

mod kernel_support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use kernel_support::{kernel_monitor_in, serial};
use webscope_monitor::kernel::hlog::{time_wait_tag, HLOG};

/// Connects to `server` from `local` (the same port each time: SO_REUSEADDR).
fn connect_from(local: SocketAddr, server: SocketAddr) -> TcpStream {
    let socket = socket2::Socket::new(
        socket2::Domain::for_address(server),
        socket2::Type::STREAM,
        None,
    )
    .unwrap();
    socket.set_reuse_address(true).unwrap();
    socket.bind(&local.into()).unwrap();
    socket.connect(&server.into()).unwrap();
    let stream: TcpStream = socket.into();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream
}

/// A port free on `ip` now, for the client to come back from.
fn free_port(ip: &str) -> SocketAddr {
    let l = TcpListener::bind((ip, 0)).unwrap();
    l.local_addr().unwrap()
}

#[test]
fn a_client_back_from_the_same_port_cuts_time_wait_short_and_its_time_is_the_gap() {
    let _serial = serial();
    const ROUNDS: usize = 5;
    const GAP: Duration = Duration::from_millis(150);
    let dir = tempfile::tempdir().unwrap();
    let v4 = TcpListener::bind("127.0.0.1:0").unwrap();
    let v6 = TcpListener::bind("[::1]:0").unwrap();
    let ports = [
        v4.local_addr().unwrap().port(),
        v6.local_addr().unwrap().port(),
    ];
    let Some(mut monitor) = kernel_monitor_in(&ports, &[], Some(dir.path())) else {
        return;
    };
    // Per port: from each server close to the next connect().
    let mut gaps: Vec<Vec<Duration>> = Vec::new();
    for (listener, ip) in [(&v4, "127.0.0.1"), (&v6, "::1")] {
        let mut port_gaps = Vec::new();
        let server = listener.local_addr().unwrap();
        let local = free_port(ip);
        let mut closed_at = None;
        for _ in 0..ROUNDS {
            // The SYN reaches the server's TIME_WAIT socket during connect(): the gap ends
            // after it starts.
            let mut c = connect_from(local, server);
            if let Some(at) = closed_at {
                port_gaps.push(Instant::now().duration_since(at));
            }
            let (mut s, _) = listener.accept().unwrap();
            s.write_all(b"x").unwrap();
            // The server closes first: its side goes into TIME_WAIT once the client's FIN
            // comes, which read_to_end's EOF and the drop below bring at once.
            closed_at = Some(Instant::now());
            drop(s);
            let mut got = Vec::new();
            c.read_to_end(&mut got).unwrap();
            assert_eq!(got, b"x");
            drop(c);
            std::thread::sleep(GAP);
        }
        port_gaps.sort();
        gaps.push(port_gaps);
    }
    std::thread::sleep(Duration::from_millis(50));
    monitor.sample().unwrap();
    let results = monitor.stop().unwrap();
    let k = results.summary.kernel.expect("kernel figures");
    let cut = (ROUNDS - 1) as u64;
    for (port, gaps) in ports.into_iter().zip(&gaps) {
        let p = k.ports.iter().find(|p| p.port == port).unwrap();
        assert_eq!(
            p.time_wait, ROUNDS as u64,
            "every round closed into TIME_WAIT: {p:?}"
        );
        assert_eq!(
            (p.time_wait_cut, p.time_wait_expired, p.time_wait_fin_wait2),
            (cut, 0, 0),
            "each SYN from the same port ended the one before it: {p:?}"
        );
        let tw = p.time_in_time_wait.expect("times in TIME_WAIT");
        assert_eq!(tw.count, cut, "{tw:?}");
        let logged: u64 =
            webscope_load::read_intervals(&dir.path().join(HLOG), Some(&time_wait_tag(port)))
                .unwrap()
                .iter()
                .map(|i| i.histogram.len())
                .sum();
        assert_eq!(logged, cut, "kernel.hlog holds each one");
        // Each TIME_WAIT started after the server's close and ended within the next
        // connect(): at most the gap the test measured, and less by no more than the FIN's
        // exchange, the kernel's millisecond stamps and the histogram's 3.2 %.
        let measured = gaps[gaps.len() / 2].as_secs_f64() * 1e3;
        eprintln!(":{port} time in TIME_WAIT {tw:?}, gaps measured {gaps:?}");
        assert!(
            tw.p50_ms <= measured * 1.04 + 2.0 && tw.p50_ms >= measured * 0.96 - 5.0,
            "the median time in TIME_WAIT is the median gap ({measured:.1} ms): {tw:?}"
        );
        assert!(
            tw.max_ms <= gaps[gaps.len() - 1].as_secs_f64() * 1e3 * 1.04 + 2.0,
            "{tw:?}"
        );
    }
}
