//! The cost benchmark behind `bench/monitor_cost.sh`: what counting TCP states per port costs
//! with sock_diag against `/proc/net/tcp` at 1 000, 10 000 and 30 000 sockets on one port
//! (most in TIME_WAIT, as a busy HTTP/1.0-style server leaves them), and what the whole
//! monitor costs sampling every 100 ms with the largest count.
//!
//! Everything runs on loopback inside this process: a listener on 127.0.0.1, client threads
//! that connect from 127.0.0.2-33 and wait for the server to close first (so TIME_WAIT lands
//! on the server's port), and a few hundred connections kept open. Methods are measured
//! alternately (A B C A B C ...), by the CPU time of the calling thread (user + kernel), and
//! medians are reported with their ratio to sock_diag.
//!
//! Usage: monitor_cost [--sockets 1000,10000,30000] [--reps 15] [--monitor-seconds 10]

use std::io::Read;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use webscope_monitor::tcp::{ProcNetTcp, SockDiag, TcpState};
use webscope_monitor::{Config, Monitor};

fn arg(name: &str, default: &str) -> String {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
        .unwrap_or_else(|| default.to_string())
}

/// One client connection from `source`: connect, wait for the server's FIN, close.
fn churn_once(source: Ipv4Addr, server: SocketAddr) -> std::io::Result<()> {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    socket.bind(&SocketAddr::V4(SocketAddrV4::new(source, 0)).into())?;
    socket.connect(&server.into())?;
    let mut stream: TcpStream = socket.into();
    let mut buf = [0u8; 16];
    while stream.read(&mut buf)? > 0 {}
    Ok(())
}

/// Makes `count` more server-side TIME_WAIT sockets on `server`'s port.
fn make_time_wait(server: SocketAddr, count: u64) {
    let done = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let done = Arc::clone(&done);
            std::thread::spawn(move || {
                let mut i = t;
                while done.load(Ordering::Relaxed) < count {
                    let source = Ipv4Addr::new(127, 0, 0, 2 + (i % 32) as u8);
                    i += 4;
                    if churn_once(source, server).is_ok() {
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    for t in threads {
        let _ = t.join();
    }
}

/// The whole monitor sampling every 100 ms with the sockets in place: with the default
/// budget for the per-port walks, with a walk at every sample, and without --port. Runs
/// alternate (A B C A B C) so that the machine's drift hits them alike.
fn whole_monitor(port: u16, seconds: u64) {
    let configs: [(&str, Vec<u16>, f64); 3] = [
        (
            "--port, default budget",
            vec![port],
            Config::default().tcp_budget,
        ),
        ("--port, walk every sample", vec![port], 1.0),
        ("no --port", vec![], Config::default().tcp_budget),
    ];
    let mut costs: Vec<Vec<f64>> = vec![Vec::new(); configs.len()];
    for round in 0..2 {
        for (i, (name, ports, budget)) in configs.iter().enumerate() {
            let config = Config {
                interval: Duration::from_millis(100),
                duration: Some(Duration::from_secs(seconds)),
                ports: ports.clone(),
                pids: vec![std::process::id()],
                tcp_budget: *budget,
                ..Config::default()
            };
            let results = webscope_monitor::run(
                config,
                &AtomicBool::new(false),
                &mut |_: &mut Monitor, _| {},
            )
            .expect("monitor run");
            let summary = &results.summary;
            let cost = &summary.cost;
            costs[i].push(cost.pct_of_one_core);
            let walks = summary.tcp_walks.clone().unwrap_or_default();
            let tw = summary
                .stat("ports", &format!("{port}/local"), "time_wait")
                .map_or(f64::NAN, |s| s.mean);
            println!(
                "# run {round} {name:<26}: {:.2}% of one core ({:.0} us/sample, {} samples); {} walks of {:.2} ms every {:.2} s; TIME_WAIT seen {:.0}",
                cost.pct_of_one_core,
                cost.mean_sample_us,
                summary.samples,
                walks.walks,
                walks.mean_walk_cpu_ms,
                walks.mean_spacing_s,
                tw
            );
            let mut by: Vec<_> = cost.by_source.iter().collect();
            by.sort_by(|x, y| y.1.mean_us.total_cmp(&x.1.mean_us));
            let list: Vec<String> = by
                .iter()
                .map(|(k, v)| format!("{k} {:.0}", v.mean_us))
                .collect();
            println!("#   mean CPU per call, us: {}", list.join(", "));
        }
    }
    for ((name, _, _), c) in configs.iter().zip(costs) {
        let mean = c.iter().sum::<f64>() / c.len() as f64;
        let runs: Vec<String> = c.iter().map(|x| format!("{x:.2}")).collect();
        println!(
            "whole monitor, 100 ms, {name:<26}: {mean:.2}% of one core (runs {})",
            runs.join(", ")
        );
    }
}

/// The workspace's one median (`webscope_model::stats`); NaN for no reading.
fn median(v: Vec<f64>) -> f64 {
    webscope_model::stats::median(&v).unwrap_or(f64::NAN)
}

fn main() {
    let targets: Vec<u64> = arg("--sockets", "1000,10000,30000")
        .split(',')
        .filter_map(|s| s.parse().ok())
        .collect();
    let reps: usize = arg("--reps", "15").parse().unwrap_or(15);
    let monitor_seconds: u64 = arg("--monitor-seconds", "10").parse().unwrap_or(10);

    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let server = listener.local_addr().expect("bound");
    let port = server.port();
    let kept: Arc<std::sync::Mutex<Vec<TcpStream>>> = Arc::default();
    let keep_next = Arc::new(AtomicU64::new(0));
    // The server: accepts, and closes at once (so it closes first) except for connections
    // it is told to keep open.
    {
        let (kept, keep_next) = (Arc::clone(&kept), Arc::clone(&keep_next));
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                if keep_next.load(Ordering::Relaxed) > 0 {
                    keep_next.fetch_sub(1, Ordering::Relaxed);
                    kept.lock().unwrap().push(conn);
                }
            }
        });
    }
    // A few hundred established connections, as a server under keep-alive load has.
    let established = 200u64;
    keep_next.store(established, Ordering::Relaxed);
    let clients: Vec<TcpStream> = (0..established)
        .map(|_| TcpStream::connect(server).expect("connect"))
        .collect();
    while keep_next.load(Ordering::Relaxed) > 0 {
        std::thread::sleep(Duration::from_millis(5));
    }

    let mut diag = SockDiag::open().expect("netlink sock_diag");
    diag.probe().expect("sock_diag answers");
    let mut proc_tcp = ProcNetTcp;
    println!(
        "# monitor cost on {} CPUs, kernel {}, port {port}; per-call CPU time of this thread (user + kernel), median of {reps}",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim(),
    );
    println!("# diag: sock_diag count of the port's states (one walk, both families); proc: /proc/net/tcp{{,6}} read and parsed (procfs);");
    println!("# read: /proc/net/tcp{{,6}} read only; walk0: sock_diag for a port with no socket (the table walk alone); listen: accept queue only");
    println!(
        "{:>8} {:>8} {:>8} | {:>12} {:>12} {:>12} {:>12} {:>12} | {:>9} {:>9}",
        "sockets",
        "tw",
        "estab",
        "diag_ms",
        "proc_ms",
        "read_ms",
        "walk0_ms",
        "listen_us",
        "proc/diag",
        "read/diag"
    );
    let mut made = 0u64;
    for (n, &target) in targets.iter().enumerate() {
        let want = target.saturating_sub(2 * established);
        if want > made {
            let began = Instant::now();
            make_time_wait(server, want - made);
            made = want;
            eprintln!(
                "# made TIME_WAIT sockets up to {made} in {:.1}s",
                began.elapsed().as_secs_f64()
            );
        }
        let (mut a, mut b, mut c, mut d, mut e) = (vec![], vec![], vec![], vec![], vec![]);
        let mut counts = None;
        for _ in 0..reps {
            let t = webscope_sys::thread_time();
            let (ports, _) = diag.port_states(&[port]).expect("sock_diag dump");
            a.push((webscope_sys::thread_time() - t).as_secs_f64() * 1e3);
            counts = Some(ports[0]);
            let t = webscope_sys::thread_time();
            proc_tcp.port_states(&[port]).expect("/proc/net/tcp");
            b.push((webscope_sys::thread_time() - t).as_secs_f64() * 1e3);
            let t = webscope_sys::thread_time();
            let raw = std::fs::read("/proc/net/tcp").map(|v| v.len()).unwrap_or(0)
                + std::fs::read("/proc/net/tcp6")
                    .map(|v| v.len())
                    .unwrap_or(0);
            c.push((webscope_sys::thread_time() - t).as_secs_f64() * 1e3);
            std::hint::black_box(raw);
            let t = webscope_sys::thread_time();
            diag.port_states(&[1]).expect("sock_diag dump");
            d.push((webscope_sys::thread_time() - t).as_secs_f64() * 1e3);
            let t = webscope_sys::thread_time();
            diag.listen_queues(&[port]).expect("listen dump");
            e.push((webscope_sys::thread_time() - t).as_secs_f64() * 1e6);
        }
        let counts = counts.expect("at least one repetition");
        let total = counts.local.total() + counts.remote.total();
        let (ma, mb, mc) = (median(a), median(b), median(c));
        println!(
            "{:>8} {:>8} {:>8} | {:>12.3} {:>12.3} {:>12.3} {:>12.3} {:>12.1} | {:>9.2} {:>9.2}",
            total,
            counts.local.get(TcpState::TimeWait),
            counts.local.get(TcpState::Established),
            ma,
            mb,
            mc,
            median(d),
            median(e),
            mb / ma,
            mc / ma
        );
        if n + 1 == targets.len() && monitor_seconds > 0 {
            whole_monitor(port, monitor_seconds);
        }
    }

    drop(clients);
}
