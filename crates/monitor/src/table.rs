//! The shape of what the monitor records: groups of rows, each row a key and one value per
//! column. One group is one CSV file (`cpu.csv`, `ports.csv`, ...) and one section of
//! `monitor.json`.

use serde::{Deserialize, Serialize};

/// A group of figures: its file name, the columns that name a row, the value columns.
#[derive(Debug)]
pub struct Group {
    /// The group's name, also its CSV file's stem.
    pub name: &'static str,
    /// What the group holds, for `--help`-like listings and the JSON summary.
    pub about: &'static str,
    /// The key columns that tell rows apart (a core, a device, a port and side...).
    pub keys: &'static [&'static str],
    /// The value columns, each name ending in its unit (`_pct`, `_per_s`, `_mib`, `_ms`).
    pub columns: &'static [&'static str],
}

/// One row: its key (one string per key column) and its values (one per value column; NaN
/// where a value could not be had, written as an empty CSV cell).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// One string per key column of the group.
    pub key: Vec<String>,
    /// One value per value column of the group.
    pub values: Vec<f64>,
}

impl Row {
    /// A row from its key parts and values.
    pub fn new<K: Into<String>>(key: impl IntoIterator<Item = K>, values: Vec<f64>) -> Row {
        Row {
            key: key.into_iter().map(Into::into).collect(),
            values,
        }
    }

    /// The key joined with `/`, as the JSON summary names rows (`8080/local`, `cpu0`);
    /// `all` for the one row of a group without key columns.
    pub fn key_name(&self) -> String {
        if self.key.is_empty() {
            "all".to_string()
        } else {
            self.key.join("/")
        }
    }
}

/// The rows of one group at one instant.
#[derive(Debug, Clone)]
pub struct GroupRows {
    /// Which group.
    pub group: &'static Group,
    /// Its rows (a group may have none at a given instant: no disk, a port not dumped yet).
    pub rows: Vec<Row>,
}

impl GroupRows {
    /// The row whose key is `key` (parts joined with `/`; `all` in a group without keys).
    pub fn row(&self, key: &str) -> Option<&Row> {
        self.rows.iter().find(|r| r.key_name() == key)
    }

    /// The value of `column` in the row `key`.
    pub fn value(&self, key: &str, column: &str) -> Option<f64> {
        let index = self.group.columns.iter().position(|c| *c == column)?;
        self.row(key).map(|row| row.values[index])
    }
}

/// Everything sampled at one instant: rates over the interval that ends here, and levels.
#[derive(Debug, Clone)]
pub struct Sample {
    /// Seconds since the monitor started.
    pub t: f64,
    /// Seconds since the Unix epoch.
    pub unix_time: f64,
    /// Seconds since the previous sample (the divisor of the rates).
    pub dt: f64,
    /// One entry per group that produced rows.
    pub groups: Vec<GroupRows>,
}

impl Sample {
    /// The rows of the group named `name`.
    pub fn group(&self, name: &str) -> Option<&GroupRows> {
        self.groups.iter().find(|g| g.group.name == name)
    }

    /// One value: `sample.value("cpu", "all", "user_pct")`.
    pub fn value(&self, group: &str, key: &str, column: &str) -> Option<f64> {
        self.group(group)?.value(key, column)
    }
}

/// A rate per second from two counter readings; NaN when the counter went backwards (a
/// device or process that restarted) or no time passed.
pub(crate) fn rate(before: u64, after: u64, dt: f64) -> f64 {
    if after < before || dt <= 0.0 {
        f64::NAN
    } else {
        (after - before) as f64 / dt
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static G: Group = Group {
        name: "g",
        about: "test",
        keys: &["port", "side"],
        columns: &["a", "b"],
    };

    #[test]
    fn values_are_found_by_key_and_column() {
        let rows = GroupRows {
            group: &G,
            rows: vec![
                Row::new(["80", "local"], vec![1.0, 2.0]),
                Row::new(["80", "remote"], vec![3.0, 4.0]),
            ],
        };
        assert_eq!(rows.value("80/remote", "b"), Some(4.0));
        assert_eq!(rows.value("80/local", "a"), Some(1.0));
        assert_eq!(rows.value("81/local", "a"), None);
        assert_eq!(rows.value("80/local", "c"), None);
    }

    #[test]
    fn rates_refuse_counters_that_went_backwards() {
        assert_eq!(rate(10, 30, 2.0), 10.0);
        assert!(rate(30, 10, 2.0).is_nan());
        assert!(rate(1, 2, 0.0).is_nan());
    }
}
