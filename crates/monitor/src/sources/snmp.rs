//! `/proc/net/snmp` and `/proc/net/netstat`: the TCP counters (opens, resets, retransmits,
//! listen overflows and drops, SYN cookies, timeouts, TIME_WAIT ends).
//!
//! Both files hold pairs of lines, `Tcp: Name Name ...` then `Tcp: 1 2 ...`; the counters we
//! keep are a table, so adding one is one line.

use super::{Ctx, ProcFile, Source};
use crate::table::{rate, Group, GroupRows, Row};

/// Where each column comes from: file, line prefix, field, and whether it is a level (else a
/// counter turned into a rate).
pub(crate) struct Counter {
    file: usize,
    pub(crate) prefix: &'static str,
    pub(crate) field: &'static str,
    pub(crate) level: bool,
}

const SNMP: usize = 0;
const NETSTAT: usize = 1;
const FILES: [&str; 2] = ["/proc/net/snmp", "/proc/net/netstat"];

const fn rate_of(file: usize, prefix: &'static str, field: &'static str) -> Counter {
    Counter {
        file,
        prefix,
        field,
        level: false,
    }
}

/// The counters, in the order of [`TCP`]'s columns.
pub(crate) const COUNTERS: [Counter; 17] = [
    rate_of(SNMP, "Tcp", "ActiveOpens"),
    rate_of(SNMP, "Tcp", "PassiveOpens"),
    rate_of(SNMP, "Tcp", "AttemptFails"),
    rate_of(SNMP, "Tcp", "EstabResets"),
    rate_of(SNMP, "Tcp", "OutRsts"),
    rate_of(SNMP, "Tcp", "InSegs"),
    rate_of(SNMP, "Tcp", "OutSegs"),
    rate_of(SNMP, "Tcp", "RetransSegs"),
    rate_of(NETSTAT, "TcpExt", "ListenOverflows"),
    rate_of(NETSTAT, "TcpExt", "ListenDrops"),
    rate_of(NETSTAT, "TcpExt", "SyncookiesSent"),
    rate_of(NETSTAT, "TcpExt", "SyncookiesRecv"),
    rate_of(NETSTAT, "TcpExt", "SyncookiesFailed"),
    rate_of(NETSTAT, "TcpExt", "TCPTimeouts"),
    rate_of(NETSTAT, "TcpExt", "TW"),
    rate_of(NETSTAT, "TcpExt", "TWKilled"),
    Counter {
        file: SNMP,
        prefix: "Tcp",
        field: "CurrEstab",
        level: true,
    },
];

/// The host's TCP counters.
pub static TCP: Group = Group {
    name: "tcp",
    about:
        "host TCP counters per second (/proc/net/snmp, /proc/net/netstat); curr_estab is a level",
    keys: &[],
    columns: &[
        "active_opens_per_s",
        "passive_opens_per_s",
        "attempt_fails_per_s",
        "estab_resets_per_s",
        "out_rsts_per_s",
        "in_segs_per_s",
        "out_segs_per_s",
        "retrans_segs_per_s",
        "listen_overflows_per_s",
        "listen_drops_per_s",
        "syncookies_sent_per_s",
        "syncookies_recv_per_s",
        "syncookies_failed_per_s",
        "timeouts_per_s",
        "time_wait_ended_per_s",
        "time_wait_killed_per_s",
        "curr_estab",
    ],
};

/// The value of `prefix`'s `field` in a file of header/value line pairs.
pub(crate) fn field(text: &str, prefix: &str, name: &str) -> Option<u64> {
    let mut lines = text.lines();
    while let Some(header) = lines.next() {
        let values = lines.next()?;
        let (Some(h), Some(v)) = (header.strip_prefix(prefix), values.strip_prefix(prefix)) else {
            continue;
        };
        let (Some(h), Some(v)) = (h.strip_prefix(':'), v.strip_prefix(':')) else {
            continue;
        };
        let index = h.split_whitespace().position(|n| n == name)?;
        // Some fields (MaxConn) may be -1: read as signed, keep what is a count.
        return v
            .split_whitespace()
            .nth(index)
            .and_then(|n| n.parse::<i64>().ok())
            .map(|n| n.max(0) as u64);
    }
    None
}

/// Every counter of [`COUNTERS`] from the two files' texts (`None` where a kernel lacks one).
pub(crate) fn counters(texts: &[String; 2]) -> Vec<Option<u64>> {
    COUNTERS
        .iter()
        .map(|c| field(&texts[c.file], c.prefix, c.field))
        .collect()
}

/// The `tcp` row between two readings.
pub(crate) fn row(before: &[Option<u64>], after: &[Option<u64>], dt: f64) -> Row {
    let values = COUNTERS
        .iter()
        .zip(before.iter().zip(after))
        .map(|(c, (b, a))| match (c.level, b, a) {
            (true, _, Some(a)) => *a as f64,
            (false, Some(b), Some(a)) => rate(*b, *a, dt),
            _ => f64::NAN,
        })
        .collect();
    Row::new(Vec::<String>::new(), values)
}

/// The TCP-counters source.
pub(crate) struct Snmp {
    files: [ProcFile; 2],
    previous: Option<Vec<Option<u64>>>,
}

impl Default for Snmp {
    fn default() -> Snmp {
        Snmp {
            files: FILES.map(ProcFile::new),
            previous: None,
        }
    }
}

impl Source for Snmp {
    fn name(&self) -> &'static str {
        "tcp"
    }

    fn sample(&mut self, ctx: &mut Ctx<'_>, out: &mut Vec<GroupRows>) -> Result<(), String> {
        let [snmp, netstat] = &mut self.files;
        let texts = [snmp.read()?.to_string(), netstat.read()?.to_string()];
        let now = counters(&texts);
        if let Some(before) = self.previous.as_ref().filter(|_| ctx.dt > 0.0) {
            out.push(GroupRows {
                group: &TCP,
                rows: vec![row(before, &now, ctx.dt)],
            });
        }
        self.previous = Some(now);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(n: u8) -> [String; 2] {
        match n {
            0 => [
                include_str!("../../tests/data/proc_net_snmp.0").to_string(),
                include_str!("../../tests/data/proc_net_netstat.0").to_string(),
            ],
            _ => [
                include_str!("../../tests/data/proc_net_snmp.1").to_string(),
                include_str!("../../tests/data/proc_net_netstat.1").to_string(),
            ],
        }
    }

    #[test]
    fn every_counter_is_found_in_recorded_files() {
        let (before, after) = (counters(&texts(0)), counters(&texts(1)));
        for (c, v) in COUNTERS.iter().zip(&after) {
            assert!(v.is_some(), "{}:{} missing", c.prefix, c.field);
        }
        let row = row(&before, &after, 1.0);
        assert_eq!(row.values.len(), TCP.columns.len());
        let active = |i: usize| field(&texts(i as u8)[0], "Tcp", "ActiveOpens").unwrap();
        assert_eq!(row.values[0], (active(1) - active(0)) as f64);
        assert!(row.values[0] > 0.0, "the fixture saw connections opened");
    }

    #[test]
    fn fields_are_read_from_their_own_line_pair() {
        let text = "Ip: A B\nIp: 1 2\nTcp: RtoMin MaxConn B\nTcp: 200 -1 7\n";
        assert_eq!(field(text, "Tcp", "B"), Some(7));
        assert_eq!(field(text, "Ip", "B"), Some(2));
        assert_eq!(field(text, "Tcp", "MaxConn"), Some(0));
        assert_eq!(field(text, "Tcp", "C"), None);
        assert_eq!(field(text, "Udp", "B"), None);
        assert_eq!(field("TcpExt: A\n", "TcpExt", "A"), None);
    }

    #[test]
    fn a_missing_counter_gives_an_empty_cell() {
        let row = row(&[None, Some(1)], &[Some(5), Some(3)], 1.0);
        assert!(row.values[0].is_nan());
        assert_eq!(row.values[1], 2.0);
    }
}
