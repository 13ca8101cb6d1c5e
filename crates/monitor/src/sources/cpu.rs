//! `/proc/stat` and `/proc/loadavg`: where the CPUs' time went (whole machine and per core),
//! context switches, interrupts, softirqs, forks and the run queue.

use procfs::{CpuTime, FromBufReadSI, FromRead, KernelStats, LoadAverage};

use super::{Ctx, ProcFile, Source};
use crate::table::{rate, Group, GroupRows, Row};

/// Time shares of each CPU over the interval, in percent of that CPU (`cpu` = `all` is the
/// whole machine: percent of all cores together).
pub static CPU: Group = Group {
    name: "cpu",
    about: "share of each CPU's time over the interval (all = the whole machine), percent",
    keys: &["cpu"],
    columns: &[
        "user_pct",
        "nice_pct",
        "system_pct",
        "idle_pct",
        "iowait_pct",
        "irq_pct",
        "softirq_pct",
        "steal_pct",
        "busy_pct",
    ],
};

/// Kernel activity of the whole machine.
pub static SYSTEM: Group = Group {
    name: "system",
    about: "context switches, interrupts, softirqs and forks per second; run queue and load",
    keys: &[],
    columns: &[
        "ctxt_per_s",
        "intr_per_s",
        "softirq_per_s",
        "forks_per_s",
        "procs_running",
        "procs_blocked",
        "load1",
    ],
};

/// One reading of `/proc/stat`.
#[derive(Debug, Clone)]
pub(crate) struct Reading {
    stats: KernelStats,
    intr: u64,
    softirq: u64,
}

impl Reading {
    pub fn parse(text: &str) -> Result<Reading, String> {
        let stats = KernelStats::from_buf_read(text.as_bytes(), procfs::current_system_info())
            .map_err(|err| format!("cannot parse /proc/stat: {err}"))?;
        // procfs leaves out the interrupt and softirq totals: the first number of their lines.
        let total = |prefix: &str| {
            text.lines()
                .find_map(|line| line.strip_prefix(prefix))
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(0)
        };
        Ok(Reading {
            intr: total("intr "),
            softirq: total("softirq "),
            stats,
        })
    }
}

/// The machine's CPU ticks now, all CPUs together: (busy, total), busy being everything but
/// idle and iowait, as `busy_pct` counts it. For callers that want the machine's CPU over
/// their own interval (the live page) without running a monitor.
pub fn machine_ticks() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let total = Reading::parse(&text).ok()?.stats.total;
    let (idle, iowait) = (total.idle, total.iowait.unwrap_or(0));
    let all = total.user
        + total.nice
        + total.system
        + idle
        + iowait
        + total.irq.unwrap_or(0)
        + total.softirq.unwrap_or(0)
        + total.steal.unwrap_or(0);
    Some((all - idle - iowait, all))
}

/// The eight shares of one CPU between two readings, in percent; they add up to 100.
fn shares(before: &CpuTime, after: &CpuTime) -> Vec<f64> {
    // guest and guest_nice are already inside user and nice: leaving them out avoids
    // counting them twice.
    let fields = |c: &CpuTime| {
        [
            c.user,
            c.nice,
            c.system,
            c.idle,
            c.iowait.unwrap_or(0),
            c.irq.unwrap_or(0),
            c.softirq.unwrap_or(0),
            c.steal.unwrap_or(0),
        ]
    };
    let (b, a) = (fields(before), fields(after));
    // iowait may go backwards (see proc(5)): a negative delta counts as none.
    let deltas: Vec<u64> = a
        .iter()
        .zip(b.iter())
        .map(|(x, y)| x.saturating_sub(*y))
        .collect();
    let total: u64 = deltas.iter().sum();
    let mut out: Vec<f64> = deltas
        .iter()
        .map(|d| {
            if total == 0 {
                f64::NAN
            } else {
                *d as f64 * 100.0 / total as f64
            }
        })
        .collect();
    out.push(100.0 - out[3] - out[4]);
    out
}

/// The rows of `cpu` and `system` between two readings `dt` seconds apart.
pub(crate) fn rows(before: &Reading, after: &Reading, dt: f64, load1: f64) -> (Vec<Row>, Row) {
    let mut cpu = vec![Row::new(
        ["all"],
        shares(&before.stats.total, &after.stats.total),
    )];
    for (i, (b, a)) in before
        .stats
        .cpu_time
        .iter()
        .zip(after.stats.cpu_time.iter())
        .enumerate()
    {
        cpu.push(Row::new([format!("cpu{i}")], shares(b, a)));
    }
    let level = |v: Option<u32>| v.map_or(f64::NAN, f64::from);
    let system = Row::new(
        Vec::<String>::new(),
        vec![
            rate(before.stats.ctxt, after.stats.ctxt, dt),
            rate(before.intr, after.intr, dt),
            rate(before.softirq, after.softirq, dt),
            rate(before.stats.processes, after.stats.processes, dt),
            level(after.stats.procs_running),
            level(after.stats.procs_blocked),
            load1,
        ],
    );
    (cpu, system)
}

/// The `/proc/stat` source.
pub(crate) struct Cpu {
    stat: ProcFile,
    loadavg: ProcFile,
    previous: Option<Reading>,
}

impl Default for Cpu {
    fn default() -> Cpu {
        Cpu {
            stat: ProcFile::new("/proc/stat"),
            loadavg: ProcFile::new("/proc/loadavg"),
            previous: None,
        }
    }
}

impl Source for Cpu {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn sample(&mut self, ctx: &mut Ctx<'_>, out: &mut Vec<GroupRows>) -> Result<(), String> {
        let reading = Reading::parse(self.stat.read()?)?;
        let load1 = self
            .loadavg
            .read()
            .ok()
            .and_then(|text| LoadAverage::from_read(text.as_bytes()).ok())
            .map_or(f64::NAN, |l| f64::from(l.one));
        if let Some(before) = self.previous.as_ref().filter(|_| ctx.dt > 0.0) {
            let (cpu, system) = rows(before, &reading, ctx.dt, load1);
            out.push(GroupRows {
                group: &CPU,
                rows: cpu,
            });
            out.push(GroupRows {
                group: &SYSTEM,
                rows: vec![system],
            });
        }
        self.previous = Some(reading);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(n: u8) -> Reading {
        let text = match n {
            0 => include_str!("../../tests/data/proc_stat.0"),
            _ => include_str!("../../tests/data/proc_stat.1"),
        };
        Reading::parse(text).expect("fixture parses")
    }

    /// The numbers of a line of the fixture, independently of procfs.
    fn line(text: &str, name: &str) -> Vec<u64> {
        let line = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .expect("line present");
        line.split_whitespace()
            .skip(1)
            .map(|n| n.parse().unwrap())
            .collect()
    }

    #[test]
    fn shares_of_every_cpu_add_up_to_100() {
        let (cpu, _) = rows(&fixture(0), &fixture(1), 1.0, 0.5);
        assert_eq!(cpu.len(), 3, "all + two cores in the fixture");
        for row in &cpu {
            let sum: f64 = row.values[..8].iter().sum();
            assert!((sum - 100.0).abs() < 1e-9, "{}: {sum}", row.key_name());
            assert!((row.values[8] - (100.0 - row.values[3] - row.values[4])).abs() < 1e-9);
        }
    }

    #[test]
    fn shares_and_rates_match_the_raw_counters() {
        let (t0, t1) = (
            include_str!("../../tests/data/proc_stat.0"),
            include_str!("../../tests/data/proc_stat.1"),
        );
        let (a, b) = (line(t0, "cpu"), line(t1, "cpu"));
        let delta: Vec<u64> = b.iter().zip(&a).map(|(x, y)| x - y).collect();
        let total: u64 = delta[..8].iter().sum();
        let (cpu, system) = rows(&fixture(0), &fixture(1), 2.0, 0.5);
        let user = delta[0] as f64 * 100.0 / total as f64;
        assert!((cpu[0].values[0] - user).abs() < 1e-9);
        let ctxt = (line(t1, "ctxt")[0] - line(t0, "ctxt")[0]) as f64 / 2.0;
        assert_eq!(system.values[0], ctxt);
        let intr = (line(t1, "intr")[0] - line(t0, "intr")[0]) as f64 / 2.0;
        assert_eq!(system.values[1], intr);
        assert!(system.values[1] > 0.0);
        assert_eq!(system.values[4], line(t1, "procs_running")[0] as f64);
        assert_eq!(system.values[6], 0.5);
    }

    #[test]
    fn live_proc_stat_parses() {
        let mut notes = crate::notes::Notes::default();
        let mut source = Cpu::default();
        let mut out = Vec::new();
        let mut ctx = Ctx {
            t: 0.0,
            dt: 0.0,
            notes: &mut notes,
        };
        source.sample(&mut ctx, &mut out).unwrap();
        assert!(out.is_empty(), "the baseline gives no rates");
        std::thread::sleep(std::time::Duration::from_millis(30));
        let mut ctx = Ctx {
            t: 0.03,
            dt: 0.03,
            notes: &mut notes,
        };
        source.sample(&mut ctx, &mut out).unwrap();
        assert_eq!(out.len(), 2);
        assert!(out[0].rows.len() >= 2);
    }
}
