//! HTTP/2 over TLS (ALPN h2): the `h2` crate does the framing, HPACK and flow control; each
//! stream is answered by `crate::exchange`, as an HTTP/1.1 request is, from the same caches,
//! with the same access log and timing.
//!
//! One method table for both protocols: a stream's pseudo-headers and fields become a
//! [`Request`] as the HTTP/1.1 parser would have produced it, [`respond`] writes its usual
//! HTTP/1.1 head, and that head is read back (httparse) into the HTTP/2 response, minus the
//! connection-specific fields HTTP/2 forbids. Re-reading a head we just wrote costs well under
//! a microsecond; having two response builders that could disagree on a 304 or a 416 would
//! cost more. Bodies leave as DATA frames within the peer's flow-control window; large files
//! are read in chunks (no sendfile: h2 frames and TLS encrypts in user space).

use std::cell::{Cell, RefCell};
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use h2::server::SendResponse;
use h2::SendStream;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::Notify;
use tokio::time::{sleep_until, Instant};
use webscope_http::request::{Body, Method, Request, Version};

use super::h2_meter::{Ledger, Meter};
use super::transport::Transport;
use crate::exchange::{self, Exchange, Peer, Terms};
use crate::fields::translate;
use crate::files::read_at;
use crate::respond::{Reply, Scratch, Tail};
use crate::worker::Worker;

/// Streams a client may open at once (nginx's `http2_max_concurrent_streams`).
const MAX_STREAMS: u32 = 128;
/// Our receive windows: requests are small, but uploads to be discarded should not stall.
const WINDOW: u32 = 1 << 20;
/// Bytes of a large file read per DATA batch (at most: a batch is read only once the peer's
/// window and h2's send buffer have room for it, so nothing is read ahead).
const FILE_CHUNK: u64 = 64 * 1024;
/// Bytes h2 may hold unsent per stream (its default is 400 KiB): what a client that opens
/// its windows wide and reads nothing can make a connection hold is MAX_STREAMS times this
/// (8 MiB), not its files.
const SEND_BUFFER: usize = 64 * 1024;
/// How long a connection told GOAWAY, with no stream open, may take to close before it is
/// closed: a well-behaved client answers the GOAWAY's PING within a round trip (nginx
/// closes at once); one that does not would otherwise hold its slot forever.
const GOAWAY_GRACE: Duration = Duration::from_secs(1);
/// A connection whose open streams could make h2 hold this much (streams × SEND_BUFFER) has
/// the allocator give memory back to the kernel once it ends ([`trim_soon`]).
const TRIM_ABOVE: usize = 1 << 20;
/// A stream that waits again within this much of its last wait's end is in the same stall:
/// the send timeout's clock is not restarted.
const SAME_WAIT: Duration = Duration::from_millis(100);
/// A stalled connection looks for progress (TCP_INFO) an eighth of the send timeout apart,
/// and at least this often.
const LOOK_AT_MOST_EVERY: Duration = Duration::from_secs(1);
/// Connections that end within this much of each other share one trim.
const TRIM_DELAY: Duration = Duration::from_millis(200);

thread_local! {
    /// Whether this worker thread has a trim coming.
    static TRIM_SCHEDULED: Cell<bool> = const { Cell::new(false) };
}

/// Serves HTTP/2 on an established TLS transport until the client or a rule ends it.
pub(crate) async fn serve(
    transport: Transport,
    peer: SocketAddr,
    worker: Rc<Worker>,
    accepted: u64,
    handshake: u64,
) {
    let served = match transport {
        Transport::Tls(stream) => {
            let socket = stream.get_ref().0.as_raw_fd();
            run(*stream, socket, peer, &worker, handshake).await
        }
        Transport::Ktls(stream) => {
            let socket = stream.get_ref().as_raw_fd();
            run(*stream, socket, peer, &worker, handshake).await
        }
        // ALPN happens only under TLS.
        Transport::Tcp(_) => 0,
    };
    worker.timing.end_connection(accepted, served);
}

/// `socket` is `io`'s TCP socket (to reset it at the send timeout).
async fn run<T>(io: T, socket: RawFd, peer: SocketAddr, worker: &Rc<Worker>, handshake: u64) -> u64
where
    T: AsyncRead + AsyncWrite + Unpin + 'static,
{
    let config = &worker.config;
    worker.timing.h2_connection();
    let mut builder = h2::server::Builder::new();
    // A header block is capped as an HTTP/1.1 head is (#51 §1): over it, h2 answers 431 on the
    // stream, and ends the connection (GOAWAY) whose block grows past four times the cap or
    // runs to more CONTINUATION frames than the cap needs. Left at h2's default (16 MiB), a
    // block that never ended held 18-29 MB per connection.
    let max_head = u32::try_from(config.limits.max_head).unwrap_or(u32::MAX);
    builder
        .max_header_list_size(max_head)
        .max_concurrent_streams(MAX_STREAMS)
        .initial_window_size(WINDOW)
        .initial_connection_window_size(WINDOW)
        .max_send_buffer_size(SEND_BUFFER);
    let ledger = Rc::new(RefCell::new(Ledger::default()));
    let flood = Rc::new(Notify::new());
    let io = Meter::new(io, Rc::clone(&ledger), Rc::clone(&flood));
    let start = tokio::time::timeout(config.header_timeout, builder.handshake::<_, Bytes>(io));
    let Ok(Ok(mut connection)) = start.await else {
        return 0;
    };
    let peer = Rc::new(Peer::new(peer, worker));
    let open = Rc::new(Open::new(socket, config.send_timeout));
    let mut handshake = handshake;
    let mut served = 0u64;
    // Set once GOAWAY is sent: from then on the connection ends with its last stream.
    let mut closing: Option<Instant> = None;
    let mut flooded = false;
    loop {
        // Idle means no stream open, whatever else the client sends (PINGs, SETTINGS,
        // WINDOW_UPDATEs do not keep a connection alive): the keep-alive timeout runs from
        // the end of the last stream, and after GOAWAY the grace from the later of the two.
        let idle = open.count.get() == 0;
        let since = open.idle_since.get();
        let deadline = match closing {
            None => since + config.keepalive_timeout,
            Some(goaway) => since.max(goaway) + GOAWAY_GRACE,
        };
        let next = tokio::select! {
            biased;
            // More control frames than its requests allow (`h2_guard.rs`): no more is read
            // from this client, and it is told why.
            () = flood.notified(), if !flooded => {
                flooded = true;
                worker.timing.h2_flood();
                connection.abrupt_shutdown(h2::Reason::ENHANCE_YOUR_CALM);
                closing.get_or_insert_with(Instant::now);
                continue;
            }
            next = connection.accept() => next,
            () = worker.shutdown_signal(), if closing.is_none() => {
                connection.graceful_shutdown();
                closing = Some(Instant::now());
                continue;
            }
            () = open.went_idle.notified(), if !idle => continue,
            () = open.began_waiting.notified(), if !idle && open.waiting.get() == 0 => continue,
            // The send timeout, as HTTP/1.1 has it: a stream waiting to send that has seen no
            // progress (the client's kernel acknowledged none of our bytes) for that long ends
            // the connection, and what h2 holds for it is freed. This runs whether or not
            // the client sends anything: a silent one is cut as one that PINGs.
            () = sleep_until(open.next_look()), if open.waiting.get() > 0 => {
                // Bytes acknowledged that woke nothing (room below the EPOLLOUT mark) count.
                open.look_for_progress();
                if open.progress.get() + config.send_timeout <= Instant::now() {
                    crate::io::reset_on_close(socket);
                    break;
                }
                continue;
            }
            () = sleep_until(deadline), if idle => {
                if closing.is_some() {
                    break; // dropping the connection closes it
                }
                connection.graceful_shutdown();
                closing = Some(Instant::now());
                continue;
            }
        };
        let Some(Ok((request, respond))) = next else {
            break;
        };
        served += 1;
        if served >= config.keepalive_requests && closing.is_none() {
            connection.graceful_shutdown();
            closing = Some(Instant::now());
        }
        open.count.set(open.count.get() + 1);
        open.peak.set(open.peak.get().max(open.count.get()));
        let stream = Stream {
            worker: Rc::clone(worker),
            peer: Rc::clone(&peer),
            handshake: std::mem::take(&mut handshake),
            open: Rc::clone(&open),
            ledger: Rc::clone(&ledger),
        };
        tokio::task::spawn_local(stream.answer(request, respond));
    }
    // The streams may outlive the connection (and its descriptor) by a turn; what was not
    // flushed by now never leaves.
    drop(connection);
    open.socket.set(None);
    ledger.borrow_mut().close();
    if open.peak.get() * SEND_BUFFER >= TRIM_ABOVE {
        trim_soon();
    }
    served
}

/// Has glibc's allocator give the worker's free memory back to the kernel, `TRIM_DELAY` from
/// now. What a connection held for unsent bodies (up to MAX_STREAMS × SEND_BUFFER, with TLS's
/// buffers) is freed into the worker thread's arena when it ends, and glibc returns by itself
/// only a free block at the top of a heap: the rest, interleaved with live allocations, stays
/// in RSS (10 clients that opened huge windows and read nothing left 120 MiB of a 10 MiB
/// server after they had gone; `malloc_trim(0)` brought it back to 10 MiB,
/// bench/h2_large_files.py memory). The trim walks every arena and gives back their free
/// pages; connections ending within TRIM_DELAY share one, so a worker trims at most 5 times a
/// second, and only after connections with many streams.
fn trim_soon() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if !TRIM_SCHEDULED.with(|s| s.replace(true)) {
        tokio::task::spawn_local(async {
            tokio::time::sleep(TRIM_DELAY).await;
            TRIM_SCHEDULED.with(|s| s.set(false));
            // SAFETY: malloc_trim only gives free memory back to the kernel; any thread may
            // call it at any time.
            unsafe { libc::malloc_trim(0) };
        });
    }
}

/// A connection's open streams (now, and at most at once), when the last one ended, and its
/// streams waiting to send.
struct Open {
    count: Cell<usize>,
    peak: Cell<usize>,
    idle_since: Cell<Instant>,
    went_idle: Notify,
    /// Streams waiting for capacity to send, and when the send timeout's clock last started:
    /// a wait began after a pause, or the client's kernel acknowledged more of our bytes.
    waiting: Cell<usize>,
    progress: Cell<Instant>,
    began_waiting: Notify,
    /// When the last wait ended (a wait that resumes at once is the same wait).
    wait_ended: Cell<Instant>,
    /// The connection's socket (None once it is closed), and the bytes of ours its peer had
    /// acknowledged when we last looked (TCP_INFO).
    socket: Cell<Option<RawFd>>,
    acked: Cell<u64>,
    looked: Cell<Instant>,
    send_timeout: Duration,
}

impl Open {
    fn new(socket: RawFd, send_timeout: Duration) -> Open {
        let now = Instant::now();
        Open {
            count: Cell::new(0),
            peak: Cell::new(0),
            idle_since: Cell::new(now),
            went_idle: Notify::new(),
            waiting: Cell::new(0),
            progress: Cell::new(now),
            began_waiting: Notify::new(),
            wait_ended: Cell::new(now),
            socket: Cell::new(Some(socket)),
            acked: Cell::new(0),
            looked: Cell::new(now),
            send_timeout,
        }
    }

    /// How often a stall looks for progress: the cut comes at most this late after the send
    /// timeout (an ack is seen when looked for, not when it came).
    fn look_every(&self) -> Duration {
        (self.send_timeout / 8).min(LOOK_AT_MOST_EVERY)
    }

    /// When the send-timeout branch wakes next: to look, or to cut.
    fn next_look(&self) -> Instant {
        (self.looked.get() + self.look_every()).min(self.progress.get() + self.send_timeout)
    }

    /// Restarts the send timeout's clock if the client's kernel took more of our bytes since
    /// we last looked. Capacity granted is not progress by itself: a poll of the connection
    /// (a timer, a stream's end) finds room below the kernel's EPOLLOUT mark and h2 grants
    /// capacity, though nothing reached the client; taken for progress, it let a silent
    /// client live two and three times the timeout. Acknowledged bytes did reach it.
    fn look_for_progress(&self) {
        let Some(socket) = self.socket.get() else {
            return;
        };
        self.looked.set(Instant::now());
        if let Some(acked) = bytes_acked(socket) {
            if acked > self.acked.get() {
                self.acked.set(acked);
                self.progress.set(Instant::now());
            }
        }
    }
}

/// The bytes the peer has acknowledged on `socket` (TCP_INFO's tcpi_bytes_acked).
fn bytes_acked(socket: RawFd) -> Option<u64> {
    // SAFETY: tcp_info is plain data; all zeros is a valid value.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: `socket` is the connection's, open while `Open::socket` holds it; `info` and
    // `len` are valid for the call, which writes at most `len` bytes.
    let rc = unsafe {
        libc::getsockopt(
            socket,
            libc::SOL_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    (rc == 0).then_some(info.tcpi_bytes_acked)
}

/// A stream waiting for capacity, counted in [`Open::waiting`] until dropped.
struct Waiting<'a>(&'a Open);

impl<'a> Waiting<'a> {
    fn new(open: &'a Open) -> Waiting<'a> {
        let before = open.waiting.get();
        open.waiting.set(before + 1);
        if before == 0 {
            // A wait after a pause starts the clock afresh; one that resumes within a
            // moment (h2 granted a few KiB, and the stream waits again) is the same stall.
            if open.wait_ended.get().elapsed() >= SAME_WAIT {
                open.progress.set(Instant::now());
            } else {
                open.look_for_progress();
            }
            open.began_waiting.notify_waiters();
        }
        Waiting(open)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let left = self.0.waiting.get() - 1;
        self.0.waiting.set(left);
        if left == 0 {
            self.0.wait_ended.set(Instant::now());
        }
    }
}

/// One stream's request and what it needs from its connection.
struct Stream {
    worker: Rc<Worker>,
    peer: Rc<Peer>,
    handshake: u64,
    open: Rc<Open>,
    ledger: Rc<RefCell<Ledger>>,
}

impl Drop for Stream {
    fn drop(&mut self) {
        let left = self.open.count.get() - 1;
        self.open.count.set(left);
        if left == 0 {
            self.open.idle_since.set(Instant::now());
            self.open.went_idle.notify_waiters();
        }
    }
}

impl Stream {
    async fn answer(self, request: http::Request<h2::RecvStream>, respond: SendResponse<Bytes>) {
        let worker = Rc::clone(&self.worker);
        let timing = &worker.timing;
        let started = timing.now();
        let (parts, body) = request.into_parts();
        // The body of a request to a static file is not read: dropping it tells the peer.
        drop(body);
        let target = parts.uri.path_and_query().map_or("/", |p| p.as_str());
        let host = parts
            .uri
            .authority()
            .map(|a| a.as_str().as_bytes())
            .or_else(|| parts.headers.get(http::header::HOST).map(|v| v.as_bytes()));
        let field = |name: http::header::HeaderName| parts.headers.get(name).map(|v| v.as_bytes());
        let method_name = parts.method.as_str();
        let req = Request {
            method: Method::classify(method_name),
            method_name,
            target,
            version: Version::Http11,
            host,
            conn_close: false,
            conn_keep_alive: false,
            body: Body::None,
            if_match: field(http::header::IF_MATCH),
            if_unmodified_since: field(http::header::IF_UNMODIFIED_SINCE),
            if_modified_since: field(http::header::IF_MODIFIED_SINCE),
            if_none_match: field(http::header::IF_NONE_MATCH),
            range: field(http::header::RANGE),
            if_range: field(http::header::IF_RANGE),
            referer: field(http::header::REFERER),
            user_agent: field(http::header::USER_AGENT),
            head_len: 0,
        };
        let mut exchange = Exchange::begin(timing, started, self.handshake);
        let mut out = Vec::with_capacity(512);
        let terms = Terms {
            too_large: false,
            keep_alive: true,
        };
        let mut scratch = Scratch::default();
        let reply = exchange::reply(&worker, &req, terms, (&mut out, &mut scratch)).await;
        exchange.answered_when_sent(&worker, &self.peer, (&req, "HTTP/2.0"), &reply);
        let promised = reply.body_bytes;
        let id = u32::from(respond.stream_id());
        // Until the bytes are counted: a connection gone or the shutdown timeout logs none.
        exchange.unsent = promised;
        let mut left = promised;
        let sent = match send(respond, out, reply, &mut left, &self.open).await {
            Ok(Some(mut stream)) => self.flushed(&mut stream, id, promised - left).await,
            _ => self.ledger.borrow_mut().take(id),
        };
        exchange.sent_bytes = sent;
        exchange.unsent = promised - sent.min(promised);
        exchange.done(timing);
    }

    /// Waits until the `handed` body bytes given to h2 have been flushed to the socket (the
    /// stream reset or the connection ended: those that were); returns how many were. A wait
    /// counts in [`Open::waiting`]: the send timeout applies.
    async fn flushed(&self, stream: &mut SendStream<Bytes>, id: u32, handed: u64) -> u64 {
        let noop = Context::from_waker(Waker::noop());
        if let Poll::Ready(n) = self.ledger.borrow_mut().poll_flushed(id, handed, &noop) {
            return n;
        }
        let _waiting = Waiting::new(&self.open);
        std::future::poll_fn(|cx| {
            if let Poll::Ready(n) = self.ledger.borrow_mut().poll_flushed(id, handed, cx) {
                return Poll::Ready(n);
            }
            match stream.poll_reset(cx) {
                Poll::Ready(_) => Poll::Ready(self.ledger.borrow_mut().take(id)),
                Poll::Pending => Poll::Pending,
            }
        })
        .await
    }
}

/// The HTTP/2 response from the HTTP/1.1 head `respond` wrote, then the body; `left` (the
/// body's length on entry) is lowered by the body bytes handed to h2 as they go
/// (HPACK-encoded heads and frame headers are h2's and not counted). Returns the stream
/// whose body was handed over, to wait for it to leave (none: no body, or reset).
async fn send(
    mut respond: SendResponse<Bytes>,
    out: Vec<u8>,
    reply: Reply,
    left: &mut u64,
    open: &Open,
) -> Result<Option<SendStream<Bytes>>, h2::Error> {
    let Some((response, head_len)) = translate(&out) else {
        respond.send_reset(h2::Reason::INTERNAL_ERROR);
        return Ok(None);
    };
    let inline = out.len() - head_len;
    let has_tail = !matches!(reply.tail, Tail::None);
    let empty = inline == 0 && !has_tail;
    let mut stream = respond.send_response(response, empty)?;
    if empty {
        return Ok(None);
    }
    if inline > 0 {
        let mut out = out;
        let body = Bytes::from(out.split_off(head_len));
        let len = body.len() as u64;
        send_data(&mut stream, body, !has_tail, open).await?;
        *left -= len.min(*left);
    }
    match reply.tail {
        Tail::None => {}
        Tail::Sendfile(file, offset, len) | Tail::Read(file, offset, len) => {
            send_file(&mut stream, &file, (offset, len), left, open).await?;
        }
        Tail::Mapped(map, offset, len) => {
            let range = offset as usize..(offset + len) as usize;
            send_data(&mut stream, Bytes::copy_from_slice(&map[range]), true, open).await?;
            *left -= len.min(*left);
        }
    }
    Ok(Some(stream))
}

/// Sends `len` bytes of a file from `offset`, each chunk read only once h2 has room for it,
/// taking each from `left` once sent (if the file shrank, the stream is reset: the promised
/// length cannot be kept).
async fn send_file(
    stream: &mut SendStream<Bytes>,
    file: &std::fs::File,
    (offset, len): (u64, u64),
    left: &mut u64,
    open: &Open,
) -> Result<(), h2::Error> {
    let mut sent = 0;
    while sent < len {
        let want = (len - sent).min(FILE_CHUNK);
        let chunk = capacity(stream, want as usize, open).await? as u64;
        let mut buf = Vec::with_capacity(chunk as usize);
        // A read error is a file cut short: the stream is reset below.
        let n = read_at(file, offset + sent, chunk, &mut buf).unwrap_or_default();
        if n < chunk {
            stream.send_reset(h2::Reason::INTERNAL_ERROR);
            return Ok(());
        }
        sent += n;
        stream.send_data(Bytes::from(buf), sent == len)?;
        *left -= n.min(*left);
    }
    Ok(())
}

/// Sends `data` as the peer's flow-control window allows.
async fn send_data(
    stream: &mut SendStream<Bytes>,
    mut data: Bytes,
    end: bool,
    open: &Open,
) -> Result<(), h2::Error> {
    while !data.is_empty() {
        let granted = capacity(stream, data.len(), open).await?;
        let part = data.split_to(granted);
        stream.send_data(part, end && data.is_empty())?;
    }
    Ok(())
}

/// Waits until h2 grants the stream capacity to send (up to `want` bytes; at least one):
/// the peer's windows and h2's send buffer have room. The wait counts in [`Open::waiting`],
/// and a grant is when the send timeout looks for progress.
async fn capacity(
    stream: &mut SendStream<Bytes>,
    want: usize,
    open: &Open,
) -> Result<usize, h2::Error> {
    stream.reserve_capacity(want);
    // poll_capacity reports increases only: capacity granted before and not used is here.
    let granted = stream.capacity();
    if granted > 0 {
        return Ok(granted.min(want));
    }
    let _waiting = Waiting::new(open);
    loop {
        match std::future::poll_fn(|cx| stream.poll_capacity(cx)).await {
            Some(Ok(0)) => continue,
            Some(Ok(n)) => {
                // Not on every grant of a fast client: a look costs a getsockopt.
                if open.looked.get().elapsed() >= open.look_every() {
                    open.look_for_progress();
                }
                return Ok(n.min(want));
            }
            Some(Err(err)) => return Err(err),
            // The stream was closed by the peer.
            None => return Err(h2::Error::from(h2::Reason::CANCEL)),
        }
    }
}
