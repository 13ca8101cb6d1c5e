//! `/proc/diskstats`: per-device I/O rates, utilisation and average wait, as `iostat -x`.

use std::collections::HashMap;

use procfs::{DiskStat, DiskStats, FromBufRead};

use super::{Ctx, ProcFile, Source};
use crate::table::{rate, Group, GroupRows, Row};

/// Per-device I/O.
pub static DISK: Group = Group {
    name: "disk",
    about: "per block device: I/O per second, KiB per second, utilisation, average wait (ms per I/O), I/Os in flight",
    keys: &["device"],
    columns: &[
        "reads_per_s",
        "writes_per_s",
        "read_kib_per_s",
        "write_kib_per_s",
        "util_pct",
        "await_ms",
        "in_flight",
    ],
};

/// Devices with nothing to say: loop devices, RAM disks, compressed swap, floppies.
pub(crate) fn ignored(name: &str) -> bool {
    ["loop", "ram", "zram", "fd"].iter().any(|p| {
        name.strip_prefix(p)
            .is_some_and(|rest| rest.chars().all(|c| c.is_ascii_digit()))
    })
}

/// The row of one device between two readings `dt` seconds apart.
pub(crate) fn row(before: &DiskStat, after: &DiskStat, dt: f64) -> Row {
    // Sectors are 512 bytes in /proc/diskstats whatever the device's own sector size.
    let kib = |b: u64, a: u64| rate(b, a, dt) * 512.0 / 1024.0;
    let ios = after.reads.saturating_sub(before.reads) + after.writes.saturating_sub(before.writes);
    let waited = after.time_reading.saturating_sub(before.time_reading)
        + after.time_writing.saturating_sub(before.time_writing);
    Row::new(
        [after.name.clone()],
        vec![
            rate(before.reads, after.reads, dt),
            rate(before.writes, after.writes, dt),
            kib(before.sectors_read, after.sectors_read),
            kib(before.sectors_written, after.sectors_written),
            // io_ticks: milliseconds during which the device had I/O in flight.
            (rate(before.time_in_progress, after.time_in_progress, dt) / 10.0).min(100.0),
            if ios == 0 {
                0.0
            } else {
                waited as f64 / ios as f64
            },
            after.in_progress as f64,
        ],
    )
}

/// The rows of every device present in both readings.
pub(crate) fn rows(before: &[DiskStat], after: &[DiskStat], dt: f64) -> Vec<Row> {
    let previous: HashMap<&str, &DiskStat> = before.iter().map(|d| (d.name.as_str(), d)).collect();
    after
        .iter()
        .filter(|d| !ignored(&d.name))
        .filter_map(|d| previous.get(d.name.as_str()).map(|b| row(b, d, dt)))
        .collect()
}

/// The disk source.
pub(crate) struct Disk {
    file: ProcFile,
    previous: Option<Vec<DiskStat>>,
}

impl Default for Disk {
    fn default() -> Disk {
        Disk {
            file: ProcFile::new("/proc/diskstats"),
            previous: None,
        }
    }
}

impl Source for Disk {
    fn name(&self) -> &'static str {
        "disk"
    }

    fn sample(&mut self, ctx: &mut Ctx<'_>, out: &mut Vec<GroupRows>) -> Result<(), String> {
        let stats = DiskStats::from_buf_read(self.file.read()?.as_bytes())
            .map_err(|err| format!("cannot parse /proc/diskstats: {err}"))?
            .0;
        if let Some(before) = self.previous.as_ref().filter(|_| ctx.dt > 0.0) {
            out.push(GroupRows {
                group: &DISK,
                rows: rows(before, &stats, ctx.dt),
            });
        }
        self.previous = Some(stats);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(text: &str) -> Vec<DiskStat> {
        DiskStats::from_buf_read(text.as_bytes()).unwrap().0
    }

    #[test]
    fn recorded_diskstats_give_iostat_figures() {
        let before = fixture(include_str!("../../tests/data/proc_diskstats.0"));
        let after = fixture(include_str!("../../tests/data/proc_diskstats.1"));
        let rows = rows(&before, &after, 2.0);
        assert_eq!(
            rows.len(),
            1,
            "loop and zram devices are left out: {rows:?}"
        );
        let vda = &rows[0];
        assert_eq!(vda.key, ["vda"]);
        let (b, a) = (
            &before.iter().find(|d| d.name == "vda").unwrap(),
            &after.iter().find(|d| d.name == "vda").unwrap(),
        );
        assert_eq!(vda.values[1], (a.writes - b.writes) as f64 / 2.0);
        assert_eq!(
            vda.values[3],
            (a.sectors_written - b.sectors_written) as f64 * 512.0 / 1024.0 / 2.0
        );
        assert!(vda.values[1] > 0.0, "the fixture saw writes");
        let expected_util = (a.time_in_progress - b.time_in_progress) as f64 / 2000.0 * 100.0;
        assert!((vda.values[4] - expected_util).abs() < 1e-9);
        assert!(vda.values[5] > 0.0);
    }

    #[test]
    fn virtual_devices_are_ignored_but_partitions_are_not() {
        assert!(ignored("loop0") && ignored("zram12") && ignored("ram1"));
        assert!(!ignored("vda") && !ignored("vda1") && !ignored("nvme0n1") && !ignored("loopy"));
    }
}
