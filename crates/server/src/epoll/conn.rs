//! One client connection: read, parse, answer, repeat, until the client or a rule closes it.
//!
//! The loop answers every complete request already buffered before it writes (pipelined
//! responses leave in one write), writes before it waits for more input, and keeps one read
//! buffer and one write buffer for the connection's life. Timeouts follow RFC 9112 and nginx:
//! a started head must complete within the header timeout (408), an idle keep-alive connection
//! closes after the keep-alive timeout, a client that stops reading is cut after the send
//! timeout.

use std::io;
use std::net::SocketAddr;
use std::rc::Rc;

use tokio::time::{Duration, Instant};
use webscope_http::request::{self, Body, Request};

use super::transport::Transport;
use crate::exchange::{self, Peer};
use crate::files::read_at;
use crate::io::Socket;
use crate::respond::{Reply, Scratch, Tail};
use crate::timing::Sample;
use crate::worker::Worker;

/// Output is written out once this much is buffered, even if more pipelined requests wait.
const OUT_HIGH_WATER: usize = 64 * 1024;
/// Chunk size of the read-and-write path for large files (sendfile and mmap off).
const READ_CHUNK: u64 = 64 * 1024;
/// How long a closing connection reads and discards what the client still sends, so that
/// the kernel does not answer unread data with a RST that would destroy our response.
const LINGER: Duration = Duration::from_secs(2);

/// How a connection ends.
enum End {
    /// Nothing unread: close at once.
    Close,
    /// The client may still be sending: shut down writing, drain, then close.
    Linger,
}

struct Conn {
    socket: Transport,
    peer: Peer,
    worker: Rc<Worker>,
    input: Vec<u8>,
    /// Start of unconsumed input.
    start: usize,
    output: Vec<u8>,
    scratch: Scratch,
    served: u64,
    /// Body bytes of the last request still to be read and dropped.
    discard: u64,
    /// Clock reading when the first byte of the request being read arrived (0: none yet).
    head_start: u64,
    /// Nanoseconds of the TLS handshake, recorded with the connection's first request.
    handshake: u64,
    /// The buffer a large file is read into to be encrypted (user-space TLS only).
    file_chunk: Vec<u8>,
}

/// Serves one accepted plain-TCP connection to its end.
pub(crate) async fn serve(socket: Socket, peer: SocketAddr, worker: Rc<Worker>) {
    let accepted = worker.timing.start_connection();
    serve_over(Transport::Tcp(socket), peer, worker, accepted, 0).await;
}

/// Serves HTTP/1.1 over an established transport to its end; `accepted` is the clock reading
/// of `start_connection`, `handshake` the TLS handshake's nanoseconds (0 for plain TCP).
pub(crate) async fn serve_over(
    socket: Transport,
    peer: SocketAddr,
    worker: Rc<Worker>,
    accepted: u64,
    handshake: u64,
) {
    let mut conn = Conn {
        socket,
        peer: Peer::new(peer, &worker),
        worker,
        input: Vec::with_capacity(4096),
        start: 0,
        output: Vec::with_capacity(4096),
        scratch: Scratch::default(),
        served: 0,
        discard: 0,
        head_start: 0,
        handshake,
        file_chunk: Vec::new(),
    };
    match conn.run().await {
        Ok(End::Close) => conn.socket.close(LINGER).await,
        Err(_) => {}
        Ok(End::Linger) => conn.linger().await,
    }
    conn.worker.timing.end_connection(accepted, conn.served);
}

/// What one pass over the buffered input decided.
enum Step {
    /// A request was answered; look for the next.
    Answered,
    /// No complete request is buffered: read more.
    NeedMore,
    /// The connection ends.
    End(End),
}

impl Conn {
    async fn run(&mut self) -> io::Result<End> {
        let worker = Rc::clone(&self.worker);
        let config = &worker.config;
        let mut head_deadline: Option<Instant> = None;
        loop {
            if self.start == self.input.len() {
                self.input.clear();
                self.start = 0;
            }
            if self.discard > 0 && self.start < self.input.len() {
                let n = (self.input.len() - self.start).min(self.discard as usize);
                self.start += n;
                self.discard -= n as u64;
                continue;
            }
            if self.discard == 0 && self.start < self.input.len() {
                // The request borrows the input while it is answered, so the buffer is lent
                // out of `self` for the step (a move of three words, not a copy).
                let input = std::mem::take(&mut self.input);
                let step = self.step(&input).await;
                self.input = input;
                match step? {
                    Step::Answered => {
                        head_deadline = None;
                        continue;
                    }
                    Step::NeedMore => {}
                    Step::End(end) => return Ok(end),
                }
            }
            // More input is needed: first send what is ready.
            self.flush(false).await?;
            let idle = self.start == self.input.len() && self.discard == 0;
            if idle && worker.shutting_down() {
                return Ok(End::Close);
            }
            let deadline = if idle {
                let wait = if self.served == 0 {
                    config.header_timeout
                } else {
                    config.keepalive_timeout
                };
                Instant::now() + wait
            } else {
                *head_deadline.get_or_insert_with(|| Instant::now() + config.header_timeout)
            };
            self.compact();
            let was_empty = self.start == self.input.len();
            let read = tokio::select! {
                biased;
                read = self.socket.read_some(&mut self.input, 2048, deadline) => read,
                () = worker.shutdown_signal(), if idle => return Ok(End::Close),
            };
            match read {
                Ok(0) => return Ok(End::Close),
                Ok(_) => {
                    if was_empty {
                        self.head_start = worker.timing.now();
                    }
                }
                Err(err) if err.kind() == io::ErrorKind::TimedOut => {
                    if idle {
                        return Ok(End::Close);
                    }
                    let input = std::mem::take(&mut self.input);
                    let result = self.refuse(408, &input[self.start..]).await;
                    self.input = input;
                    result?;
                    return Ok(End::Linger);
                }
                Err(err) => return Err(err),
            }
        }
    }

    /// Parses the next buffered request and answers it.
    async fn step(&mut self, input: &[u8]) -> io::Result<Step> {
        let pending = &input[self.start..];
        match request::parse(pending, &self.worker.config.limits) {
            Ok(Some(req)) => Ok(
                match self.answer(&req, input, self.worker.timing.now()).await? {
                    Some(end) => Step::End(end),
                    None => Step::Answered,
                },
            ),
            Ok(None) => Ok(Step::NeedMore),
            Err(err) => {
                self.refuse(err.status(), pending).await?;
                Ok(Step::End(End::Linger))
            }
        }
    }

    /// Answers one parsed request. Returns how the connection ends if it must.
    async fn answer(
        &mut self,
        req: &Request<'_>,
        input: &[u8],
        parsed: u64,
    ) -> io::Result<Option<End>> {
        let worker = Rc::clone(&self.worker);
        let timing = &worker.timing;
        let head_start = if self.head_start == 0 {
            parsed
        } else {
            self.head_start
        };
        self.served += 1;
        let terms = exchange::terms(&worker, req, self.served);
        let too_large = terms.too_large;
        let out_before = self.output.len();
        let service = worker
            .services
            .as_ref()
            .filter(|_| !too_large && req.target.starts_with("/svc/"));
        let reply = if let Some(services) = service {
            let strings = worker.config.techniques.string_cache;
            exchange::service_reply(services, req, terms.keep_alive, &mut self.output, strings)
                .await
        } else {
            exchange::file_reply(&worker, req, terms, &mut self.output, &mut self.scratch)
        };
        let responded = timing.now();
        exchange::log_request(&worker, &self.peer, req, &reply);
        let logged = timing.now();
        self.start += req.head_len;
        if let (Body::Length(n), false) = (req.body, too_large) {
            self.discard = n;
        }
        let Reply {
            tail,
            close,
            status,
            body_bytes,
        } = reply;
        let inline = (self.output.len() - out_before) as u64;
        let tail_len = tail.len();
        let complete = self.send_tail(tail).await?;
        if self.start >= input.len() && self.discard == 0 {
            // Nothing pipelined behind it: send now, so the process phase includes sending.
            self.flush(false).await?;
        }
        let sent = timing.now();
        timing.record(&Sample {
            status,
            body_bytes,
            sent_bytes: inline + tail_len,
            parse: timing.nanos(head_start, parsed),
            process: timing.nanos(parsed, responded) + timing.nanos(logged, sent),
            log: timing.nanos(responded, logged),
            total: timing.nanos(head_start, sent),
            tls: std::mem::take(&mut self.handshake),
        });
        self.head_start = if self.start < input.len() { sent } else { 0 };
        if !complete {
            return Ok(Some(End::Close));
        }
        if close {
            self.flush(false).await?;
            let unread = too_large
                || self.start < input.len()
                || self.discard > 0
                || req.body == Body::Chunked;
            return Ok(Some(if unread { End::Linger } else { End::Close }));
        }
        if self.output.len() >= OUT_HIGH_WATER {
            self.flush(false).await?;
        }
        Ok(None)
    }

    /// Sends a large body after its head. Returns false if the file turned out shorter than
    /// promised (the connection must then close).
    async fn send_tail(&mut self, tail: Tail) -> io::Result<bool> {
        let timeout = self.worker.config.send_timeout;
        match tail {
            Tail::None => Ok(true),
            Tail::Sendfile(file, offset, len) => {
                self.flush(true).await?;
                let sent = self
                    .socket
                    .send_file(&file, offset, len, timeout, &mut self.file_chunk)
                    .await?;
                Ok(sent == len)
            }
            Tail::Mapped(map, offset, len) => {
                self.flush(true).await?;
                let range = offset as usize..(offset + len) as usize;
                self.socket.write_all(&map[range], false, timeout).await?;
                Ok(true)
            }
            Tail::Read(file, mut offset, len) => {
                // The baseline: read into a buffer, write it, until done.
                let end = offset + len;
                while offset < end {
                    let chunk = (end - offset).min(READ_CHUNK);
                    let n = read_at(&file, offset, chunk, &mut self.output)?;
                    self.flush(false).await?;
                    if n < chunk {
                        return Ok(false);
                    }
                    offset += n;
                }
                Ok(true)
            }
        }
    }

    /// Answers a request that could not be parsed (or timed out) and logs it; `pending` is
    /// the unparsed input, whose first line goes to the log.
    async fn refuse(&mut self, status: u16, pending: &[u8]) -> io::Result<()> {
        let worker = Rc::clone(&self.worker);
        let timing = &worker.timing;
        let started = timing.now();
        let head_start = if self.head_start == 0 {
            started
        } else {
            self.head_start
        };
        let out_before = self.output.len();
        let reply = exchange::refusal(&worker, status, &mut self.output);
        let sent_bytes = (self.output.len() - out_before) as u64;
        let responded = timing.now();
        exchange::log_refusal(&worker, &self.peer, pending, &reply);
        let logged = timing.now();
        let result = self.flush(false).await;
        let sent = timing.now();
        timing.record(&Sample {
            status,
            body_bytes: reply.body_bytes,
            sent_bytes,
            parse: timing.nanos(head_start, started),
            process: timing.nanos(started, responded) + timing.nanos(logged, sent),
            log: timing.nanos(responded, logged),
            total: timing.nanos(head_start, sent),
            tls: std::mem::take(&mut self.handshake),
        });
        result
    }

    async fn flush(&mut self, more: bool) -> io::Result<()> {
        if self.output.is_empty() {
            return Ok(());
        }
        let timeout = self.worker.config.send_timeout;
        let result = self.socket.write_all(&self.output, more, timeout).await;
        self.output.clear();
        result
    }

    /// Moves unconsumed input to the front when the buffer's free space runs low.
    fn compact(&mut self) {
        if self.start > 0 && self.input.capacity() - self.input.len() < 2048 {
            self.input.drain(..self.start);
            self.start = 0;
        }
    }

    /// Half-closes and reads what the client still sends, for a bounded time, so that our
    /// last response reaches it (RFC 9112 §9.6).
    async fn linger(&mut self) {
        let deadline = Instant::now() + LINGER;
        self.socket.shutdown_write(LINGER).await;
        let mut drained = 0usize;
        while drained < 1 << 20 {
            self.input.clear();
            match self.socket.read_some(&mut self.input, 4096, deadline).await {
                Ok(0) | Err(_) => break,
                Ok(n) => drained += n,
            }
        }
    }
}
