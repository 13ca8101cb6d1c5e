//! One log file read line by line into entries, in the file's own order, with what could
//! not be read counted in a [`Tally`].

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use webscope_sys::{Line, LineReader, MAX_LINE};

use crate::error::Error;
use crate::format::Format;
use crate::line::{parse_line_repairing, Entry};
use crate::plausible::implausible_time;
use crate::read::BadLine;

/// How many bad lines are kept as examples (per file; the first of all files are shown).
pub(crate) const EXAMPLES: usize = 5;
/// A bad line's text is cut to this many characters in the examples.
pub(crate) const EXAMPLE_CHARS: usize = 200;
/// Why a line over [`MAX_LINE`] is bad: no log format writes one, and keeping it would let
/// a file without newlines take memory in proportion to its size.
const TOO_LONG: &str = "longer than 64 KiB: not a log line (only its start was kept)";

/// What reading a file found besides its entries.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tally {
    pub lines: u64,
    pub bad_lines: u64,
    pub long_lines: u64,
    pub bad_times: u64,
    pub blank_lines: u64,
    pub repaired_lines: u64,
    pub bad_examples: Vec<BadLine>,
}

/// A log file's entries in file order.
pub(crate) struct FileEntries {
    path: PathBuf,
    index: usize,
    format: Option<Format>,
    reader: LineReader<Box<dyn BufRead + Send>>,
    now: SystemTime,
    pub tally: Tally,
}

impl FileEntries {
    /// Opens the file (through gzip when it starts with gzip's magic bytes).
    pub fn open(path: &Path, index: usize, format: Option<Format>) -> Result<Self, Error> {
        Ok(FileEntries {
            path: path.to_path_buf(),
            index,
            format,
            reader: LineReader::new(open(path)?, MAX_LINE),
            now: SystemTime::now(),
            tally: Tally::default(),
        })
    }

    /// The next entry of the file, counting the lines that are not one; `None` at its end.
    pub fn next_entry(&mut self) -> Result<Option<Entry>, Error> {
        loop {
            let line_no = self.reader.line_number();
            let line = self.reader.next_line().map_err(|source| Error::Read {
                path: self.path.clone(),
                line: line_no,
                source,
            })?;
            let Some(line) = line else {
                return Ok(None);
            };
            let line_no = line_no + 1;
            let tally = &mut self.tally;
            tally.lines += 1;
            let (bytes, why) = match line {
                Line::Text(bytes) => (bytes, None),
                Line::TooLong { start, .. } => {
                    tally.long_lines += 1;
                    (start, Some(TOO_LONG))
                }
            };
            let text = String::from_utf8_lossy(bytes);
            let text = text.trim_end_matches('\r');
            if why.is_none() && text.trim().is_empty() {
                tally.blank_lines += 1;
                continue;
            }
            let result = why.map_or_else(|| parse_line_repairing(text, self.format), Err);
            let why = match result {
                Ok((entry, repaired)) => match implausible_time(entry.time, self.now) {
                    None => {
                        tally.repaired_lines += u64::from(repaired);
                        return Ok(Some(Entry {
                            file: self.index,
                            line: line_no,
                            ..entry
                        }));
                    }
                    Some(why) => {
                        tally.bad_times += 1;
                        why
                    }
                },
                Err(why) => why,
            };
            tally.bad_lines += 1;
            if tally.bad_examples.len() < EXAMPLES {
                tally.bad_examples.push(BadLine {
                    file: self.index,
                    line: line_no,
                    text: text.chars().take(EXAMPLE_CHARS).collect(),
                    why,
                });
            }
        }
    }
}

/// Opens a log, through a gzip decoder when it starts with gzip's magic bytes (rotated logs
/// are `.gz`, and some are concatenations of gzip members: all members are read).
fn open(path: &Path) -> Result<Box<dyn BufRead + Send>, Error> {
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
        let decoder: Box<dyn Read + Send> = Box::new(flate2::bufread::MultiGzDecoder::new(reader));
        Box::new(BufReader::with_capacity(256 * 1024, decoder))
    } else {
        Box::new(reader)
    })
}
