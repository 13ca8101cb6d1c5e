//! A gzip file of many members inflated on several threads, its bytes handed out in order
//! as a [`BufRead`], byte for byte what `flate2`'s `MultiGzDecoder` gives for a sound file,
//! and byte for byte what the sequential reader gives for a damaged one: both read members
//! with one member reader (`member.rs`), keep what was inflated before the damage (as `zcat`
//! does) and stop with the same [`GzStop`](member::GzStop) error.
//!
//! For: rotated logs made of many members (`cat a.gz b.gz`, the `gzip` of split pieces
//! concatenated, BGZF from `bgzip`), so that inflating is not one thread's work per file.
//! Not for: a file of one member, which is inflated by one thread, as before (deflate data
//! cannot be cut without a block-level decoder, as rapidgzip does: the threads ahead find no
//! member start in their chunks and end); nor a pipe, which cannot be read at offsets and
//! goes through the same member reader on one thread ([`Sequential`]).
//!
//! How: the compressed file is cut into chunks ([`Config::chunk`]). A thread per chunk looks
//! for the first plausible member header in it (`header.rs`; a BGZF member's `BC` field says
//! where the next must be, which is checked too), tries it by inflating a block, and then
//! inflates members one after another until one ends at or past its chunk's end
//! (`task.rs`). The guess is verified by the reader: the thread before must have ended
//! exactly where the next one started. If not (a false header inside deflate data, or a
//! member longer than a chunk), the next thread's output is dropped and a thread started at
//! the true end goes on. So the output is the sequential one whatever the guesses.
//!
//! Memory is bounded whatever the file: each thread reads its input 64 KiB at a time by
//! positioned reads, its output goes in blocks ([`Config::block`]) through a channel of
//! [`BLOCKS_QUEUED`] (recycled: fresh blocks cost more in page faults than the inflating),
//! and [`Config::threads`] threads run ahead of the one being read: at most
//! (threads + 1) x 33 blocks of 256 KiB, 25 MiB with 2 threads. A member of 1 GB is never
//! held whole.
//!
//! Written here because no crate did this within the workspace's bounds (2026-11): `gzp`
//! inflates BGZF and its own "mgzip" in parallel, not any concatenation, and pulls C
//! libraries by default; `rapidgzip-core` does all of it (and single members) but needs
//! Rust 1.88 against the workspace's 1.85, and is 20 000 lines with its own adaptive pool,
//! young (0.3) and not yet proven beside ours.

mod header;
mod member;
mod task;

pub(crate) use member::stop_of;

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::os::unix::fs::FileExt;
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::{bounded, Receiver, Sender, TryRecvError};

use task::{Begin, Msg};

/// Blocks a thread may have inflated ahead of the reader: 8 MiB, about a chunk's output
/// for a log (gzip -6 makes 1 MiB of logs from ~8 MiB), so that a thread ahead can inflate
/// its whole chunk while the reader is still on an earlier one. With 4 the threads ahead
/// stalled after 1 MiB and inflating stayed sequential.
const BLOCKS_QUEUED: usize = 32;

/// How the work is cut.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Config {
    /// Threads inflating ahead of the one being read (which has mostly finished: a reader
    /// that parses is slower than inflating, 0.35 s for 320 MB here).
    pub threads: usize,
    /// Compressed bytes per chunk: each thread's share, give or take a member.
    pub chunk: u64,
    /// Inflated bytes per block handed over.
    pub block: usize,
}

impl Config {
    /// For `threads` threads: chunks of 1 MiB, blocks of 256 KiB.
    pub fn threads(threads: usize) -> Config {
        Config {
            threads,
            chunk: 1 << 20,
            block: 256 << 10,
        }
    }
}

/// A gzip file's reader: members inflated on `config.threads` threads (and the one read)
/// when the file is a regular file of more than one chunk and there is more than one
/// thread; otherwise on this one ([`Sequential`]).
pub(crate) fn decoder(
    reader: BufReader<File>,
    config: Config,
) -> io::Result<Box<dyn BufRead + Send>> {
    let meta = reader.get_ref().metadata()?;
    if config.threads <= 1 || !meta.is_file() || meta.len() <= config.chunk {
        return Ok(Box::new(Sequential::new(reader, config.block)));
    }
    let src = Arc::new(Source {
        len: meta.len(),
        file: reader.into_inner(),
    });
    Ok(Box::new(Parallel::new(src, config)))
}

/// The members of a file (or a pipe) read one after another on the calling thread, with the
/// member reader the parallel one's threads use.
pub(crate) struct Sequential<R> {
    members: member::Members<R>,
    block: Vec<u8>,
    size: usize,
    pos: usize,
    /// The last member ended: what is in `block` is the rest.
    ended: bool,
    /// The error that came after `block`'s bytes, returned once they are read (and again
    /// after).
    failed: Option<Failure>,
}

impl<R: Read> Sequential<R> {
    /// Reads `input` from its start, `block` inflated bytes at a time.
    pub(crate) fn new(input: R, block: usize) -> Sequential<R> {
        Sequential {
            members: member::Members::new(input, 0, u64::MAX),
            block: Vec::with_capacity(block),
            size: block,
            pos: 0,
            ended: false,
            failed: None,
        }
    }
}

impl<R: Read> Read for Sequential<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = {
            let available = self.fill_buf()?;
            let n = available.len().min(buf.len());
            buf[..n].copy_from_slice(&available[..n]);
            n
        };
        self.consume(n);
        Ok(n)
    }
}

impl<R: Read> BufRead for Sequential<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        while self.pos == self.block.len() {
            if let Some(failure) = &self.failed {
                return Err(failure.again());
            }
            if self.ended {
                return Ok(&[]);
            }
            self.block.clear();
            self.pos = 0;
            match self.members.fill(&mut self.block, self.size) {
                Ok(end) => self.ended = end.is_some(),
                Err(e) => self.failed = Some(Failure::of(&e)),
            }
        }
        Ok(&self.block[self.pos..])
    }

    fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.block.len());
    }
}

/// An error kept to be returned again (an `io::Error` is not `Clone`): a damaged member's
/// stays a [`member::GzStop`].
struct Failure {
    kind: io::ErrorKind,
    what: String,
    stop: bool,
}

impl Failure {
    fn of(e: &io::Error) -> Failure {
        Failure {
            kind: e.kind(),
            what: e.to_string(),
            stop: member::stop_of(e).is_some(),
        }
    }

    fn again(&self) -> io::Error {
        match self.stop {
            true => io::Error::new(self.kind, member::GzStop(self.what.clone())),
            false => io::Error::new(self.kind, self.what.clone()),
        }
    }
}

/// The compressed file, read at offsets by every thread.
pub(super) struct Source {
    file: File,
    len: u64,
}

impl Source {
    /// Reads at `at` into `buf`, as much as is there (less only at the file's end).
    fn read_at_most(&self, at: u64, buf: &mut [u8]) -> io::Result<usize> {
        let mut done = 0;
        while done < buf.len() {
            match self.file.read_at(&mut buf[done..], at + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(done)
    }
}

/// A thread's channel (the thread itself is in [`Parallel::threads`]).
struct Task {
    chunk: u64,
    out: Receiver<Msg>,
    /// Its `Start`, once received.
    start: Option<Option<u64>>,
}

impl Task {
    /// Where it starts, waiting for it when `wait`; `None` while not known.
    fn start(&mut self, wait: bool) -> Option<Option<u64>> {
        if self.start.is_none() {
            let msg = if wait {
                self.out.recv().map_err(|_| TryRecvError::Disconnected)
            } else {
                self.out.try_recv()
            };
            self.start = match msg {
                Ok(Msg::Start(at)) => Some(at),
                Ok(_) => Some(None), // cannot be: `Start` comes first
                // A thread that died unheard of starts nowhere.
                Err(TryRecvError::Disconnected) => Some(None),
                Err(TryRecvError::Empty) => None,
            };
        }
        self.start
    }
}

/// The reader: the thread whose output is being handed out, and those running ahead.
struct Parallel {
    src: Arc<Source>,
    config: Config,
    chunks: u64,
    head: Task,
    ahead: VecDeque<Task>,
    /// The next chunk to give a thread.
    next_chunk: u64,
    block: Vec<u8>,
    pos: usize,
    /// Blocks read, back to the threads to be filled again: a new block each time cost
    /// more in page faults (0.5 s of system time in 0.9 s for 320 MB) than inflating it.
    spare: Sender<Vec<u8>>,
    spares: Receiver<Vec<u8>>,
    /// Every thread not yet seen to end, joined when the reader goes.
    threads: Vec<JoinHandle<()>>,
    state: State,
}

enum State {
    Reading,
    Done,
    /// An error was returned; it is returned again to any later read.
    Failed(Failure),
}

impl Parallel {
    fn new(src: Arc<Source>, config: Config) -> Parallel {
        let chunks = src.len.div_ceil(config.chunk);
        let (spare, spares) = bounded(config.threads * (BLOCKS_QUEUED + 1) + 1);
        let mut reader = Parallel {
            src,
            config,
            chunks,
            head: Task {
                chunk: 0,
                out: crossbeam_channel::never(),
                start: None,
            },
            ahead: VecDeque::new(),
            next_chunk: 1,
            block: Vec::new(),
            pos: 0,
            spare,
            spares,
            threads: Vec::new(),
            state: State::Reading,
        };
        reader.head = reader.spawn(0, Begin::At(0));
        reader.look_ahead();
        reader
    }

    /// Starts the thread of `chunk` from `begin`.
    fn spawn(&mut self, chunk: u64, begin: Begin) -> Task {
        let (tx, out) = bounded(BLOCKS_QUEUED);
        let (src, config, spares) = (self.src.clone(), self.config, self.spares.clone());
        self.threads.push(std::thread::spawn(move || {
            task::run(src, config, chunk, begin, tx, spares)
        }));
        Task {
            chunk,
            out,
            start: None,
        }
    }

    /// Keeps `threads` threads ahead: those that found no member in their chunk are let go
    /// (their chunk lies inside a member), and new ones take the next chunks.
    fn look_ahead(&mut self) {
        self.ahead.retain_mut(|t| t.start(false) != Some(None));
        while self.ahead.len() < self.config.threads && self.next_chunk < self.chunks {
            let task = self.spawn(self.next_chunk, Begin::Scan);
            self.ahead.push_back(task);
            self.next_chunk += 1;
        }
        self.threads.retain(|h| !h.is_finished());
    }

    /// The head thread's last member ended at `end`: the thread that started there goes on,
    /// or, when none did, a new one. Threads of chunks before are dropped: those chunks were
    /// inside the head's members.
    fn hand_over(&mut self, end: u64) {
        if end >= self.src.len {
            self.state = State::Done;
            return;
        }
        let chunk = end / self.config.chunk;
        while self.ahead.front().is_some_and(|t| t.chunk < chunk) {
            self.ahead.pop_front();
        }
        let mut verified = None;
        if let Some(t) = self.ahead.front_mut().filter(|t| t.chunk == chunk) {
            let started_here = t.start(true) == Some(Some(end));
            verified = self.ahead.pop_front().filter(|_| started_here);
        }
        self.head = match verified {
            Some(task) => task,
            None => self.spawn(chunk, Begin::At(end)),
        };
        self.next_chunk = self.next_chunk.max(chunk + 1);
        self.look_ahead();
    }

    fn fail(&mut self, e: io::Error) -> io::Error {
        self.state = State::Failed(Failure::of(&e));
        e
    }
}

impl Read for Parallel {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = {
            let available = self.fill_buf()?;
            let n = available.len().min(buf.len());
            buf[..n].copy_from_slice(&available[..n]);
            n
        };
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for Parallel {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        while self.pos == self.block.len() {
            match &self.state {
                State::Reading => {}
                State::Done => return Ok(&[]),
                State::Failed(failure) => return Err(failure.again()),
            }
            match self.head.out.recv() {
                Ok(Msg::Data(block)) => {
                    let _ = self
                        .spare
                        .try_send(std::mem::replace(&mut self.block, block));
                    self.pos = 0;
                    self.look_ahead();
                }
                Ok(Msg::Start(_)) => {}
                Ok(Msg::End(end)) => self.hand_over(end),
                Ok(Msg::Failed(e)) => return Err(self.fail(e)),
                Err(_) => {
                    let e = io::Error::other("a gzip inflating thread stopped without a word");
                    return Err(self.fail(e));
                }
            }
        }
        Ok(&self.block[self.pos..])
    }

    fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.block.len());
    }
}

impl Drop for Parallel {
    /// Stops the threads: with their channels gone each ends at its next block, and is
    /// joined so that none outlives the reading.
    fn drop(&mut self) {
        self.ahead.clear();
        self.head.out = crossbeam_channel::never();
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests;
