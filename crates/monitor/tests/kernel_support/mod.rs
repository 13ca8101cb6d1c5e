//! What the kernel module's tests share: system tools, one test at a time, a monitor with
//! the module on (or the reason it cannot load), and its figures once stopped.
#![allow(dead_code)] // each test binary uses its own part

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
