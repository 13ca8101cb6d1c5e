//! The hot path: one loop per worker thread that drives all of the thread's connections
//! through an epoll set of its own, like wrk's event loop but with fewer system calls.
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

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::rc::Rc;
use std::time::{Duration, Instant};

use socket2::{Domain, Socket, Type};
use webscope_http::response::{self, Body, Chunked, Head};
use webscope_workload::Rng;

use crate::config::{Io, Mode};
use crate::recorder::{record, Failure, STATUSES};
use crate::worker::{Intervals, Shared};

/// Bytes buffered per connection: a response head must fit; bodies stream through.
const BUFFER: usize = 32 * 1024;

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

/// Events collected per `epoll_wait`.
const EVENTS: usize = 256;

#[path = "engine_uring.rs"]
mod uring;

/// Where a connection stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// No request in flight.
    Idle,
    /// Writing the request; this many bytes are out.
    Sending(usize),
    /// Reading the response.
    Receiving,
}

/// One client connection and the request in flight on it.
struct Conn {
    socket: Option<Socket>,
    phase: Phase,
    buf: Box<[u8]>,
    /// Buffered bytes not yet consumed: `buf[start..end]`.
    start: usize,
    end: usize,
    /// The request in flight: its table index, class, and times.
    entry: usize,
    class: u16,
    from: Instant,
    sent: Instant,
    deadline: Instant,
    connect_began: Option<Instant>,
    connect: Option<Duration>,
    /// Whether the socket may still be connecting (send said ENOTCONN).
    connecting: bool,
    /// The response so far.
    head: Option<Head>,
    left: u64,
    chunked: Chunked,
    bytes: u64,
    reads: u32,
    first_byte: Option<Instant>,
    /// Open loop: since when the connection has been idle.
    idle_since: Instant,
    rng: Rng,
    /// Load groups: the connection's one request.
    fixed: Option<usize>,
    /// The request in flight is a HEAD (its response has no body).
    head_request: bool,
    /// https: the session, for the connection's life.
    tls: Option<Box<rustls::ClientConnection>>,
    /// https: when the handshake began (the first flight went out), and what it took.
    handshake_began: Option<Instant>,
    handshake: Option<(Duration, bool)>,
    /// io_uring: operations submitted and not yet completed on this connection (its socket
    /// and buffer stay untouched until they have), its socket's generation (completions of an
    /// earlier socket are recognised and dropped), and a request that waits for them.
    inflight: u8,
    generation: u32,
    restart: bool,
}

impl Conn {
    fn new(now: Instant, rng: Rng, fixed: Option<usize>) -> Conn {
        Conn {
            socket: None,
            phase: Phase::Idle,
            buf: vec![0u8; BUFFER].into_boxed_slice(),
            start: 0,
            end: 0,
            entry: 0,
            class: 0,
            from: now,
            sent: now,
            deadline: now,
            connect_began: None,
            connect: None,
            connecting: false,
            head: None,
            left: 0,
            chunked: Chunked::new(),
            bytes: 0,
            reads: 0,
            first_byte: None,
            idle_since: now,
            rng,
            fixed,
            head_request: false,
            tls: None,
            handshake_began: None,
            handshake: None,
            inflight: 0,
            generation: 0,
            restart: false,
        }
    }

    fn close(&mut self) {
        self.generation = self.generation.wrapping_add(1);
        if self.inflight > 0 {
            // io_uring still reads into the buffer or writes from the socket: shut it down so
            // they complete now, and close it once they have (`uring::on_completion`).
            if let Some(socket) = &self.socket {
                let _ = socket.shutdown(std::net::Shutdown::Both);
            }
            self.tls = None;
            return;
        }
        // Closing the descriptor also removes it from the epoll set.
        self.socket = None;
        self.tls = None;
        self.start = 0;
        self.end = 0;
    }
}

/// What reading found.
enum Read {
    /// The response is complete; may the connection be reused?
    Done(bool),
    /// Wait for more bytes.
    More,
    /// The exchange failed.
    Failed(Failure),
}

/// The per-thread engine.
pub(crate) struct Engine {
    shared: Rc<Shared>,
    /// The engine's epoll set (`epoll` is its descriptor number).
    _epoll_owner: OwnedFd,
    epoll: RawFd,
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
}

impl Engine {
    pub(crate) fn new(
        shared: Rc<Shared>,
        connections: usize,
        limit: usize,
        seed: u64,
        io: Io,
    ) -> io::Result<Engine> {
        // SAFETY: epoll_create1 returns a new descriptor we own, or -1.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh descriptor owned by nobody else.
        let owned = unsafe { OwnedFd::from_raw_fd(fd) };
        let now = Instant::now();
        let shared_addr = shared.addr;
        let scan_period =
            (shared.timeout / 10).clamp(Duration::from_millis(1), Duration::from_millis(100));
        let mut engine = Engine {
            shared,
            epoll: owned.as_raw_fd(),
            _epoll_owner: owned,
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
        for i in 0..self.conns.len() {
            if open_loop {
                self.idle.push_back(i);
            } else {
                self.start(i, now, None);
            }
        }
        let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; EVENTS];
        loop {
            let now = Instant::now();
            if intervals.stop_requested() {
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
                let last = boundary >= self.shared.end;
                if !intervals.snapshot(&self.shared, boundary, last) {
                    return;
                }
                continue;
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
                continue;
            }
            // SAFETY: the buffer holds EVENTS entries.
            let n = unsafe { libc::epoll_wait(self.epoll, events.as_mut_ptr(), EVENTS as i32, ms) };
            for event in &events[..n.max(0) as usize] {
                self.on_event(event.u64 as usize, event.events);
            }
        }
    }

    /// The next time something must happen without a socket event.
    fn next_wake(&self) -> Instant {
        let mut wake = self.next_scan;
        if let Some(Reverse((at, _))) = self.timers.peek() {
            wake = wake.min(*at);
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

    fn fire_timers(&mut self, now: Instant) {
        while let Some(&Reverse((at, i))) = self.timers.peek() {
            if at > now {
                break;
            }
            self.timers.pop();
            if self.shared.schedule.is_some() {
                self.conns[i].idle_since = at;
                self.idle.push_back(i);
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
            let intended = schedule.claim();
            // A connection idle at the slot's time sends on time (latency from the send); one
            // that only became free after it kept the request waiting: latency counts from
            // the intended time (the coordinated-omission correction).
            let from = (self.conns[i].idle_since > intended).then_some(intended);
            self.start(i, now, from);
        }
    }

    /// Starts a request on connection `i` (opening it if needed).
    fn start(&mut self, i: usize, now: Instant, from: Option<Instant>) {
        let shared = Rc::clone(&self.shared);
        let entry_index = {
            let conn = &mut self.conns[i];
            match conn.fixed {
                Some(index) => index,
                None => shared.requests.pick_index(&mut conn.rng),
            }
        };
        let entry = shared.requests.entry(entry_index);
        let conn = &mut self.conns[i];
        if conn.inflight > 0 {
            // io_uring: the last socket's operations are still completing.
            conn.restart = true;
            return;
        }
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

    /// Opens a non-blocking socket, connects and registers it (io_uring: a blocking socket,
    /// connected by the ring with the request's send).
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
            let conn = &mut self.conns[i];
            conn.connect_began = Some(began);
            conn.connecting = true;
            conn.socket = Some(socket);
            conn.start = 0;
            conn.end = 0;
            return Ok(());
        }
        match socket.connect(&addr.into()) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
            Err(e) => return Err(connect_failure(&e)),
        }
        let mut event = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLOUT | libc::EPOLLRDHUP | libc::EPOLLET) as u32,
            u64: i as u64,
        };
        // SAFETY: registering a descriptor we own with our epoll set.
        let added = unsafe {
            libc::epoll_ctl(
                self.epoll,
                libc::EPOLL_CTL_ADD,
                socket.as_raw_fd(),
                &mut event,
            )
        };
        if added != 0 {
            return Err(Failure::Connect);
        }
        let tls = match &self.shared.tls {
            Some((config, name)) => Some(Box::new(
                rustls::ClientConnection::new(std::sync::Arc::clone(config), name.clone())
                    .map_err(|_| Failure::Tls)?,
            )),
            None => None,
        };
        let conn = &mut self.conns[i];
        conn.tls = tls;
        conn.handshake_began = None;
        conn.connect_began = Some(began);
        conn.connecting = false;
        conn.socket = Some(socket);
        conn.start = 0;
        conn.end = 0;
        Ok(())
    }

    /// Writes what is left of the request; on completion waits for the response.
    fn send(&mut self, i: usize) {
        if self.ring.is_some() {
            self.ring_send(i);
            return;
        }
        let shared = Rc::clone(&self.shared);
        let conn = &mut self.conns[i];
        let Phase::Sending(done) = conn.phase else {
            return;
        };
        let Some(socket) = &conn.socket else {
            return;
        };
        let request = &shared.requests.entry(conn.entry).bytes;
        let fd = socket.as_raw_fd();
        if let Some(tls) = conn.tls.as_mut() {
            // The request goes to rustls once, whole; what goes out are its records.
            if done == 0 && std::io::Write::write_all(&mut tls.writer(), request).is_err() {
                self.finish(i, Err(Failure::Tls));
                return;
            }
            conn.phase = Phase::Sending(request.len());
            let failure = match crate::engine_tls::flush(tls, fd) {
                Ok(true) => {
                    if let Some(began) = conn.connect_began.take() {
                        let now = Instant::now();
                        conn.connect = Some(now - began);
                        if tls.is_handshaking() {
                            conn.handshake_began = Some(now);
                        }
                    }
                    conn.phase = Phase::Receiving;
                    return;
                }
                Ok(false) => return,
                Err(e) => match send_failure(conn, &e) {
                    Some(failure) => failure,
                    None => return,
                },
            };
            self.finish(i, Err(failure));
            return;
        }
        let failure = match send(fd, &request[done..]) {
            Ok(n) if done + n == request.len() => {
                if let Some(began) = conn.connect_began.take() {
                    conn.connect = Some(began.elapsed());
                }
                conn.phase = Phase::Receiving;
                return;
            }
            Ok(n) => {
                conn.phase = Phase::Sending(done + n);
                return;
            }
            Err(e) => match send_failure(conn, &e) {
                Some(failure) => failure,
                None => return,
            },
        };
        self.finish(i, Err(failure));
    }

    fn on_event(&mut self, i: usize, events: u32) {
        let Some(conn) = self.conns.get_mut(i) else {
            return;
        };
        match conn.phase {
            Phase::Idle => {
                // The server closed an idle connection (or reset it): reopen on next use.
                if events & (libc::EPOLLRDHUP | libc::EPOLLHUP | libc::EPOLLERR) as u32 != 0 {
                    conn.close();
                }
            }
            Phase::Sending(_) => {
                if conn.connecting && events & (libc::EPOLLERR | libc::EPOLLHUP) as u32 != 0 {
                    let error = conn
                        .socket
                        .as_ref()
                        .and_then(|s| s.take_error().ok().flatten())
                        .unwrap_or_else(|| io::ErrorKind::ConnectionRefused.into());
                    self.finish(i, Err(connect_failure(&error)));
                    return;
                }
                self.send(i);
                if self.conns[i].phase == Phase::Receiving {
                    self.receive(i);
                }
            }
            // A bare "writable" (the connect completing) says nothing about the response: no
            // recv() for it.
            Phase::Receiving
                if events
                    & (libc::EPOLLIN | libc::EPOLLRDHUP | libc::EPOLLHUP | libc::EPOLLERR)
                        as u32
                    != 0 =>
            {
                self.receive(i)
            }
            // TLS records that did not fit in the socket before (rare: a handshake flight).
            Phase::Receiving if conn.tls.as_ref().is_some_and(|t| t.wants_write()) => {
                if let (Some(tls), Some(socket)) = (conn.tls.as_mut(), conn.socket.as_ref()) {
                    if crate::engine_tls::flush(tls, socket.as_raw_fd()).is_err() {
                        self.finish(i, Err(Failure::Reset));
                    }
                }
            }
            Phase::Receiving => {}
        }
    }

    /// Reads until the response is complete or the socket is drained.
    fn receive(&mut self, i: usize) {
        loop {
            let conn = &mut self.conns[i];
            let Some(socket) = &conn.socket else {
                return;
            };
            if conn.end == conn.buf.len() {
                self.finish(i, Err(Failure::Parse));
                return;
            }
            let fd = socket.as_raw_fd();
            let got = match conn.tls.as_mut() {
                Some(tls) => {
                    let got = crate::engine_tls::read(tls, fd, &mut conn.buf[conn.end..]);
                    if let Some(began) = conn.handshake_began {
                        if !tls.is_handshaking() {
                            let resumed =
                                tls.handshake_kind() == Some(rustls::HandshakeKind::Resumed);
                            conn.handshake = Some((began.elapsed(), resumed));
                            conn.handshake_began = None;
                        }
                    }
                    got
                }
                None => match recv(fd, &mut conn.buf[conn.end..]) {
                    Ok(n) => crate::engine_tls::Got::Bytes(n),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        crate::engine_tls::Got::WouldBlock
                    }
                    Err(e) => crate::engine_tls::Got::Io(e),
                },
            };
            let n = match got {
                crate::engine_tls::Got::Bytes(n) => n,
                crate::engine_tls::Got::WouldBlock => return,
                crate::engine_tls::Got::Io(e) => {
                    self.finish(i, Err(io_failure(&e)));
                    return;
                }
                crate::engine_tls::Got::Tls(e) => {
                    let mut recorder = self.shared.recorder.borrow_mut();
                    if recorder.tls_error.is_none() {
                        recorder.tls_error = Some(crate::tls::cause(&e));
                    }
                    drop(recorder);
                    self.finish(i, Err(Failure::Tls));
                    return;
                }
            };
            if !self.received(i, n) {
                return;
            }
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
        match consume(conn) {
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
        {
            let conn = &mut self.conns[i];
            conn.phase = Phase::Idle;
            let mut recorder = shared.recorder.borrow_mut();
            let handshake = conn.handshake.take();
            match handshake {
                Some((_, true)) => recorder.tls_resumed += 1,
                Some((_, false)) => recorder.tls_full += 1,
                None => {}
            }
            let stats = &mut recorder.classes[conn.class as usize];
            if let Some(connect) = conn.connect {
                record(&mut stats.connect, connect.as_nanos() as u64);
            }
            if let Some((took, _)) = handshake {
                record(&mut stats.handshake, took.as_nanos() as u64);
            }
            match result {
                Ok(()) => {
                    let status = conn.head.map_or(0, |h| h.status);
                    // A response that came in one read ended when its first byte came.
                    let end = match conn.first_byte {
                        Some(at) if conn.reads == 1 => at,
                        _ => now,
                    };
                    stats.requests += 1;
                    stats.bytes += conn.bytes;
                    record(&mut stats.latency, nanos(end, conn.from));
                    if shared.schedule.is_some() {
                        record(&mut stats.uncorrected, nanos(end, conn.sent));
                    }
                    record(
                        &mut stats.ttfb,
                        nanos(conn.first_byte.unwrap_or(end), conn.sent),
                    );
                    if status >= 400 {
                        stats.failures[Failure::BadStatus as usize] += 1;
                    }
                    let left = shared.samples_left.get();
                    if left > 0 {
                        shared.samples_left.set(left - 1);
                        let sample = (nanos(end, shared.start), nanos(end, conn.from), conn.class);
                        recorder.samples.push(sample);
                    }
                    recorder.statuses[(status as usize).min(STATUSES - 1)] += 1;
                }
                Err(failure) => {
                    stats.failures[failure as usize] += 1;
                    conn.close();
                }
            }
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

/// Consumes what is buffered of the response.
fn consume(conn: &mut Conn) -> Read {
    let head = match conn.head {
        Some(head) => head,
        None => loop {
            match response::parse_head(&conn.buf[conn.start..conn.end], conn.head_request) {
                Ok(Some(head)) if head.is_interim() => conn.start += head.len,
                Ok(Some(head)) => {
                    conn.start += head.len;
                    conn.head = Some(head);
                    conn.left = match head.body {
                        Body::Length(n) => n,
                        _ => 0,
                    };
                    conn.chunked = Chunked::new();
                    break head;
                }
                Ok(None) => {
                    if conn.start > 0 {
                        conn.buf.copy_within(conn.start..conn.end, 0);
                        conn.end -= conn.start;
                        conn.start = 0;
                    }
                    return Read::More;
                }
                Err(_) => return Read::Failed(Failure::Parse),
            }
        },
    };
    let done = match head.body {
        Body::Empty => true,
        Body::Length(_) => {
            let take = conn.left.min((conn.end - conn.start) as u64);
            conn.start += take as usize;
            conn.left -= take;
            conn.left == 0
        }
        Body::Chunked => match conn.chunked.feed(&conn.buf[conn.start..conn.end]) {
            Ok(progress) => {
                conn.start += progress.consumed;
                progress.done
            }
            Err(_) => return Read::Failed(Failure::Parse),
        },
        Body::UntilClose => {
            conn.start = conn.end;
            false
        }
    };
    if conn.start == conn.end {
        conn.start = 0;
        conn.end = 0;
    }
    if done {
        Read::Done(head.keep_alive)
    } else {
        Read::More
    }
}

pub(crate) fn send(fd: RawFd, bytes: &[u8]) -> io::Result<usize> {
    // SAFETY: sending from a valid buffer on a descriptor we own; MSG_NOSIGNAL turns a
    // closed peer into EPIPE instead of a signal.
    let n = unsafe { libc::send(fd, bytes.as_ptr().cast(), bytes.len(), libc::MSG_NOSIGNAL) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

pub(crate) fn recv(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: receiving into a valid buffer on a descriptor we own.
    let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

fn nanos(later: Instant, earlier: Instant) -> u64 {
    later.saturating_duration_since(earlier).as_nanos() as u64
}

/// What a failed send means: None when it only has to wait (the socket is full, or still
/// connecting: the connection is marked so), else the failure to record.
fn send_failure(conn: &mut Conn, e: &io::Error) -> Option<Failure> {
    if e.kind() == io::ErrorKind::WouldBlock {
        return None;
    }
    if e.raw_os_error() == Some(libc::ENOTCONN) {
        conn.connecting = true;
        return None;
    }
    Some(if conn.connect_began.is_some() {
        connect_failure(e)
    } else {
        io_failure(e)
    })
}

/// A failure while connecting.
fn connect_failure(e: &io::Error) -> Failure {
    match e.kind() {
        io::ErrorKind::ConnectionRefused => Failure::ConnectRefused,
        io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe => Failure::Reset,
        _ => Failure::Connect,
    }
}

/// A failure on an established connection.
fn io_failure(e: &io::Error) -> Failure {
    match e.kind() {
        io::ErrorKind::ConnectionRefused => Failure::ConnectRefused,
        io::ErrorKind::TimedOut => Failure::Timeout,
        _ => Failure::Reset,
    }
}
