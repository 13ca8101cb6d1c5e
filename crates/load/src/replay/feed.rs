//! The run's feed: one reader thread that hands this segment's slots to the worker threads
//! through bounded channels ([`READ_AHEAD`] slots each), in time order, and counts what it
//! offered per interval. Slots come from the plan's memory or, for a whole log's plan, from
//! reading the log again (webscope-accesslog's `stream_logs`, one parsing thread: the
//! engines need the CPUs, and one thread parses far faster than any replay sends).
//!
//! The split: a slot belongs to segment `client % N` (a client's requests stay in one
//! segment, in order), and the segment's `k`-th slot to its thread `k % threads`. A worker
//! never blocks on its channel: a slot not read yet is [`Next::Pending`], and the engine
//! looks again within a millisecond, so a thread whose slots lag does not stall the others'
//! responses and interval snapshots.
//!
//! The reader stops at the run's end (the first slot at or after it), at the log's end
//! without `--loop`, or when the workers are gone (a run stopped early): it stops reading the
//! log there too (`stream_logs_while`).

use std::collections::BTreeMap;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use std::ops::ControlFlow;

use webscope_accesslog::{stream_logs_while, Entry, Format, ReadOptions};

use super::spread::{client_key, Interner, Spreader};
use super::{LogSource, Replay, Slot};
use crate::Error;

/// Slots a worker's channel holds ahead of its engine: with 24-byte slots, 400 KB a thread.
pub(crate) const READ_AHEAD: usize = 16_384;

/// How long the end of a run waits for the reader to say what it offered.
const SETTLE: Duration = Duration::from_secs(2);

/// What the feed is asked: which segment, how many threads here, the run's intervals and end.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FeedPlan {
    pub segment: (usize, usize),
    pub threads: usize,
    pub interval_ns: u64,
    pub end_ns: u64,
}

/// What the reader tells the run.
#[derive(Debug, Default)]
struct Tally {
    /// Slots handed to this process's threads, by interval. A map, not a vector by index: a
    /// log spanning decades read ahead would otherwise ask for a slot per second of them.
    offered: BTreeMap<u64, u64>,
    /// Why the log could not be read to the end.
    error: Option<String>,
    /// The reader hands out nothing more.
    done: bool,
}

/// The reader thread of one run.
pub(crate) struct Feed {
    tally: Arc<(Mutex<Tally>, Condvar)>,
}

impl Feed {
    /// Starts reading `replay` for `plan`; returns the feed and one schedule per thread.
    pub(crate) fn start(
        replay: Arc<Replay>,
        plan: FeedPlan,
    ) -> Result<(Feed, Vec<ReplaySchedule>), Error> {
        let (senders, schedules): (Vec<SyncSender<Slot>>, Vec<ReplaySchedule>) =
            (0..plan.threads.max(1))
                .map(|_| {
                    let (tx, rx) = sync_channel(READ_AHEAD);
                    (tx, ReplaySchedule::new(rx))
                })
                .unzip();
        let tally = Arc::new((Mutex::new(Tally::default()), Condvar::new()));
        let mut out = Out {
            plan,
            senders,
            next: 0,
            done: false,
            tally: Arc::clone(&tally),
        };
        std::thread::Builder::new()
            .name("load-replay-feed".into())
            .spawn(move || {
                let read = feed(&replay, &mut out);
                out.stop(read.err());
            })
            .map_err(Error::Start)?;
        Ok((Feed { tally }, schedules))
    }

    /// Once the workers are gone: the slots offered per interval, and a read error if any.
    pub(crate) fn finish(self) -> (BTreeMap<u64, u64>, Option<String>) {
        let (lock, settled) = &*self.tally;
        let guard = lock.lock().unwrap_or_else(|e| e.into_inner());
        let (mut tally, _) = settled
            .wait_timeout_while(guard, SETTLE, |t| !t.done)
            .unwrap_or_else(|e| e.into_inner());
        (std::mem::take(&mut tally.offered), tally.error.take())
    }
}

/// Every pass of the replay (one without `--loop`) until the run's end.
fn feed(replay: &Replay, out: &mut Out) -> Result<(), String> {
    let interner = replay.log.as_ref().map(|_| Interner::of(&replay.requests));
    let mut pass: u64 = 0;
    while !out.done {
        let base = pass.saturating_mul(replay.period_ns.max(1));
        if base >= out.plan.end_ns {
            break;
        }
        match (&replay.log, &interner) {
            (Some(log), Some(interner)) => log_pass(replay.speed, log, base, interner, out)?,
            _ => {
                for slot in &replay.slots {
                    if !out.take(*slot, base) {
                        break;
                    }
                }
            }
        }
        if !replay.looped {
            break;
        }
        pass += 1;
    }
    Ok(())
}

/// One pass over a whole log's files, its slots offset by `base`.
fn log_pass(
    speed: f64,
    log: &LogSource,
    base: u64,
    interner: &Interner,
    out: &mut Out,
) -> Result<(), String> {
    let format = match &log.format {
        Some(name) => Some(
            name.parse::<Format>()
                .map_err(|e| format!("--replay: {e}"))?,
        ),
        None => None,
    };
    let options = ReadOptions {
        threads: 1,
        ..ReadOptions::format(format)
    };
    let mut spreader = Spreader::new(log.first_s, speed);
    let mut sink = |entry: Entry| {
        if out.done {
            return ControlFlow::Break(());
        }
        let Some(logged) = crate::replay_log::logged(&entry) else {
            return ControlFlow::Continue(());
        };
        // A request the first pass did not see (the log changed since): not sent.
        let Some(index) = logged.request().and_then(|r| interner.find(&r)) else {
            return ControlFlow::Continue(());
        };
        let client = client_key(&logged.client);
        spreader.push(logged.second(), index, logged.status, client, &mut |s| {
            out.take(s, base);
        });
        ControlFlow::Continue(())
    };
    stream_logs_while(&log.paths, &options, &mut sink, &mut |_| {})
        .map_err(|e| format!("--replay: {e}"))?;
    spreader.finish(&mut |s| {
        out.take(s, base);
    });
    Ok(())
}

/// The reader's side of the channels.
struct Out {
    plan: FeedPlan,
    senders: Vec<SyncSender<Slot>>,
    /// This segment's slots handed out so far.
    next: u64,
    done: bool,
    tally: Arc<(Mutex<Tally>, Condvar)>,
}

impl Out {
    /// Hands `slot` (offset by `base`) to its thread if it is this segment's; false once
    /// nothing more is to be handed out.
    fn take(&mut self, slot: Slot, base: u64) -> bool {
        if self.done {
            return false;
        }
        let at = slot.at_ns.saturating_add(base);
        if at >= self.plan.end_ns {
            self.stop(None);
            return false;
        }
        let (segment, segments) = self.plan.segment;
        if slot.client as usize % segments.max(1) != segment {
            return true;
        }
        let thread = (self.next % self.senders.len() as u64) as usize;
        self.next += 1;
        {
            let mut tally = self.tally.0.lock().unwrap_or_else(|e| e.into_inner());
            let interval = at / self.plan.interval_ns.max(1);
            *tally.offered.entry(interval).or_insert(0) += 1;
        }
        let sent = self.senders[thread].send(Slot { at_ns: at, ..slot });
        if sent.is_err() {
            // The workers are gone: the run ended early.
            self.stop(None);
            return false;
        }
        true
    }

    /// Hands out nothing more: the workers see the end of their slots.
    fn stop(&mut self, error: Option<String>) {
        self.done = true;
        self.senders.clear();
        let (lock, settled) = &*self.tally;
        let mut tally = lock.lock().unwrap_or_else(|e| e.into_inner());
        if tally.error.is_none() {
            tally.error = error;
        }
        tally.done = true;
        settled.notify_all();
    }
}

/// What a worker's schedule finds next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// A slot, at its offset in nanoseconds.
    Due(u64, Slot),
    /// The reader has not handed the next slot yet.
    Pending,
    /// No slot will come.
    End,
}

/// One thread's cursor through its slots.
#[derive(Debug)]
pub(crate) struct ReplaySchedule {
    rx: Receiver<Slot>,
    next: Option<Slot>,
    ended: bool,
}

impl ReplaySchedule {
    pub(crate) fn new(rx: Receiver<Slot>) -> ReplaySchedule {
        ReplaySchedule {
            rx,
            next: None,
            ended: false,
        }
    }

    /// The next slot, without waiting for it.
    pub(crate) fn peek(&mut self) -> Next {
        if let Some(slot) = self.next {
            return Next::Due(slot.at_ns, slot);
        }
        if self.ended {
            return Next::End;
        }
        match self.rx.try_recv() {
            Ok(slot) => {
                self.next = Some(slot);
                Next::Due(slot.at_ns, slot)
            }
            Err(TryRecvError::Empty) => Next::Pending,
            Err(TryRecvError::Disconnected) => {
                self.ended = true;
                Next::End
            }
        }
    }

    /// Moves past the slot peeked.
    pub(crate) fn advance(&mut self) {
        self.next = None;
    }
}
