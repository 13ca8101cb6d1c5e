//! The time series on disk: one CSV file per group, a header row, then one row per row of
//! each sample, led by the time since start and the Unix time.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::table::{GroupRows, Sample};
use crate::Error;

/// The open CSV files of a run, created as their groups first produce rows.
pub(crate) struct CsvFiles {
    dir: PathBuf,
    files: HashMap<&'static str, BufWriter<File>>,
    last_flush: Instant,
}

/// A cell: quoted when it holds a comma, a quote or a line break (a thread's name may).
pub(crate) fn cell(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// A value with at most three decimals and no trailing zeros; empty when missing.
pub(crate) fn number(v: f64) -> String {
    if !v.is_finite() {
        return String::new();
    }
    let text = format!("{v:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" {
        "0".to_string()
    } else {
        text.to_string()
    }
}

impl CsvFiles {
    pub fn new(dir: &Path) -> CsvFiles {
        CsvFiles {
            dir: dir.to_path_buf(),
            files: HashMap::new(),
            last_flush: Instant::now(),
        }
    }

    fn error(&self, name: &str, source: std::io::Error) -> Error {
        Error::Out {
            path: self.dir.join(format!("{name}.csv")),
            source,
        }
    }

    fn file(&mut self, g: &GroupRows) -> Result<&mut BufWriter<File>, Error> {
        let name = g.group.name;
        if !self.files.contains_key(name) {
            let path = self.dir.join(format!("{name}.csv"));
            let file =
                webscope_sys::create_file(&path).map_err(|source| Error::Out { path, source })?;
            let mut file = BufWriter::new(file);
            let mut header = vec!["time_s", "unix_time"];
            header.extend(g.group.keys);
            header.extend(g.group.columns);
            writeln!(file, "{}", header.join(",")).map_err(|e| self.error(name, e))?;
            self.files.insert(name, file);
        }
        Ok(self.files.get_mut(name).expect("inserted above"))
    }

    pub fn write(&mut self, sample: &Sample) -> Result<(), Error> {
        for g in &sample.groups {
            if g.rows.is_empty() {
                continue;
            }
            let name = g.group.name;
            let mut lines = String::new();
            for row in &g.rows {
                let mut cells = vec![number(sample.t), format!("{:.3}", sample.unix_time)];
                cells.extend(row.key.iter().map(|k| cell(k)));
                cells.extend(row.values.iter().map(|v| number(*v)));
                lines.push_str(&cells.join(","));
                lines.push('\n');
            }
            let file = self.file(g)?;
            let written = file.write_all(lines.as_bytes());
            written.map_err(|e| self.error(name, e))?;
        }
        // Flushed about once a second: a crash loses at most that much.
        if self.last_flush.elapsed() >= Duration::from_secs(1) {
            self.flush()?;
        }
        Ok(())
    }

    pub fn flush(&mut self) -> Result<(), Error> {
        self.last_flush = Instant::now();
        let mut failed = None;
        for (name, file) in &mut self.files {
            if let Err(e) = file.flush() {
                failed = Some((*name, e));
            }
        }
        match failed {
            Some((name, e)) => Err(self.error(name, e)),
            None => Ok(()),
        }
    }

    /// The files written so far.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.files.keys().map(|n| format!("{n}.csv")).collect();
        names.sort();
        names
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::{Group, Row};

    static G: Group = Group {
        name: "threads",
        about: "test",
        keys: &["pid", "comm"],
        columns: &["a_pct", "b"],
    };

    #[test]
    fn numbers_and_cells_are_written_plainly() {
        assert_eq!(number(1.0), "1");
        assert_eq!(number(2.5), "2.5");
        assert_eq!(number(1.0 / 3.0), "0.333");
        assert_eq!(number(-0.0001), "0");
        assert_eq!(number(f64::NAN), "");
        assert_eq!(cell("plain"), "plain");
        assert_eq!(cell("a,b"), "\"a,b\"");
        assert_eq!(cell("say \"hi\""), "\"say \"\"hi\"\"\"");
    }

    #[test]
    fn each_group_gets_a_file_with_a_header() {
        let dir = tempfile::tempdir().unwrap();
        let mut files = CsvFiles::new(dir.path());
        let sample = |t: f64| Sample {
            t,
            unix_time: 1_700_000_000.0 + t,
            dt: 0.1,
            groups: vec![GroupRows {
                group: &G,
                rows: vec![Row::new(["42", "web,1"], vec![12.5, f64::NAN])],
            }],
        };
        files.write(&sample(0.1)).unwrap();
        files.write(&sample(0.2)).unwrap();
        files.flush().unwrap();
        let text = std::fs::read_to_string(dir.path().join("threads.csv")).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "time_s,unix_time,pid,comm,a_pct,b");
        assert_eq!(lines[1], "0.1,1700000000.100,42,\"web,1\",12.5,");
        assert_eq!(lines.len(), 3);
        assert_eq!(files.names(), ["threads.csv"]);
    }
}
