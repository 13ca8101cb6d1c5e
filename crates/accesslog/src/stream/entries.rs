//! A file's entries in file order, from batches parsed here or by the pool.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::Error;
use crate::line::Entry;

use super::file::{Lines, Parser, Tally};
use super::pipe::Ordered;

/// Where a file's parsed batches come from: parsed here, or by the pool in order.
pub(crate) enum Source {
    Inline(Lines, Parser),
    Piped(Ordered),
}

/// A log file's entries in file order.
pub(crate) struct FileEntries {
    source: Source,
    current: std::vec::IntoIter<Entry>,
    pub tally: Tally,
}

impl FileEntries {
    pub fn new(source: Source) -> FileEntries {
        FileEntries {
            source,
            current: Vec::new().into_iter(),
            tally: Tally::default(),
        }
    }

    /// The entries of the batch at hand not yet taken (its lines are in the tally already).
    pub fn parsed_rest(&mut self) -> std::vec::IntoIter<Entry> {
        std::mem::take(&mut self.current)
    }

    /// The next entry of the file, counting the lines that are not one; `None` at its end,
    /// or before the next batch once `stop` is raised (a file of lines that do not parse
    /// would otherwise be read to its end before the caller could look).
    pub fn next_entry(&mut self, stop: Option<&AtomicBool>) -> Result<Option<Entry>, Error> {
        loop {
            if let Some(entry) = self.current.next() {
                return Ok(Some(entry));
            }
            if stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
                return Ok(None);
            }
            let parsed = match &mut self.source {
                Source::Inline(lines, parser) => lines.next_batch()?.map(|b| parser.parse(&b)),
                Source::Piped(ordered) => ordered.next()?,
            };
            let Some(parsed) = parsed else {
                return Ok(None);
            };
            self.tally.absorb(parsed.tally);
            self.current = parsed.entries.into_iter();
        }
    }
}
