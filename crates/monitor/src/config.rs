//! What to sample, how often, and where to write it.

use std::path::PathBuf;
use std::time::Duration;

use crate::Error;

/// The interval between samples of this machine's `/proc`, unless told otherwise: reading it
/// costs microseconds, and 100 ms resolves a short run's phases.
pub const INTERVAL: Duration = Duration::from_millis(100);

/// The interval between scrapes of a node_exporter, unless told otherwise. A scrape costs the
/// exporter tens of milliseconds of CPU (its collectors read `/proc` and `/sys` and format
/// thousands of series) and the wire a few hundred KiB, so Prometheus users scrape every 15 s
/// and 1 s at the finest; 1 s is the finest that stays cheap, and what a short run needs.
pub const NODE_EXPORTER_INTERVAL: Duration = Duration::from_secs(1);

/// The shortest interval a node_exporter is scraped at (an explicit `--interval` below it is
/// refused): scrapes closer together would load the host being measured.
pub const NODE_EXPORTER_MIN_INTERVAL: Duration = Duration::from_millis(500);

/// A monitor run's settings. [`Config::default`] samples the whole machine every 100 ms.
#[derive(Debug, Clone)]
pub struct Config {
    /// Time between samples.
    pub interval: Duration,
    /// Stop after this long; `None` runs until stopped (Ctrl-C, or [`crate::Running::stop`]).
    pub duration: Option<Duration>,
    /// Processes to watch, with each of their threads.
    pub pids: Vec<u32>,
    /// Ports whose TCP states and accept queues to count.
    pub ports: Vec<u16>,
    /// Where to write the CSV files and `monitor.json`; `None` keeps results in memory only.
    pub out: Option<PathBuf>,
    /// Record a kernel profile with `perf` and classify it.
    pub profile: bool,
    /// Samples per second per CPU for `perf record`.
    pub profile_hz: u32,
    /// The `perf` program (a name looked up in PATH, or a path).
    pub perf: PathBuf,
    /// The share of one core the per-port TCP state walks may use (0.003 = 0.3 %); they are
    /// spaced out to stay under it. 1 or more: walk at every sample whatever it costs.
    pub tcp_budget: f64,
    /// Watch the descendants of `pids` too (nginx's workers, Apache's children), listed again
    /// at every sample; the `process` group then has an `all/all` row summing the set.
    pub children: bool,
    /// Sample another host through its Prometheus node_exporter at this URL (e.g.
    /// `http://10.0.0.5:9100/metrics`) instead of this machine's `/proc`: the same groups and
    /// columns, NaN where the exporter has no figure. Processes, ports and the profile are
    /// this machine's only, so they are refused beside it.
    pub node_exporter: Option<String>,
    /// Load the kernel module ([`crate::kernel`]): per port, the accept-queue wait,
    /// lifetimes, state changes, listen drops and retransmits, and the watched threads'
    /// run-queue waits, summed in the kernel by eBPF. Where it cannot load (not root, no
    /// BTF...) a note says why and everything else runs as before; in a build without the
    /// `kernel` feature ([`crate::kernel::BUILT`]) asking for it is an error.
    pub kernel: bool,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            interval: INTERVAL,
            duration: None,
            pids: Vec::new(),
            ports: Vec::new(),
            out: None,
            profile: false,
            profile_hz: 499,
            perf: PathBuf::from("perf"),
            tcp_budget: 0.003,
            children: false,
            node_exporter: None,
            kernel: false,
        }
    }
}

impl Config {
    /// Checks the settings, saying what is wrong and how to fix it.
    pub fn check(&self) -> Result<(), Error> {
        if self.interval < Duration::from_millis(10) || self.interval > Duration::from_secs(3600) {
            return Err(Error::Config(format!(
                "interval {:?} is out of range: give 10ms to 1h (e.g. --interval 100ms)",
                self.interval
            )));
        }
        if self.duration == Some(Duration::ZERO) {
            return Err(Error::Config(
                "duration 0 would sample nothing: give e.g. -d 10s, or leave it out to run until Ctrl-C".into(),
            ));
        }
        if self.ports.contains(&0) {
            return Err(Error::Config(
                "port 0 names no socket: give the server's port (e.g. --port 8080)".into(),
            ));
        }
        if !(self.tcp_budget > 0.0 && self.tcp_budget.is_finite()) {
            return Err(Error::Config(format!(
                "TCP walk budget {} must be above 0 (e.g. --tcp-budget 0.5 for 0.5 % of a core, 100 for every sample)",
                self.tcp_budget * 100.0
            )));
        }
        if let Some(url) = &self.node_exporter {
            if !self.pids.is_empty() || !self.ports.is_empty() || self.profile || self.kernel {
                return Err(Error::Config(format!(
                    "--node-exporter {url} samples another host: --pid, --port, --profile and --kernel watch this one; run a second monitor for them"
                )));
            }
            if self.interval < NODE_EXPORTER_MIN_INTERVAL {
                return Err(Error::Config(format!(
                    "interval {:?} is too short for node_exporter: a scrape costs it tens of milliseconds of CPU; give 500ms or more, or leave --interval out (1s)",
                    self.interval
                )));
            }
            crate::node_exporter::split(url).map_err(Error::Config)?;
        }
        if self.kernel && self.ports.is_empty() && self.pids.is_empty() {
            return Err(Error::Config(
                "--kernel follows a server's connections and threads: give its --port (e.g. --port 8080), and --pid for its threads' run-queue waits".into(),
            ));
        }
        if self.kernel && self.ports.len() > crate::kernel::layout::MAX_PORTS {
            return Err(Error::Config(format!(
                "--kernel follows at most {} ports, {} given (e.g. --port 8080 --port 8443)",
                crate::kernel::layout::MAX_PORTS,
                self.ports.len()
            )));
        }
        // Asked for explicitly, a kernel module this build lacks is an error (a module that
        // cannot load here is not: a note says why and the rest runs).
        if self.kernel && !crate::kernel::BUILT {
            return Err(Error::Config(format!(
                "--kernel: {}",
                crate::kernel::NOT_BUILT
            )));
        }
        if self.profile && !(1..=20_000).contains(&self.profile_hz) {
            return Err(Error::Config(format!(
                "profile frequency {} Hz is out of range: give 1 to 20000 (e.g. --profile-hz 499)",
                self.profile_hz
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_pass_and_bad_settings_say_how_to_fix_them() {
        assert!(Config::default().check().is_ok());
        let bad = [
            Config {
                interval: Duration::from_millis(1),
                ..Config::default()
            },
            Config {
                duration: Some(Duration::ZERO),
                ..Config::default()
            },
            Config {
                ports: vec![80, 0],
                ..Config::default()
            },
            Config {
                tcp_budget: 0.0,
                ..Config::default()
            },
            Config {
                profile: true,
                profile_hz: 0,
                ..Config::default()
            },
            Config {
                kernel: true,
                ..Config::default()
            },
            Config {
                kernel: true,
                ports: (1..=9).collect(),
                ..Config::default()
            },
        ];
        for config in bad {
            let message = config.check().unwrap_err().to_string();
            assert!(message.contains("e.g."), "{message}");
        }
    }

    #[test]
    fn the_kernel_module_is_refused_in_one_line_exactly_when_not_built() {
        let asked = Config {
            kernel: true,
            ports: vec![8080],
            ..Config::default()
        };
        match (crate::kernel::BUILT, asked.check()) {
            (true, Ok(())) => {}
            (false, Err(err)) => {
                let message = err.to_string();
                assert!(message.contains("--features kernel"), "{message}");
                assert!(!message.contains('\n'), "{message}");
            }
            (built, other) => panic!("kernel module built: {built}, check: {other:?}"),
        }
    }
}
