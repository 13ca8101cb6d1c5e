//! One worker thread: a current-thread tokio runtime running the thread's engine (its share
//! of the connections, see [`crate::engine`]) and the interval task that hands the thread's
//! [`Recorder`] to the coordinator at each interval boundary.
//!
//! Nothing is shared between workers while they run (thread-per-core, no locks, no work
//! stealing): each has its connections, its random stream, its open-loop schedule and its
//! recorder; the coordinator only receives whole recorders over a channel once per interval.

use std::cell::{Cell, RefCell};
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::config::{Arrivals, Mode};
use crate::cpu;
use crate::engine::Engine;
use crate::recorder::Recorder;
use crate::requests::Requests;
use crate::schedule::Schedule;

/// What a worker is given.
pub(crate) struct Setup {
    /// This thread's index in this process.
    pub index: usize,
    /// Its index among all the run's threads, every segment's (`segment + index × segments`):
    /// connection numbering, seeds and open-loop phases follow it, so that the segments
    /// together make the single-host run.
    pub global: usize,
    pub requests: Arc<Requests>,
    pub classes: usize,
    pub addr: SocketAddr,
    pub mode: Mode,
    pub timeout: Duration,
    pub think: Duration,
    pub backoff_503: Duration,
    pub connections: usize,
    /// Open loop: this thread's rate, arrivals, phase (ns) and connection limit.
    pub open: Option<(f64, Arrivals, f64, usize)>,
    pub start: Instant,
    pub end: Instant,
    pub interval: Duration,
    pub seed: u64,
    /// Threads of the whole run, every segment's.
    pub threads: usize,
    /// Requests this thread may record as samples (0: no samples).
    pub samples: usize,
    /// https: the client configuration and the server's name.
    pub tls: Option<(
        Arc<rustls::ClientConfig>,
        rustls::pki_types::ServerName<'static>,
    )>,
    /// HTTP/2: streams per connection.
    pub http2: Option<usize>,
    /// SO_BUSY_POLL microseconds for every connection (the kernel took it in a probe).
    pub busy_poll: Option<u32>,
    /// How the HTTP/1.1 engine waits for its sockets.
    pub io: crate::config::Io,
}

/// What a worker sends the coordinator.
pub(crate) enum Message {
    /// The figures of one interval.
    Interval(Snapshot),
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
}

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
    pub(crate) tls: Option<(
        Arc<rustls::ClientConfig>,
        rustls::pki_types::ServerName<'static>,
    )>,
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
}

/// The body of a worker thread.
pub(crate) fn run(setup: Setup, tx: Sender<Message>, stop: watch::Receiver<bool>) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            let _ = tx.send(Message::Failed(e));
            return;
        }
    };
    let schedule = setup.open.map(|(rate, arrivals, phase, _)| {
        Schedule::new(
            setup.start,
            rate,
            phase,
            arrivals,
            setup.seed ^ (setup.global as u64 + 1) << 32,
        )
    });
    let shared = Rc::new(Shared {
        requests: Arc::clone(&setup.requests),
        tls: setup.tls.clone(),
        addr: setup.addr,
        mode: setup.mode,
        timeout: setup.timeout,
        think: setup.think,
        backoff_503: setup.backoff_503,
        recorder: RefCell::new(Recorder::new(setup.classes)),
        schedule,
        end: setup.end,
        open_connections: Cell::new(setup.connections),
        start: setup.start,
        thread: setup.global,
        threads: setup.threads,
        samples_left: Cell::new(setup.samples),
        busy_poll: setup.busy_poll,
    });
    let limit = setup
        .open
        .map_or(setup.connections, |(_, _, _, limit)| limit);
    let seed = setup.seed ^ (setup.global as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let engine = match setup.http2 {
        Some(_) => None,
        None => match Engine::new(Rc::clone(&shared), setup.connections, limit, seed, setup.io) {
            Ok(engine) => Some(engine),
            Err(e) => {
                let _ = tx.send(Message::Failed(e));
                return;
            }
        },
    };
    let intervals = Intervals {
        thread: setup.index,
        classes: setup.classes,
        start: setup.start,
        interval: setup.interval,
        end: setup.end,
        index: 0,
        cpu_before: Duration::ZERO,
        wait_before: Duration::ZERO,
        tx,
        stop,
    };
    runtime.block_on(async {
        tokio::time::sleep_until(setup.start.into()).await;
        match (engine, setup.http2) {
            (Some(engine), _) => engine.run(intervals).await,
            (None, Some(streams)) => {
                crate::h2::run(shared, intervals, setup.connections, streams, seed).await
            }
            (None, None) => {}
        }
    });
    // The engine is gone: its sockets are closed (requests in flight are not counted).
}

/// The interval bookkeeping the engine drives: at every boundary, and once more when the run
/// ends or is stopped, the thread's recorder goes to the coordinator.
pub(crate) struct Intervals {
    thread: usize,
    classes: usize,
    start: Instant,
    interval: Duration,
    end: Instant,
    index: usize,
    cpu_before: Duration,
    wait_before: Duration,
    tx: Sender<Message>,
    stop: watch::Receiver<bool>,
}

impl Intervals {
    /// Starts the clock of the thread's CPU time.
    pub(crate) fn begin(&mut self) {
        self.cpu_before = cpu::thread_time();
        self.wait_before = cpu::thread_wait();
    }

    /// The end of the current interval (the run's end for the last one).
    pub(crate) fn boundary(&self) -> Instant {
        (self.start + self.interval * (self.index as u32 + 1)).min(self.end)
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
            (Some(schedule), true) => schedule.unclaimed_before(at),
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
        };
        self.cpu_before = cpu_now;
        self.wait_before = wait_now;
        self.index += 1;
        self.tx.send(Message::Interval(snapshot)).is_ok() && !last
    }
}
