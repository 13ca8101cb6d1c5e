//! Live tests on loopback: TCP states and accept queues of a real port, schedstat running vs
//! waiting time of real threads, CPU shares, a process that exits, the library's spawn/stop.
//! Every socket is on 127.0.0.1; every thread and child process started here is stopped.

use std::io::Read;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use webscope_monitor::tcp::{ProcNetTcp, SockDiag, TcpState};
use webscope_monitor::{spawn, Config, Monitor, Summary};

/// The tests of this file run one at a time: the scheduling test measures how threads share
/// the CPUs, and the others' work would be in its figures.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn listener(backlog: i32) -> (TcpListener, SocketAddr) {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket
        .bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap().into())
        .unwrap();
    socket.listen(backlog).unwrap();
    let listener: TcpListener = socket.into();
    let addr = listener.local_addr().unwrap();
    (listener, addr)
}

/// `n` connections, accepted: (clients, server sides).
fn connect(listener: &TcpListener, addr: SocketAddr, n: usize) -> (Vec<TcpStream>, Vec<TcpStream>) {
    let clients: Vec<TcpStream> = (0..n).map(|_| TcpStream::connect(addr).unwrap()).collect();
    let servers: Vec<TcpStream> = (0..n).map(|_| listener.accept().unwrap().0).collect();
    (clients, servers)
}

fn diag() -> SockDiag {
    let mut diag = SockDiag::open().expect("netlink sock_diag socket");
    diag.probe().expect("the kernel answers sock_diag");
    diag
}

/// Waits (bounded) until `f` holds: TCP state changes take a few microseconds on loopback,
/// but the machine may be busy.
fn eventually(mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

#[test]
fn established_connections_are_counted_on_both_sides_by_both_methods() {
    let _serial = serial();
    let (listener, addr) = listener(128);
    let (_clients, _servers) = connect(&listener, addr, 25);
    let port = addr.port();
    let (ports, queues) = diag().port_states(&[port]).unwrap();
    let (proc_ports, _) = ProcNetTcp.port_states(&[port]).unwrap();
    for (method, counts) in [("sock_diag", ports[0]), ("/proc/net/tcp", proc_ports[0])] {
        assert_eq!(counts.local.get(TcpState::Established), 25, "{method}");
        assert_eq!(
            counts.remote.get(TcpState::Established),
            25,
            "{method}: the clients are on this host"
        );
        assert_eq!(counts.local.get(TcpState::Listen), 1, "{method}");
        assert_eq!(counts.local.total(), 26, "{method}");
    }
    assert_eq!(queues[0].sockets, 1);
    assert_eq!(queues[0].queued, 0);
}

#[test]
fn the_accept_queue_shows_connections_not_yet_accepted_and_its_limit() {
    let _serial = serial();
    let (listener, addr) = listener(16);
    // Completed handshakes wait in the accept queue until accept() takes them.
    let _clients: Vec<TcpStream> = (0..3).map(|_| TcpStream::connect(addr).unwrap()).collect();
    let mut diag = diag();
    assert!(eventually(|| diag.listen_queues(&[addr.port()]).unwrap()
        [0]
    .queued
        == 3));
    let queue = diag.listen_queues(&[addr.port()]).unwrap()[0];
    assert_eq!(queue.limit, Some(16));
    let _ = listener.accept().unwrap();
    assert_eq!(diag.listen_queues(&[addr.port()]).unwrap()[0].queued, 2);
}

#[test]
fn time_wait_is_held_by_the_side_that_closes_first() {
    let _serial = serial();
    // Clients close first (HTTP/1.1 clients hanging up): TIME_WAIT is on the clients' sockets,
    // whose remote port is the server's: the `remote` side.
    let (listener, addr) = listener(128);
    let (clients, mut servers) = connect(&listener, addr, 10);
    for c in &clients {
        c.shutdown(Shutdown::Both).unwrap();
    }
    for s in &mut servers {
        let mut buf = [0u8; 1];
        assert_eq!(
            s.read(&mut buf).unwrap(),
            0,
            "the server sees the client's FIN"
        );
    }
    drop(servers);
    drop(clients);
    let mut diag = diag();
    let port = addr.port();
    assert!(
        eventually(|| diag.port_states(&[port]).unwrap().0[0]
            .remote
            .get(TcpState::TimeWait)
            == 10),
        "{:?}",
        diag.port_states(&[port]).unwrap().0[0]
    );
    let counts = diag.port_states(&[port]).unwrap().0[0];
    assert_eq!(
        counts.local.get(TcpState::TimeWait),
        0,
        "the server closed second: no TIME_WAIT"
    );

    // The server closes first (HTTP/1.0, as in Yates et al.'s Table 3): TIME_WAIT is on the
    // server's port, the `local` side.
    let (listener, addr) = self::listener(128);
    let (mut clients, servers) = connect(&listener, addr, 10);
    drop(servers);
    for c in &mut clients {
        let mut buf = [0u8; 1];
        assert_eq!(
            c.read(&mut buf).unwrap(),
            0,
            "the client sees the server's FIN"
        );
    }
    drop(clients);
    let port = addr.port();
    assert!(eventually(|| diag.port_states(&[port]).unwrap().0[0]
        .local
        .get(TcpState::TimeWait)
        == 10));
    let counts = diag.port_states(&[port]).unwrap().0[0];
    assert_eq!(counts.remote.get(TcpState::TimeWait), 0);
    // The fallback agrees.
    let (proc_counts, _) = ProcNetTcp.port_states(&[port]).unwrap();
    assert_eq!(proc_counts[0].local.get(TcpState::TimeWait), 10);
}

fn pin_to(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is valid; CPU_SET and sched_setaffinity act on the calling
    // thread only.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

fn spin_pinned(name: &str, cpu: usize, until: Instant) -> std::thread::JoinHandle<()> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            pin_to(cpu);
            let mut x = 0u64;
            while Instant::now() < until {
                x = x.wrapping_add(std::hint::black_box(1));
            }
            std::hint::black_box(x);
        })
        .unwrap()
}

#[test]
fn a_busy_thread_runs_and_threads_sharing_one_core_wait_for_it() {
    let _serial = serial();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut monitor = Monitor::start(Config {
        pids: vec![std::process::id()],
        ..Config::default()
    })
    .unwrap();
    let until = Instant::now() + Duration::from_millis(700);
    // The rivals share the last core; the busy thread has the first to itself (on a
    // one-core machine it shares it too, and the check of its sleep still holds).
    let threads = [
        spin_pinned("mon-busy", 0, until),
        spin_pinned("mon-rival-1", cpus - 1, until),
        spin_pinned("mon-rival-2", cpus - 1, until),
    ];
    std::thread::sleep(Duration::from_millis(100));
    let _ = monitor.sample().unwrap(); // the threads exist from here on
    std::thread::sleep(Duration::from_millis(450));
    let sample = monitor.sample().unwrap();
    for t in threads {
        t.join().unwrap();
    }
    let rows = &sample.group("threads").unwrap().rows;
    let find = |name: &str| {
        rows.iter()
            .find(|r| r.key[2] == name)
            .unwrap_or_else(|| panic!("no row for {name}: {rows:?}"))
    };
    // What a busy machine does not change: a spinning thread runs, and never blocks (every
    // switch away from it is a preemption, so its voluntary switches stay at 0); two on one
    // core wait for each other half the time at least. How much the busy thread runs, and the
    // sleep column (the wall time neither running nor waiting as schedstat has counted it so
    // far: a wait in progress at a sample is counted when it ends), move with other
    // processes' load: a run share over 20 % and a sleep under 15 % failed so under load.
    let (run, wait, voluntary) = (2, 3, 5);
    let busy = find("mon-busy");
    assert!(busy.values[run] > 0.0, "a spinning thread runs: {busy:?}");
    assert_eq!(busy.values[voluntary], 0.0, "and never blocks: {busy:?}");
    for name in ["mon-rival-1", "mon-rival-2"] {
        let rival = find(name);
        assert!(
            rival.values[wait] > 20.0,
            "{name} waits for its shared core: {rival:?}"
        );
        assert_eq!(
            rival.values[voluntary], 0.0,
            "{name} never blocks: {rival:?}"
        );
    }
    let together = find("mon-rival-1").values[run] + find("mon-rival-2").values[run];
    assert!(
        together < 115.0,
        "two threads on one core run at most 100% together: {together}"
    );
    let process = &sample.group("process").unwrap().rows[0];
    assert!(
        process.values[4] > 40.0,
        "the process's waiting sums its threads': {process:?}"
    );
}

#[test]
fn cpu_shares_of_every_core_add_up_to_100() {
    let _serial = serial();
    let mut monitor = Monitor::start(Config::default()).unwrap();
    std::thread::sleep(Duration::from_millis(150));
    let sample = monitor.sample().unwrap();
    let cpu = sample.group("cpu").unwrap();
    assert_eq!(
        cpu.rows.len(),
        1 + std::thread::available_parallelism().unwrap().get()
    );
    for row in &cpu.rows {
        let sum: f64 = row.values[..8].iter().sum();
        assert!((sum - 100.0).abs() < 1e-6, "{}: {sum}", row.key_name());
    }
    assert!(sample.value("system", "all", "ctxt_per_s").unwrap() > 0.0);
    assert!(sample.value("memory", "all", "total_mib").unwrap() > 0.0);
    assert!(sample.group("net").unwrap().row("lo").is_some());
}

#[test]
fn a_process_that_exits_is_noted_and_sampling_goes_on() {
    let _serial = serial();
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let mut monitor = Monitor::start(Config {
        pids: vec![child.id()],
        ..Config::default()
    })
    .unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let sample = monitor.sample().unwrap();
    assert_eq!(sample.group("process").unwrap().rows.len(), 1);
    child.kill().unwrap();
    child.wait().unwrap();
    let sample = monitor.sample().unwrap();
    assert!(sample.group("process").unwrap().rows.is_empty());
    assert!(
        !sample.group("cpu").unwrap().rows.is_empty(),
        "the rest is still sampled"
    );
    let notes = monitor.take_new_notes();
    assert!(
        notes
            .iter()
            .any(|n| n.message.contains(&format!("pid {}", child.id()))
                && n.message.contains("exited")),
        "{notes:?}"
    );
    let results = monitor.stop().unwrap();
    assert_eq!(results.summary.notes.len(), notes.len());
}

#[test]
fn spawn_and_stop_leave_csv_files_and_a_summary_that_reads_back() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let (listener, addr) = listener(128);
    let (_clients, _servers) = connect(&listener, addr, 3);
    let running = spawn(Config {
        ports: vec![addr.port()],
        pids: vec![std::process::id()],
        out: Some(dir.path().to_path_buf()),
        tcp_budget: 1.0,
        ..Config::default()
    })
    .unwrap();
    std::thread::sleep(Duration::from_millis(450));
    assert!(running.latest().is_some());
    let results = running.stop().unwrap();
    let summary = Summary::read(&dir.path().join("monitor.json")).unwrap();
    assert_eq!(summary.samples, results.summary.samples);
    assert!(summary.samples >= 3, "{}", summary.samples);
    let established = summary
        .stat("ports", &format!("{}/local", addr.port()), "established")
        .unwrap();
    assert_eq!((established.min, established.max), (3.0, 3.0));
    assert_eq!(
        summary
            .stat("listen", &addr.port().to_string(), "accept_limit")
            .unwrap()
            .last,
        128.0
    );
    assert!(summary.cost.pct_of_one_core > 0.0);
    for group in [
        "cpu", "system", "memory", "net", "tcp", "sockets", "ports", "listen", "process", "threads",
    ] {
        let path = dir.path().join(format!("{group}.csv"));
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut lines = text.lines();
        let header = lines.next().unwrap();
        assert!(header.starts_with("time_s,unix_time"), "{group}: {header}");
        let columns = header.split(',').count();
        for line in lines {
            assert_eq!(line.split(',').count(), columns, "{group}: {line}");
        }
        assert!(results.files.contains(&path));
    }
}
