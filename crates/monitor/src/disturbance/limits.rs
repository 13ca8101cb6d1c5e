//! How much disturbance a measurement tolerates, the sentence that names what went past it,
//! and waiting a disturbance out.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::{Disturbance, Region, Role, Wait, Watched};
use crate::Error;
use webscope_report::human::pct_brief as pct;

/// The largest share of the interval each figure may reach before the machine counts as
/// disturbed. A figure at its limit is still quiet; a figure that was not measured (no PSI)
/// never is beyond; 1.0 turns a figure's limit off (no share exceeds it).
///
/// The defaults, and why. Measured on this project's 2-vCPU VM over 5 s windows while other
/// engineers compiled (`examples/disturbance.rs`): others 3-77 % of CPU 0 and 32-98 % of
/// CPU 1, steal 0-0.2 %, CPU pressure 0.5-5 % (23-26 % once more builds ran than CPUs),
/// I/O pressure 0.4-0.8 %; an idle watched thread waited 0 %.
///
/// - `others` 10 % of the server's or the generator's CPUs: what a quiet machine runs beside
///   a probe (daemons, kernel threads, the monitor of another tool) and the 1/100 s tick
///   rounding stay at a few percent (3 % on CPU 0 above, in a moment no build used it); a
///   build or a hog sharing the CPU takes a third to all of it. A tenth of the server's CPU
///   is about what a probe near capacity can lose before the search would move past the
///   bracket it reports.
/// - `steal` 5 %: a VM whose host is not overcommitted shows 0-1 % (0.2 % here); above 5 %
///   the server's CPU is shrinking under the probe.
/// - `wait` 10 % for the one watched thread waiting longest on a run queue: a thread alone
///   on its CPU waits only while a kernel thread or an interrupt's work runs, well under
///   that; one sharing the CPU with a busy rival waits a third or more (half, with one
///   rival, in the tests). A thread held off its CPU a tenth of a probe sets the probe's
///   latency tail. The rival may be a sibling (several threads of the watched pinned to one
///   CPU): run one busy thread per CPU for this figure to name others.
/// - `cpu_pressure` 20 %: machine-wide, and the watched threads' own contention counts, so
///   looser than `others`. Two compilers on two CPUs keep it at a few percent; more runnable
///   tasks than CPUs (a load average of 4-5 on this VM today, PSI's own 60 s average at 28 %)
///   push it past the limit.
/// - `io_pressure` 20 %: a quiet machine stays under 1 %; a build's linking or an I/O hog
///   stalls tasks on I/O a good part of the time, and a server reading files from disk
///   stalls with it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Limits {
    /// Others' share of a region where the server or the generator runs.
    pub others: f64,
    /// Steal, of a region where the server or the generator runs (machine-wide when no role
    /// is watched).
    pub steal: f64,
    /// The largest run-queue wait of a single watched thread.
    pub wait: f64,
    /// CPU pressure, `some`.
    pub cpu_pressure: f64,
    /// I/O pressure, `some`.
    pub io_pressure: f64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            others: 0.10,
            steal: 0.05,
            wait: 0.10,
            cpu_pressure: 0.20,
            io_pressure: 0.20,
        }
    }
}

/// "CPU 0", "CPUs 0-3", "CPUs 0, 2".
fn cpu_list(cpus: &[usize]) -> String {
    match cpus {
        [one] => format!("CPU {one}"),
        [first, .., last] if last - first + 1 == cpus.len() => format!("CPUs {first}-{last}"),
        _ => {
            let list: Vec<String> = cpus.iter().map(|c| c.to_string()).collect();
            format!("CPUs {}", list.join(", "))
        }
    }
}

/// "the server's CPU 0", "CPUs 0-1 (server and generator)".
fn region_name(region: &Region) -> String {
    match region.roles.as_slice() {
        [role] => format!("the {}'s {}", role.name(), cpu_list(&region.cpus)),
        roles => {
            let names: Vec<&str> = roles.iter().map(|r| r.name()).collect();
            format!("{} ({})", cpu_list(&region.cpus), names.join(" and "))
        }
    }
}

fn wait_beyond(role: Role, wait: &Option<Wait>, limit: f64) -> Option<String> {
    let wait = wait.as_ref().filter(|w| w.largest > limit)?;
    let who = wait
        .thread
        .as_ref()
        .map(|t| format!(" ({}/{} {})", t.pid, t.tid, t.comm).replace(" )", ")"))
        .unwrap_or_default();
    Some(format!(
        "a {} thread{who} waited for a CPU {} of the time",
        role.name(),
        pct(wait.largest)
    ))
}

impl Disturbance {
    /// None when every figure is within `limits`; else one sentence naming each figure past
    /// its limit, e.g. "other processes took 38 % of the server's CPU 0, steal 6 % of the
    /// server's CPU 0, I/O pressure 22 %".
    pub fn beyond(&self, limits: &Limits) -> Option<String> {
        let mut parts = Vec::new();
        let watched: Vec<&Region> = self
            .regions
            .iter()
            .filter(|r| !r.roles.is_empty())
            .collect();
        let others: Vec<String> = watched
            .iter()
            .filter(|r| r.others > limits.others)
            .map(|r| format!("{} of {}", pct(r.others), region_name(r)))
            .collect();
        if !others.is_empty() {
            parts.push(format!("other processes took {}", others.join(" and ")));
        }
        let steal = watched
            .iter()
            .max_by(|a, b| a.steal.total_cmp(&b.steal))
            .map(|r| (r.steal, format!(" of {}", region_name(r))))
            .unwrap_or((self.steal, String::new()));
        if steal.0 > limits.steal {
            parts.push(format!("steal {}{}", pct(steal.0), steal.1));
        }
        parts.extend(wait_beyond(Role::Server, &self.server_wait, limits.wait));
        parts.extend(wait_beyond(
            Role::Generator,
            &self.generator_wait,
            limits.wait,
        ));
        for (name, figure, limit) in [
            ("CPU", self.cpu_pressure, limits.cpu_pressure),
            ("I/O", self.io_pressure, limits.io_pressure),
        ] {
            if let Some(share) = figure.filter(|s| *s > limit) {
                parts.push(format!("{name} pressure {}", pct(share)));
            }
        }
        (!parts.is_empty()).then(|| parts.join(", "))
    }
}

/// The length of one window of [`wait_for_quiet`]: long enough for /proc/stat's 1/100 s
/// ticks to give 2 % resolution, short enough to start soon after a disturbance ends.
pub const QUIET_WINDOW: Duration = Duration::from_millis(500);

/// Measures `watched` in windows of [`QUIET_WINDOW`] until one is within `limits`, or until
/// `most` has passed (at least one window is measured). Gives whether a quiet window was
/// found and the last window's figures (what to name when it was not). Err as
/// [`Disturbance::start`] (a watched process that has ended) or [`super::Sampler::stop`].
pub fn wait_for_quiet(
    watched: &Watched,
    limits: &Limits,
    most: Duration,
) -> Result<(bool, Disturbance), Error> {
    wait_until(limits, most, QUIET_WINDOW, |window| {
        let sampler = Disturbance::start(watched)?;
        std::thread::sleep(window);
        sampler.stop()
    })
}

/// [`wait_for_quiet`]'s loop, with the measurement of one window given.
pub(super) fn wait_until(
    limits: &Limits,
    most: Duration,
    window: Duration,
    mut measure: impl FnMut(Duration) -> Result<Disturbance, Error>,
) -> Result<(bool, Disturbance), Error> {
    let began = Instant::now();
    loop {
        let figures = measure(window)?;
        if figures.beyond(limits).is_none() {
            return Ok((true, figures));
        }
        if began.elapsed() + window > most {
            return Ok((false, figures));
        }
    }
}
