//! Reading whole logs into memory: the stream ([`crate::stream_logs`]) collected and sorted.

use std::path::PathBuf;

use crate::error::Error;
use crate::format::Format;
use crate::line::Entry;
use crate::stream::{stream_logs, BadLine, CutShort, ReadOptions};

/// The entries of a set of logs, and what could not be read.
#[derive(Debug, Clone, Default)]
pub struct Parsed {
    /// Every parsed line, sorted by time; stable, so within a second the order of the files
    /// as given and of the lines in each file is kept.
    pub entries: Vec<Entry>,
    /// Lines that did not parse (blank lines are skipped, not counted), including the
    /// lines over 64 KiB and those with a time not believed.
    pub bad_lines: u64,
    /// Of the bad lines, those longer than 64 KiB: only their start was read.
    pub long_lines: u64,
    /// Of the bad lines, those whose time is before 1990 or more than a day ahead of this
    /// machine's clock ([`crate::implausible_time`]).
    pub bad_times: u64,
    /// Blank lines, skipped.
    pub blank_lines: u64,
    /// Entries from lines cut short in their last quoted field, accepted (see
    /// [`crate::parse_line`]).
    pub repaired_lines: u64,
    /// The first few bad lines, to show.
    pub bad_examples: Vec<BadLine>,
    /// All lines read, good, bad and blank.
    pub lines: u64,
    /// Gzip files whose data stopped being readable: read up to there (see
    /// [`crate::ReadSummary::cut_short`]).
    pub cut_short: Vec<CutShort>,
}

/// Reads and parses `paths` (plain or gzip, told apart by their first bytes) into memory,
/// sorted by time. `format` `None` auto-detects Common/Combined per line. Unparseable lines
/// are counted, never fatal; a gzip file cut short or corrupt is read up to there
/// ([`Parsed::cut_short`]); a file that cannot be opened or read, or logs of which no line
/// parses, are errors. For small logs and tests: a whole log's work streams through
/// [`crate::stream_logs`] instead.
pub fn read_logs(paths: &[PathBuf], format: Option<Format>) -> Result<Parsed, Error> {
    read_logs_with_progress(paths, format, &mut |_| {})
}

/// [`read_logs`], calling `progress` with the number of lines read so far every 100 000
/// lines, for a progress display on big logs.
pub fn read_logs_with_progress(
    paths: &[PathBuf],
    format: Option<Format>,
    progress: &mut dyn FnMut(u64),
) -> Result<Parsed, Error> {
    let mut entries = Vec::new();
    let summary = stream_logs(
        paths,
        &ReadOptions::format(format),
        &mut |e| entries.push(e),
        progress,
    )?;
    // Stable, and nearly free: the stream is sorted but for entries later than its
    // look-back, which a vector in memory can still put in place.
    if summary.out_of_order > 0 {
        entries.sort_by_key(|e| e.time);
    }
    Ok(Parsed {
        entries,
        bad_lines: summary.bad_lines,
        long_lines: summary.long_lines,
        bad_times: summary.bad_times,
        blank_lines: summary.blank_lines,
        repaired_lines: summary.repaired_lines,
        bad_examples: summary.bad_examples,
        lines: summary.lines,
        cut_short: summary.cut_short,
    })
}

#[cfg(test)]
#[path = "read_tests.rs"]
mod tests;
