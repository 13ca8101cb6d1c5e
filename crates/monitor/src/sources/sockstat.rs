//! `/proc/net/sockstat{,6}`: the host's socket totals. The kernel keeps these as counters, so
//! reading them costs the same with 30 000 sockets as with none: the cheap way to watch
//! TIME_WAIT pile up every interval.

use super::{Ctx, ProcFile, Source};
use crate::table::{Group, GroupRows, Row};

/// Host socket totals.
pub static SOCKETS: Group = Group {
    name: "sockets",
    about: "host socket totals (/proc/net/sockstat): TCP sockets in use, orphaned, in TIME_WAIT, allocated; TCP memory in pages",
    keys: &[],
    columns: &[
        "sockets_used",
        "tcp_inuse",
        "tcp_orphan",
        "tcp_tw",
        "tcp_alloc",
        "tcp_mem_pages",
        "tcp6_inuse",
    ],
};

/// The value after `name` on the line that starts with `prefix:`.
pub(crate) fn value(text: &str, prefix: &str, name: &str) -> Option<u64> {
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix(prefix)?.strip_prefix(':'))?;
    let mut words = line.split_whitespace();
    while let Some(word) = words.next() {
        let v = words.next()?;
        if word == name {
            return v.parse().ok();
        }
    }
    None
}

/// The `sockets` row from `/proc/net/sockstat` and (if any) `/proc/net/sockstat6`.
pub(crate) fn row(v4: &str, v6: &str) -> Row {
    let get = |text: &str, prefix: &str, name: &str| {
        value(text, prefix, name).map_or(f64::NAN, |v| v as f64)
    };
    Row::new(
        Vec::<String>::new(),
        vec![
            get(v4, "sockets", "used"),
            get(v4, "TCP", "inuse"),
            get(v4, "TCP", "orphan"),
            get(v4, "TCP", "tw"),
            get(v4, "TCP", "alloc"),
            get(v4, "TCP", "mem"),
            get(v6, "TCP6", "inuse"),
        ],
    )
}

/// The socket-totals source.
pub(crate) struct Sockstat {
    v4: ProcFile,
    /// `None` once known to be missing (a kernel without IPv6).
    v6: Option<ProcFile>,
}

impl Default for Sockstat {
    fn default() -> Sockstat {
        Sockstat {
            v4: ProcFile::new("/proc/net/sockstat"),
            v6: Some(ProcFile::new("/proc/net/sockstat6")),
        }
    }
}

impl Source for Sockstat {
    fn name(&self) -> &'static str {
        "sockets"
    }

    fn sample(&mut self, ctx: &mut Ctx<'_>, out: &mut Vec<GroupRows>) -> Result<(), String> {
        if ctx.dt <= 0.0 {
            return Ok(());
        }
        // No IPv6 in the kernel: no file, and the column stays empty.
        let v6 = match self.v6.as_mut().map(ProcFile::read) {
            Some(Ok(text)) => text.to_string(),
            Some(Err(_)) => {
                self.v6 = None;
                String::new()
            }
            None => String::new(),
        };
        let v4 = self.v4.read()?;
        out.push(GroupRows {
            group: &SOCKETS,
            rows: vec![row(v4, &v6)],
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_sockstat_gives_host_totals() {
        let v4 = include_str!("../../tests/data/proc_net_sockstat");
        let v6 = include_str!("../../tests/data/proc_net_sockstat6");
        let row = row(v4, v6);
        let tw_line: u64 = v4
            .lines()
            .find(|l| l.starts_with("TCP:"))
            .and_then(|l| l.split_whitespace().skip_while(|w| *w != "tw").nth(1))
            .and_then(|n| n.parse().ok())
            .unwrap();
        assert_eq!(row.values[3], tw_line as f64);
        assert!(
            row.values[3] > 1000.0,
            "the fixture was taken with TIME_WAIT piled up"
        );
        assert!(row.values[1] <= row.values[4], "in use <= allocated");
        assert!(!row.values[6].is_nan());
        assert!(super::row(v4, "").values[6].is_nan());
    }

    #[test]
    fn values_are_found_by_name_not_position() {
        assert_eq!(value("TCP: inuse 1 orphan 2 tw 3\n", "TCP", "tw"), Some(3));
        assert_eq!(value("TCP6: inuse 4\n", "TCP", "inuse"), None);
        assert_eq!(value("TCP: inuse\n", "TCP", "inuse"), None);
    }
}
