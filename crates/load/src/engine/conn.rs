//! What the engines share: one client connection's state and the request in flight on it, the
//! reading of a response in place from the connection's buffer, the raw `send` and `recv`
//! calls, what a failed call means, and the accounting of a finished exchange into the
//! thread's recorder (the HTTP/2 engine counts its streams with the same calls).
//!
//! Not the engines' scheduling (timers, open-loop slots: the engine's loop in `mod.rs`) nor
//! their ways of waiting for sockets (`epoll.rs`, `uring.rs`): only the state those act on.

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

use socket2::Socket;
use webscope_http::response::{self, Body, Chunked, Head};
use webscope_workload::Rng;

use crate::recorder::{record, Failure, Recorder, STATUSES};
use crate::Expect;

/// Bytes buffered per connection: a response head must fit; bodies stream through.
const BUFFER: usize = 32 * 1024;

/// Where a connection stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    /// No request in flight.
    Idle,
    /// Writing the request; this many bytes are out.
    Sending(usize),
    /// Reading the response.
    Receiving,
}

/// One client connection and the request in flight on it.
pub(super) struct Conn {
    pub(super) socket: Option<Socket>,
    pub(super) phase: Phase,
    pub(super) buf: Box<[u8]>,
    /// Buffered bytes not yet consumed: `buf[start..end]`.
    pub(super) start: usize,
    pub(super) end: usize,
    /// The request in flight: its table index, class, and times.
    pub(super) entry: usize,
    pub(super) class: u16,
    pub(super) from: Instant,
    pub(super) sent: Instant,
    pub(super) deadline: Instant,
    pub(super) connect_began: Option<Instant>,
    pub(super) connect: Option<Duration>,
    /// Whether the socket may still be connecting (send said ENOTCONN).
    pub(super) connecting: bool,
    /// The response so far.
    pub(super) head: Option<Head>,
    left: u64,
    chunked: Chunked,
    pub(super) bytes: u64,
    pub(super) reads: u32,
    pub(super) first_byte: Option<Instant>,
    /// Open loop: since when the connection has been idle.
    pub(super) idle_since: Instant,
    pub(super) rng: Rng,
    /// Load groups: the connection's one request.
    pub(super) fixed: Option<usize>,
    /// The request in flight is a HEAD (its response has no body).
    pub(super) head_request: bool,
    /// A replay: the slot handed to the connection for its next request, and the status the
    /// log gave the request in flight.
    pub(super) slot: Option<crate::replay::Slot>,
    pub(super) logged: Option<u16>,
    /// `--users`: the request a user's page view asks of this connection next.
    pub(super) chosen: Option<crate::users::Request>,
    /// https: the session, for the connection's life.
    pub(super) tls: Option<Box<rustls::ClientConnection>>,
    /// https: when the handshake began (the first flight went out), and what it took.
    pub(super) handshake_began: Option<Instant>,
    pub(super) handshake: Option<(Duration, bool)>,
    /// io_uring: operations submitted and not yet completed on this connection (its socket
    /// and buffer stay untouched until they have), its socket's generation (completions of an
    /// earlier socket are recognised and dropped), and a request that waits for them.
    pub(super) inflight: u8,
    pub(super) generation: u32,
    pub(super) restart: bool,
}

impl Conn {
    pub(super) fn new(now: Instant, rng: Rng, fixed: Option<usize>) -> Conn {
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
            slot: None,
            logged: None,
            chosen: None,
            tls: None,
            handshake_began: None,
            handshake: None,
            inflight: 0,
            generation: 0,
            restart: false,
        }
    }

    pub(super) fn close(&mut self) {
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

    /// The socket to read more of the response from: None without one (it was closed), the
    /// failure when the buffer is full (a head larger than it).
    pub(super) fn readable(&self) -> Option<Result<RawFd, Failure>> {
        let socket = self.socket.as_ref()?;
        Some(if self.end == self.buf.len() {
            Err(Failure::Parse)
        } else {
            Ok(socket.as_raw_fd())
        })
    }

    /// A fresh socket: nothing buffered, the connect timed from `began`.
    pub(super) fn opened(&mut self, socket: Socket, began: Instant, connecting: bool) {
        self.connect_began = Some(began);
        self.connecting = connecting;
        self.socket = Some(socket);
        self.start = 0;
        self.end = 0;
    }
}

/// What reading found.
pub(super) enum Read {
    /// The response is complete; may the connection be reused?
    Done(bool),
    /// Wait for more bytes.
    More,
    /// The exchange failed.
    Failed(Failure),
}

/// Consumes what is buffered of the response.
pub(super) fn consume(conn: &mut Conn) -> Read {
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

pub(super) fn send(fd: RawFd, bytes: &[u8]) -> io::Result<usize> {
    // SAFETY: sending from a valid buffer on a descriptor we own; MSG_NOSIGNAL turns a
    // closed peer into EPIPE instead of a signal.
    let n = unsafe { libc::send(fd, bytes.as_ptr().cast(), bytes.len(), libc::MSG_NOSIGNAL) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

pub(super) fn recv(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: receiving into a valid buffer on a descriptor we own.
    let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

pub(super) fn nanos(later: Instant, earlier: Instant) -> u64 {
    later.saturating_duration_since(earlier).as_nanos() as u64
}

/// What a failed send means: None when it only has to wait (the socket is full, or still
/// connecting: the connection is marked so), else the failure to record.
pub(super) fn send_failure(conn: &mut Conn, e: &io::Error) -> Option<Failure> {
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
pub(super) fn connect_failure(e: &io::Error) -> Failure {
    match e.kind() {
        io::ErrorKind::ConnectionRefused => Failure::ConnectRefused,
        io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe => Failure::Reset,
        _ => Failure::Connect,
    }
}

/// A failure on an established connection.
pub(super) fn io_failure(e: &io::Error) -> Failure {
    match e.kind() {
        io::ErrorKind::ConnectionRefused => Failure::ConnectRefused,
        io::ErrorKind::TimedOut => Failure::Timeout,
        _ => Failure::Reset,
    }
}

/// One complete response, as every engine counts it (times in nanoseconds).
pub(super) struct Response {
    pub(super) class: usize,
    pub(super) status: u16,
    /// A replay: the status the log had for this request.
    pub(super) logged: Option<u16>,
    pub(super) bytes: u64,
    pub(super) latency: u64,
    pub(super) ttfb: u64,
}

/// Counts a complete response: its class's requests, bytes, latency and time to first byte,
/// the status, a replay's mismatch with the logged status, and, when the run's `expect` calls
/// it an error (the one rule, [`Expect::is_error`]), its class's `bad_status`.
#[inline]
pub(super) fn count_response(recorder: &mut Recorder, expect: &Expect, response: Response) {
    if let Some(logged) = response.logged.filter(|l| *l != response.status) {
        *recorder
            .mismatches
            .entry((logged, response.status))
            .or_insert(0) += 1;
    }
    let stats = &mut recorder.classes[response.class];
    stats.requests += 1;
    stats.bytes += response.bytes;
    record(&mut stats.latency, response.latency);
    record(&mut stats.ttfb, response.ttfb);
    if expect.is_error(response.status, response.logged) {
        stats.bad_status += 1;
    }
    recorder.statuses[(response.status as usize).min(STATUSES - 1)] += 1;
}

/// Counts a failed exchange of class `class`.
#[inline]
pub(super) fn count_failure(recorder: &mut Recorder, class: usize, failure: Failure) {
    recorder.classes[class].failures[failure as usize] += 1;
}

/// Counts a TLS handshake, full or resumed, and its time under class `class`.
pub(super) fn count_handshake(
    recorder: &mut Recorder,
    class: usize,
    took: Duration,
    resumed: bool,
) {
    if resumed {
        recorder.tls_resumed += 1;
    } else {
        recorder.tls_full += 1;
    }
    record(
        &mut recorder.classes[class].handshake,
        took.as_nanos() as u64,
    );
}

/// Keeps why the first TLS failure failed (`why` is only asked for the first).
pub(super) fn note_tls_error(recorder: &mut Recorder, why: impl FnOnce() -> String) {
    if recorder.tls_error.is_none() {
        recorder.tls_error = Some(why());
    }
}
