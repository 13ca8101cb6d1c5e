//! `/proc/meminfo` and `/proc/vmstat`: memory levels and paging rates.

use procfs::{FromBufRead, Meminfo};

use super::{Ctx, ProcFile, Source};
use crate::table::{rate, Group, GroupRows, Row};

/// Memory levels (MiB) and paging rates.
pub static MEMORY: Group = Group {
    name: "memory",
    about: "memory levels in MiB; page faults, swapping and paging per second",
    keys: &[],
    columns: &[
        "total_mib",
        "free_mib",
        "available_mib",
        "buffers_mib",
        "cached_mib",
        "dirty_mib",
        "writeback_mib",
        "swap_used_mib",
        "pgfault_per_s",
        "pgmajfault_per_s",
        "pswpin_per_s",
        "pswpout_per_s",
        "pgpgin_kib_per_s",
        "pgpgout_kib_per_s",
    ],
};

/// The `/proc/vmstat` counters we turn into rates, in column order.
const VMSTAT: [&str; 6] = [
    "pgfault",
    "pgmajfault",
    "pswpin",
    "pswpout",
    "pgpgin",
    "pgpgout",
];

/// The counters of `/proc/vmstat` named in [`VMSTAT`] (0 when a kernel lacks one).
pub(crate) fn vmstat(text: &str) -> [u64; 6] {
    let mut out = [0; 6];
    for line in text.lines() {
        let mut parts = line.split_whitespace();
        if let (Some(name), Some(value)) = (parts.next(), parts.next()) {
            if let Some(i) = VMSTAT.iter().position(|n| *n == name) {
                out[i] = value.parse().unwrap_or(0);
            }
        }
    }
    out
}

/// The memory row from a `/proc/meminfo` reading and two `/proc/vmstat` readings.
pub(crate) fn row(meminfo: &Meminfo, before: &[u64; 6], after: &[u64; 6], dt: f64) -> Row {
    let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
    let mut values = vec![
        mib(meminfo.mem_total),
        mib(meminfo.mem_free),
        meminfo.mem_available.map_or(f64::NAN, mib),
        mib(meminfo.buffers),
        mib(meminfo.cached),
        mib(meminfo.dirty),
        mib(meminfo.writeback),
        mib(meminfo.swap_total.saturating_sub(meminfo.swap_free)),
    ];
    values.extend((0..VMSTAT.len()).map(|i| rate(before[i], after[i], dt)));
    Row::new(Vec::<String>::new(), values)
}

/// The memory source.
pub(crate) struct Memory {
    vmstat: ProcFile,
    meminfo: ProcFile,
    previous: Option<[u64; 6]>,
}

impl Default for Memory {
    fn default() -> Memory {
        Memory {
            vmstat: ProcFile::new("/proc/vmstat"),
            meminfo: ProcFile::new("/proc/meminfo"),
            previous: None,
        }
    }
}

impl Source for Memory {
    fn name(&self) -> &'static str {
        "memory"
    }

    fn sample(&mut self, ctx: &mut Ctx<'_>, out: &mut Vec<GroupRows>) -> Result<(), String> {
        let counters = vmstat(self.vmstat.read()?);
        if let Some(before) = self.previous.filter(|_| ctx.dt > 0.0) {
            let meminfo = Meminfo::from_buf_read(self.meminfo.read()?.as_bytes())
                .map_err(|err| format!("cannot parse /proc/meminfo: {err}"))?;
            out.push(GroupRows {
                group: &MEMORY,
                rows: vec![row(&meminfo, &before, &counters, ctx.dt)],
            });
        }
        self.previous = Some(counters);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_meminfo_and_vmstat_give_levels_and_rates() {
        let meminfo =
            Meminfo::from_buf_read(include_str!("../../tests/data/proc_meminfo").as_bytes())
                .unwrap();
        let before = vmstat(include_str!("../../tests/data/proc_vmstat.0"));
        let after = vmstat(include_str!("../../tests/data/proc_vmstat.1"));
        assert!(before[0] > 0, "pgfault is read");
        let row = row(&meminfo, &before, &after, 0.5);
        let total_kib: f64 = include_str!("../../tests/data/proc_meminfo")
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|r| r.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap();
        assert_eq!(row.values[0], total_kib / 1024.0);
        assert!(row.values[1] <= row.values[0]);
        assert_eq!(row.values[8], (after[0] - before[0]) as f64 / 0.5);
        assert_eq!(row.values.len(), MEMORY.columns.len());
    }

    #[test]
    fn unknown_and_missing_vmstat_lines_are_ignored() {
        let counters = vmstat("pgfault 10\nnr_free_pages 3\npswpin x\n");
        assert_eq!(counters, [10, 0, 0, 0, 0, 0]);
    }
}
