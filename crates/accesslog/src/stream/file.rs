//! One log file cut into batches of lines, and a batch parsed into entries, with what could
//! not be read counted in a [`Tally`]. Cutting a file into lines is one thread's work;
//! gunzipping a file of many members (`gz.rs`) and parsing its batches (`pipe.rs`) can be
//! many threads'.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use webscope_sys::{Line, LineReader, MAX_LINE};

use super::bad::{BadLine, CutShort};
use super::endless::LineEnds;
use super::gz;
use crate::error::Error;
use crate::format::Format;
use crate::line::{parse_line_repairing, Entry};
use crate::plausible::implausible_time;

/// How many bad lines are kept as examples (per file; the first of all files are shown).
pub(crate) const EXAMPLES: usize = 5;
/// A bad line's text is cut to this many characters in the examples.
pub(crate) const EXAMPLE_CHARS: usize = 200;
/// Why a line over [`MAX_LINE`] is bad: no log format writes one, and keeping it would let
/// a file without newlines take memory in proportion to its size.
const TOO_LONG: &str = "longer than 64 KiB: not a log line (only its start was kept)";
/// A batch ends after this many lines or bytes: big enough that handing it to a thread costs
/// little beside parsing it (about 1 ms of work), small enough that a few per file in flight
/// hold little memory.
const BATCH_LINES: usize = 2048;
const BATCH_BYTES: usize = 512 * 1024;

/// What reading found besides the entries.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tally {
    pub lines: u64,
    pub bad_lines: u64,
    pub long_lines: u64,
    pub bad_times: u64,
    pub blank_lines: u64,
    pub repaired_lines: u64,
    pub bad_examples: Vec<BadLine>,
    /// The file's gzip data stopped being readable after the lines counted.
    pub cut: Option<CutShort>,
}

impl Tally {
    /// Adds the tally of the batch that follows.
    pub fn absorb(&mut self, next: Tally) {
        self.lines += next.lines;
        self.bad_lines += next.bad_lines;
        self.long_lines += next.long_lines;
        self.bad_times += next.bad_times;
        self.blank_lines += next.blank_lines;
        self.repaired_lines += next.repaired_lines;
        let room = EXAMPLES.saturating_sub(self.bad_examples.len());
        self.bad_examples
            .extend(next.bad_examples.into_iter().take(room));
        self.cut = self.cut.take().or(next.cut);
    }
}

/// Consecutive lines of a file: their bytes one after another, and where each lies.
pub(crate) struct Batch {
    /// The number of the line before the first.
    after_line: u64,
    text: Vec<u8>,
    /// Each line's start and end in `text`, and whether it was cut at [`MAX_LINE`].
    lines: Vec<(usize, usize, bool)>,
    /// The file's gzip data stopped being readable after these lines: the last line read
    /// whole, and why.
    cut: Option<(u64, String)>,
}

/// A file's lines, batch by batch.
pub(crate) struct Lines {
    path: PathBuf,
    reader: LineReader<LineEnds<Box<dyn BufRead + Send>>>,
    /// Its gzip data stopped being readable: nothing more is read.
    cut: bool,
}

impl Lines {
    /// Opens the file (through gzip when it starts with gzip's magic bytes, its members
    /// inflated on up to `threads` threads).
    pub fn open(path: &Path, threads: usize) -> Result<Lines, Error> {
        Ok(Lines {
            path: path.to_path_buf(),
            reader: LineReader::new(LineEnds::new(open(path, threads)?), MAX_LINE),
            cut: false,
        })
    }

    /// The next batch of lines, `None` at the end of the file. A gzip file whose data stops
    /// being readable ends there: its last batch holds the lines before, and says where.
    pub fn next_batch(&mut self) -> Result<Option<Batch>, Error> {
        if self.cut {
            return Ok(None);
        }
        let mut batch = Batch {
            after_line: self.reader.line_number(),
            text: Vec::with_capacity(BATCH_BYTES + MAX_LINE),
            lines: Vec::with_capacity(BATCH_LINES),
            cut: None,
        };
        while batch.lines.len() < BATCH_LINES && batch.text.len() < BATCH_BYTES {
            let line_no = self.reader.line_number();
            let line = match self.reader.next_line() {
                Ok(line) => line,
                Err(source) => match gz::stop_of(&source) {
                    Some(stop) => {
                        batch.cut = Some((line_no, stop.0.clone()));
                        self.cut = true;
                        break;
                    }
                    None => {
                        return Err(Error::Read {
                            path: self.path.clone(),
                            line: line_no,
                            source,
                        })
                    }
                },
            };
            let (bytes, too_long) = match line {
                None => break,
                Some(Line::Text(bytes)) => (bytes, false),
                Some(Line::TooLong { start, .. }) => (start, true),
            };
            let start = batch.text.len();
            batch.text.extend_from_slice(bytes);
            batch.lines.push((start, batch.text.len(), too_long));
        }
        Ok((!batch.lines.is_empty() || batch.cut.is_some()).then_some(batch))
    }
}

/// How a file's lines become entries: the same for every batch of it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Parser {
    /// The file's index, into the paths given.
    pub file: usize,
    pub format: Option<Format>,
    /// The clock a line's time is checked against, read once for the whole stream.
    pub now: SystemTime,
}

/// A batch's entries and tally.
pub(crate) struct ParsedBatch {
    pub entries: Vec<Entry>,
    pub tally: Tally,
}

impl Parser {
    pub fn parse(&self, batch: &Batch) -> ParsedBatch {
        let mut out = ParsedBatch {
            entries: Vec::with_capacity(batch.lines.len()),
            tally: Tally::default(),
        };
        out.tally.cut = batch.cut.as_ref().map(|(line, why)| CutShort {
            file: self.file,
            line: *line,
            why: why.clone(),
        });
        for (i, &(start, end, too_long)) in batch.lines.iter().enumerate() {
            let line_no = batch.after_line + i as u64 + 1;
            if let Some(entry) =
                self.line(&batch.text[start..end], too_long, line_no, &mut out.tally)
            {
                out.entries.push(entry);
            }
        }
        out
    }

    fn line(&self, bytes: &[u8], too_long: bool, line_no: u64, tally: &mut Tally) -> Option<Entry> {
        tally.lines += 1;
        let why = if too_long {
            tally.long_lines += 1;
            Some(TOO_LONG)
        } else {
            None
        };
        // Valid UTF-8 (nearly every line) is checked by the fast validator and borrowed; only
        // a line with invalid bytes pays for the lossy copy.
        let text = match std::str::from_utf8(bytes) {
            Ok(text) => std::borrow::Cow::Borrowed(text),
            Err(_) => String::from_utf8_lossy(bytes),
        };
        let text = text.trim_end_matches('\r');
        if why.is_none() && text.trim().is_empty() {
            tally.blank_lines += 1;
            return None;
        }
        let why = match why.map_or_else(|| parse_line_repairing(text, self.format), Err) {
            Ok((entry, repaired)) => match implausible_time(entry.time, self.now) {
                None => {
                    tally.repaired_lines += u64::from(repaired);
                    return Some(Entry {
                        file: self.file,
                        line: line_no,
                        ..entry
                    });
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
                file: self.file,
                line: line_no,
                text: text.chars().take(EXAMPLE_CHARS).collect(),
                why,
            });
        }
        None
    }
}

/// Opens a log, through a gzip decoder when it starts with gzip's magic bytes (rotated logs
/// are `.gz`, and some are concatenations of gzip members: all members are read, on up to
/// `threads` threads, `gz.rs`).
fn open(path: &Path, threads: usize) -> Result<Box<dyn BufRead + Send>, Error> {
    let open_err = |source| Error::Open {
        path: path.to_path_buf(),
        source,
    };
    let read_err = |source| Error::Read {
        path: path.to_path_buf(),
        line: 0,
        source,
    };
    let file = File::open(path).map_err(open_err)?;
    let mut reader = BufReader::with_capacity(256 * 1024, file);
    let gzip = reader
        .fill_buf()
        .map_err(read_err)?
        .starts_with(&[0x1f, 0x8b]);
    if gzip {
        gz::decoder(reader, gz::Config::threads(threads)).map_err(read_err)
    } else {
        Ok(Box::new(reader))
    }
}
