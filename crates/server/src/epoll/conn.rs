//! One HTTP/1.1 connection on the epoll engine (plain TCP, user-space TLS or kTLS): read,
//! answer, write, repeat, until the client or a rule closes it. Which bytes are a request and
//! how it is answered is `crate::http1`'s and `crate::exchange`'s; this loop moves the bytes.
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
use webscope_http::request::{self, Request};

use super::transport::Transport;
use crate::exchange::Peer;
use crate::files::read_at;
use crate::http1::{After, Answering, Http1};
use crate::io::Socket;
use crate::respond::Tail;
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
    worker: Rc<Worker>,
    h1: Http1,
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
        h1: Http1::new(Peer::new(peer, &worker), handshake),
        worker,
        file_chunk: Vec::new(),
    };
    match conn.run().await {
        Ok(End::Close) => conn.socket.close(LINGER).await,
        // The send timeout (reads time out into a 408 or a close, in `run`): the client
        // stopped reading, and a plain close would leave the kernel holding its unsent bytes.
        Err(err) if err.kind() == io::ErrorKind::TimedOut => conn.socket.reset_on_close(),
        Err(_) => {}
        Ok(End::Linger) => conn.linger().await,
    }
    conn.worker.timing.end_connection(accepted, conn.h1.served);
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
            if self.h1.request_waiting() {
                let input = std::mem::take(&mut self.h1.input);
                let step = self.step(&input).await;
                self.h1.input = input;
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
            let idle = self.h1.idle();
            if idle && worker.shutting_down() {
                return Ok(End::Close);
            }
            let deadline = if idle {
                let wait = if self.h1.served == 0 {
                    config.header_timeout
                } else {
                    config.keepalive_timeout
                };
                Instant::now() + wait
            } else {
                *head_deadline.get_or_insert_with(|| Instant::now() + config.header_timeout)
            };
            self.h1.compact();
            let was_empty = self.h1.start == self.h1.input.len();
            let read = tokio::select! {
                biased;
                read = self.socket.read_some(&mut self.h1.input, 2048, deadline) => read,
                () = worker.shutdown_signal(), if idle => return Ok(End::Close),
            };
            match read {
                Ok(0) => return Ok(End::Close),
                Ok(_) => {
                    if was_empty {
                        self.h1.head_arrived(&worker.timing);
                    }
                }
                Err(err) if err.kind() == io::ErrorKind::TimedOut => {
                    if idle {
                        return Ok(End::Close);
                    }
                    let input = std::mem::take(&mut self.h1.input);
                    let result = self.refuse(408, &input[self.h1.start..]).await;
                    self.h1.input = input;
                    result?;
                    return Ok(End::Linger);
                }
                Err(err) => return Err(err),
            }
        }
    }

    /// Parses the next buffered request and answers it.
    async fn step(&mut self, input: &[u8]) -> io::Result<Step> {
        let pending = &input[self.h1.start..];
        match request::parse(pending, &self.worker.config.limits) {
            Ok(Some(req)) => Ok(match self.answer(&req, input).await? {
                Some(end) => Step::End(end),
                None => Step::Answered,
            }),
            Ok(None) => Ok(Step::NeedMore),
            Err(err) => {
                self.refuse(err.status(), pending).await?;
                Ok(Step::End(End::Linger))
            }
        }
    }

    /// Answers one parsed request and sends what must leave now. Returns how the connection
    /// ends if it must.
    async fn answer(&mut self, req: &Request<'_>, input: &[u8]) -> io::Result<Option<End>> {
        let worker = Rc::clone(&self.worker);
        let answer = match self.h1.answer(&worker, req, input.len()) {
            Answering::Ready(answer) => answer,
            // The task waits; the worker goes on serving other connections.
            Answering::Waiting(mut waiting) => {
                let result = (&mut waiting.job).await;
                self.h1
                    .service_answered(&worker, req, input.len(), waiting, result)
            }
        };
        let mut exchange = answer.exchange;
        // Kept current as the tail goes: the exchange logs it however it ends.
        exchange.unsent = answer.tail.len();
        let complete = self.send_tail(answer.tail, &mut exchange.unsent).await?;
        if !answer.pipelined {
            // Nothing pipelined behind it: send now, so the process phase includes sending.
            self.flush(false).await?;
        }
        self.h1.sent(&worker.timing, exchange, input.len());
        if !complete {
            return Ok(Some(End::Close));
        }
        let end = match answer.after {
            After::KeepOpen => None,
            After::Close => Some(End::Close),
            After::Linger => Some(End::Linger),
        };
        if end.is_some() || self.h1.output.len() >= OUT_HIGH_WATER {
            self.flush(false).await?;
        }
        Ok(end)
    }

    /// Sends a large body after its head; `unsent` (the tail's length on entry) is left at
    /// the bytes not written, to the byte by sendfile, to the chunk by the other ways. Returns
    /// false if the file turned out shorter than promised (the connection must then close).
    async fn send_tail(&mut self, tail: Tail, unsent: &mut u64) -> io::Result<bool> {
        let timeout = self.worker.config.send_timeout;
        match tail {
            Tail::None => Ok(true),
            Tail::Sendfile(file, offset, len) => {
                self.flush(true).await?;
                self.socket
                    .send_file(&file, offset + len, unsent, timeout, &mut self.file_chunk)
                    .await?;
                Ok(*unsent == 0)
            }
            Tail::Mapped(map, offset, len) => {
                self.flush(true).await?;
                let range = offset as usize..(offset + len) as usize;
                self.socket.write_all(&map[range], false, timeout).await?;
                *unsent = 0;
                Ok(true)
            }
            Tail::Read(file, mut offset, len) => {
                // The baseline: read into a buffer, write it, until done.
                let end = offset + len;
                while offset < end {
                    let chunk = (end - offset).min(READ_CHUNK);
                    let n = read_at(&file, offset, chunk, &mut self.h1.output)?;
                    self.flush(false).await?;
                    offset += n;
                    *unsent = end - offset;
                    if n < chunk {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
        }
    }

    /// Answers a request that could not be parsed (or timed out); `pending` is the unparsed
    /// input.
    async fn refuse(&mut self, status: u16, pending: &[u8]) -> io::Result<()> {
        let exchange = self.h1.refuse(&self.worker, status, pending);
        let result = self.flush(false).await;
        exchange.done(&self.worker.timing);
        result
    }

    async fn flush(&mut self, more: bool) -> io::Result<()> {
        if self.h1.output.is_empty() {
            return Ok(());
        }
        let timeout = self.worker.config.send_timeout;
        let result = self.socket.write_all(&self.h1.output, more, timeout).await;
        self.h1.output.clear();
        result
    }

    /// Half-closes and reads what the client still sends, for a bounded time, so that our
    /// last response reaches it (RFC 9112 §9.6).
    async fn linger(&mut self) {
        let deadline = Instant::now() + LINGER;
        self.socket.shutdown_write(LINGER).await;
        let mut drained = 0usize;
        while drained < 1 << 20 {
            self.h1.input.clear();
            match self
                .socket
                .read_some(&mut self.h1.input, 4096, deadline)
                .await
            {
                Ok(0) | Err(_) => break,
                Ok(n) => drained += n,
            }
        }
    }
}
