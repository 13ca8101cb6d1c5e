//! The processes given by `--pid` and each of their threads: CPU, memory, descriptors,
//! context switches, and from `schedstat` the time running on a CPU against the time waiting
//! in the run queue (the split of Hibino et al.'s Table 1).
//!
//! `/proc/PID/schedstat` speaks for the main thread only, as does the context-switch count of
//! `/proc/PID/status`, so the process's figures are the sums over its threads; its CPU time
//! comes from `/proc/PID/stat`, which also counts threads that have exited.

use std::collections::HashMap;

use procfs::process::{Process, Schedstat, Stat};
use procfs::FromRead;

use super::{Ctx, ProcFile, Source};
use crate::table::{rate, Group, GroupRows, Row};

/// Per-process figures.
pub static PROCESS: Group = Group {
    name: "process",
    about: "each --pid: CPU (percent of one core), running vs waiting in the run queue (schedstat, summed over threads), RSS, open descriptors, threads, context switches and page faults per second",
    keys: &["pid", "comm"],
    columns: &[
        "user_pct",
        "system_pct",
        "cpu_pct",
        "run_pct",
        "wait_pct",
        "rss_mib",
        "fds",
        "threads",
        "vol_cs_per_s",
        "invol_cs_per_s",
        "minflt_per_s",
        "majflt_per_s",
    ],
};

/// Per-thread figures.
pub static THREADS: Group = Group {
    name: "threads",
    about: "each thread of each --pid: CPU, and its wall time split into running, waiting for a CPU (run queue) and the rest (sleeping or blocked), percent; context switches per second",
    keys: &["pid", "tid", "comm"],
    columns: &[
        "user_pct",
        "system_pct",
        "run_pct",
        "wait_pct",
        "sleep_pct",
        "vol_cs_per_s",
        "invol_cs_per_s",
    ],
};

/// One reading of one thread.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ThreadReading {
    pub comm: String,
    pub utime: u64,
    pub stime: u64,
    pub vol_cs: u64,
    pub invol_cs: u64,
    /// Nanoseconds on a CPU.
    pub run_ns: u64,
    /// Nanoseconds runnable but waiting for a CPU.
    pub wait_ns: u64,
}

/// One reading of one process.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ProcessReading {
    pub comm: String,
    pub starttime: u64,
    pub utime: u64,
    pub stime: u64,
    pub rss_pages: u64,
    pub threads: HashMap<i32, ThreadReading>,
    pub minflt: u64,
    pub majflt: u64,
    pub fds: Option<u64>,
}

/// Clock ticks per second and page size: the units of `/proc/PID/stat`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Units {
    pub ticks_per_s: f64,
    pub page_bytes: f64,
}

impl Units {
    pub fn current() -> Units {
        Units {
            ticks_per_s: procfs::ticks_per_second() as f64,
            page_bytes: procfs::page_size() as f64,
        }
    }

    fn pct_ticks(&self, before: u64, after: u64, dt: f64) -> f64 {
        rate(before, after, dt) / self.ticks_per_s * 100.0
    }
}

fn pct_ns(before: u64, after: u64, dt: f64) -> f64 {
    rate(before, after, dt) / 1e7
}

pub(crate) fn thread_row(
    pid: i32,
    tid: i32,
    b: &ThreadReading,
    a: &ThreadReading,
    dt: f64,
    units: Units,
) -> Row {
    let run = pct_ns(b.run_ns, a.run_ns, dt);
    let wait = pct_ns(b.wait_ns, a.wait_ns, dt);
    Row::new(
        [pid.to_string(), tid.to_string(), a.comm.clone()],
        vec![
            units.pct_ticks(b.utime, a.utime, dt),
            units.pct_ticks(b.stime, a.stime, dt),
            run,
            wait,
            (100.0 - run - wait).max(0.0),
            rate(b.vol_cs, a.vol_cs, dt),
            rate(b.invol_cs, a.invol_cs, dt),
        ],
    )
}

pub(crate) fn process_row(
    pid: i32,
    b: &ProcessReading,
    a: &ProcessReading,
    dt: f64,
    units: Units,
) -> Row {
    // Sums over the threads present at both readings.
    let mut sums = [0u64; 8];
    for (tid, ta) in &a.threads {
        if let Some(tb) = b.threads.get(tid) {
            sums[0] += tb.run_ns;
            sums[1] += ta.run_ns.max(tb.run_ns);
            sums[2] += tb.wait_ns;
            sums[3] += ta.wait_ns.max(tb.wait_ns);
            sums[4] += tb.vol_cs;
            sums[5] += ta.vol_cs.max(tb.vol_cs);
            sums[6] += tb.invol_cs;
            sums[7] += ta.invol_cs.max(tb.invol_cs);
        }
    }
    let user = units.pct_ticks(b.utime, a.utime, dt);
    let system = units.pct_ticks(b.stime, a.stime, dt);
    Row::new(
        [pid.to_string(), a.comm.clone()],
        vec![
            user,
            system,
            user + system,
            pct_ns(sums[0], sums[1], dt),
            pct_ns(sums[2], sums[3], dt),
            a.rss_pages as f64 * units.page_bytes / (1024.0 * 1024.0),
            a.fds.map_or(f64::NAN, |n| n as f64),
            a.threads.len() as f64,
            rate(sums[4], sums[5], dt),
            rate(sums[6], sums[7], dt),
            rate(b.minflt, a.minflt, dt),
            rate(b.majflt, a.majflt, dt),
        ],
    )
}

/// Whether an error means the process (or thread) is gone.
fn vanished(err: &std::io::Error) -> bool {
    err.kind() == std::io::ErrorKind::NotFound || err.raw_os_error() == Some(libc::ESRCH)
}

/// Open descriptors: the size of `/proc/PID/fd` is their count since Linux 6.2 (no listing
/// of 30 000 entries); older kernels say 0 and the directory is counted.
fn fd_count(process: &Process) -> Result<u64, String> {
    let path = format!("/proc/{}/fd", process.pid());
    match std::fs::metadata(&path) {
        Ok(meta) if meta.len() > 0 => Ok(meta.len()),
        Ok(_) => process
            .fd_count()
            .map(|n| n as u64)
            .map_err(|err| format!("cannot count descriptors of {}: {err}", process.pid())),
        Err(err) => Err(format!(
            "cannot count descriptors of {} ({path}: {err}); run as the same user or root",
            process.pid()
        )),
    }
}

/// The two context-switch counts of a `status` file. Parsed by hand: procfs builds a map of
/// all fifty-odd fields, which costs three times the read, for every thread, ten times a
/// second.
pub(crate) fn context_switches(status: &str) -> (u64, u64) {
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    };
    (
        field("voluntary_ctxt_switches:"),
        field("nonvoluntary_ctxt_switches:"),
    )
}

/// The files of one thread, kept open between samples.
struct ThreadFiles {
    stat: ProcFile,
    status: ProcFile,
    schedstat: ProcFile,
}

impl ThreadFiles {
    fn new(pid: i32, tid: i32) -> ThreadFiles {
        let path = |name: &str| format!("/proc/{pid}/task/{tid}/{name}");
        ThreadFiles {
            stat: ProcFile::new(path("stat")),
            status: ProcFile::new(path("status")),
            schedstat: ProcFile::new(path("schedstat")),
        }
    }

    fn read(&mut self) -> Option<ThreadReading> {
        let stat = Stat::from_read(self.stat.read_raw().ok()?).ok()?;
        let sched = Schedstat::from_read(self.schedstat.read_raw().ok()?).ok()?;
        let (vol_cs, invol_cs) =
            context_switches(std::str::from_utf8(self.status.read_raw().ok()?).ok()?);
        Some(ThreadReading {
            comm: stat.comm,
            utime: stat.utime,
            stime: stat.stime,
            vol_cs,
            invol_cs,
            run_ns: sched.sum_exec_runtime,
            wait_ns: sched.run_delay,
        })
    }
}

struct Watched {
    pid: i32,
    process: Process,
    stat: ProcFile,
    threads: HashMap<i32, ThreadFiles>,
    previous: Option<ProcessReading>,
}

impl Watched {
    /// Reads the process and its threads; `Err` with the OS error when the process is gone
    /// or unreadable. Problems that leave the rest readable go to `problems`.
    fn read(&mut self, problems: &mut Vec<String>) -> Result<ProcessReading, std::io::Error> {
        let stat = Stat::from_read(self.stat.read_raw()?).map_err(std::io::Error::other)?;
        let mut tids: Vec<i32> = std::fs::read_dir(format!("/proc/{}/task", self.pid))?
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse().ok())
            .collect();
        tids.sort_unstable();
        // Threads that ended take their open files with them.
        self.threads
            .retain(|tid, _| tids.binary_search(tid).is_ok());
        let mut threads = HashMap::with_capacity(tids.len());
        for tid in tids {
            let files = self
                .threads
                .entry(tid)
                .or_insert_with(|| ThreadFiles::new(self.pid, tid));
            // A thread that ends between the listing and the reading is simply not counted.
            if let Some(reading) = files.read() {
                threads.insert(tid, reading);
            }
        }
        let fds = match fd_count(&self.process) {
            Ok(n) => Some(n),
            Err(message) => {
                problems.push(message);
                None
            }
        };
        Ok(ProcessReading {
            comm: stat.comm,
            starttime: stat.starttime,
            utime: stat.utime,
            stime: stat.stime,
            rss_pages: stat.rss,
            minflt: stat.minflt,
            majflt: stat.majflt,
            threads,
            fds,
        })
    }
}

/// The process source.
pub(crate) struct Processes {
    watched: Vec<Watched>,
    units: Units,
    /// The PIDs given: their exit is worth a note.
    roots: Vec<u32>,
    /// Watch the roots' descendants too, listed again at every sample.
    children: bool,
}

impl Watched {
    fn new(pid: u32) -> Result<Watched, (u32, String)> {
        let id = i32::try_from(pid).map_err(|_| (pid, "not a valid PID".to_string()))?;
        let process = Process::new(id).map_err(|err| (pid, err.to_string()))?;
        process.stat().map_err(|err| (pid, err.to_string()))?;
        Ok(Watched {
            pid: id,
            process,
            stat: ProcFile::new(format!("/proc/{id}/stat")),
            threads: HashMap::new(),
            previous: None,
        })
    }
}

impl Processes {
    /// Watches `pids` (and, with `children`, their descendants as they come and go); a PID
    /// that does not exist now is an error (a typo, most likely).
    pub fn new(pids: &[u32], children: bool) -> Result<Processes, (u32, String)> {
        let watched = pids
            .iter()
            .map(|&pid| Watched::new(pid))
            .collect::<Result<_, _>>()?;
        Ok(Processes {
            watched,
            units: Units::current(),
            roots: pids.to_vec(),
            children,
        })
    }

    /// Starts watching descendants that appeared since the last sample. Ones that ended are
    /// dropped by `sample` when their files vanish, without a note: Apache's children and
    /// short-lived helpers come and go as a matter of course.
    fn follow_children(&mut self) {
        let live: Vec<u32> = self.watched.iter().map(|w| w.pid as u32).collect();
        for p in crate::procs::tree(&self.roots) {
            if !live.contains(&p.pid) {
                if let Ok(w) = Watched::new(p.pid) {
                    self.watched.push(w);
                }
            }
        }
    }
}

/// The whole watched set as one row (`all/all`): sums, so a server of many processes has
/// one figure for its CPU.
fn total_row(rows: &[Row]) -> Row {
    let width = PROCESS.columns.len();
    let mut sums = vec![0.0; width];
    for row in rows {
        for (sum, v) in sums.iter_mut().zip(&row.values) {
            if v.is_finite() {
                *sum += v;
            }
        }
    }
    Row::new(["all".to_string(), "all".to_string()], sums)
}

impl Source for Processes {
    fn name(&self) -> &'static str {
        "process"
    }

    fn sample(&mut self, ctx: &mut Ctx<'_>, out: &mut Vec<GroupRows>) -> Result<(), String> {
        let mut processes = Vec::new();
        let mut threads = Vec::new();
        let mut exited = Vec::new();
        if self.children {
            self.follow_children();
        }
        for w in &mut self.watched {
            let mut problems = Vec::new();
            match w.read(&mut problems) {
                Ok(now) => {
                    if let Some(before) = w.previous.as_ref().filter(|_| ctx.dt > 0.0) {
                        if before.starttime != now.starttime {
                            exited.push(w.pid);
                            continue;
                        }
                        processes.push(process_row(w.pid, before, &now, ctx.dt, self.units));
                        let mut tids: Vec<&i32> = now.threads.keys().collect();
                        tids.sort();
                        for tid in tids {
                            if let Some(tb) = before.threads.get(tid) {
                                threads.push(thread_row(
                                    w.pid,
                                    *tid,
                                    tb,
                                    &now.threads[tid],
                                    ctx.dt,
                                    self.units,
                                ));
                            }
                        }
                    }
                    w.previous = Some(now);
                }
                Err(err) if vanished(&err) => exited.push(w.pid),
                Err(err) => problems.push(format!("cannot read process {}: {err}", w.pid)),
            }
            for message in problems {
                ctx.notes.add(ctx.t, "process", message);
            }
        }
        for pid in exited {
            if !self.roots.contains(&(pid as u32)) {
                self.watched.retain(|w| w.pid != pid);
                continue;
            }
            let comm = self
                .watched
                .iter()
                .find(|w| w.pid == pid)
                .and_then(|w| w.previous.as_ref())
                .map_or(String::new(), |p| format!(" ({})", p.comm));
            ctx.notes.add(
                ctx.t,
                "process",
                format!(
                    "pid {pid}{comm} exited at {:.1} s; its rows stop there",
                    ctx.t
                ),
            );
            self.watched.retain(|w| w.pid != pid);
        }
        if ctx.dt > 0.0 {
            if processes.len() > 1 {
                let total = total_row(&processes);
                processes.push(total);
            }
            out.push(GroupRows {
                group: &PROCESS,
                rows: processes,
            });
            out.push(GroupRows {
                group: &THREADS,
                rows: threads,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
