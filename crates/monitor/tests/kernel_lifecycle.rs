//! The kernel module's lifetime: a monitor that stops or is killed leaves no program loaded,
//! and without privilege one line says why while the rest is sampled. Root and bpftool
//! as `kernel.rs` (WEBSCOPE_REQUIRE_KERNEL makes a skip a failure).
//!
//! Each test follows its own monitors' programs by ID (the descriptors the process holds,
//! from /proc/PID/fdinfo), not the machine's count of them: another monitor with the kernel
//! module (another test binary, a lab run) may load and unload its own meanwhile.
//!
//! Built with the `kernel` feature only, as `kernel.rs`.
#![cfg(feature = "kernel")]

mod kernel_support;

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::process::Command;
use std::time::{Duration, Instant};

use kernel_support::{finish, kernel_monitor, serial, tool};
use webscope_monitor::{Config, Monitor};

/// The IDs of the programs named `on_state` (the module's state hook, one per load of the
/// program) loaded now, from `bpftool prog` (None, with a note, where bpftool is missing).
fn state_programs() -> Option<BTreeSet<u32>> {
    let out = tool("bpftool").args(["prog", "show"]).output();
    match out {
        // "123: tracing  name on_state  tag ...".
        Ok(out) if out.status.success() => Some(
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter(|l| l.contains(" name on_state "))
                .filter_map(|l| l.split(':').next()?.trim().parse().ok())
                .collect(),
        ),
        other => {
            assert!(
                std::env::var_os("WEBSCOPE_REQUIRE_KERNEL").is_none(),
                "WEBSCOPE_REQUIRE_KERNEL is set but bpftool (Debian: bpftool) cannot list programs: {other:?}"
            );
            eprintln!("skipping: no bpftool to list the kernel's programs: {other:?}");
            None
        }
    }
}

/// The module's state programs that process `pid` holds, by ID: of [`state_programs`], those
/// a descriptor of `pid` refers to (a program's or a link's fdinfo names its `prog_id`).
fn held_by(pid: u32) -> BTreeSet<u32> {
    let loaded = state_programs().unwrap_or_default();
    let fdinfo = format!("/proc/{pid}/fdinfo");
    let Ok(fds) = std::fs::read_dir(&fdinfo) else {
        return BTreeSet::new();
    };
    fds.filter_map(|fd| std::fs::read_to_string(fd.ok()?.path()).ok())
        .filter_map(|info| {
            info.lines()
                .find_map(|l| l.strip_prefix("prog_id:")?.trim().parse().ok())
        })
        .filter(|id| loaded.contains(id))
        .collect()
}

/// Polls until none of `ids` is loaded any more (a closed program is freed after an RCU
/// grace period, not at once), for at most 5 s: those still loaded then.
fn unloaded(ids: &BTreeSet<u32>) -> BTreeSet<u32> {
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let left: BTreeSet<u32> = state_programs()
            .unwrap_or_default()
            .intersection(ids)
            .copied()
            .collect();
        if left.is_empty() || Instant::now() > until {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// This test binary again, running only `child_process` in `mode`.
fn child(mode: &str) -> Command {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--ignored",
        "--exact",
        "child_process",
        "--nocapture",
        "--test-threads=1",
    ])
    .env("WEBSCOPE_KERNEL_CHILD", mode)
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped());
    cmd
}

#[test]
#[ignore = "a child of the tests below, run by them with WEBSCOPE_KERNEL_CHILD"]
fn child_process() {
    let mode = std::env::var("WEBSCOPE_KERNEL_CHILD").expect("run by the tests below");
    let monitor = Monitor::start(Config {
        ports: vec![9],
        pids: vec![std::process::id()],
        kernel: true,
        ..Config::default()
    })
    .unwrap();
    match mode.as_str() {
        // Holds the program until killed.
        "hold" => {
            assert!(
                monitor.kernel_error().is_none(),
                "{:?}",
                monitor.kernel_error()
            );
            println!("loaded");
            std::io::stdout().flush().unwrap();
            std::thread::sleep(Duration::from_secs(60));
            panic!("not killed within 60 s");
        }
        // Unprivileged: says why in one line, and samples everything else.
        _ => {
            let mut monitor = monitor;
            std::thread::sleep(Duration::from_millis(50));
            let sample = monitor.sample().unwrap();
            let busy = sample.value("cpu", "all", "busy_pct").unwrap();
            let summary = monitor.stop().unwrap().summary;
            println!("kernel_error={}", summary.kernel_error.unwrap_or_default());
            println!("busy={busy}");
            println!("kernel_figures={}", summary.kernel.is_some());
        }
    }
}

#[test]
fn a_monitor_that_stops_or_is_killed_leaves_no_program_loaded() {
    let _serial = serial();
    if state_programs().is_none() {
        return;
    }
    let me = std::process::id();
    // Stopped in order. The tests before this one stopped theirs (they take turns).
    let Some(monitor) = kernel_monitor(&[9], &[]) else {
        return;
    };
    let ours = held_by(me);
    assert_eq!(ours.len(), 1, "the monitor's program is loaded: {ours:?}");
    finish(monitor);
    assert_eq!(unloaded(&ours), BTreeSet::new(), "stopping unloads it");
    // Killed (SIGKILL, as a crash): the kernel closes its descriptors and frees it.
    let mut holder = child("hold").spawn().unwrap();
    let mut out = holder.stdout.take().unwrap();
    let mut seen = Vec::new();
    let mut byte = [0u8; 1];
    while !String::from_utf8_lossy(&seen).contains("loaded") {
        match out.read(&mut byte) {
            Ok(1) => seen.push(byte[0]),
            _ => {
                let mut err = String::new();
                let _ = holder.stderr.take().unwrap().read_to_string(&mut err);
                panic!(
                    "the child ended before loading: {}{err}",
                    String::from_utf8_lossy(&seen)
                );
            }
        }
    }
    let childs = held_by(holder.id());
    assert_eq!(childs.len(), 1, "the child's program is loaded: {childs:?}");
    holder.kill().unwrap();
    holder.wait().unwrap();
    assert_eq!(
        unloaded(&childs),
        BTreeSet::new(),
        "a killed monitor leaves nothing behind"
    );
}

/// `n` connections to `listener`, each accepted, answered and closed by the server first.
fn connections(listener: &std::net::TcpListener, n: usize) {
    let port = listener.local_addr().unwrap().port();
    for _ in 0..n {
        let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let (mut s, _) = listener.accept().unwrap();
        s.write_all(b"hi").unwrap();
        drop(s);
        let mut got = Vec::new();
        c.read_to_end(&mut got).unwrap();
        assert_eq!(got, b"hi");
    }
}

/// Two monitors at once (as `lab --experiment ab --duet` runs two measured runs at once, each
/// with its own): two loads of the program, each attached to the same tracepoints, each with
/// its own maps and global data. Each counts its own port's connections and no other's, and
/// stopping both leaves nothing loaded.
#[test]
fn two_monitors_at_once_count_their_own_ports_and_leave_nothing_loaded() {
    let _serial = serial();
    if state_programs().is_none() {
        return;
    }
    let a = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let b = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let (port_a, port_b) = (
        a.local_addr().unwrap().port(),
        b.local_addr().unwrap().port(),
    );
    let Some(monitor_a) = kernel_monitor(&[port_a], &[]) else {
        return;
    };
    let Some(monitor_b) = kernel_monitor(&[port_b], &[]) else {
        return;
    };
    let ours = held_by(std::process::id());
    assert_eq!(ours.len(), 2, "two loads at once: {ours:?}");
    // Interleaved, so that both programs see both ports' events while both are attached.
    for _ in 0..3 {
        connections(&a, 3);
        connections(&b, 5);
    }
    // Let the last FINs and ACKs land.
    std::thread::sleep(Duration::from_millis(200));
    let (ka, kb) = (finish(monitor_a), finish(monitor_b));
    for (k, port, n) in [(&ka, port_a, 9u64), (&kb, port_b, 15)] {
        assert_eq!(k.ports.len(), 1, "{k:?}");
        let p = &k.ports[0];
        assert_eq!(p.port, port);
        assert_eq!(
            (p.established, p.accepted_syscall, p.closed, p.time_wait),
            (n, n, n, n),
            "each monitor counts its own port's {n} connections: {p:?}"
        );
        assert_eq!(p.accept_wait.map(|w| w.count), Some(n), "{p:?}");
    }
    assert_eq!(
        unloaded(&ours),
        BTreeSet::new(),
        "stopping both unloads both"
    );
}

#[test]
fn without_privilege_one_line_says_why_and_the_rest_is_sampled() {
    let _serial = serial();
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        // Already unprivileged: this process is the case itself.
        let monitor = Monitor::start(Config {
            ports: vec![9],
            kernel: true,
            ..Config::default()
        })
        .unwrap();
        let why = monitor
            .kernel_error()
            .expect("no kernel module without privilege");
        assert!(!why.contains('\n'), "{why}");
        return;
    }
    use std::os::unix::process::CommandExt;
    let out = child("unprivileged")
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = |key: &str| {
        // libtest prints "test child_process ... " before the child's first line.
        text.lines()
            .find_map(|l| l.find(key).map(|at| &l[at + key.len()..]))
            .unwrap_or_else(|| panic!("no {key} in {text}"))
            .to_string()
    };
    let why = line("kernel_error=");
    assert!(
        why.starts_with("no kernel figures: ") && why.contains("not permitted"),
        "one line says why: {why}"
    );
    assert_eq!(line("kernel_figures="), "false");
    let busy: f64 = line("busy=").parse().unwrap();
    assert!(busy.is_finite(), "the CPU was sampled as before: {busy}");
}
