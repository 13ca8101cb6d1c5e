//! Why logs could not be read. Each message is one line saying what is wrong and what to do.

use std::io;
use std::path::PathBuf;

/// Why [`crate::read_logs`] gave up. A line that does not parse is not an error (it is
/// counted in [`crate::Parsed::bad_lines`]); these are.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No log was given.
    #[error("no access log given (name one or more files, plain or .gz)")]
    NoFiles,
    /// A log cannot be opened.
    #[error("cannot open access log {}: {source} (check the path)", .path.display())]
    Open {
        /// The file named.
        path: PathBuf,
        /// What the OS said.
        source: io::Error,
    },
    /// A log cannot be read to its end (an I/O error), or a gzip file was cut short or is
    /// corrupt before its first line.
    #[error("cannot read access log {} after line {line}: {source}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The last line read whole.
        line: u64,
        /// What went wrong.
        source: io::Error,
    },
    /// The logs hold no line but blank ones (or none at all).
    #[error("{files}: no log line in {lines} lines, all blank or none (is it the access log?)")]
    NoLogLine {
        /// The files read, comma-separated.
        files: String,
        /// How many lines they had, all blank.
        lines: u64,
    },
    /// Not one line of the logs parses: the format is not the one tried.
    #[error("no line of {files} ({lines} lines) parses as {format}; line {example_line} of {example_file}: {why}")]
    NothingParsed {
        /// The files read, comma-separated.
        files: String,
        /// How many lines they had.
        lines: u64,
        /// The format tried, described.
        format: String,
        /// The file of the first bad line.
        example_file: String,
        /// Its line number.
        example_line: u64,
        /// Why it did not parse.
        why: &'static str,
    },
}
