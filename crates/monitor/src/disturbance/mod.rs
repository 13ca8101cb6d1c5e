//! What else used the machine while a probe ran: a disturbed machine, named.
//!
//! A load test measures a server through the machine it shares with everything else. On a
//! busy machine (a build, another load test, I/O) a probe fails for reasons that are not the
//! server's; the figures here say so. [`Disturbance::start`] reads the counters at the start
//! of a probe, [`Sampler::stop`] at its end, and the [`Disturbance`] is their difference:
//! two cheap readings (a few hundred microseconds each), no sampling thread, since every
//! figure is a counter the kernel keeps running and an interval's share is its delta over the
//! interval's length. [`Disturbance::beyond`] judges it against [`Limits`], and
//! [`wait_for_quiet`] waits a disturbance out in short windows.
//!
//! The figures, each a share (0 to 1) of the interval:
//!
//! - **Others' share**, per group of CPUs ([`Region`]): the time processes other than the
//!   server and the generator took. `/proc/stat` gives each CPU's busy time; a process's time
//!   is not given per CPU, so the watched processes' time (utime + stime of `/proc/PID/stat`,
//!   which keeps the time of threads that have ended) is subtracted from the CPUs they are
//!   pinned to ([`Watched::server_cpus`]). CPU sets that overlap merge into one region; a role
//!   whose pinning is unknown may run anywhere, so the whole machine is one region and only a
//!   machine-wide share can be given.
//!
//!   Busy here is user + nice + system, plus irq + softirq where the kernel counts interrupt
//!   time inside the interrupted process's time, which is the case when it does not account
//!   interrupt time apart (`CONFIG_IRQ_TIME_ACCOUNTING` off or disabled at boot; its `irq`
//!   counter then stays at zero, which is how this module tells, see
//!   [`Disturbance::interrupts_apart`]). Counting them otherwise would hand the loopback
//!   network work the server and the generator cause to "others" (20 % of all CPU time in
//!   a load test here). Steal and iowait are not busy: steal is its own figure, iowait is
//!   idle time.
//!
//!   Where it can be wrong: a watched thread that runs off its pinned CPUs has its time
//!   subtracted from the wrong region (others too high where it ran, too low where it is
//!   pinned; the result is kept at zero or above); a watched process that ends during the
//!   interval has its time counted as others' (a note says so); network work the kernel
//!   defers to `ksoftirqd` under heavy load is that thread's, so others'; ticks are 1/100 s,
//!   so a 500 ms window has a resolution of 2 %.
//! - **Steal**: time the hypervisor gave this VM's CPUs to someone else, per CPU, per region
//!   and machine-wide (`/proc/stat`).
//! - **Run-queue wait** of the server's and the generator's threads ([`Wait`]): the time
//!   each thread was runnable but not running (`/proc/PID/task/TID/schedstat`, second field),
//!   summed over threads and, for the largest, the one thread held off its CPU the longest.
//!   It names a rival directly, but the rival may be a sibling: threads of one process
//!   pinned to one CPU wait for each other. Threads that end during the interval are lost.
//! - **CPU and I/O pressure** (`/proc/pressure/cpu` and `io`, the `some` line's total): the
//!   share of time at least one task of the machine waited for a CPU, or for I/O. None, with
//!   a note, on a kernel without PSI.
//!
//! What it is not: a monitor of its own (the crate's [`crate::Monitor`] samples time series),
//! and not a verdict on the probe; the caller decides what a disturbed probe means.

mod limits;
mod read;

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

pub use limits::{wait_for_quiet, Limits, QUIET_WINDOW};
use read::{process_time, Reading, Stat, Ticks};

use crate::Error;

/// The processes whose CPU use is the measurement's own, and where they are pinned.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Watched {
    /// The server's processes (every one: `procs::tree` finds a master's workers); all
    /// their threads count as the server's. Empty when there is no server to watch.
    pub server: Vec<u32>,
    /// The CPUs the server is pinned to; None when not pinned or not known.
    pub server_cpus: Option<Vec<usize>>,
    /// The generator's processes, usually `std::process::id()`: every thread of the
    /// process counts, the lab's own included.
    pub generator: Vec<u32>,
    /// The CPUs the generator is pinned to; None when not pinned or not known.
    pub generator_cpus: Option<Vec<usize>>,
}

/// Which of the watched a figure belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The server under test.
    Server,
    /// The load generator.
    Generator,
}

impl Role {
    fn name(self) -> &'static str {
        match self {
            Role::Server => "server",
            Role::Generator => "generator",
        }
    }
}

/// What else used the machine over one interval. Shares are 0 to 1 of the interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Disturbance {
    /// The interval's length, seconds.
    pub seconds: f64,
    /// Each online CPU's shares.
    pub cpus: Vec<CpuShares>,
    /// Others' share by group of CPUs: the watched roles' regions, then each CPU no watched
    /// process is pinned to.
    pub regions: Vec<Region>,
    /// Steal, machine-wide.
    pub steal: f64,
    /// The server's threads' run-queue wait; None without server PIDs.
    pub server_wait: Option<Wait>,
    /// The generator's threads' run-queue wait; None without generator PIDs.
    pub generator_wait: Option<Wait>,
    /// The share of time some task waited for a CPU (PSI); None without PSI.
    pub cpu_pressure: Option<f64>,
    /// The share of time some task waited for I/O (PSI); None without PSI.
    pub io_pressure: Option<f64>,
    /// True when the kernel accounts interrupt time apart from processes (its irq counter
    /// moves), so interrupts are left out of busy; false when interrupts are inside the
    /// interrupted process's time and busy includes them.
    pub interrupts_apart: bool,
    /// What could not be measured, or was measured with a caveat.
    pub notes: Vec<String>,
}

/// One CPU's shares of the interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CpuShares {
    /// The CPU's number.
    pub cpu: usize,
    /// Busy, as others' share counts it (see the module's doc).
    pub busy: f64,
    /// irq + softirq.
    pub interrupts: f64,
    /// Steal.
    pub steal: f64,
}

/// A group of CPUs and the time others took on it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Region {
    /// Its CPUs.
    pub cpus: Vec<usize>,
    /// The watched roles that run here; empty for a CPU nothing watched is pinned to.
    pub roles: Vec<Role>,
    /// Busy minus the watched processes' time, as a share of these CPUs' time (one CPU
    /// fully taken by others in a region of two is 0.5).
    pub others: f64,
    /// Steal, as a share of these CPUs' time.
    pub steal: f64,
}

/// Run-queue wait of one role's threads.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Wait {
    /// Threads seen at the end of the interval.
    pub threads: usize,
    /// The waits summed over threads, as a share of the interval (above 1 with many
    /// threads waiting at once).
    pub total: f64,
    /// The largest single thread's wait.
    pub largest: f64,
    /// That thread.
    pub thread: Option<Thread>,
}

/// A thread, named.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Thread {
    /// Its process.
    pub pid: u32,
    /// Its thread ID.
    pub tid: u32,
    /// Its name (`comm`), or "?" when it ended before it could be read.
    pub comm: String,
}

/// A started measurement: the readings at the start, waiting for [`Sampler::stop`].
#[derive(Debug)]
pub struct Sampler {
    watched: Watched,
    before: Reading,
    notes: Vec<String>,
}

impl Disturbance {
    /// Reads the counters at the start of an interval. Err when `/proc/stat` cannot be read
    /// or a watched PID names no process.
    pub fn start(watched: &Watched) -> Result<Sampler, Error> {
        let mut notes = Vec::new();
        let before = reading(watched, &mut notes, true)?;
        Ok(Sampler {
            watched: watched.clone(),
            before,
            notes,
        })
    }
}

impl Sampler {
    /// Reads the counters again and gives the interval's figures. Err only when
    /// `/proc/stat` cannot be read; a watched process that ended is a note.
    pub fn stop(self) -> Result<Disturbance, Error> {
        let mut notes = self.notes;
        let after = reading(&self.watched, &mut notes, false)?;
        let mut disturbance = compute(&self.watched, &self.before, &after, notes);
        for wait in [
            &mut disturbance.server_wait,
            &mut disturbance.generator_wait,
        ] {
            if let Some(thread) = wait.as_mut().and_then(|w| w.thread.as_mut()) {
                thread.comm = comm(thread.pid, thread.tid);
            }
        }
        Ok(disturbance)
    }
}

fn comm(pid: u32, tid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm"))
        .map(|c| c.trim_end().to_string())
        .unwrap_or_else(|_| "?".into())
}

/// One end of the interval. At the start a watched PID that cannot be read is an error; at
/// the end, a note.
fn reading(watched: &Watched, notes: &mut Vec<String>, start: bool) -> Result<Reading, Error> {
    let text = std::fs::read_to_string("/proc/stat")
        .map_err(|e| Error::Proc(format!("cannot read /proc/stat: {e} (is /proc mounted?)")))?;
    let stat =
        Stat::parse(&text).map_err(|e| Error::Proc(format!("cannot parse /proc/stat: {e}")))?;
    let mut processes = HashMap::new();
    for &pid in watched.server.iter().chain(&watched.generator) {
        match process_time(pid) {
            Ok(time) => {
                processes.insert(pid, time);
            }
            Err(reason) if start => return Err(Error::Pid { pid, reason }),
            Err(reason) => notes.push(format!(
                "process {pid} could not be read at the end ({reason}): its CPU time counts as others'"
            )),
        }
    }
    let mut psi = |path: &str| match read::pressure(path) {
        Ok(total) => Some(total),
        Err(why) => {
            if start {
                notes.push(format!("no pressure figure: {why}"));
            }
            None
        }
    };
    Ok(Reading {
        at: Instant::now(),
        stat,
        processes,
        cpu_pressure: psi("/proc/pressure/cpu"),
        io_pressure: psi("/proc/pressure/io"),
    })
}

/// A share, 0 when the whole is empty (a window shorter than a tick), never NaN: NaN would
/// be written as null in JSON and could not be read back.
fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// The interval's figures from its two readings.
fn compute(
    watched: &Watched,
    before: &Reading,
    after: &Reading,
    notes: Vec<String>,
) -> Disturbance {
    let wall = after.at.saturating_duration_since(before.at);
    let interrupts_apart = after.stat.irq_since_boot > 0;
    let busy = |t: Ticks| t.process + if interrupts_apart { 0 } else { t.interrupts };
    let delta: Vec<(usize, Ticks)> = after
        .stat
        .cpus
        .iter()
        .filter_map(|&(cpu, a)| Some((cpu, a.since(before.stat.cpu(cpu)?))))
        .collect();
    let cpus = delta
        .iter()
        .map(|&(cpu, t)| CpuShares {
            cpu,
            busy: share(busy(t), t.all),
            interrupts: share(t.interrupts, t.all),
            steal: share(t.steal, t.all),
        })
        .collect();
    let mut notes = notes;
    let online: Vec<usize> = delta.iter().map(|(cpu, _)| *cpu).collect();
    let regions = groups(watched, &online, &mut notes)
        .into_iter()
        .map(|(set, roles)| {
            let mut ticks = Ticks::default();
            for (_, t) in delta.iter().filter(|(cpu, _)| set.contains(cpu)) {
                ticks.add(*t);
            }
            let own: u64 = roles
                .iter()
                .flat_map(|role| pids(watched, *role))
                .map(|pid| cpu_ticks(before, after, *pid))
                .sum();
            Region {
                cpus: set.into_iter().collect(),
                roles,
                others: share(busy(ticks).saturating_sub(own), ticks.all),
                steal: share(ticks.steal, ticks.all),
            }
        })
        .collect();
    let total = after.stat.total.since(before.stat.total);
    let pressure = |b: Option<u64>, a: Option<u64>| {
        let stalled = a?.saturating_sub(b?);
        Some(stalled as f64 / (wall.as_micros().max(1) as f64))
    };
    let waits =
        |role| (!pids(watched, role).is_empty()).then(|| wait(watched, role, before, after, wall));
    Disturbance {
        seconds: wall.as_secs_f64(),
        cpus,
        regions,
        steal: share(total.steal, total.all),
        server_wait: waits(Role::Server),
        generator_wait: waits(Role::Generator),
        cpu_pressure: pressure(before.cpu_pressure, after.cpu_pressure),
        io_pressure: pressure(before.io_pressure, after.io_pressure),
        interrupts_apart,
        notes,
    }
}

fn pids(watched: &Watched, role: Role) -> &[u32] {
    match role {
        Role::Server => &watched.server,
        Role::Generator => &watched.generator,
    }
}

/// A process's CPU ticks over the interval; 0 when it could not be read at either end.
fn cpu_ticks(before: &Reading, after: &Reading, pid: u32) -> u64 {
    match (before.processes.get(&pid), after.processes.get(&pid)) {
        (Some(b), Some(a)) => a.cpu_ticks.saturating_sub(b.cpu_ticks),
        _ => 0,
    }
}

/// The regions: each watched role's CPUs (all online CPUs when its pinning is unknown),
/// overlapping sets merged, then every CPU left over on its own.
fn groups(
    watched: &Watched,
    online: &[usize],
    notes: &mut Vec<String>,
) -> Vec<(BTreeSet<usize>, Vec<Role>)> {
    let mut groups: Vec<(BTreeSet<usize>, Vec<Role>)> = Vec::new();
    for (role, cpus) in [
        (Role::Server, &watched.server_cpus),
        (Role::Generator, &watched.generator_cpus),
    ] {
        if pids(watched, role).is_empty() {
            continue;
        }
        let mut set: BTreeSet<usize> = match cpus {
            Some(cpus) => cpus
                .iter()
                .copied()
                .filter(|c| online.contains(c))
                .collect(),
            None => online.iter().copied().collect(),
        };
        if set.is_empty() {
            notes.push(format!(
                "the {}'s CPUs {:?} are none of the online ones: taken as running on any",
                role.name(),
                cpus.as_deref().unwrap_or_default()
            ));
            set = online.iter().copied().collect();
        }
        let mut roles = vec![role];
        // Earlier groups are disjoint, so merging every one the new set meets is enough.
        groups.retain(|(other, other_roles)| {
            if other.is_disjoint(&set) {
                return true;
            }
            set.extend(other.iter().copied());
            roles.extend(other_roles.iter().copied());
            false
        });
        groups.push((set, roles));
    }
    let used: BTreeSet<usize> = groups.iter().flat_map(|(s, _)| s.iter().copied()).collect();
    for cpu in online.iter().filter(|c| !used.contains(c)) {
        groups.push((BTreeSet::from([*cpu]), Vec::new()));
    }
    groups.sort_by_key(|(set, _)| set.first().copied());
    for (_, roles) in &mut groups {
        roles.sort_by_key(|r| *r as u8);
    }
    groups
}

/// One role's threads' run-queue waits over the interval.
fn wait(watched: &Watched, role: Role, before: &Reading, after: &Reading, wall: Duration) -> Wait {
    let wall_ns = wall.as_nanos().max(1) as f64;
    let mut out = Wait::default();
    let mut largest = 0;
    for &pid in pids(watched, role) {
        let Some(a) = after.processes.get(&pid) else {
            continue;
        };
        let b = before.processes.get(&pid);
        for (&tid, &ns) in &a.waits {
            // A thread born during the interval waited only within it.
            let waited = ns.saturating_sub(b.and_then(|b| b.waits.get(&tid)).copied().unwrap_or(0));
            out.threads += 1;
            out.total += waited as f64 / wall_ns;
            if out.thread.is_none() || waited > largest {
                largest = waited;
                out.thread = Some(Thread {
                    pid,
                    tid,
                    comm: String::new(),
                });
            }
        }
    }
    out.largest = largest as f64 / wall_ns;
    out
}

#[cfg(test)]
mod tests;
