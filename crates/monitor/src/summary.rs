//! `monitor.json`: what a run was, and per group, row and column the mean, minimum, maximum
//! and last value, with the profile, the notes and the monitor's own cost. It deserialises
//! too, so reports can read a run back.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::cost::Cost;
use crate::profile::Profile;
use crate::sources::ports::WalkStats;
use crate::table::{Group, Sample};
use crate::{Error, Note};

/// The summary of a monitor run (the content of `monitor.json`). A field a file leaves out
/// reads as its default, so that a summary written before the field existed still reads.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Summary {
    /// Format version of this file.
    pub version: u32,
    /// When sampling started, seconds since the Unix epoch.
    pub started_unix: f64,
    /// How long it ran, seconds.
    pub duration_s: f64,
    /// The sampling interval, seconds.
    pub interval_s: f64,
    /// Samples taken (the baseline not counted).
    pub samples: u64,
    /// Whether the run was stopped before its duration (Ctrl-C).
    pub interrupted: bool,
    /// The watched processes.
    pub pids: Vec<u32>,
    /// The watched ports.
    pub ports: Vec<u16>,
    /// Where the figures came from: `procfs` (this machine) or `node_exporter URL`.
    #[serde(default = "procfs")]
    pub source: String,
    /// The machine.
    pub host: Host,
    /// Per group (`cpu`, `memory`, `ports`...): statistics of every row and column.
    pub groups: BTreeMap<String, GroupSummary>,
    /// How the per-port TCP states were counted, and what it cost.
    pub tcp_walks: Option<WalkStats>,
    /// The kernel profile (with --profile, when perf worked).
    pub profile: Option<Profile>,
    /// Why there is no profile although one was asked for (one line).
    pub profile_error: Option<String>,
    /// The kernel module's figures (with `kernel`, where it loaded).
    #[serde(default)]
    pub kernel: Option<crate::kernel::KernelSummary>,
    /// Why there are no kernel figures although they were asked for (one line).
    #[serde(default)]
    pub kernel_error: Option<String>,
    /// Problems met while sampling.
    pub notes: Vec<Note>,
    /// What sampling cost.
    pub cost: Cost,
}

impl Summary {
    /// The statistics of one value: `summary.stat("cpu", "all", "busy_pct")`.
    pub fn stat(&self, group: &str, row: &str, column: &str) -> Option<&Stat> {
        self.groups.get(group)?.rows.get(row)?.get(column)
    }

    /// The mean of one value over the run: `summary.mean("cpu", "all", "busy_pct")`.
    pub fn mean(&self, group: &str, row: &str, column: &str) -> Option<f64> {
        self.stat(group, row, column).map(|s| s.mean)
    }

    /// The maximum of one value over the run.
    pub fn max(&self, group: &str, row: &str, column: &str) -> Option<f64> {
        self.stat(group, row, column).map(|s| s.max)
    }

    /// The largest mean of `column` over a group's rows: the busiest disk's `util_pct`, the
    /// most waiting process's `wait_pct`. None when no row has it.
    pub fn busiest(&self, group: &str, column: &str) -> Option<f64> {
        self.groups
            .get(group)?
            .rows
            .values()
            .filter_map(|row| Some(row.get(column)?.mean))
            .reduce(f64::max)
    }

    /// Reads a `monitor.json`.
    pub fn read(path: &Path) -> Result<Summary, Error> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Out {
            path: path.to_path_buf(),
            source,
        })?;
        serde_json::from_str(&text).map_err(|err| Error::Out {
            path: path.to_path_buf(),
            source: std::io::Error::other(err),
        })
    }
}

/// The machine the run was on.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Host {
    /// Online CPUs.
    pub cpus: usize,
    /// `uname -r`.
    pub kernel: String,
    /// Host name.
    pub hostname: String,
}

impl Host {
    pub(crate) fn current() -> Host {
        let read = |p: &str| {
            std::fs::read_to_string(p)
                .map(|s| s.trim().to_string())
                .unwrap_or_default()
        };
        Host {
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            kernel: read("/proc/sys/kernel/osrelease"),
            hostname: read("/proc/sys/kernel/hostname"),
        }
    }
}

/// One group's statistics.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct GroupSummary {
    /// What the group holds.
    pub about: String,
    /// Its key columns.
    pub keys: Vec<String>,
    /// Its value columns.
    pub columns: Vec<String>,
    /// Per row (keys joined with `/`; `all` for single-row groups), per column.
    pub rows: BTreeMap<String, BTreeMap<String, Stat>>,
}

/// Statistics of one value over the run (samples where it could not be had are left out).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Stat {
    /// Mean.
    pub mean: f64,
    /// Minimum.
    pub min: f64,
    /// Maximum.
    pub max: f64,
    /// The last value.
    pub last: f64,
    /// How many samples had it.
    pub n: u64,
}

/// Accumulates the statistics as samples come.
#[derive(Debug, Default)]
pub(crate) struct Accumulator {
    groups: BTreeMap<&'static str, (&'static Group, BTreeMap<String, Vec<Acc>>)>,
}

#[derive(Debug, Clone, Copy, Default)]
struct Acc {
    n: u64,
    sum: f64,
    min: f64,
    max: f64,
    last: f64,
}

impl Acc {
    fn add(&mut self, v: f64) {
        if v.is_nan() {
            return;
        }
        if self.n == 0 {
            self.min = v;
            self.max = v;
        }
        self.n += 1;
        self.sum += v;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        self.last = v;
    }
}

fn procfs() -> String {
    "procfs".into()
}

impl Accumulator {
    pub fn add(&mut self, sample: &Sample) {
        for g in &sample.groups {
            let (_, rows) = self
                .groups
                .entry(g.group.name)
                .or_insert_with(|| (g.group, BTreeMap::new()));
            for row in &g.rows {
                let accs = rows
                    .entry(row.key_name())
                    .or_insert_with(|| vec![Acc::default(); g.group.columns.len()]);
                for (acc, v) in accs.iter_mut().zip(&row.values) {
                    acc.add(*v);
                }
            }
        }
    }

    pub fn groups(&self) -> BTreeMap<String, GroupSummary> {
        self.groups
            .iter()
            .map(|(name, (group, rows))| {
                let rows = rows
                    .iter()
                    .map(|(key, accs)| {
                        let stats = group
                            .columns
                            .iter()
                            .zip(accs)
                            .filter(|(_, a)| a.n > 0)
                            .map(|(column, a)| {
                                (
                                    column.to_string(),
                                    Stat {
                                        mean: a.sum / a.n as f64,
                                        min: a.min,
                                        max: a.max,
                                        last: a.last,
                                        n: a.n,
                                    },
                                )
                            })
                            .collect();
                        (key.clone(), stats)
                    })
                    .collect();
                (
                    name.to_string(),
                    GroupSummary {
                        about: group.about.to_string(),
                        keys: group.keys.iter().map(|k| k.to_string()).collect(),
                        columns: group.columns.iter().map(|c| c.to_string()).collect(),
                        rows,
                    },
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::{GroupRows, Row};

    static G: Group = Group {
        name: "g",
        about: "test group",
        keys: &[],
        columns: &["a", "b"],
    };

    fn sample(a: f64, b: f64) -> Sample {
        Sample {
            t: 0.0,
            unix_time: 0.0,
            dt: 1.0,
            groups: vec![GroupRows {
                group: &G,
                rows: vec![Row::new(Vec::<String>::new(), vec![a, b])],
            }],
        }
    }

    #[test]
    fn statistics_skip_missing_values() {
        let mut acc = Accumulator::default();
        acc.add(&sample(1.0, f64::NAN));
        acc.add(&sample(3.0, f64::NAN));
        acc.add(&sample(2.0, f64::NAN));
        let groups = acc.groups();
        let row = &groups["g"].rows["all"];
        assert_eq!(
            row["a"],
            Stat {
                mean: 2.0,
                min: 1.0,
                max: 3.0,
                last: 2.0,
                n: 3
            }
        );
        assert!(
            !row.contains_key("b"),
            "a column never had a value: left out"
        );
        // And it round-trips through JSON (no NaN that JSON could not hold).
        let json = serde_json::to_string(&groups).unwrap();
        let back: BTreeMap<String, GroupSummary> = serde_json::from_str(&json).unwrap();
        assert_eq!(back["g"].rows["all"]["a"].max, 3.0);
    }
}
