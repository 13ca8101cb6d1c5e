//! One inflating thread: from a member start (known, or the first plausible one found in its
//! chunk) it inflates member after member, in blocks sent through a bounded channel, up to
//! the first member that ends at or past its chunk's end, and says where that was.

use std::io::{self, Read};
use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender};

use super::header::{next_magic, plausible};
use super::member::Members;
use super::{Config, Source};

/// Compressed bytes read at a time, by a thread's inflater and by its scan.
const INPUT_BUF: usize = 64 * 1024;

/// What a thread tells the reader, in this order: `Start` once, then `Data` blocks, then
/// `End` or `Failed`.
pub(super) enum Msg {
    /// Where its first member starts; `None`: no plausible member in its chunk.
    Start(Option<u64>),
    Data(Vec<u8>),
    /// Its last member ended here (the file's length at its end).
    End(u64),
    Failed(io::Error),
}

/// Where a thread begins.
#[derive(Clone, Copy)]
pub(super) enum Begin {
    /// A member start known to be true: the end of the member before.
    At(u64),
    /// A guess: the first plausible member start in the chunk, tried by inflating a block.
    Scan,
}

/// The thread's body: inflates chunk `chunk` of `src` from `begin`. Returns when done, when
/// the reader no longer listens, or at an error (sent, unless the start was a guess that
/// the error disproves).
/// `spares` are blocks the reader is done with, filled again rather than new ones.
pub(super) fn run(
    src: Arc<Source>,
    config: Config,
    chunk: u64,
    begin: Begin,
    out: Sender<Msg>,
    spares: Receiver<Vec<u8>>,
) {
    let stop_at = (chunk + 1).saturating_mul(config.chunk);
    let first = match begin {
        Begin::At(at) => Some((at, members(&src, at, stop_at), spare(&spares))),
        Begin::Scan => guess(&src, &config, chunk, stop_at, &spares),
    };
    let Some((at, mut members, mut block)) = first else {
        let _ = out.send(Msg::Start(None));
        return;
    };
    if out.send(Msg::Start(Some(at))).is_err() {
        return;
    }
    loop {
        let ended = match members.fill(&mut block, config.block) {
            Ok(ended) => ended,
            Err(e) => {
                // What was inflated before the damage goes out first, as the sequential
                // reader hands it out: the two stop at the same byte.
                if !block.is_empty() {
                    let _ = out.send(Msg::Data(block));
                }
                let _ = out.send(Msg::Failed(e));
                return;
            }
        };
        if !block.is_empty() {
            let full = std::mem::replace(&mut block, spare(&spares));
            if out.send(Msg::Data(full)).is_err() {
                return;
            }
        }
        if let Some(end) = ended {
            let _ = out.send(Msg::End(end));
            return;
        }
    }
}

/// The first plausible member start in the chunk whose first block inflates without error,
/// with that block (the guess's trial, kept rather than inflated twice).
fn guess(
    src: &Arc<Source>,
    config: &Config,
    chunk: u64,
    stop_at: u64,
    spares: &Receiver<Vec<u8>>,
) -> Option<(u64, Members<At>, Vec<u8>)> {
    let mut buf = vec![0u8; INPUT_BUF];
    let mut from = chunk.saturating_mul(config.chunk);
    let to = stop_at.min(src.len);
    while let Ok(Some(at)) = next_magic(src, from, to, &mut buf) {
        from = at + 1;
        if !plausible(src, at) {
            continue;
        }
        let mut members = members(src, at, stop_at);
        let mut trial = spare(spares);
        if members.fill(&mut trial, config.block).is_ok() {
            return Some((at, members, trial));
        }
    }
    None
}

/// An empty block: a spare one when there is one.
fn spare(spares: &Receiver<Vec<u8>>) -> Vec<u8> {
    let mut block = spares.try_recv().unwrap_or_default();
    block.clear();
    block
}

/// The members of the file from `at`, read by positioned reads.
fn members(src: &Arc<Source>, at: u64, stop_at: u64) -> Members<At> {
    let input = At {
        src: src.clone(),
        pos: at,
    };
    Members::new(input, at, stop_at)
}

/// The file read from an offset on, by positioned reads: each thread has its own offset.
pub(super) struct At {
    src: Arc<Source>,
    pos: u64,
}

impl Read for At {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.src.read_at_most(self.pos, buf)?;
        self.pos += n as u64;
        Ok(n)
    }
}
