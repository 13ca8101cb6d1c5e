//! `/proc/net/dev`: bytes, packets, drops and errors per network interface.

use std::collections::HashMap;

use procfs::net::{DeviceStatus, InterfaceDeviceStatus};
use procfs::FromBufRead;

use super::{Ctx, ProcFile, Source};
use crate::table::{rate, Group, GroupRows, Row};

/// Per-interface traffic.
pub static NET: Group = Group {
    name: "net",
    about: "per network interface: KiB, packets, drops and errors per second",
    keys: &["iface"],
    columns: &[
        "rx_kib_per_s",
        "tx_kib_per_s",
        "rx_packets_per_s",
        "tx_packets_per_s",
        "rx_drop_per_s",
        "tx_drop_per_s",
        "rx_errs_per_s",
        "tx_errs_per_s",
    ],
};

type Devices = HashMap<String, DeviceStatus>;

pub(crate) fn parse(text: &str) -> Result<Devices, String> {
    InterfaceDeviceStatus::from_buf_read(text.as_bytes())
        .map(|d| d.0)
        .map_err(|err| format!("cannot parse /proc/net/dev: {err}"))
}

/// One row per interface present in both readings, sorted by name.
pub(crate) fn rows(before: &Devices, after: &Devices, dt: f64) -> Vec<Row> {
    let mut names: Vec<&String> = after.keys().filter(|n| before.contains_key(*n)).collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let (b, a) = (&before[name], &after[name]);
            Row::new(
                [name.clone()],
                vec![
                    rate(b.recv_bytes, a.recv_bytes, dt) / 1024.0,
                    rate(b.sent_bytes, a.sent_bytes, dt) / 1024.0,
                    rate(b.recv_packets, a.recv_packets, dt),
                    rate(b.sent_packets, a.sent_packets, dt),
                    rate(b.recv_drop, a.recv_drop, dt),
                    rate(b.sent_drop, a.sent_drop, dt),
                    rate(b.recv_errs, a.recv_errs, dt),
                    rate(b.sent_errs, a.sent_errs, dt),
                ],
            )
        })
        .collect()
}

/// The network-interface source.
pub(crate) struct Net {
    file: ProcFile,
    previous: Option<Devices>,
}

impl Default for Net {
    fn default() -> Net {
        Net {
            file: ProcFile::new("/proc/net/dev"),
            previous: None,
        }
    }
}

impl Source for Net {
    fn name(&self) -> &'static str {
        "net"
    }

    fn sample(&mut self, ctx: &mut Ctx<'_>, out: &mut Vec<GroupRows>) -> Result<(), String> {
        let devices = parse(self.file.read()?)?;
        if let Some(before) = self.previous.as_ref().filter(|_| ctx.dt > 0.0) {
            out.push(GroupRows {
                group: &NET,
                rows: rows(before, &devices, ctx.dt),
            });
        }
        self.previous = Some(devices);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_net_dev_gives_rates_per_interface() {
        let t0 = include_str!("../../tests/data/proc_net_dev.0");
        let t1 = include_str!("../../tests/data/proc_net_dev.1");
        let (before, after) = (parse(t0).unwrap(), parse(t1).unwrap());
        let rows = rows(&before, &after, 4.0);
        let lo = rows.iter().find(|r| r.key == ["lo"]).expect("lo is there");
        // Independent reading of the lo line: the first number after the colon is rx bytes.
        let rx = |t: &str| -> u64 {
            let line = t
                .lines()
                .find(|l| l.trim_start().starts_with("lo:"))
                .unwrap();
            line.split(':')
                .nth(1)
                .unwrap()
                .split_whitespace()
                .next()
                .unwrap()
                .parse()
                .unwrap()
        };
        assert_eq!(lo.values[0], (rx(t1) - rx(t0)) as f64 / 4.0 / 1024.0);
        assert_eq!(lo.values.len(), NET.columns.len());
        let mut names: Vec<_> = rows.iter().map(|r| r.key[0].clone()).collect();
        let sorted = {
            let mut s = names.clone();
            s.sort();
            s
        };
        assert_eq!(names, sorted);
        names.dedup();
        assert_eq!(names.len(), rows.len());
    }
}
