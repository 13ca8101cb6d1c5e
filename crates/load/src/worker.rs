//! One worker thread: a current-thread tokio runtime running its share of the connections,
//! recording into its own [`Recorder`] and handing it to the coordinator at each interval.
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
use tokio::task::LocalSet;
use webscope_workload::Rng;

use crate::config::{Arrivals, Mode};
use crate::conn::{Conn, Exchange};
use crate::cpu;
use crate::recorder::{record, Failure, Recorder, STATUSES};
use crate::requests::Requests;
use crate::schedule::Schedule;

/// After a failed connect, a connection waits this long before trying again, so that a
/// server that is down is not hammered in a busy loop.
const CONNECT_BACKOFF: Duration = Duration::from_millis(10);

/// In open loop, a slot this late with every connection busy opens another connection.
const OPEN_GRACE: Duration = Duration::from_millis(1);

/// Open-loop sends are timed by the runtime's 1 ms timer: a connection waits until half a
/// millisecond before its slot, so sends land within ±0.5 ms of their intended times.
const SEND_EARLY: Duration = Duration::from_micros(500);

/// What a worker is given.
pub(crate) struct Setup {
    pub index: usize,
    pub requests: Arc<Requests>,
    pub classes: usize,
    pub addr: SocketAddr,
    pub mode: Mode,
    pub timeout: Duration,
    pub think: Duration,
    pub connections: usize,
    /// Open loop: this thread's rate, arrivals, phase (ns) and connection limit.
    pub open: Option<(f64, Arrivals, f64, usize)>,
    pub start: Instant,
    pub end: Instant,
    pub interval: Duration,
    pub seed: u64,
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
    /// Open loop, last interval only: slots never sent.
    pub not_sent: u64,
    /// Connections open at the end of the interval.
    pub open_connections: usize,
}

/// The state a worker's tasks share (single-threaded: `Rc`, `Cell`, `RefCell`).
struct Shared {
    requests: Arc<Requests>,
    addr: SocketAddr,
    mode: Mode,
    timeout: Duration,
    think: Duration,
    recorder: RefCell<Recorder>,
    schedule: Option<Schedule>,
    end: Instant,
    open_connections: Cell<usize>,
    /// Every connection's watchdog entry.
    slots: RefCell<Vec<Rc<Slot>>>,
    /// Identifies the next connection task (its random stream).
    next_id: Cell<u64>,
    seed: u64,
}

/// A connection's entry in the watchdog's table: the timeout costs two `Cell` writes per
/// request instead of a timer per request.
struct Slot {
    /// When the request in flight times out (`None` while the connection is idle).
    deadline: Cell<Option<Instant>>,
    /// The class of the request in flight.
    class: Cell<u16>,
    /// The task running the connection, to cancel it when its request times out.
    task: RefCell<Option<tokio::task::AbortHandle>>,
}

impl Slot {
    fn new() -> Rc<Slot> {
        Rc::new(Slot {
            deadline: Cell::new(None),
            class: Cell::new(0),
            task: RefCell::new(None),
        })
    }
}

/// Starts (or restarts) the connection task of `slot`.
fn start_connection(shared: &Rc<Shared>, slot: Rc<Slot>) {
    let id = shared.next_id.get();
    shared.next_id.set(id + 1);
    let task = if shared.schedule.is_some() {
        tokio::task::spawn_local(open_loop(Rc::clone(shared), Rc::clone(&slot), id))
    } else {
        tokio::task::spawn_local(closed_loop(Rc::clone(shared), Rc::clone(&slot), id))
    };
    *slot.task.borrow_mut() = Some(task.abort_handle());
}

/// Cancels connections whose request has run past its deadline, counts a timeout for each
/// and starts a fresh connection in its place. Checks every `period`, so a timeout fires
/// between `timeout` and `timeout + period`.
async fn watchdog(shared: Rc<Shared>, period: Duration) {
    loop {
        tokio::time::sleep(period).await;
        let now = Instant::now();
        let expired: Vec<Rc<Slot>> = shared
            .slots
            .borrow()
            .iter()
            .filter(|slot| slot.deadline.get().is_some_and(|d| d <= now))
            .cloned()
            .collect();
        for slot in expired {
            if let Some(task) = slot.task.borrow_mut().take() {
                task.abort();
            }
            slot.deadline.set(None);
            let class = slot.class.get() as usize;
            shared.recorder.borrow_mut().classes[class].failures[Failure::Timeout as usize] += 1;
            start_connection(&shared, slot);
        }
    }
}

impl Shared {
    /// Records one exchange: `from` is when its latency starts (the intended time in open
    /// loop when it waited, else the send), `sent` when it was sent.
    fn record(&self, class: u16, from: Instant, sent: Instant, exchange: &Exchange) {
        let mut recorder = self.recorder.borrow_mut();
        let stats = &mut recorder.classes[class as usize];
        if let Some(connect) = exchange.connect {
            record(&mut stats.connect, connect.as_nanos() as u64);
        }
        let response = match exchange.result {
            Ok(response) => response,
            Err(failure) => {
                stats.failures[failure as usize] += 1;
                return;
            }
        };
        stats.requests += 1;
        stats.bytes += response.bytes;
        record(&mut stats.latency, nanos(response.end, from));
        if self.schedule.is_some() {
            record(&mut stats.uncorrected, nanos(response.end, sent));
        }
        record(&mut stats.ttfb, nanos(response.first_byte, sent));
        if response.status >= 400 {
            stats.failures[Failure::BadStatus as usize] += 1;
        }
        let status = (response.status as usize).min(STATUSES - 1);
        recorder.statuses[status] += 1;
    }

    fn rng(&self, connection: u64) -> Rng {
        let mut rng = Rng::new(self.seed ^ connection.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        rng.next_u64();
        rng
    }
}

fn nanos(later: Instant, earlier: Instant) -> u64 {
    later.saturating_duration_since(earlier).as_nanos() as u64
}

/// A closed-loop connection: request, response, (think), request, ...
async fn closed_loop(shared: Rc<Shared>, slot: Rc<Slot>, id: u64) {
    let mut conn = Conn::new(shared.addr, shared.mode == Mode::KeepAlive);
    let reuse = shared.mode == Mode::KeepAlive;
    let mut rng = shared.rng(id);
    loop {
        let entry = shared.requests.pick(&mut rng);
        let sent = Instant::now();
        slot.class.set(entry.class);
        slot.deadline.set(Some(sent + shared.timeout));
        if !conn.is_open() {
            shared.recorder.borrow_mut().connections += 1;
        }
        let exchange = conn.exchange(&entry.bytes, reuse).await;
        slot.deadline.set(None);
        shared.record(entry.class, sent, sent, &exchange);
        if matches!(
            exchange.result,
            Err(Failure::ConnectRefused | Failure::Connect)
        ) {
            tokio::time::sleep(CONNECT_BACKOFF).await;
        }
        if !shared.think.is_zero() {
            tokio::time::sleep(shared.think).await;
        }
    }
}

/// An open-loop connection: claims the next slot of the schedule, sends at its time (or at
/// once if it is already past), and so on until the run ends.
async fn open_loop(shared: Rc<Shared>, slot: Rc<Slot>, id: u64) {
    let Some(schedule) = shared.schedule.as_ref() else {
        return;
    };
    let mut conn = Conn::new(shared.addr, shared.mode == Mode::KeepAlive);
    let reuse = shared.mode == Mode::KeepAlive;
    let mut rng = shared.rng(id);
    loop {
        let claimed = Instant::now();
        let intended = schedule.claim();
        if intended >= shared.end {
            break;
        }
        if intended > claimed + SEND_EARLY {
            tokio::time::sleep_until((intended - SEND_EARLY).into()).await;
        }
        let entry = shared.requests.pick(&mut rng);
        let sent = Instant::now();
        // A slot already past when it was claimed waited for a free connection: its latency
        // starts at the slot (coordinated omission); otherwise at the send.
        let from = if intended < claimed { intended } else { sent };
        slot.class.set(entry.class);
        slot.deadline.set(Some(sent + shared.timeout));
        if !conn.is_open() {
            shared.recorder.borrow_mut().connections += 1;
        }
        let exchange = conn.exchange(&entry.bytes, reuse).await;
        slot.deadline.set(None);
        shared.record(entry.class, from, sent, &exchange);
        if matches!(
            exchange.result,
            Err(Failure::ConnectRefused | Failure::Connect)
        ) {
            tokio::time::sleep(CONNECT_BACKOFF).await;
        }
    }
    shared
        .open_connections
        .set(shared.open_connections.get() - 1);
}

/// Open loop: opens another connection whenever a slot is overdue and every connection is
/// busy, up to the limit.
async fn grow(shared: Rc<Shared>, limit: usize) {
    let Some(schedule) = shared.schedule.as_ref() else {
        return;
    };
    loop {
        let wake = (schedule.peek() + OPEN_GRACE).max(Instant::now() + Duration::from_millis(1));
        tokio::time::sleep_until(wake.into()).await;
        let overdue = schedule.peek() + OPEN_GRACE <= Instant::now();
        if overdue && shared.open_connections.get() < limit && schedule.peek() < shared.end {
            shared
                .open_connections
                .set(shared.open_connections.get() + 1);
            let slot = Slot::new();
            shared.slots.borrow_mut().push(Rc::clone(&slot));
            start_connection(&shared, slot);
        }
    }
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
            setup.seed ^ (setup.index as u64 + 1) << 32,
        )
    });
    let shared = Rc::new(Shared {
        requests: Arc::clone(&setup.requests),
        addr: setup.addr,
        mode: setup.mode,
        timeout: setup.timeout,
        think: setup.think,
        recorder: RefCell::new(Recorder::new(setup.classes)),
        schedule,
        end: setup.end,
        open_connections: Cell::new(setup.connections),
        slots: RefCell::new(Vec::new()),
        next_id: Cell::new((setup.index as u64) << 40),
        seed: setup.seed ^ setup.index as u64,
    });
    let local = LocalSet::new();
    local.block_on(&runtime, async {
        tokio::time::sleep_until(setup.start.into()).await;
        for _ in 0..setup.connections {
            let slot = Slot::new();
            shared.slots.borrow_mut().push(Rc::clone(&slot));
            start_connection(&shared, slot);
        }
        if let Some((_, _, _, limit)) = setup.open {
            tokio::task::spawn_local(grow(Rc::clone(&shared), limit));
        }
        let period =
            (setup.timeout / 10).clamp(Duration::from_millis(1), Duration::from_millis(100));
        tokio::task::spawn_local(watchdog(Rc::clone(&shared), period));
        // The intervals run in a task of their own: the future given to `block_on` is polled
        // at every wake-up of the thread, so it must be cheap to poll (a oneshot is).
        let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
        tokio::task::spawn_local(intervals(Rc::clone(&shared), setup, tx, stop, done_tx));
        let _ = done_rx.await;
    });
    // Dropping the LocalSet cancels the connections' tasks and closes their sockets.
    drop(local);
}

/// Hands the recorder to the coordinator at every interval boundary, and a last time when the
/// run ends or is stopped; then says so on `done`.
async fn intervals(
    shared: Rc<Shared>,
    setup: Setup,
    tx: Sender<Message>,
    mut stop: watch::Receiver<bool>,
    done: tokio::sync::oneshot::Sender<()>,
) {
    let mut cpu_before = cpu::thread_time();
    let mut index = 0usize;
    loop {
        let boundary = (setup.start + setup.interval * (index as u32 + 1)).min(setup.end);
        let stopped = tokio::select! {
            _ = tokio::time::sleep_until(boundary.into()) => false,
            _ = stop.changed() => true,
        };
        let at = if stopped { Instant::now() } else { boundary };
        let last = stopped || boundary >= setup.end;
        let recorder = shared.recorder.replace(Recorder::new(setup.classes));
        let cpu_now = cpu::thread_time();
        let not_sent = match (&shared.schedule, last) {
            (Some(schedule), true) => schedule.unclaimed_before(at),
            _ => 0,
        };
        let snapshot = Snapshot {
            thread: setup.index,
            index,
            at,
            last,
            recorder,
            cpu: cpu_now.saturating_sub(cpu_before),
            not_sent,
            open_connections: shared.open_connections.get(),
        };
        cpu_before = cpu_now;
        if tx.send(Message::Interval(snapshot)).is_err() || last {
            break;
        }
        index += 1;
    }
    let _ = done.send(());
}
