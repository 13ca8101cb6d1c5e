//! The server's and the machine's CPU over each interval, for the live page: two readings of
//! /proc a second (the server's process tree and /proc/stat), averaged over the interval, where
//! the monitor's latest sample would be a 100-ms glimpse.

use std::time::Instant;

/// CPU counters at the last reading.
pub struct Gauges {
    roots: Vec<u32>,
    at: Instant,
    server_s: Option<f64>,
    machine: Option<(u64, u64)>,
}

impl Gauges {
    /// Starts counting for the processes `roots` and their descendants (none: no server CPU).
    pub fn new(roots: Vec<u32>) -> Gauges {
        let server_s = webscope_monitor::procs::tree_cpu_s(&roots);
        Gauges {
            roots,
            at: Instant::now(),
            server_s,
            machine: webscope_monitor::machine_ticks(),
        }
    }

    /// Since the last reading: the server's CPU in per cent of one CPU, and the machine's busy
    /// share of all its CPUs in per cent.
    pub fn read(&mut self) -> (Option<f64>, Option<f64>) {
        let now = Instant::now();
        let seconds = now.duration_since(self.at).as_secs_f64().max(1e-3);
        let server_s = webscope_monitor::procs::tree_cpu_s(&self.roots);
        let server = match (self.server_s, server_s) {
            (Some(a), Some(b)) if !self.roots.is_empty() => {
                Some(100.0 * (b - a).max(0.0) / seconds)
            }
            _ => None,
        };
        let machine_now = webscope_monitor::machine_ticks();
        let machine = match (self.machine, machine_now) {
            (Some((busy0, total0)), Some((busy1, total1))) if total1 > total0 => {
                Some(100.0 * busy1.saturating_sub(busy0) as f64 / (total1 - total0) as f64)
            }
            _ => None,
        };
        self.at = now;
        self.server_s = server_s;
        self.machine = machine_now;
        (server, machine)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_process_shows_its_cpu_and_the_machine_is_busy_too() {
        // The reading is checked against the process's own CPU clock over the same interval
        // (other test threads included, as /proc counts them too), so that a busy machine,
        // which gives this thread less of a CPU, changes both sides alike.
        let me = std::process::id();
        let cpu0 = webscope_load::process_time();
        let mut gauges = Gauges::new(vec![me]);
        let began = Instant::now();
        let mut x = 0u64;
        // 300 ms of CPU, however long the machine takes to give it.
        while webscope_load::process_time().saturating_sub(cpu0)
            < std::time::Duration::from_millis(300)
        {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        let (server, machine) = gauges.read();
        let wall = began.elapsed().as_secs_f64();
        let used = webscope_load::process_time()
            .saturating_sub(cpu0)
            .as_secs_f64();
        let expected = 100.0 * used / wall;
        // /proc counts in 10-ms ticks, at each end of the interval.
        let slack = 100.0 * 0.02 / wall + 5.0;
        let server = server.unwrap();
        assert!(
            (server - expected).abs() <= slack,
            "server {server} %, the process's clock {expected} % (± {slack})"
        );
        assert!(machine.unwrap() > 0.0, "machine {machine:?}");
        assert_eq!(Gauges::new(Vec::new()).read().0, None);
    }
}
