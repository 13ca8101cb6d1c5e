//! `webscope load --cpu LIST`: the generator pinned to CPUs, as `taskset -c LIST` would, and
//! the summary's line on whether the server may run on them too.
//!
//! Pinned figures are the design's rule on this machine (nginx at 1 KiB ranged from 25k to
//! 78k req/s unpinned): the lab pins the generator itself (`webscope_lab::target::
//! pin_current`, one CPU); `load` takes a list. The process's main thread is pinned before
//! any other starts, so every thread the run spawns inherits the set.
//!
//! Where the server runs is known only for a server on this machine (the URL's address is a
//! loopback one): the processes holding its listening socket are found by port
//! (`webscope_monitor::procs::listeners`), and the CPUs each of their threads may use read
//! from /proc. Elsewhere nothing is said.

use std::collections::BTreeSet;
use std::net::SocketAddr;

/// CPUs as `taskset -c` and /proc's `Cpus_allowed_list` write them: `1`, `0,2`, `0-3,6`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuList(pub Vec<usize>);

/// The most CPUs a set holds (`CPU_SETSIZE`).
const MAX_CPU: usize = 1024;

impl CpuList {
    /// Parses a list; Err says what is wrong, for clap to print.
    pub fn parse(text: &str) -> Result<CpuList, String> {
        let bad =
            |why: &str| format!("{text:?} is not a CPU list ({why}): give e.g. 1, 0,2 or 0-3");
        let mut cpus = BTreeSet::new();
        for part in text.trim().split(',') {
            let number = |s: &str| s.trim().parse::<usize>().map_err(|_| bad("not a number"));
            let (from, to) = match part.split_once('-') {
                Some((a, b)) => (number(a)?, number(b)?),
                None => (number(part)?, number(part)?),
            };
            if from > to {
                return Err(bad("a range runs downwards"));
            }
            if to >= MAX_CPU {
                return Err(bad("CPUs are numbered below 1024"));
            }
            cpus.extend(from..=to);
        }
        Ok(CpuList(cpus.into_iter().collect()))
    }

    /// As `taskset -c` writes it back: ranges joined (`0-3,6`).
    pub fn show(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        let mut i = 0;
        while i < self.0.len() {
            let start = self.0[i];
            while i + 1 < self.0.len() && self.0[i + 1] == self.0[i] + 1 {
                i += 1;
            }
            parts.push(match self.0[i] {
                end if end == start => start.to_string(),
                end => format!("{start}-{end}"),
            });
            i += 1;
        }
        parts.join(",")
    }
}

/// The CPUs a thread may run on, from its /proc status (`/proc/PID/task/TID/status`).
fn allowed(status_path: &str) -> Option<CpuList> {
    let text = std::fs::read_to_string(status_path).ok()?;
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
    CpuList::parse(line).ok()
}

/// Pins this process's calling thread, and so every thread it starts later, to `cpus`. Err
/// names a CPU this process may not use (offline, absent, or outside its cgroup's set).
pub fn pin(cpus: &CpuList) -> anyhow::Result<()> {
    let may = allowed("/proc/thread-self/status");
    if let Some(may) = &may {
        if let Some(cpu) = cpus.0.iter().find(|c| !may.0.contains(c)) {
            anyhow::bail!(
                "--cpu {}: CPU {cpu} is not one this process may use (it may use {})",
                cpus.show(),
                may.show()
            );
        }
    }
    let pinned = match cpus.0.as_slice() {
        // What the lab does for its generator.
        [one] => webscope_lab::target::pin_current(*one),
        many => set_affinity(many),
    };
    pinned.map_err(|e| anyhow::anyhow!("cannot pin the generator to CPUs {}: {e}", cpus.show()))
}

/// The lab's `pin_current` for a set of CPUs (the lab pins one).
fn set_affinity(cpus: &[usize]) -> std::io::Result<()> {
    // SAFETY: a zeroed cpu_set_t with bits below CPU_SETSIZE set (the list is checked
    // against it), passed with its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &cpu in cpus {
            libc::CPU_SET(cpu, &mut set);
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The summary's line on the generator's CPUs beside the server's: None where the server's
/// cannot be known (not on this machine, or its processes not visible).
pub fn beside_server(ours: &CpuList, addr: SocketAddr) -> Option<String> {
    if !addr.ip().is_loopback() {
        return None;
    }
    let servers = webscope_monitor::procs::listeners(addr.port()).ok()?;
    let name = servers
        .iter()
        .map(|p| p.comm.as_str())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect::<Vec<_>>()
        .join(", ");
    // Every thread of every process holding the socket: a server may pin its workers one by
    // one (nginx's worker_cpu_affinity) while its master floats.
    let mut theirs = BTreeSet::new();
    for p in &servers {
        let tasks = std::fs::read_dir(format!("/proc/{}/task", p.pid)).ok()?;
        for task in tasks.flatten() {
            let path = task.path().join("status");
            theirs.extend(allowed(&path.to_string_lossy())?.0);
        }
    }
    let theirs = CpuList(theirs.into_iter().collect());
    let shared: Vec<usize> = ours
        .0
        .iter()
        .copied()
        .filter(|c| theirs.0.contains(c))
        .collect();
    Some(if shared.is_empty() {
        format!(
            "CPUs: the generator on {}, the server ({name}, port {}) on {}: apart",
            ours.show(),
            addr.port(),
            theirs.show()
        )
    } else {
        format!(
            "CPUs: the generator on {} shares {} with the server ({name}, port {}, which may run on {}): each may take CPU time from the other, so neither figure is clean; give them CPUs apart (--cpu, and taskset -c or nginx's worker_cpu_affinity for the server)",
            ours.show(),
            CpuList(shared).show(),
            addr.port(),
            theirs.show()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_as_taskset_writes_them() {
        assert_eq!(CpuList::parse("1").unwrap().0, [1]);
        assert_eq!(CpuList::parse("0,2").unwrap().0, [0, 2]);
        assert_eq!(CpuList::parse(" 0-3,6,2 ").unwrap().0, [0, 1, 2, 3, 6]);
        assert_eq!(CpuList::parse("0-3,6").unwrap().show(), "0-3,6");
        for bad in ["", "a", "3-1", "1,,2", "-1", "1024", "0-5000"] {
            assert!(CpuList::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn this_threads_allowed_cpus_are_read() {
        let mine = allowed("/proc/thread-self/status").expect("Cpus_allowed_list");
        assert!(!mine.0.is_empty());
    }
}
