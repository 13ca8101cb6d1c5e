//! What a worker thread's engine shares with its interval clock, and what the clock hands the
//! coordinator: the thread's [`Shared`] state (its requests, its recorder, its open-loop
//! schedule), the [`Intervals`] bookkeeping that swaps the recorder out at each boundary, and
//! the [`Message`]s that carry it to the coordinator.
//!
//! Its own module so that the engines (which record into `Shared` and drive `Intervals`), the
//! worker (which builds both) and the coordinator (which reads the messages) all depend on it
//! and it on none of them. Not for the engines' connection state (see the engine folder) nor
//! for the report (the coordinator assembles that from the snapshots).

use std::cell::{Cell, RefCell};
use std::net::SocketAddr;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::config::Mode;
use crate::cpu;
use crate::recorder::Recorder;
use crate::requests::Requests;
use crate::schedule::Schedule;

/// What a worker sends the coordinator.
pub(crate) enum Message {
    /// The figures of one interval (boxed: a snapshot is large and a failure small; one
    /// allocation per interval costs nothing).
    Interval(Box<Snapshot>),
    /// The worker could not start.
    Failed(std::io::Error),
}

/// One worker's figures for one interval.
pub(crate) struct Snapshot {
    pub thread: usize,
    pub index: usize,
    /// When the interval ended (its boundary, or when the run was stopped).
    pub at: Instant,
    /// Whether this is the worker's last interval.
    pub last: bool,
    pub recorder: Recorder,
    /// CPU time the thread used during the interval.
    pub cpu: Duration,
    /// Time the thread waited for a CPU during the interval.
    pub wait: Duration,
    /// Open loop, last interval only: slots never sent.
    pub not_sent: u64,
    /// Connections open at the end of the interval.
    pub open_connections: usize,
    /// `--users`: users that had begun by the end of the interval.
    pub users_active: usize,
}

/// https: the client configuration and the server's name.
pub(crate) type TlsClient = (
    Arc<rustls::ClientConfig>,
    rustls::pki_types::ServerName<'static>,
);

/// What the engine and the interval task of a worker share (single-threaded: `Rc`, `Cell`,
/// `RefCell`).
pub(crate) struct Shared {
    pub(crate) requests: Arc<Requests>,
    pub(crate) addr: SocketAddr,
    pub(crate) mode: Mode,
    pub(crate) timeout: Duration,
    pub(crate) think: Duration,
    /// Closed loop: the pause after a 503 (zero: none).
    pub(crate) backoff_503: Duration,
    pub(crate) recorder: RefCell<Recorder>,
    pub(crate) schedule: Option<Schedule>,
    /// https: the client configuration and the server's name.
    pub(crate) tls: Option<TlsClient>,
    pub(crate) end: Instant,
    pub(crate) open_connections: Cell<usize>,
    /// The run's start, this thread's index and the number of threads (connection `k` of
    /// this thread is the run's connection `thread + k * threads`).
    pub(crate) start: Instant,
    pub(crate) thread: usize,
    pub(crate) threads: usize,
    /// Samples this thread may still record.
    pub(crate) samples_left: Cell<usize>,
    pub(crate) busy_poll: Option<u32>,
    /// `--users`: the plan, and this thread's users: the run's `first, first + stride, ...`,
    /// `count` of them.
    pub(crate) users: Option<(Arc<crate::users::Users>, usize, usize, usize)>,
    /// `--users`: users that have begun.
    pub(crate) users_active: Cell<usize>,
    /// The run's expectation: which responses the recorder counts as errors.
    pub(crate) expect: crate::Expect,
}

/// The interval bookkeeping the engine drives: at every boundary, and once more when the run
/// ends or is stopped, the thread's recorder goes to the coordinator.
pub(crate) struct Intervals {
    thread: usize,
    classes: usize,
    start: Instant,
    interval: Duration,
    /// The last send, and the run's end (after the drain, if any).
    send_end: Instant,
    end: Instant,
    index: usize,
    cpu_before: Duration,
    wait_before: Duration,
    tx: Sender<Message>,
    stop: watch::Receiver<bool>,
}

impl Intervals {
    /// The bookkeeping of thread `thread` (its index in this process), whose recorders have
    /// `classes` classes, for intervals of `interval` from `start` to `end`, the last send at
    /// `send_end`.
    pub(crate) fn new(
        thread: usize,
        classes: usize,
        start: Instant,
        interval: Duration,
        (send_end, end): (Instant, Instant),
        tx: Sender<Message>,
        stop: watch::Receiver<bool>,
    ) -> Intervals {
        Intervals {
            thread,
            classes,
            start,
            interval,
            send_end,
            end,
            index: 0,
            cpu_before: Duration::ZERO,
            wait_before: Duration::ZERO,
            tx,
            stop,
        }
    }

    /// Starts the clock of the thread's CPU time.
    pub(crate) fn begin(&mut self) {
        self.cpu_before = cpu::thread_time();
        self.wait_before = cpu::thread_wait();
    }

    /// Whether the interval ending at `boundary` is the run's last (the drain's end).
    pub(crate) fn is_last(&self, boundary: Instant) -> bool {
        boundary >= self.end
    }

    /// The end of the current interval (the run's end for the last one).
    pub(crate) fn boundary(&self) -> Instant {
        let boundary = self.start + self.interval * (self.index as u32 + 1);
        // The interval of the last send goes on through the drain: the late answers belong
        // to it, not to an interval of their own that offered nothing.
        if boundary >= self.send_end {
            self.end
        } else {
            boundary
        }
    }

    /// Whether the coordinator asked to stop (or is gone).
    pub(crate) fn stop_requested(&self) -> bool {
        !matches!(self.stop.has_changed(), Ok(false))
    }

    /// Sends the current interval's figures, ending at `at`; `last` ends the run. Returns
    /// whether the run goes on.
    pub(crate) fn snapshot(&mut self, shared: &Shared, at: Instant, last: bool) -> bool {
        let recorder = shared.recorder.replace(Recorder::new(self.classes));
        let cpu_now = cpu::thread_time();
        let wait_now = cpu::thread_wait();
        let not_sent = match (&shared.schedule, last) {
            // Slots after the last send are not the run's, however long it drained.
            (Some(schedule), true) => schedule.unclaimed_before(at.min(shared.end)),
            _ => 0,
        };
        let snapshot = Snapshot {
            thread: self.thread,
            index: self.index,
            at,
            last,
            recorder,
            cpu: cpu_now.saturating_sub(self.cpu_before),
            wait: wait_now.saturating_sub(self.wait_before),
            not_sent,
            open_connections: shared.open_connections.get(),
            users_active: shared.users_active.get(),
        };
        self.cpu_before = cpu_now;
        self.wait_before = wait_now;
        self.index += 1;
        self.tx.send(Message::Interval(Box::new(snapshot))).is_ok() && !last
    }
}
