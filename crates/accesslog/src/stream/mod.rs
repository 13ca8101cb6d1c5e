//! Reading logs as a stream: every file in its own order, merged by time, each entry handed
//! to the caller once and then forgotten, so that memory follows what the caller keeps (what
//! is distinct in the log), not the log's length.
//!
//! The order: a CLF log is in time order to within a second or so (each worker writes its own
//! buffer), and rotated files may be given in any order. Each file is read in its own order;
//! its entries wait in a reorder buffer until no file can still hold an earlier one, given
//! that no entry comes more than [`ReadOptions::look_back`] after a later one in its own
//! file. Ties keep the order of the files as given, then of the lines. An entry later than
//! that bound is still delivered, at once and out of order, and counted in
//! [`ReadSummary::out_of_order`]: sorting every entry would hold the whole log. The buffer
//! holds at most [`MAX_BUFFERED`] entries whatever the look-back (a log of a million
//! requests a second), past which the earliest goes out.
//!
//! A gzip file whose data stops being readable (cut short, or corrupt) is read up to there, as
//! `zcat` reads it, and [`ReadSummary::cut_short`] says where; an I/O error of a file is still
//! an error.
//!
//! This is the one reader of logs: `characterize`, `fileset like` and `--replay` all take
//! their entries from [`stream_logs`]; [`crate::read_logs`] is it collected into a vector.

mod bad;
mod endless;
mod entries;
mod file;
mod gz;
mod pipe;

use std::collections::{BTreeMap, VecDeque};
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, SystemTime};

use crate::error::Error;
use crate::format::Format;
use crate::line::Entry;

pub use bad::{BadLine, CutShort};
use entries::{FileEntries, Source};
use file::Tally;
use file::{Lines, Parser, EXAMPLES};

/// Most entries the reorder buffer holds.
pub const MAX_BUFFERED: usize = 1 << 20;
/// Progress is reported every this many lines.
const PROGRESS_EVERY: u64 = 100_000;

/// How to read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReadOptions {
    /// The log format; `None` auto-detects Common/Combined per line.
    pub format: Option<Format>,
    /// How far an entry may come after a later one in its file and still be delivered in
    /// time order. A minute by default: well past the second or so of a busy server's
    /// buffered writes, and at 500 req/s 30 000 entries held.
    pub look_back: Duration,
    /// Threads parsing lines; 0 uses every CPU. The entries and the summary are the same
    /// whatever the number.
    pub threads: usize,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            format: None,
            look_back: Duration::from_secs(60),
            threads: 0,
        }
    }
}

impl ReadOptions {
    /// The default options with `format`.
    pub fn format(format: Option<Format>) -> Self {
        ReadOptions {
            format,
            ..ReadOptions::default()
        }
    }
}

/// What reading found besides the entries.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct ReadSummary {
    /// Entries delivered.
    pub entries: u64,
    /// All lines read, good, bad and blank.
    pub lines: u64,
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
    /// Entries from lines cut short in their last quoted field (a user agent without its
    /// closing quote), accepted as GoAccess accepts them: counted in `entries`, not bad.
    pub repaired_lines: u64,
    /// The first few bad lines, in the order of the files given.
    pub bad_examples: Vec<BadLine>,
    /// Entries that came later than the look-back allows after a later one: delivered out
    /// of time order.
    pub out_of_order: u64,
    /// The look-back used, seconds.
    pub look_back_s: f64,
    /// The caller stopped the reading before the logs' end ([`stream_logs_while`], or
    /// [`stream_logs_until`] from outside): the counts are of what was read up to there.
    pub stopped: bool,
    /// Gzip files whose data stopped being readable (cut short or corrupt): the lines before
    /// were read and delivered, as `zcat` reads them, and nothing after. Say so with
    /// [`ReadSummary::cut_note`].
    pub cut_short: Vec<CutShort>,
}

impl ReadSummary {
    /// One sentence per file cut short, joined, naming the file (from `paths`, the paths read),
    /// the last line read and why; `None` when every file was read to its end.
    pub fn cut_note(&self, paths: &[PathBuf]) -> Option<String> {
        let notes: Vec<String> = self
            .cut_short
            .iter()
            .map(|cut| {
                format!(
                    "{} was read up to line {} only: {}; the lines before were kept, as zcat keeps them",
                    paths.get(cut.file).map_or(String::from("?"), |p| p.display().to_string()),
                    cut.line,
                    cut.why
                )
            })
            .collect();
        (!notes.is_empty()).then(|| notes.join("; "))
    }
}

/// Reads `paths` and hands each entry to `sink` in time order (within the look-back), calling
/// `progress` with the lines read so far every 100 000 lines. Unparseable lines are counted,
/// never fatal; a file that cannot be opened or read, or logs of which no line parses, are
/// errors (after the entries read so far were delivered).
pub fn stream_logs(
    paths: &[PathBuf],
    options: &ReadOptions,
    sink: &mut dyn FnMut(Entry),
    progress: &mut dyn FnMut(u64),
) -> Result<ReadSummary, Error> {
    let mut go_on = |entry| {
        sink(entry);
        ControlFlow::Continue(())
    };
    stream_logs_while(paths, options, &mut go_on, progress)
}

/// [`stream_logs`] for a caller that may not want the whole log (a replay that has sent its
/// run's part): reading stops at the first entry the sink answers `Break` to, and the parser
/// threads with it. The summary then counts what was read up to there
/// ([`ReadSummary::stopped`]); a log of which no line parsed before the stop is still an error.
pub fn stream_logs_while(
    paths: &[PathBuf],
    options: &ReadOptions,
    sink: &mut dyn FnMut(Entry) -> ControlFlow<()>,
    progress: &mut dyn FnMut(u64),
) -> Result<ReadSummary, Error> {
    stream(paths, options, None, sink, progress)
}

/// [`stream_logs`] for a caller stopped from outside (a signal handler raising `stop`):
/// reading stops at the next entry or batch of lines after `stop` is raised, even in a log of
/// lines that do not parse, and the summary counts what was read up to there
/// ([`ReadSummary::stopped`]). Stopped before any entry, that is no error: the summary says
/// how many lines were read.
pub fn stream_logs_until(
    paths: &[PathBuf],
    options: &ReadOptions,
    stop: &AtomicBool,
    sink: &mut dyn FnMut(Entry),
    progress: &mut dyn FnMut(u64),
) -> Result<ReadSummary, Error> {
    let mut go_on = |entry| {
        sink(entry);
        ControlFlow::Continue(())
    };
    stream(paths, options, Some(stop), &mut go_on, progress)
}

fn stream(
    paths: &[PathBuf],
    options: &ReadOptions,
    stop: Option<&AtomicBool>,
    sink: &mut dyn FnMut(Entry) -> ControlFlow<()>,
    progress: &mut dyn FnMut(u64),
) -> Result<ReadSummary, Error> {
    if paths.is_empty() {
        return Err(Error::NoFiles);
    }
    let threads = match options.threads {
        0 => thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    // Every file is opened before any is read, so that a wrong path fails at once.
    let lines = paths
        .iter()
        .map(|p| Lines::open(p, threads))
        .collect::<Result<Vec<_>, _>>()?;
    let now = SystemTime::now();
    let parser = |file| Parser {
        file,
        format: options.format,
        now,
    };
    let (merge, tallies) = if threads <= 1 {
        let files = lines
            .into_iter()
            .enumerate()
            .map(|(i, l)| FileEntries::new(Source::Inline(l, parser(i))))
            .collect();
        merged(files, options.look_back, stop, sink, progress)?
    } else {
        thread::scope(|scope| {
            let jobs = pipe::workers(scope, threads);
            let files = lines
                .into_iter()
                .enumerate()
                .map(|(i, l)| {
                    let ordered = pipe::file(scope, l, parser(i), jobs.clone(), 2 * threads);
                    FileEntries::new(Source::Piped(ordered))
                })
                .collect();
            drop(jobs);
            merged(files, options.look_back, stop, sink, progress)
        })?
    };
    let summary = summarize(tallies.iter(), &merge, options.look_back);
    let stopped_from_outside = stop.is_some_and(|s| s.load(Ordering::Relaxed));
    if summary.entries == 0 && !stopped_from_outside {
        return Err(bad::nothing_parsed(
            paths,
            options.format,
            summary.lines,
            summary.bad_examples.first(),
            summary.cut_short.first(),
        ));
    }
    Ok(summary)
}

/// Runs the merge of `files` to their end, giving the merge's counts and each file's tally.
/// The files (and with them their readers' channels) are dropped before it returns, so that
/// readers stopped early by an error end too.
fn merged(
    mut files: Vec<FileEntries>,
    look_back: Duration,
    stop: Option<&AtomicBool>,
    sink: &mut dyn FnMut(Entry) -> ControlFlow<()>,
    progress: &mut dyn FnMut(u64),
) -> Result<(Merge, Vec<Tally>), Error> {
    let mut merge = Merge::new(files.len(), look_back);
    let mut lines_reported = 0;
    let mut steps = 0u64;
    let mut halted = false;
    while let Some(i) = merge.next_file().filter(|_| !merge.stopped) {
        let next = files[i].next_entry(stop)?;
        if stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
            // Stopped from outside: the entries read and waiting in the reorder buffer are
            // still delivered (below), so that the caller's figures are of every line read.
            // So are the rest of each file's batch at hand, whose lines are counted already.
            halted = true;
            if let Some(entry) = next {
                merge.push(i, entry, sink);
            }
            for (j, file) in files.iter_mut().enumerate() {
                for entry in file.parsed_rest() {
                    merge.push(j, entry, sink);
                }
            }
            break;
        }
        match next {
            Some(entry) => merge.push(i, entry, sink),
            None => merge.finished(i, sink),
        }
        steps += 1;
        if steps % 4096 == 0 {
            let lines: u64 = files.iter().map(|f| f.tally.lines).sum();
            if lines / PROGRESS_EVERY > lines_reported / PROGRESS_EVERY {
                progress(lines);
            }
            lines_reported = lines;
        }
    }
    if !merge.stopped {
        merge.drain(sink);
    }
    merge.stopped |= halted;
    Ok((merge, files.into_iter().map(|f| f.tally).collect()))
}

fn summarize<'a>(
    tallies: impl Iterator<Item = &'a Tally>,
    merge: &Merge,
    look_back: Duration,
) -> ReadSummary {
    let mut s = ReadSummary {
        entries: merge.delivered,
        stopped: merge.stopped,
        out_of_order: merge.out_of_order,
        look_back_s: look_back.as_secs_f64(),
        ..ReadSummary::default()
    };
    for t in tallies {
        s.lines += t.lines;
        s.bad_lines += t.bad_lines;
        s.long_lines += t.long_lines;
        s.bad_times += t.bad_times;
        s.blank_lines += t.blank_lines;
        s.repaired_lines += t.repaired_lines;
        let room = EXAMPLES - s.bad_examples.len().min(EXAMPLES);
        s.bad_examples
            .extend(t.bad_examples.iter().take(room).cloned());
        s.cut_short.extend(t.cut.iter().cloned());
    }
    s
}

/// The merge of the files by time, with its reorder buffer.
struct Merge {
    /// The reorder buffer: entries by time and file, each file's in line order (they are
    /// read in that order). Not a heap of entries: sifting entries of a few hundred bytes
    /// through a heap of a minute of a busy log took a third of the reading time.
    buffer: BTreeMap<(SystemTime, usize), VecDeque<Entry>>,
    buffered: usize,
    /// Per file: the latest time read from it, `None` before its first entry; and whether it
    /// is at its end.
    frontier: Vec<Option<SystemTime>>,
    done: Vec<bool>,
    look_back: Duration,
    last_out: Option<SystemTime>,
    delivered: u64,
    /// The sink wanted no more.
    stopped: bool,
    out_of_order: u64,
}

impl Merge {
    fn new(files: usize, look_back: Duration) -> Merge {
        Merge {
            buffer: BTreeMap::new(),
            buffered: 0,
            frontier: vec![None; files],
            done: vec![false; files],
            look_back,
            last_out: None,
            delivered: 0,
            stopped: false,
            out_of_order: 0,
        }
    }

    /// The file to read next: one not yet started, else the one least far in time, so that
    /// the files advance together and the buffer holds about one look-back of each.
    fn next_file(&self) -> Option<usize> {
        let live = (0..self.frontier.len()).filter(|&i| !self.done[i]);
        live.min_by_key(|&i| (self.frontier[i].is_some(), self.frontier[i]))
    }

    fn push(&mut self, file: usize, entry: Entry, sink: &mut dyn FnMut(Entry) -> ControlFlow<()>) {
        let time = entry.time;
        let frontier = &mut self.frontier[file];
        *frontier = Some(frontier.map_or(time, |f| f.max(time)));
        self.buffer
            .entry((time, file))
            .or_default()
            .push_back(entry);
        self.buffered += 1;
        self.release(sink);
    }

    fn finished(&mut self, file: usize, sink: &mut dyn FnMut(Entry) -> ControlFlow<()>) {
        self.done[file] = true;
        self.release(sink);
    }

    /// Delivers every buffered entry no file can still precede: earlier than the least
    /// frontier of the live files by more than the look-back.
    fn release(&mut self, sink: &mut dyn FnMut(Entry) -> ControlFlow<()>) {
        let live = (0..self.frontier.len()).filter(|&i| !self.done[i]);
        let mut safe: Option<SystemTime> = None;
        for i in live {
            let Some(f) = self.frontier[i] else {
                return; // a file not yet started could begin anywhere
            };
            let bound = f
                .checked_sub(self.look_back)
                .unwrap_or(SystemTime::UNIX_EPOCH);
            safe = Some(safe.map_or(bound, |s| s.min(bound)));
        }
        while let Some(&(time, _)) = self.buffer.keys().next().filter(|_| !self.stopped) {
            let due = safe.is_none_or(|s| time < s) || self.buffered > MAX_BUFFERED;
            if !due {
                break;
            }
            self.pop_first(sink);
        }
    }

    fn drain(&mut self, sink: &mut dyn FnMut(Entry) -> ControlFlow<()>) {
        while !self.buffer.is_empty() && !self.stopped {
            self.pop_first(sink);
        }
    }

    /// Delivers the earliest buffered entry.
    fn pop_first(&mut self, sink: &mut dyn FnMut(Entry) -> ControlFlow<()>) {
        let Some(mut first) = self.buffer.first_entry() else {
            return;
        };
        let entry = first.get_mut().pop_front();
        if first.get().is_empty() {
            first.remove();
        }
        if let Some(entry) = entry {
            self.buffered -= 1;
            self.deliver(entry, sink);
        }
    }

    fn deliver(&mut self, entry: Entry, sink: &mut dyn FnMut(Entry) -> ControlFlow<()>) {
        match self.last_out {
            Some(last) if entry.time < last => self.out_of_order += 1,
            _ => self.last_out = Some(entry.time),
        }
        self.delivered += 1;
        if sink(entry).is_break() {
            self.stopped = true;
        }
    }
}

#[cfg(test)]
mod tests;
