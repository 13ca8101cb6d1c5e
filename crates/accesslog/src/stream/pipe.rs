//! Parsing on every CPU: each file's reader thread cuts it into batches of lines (a gzip of
//! many members is inflated by threads of its own, `gz.rs`), a pool parses the batches, and
//! each file's batches come back in their order, so that the entries, the tallies and the
//! examples kept are the same as one thread's.
//!
//! Written here rather than with a data-parallel crate because the order must hold across a
//! stream of unknown length with a bound on the batches in flight: each batch gets a
//! one-message reply channel, and the reader queues the replies in file order in a bounded
//! channel, which is also what stops it reading ahead.

use std::thread::Scope;

use crossbeam_channel::{bounded, Receiver, Sender};

use super::file::{Batch, Lines, ParsedBatch, Parser};
use crate::error::Error;

type Reply = Result<ParsedBatch, Error>;

/// A batch to parse, and where its result goes.
pub(crate) struct Job {
    batch: Batch,
    parser: Parser,
    reply: Sender<Reply>,
}

/// A file's parsed batches, in order.
pub(crate) struct Ordered {
    replies: Receiver<Receiver<Reply>>,
}

impl Ordered {
    /// The next batch parsed, `None` after the last.
    pub fn next(&mut self) -> Result<Option<ParsedBatch>, Error> {
        let Ok(reply) = self.replies.recv() else {
            return Ok(None);
        };
        match reply.recv() {
            Ok(parsed) => parsed.map(Some),
            // The worker died (a panic, which the scope reports): nothing more comes.
            Err(_) => Ok(None),
        }
    }
}

/// Starts `threads` parsing workers on `scope`; they end when every sender of the returned
/// channel is gone.
pub(crate) fn workers<'scope>(scope: &'scope Scope<'scope, '_>, threads: usize) -> Sender<Job> {
    let (jobs, queue) = crossbeam_channel::unbounded::<Job>();
    for _ in 0..threads {
        let queue = queue.clone();
        scope.spawn(move || {
            for job in queue {
                // The reader may be gone (the stream stopped early): nothing to do then.
                let _ = job.reply.send(Ok(job.parser.parse(&job.batch)));
            }
        });
    }
    jobs
}

/// Starts the reader of one file, with at most `depth` batches in flight.
pub(crate) fn file<'scope>(
    scope: &'scope Scope<'scope, '_>,
    mut lines: Lines,
    parser: Parser,
    jobs: Sender<Job>,
    depth: usize,
) -> Ordered {
    let (order, replies) = bounded::<Receiver<Reply>>(depth);
    scope.spawn(move || loop {
        let (reply, result) = bounded::<Reply>(1);
        let batch = lines.next_batch();
        // Stop when the stream no longer wants this file.
        if order.send(result).is_err() {
            return;
        }
        match batch {
            Ok(Some(batch)) => {
                if let Err(refused) = jobs.send(Job {
                    batch,
                    parser,
                    reply,
                }) {
                    // No worker left: parse here rather than lose the batch.
                    let job = refused.into_inner();
                    let _ = job.reply.send(Ok(job.parser.parse(&job.batch)));
                }
            }
            Ok(None) => return, // dropping `reply` and `order` ends the file
            Err(e) => {
                let _ = reply.send(Err(e));
                return;
            }
        }
    });
    Ordered { replies }
}
