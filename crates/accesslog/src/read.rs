//! Reading whole logs: files plain or gzip, in any order, into entries sorted by time.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use webscope_sys::{Line, LineReader, MAX_LINE};

use crate::error::Error;
use crate::format::Format;
use crate::line::{parse_line, Entry};
use crate::plausible::implausible_time;

/// How many bad lines are kept as examples.
const EXAMPLES: usize = 5;
/// A bad line's text is cut to this many characters in the examples.
const EXAMPLE_CHARS: usize = 200;
/// Progress is reported every this many lines.
const PROGRESS_EVERY: u64 = 100_000;
/// Why a line over [`MAX_LINE`] is bad: no log format writes one, and keeping it would let
/// a file without newlines take memory in proportion to its size.
const TOO_LONG: &str = "longer than 64 KiB: not a log line (only its start was kept)";

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
    /// The first few bad lines, to show.
    pub bad_examples: Vec<BadLine>,
    /// All lines read, good, bad and blank.
    pub lines: u64,
}

/// A line that did not parse.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BadLine {
    /// Index of the file, into the paths given.
    pub file: usize,
    /// Line number, from 1.
    pub line: u64,
    /// The line (cut to 200 characters).
    pub text: String,
    /// Why it did not parse.
    pub why: &'static str,
}

/// Reads and parses `paths` (plain or gzip, told apart by their first bytes). `format`
/// `None` auto-detects Common/Combined per line. Unparseable lines are counted, never fatal;
/// a file that cannot be opened or read, or logs of which no line parses, are errors.
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
    if paths.is_empty() {
        return Err(Error::NoFiles);
    }
    let mut parsed = Parsed::default();
    for (index, path) in paths.iter().enumerate() {
        read_one(path, index, format, &mut parsed, progress)?;
    }
    if parsed.entries.is_empty() {
        return Err(nothing_parsed(paths, format, &parsed));
    }
    // Stable: lines logged in the same second keep their file and line order.
    parsed.entries.sort_by_key(|e| e.time);
    Ok(parsed)
}

fn read_one(
    path: &Path,
    file: usize,
    format: Option<Format>,
    parsed: &mut Parsed,
    progress: &mut dyn FnMut(u64),
) -> Result<(), Error> {
    let mut reader = LineReader::new(open(path)?, MAX_LINE);
    let now = SystemTime::now();
    loop {
        let line_no = reader.line_number();
        let line = reader.next_line().map_err(|source| Error::Read {
            path: path.to_path_buf(),
            line: line_no,
            source,
        })?;
        let Some(line) = line else {
            return Ok(());
        };
        let line_no = line_no + 1;
        parsed.lines += 1;
        if parsed.lines % PROGRESS_EVERY == 0 {
            progress(parsed.lines);
        }
        let (bytes, why) = match line {
            Line::Text(bytes) => (bytes, None),
            Line::TooLong { start, .. } => {
                parsed.long_lines += 1;
                (start, Some(TOO_LONG))
            }
        };
        let text = String::from_utf8_lossy(bytes);
        let text = text.trim_end_matches('\r');
        if why.is_none() && text.trim().is_empty() {
            parsed.blank_lines += 1;
            continue;
        }
        let result = why.map_or_else(|| parse_line(text, format), Err);
        let why = match result {
            Ok(entry) => match implausible_time(entry.time, now) {
                None => {
                    parsed.entries.push(Entry {
                        file,
                        line: line_no,
                        ..entry
                    });
                    continue;
                }
                Some(why) => {
                    parsed.bad_times += 1;
                    why
                }
            },
            Err(why) => why,
        };
        parsed.bad_lines += 1;
        if parsed.bad_examples.len() < EXAMPLES {
            parsed.bad_examples.push(BadLine {
                file,
                line: line_no,
                text: text.chars().take(EXAMPLE_CHARS).collect(),
                why,
            });
        }
    }
}

/// Opens a log, through a gzip decoder when it starts with gzip's magic bytes (rotated logs
/// are `.gz`, and some are concatenations of gzip members: all members are read).
fn open(path: &Path) -> Result<Box<dyn BufRead>, Error> {
    let open_err = |source| Error::Open {
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(open_err)?;
    let mut reader = BufReader::with_capacity(256 * 1024, file);
    let gzip = reader
        .fill_buf()
        .map_err(|source| Error::Read {
            path: path.to_path_buf(),
            line: 0,
            source,
        })?
        .starts_with(&[0x1f, 0x8b]);
    Ok(if gzip {
        let decoder: Box<dyn Read> = Box::new(flate2::bufread::MultiGzDecoder::new(reader));
        Box::new(BufReader::with_capacity(256 * 1024, decoder))
    } else {
        Box::new(reader)
    })
}

fn nothing_parsed(paths: &[PathBuf], format: Option<Format>, parsed: &Parsed) -> Error {
    let files = paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let Some(bad) = parsed.bad_examples.first() else {
        return Error::NoLogLine {
            files,
            lines: parsed.lines,
        };
    };
    let (example_file, example_line, why) =
        (paths[bad.file].display().to_string(), bad.line, bad.why);
    Error::NothingParsed {
        files,
        lines: parsed.lines,
        format: Format::describe(format),
        example_file,
        example_line,
        why,
    }
}

#[cfg(test)]
#[path = "read_tests.rs"]
mod tests;
