//! One reading of what a disturbance is computed from: `/proc/stat`'s CPU lines, each watched
//! process's CPU time and its threads' run-queue waits, and the pressure files. Two readings
//! make a [`super::Disturbance`]; nothing here keeps state between them.

use std::collections::HashMap;
use std::time::Instant;

use procfs::process::Process;

/// Ticks of one CPU (or of all together) since boot, grouped as the disturbance uses them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Ticks {
    /// user + nice + system: time of processes (guest time is inside user and nice).
    pub process: u64,
    /// irq + softirq.
    pub interrupts: u64,
    /// Time the hypervisor ran something else while this CPU had work.
    pub steal: u64,
    /// Every field but guest and guest_nice (already inside user and nice).
    pub all: u64,
}

impl Ticks {
    /// The fields after the name on a `cpu` line of `/proc/stat`; None when they are not
    /// numbers. Kernels before 2.6.11 lack steal (and older ones irq and softirq): zero.
    fn parse(fields: &[&str]) -> Option<Ticks> {
        let mut n = [0u64; 8];
        for (slot, field) in n.iter_mut().zip(fields) {
            *slot = field.parse().ok()?;
        }
        if fields.len() < 4 {
            return None;
        }
        let [user, nice, system, idle, iowait, irq, softirq, steal] = n;
        Some(Ticks {
            process: user + nice + system,
            interrupts: irq + softirq,
            steal,
            all: user + nice + system + idle + iowait + irq + softirq + steal,
        })
    }

    /// The ticks from `before` to `self`; a counter that went backwards counts as none.
    pub fn since(self, before: Ticks) -> Ticks {
        Ticks {
            process: self.process.saturating_sub(before.process),
            interrupts: self.interrupts.saturating_sub(before.interrupts),
            steal: self.steal.saturating_sub(before.steal),
            all: self.all.saturating_sub(before.all),
        }
    }

    /// Adds `other` to `self`.
    pub fn add(&mut self, other: Ticks) {
        self.process += other.process;
        self.interrupts += other.interrupts;
        self.steal += other.steal;
        self.all += other.all;
    }
}

/// `/proc/stat`'s CPU lines: the machine's total, each online CPU by its number, and the
/// since-boot irq ticks, which say whether the kernel accounts interrupt time apart from
/// processes.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Stat {
    pub total: Ticks,
    pub cpus: Vec<(usize, Ticks)>,
    /// The `irq` field of the `cpu` line.
    pub irq_since_boot: u64,
}

impl Stat {
    /// Parses `/proc/stat`'s text; Err names what is missing.
    pub fn parse(text: &str) -> Result<Stat, String> {
        let mut stat = Stat::default();
        let mut total = None;
        for line in text.lines() {
            let mut words = line.split_whitespace();
            let Some(name) = words.next().and_then(|w| w.strip_prefix("cpu")) else {
                continue;
            };
            let fields: Vec<&str> = words.collect();
            let ticks = Ticks::parse(&fields).ok_or_else(|| format!("bad line {line:?}"))?;
            if name.is_empty() {
                total = Some(ticks);
                stat.irq_since_boot = fields.get(5).and_then(|f| f.parse().ok()).unwrap_or(0);
            } else if let Ok(cpu) = name.parse() {
                stat.cpus.push((cpu, ticks));
            }
        }
        stat.total = total.ok_or("no `cpu` line")?;
        Ok(stat)
    }

    /// The ticks of CPU `cpu`, if it is online.
    pub fn cpu(&self, cpu: usize) -> Option<Ticks> {
        self.cpus.iter().find(|(n, _)| *n == cpu).map(|(_, t)| *t)
    }
}

/// One watched process: its CPU time and each thread's run-queue wait.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ProcessTime {
    /// utime + stime from `/proc/PID/stat`, in ticks: threads that have exited are in it.
    pub cpu_ticks: u64,
    /// Nanoseconds each thread has waited on a run queue (`schedstat`'s second field).
    pub waits: HashMap<u32, u64>,
}

/// Reads one process; Err says why it cannot be read (usually: it has ended).
pub(crate) fn process_time(pid: u32) -> Result<ProcessTime, String> {
    let process = Process::new(pid as i32).map_err(|e| e.to_string())?;
    let stat = process.stat().map_err(|e| e.to_string())?;
    let mut waits = HashMap::new();
    // A thread that ends between the listing and its read is left out: its wait is lost
    // either way, as that of every thread that ends during the interval.
    for task in process.tasks().map_err(|e| e.to_string())?.flatten() {
        if let Ok(schedstat) = task.schedstat() {
            waits.insert(task.tid as u32, schedstat.run_delay);
        }
    }
    Ok(ProcessTime {
        cpu_ticks: stat.utime + stat.stime,
        waits,
    })
}

/// The `some` line's `total` (microseconds stalled since boot) of a pressure file's text.
pub(crate) fn pressure_total(text: &str) -> Result<u64, String> {
    let some = text
        .lines()
        .find(|l| l.starts_with("some "))
        .ok_or("no `some` line")?;
    procfs::parse_pressure_record(some)
        .map(|record| record.total)
        .map_err(|e| e.to_string())
}

/// A pressure file's `some` total, or why there is none (a kernel without PSI has no such
/// file; one booted with `psi=0` refuses to read it).
pub(crate) fn pressure(path: &str) -> Result<u64, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    pressure_total(&text).map_err(|e| format!("{path}: {e}"))
}

/// Everything read at one end of the interval.
#[derive(Debug, Clone)]
pub(crate) struct Reading {
    pub at: Instant,
    pub stat: Stat,
    /// Watched processes by PID; one that could not be read is absent.
    pub processes: HashMap<u32, ProcessTime>,
    pub cpu_pressure: Option<u64>,
    pub io_pressure: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_keeps_cpu_numbers_and_groups_the_fields() {
        let text = "cpu  10 1 5 100 7 0 3 2 4 0\n\
                    cpu0 6 1 2 50 3 0 2 1 4 0\n\
                    cpu2 4 0 3 50 4 0 1 1 0 0\n\
                    intr 5 0\nctxt 9\n";
        let stat = Stat::parse(text).unwrap();
        assert_eq!(
            stat.total,
            Ticks {
                process: 16,
                interrupts: 3,
                steal: 2,
                all: 128
            },
            "guest (4) is inside user and counted once"
        );
        assert_eq!(stat.cpus.len(), 2);
        assert_eq!(stat.cpu(2).unwrap().process, 7);
        assert_eq!(
            stat.cpu(1),
            None,
            "an offline CPU is absent, not renumbered"
        );
        assert_eq!(stat.irq_since_boot, 0);
    }

    #[test]
    fn stat_of_the_fixture_and_of_this_machine() {
        let stat = Stat::parse(include_str!("../../tests/data/proc_stat.0")).unwrap();
        assert_eq!(stat.cpus.len(), 2);
        assert_eq!(stat.total.interrupts, 43050);
        let live = Stat::parse(&std::fs::read_to_string("/proc/stat").unwrap()).unwrap();
        assert!(!live.cpus.is_empty());
        assert!(live.total.all >= live.cpus[0].1.all);
    }

    #[test]
    fn stat_without_a_total_line_is_an_error() {
        assert!(Stat::parse("cpu0 1 2 3 4\n").is_err());
        assert!(Stat::parse("cpu  1 2 x 4\n").is_err());
    }

    #[test]
    fn pressure_some_total() {
        let text = "some avg10=1.33 avg60=14.53 avg300=12.56 total=211334051\n\
                    full avg10=0.40 avg60=2.32 avg300=2.22 total=17444510\n";
        assert_eq!(pressure_total(text), Ok(211_334_051));
        // Kernels before 5.13 write no `full` line for the CPU.
        assert_eq!(
            pressure_total("some avg10=0.00 avg60=0.00 avg300=0.00 total=42\n"),
            Ok(42)
        );
        assert!(pressure_total("full avg10=0.00 avg60=0.00 avg300=0.00 total=42\n").is_err());
        assert!(pressure_total("").is_err());
    }

    #[test]
    fn pressure_files_of_this_machine_read_or_say_why_not() {
        for path in ["/proc/pressure/cpu", "/proc/pressure/io"] {
            match std::fs::read_to_string(path) {
                Ok(text) => {
                    let first = pressure_total(&text).unwrap();
                    assert!(pressure(path).unwrap() >= first, "a total only grows");
                }
                Err(_) => assert!(pressure(path).unwrap_err().starts_with(path)),
            }
        }
    }

    #[test]
    fn this_process_reads_with_its_threads() {
        let me = process_time(std::process::id()).unwrap();
        assert!(
            me.waits.contains_key(&std::process::id()),
            "the main thread"
        );
        assert!(process_time(u32::MAX >> 1).is_err());
    }
}
