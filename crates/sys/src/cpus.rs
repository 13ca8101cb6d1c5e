//! Sets of CPUs and pinning to them: the one rule for `load --cpu LIST` and the lab's own
//! pinning of its server and its generator (one CPU each).
//!
//! Pinned figures are the design's rule on this machine (nginx at 1 KiB ranged from 25k to
//! 78k req/s unpinned). A thread pinned before it starts others hands its set on to them,
//! so pinning the main thread first pins the whole run.

use std::collections::BTreeSet;

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

impl std::fmt::Display for CpuList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.show())
    }
}

/// The CPUs a thread may run on, from its /proc status (`/proc/thread-self/status`,
/// `/proc/PID/task/TID/status`); None if it cannot be read.
pub fn allowed(status_path: &std::path::Path) -> Option<CpuList> {
    let text = std::fs::read_to_string(status_path).ok()?;
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
    CpuList::parse(line).ok()
}

/// Why a set of CPUs could not be pinned to.
#[derive(Debug)]
pub enum PinError {
    /// A CPU of the set is not one this process may use (offline, absent, or outside its
    /// cgroup's set): the kernel would refuse or quietly narrow the set.
    NotAllowed {
        /// The first such CPU.
        cpu: usize,
        /// The CPUs the process may use.
        may: CpuList,
    },
    /// sched_setaffinity failed.
    Os(std::io::Error),
}

impl std::fmt::Display for PinError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PinError::NotAllowed { cpu, may } => {
                write!(
                    f,
                    "CPU {cpu} is not one this process may use (it may use {may})"
                )
            }
            PinError::Os(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for PinError {}

/// Pins the calling thread, and so every thread it starts later, to `cpus`, after checking
/// each is one this thread may use.
pub fn pin(cpus: &CpuList) -> Result<(), PinError> {
    if let Some(may) = allowed(std::path::Path::new("/proc/thread-self/status")) {
        if let Some(&cpu) = cpus.0.iter().find(|c| !may.0.contains(c)) {
            return Err(PinError::NotAllowed { cpu, may });
        }
    }
    set_affinity(&cpus.0).map_err(PinError::Os)
}

/// Pins the calling thread to `cpus` without reading anything first: it allocates nothing,
/// so a child may call it between fork and exec (the lab's server). CPUs of 1024 and above
/// are refused (EINVAL), as `CpuList::parse` refuses them.
pub fn set_affinity(cpus: &[usize]) -> std::io::Result<()> {
    if cpus.iter().any(|&c| c >= MAX_CPU) {
        return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: a zeroed cpu_set_t with bits below CPU_SETSIZE set (checked above), passed
    // with its size.
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
        let mine =
            allowed(std::path::Path::new("/proc/thread-self/status")).expect("Cpus_allowed_list");
        assert!(!mine.0.is_empty());
    }

    /// The one rule the lab and `load --cpu` share: a thread pinned to a set may then run
    /// on that set only, and a CPU outside what it may use is refused by name.
    #[test]
    fn a_pinned_thread_may_run_on_its_set_only() {
        std::thread::spawn(|| {
            let status = std::path::Path::new("/proc/thread-self/status");
            let may = allowed(status).expect("Cpus_allowed_list");
            let first = CpuList(vec![may.0[0]]);
            pin(&first).expect("pin to a CPU this thread may use");
            assert_eq!(allowed(status), Some(first.clone()));
            // Narrowed to one CPU, any other is now refused before the kernel is asked.
            let other = CpuList(vec![first.0[0] + 1]);
            match pin(&other) {
                Err(PinError::NotAllowed { cpu, may }) => {
                    assert_eq!((cpu, may), (first.0[0] + 1, first));
                }
                got => panic!("{got:?}"),
            }
            assert!(set_affinity(&[MAX_CPU]).is_err());
        })
        .join()
        .expect("the pinning thread");
    }
}
