//! What the kernel module's tests share: system tools, one test at a time, a monitor with
//! the module on (or the reason it cannot load), and its figures once stopped; a network
//! namespace, nftables and the kernel's TCP counters for the tests that drop packets.
#![allow(dead_code)] // each test binary uses its own part

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

use webscope_monitor::kernel::KernelSummary;
use webscope_monitor::{Config, Monitor};

/// A system tool, from /usr/sbin where it is there (root's PATH may lack it).
pub fn tool(name: &str) -> Command {
    let sbin = format!("/usr/sbin/{name}");
    if std::path::Path::new(&sbin).exists() {
        Command::new(sbin)
    } else {
        Command::new(name)
    }
}

/// One kernel test at a time: each loads its own program, and the leak test counts them.
static SERIAL: Mutex<()> = Mutex::new(());

pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A monitor with the kernel module on `ports` (and `pids`' run-queue waits); None, with the
/// reason printed, where the module cannot load, unless WEBSCOPE_REQUIRE_KERNEL is set.
pub fn kernel_monitor(ports: &[u16], pids: &[u32]) -> Option<Monitor> {
    kernel_monitor_in(ports, pids, None)
}

/// [`kernel_monitor`], writing its files (`kernel.hlog` among them) in `out`.
pub fn kernel_monitor_in(ports: &[u16], pids: &[u32], out: Option<&Path>) -> Option<Monitor> {
    let monitor = Monitor::start(Config {
        ports: ports.to_vec(),
        pids: pids.to_vec(),
        kernel: true,
        interval: Duration::from_millis(100),
        out: out.map(Path::to_path_buf),
        ..Config::default()
    })
    .expect("the monitor starts whether or not the kernel module loads");
    if let Some(why) = monitor.kernel_error() {
        assert!(
            std::env::var_os("WEBSCOPE_REQUIRE_KERNEL").is_none(),
            "WEBSCOPE_REQUIRE_KERNEL is set but {why}"
        );
        eprintln!("skipping: {why}");
        return None;
    }
    Some(monitor)
}

/// Samples once more and stops: the run's kernel figures.
pub fn finish(mut monitor: Monitor) -> KernelSummary {
    monitor.sample().unwrap();
    let results = monitor.stop().unwrap();
    results.summary.kernel.expect("kernel figures")
}

/// Runs `body` on a thread moved into a network namespace of its own, loopback up. None
/// (with a note) where none can be made, unless WEBSCOPE_REQUIRE_NETNS is set.
pub fn in_netns<T: Send + 'static>(body: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    std::thread::spawn(move || {
        // SAFETY: unshare moves only this thread, which the closure then uses alone.
        if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
            let why = std::io::Error::last_os_error();
            assert!(
                std::env::var_os("WEBSCOPE_REQUIRE_NETNS").is_none(),
                "WEBSCOPE_REQUIRE_NETNS is set but no network namespace could be made: {why}"
            );
            eprintln!("skipping: no network namespace here (needs root): {why}");
            return None;
        }
        // A child started from this thread is in its namespace.
        let up = tool("ip").args(["link", "set", "lo", "up"]).status();
        assert!(
            matches!(&up, Ok(s) if s.success()),
            "ip link set lo up: {up:?}"
        );
        Some(body())
    })
    .join()
    .unwrap()
}

/// The namespace's counter `name` of `table` ("TcpExt", "Tcp") in /proc/thread-self/net's
/// `file` (netstat, snmp), as nstat reads it.
pub fn mib(file: &str, table: &str, name: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/thread-self/net/{file}")).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with(table)).collect();
    for pair in lines.chunks(2) {
        let (head, values) = (pair[0], pair[1]);
        if head.split_whitespace().next() != Some(&format!("{table}:")) {
            continue;
        }
        if let Some(i) = head.split_whitespace().position(|h| h == name) {
            return values.split_whitespace().nth(i).unwrap().parse().unwrap();
        }
    }
    panic!("no {table} {name} in {file}");
}

/// Runs `nft` with `args` (in the calling thread's namespace); panics with its error.
pub fn nft(rules: &str) {
    let out = tool("nft")
        .args(["-f", "-"])
        .stdin(std::process::Stdio::piped())
        .spawn();
    let mut child = match out {
        Ok(child) => child,
        Err(err) => panic!("nft (Debian: nftables) is needed to drop packets: {err}"),
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(rules.as_bytes())
        .unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "nft -f - failed on:\n{rules}");
}
