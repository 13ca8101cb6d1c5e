//! The kernel module against known truth: servers whose accept delay, connection count,
//! listen backlog or packet loss the test sets, compared with what the kernel's own counters
//! (nstat's) and `ss` say, and a CPU hog beside a watched thread.
//!
//! They need root (CI runs as root and sets WEBSCOPE_REQUIRE_KERNEL, so there they must
//! run); elsewhere each says why it is skipped. The ones that read the kernel's TCP counters
//! run in a network namespace of their own (one thread moved into it), so no other process's
//! traffic is in those counters; they need unshare's privilege too (WEBSCOPE_REQUIRE_NETNS).
//!
//! Built with the `kernel` feature only (the README's test command turns it on); without it,
//! `kernel_unbuilt.rs` checks the refusal, and fails where WEBSCOPE_REQUIRE_KERNEL is set.
#![cfg(feature = "kernel")]

mod kernel_support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::process::Command;
use std::time::{Duration, Instant};

use kernel_support::{finish, in_netns, kernel_monitor, kernel_monitor_in, mib, nft, serial, tool};
use webscope_monitor::kernel::hlog::{accept_wait_tag, lifetime_tag, HLOG, RUNQ_TAG};
use webscope_monitor::kernel::{KernelSummary, PortFigures};

fn port_of(summary: &KernelSummary, port: u16) -> &PortFigures {
    summary.ports.iter().find(|p| p.port == port).unwrap()
}

fn listener(addr: &str, backlog: i32) -> (TcpListener, u16) {
    let addr: SocketAddr = addr.parse().unwrap();
    let socket = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::STREAM,
        None,
    )
    .unwrap();
    socket.bind(&addr.into()).unwrap();
    socket.listen(backlog).unwrap();
    let listener: TcpListener = socket.into();
    let port = listener.local_addr().unwrap().port();
    (listener, port)
}

/// Waits until `listener` has a connection queued (poll), without taking it.
fn wait_readable(listener: &TcpListener) {
    let mut fds = libc::pollfd {
        fd: listener.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    let n = unsafe { libc::poll(&mut fds, 1, 10_000) };
    assert_eq!(n, 1, "a connection arrives within 10 s");
}

#[test]
fn a_server_that_sleeps_20_ms_before_each_accept_shows_a_20_ms_queue_wait() {
    let _serial = serial();
    const N: usize = 12;
    const DELAY: Duration = Duration::from_millis(20);
    let (listener, port) = listener("127.0.0.1:0", 128);
    let Some(monitor) = kernel_monitor(&[port], &[]) else {
        return;
    };
    let server = std::thread::spawn(move || {
        for _ in 0..N {
            wait_readable(&listener);
            std::thread::sleep(DELAY);
            let (mut s, _) = listener.accept().unwrap();
            s.write_all(b"x").unwrap();
        }
    });
    // One client at a time: each waits in the queue for the server's sleep alone.
    for _ in 0..N {
        let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut byte = [0u8; 1];
        c.read_exact(&mut byte).unwrap();
    }
    server.join().unwrap();
    let k = finish(monitor);
    let p = port_of(&k, port);
    assert_eq!(p.established, N as u64, "{p:?}");
    assert_eq!(
        p.accepted_syscall, N as u64,
        "seen at accept()'s return: {p:?}"
    );
    let wait = p.accept_wait.expect("queue waits");
    eprintln!("accept-queue wait behind a 20 ms sleep: {wait:?}");
    assert_eq!(wait.count, N as u64, "{wait:?}");
    assert!(
        (18.0..=22.0).contains(&wait.p50_ms),
        "the median wait is the server's 20 ms sleep, within 10 %: {wait:?}"
    );
}

/// `ss`'s count of TIME_WAIT sockets whose local port is `port`.
fn ss_time_wait(port: u16) -> usize {
    let out = tool("ss")
        .args(["-Htan", "state", "time-wait", &format!("sport = :{port}")])
        .output()
        .expect("ss (iproute2) runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .count()
}

#[test]
fn n_connections_give_n_lifetimes_and_time_wait_entries_agree_with_ss() {
    let _serial = serial();
    const N: usize = 25;
    let (v4, port4) = listener("127.0.0.1:0", 128);
    let (v6, port6) = listener("[::1]:0", 128);
    // A port nothing listens on: watched, and nothing is counted for it.
    let idle = TcpListener::bind("127.0.0.1:0").unwrap();
    let idle_port = idle.local_addr().unwrap().port();
    drop(idle);
    let Some(monitor) = kernel_monitor(&[port4, port6, idle_port], &[]) else {
        return;
    };
    for (listener, addr) in [(&v4, "127.0.0.1"), (&v6, "::1")] {
        let port = listener.local_addr().unwrap().port();
        for i in 0..N {
            let mut c = TcpStream::connect((addr, port)).unwrap();
            let (mut s, _) = listener.accept().unwrap();
            s.write_all(b"hello").unwrap();
            // The server closes first (into TIME_WAIT), except for every fifth connection,
            // which the client closes first (the server then passes through LAST_ACK).
            if i % 5 == 4 {
                // What the client got is read first: closing with unread data would reset.
                let mut hello = [0u8; 5];
                c.read_exact(&mut hello).unwrap();
                drop(c);
                std::thread::sleep(Duration::from_millis(2));
                drop(s);
            } else {
                drop(s);
                let mut rest = Vec::new();
                c.read_to_end(&mut rest).unwrap();
            }
        }
    }
    // Let the last FINs and ACKs land.
    std::thread::sleep(Duration::from_millis(200));
    let k = finish(monitor);
    for port in [port4, port6] {
        let p = port_of(&k, port);
        assert_eq!(p.established, N as u64, "{p:?}");
        assert_eq!(p.closed, N as u64, "one lifetime per connection: {p:?}");
        assert_eq!(p.lifetime.map(|l| l.count), Some(N as u64), "{p:?}");
        assert_eq!(p.closed_unseen + p.closed_waiting, 0, "{p:?}");
        let server_closed_first = N - N / 5;
        assert_eq!(p.time_wait, server_closed_first as u64, "{p:?}");
        assert_eq!(
            ss_time_wait(port),
            server_closed_first,
            "the TIME_WAIT entries are the sockets ss lists in TIME_WAIT ({p:?})"
        );
        assert_eq!(p.transitions["last_ack"], (N / 5) as u64, "{p:?}");
    }
    // Every accept was an accept(): the first-read hook, which runs at every receive on the
    // machine, was detached.
    assert!(
        k.detached.len() == 1 && k.detached[0].starts_with("sock_recv_length"),
        "{:?}",
        k.detached
    );
    let idle = port_of(&k, idle_port);
    assert_eq!(
        (idle.established, idle.closed, idle.listen_drops),
        (0, 0, None)
    );
}

#[test]
fn a_flooded_backlog_of_one_counts_its_drops_as_the_kernels_listen_overflows() {
    let _serial = serial();
    let result = in_netns(|| {
        let (listener, port) = listener("127.0.0.1:0", 1);
        let monitor = kernel_monitor(&[port], &[])?;
        let before = (
            mib("netstat", "TcpExt", "ListenOverflows"),
            mib("netstat", "TcpExt", "ListenDrops"),
        );
        // 40 connects at once to a queue of two (the kernel allows backlog + 1) that
        // nobody accepts: SYNs are refused, and those refused again when retried at 1 s.
        let mut clients = Vec::new();
        for _ in 0..40 {
            let c =
                socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
            c.set_nonblocking(true).unwrap();
            let addr: SocketAddr = ([127, 0, 0, 1], port).into();
            let _ = c.connect(&addr.into());
            clients.push(c);
        }
        std::thread::sleep(Duration::from_millis(1500));
        let after = (
            mib("netstat", "TcpExt", "ListenOverflows"),
            mib("netstat", "TcpExt", "ListenDrops"),
        );
        let k = finish(monitor);
        drop(listener);
        Some((k, port, after.0 - before.0, after.1 - before.1))
    });
    let Some(Some((k, port, overflows, drops))) = result else {
        return;
    };
    let p = port_of(&k, port);
    assert!(
        overflows >= 38,
        "the flood overflowed the queue: {overflows}"
    );
    assert_eq!(
        p.listen_drops,
        Some(overflows),
        "listen drops are nstat's ListenOverflows ({overflows}) and ListenDrops ({drops}): {p:?}"
    );
    assert_eq!(drops, overflows, "no drop here but overflows");
    assert_eq!(p.established, 2, "two fit in the queue: {p:?}");
}

/// A listener with TCP_DEFER_ACCEPT discards each handshake's bare ACK and waits for the
/// data: its drop counter counts every one, but nothing was lost (nstat's ListenDrops stays
/// put; the kernel counts them as TCPDeferAcceptDrop). The port's listen drops leave them
/// out; a listener without the option, beside it, has none to leave out.
#[test]
fn the_bare_acks_defer_accept_discards_are_no_listen_drops() {
    let _serial = serial();
    const N: usize = 20;
    let result = in_netns(|| {
        let (deferring, port) = listener("127.0.0.1:0", 128);
        let seconds: libc::c_int = 5;
        // SAFETY: a valid socket and an int option of its size.
        let set = unsafe {
            libc::setsockopt(
                deferring.as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_DEFER_ACCEPT,
                (&seconds as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        assert_eq!(
            set,
            0,
            "TCP_DEFER_ACCEPT: {}",
            std::io::Error::last_os_error()
        );
        let (plain, plain_port) = listener("127.0.0.1:0", 128);
        let monitor = kernel_monitor(&[port, plain_port], &[])?;
        let mib_now = || {
            (
                mib("netstat", "TcpExt", "TCPDeferAcceptDrop"),
                mib("netstat", "TcpExt", "ListenDrops"),
            )
        };
        let before = mib_now();
        for (listener, port) in [(&deferring, port), (&plain, plain_port)] {
            for _ in 0..N {
                let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
                c.write_all(b"GET").unwrap();
                let (mut s, _) = listener.accept().unwrap();
                let mut got = [0u8; 3];
                s.read_exact(&mut got).unwrap();
            }
        }
        let after = mib_now();
        let k = finish(monitor);
        Some((k, port, plain_port, after.0 - before.0, after.1 - before.1))
    });
    let Some(Some((k, port, plain_port, deferred, drops))) = result else {
        return;
    };
    assert_eq!(
        (deferred, drops),
        (N as u64, 0),
        "one bare ACK per handshake deferred"
    );
    let p = port_of(&k, port);
    assert_eq!(p.established, N as u64, "{p:?}");
    assert_eq!(p.deferred_acks, deferred, "{p:?}");
    assert_eq!(p.listen_drops, Some(0), "{p:?}");
    let plain = port_of(&k, plain_port);
    assert_eq!(plain.established, N as u64, "{plain:?}");
    assert_eq!(
        (plain.deferred_acks, plain.listen_drops),
        (0, Some(0)),
        "{plain:?}"
    );
}

#[test]
fn retransmits_under_two_percent_loss_are_the_kernels_retransmitted_segments() {
    let _serial = serial();
    let result = in_netns(|| {
        // One segment per packet (loopback would send 64 KiB ones), so that 2 % of
        // packets is 2 % of segments, and there are enough of them to lose.
        let ip = tool("ip")
            .args(["link", "set", "lo", "mtu", "1500", "gso_max_segs", "1"])
            .status();
        assert!(
            matches!(&ip, Ok(s) if s.success()),
            "ip link set lo: {ip:?}"
        );
        let (listener, port) = listener("127.0.0.1:0", 16);
        let monitor = kernel_monitor(&[port], &[])?;
        // netem is not in this kernel: nftables drops 2 % of what the server sends, at
        // random, on arrival (its retransmissions included). Not on the way out: a packet
        // dropped there fails the server's send, which TCP simply sends again, unlost.
        nft(&format!(
            "table inet loss {{\n chain lose {{\n  type filter hook input priority 0;\n  \
             tcp sport {port} numgen random mod 100 < 2 drop\n }}\n}}\n"
        ));
        let before = mib("snmp", "Tcp", "RetransSegs");
        let server = std::thread::spawn(move || {
            for _ in 0..4 {
                let (mut s, _) = listener.accept().unwrap();
                let chunk = vec![7u8; 64 * 1024];
                for _ in 0..8 {
                    s.write_all(&chunk).unwrap();
                }
            }
        });
        for _ in 0..4 {
            let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
            c.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
            let mut got = Vec::new();
            c.read_to_end(&mut got).unwrap();
            assert_eq!(got.len(), 512 << 10);
        }
        server.join().unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let retrans = mib("snmp", "Tcp", "RetransSegs") - before;

        Some((finish(monitor), port, retrans))
    });
    let Some(Some((k, port, retrans))) = result else {
        return;
    };
    let p = port_of(&k, port);
    // nstat's figure counts SYN-ACKs sent again too (2 % of them are lost as well).
    let ours = p.retrans_segs + p.synack_retrans;
    eprintln!(
        "retransmitted segments: {ours} by the kernel module ({} SYN-ACKs), {retrans} by nstat; {} timeouts",
        p.synack_retrans, p.rtos
    );
    assert!(retrans > 0, "2 % loss made retransmits");
    let off = (ours as f64 - retrans as f64).abs() / retrans as f64;
    assert!(
        off <= 0.05,
        "retransmitted segments {ours} vs nstat's TcpRetransSegs {retrans}: {p:?}"
    );
    assert!(p.conns_retransmitting >= 1, "{p:?}");
}

fn pin(pid: libc::pid_t, cpu: usize) {
    // SAFETY: a zeroed cpu_set_t with one CPU set, passed by pointer with its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        assert_eq!(
            libc::sched_setaffinity(pid, std::mem::size_of::<libc::cpu_set_t>(), &set),
            0
        );
    }
}

#[test]
fn a_cpu_hog_beside_a_watched_thread_moves_its_run_queue_p99_above_1_ms() {
    let _serial = serial();
    // The test process is the watched one; the hogs are other processes on its CPU.
    let Some(monitor) = kernel_monitor(&[], &[std::process::id()]) else {
        return;
    };
    let hogs: Vec<std::process::Child> = (0..3)
        .map(|_| {
            let child = Command::new("sh")
                .args(["-c", "while :; do :; done"])
                .spawn()
                .unwrap();
            pin(child.id() as libc::pid_t, 0);
            child
        })
        .collect();
    let worker = std::thread::spawn(|| {
        pin(0, 0);
        let waited_before = run_delay_ns();
        let until = Instant::now() + Duration::from_millis(600);
        let mut x = 0u64;
        while Instant::now() < until {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        (x, run_delay_ns() - waited_before)
    });
    let (spun, worker_waited_ns) = worker.join().unwrap();
    for mut hog in hogs {
        let _ = hog.kill();
        let _ = hog.wait();
    }
    assert!(spun > 0);
    let k = finish(monitor);
    let wait = k.runq.wait.expect("run-queue waits were timed");
    eprintln!("run-queue wait beside three hogs: {wait:?}");
    assert!(wait.count >= 10, "{wait:?}");
    assert!(
        wait.p99_ms > 1.0,
        "three hogs on its CPU keep a spinning thread waiting: {wait:?}"
    );
    // The kernel's own sum of the spinning thread's waits (schedstat's run_delay) is what was
    // timed, within the buckets' 3.2 %, plus the process's other threads' waits (its monitor
    // and the harness, mostly on the other CPU: 1.2 ms beside 456 ms here).
    let timed_ms = wait.mean_ms * wait.count as f64;
    let worker_ms = worker_waited_ns as f64 / 1e6;
    eprintln!(
        "timed {timed_ms:.1} ms of waits; the spinning thread's run_delay grew {worker_ms:.1} ms"
    );
    assert!(
        timed_ms >= 0.95 * worker_ms && timed_ms <= 1.05 * worker_ms + 100.0 && worker_ms > 0.0,
        "the waits timed ({timed_ms:.1} ms) are the spinning thread's run_delay ({worker_ms:.1} ms)"
    );
}

/// This thread's time spent waiting on a run queue so far (ns): /proc/thread-self/schedstat's
/// second field, the scheduler's run_delay.
fn run_delay_ns() -> u64 {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").expect("schedstat");
    text.split_whitespace()
        .nth(1)
        .and_then(|f| f.parse().ok())
        .expect("schedstat's run_delay")
}

#[test]
fn kernel_hlog_holds_each_intervals_histograms_and_they_add_up_to_the_runs_figures() {
    let _serial = serial();
    const ROUNDS: usize = 3;
    const PER_ROUND: u64 = 8;
    let dir = tempfile::tempdir().unwrap();
    let (listener, port) = listener("127.0.0.1:0", 128);
    let Some(mut monitor) = kernel_monitor_in(&[port], &[std::process::id()], Some(dir.path()))
    else {
        return;
    };
    // Each round's connections are accepted (accept() returns after the kernel saw them
    // leave the queue) before its sample: each interval holds exactly one round's waits.
    for _ in 0..ROUNDS {
        for _ in 0..PER_ROUND {
            let c = TcpStream::connect(("127.0.0.1", port)).unwrap();
            let (s, _) = listener.accept().unwrap();
            drop(s);
            drop(c);
        }
        monitor.sample().unwrap();
    }
    std::thread::sleep(Duration::from_millis(50));
    monitor.sample().unwrap();
    let results = monitor.stop().unwrap();
    let k = results.summary.kernel.expect("kernel figures");
    let p = port_of(&k, port);
    let path = dir.path().join(HLOG);
    assert!(results.files.contains(&path), "{:?}", results.files);
    // Read back by the hdrhistogram crate's log reader (webscope-load's, which checks each
    // histogram before it decodes it).
    let intervals = |tag: &str| webscope_load::read_intervals(&path, Some(tag)).unwrap();
    let counts =
        |tag: &str| -> Vec<u64> { intervals(tag).iter().map(|i| i.histogram.len()).collect() };
    let waits = counts(&accept_wait_tag(port));
    assert!(waits.len() > ROUNDS, "one line per interval: {waits:?}");
    assert_eq!(&waits[..ROUNDS], &[PER_ROUND; ROUNDS], "{waits:?}");
    let total = ROUNDS as u64 * PER_ROUND;
    assert_eq!(waits.iter().sum::<u64>(), total, "{waits:?}");
    assert_eq!(p.accept_wait.map(|w| w.count), Some(total), "{p:?}");
    let lives = counts(&lifetime_tag(port));
    assert_eq!(
        lives.iter().sum::<u64>(),
        p.lifetime.map_or(0, |l| l.count),
        "the lifetimes' intervals add up to the run's: {lives:?}, {p:?}"
    );
    assert!(lives.iter().sum::<u64>() > 0, "{p:?}");
    let runq = counts(RUNQ_TAG);
    assert_eq!(
        runq.iter().sum::<u64>(),
        k.runq.wait.map_or(0, |w| w.count),
        "the run-queue waits' intervals add up to the run's: {runq:?}"
    );
    // The intervals follow each other, and nothing is untagged.
    let starts: Vec<(f64, f64)> = intervals(&accept_wait_tag(port))
        .iter()
        .map(|i| (i.start_s, i.length_s))
        .collect();
    assert!(
        starts.windows(2).all(|w| w[1].0 >= w[0].0 + w[0].1 - 0.002),
        "{starts:?}"
    );
    assert!(webscope_load::read_intervals(&path, None)
        .unwrap()
        .is_empty());
}

#[test]
fn a_run_stopped_early_as_by_ctrl_c_keeps_what_it_measured() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let _serial = serial();
    const N: u64 = 10;
    let dir = tempfile::tempdir().unwrap();
    let (listener, port) = listener("127.0.0.1:0", 128);
    // Whether the module loads here, asked as the other tests ask it.
    let Some(probe) = kernel_monitor(&[port], &[]) else {
        return;
    };
    drop(probe.stop().unwrap());
    let stop = AtomicBool::new(false);
    let config = webscope_monitor::Config {
        ports: vec![port],
        kernel: true,
        interval: Duration::from_millis(100),
        // Far longer than the test: only the stop flag (what Ctrl-C raises) ends it.
        duration: Some(Duration::from_secs(600)),
        out: Some(dir.path().to_path_buf()),
        ..webscope_monitor::Config::default()
    };
    let results = std::thread::scope(|scope| {
        let stop = &stop;
        let running = scope.spawn(move || webscope_monitor::run(config, stop, &mut |_, _| {}));
        // Give the monitor time to load the program before the connections it must see.
        std::thread::sleep(Duration::from_millis(500));
        for _ in 0..N {
            let c = TcpStream::connect(("127.0.0.1", port)).unwrap();
            let (s, _) = listener.accept().unwrap();
            drop(s);
            drop(c);
        }
        stop.store(true, Ordering::Relaxed);
        running.join().unwrap().unwrap()
    });
    assert!(results.summary.interrupted, "a run stopped early says so");
    let k = results.summary.kernel.expect("kernel figures");
    let p = port_of(&k, port);
    assert_eq!(p.accept_wait.map(|w| w.count), Some(N), "{p:?}");
    let logged: u64 =
        webscope_load::read_intervals(&dir.path().join(HLOG), Some(&accept_wait_tag(port)))
            .unwrap()
            .iter()
            .map(|i| i.histogram.len())
            .sum();
    assert_eq!(logged, N, "kernel.hlog keeps every interval up to the stop");
    assert!(dir.path().join("monitor.json").exists());
}
