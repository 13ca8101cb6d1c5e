//! What else uses this machine: the figures of `webscope_monitor::disturbance` over a few
//! seconds, laid out as the lab lays out a probe (an idle stand-in server pinned to CPU 0,
//! this process as the generator pinned to the last CPU).
//!
//! ```text
//! cargo run -p webscope-monitor --example disturbance -- [SECONDS]
//! ```

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use webscope_monitor::disturbance::{Disturbance, Limits, Watched};

fn pin_self(cpu: usize) -> std::io::Result<()> {
    // SAFETY: a zeroed cpu_set_t with one bit set, passed with its size; 0 is this thread,
    // the only one so far.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

fn main() {
    let seconds: f64 = match std::env::args().nth(1).map(|s| s.parse()) {
        None => 5.0,
        Some(Ok(s)) if s > 0.0 => s,
        Some(_) => {
            eprintln!("disturbance: give the interval in seconds, e.g. 5");
            std::process::exit(2);
        }
    };
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    let last = cpus - 1;
    let server = Command::new("taskset")
        .args(["-c", "0", "sleep", "3600"])
        .stdin(Stdio::null())
        .spawn();
    let mut server = match server {
        Ok(child) => child,
        Err(e) => {
            eprintln!("disturbance: cannot start `taskset -c 0 sleep` ({e}): install util-linux");
            std::process::exit(1);
        }
    };
    // taskset execs sleep in place: the PID stays.
    std::thread::sleep(Duration::from_millis(50));
    let pinned = pin_self(last).is_ok();
    let watched = Watched {
        server: vec![server.id()],
        server_cpus: Some(vec![0]),
        generator: vec![std::process::id()],
        generator_cpus: pinned.then(|| vec![last]),
    };
    let mut cost = Duration::ZERO;
    let started = Instant::now();
    let result = Disturbance::start(&watched).and_then(|sampler| {
        cost = started.elapsed();
        std::thread::sleep(Duration::from_secs_f64(seconds));
        let stopping = Instant::now();
        let d = sampler.stop();
        cost += stopping.elapsed();
        d
    });
    let _ = server.kill();
    let _ = server.wait();
    match result {
        Ok(d) => {
            println!("{}", serde_json::to_string_pretty(&d).unwrap_or_default());
            println!("start and stop took {} µs together", cost.as_micros());
            match d.beyond(&Limits::default()) {
                Some(why) => println!("disturbed: {why}"),
                None => println!("quiet within the default limits"),
            }
        }
        Err(e) => {
            eprintln!("disturbance: {e}");
            std::process::exit(1);
        }
    }
}
