//! One client connection and one request/response exchange on it: the generator's hot path.
//!
//! Written by hand on tokio rather than with an HTTP client crate because the syscall
//! pattern is the measurement's cost. Per keep-alive request: one `send` of a prebuilt
//! request, then `recv` until the response is complete, nothing else: the read readiness is
//! cleared right after the send (the response cannot be there yet), so the task waits for the
//! next epoll event instead of trying a `recv` that would fail with EAGAIN, and the socket
//! stays registered with epoll for its whole life (wrk re-arms its write interest with two
//! `epoll_ctl` per request). A new connection sends its request straight after the
//! non-blocking `connect` (on loopback the handshake completes inside `connect`), before it is
//! registered, saving the wait for writability and the `getsockopt(SO_ERROR)` that tokio's
//! `connect` does. Bodies are counted, not copied: the per-connection buffer is reused.

use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use socket2::{Domain, Socket, Type};
use tokio::io::{AsyncReadExt, AsyncWriteExt, Interest};
use tokio::net::TcpStream;
use webscope_http::response::{self, Body, Chunked};

use crate::recorder::Failure;

/// Bytes buffered per connection: a response head must fit; bodies stream through.
pub(crate) const BUFFER: usize = 32 * 1024;

/// A complete response.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Response {
    /// Its status code.
    pub status: u16,
    /// Bytes received for it (head and body).
    pub bytes: u64,
    /// When its first byte arrived.
    pub first_byte: Instant,
    /// When its last byte arrived.
    pub end: Instant,
}

/// The result of one exchange, with the connect time when the request opened a connection.
pub(crate) struct Exchange {
    pub result: Result<Response, Failure>,
    pub connect: Option<Duration>,
}

/// A client connection (closed until the first request opens it) and its buffer.
pub(crate) struct Conn {
    addr: SocketAddr,
    nodelay: bool,
    stream: Option<TcpStream>,
    buf: Box<[u8]>,
    /// Buffered bytes not yet consumed: `buf[start..end]`.
    start: usize,
    end: usize,
}

impl Conn {
    /// A connection to `addr`; `keep_alive` connections get TCP_NODELAY (a lone request on a
    /// new connection is never held back by Nagle, so close mode skips the syscall).
    pub(crate) fn new(addr: SocketAddr, keep_alive: bool) -> Conn {
        Conn {
            addr,
            nodelay: keep_alive,
            stream: None,
            buf: vec![0u8; BUFFER].into_boxed_slice(),
            start: 0,
            end: 0,
        }
    }

    /// Whether a connection is open (else the next exchange opens one).
    pub(crate) fn is_open(&self) -> bool {
        self.stream.is_some()
    }

    /// Closes the connection (dropping the socket).
    pub(crate) fn close(&mut self) {
        self.stream = None;
        self.start = 0;
        self.end = 0;
    }

    /// Sends `request` (opening a connection first if none is open) and reads the response.
    /// On failure the connection is closed; on success it stays open if `reuse` and the
    /// response allows it.
    pub(crate) async fn exchange(&mut self, request: &[u8], reuse: bool) -> Exchange {
        let mut connect = None;
        if let Err(failure) = self.send(request, &mut connect).await {
            self.close();
            return Exchange {
                result: Err(failure),
                connect,
            };
        }
        let result = self.receive().await;
        match result {
            Ok((_, true)) if reuse => {}
            _ => self.close(),
        }
        Exchange {
            result: result.map(|(response, _)| response),
            connect,
        }
    }

    async fn send(
        &mut self,
        request: &[u8],
        connect: &mut Option<Duration>,
    ) -> Result<(), Failure> {
        let Some(stream) = &mut self.stream else {
            let began = Instant::now();
            let (stream, established) = self.open(request).await?;
            *connect = Some(established.duration_since(began));
            self.stream = Some(stream);
            return Ok(());
        };
        match stream.try_write(request) {
            Ok(n) if n == request.len() => {}
            Ok(n) => stream
                .write_all(&request[n..])
                .await
                .map_err(|e| io_failure(&e))?,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => stream
                .write_all(request)
                .await
                .map_err(|e| io_failure(&e))?,
            Err(e) => return Err(io_failure(&e)),
        }
        // No response can have arrived yet: clear the read readiness so that the first read
        // waits for epoll instead of failing a recv() with EAGAIN. Closed states are kept.
        let _ = stream.try_io(Interest::READABLE, || {
            Err::<(), _>(io::ErrorKind::WouldBlock.into())
        });
        Ok(())
    }

    /// Opens a connection and sends the request on it; returns the registered stream and
    /// when the connection was known to be established.
    async fn open(&mut self, request: &[u8]) -> Result<(TcpStream, Instant), Failure> {
        let socket = Socket::new(
            Domain::for_address(self.addr),
            Type::STREAM.nonblocking(),
            None,
        )
        .map_err(|_| Failure::Connect)?;
        if self.nodelay {
            socket.set_nodelay(true).map_err(|_| Failure::Connect)?;
        }
        if std::env::var_os("WS_RENO").is_some() {
            let _ = socket.set_tcp_congestion(b"reno");
        }
        match socket.connect(&self.addr.into()) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
            Err(e) => return Err(connect_failure(&e)),
        }
        let connected = Instant::now();
        // Try the request before registering: on loopback the handshake is already done.
        let sent = match socket.send(request) {
            Ok(n) => n,
            Err(e)
                if e.kind() == io::ErrorKind::WouldBlock
                    || e.raw_os_error() == Some(libc::ENOTCONN) =>
            {
                0
            }
            Err(e) => return Err(connect_failure(&e)),
        };
        let mut stream =
            TcpStream::from_std(std::net::TcpStream::from(socket)).map_err(|_| Failure::Connect)?;
        if sent == request.len() {
            return Ok((stream, connected));
        }
        stream.writable().await.map_err(|e| connect_failure(&e))?;
        if let Ok(Some(e)) | Err(e) = stream.take_error() {
            return Err(connect_failure(&e));
        }
        let established = Instant::now();
        stream
            .write_all(&request[sent..])
            .await
            .map_err(|e| io_failure(&e))?;
        Ok((stream, established))
    }

    /// Reads one response; returns it and whether the connection may be reused.
    async fn receive(&mut self) -> Result<(Response, bool), Failure> {
        let mut bytes = 0u64;
        let mut reads = 0u32;
        let mut first_byte = None;
        // The head: parse what is buffered, read more until it is complete.
        let head = loop {
            if self.end > self.start {
                match response::parse_head(&self.buf[self.start..self.end], false) {
                    Ok(Some(head)) if head.is_interim() => {
                        self.start += head.len;
                        continue;
                    }
                    Ok(Some(head)) => {
                        self.start += head.len;
                        break head;
                    }
                    Ok(None) => {}
                    Err(_) => return Err(Failure::Parse),
                }
            }
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            if self.end == self.buf.len() {
                return Err(Failure::Parse);
            }
            let n = self.read().await?;
            if n == 0 {
                return Err(Failure::Reset);
            }
            first_byte.get_or_insert_with(Instant::now);
            reads += 1;
            bytes += n as u64;
        };
        // The body: count it through the buffer.
        let mut chunked = Chunked::new();
        let mut left = match head.body {
            Body::Empty => 0,
            Body::Length(n) => n,
            Body::Chunked | Body::UntilClose => u64::MAX,
        };
        loop {
            let buffered = self.end - self.start;
            match head.body {
                Body::Empty => break,
                Body::Length(_) => {
                    let take = left.min(buffered as u64);
                    self.start += take as usize;
                    left -= take;
                    if left == 0 {
                        break;
                    }
                }
                Body::Chunked => {
                    let progress = chunked
                        .feed(&self.buf[self.start..self.end])
                        .map_err(|_| Failure::Parse)?;
                    self.start += progress.consumed;
                    if progress.done {
                        break;
                    }
                }
                Body::UntilClose => self.start = self.end,
            }
            // Not done: everything buffered was body, so the whole buffer is free again.
            self.start = 0;
            self.end = 0;
            let n = self.read().await?;
            if n == 0 {
                if head.body == Body::UntilClose {
                    break;
                }
                return Err(Failure::ShortBody);
            }
            first_byte.get_or_insert_with(Instant::now);
            reads += 1;
            bytes += n as u64;
        }
        // A response that came in one read ended when its first byte came: no second clock
        // read (the common case for small files).
        let end = match first_byte {
            Some(at) if reads == 1 => at,
            _ => Instant::now(),
        };
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        let response = Response {
            status: head.status,
            bytes,
            first_byte: first_byte.unwrap_or(end),
            end,
        };
        Ok((response, head.keep_alive && head.body != Body::UntilClose))
    }

    /// One read into the free end of the buffer.
    async fn read(&mut self) -> Result<usize, Failure> {
        let Some(stream) = &mut self.stream else {
            return Err(Failure::Reset);
        };
        let n = stream
            .read(&mut self.buf[self.end..])
            .await
            .map_err(|e| io_failure(&e))?;
        self.end += n;
        Ok(n)
    }
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
