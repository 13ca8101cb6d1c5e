//! The engines: what moves a worker thread's requests and responses. HTTP/1.1 runs in
//! [`Engine`], one loop per worker thread that drives all of the thread's connections, waiting
//! for their sockets either in an epoll set of its own (`epoll.rs`, the default) or in an
//! io_uring (`uring.rs`, `--io uring`), with rustls in between for https (`tls.rs`); HTTP/2
//! runs in [`h2`], the `h2` crate's client on the thread's runtime (`--users` in [`h2_users`]). All of them keep their
//! connections in the state of `conn.rs` and count into the thread's recorder through it.
//!
//! Why not a tokio task per connection: measured against nginx on loopback (bench/
//! load_vs_wrk.py), the wakers, task polls and readiness bookkeeping of one task per
//! connection cost more per request than everything else the generator does in user space,
//! and left it barely ahead of wrk. Nesting the engine's epoll set inside the runtime's (the
//! runtime waking the engine when the set is readable) cost a second `epoll_wait` per
//! wake-up and gained nothing. So the engine, the future the thread's current-thread runtime
//! runs, waits in its own `epoll_wait` with a timeout computed from its own timers (think
//! time, open-loop slots, timeouts, connect backoff, interval boundaries, and a look at the
//! stop flag every 5 ms); it also takes the interval snapshots itself, exactly at their
//! boundaries. The runtime has nothing else to do on this thread.
//!
//! Per keep-alive request: one `send` of a prebuilt request and usually one `recv` of the
//! whole response; sockets are registered once, edge-triggered, for reading and writing, so
//! no `epoll_ctl` per request (wrk re-arms its write interest with two per request). A new
//! connection sends its request straight after the non-blocking `connect` (on loopback the
//! handshake completes inside `connect`), and closing a socket removes it from the set, so
//! a close-mode request costs socket, connect, epoll_ctl, send, recv, close. Nothing is
//! allocated per request: buffers belong to connections and are reused.
//!
//! This file holds what the two ways of waiting share: the connections' scheduling (closed
//! loop timers, open-loop slots, timeouts, the interval boundaries) and the exchange's
//! beginning and end; `epoll.rs` and `uring.rs` hold only how bytes move.

mod conn;
mod epoll;
pub(crate) mod h2;
pub(crate) mod h2_users;
pub(crate) mod h3;
mod tls;
mod uring;
mod users;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io;
use std::os::fd::AsRawFd;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use socket2::{Domain, Socket, Type};
use webscope_http::response::Body;
use webscope_workload::Rng;

use self::conn::{count_failure, count_handshake, count_response, nanos, Conn, Phase, Read};
use crate::config::{Io, Mode};
use crate::recorder::{record, Failure};
use crate::shared::{Intervals, Shared};

/// After a failed connect, a connection waits this long before trying again, so that a
/// server that is down is not hammered in a busy loop.
const CONNECT_BACKOFF: Duration = Duration::from_millis(10);

/// In open loop, a slot this late with every connection busy opens another connection (at
/// most one per millisecond).
const OPEN_GRACE: Duration = Duration::from_millis(1);

/// Open-loop sends are timed by the runtime's 1 ms timer: slots are sent from half a
/// millisecond before their time, so sends land within ±0.5 ms of it.
const SEND_EARLY: Duration = Duration::from_micros(500);

/// How often the engine looks at the stop flag while nothing else wakes it.
const STOP_POLL: Duration = Duration::from_millis(5);

/// The per-thread HTTP/1.1 engine.
pub(crate) struct Engine {
    shared: Rc<Shared>,
    /// The engine's epoll set.
    epoll: epoll::Epoll,
    conns: Vec<Conn>,
    /// Closed loop: connections waiting for a think time or a backoff, by wake time.
    timers: BinaryHeap<Reverse<(Instant, usize)>>,
    /// Open loop: idle connections, longest idle first.
    idle: VecDeque<usize>,
    /// Open loop: connections may grow to this many.
    limit: usize,
    last_grow: Instant,
    next_scan: Instant,
    scan_period: Duration,
    seed: u64,
    /// `--io uring`: the thread's ring, in place of the epoll set's waits.
    ring: Option<uring::Ring>,
    /// `--users`: the thread's users, who own its connections.
    users: Option<users::UserSet>,
}

impl Engine {
    pub(crate) fn new(
        shared: Rc<Shared>,
        connections: usize,
        limit: usize,
        seed: u64,
        io: Io,
    ) -> io::Result<Engine> {
        let epoll = epoll::Epoll::new()?;
        let now = Instant::now();
        let shared_addr = shared.addr;
        let scan_period =
            (shared.timeout / 10).clamp(Duration::from_millis(1), Duration::from_millis(100));
        let users = shared.users.as_ref().map(|(plan, first, stride, count)| {
            users::UserSet::new(
                Arc::clone(plan),
                *first,
                *stride,
                *count,
                seed,
                shared.expect.clone(),
            )
        });
        let connections = users.as_ref().map_or(connections, |u| u.connections());
        let mut engine = Engine {
            shared,
            epoll,
            conns: Vec::with_capacity(connections),
            timers: BinaryHeap::with_capacity(connections),
            idle: VecDeque::with_capacity(connections),
            limit,
            last_grow: now,
            next_scan: now + scan_period,
            scan_period,
            seed,
            ring: match io {
                Io::Epoll => None,
                Io::Uring => Some(uring::Ring::new(connections, &shared_addr)?),
            },
            users,
        };
        for _ in 0..connections {
            engine.add_conn(now);
        }
        Ok(engine)
    }

    fn add_conn(&mut self, now: Instant) -> usize {
        let id = self.conns.len() as u64;
        let mut rng = Rng::new(self.seed ^ id.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        rng.next_u64();
        let global = self.shared.thread + self.conns.len() * self.shared.threads;
        let fixed = self.shared.requests.fixed(global);
        self.conns.push(Conn::new(now, rng, fixed));
        self.conns.len() - 1
    }

    /// Runs the connections until the run ends or is stopped, handing the figures over at
    /// each interval boundary.
    pub(crate) async fn run(mut self, mut intervals: Intervals) {
        intervals.begin();
        let now = Instant::now();
        let open_loop = self.shared.schedule.is_some();
        if self.users.is_some() {
            self.users_begin(now);
        } else {
            for i in 0..self.conns.len() {
                if open_loop {
                    self.idle.push_back(i);
                } else {
                    self.start(i, now, None);
                }
            }
        }
        let mut events = epoll::events();
        loop {
            let now = Instant::now();
            if intervals.stop_requested() {
                self.count_unfinished(now);
                intervals.snapshot(&self.shared, now, true);
                return;
            }
            self.fire_timers(now);
            if open_loop {
                // Slots due before a boundary are sent before its snapshot.
                self.dispatch(now);
            }
            if now >= self.next_scan {
                self.scan_timeouts(now);
                self.next_scan = now + self.scan_period;
            }
            let boundary = intervals.boundary();
            if now >= boundary {
                let last = intervals.is_last(boundary);
                if last {
                    self.count_unfinished(boundary);
                }
                if !intervals.snapshot(&self.shared, boundary, last) {
                    return;
                }
                continue;
            }
            if now >= self.shared.end && self.drained() {
                intervals.snapshot(&self.shared, now, true);
                return;
            }
            // Wait for sockets, or until the next timer, the interval's end, or the next look
            // at the stop flag.
            let wake = self.next_wake().min(boundary).min(now + STOP_POLL);
            let ms = wake
                .saturating_duration_since(now)
                .as_micros()
                .div_ceil(1000) as i32;
            if self.ring.is_some() {
                self.ring_wait(ms);
            } else {
                self.epoll_wait(&mut events, ms);
            }
        }
    }

    /// After the last send: whether nothing is in flight and nothing more will be sent, so
    /// that a drain (`Config::drain`) need not wait any longer.
    fn drained(&self) -> bool {
        let nothing_due = self
            .shared
            .schedule
            .as_ref()
            .is_none_or(|s| s.peek() >= self.shared.end);
        nothing_due && self.conns.iter().all(|c| c.phase == Phase::Idle)
    }

    /// The next time something must happen without a socket event.
    fn next_wake(&self) -> Instant {
        let mut wake = self.next_scan;
        if let Some(Reverse((at, _))) = self.timers.peek() {
            wake = wake.min(at.checked_sub(self.timer_early()).unwrap_or(*at));
        }
        if let Some(schedule) = &self.shared.schedule {
            let slot = schedule.peek();
            if !self.idle.is_empty() {
                wake = wake.min(slot.checked_sub(SEND_EARLY).unwrap_or(slot));
            } else if self.conns.len() < self.limit && slot < self.shared.end {
                let grow = (slot + OPEN_GRACE).max(self.last_grow + Duration::from_millis(1));
                wake = wake.min(grow);
            }
        }
        wake
    }

    /// How early a timer may fire: a user's think time ends within ±0.5 ms of its time, as
    /// an open-loop send leaves (the wait is in whole milliseconds: ending late every time
    /// lengthened a 26-ms think by 4 %); other timers (closed-loop think, backoffs) never
    /// early.
    fn timer_early(&self) -> Duration {
        if self.users.is_some() {
            SEND_EARLY
        } else {
            Duration::ZERO
        }
    }

    fn fire_timers(&mut self, now: Instant) {
        let early = self.timer_early();
        while let Some(&Reverse((at, i))) = self.timers.peek() {
            if at > now + early {
                break;
            }
            self.timers.pop();
            if self.shared.schedule.is_some() {
                self.conns[i].idle_since = at;
                self.idle.push_back(i);
            } else if self.users.is_some() {
                self.user_wake(i, now);
            } else {
                self.start(i, now, None);
            }
        }
    }

    /// Open loop: hands due slots to idle connections (or to a new one when every connection
    /// is busy and a slot is overdue).
    fn dispatch(&mut self, now: Instant) {
        let shared = Rc::clone(&self.shared);
        let Some(schedule) = shared.schedule.as_ref() else {
            return;
        };
        loop {
            let slot = schedule.peek();
            if slot >= self.shared.end || slot > now + SEND_EARLY {
                return;
            }
            let i = match self.idle.pop_front() {
                Some(i) => i,
                None if slot + OPEN_GRACE <= now
                    && self.conns.len() < self.limit
                    && now >= self.last_grow + Duration::from_millis(1) =>
                {
                    self.last_grow = now;
                    let i = self.add_conn(now);
                    self.conns[i].idle_since = now;
                    self.shared.open_connections.set(self.conns.len());
                    i
                }
                None => return,
            };
            let (intended, slot) = schedule.claim();
            // A connection idle at the slot's time sends on time (latency from the send); one
            // that only became free after it kept the request waiting: latency counts from
            // the intended time (the coordinated-omission correction).
            let from = (self.conns[i].idle_since > intended).then_some(intended);
            shared.recorder.borrow_mut().sent_after(now, intended);
            self.conns[i].slot = slot;
            self.start(i, now, from);
        }
    }

    /// Starts a request on connection `i` (opening it if needed). In closed loop none once
    /// the run has ended (a response that came after the end, before the last snapshot,
    /// starts nothing: what is sent belongs to the run); in open loop a slot of the run is
    /// sent even if late (`dispatch` takes none after the end).
    fn start(&mut self, i: usize, now: Instant, from: Option<Instant>) {
        let shared = Rc::clone(&self.shared);
        if now >= shared.end && shared.schedule.is_none() {
            return;
        }
        if self.conns[i].inflight > 0 {
            // io_uring: the last socket's operations are still completing; the request
            // (a slot's, a user's) stays on the connection until they have.
            self.conns[i].restart = true;
            return;
        }
        let entry_index = {
            let conn = &mut self.conns[i];
            // A replay's slot brings its own request and the status the log gave it.
            let slot = conn.slot.take();
            // A user's page view names its request (and the status a log gave it) too.
            let chosen = conn.chosen.take();
            conn.logged = slot.map(|s| s.status).or(chosen.and_then(|c| c.logged));
            match (slot, chosen, conn.fixed) {
                (Some(slot), _, _) => slot.request as usize,
                (None, Some(chosen), _) => chosen.request as usize,
                (None, None, Some(index)) => index,
                (None, None, None) => shared.requests.pick_index(&mut conn.rng),
            }
        };
        let entry = shared.requests.entry(entry_index);
        let conn = &mut self.conns[i];
        conn.entry = entry_index;
        conn.class = entry.class;
        conn.head_request = entry.head;
        conn.sent = now;
        conn.from = from.unwrap_or(now);
        conn.deadline = now + shared.timeout;
        conn.connect = None;
        conn.head = None;
        conn.bytes = 0;
        conn.reads = 0;
        conn.first_byte = None;
        if conn.socket.is_none() {
            shared.recorder.borrow_mut().connections += 1;
            if let Err(failure) = self.open(i) {
                self.finish(i, Err(failure));
                return;
            }
        }
        self.conns[i].phase = Phase::Sending(0);
        self.send(i);
    }

    /// Opens a socket for connection `i`: non-blocking, connected and registered with the
    /// epoll set; or, for io_uring, blocking, to be connected by the ring with the request's
    /// send.
    fn open(&mut self, i: usize) -> Result<(), Failure> {
        let addr = self.shared.addr;
        let kind = if self.ring.is_some() {
            // io_uring honours O_NONBLOCK by failing with EAGAIN instead of waiting.
            Type::STREAM
        } else {
            Type::STREAM.nonblocking()
        };
        let socket =
            Socket::new(Domain::for_address(addr), kind, None).map_err(|_| Failure::Connect)?;
        // A plain close-mode request leaves in one send, so Nagle cannot delay it; TLS writes
        // the client's Finished and the request's records separately, and Nagle would hold
        // the request for the server's delayed ACK (40 ms).
        if self.shared.mode == Mode::KeepAlive || self.shared.tls.is_some() {
            socket.set_nodelay(true).map_err(|_| Failure::Connect)?;
        }
        if let Some(usecs) = self.shared.busy_poll {
            // The probe at start said the kernel takes it.
            let _ = crate::busy_poll::set(socket.as_raw_fd(), usecs);
        }
        let began = Instant::now();
        if self.ring.is_some() {
            self.conns[i].opened(socket, began, true);
            return Ok(());
        }
        self.connect(i, socket, began)
    }

    /// Writes what is left of the request; on completion waits for the response.
    fn send(&mut self, i: usize) {
        if self.ring.is_some() {
            self.ring_send(i);
        } else {
            self.epoll_send(i);
        }
    }

    /// Takes `n` bytes just read into connection `i`'s buffer (0: the server closed); true
    /// when the response needs more.
    fn received(&mut self, i: usize, n: usize) -> bool {
        let conn = &mut self.conns[i];
        if n == 0 {
            let result = match conn.head {
                Some(head) if head.body == Body::UntilClose => Ok(false),
                Some(_) => Err(Failure::ShortBody),
                None => Err(Failure::Reset),
            };
            self.complete(i, result);
            return false;
        }
        let now = Instant::now();
        conn.first_byte.get_or_insert(now);
        conn.reads += 1;
        conn.bytes += n as u64;
        conn.end += n;
        match conn::consume(conn) {
            Read::More => true,
            Read::Done(reuse) => {
                self.complete(i, Ok(reuse));
                false
            }
            Read::Failed(failure) => {
                self.finish(i, Err(failure));
                false
            }
        }
    }

    /// A response ended (or the connection closed where that ends it).
    fn complete(&mut self, i: usize, result: Result<bool, Failure>) {
        match result {
            Ok(reuse) => {
                let keep = reuse && self.shared.mode == Mode::KeepAlive;
                if !keep {
                    self.conns[i].close();
                }
                self.finish(i, Ok(()));
            }
            Err(failure) => self.finish(i, Err(failure)),
        }
    }

    /// Records the exchange on connection `i` and starts what comes next.
    fn finish(&mut self, i: usize, result: Result<(), Failure>) {
        let now = Instant::now();
        let shared = Rc::clone(&self.shared);
        let refused = result.is_ok() && self.conns[i].head.is_some_and(|h| h.status == 503);
        self.account(i, result, now);
        if self.users.is_some() {
            self.user_done(i, result.is_ok(), now);
            return;
        }
        let backoff = matches!(
            result,
            Err(Failure::ConnectRefused | Failure::Connect | Failure::Tls)
        );
        if backoff {
            self.timers.push(Reverse((now + CONNECT_BACKOFF, i)));
        } else if refused && !shared.backoff_503.is_zero() && shared.schedule.is_none() {
            self.timers.push(Reverse((now + shared.backoff_503, i)));
        } else if shared.schedule.is_some() {
            // Open loop: idle until the main loop hands it the next due slot.
            self.conns[i].idle_since = now;
            self.idle.push_back(i);
        } else if !shared.think.is_zero() {
            self.timers.push(Reverse((now + shared.think, i)));
        } else {
            self.start(i, now, None);
        }
    }

    /// Counts the exchange that ended on connection `i` at `now` (a failure closes it).
    fn account(&mut self, i: usize, result: Result<(), Failure>, now: Instant) {
        let shared = &self.shared;
        let conn = &mut self.conns[i];
        conn.phase = Phase::Idle;
        let class = conn.class as usize;
        let mut recorder = shared.recorder.borrow_mut();
        if let Some((took, resumed)) = conn.handshake.take() {
            count_handshake(&mut recorder, class, took, resumed);
        }
        if let Some(connect) = conn.connect {
            record(
                &mut recorder.classes[class].connect,
                connect.as_nanos() as u64,
            );
        }
        if let Err(failure) = result {
            count_failure(&mut recorder, class, failure);
            conn.close();
            return;
        }
        // A response that came in one read ended when its first byte came.
        let end = match conn.first_byte {
            Some(at) if conn.reads == 1 => at,
            _ => now,
        };
        let latency = nanos(end, conn.from);
        let status = conn.head.map_or(0, |h| h.status);
        count_response(
            &mut recorder,
            &shared.expect,
            conn::Response {
                class,
                status,
                logged: conn.logged,
                bytes: conn.bytes,
                latency,
                ttfb: nanos(conn.first_byte.unwrap_or(end), conn.sent),
            },
        );
        if shared.schedule.is_some() {
            record(
                &mut recorder.classes[class].uncorrected,
                nanos(end, conn.sent),
            );
        }
        let left = shared.samples_left.get();
        if left > 0 {
            shared.samples_left.set(left - 1);
            let sample = (nanos(end, shared.start), latency, conn.class);
            recorder.samples.push(sample);
        }
    }

    /// Counts the requests still in flight when the run ends at `at` (sent, or connecting,
    /// and unanswered) with their ages, so that a server that accepts and never answers shows
    /// as such instead of as a run of no requests and no errors.
    fn count_unfinished(&mut self, at: Instant) {
        let mut recorder = self.shared.recorder.borrow_mut();
        for conn in self.conns.iter().filter(|c| c.phase != Phase::Idle) {
            let class = conn.class as usize;
            record(
                &mut recorder.classes[class].unfinished,
                nanos(at, conn.from),
            );
        }
    }

    /// Fails the requests that ran past their deadline.
    fn scan_timeouts(&mut self, now: Instant) {
        for i in 0..self.conns.len() {
            let conn = &self.conns[i];
            if conn.phase != Phase::Idle && conn.deadline <= now {
                self.finish(i, Err(Failure::Timeout));
            }
        }
    }
}
