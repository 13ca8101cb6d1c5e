//! The socket operations of the hot path, written against raw syscalls on purpose: which
//! syscalls a request costs is what webscope studies, so each one here is deliberate.
//!
//! - A connection starts **unregistered**: accept returns a plain non-blocking socket and the
//!   first `recv` is tried at once (with TCP_DEFER_ACCEPT the request is already there). Only
//!   when a call would block is the socket registered with the runtime's epoll. A
//!   `Connection: close` exchange of a small file then costs accept4, recv, send, close and no
//!   epoll_ctl at all.
//! - `read_some` clears tokio's readiness after a short read, as nginx does with its `ready`
//!   flag: a read that returned less than it asked for drained the socket, so the next read
//!   would only say EAGAIN. This saves one syscall per request on keep-alive connections.
//!   Edge-triggered epoll and tokio's readiness ticks make this safe: data that arrives after
//!   the read raises a new event, and a peer's FIN (read-closed) is never cleared.
//! - `write_all` sends with MSG_NOSIGNAL (and MSG_MORE before a sendfile), waiting for
//!   writability with the send timeout only when the socket buffer is full.
//! - `sendfile_all` sends a file range zero-copy.
//! - `reset_on_close` makes the close of a connection cut at the send timeout a reset, on
//!   every engine and protocol.

use std::fs::File;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, RawFd};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::slots::{Slot, Slots};

/// A client connection: a plain socket until something would block, then registered with
/// the runtime.
#[derive(Debug)]
pub(crate) enum Socket {
    Plain(std::net::TcpStream),
    Registered(TcpStream),
    /// Only while switching from one to the other.
    Switching,
}

impl Socket {
    fn fd(&self) -> RawFd {
        match self {
            Socket::Plain(s) => s.as_raw_fd(),
            Socket::Registered(s) => s.as_raw_fd(),
            Socket::Switching => -1,
        }
    }

    /// The registered stream, registering the socket first if needed.
    fn registered(&mut self) -> io::Result<&TcpStream> {
        if let Socket::Plain(_) = self {
            let Socket::Plain(plain) = std::mem::replace(self, Socket::Switching) else {
                unreachable!("checked above");
            };
            *self = Socket::Registered(TcpStream::from_std(plain)?);
        }
        match self {
            Socket::Registered(stream) => Ok(stream),
            _ => Err(io::Error::from(io::ErrorKind::NotConnected)),
        }
    }

    /// The socket as a tokio stream (registered with the runtime), for the layers that need
    /// `AsyncRead`/`AsyncWrite` (TLS, HTTP/2).
    pub(crate) fn into_tokio(mut self) -> io::Result<TcpStream> {
        self.registered()?;
        match self {
            Socket::Registered(stream) => Ok(stream),
            _ => Err(io::Error::from(io::ErrorKind::NotConnected)),
        }
    }

    /// Half-closes the sending side.
    pub(crate) fn shutdown_write(&self) {
        // SAFETY: shutdown on a descriptor this socket owns.
        unsafe { libc::shutdown(self.fd(), libc::SHUT_WR) };
    }

    /// Makes the coming close a reset ([`reset_on_close`]).
    pub(crate) fn reset_on_close(&self) {
        if !matches!(self, Socket::Switching) {
            reset_on_close(self.fd());
        }
    }
}

/// Makes the coming close of `socket` a reset (SO_LINGER 0), for a connection cut at the send
/// timeout. A plain close of a connection whose client reads nothing queues the FIN behind
/// the bytes the kernel still holds (its whole send buffer, 2.7-3.9 MB here): the socket
/// lives on, orphaned in FIN-WAIT-1 and probing a zero window, and the client, which never
/// reads up to the FIN, sees its connection ESTABLISHED long after the server let it go (20
/// such HTTP/1.1 clients left 53 MiB of kernel memory past 60 s, which `--max-connections`
/// does not count; #51 §2). The reset frees those bytes at once and tells the client, as
/// nginx's `reset_timedout_connection` does.
pub(crate) fn reset_on_close(socket: RawFd) {
    // SAFETY: `socket` is the connection's, open until its owner closes it after this call.
    let fd = unsafe { BorrowedFd::borrow_raw(socket) };
    let _ = socket2::SockRef::from(&fd).set_linger(Some(Duration::ZERO));
}

/// Accepts one connection from a listener, as a plain non-blocking socket, with the slot it
/// takes of `--max-connections` (taken once a connection waits, so an idle worker holds none).
pub(crate) async fn accept(
    listener: &AsyncFd<std::net::TcpListener>,
    slots: &Arc<Slots>,
) -> io::Result<(Socket, SocketAddr, Slot)> {
    loop {
        let mut guard = listener.readable().await?;
        let slot = slots.take().await;
        let result = guard.try_io(|inner| {
            let fd = inner.get_ref().as_raw_fd();
            // SAFETY: try_init hands accept4 a zeroed sockaddr_storage and its length.
            let (conn, addr) = unsafe {
                socket2::SockAddr::try_init(|storage, len| {
                    let conn = libc::accept4(
                        fd,
                        storage.cast(),
                        len,
                        libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                    );
                    if conn < 0 {
                        Err(io::Error::last_os_error())
                    } else {
                        Ok(conn)
                    }
                })?
            };
            // SAFETY: `conn` is a fresh descriptor from accept4, owned by nobody else.
            let stream = unsafe { std::net::TcpStream::from_raw_fd(conn) };
            let addr = addr
                .as_socket()
                .unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)));
            Ok((Socket::Plain(stream), addr))
        });
        match result {
            Ok(accepted) => return accepted.map(|(socket, peer)| (socket, peer, slot)),
            Err(_would_block) => continue,
        }
    }
}

/// recv into the spare capacity of `buf`; returns (bytes read, whether the read was short).
fn recv_into(fd: RawFd, buf: &mut Vec<u8>) -> io::Result<(usize, bool)> {
    let spare = buf.spare_capacity_mut();
    let want = spare.len();
    // SAFETY: the pointer and length describe `buf`'s spare capacity, which recv writes at
    // most `want` bytes into.
    let n = unsafe { libc::recv(fd, spare.as_mut_ptr().cast(), want, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let n = n as usize;
    // SAFETY: recv initialised the first `n` bytes of the spare capacity.
    unsafe { buf.set_len(buf.len() + n) };
    Ok((n, n < want))
}

/// Reads into the spare capacity of `buf` (at least `min_spare` bytes are made available),
/// waiting until `deadline` for data. Returns the bytes read; 0 means the peer closed.
pub(crate) async fn read_some(
    socket: &mut Socket,
    buf: &mut Vec<u8>,
    min_spare: usize,
    deadline: Instant,
) -> io::Result<usize> {
    buf.reserve(min_spare);
    if let Socket::Plain(plain) = socket {
        match recv_into(plain.as_raw_fd(), buf) {
            Ok((n, _)) => return Ok(n),
            Err(err) if is_retry(&err) => {}
            Err(err) => return Err(err),
        }
    }
    let stream = socket.registered()?;
    loop {
        let mut got = None;
        let result = stream.try_io(Interest::READABLE, || {
            let (n, short) = recv_into(stream.as_raw_fd(), buf)?;
            got = Some(n);
            if short {
                // Drained: tell tokio, so the next wait goes to epoll instead of recv.
                Err(io::ErrorKind::WouldBlock.into())
            } else {
                Ok(())
            }
        });
        if let Some(n) = got {
            return Ok(n);
        }
        match result {
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => {
                tokio::time::timeout_at(deadline, stream.readable())
                    .await
                    .map_err(|_| io::Error::from(io::ErrorKind::TimedOut))??;
            }
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
            Ok(()) => {}
        }
    }
}

fn is_retry(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
    )
}

fn send(fd: RawFd, data: &[u8], flags: i32) -> io::Result<usize> {
    // SAFETY: `data` is a valid slice for the duration of the call.
    let n = unsafe { libc::send(fd, data.as_ptr().cast(), data.len(), flags) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Sends all of `data`; `more` sets MSG_MORE (more data follows at once, e.g. a sendfile).
pub(crate) async fn write_all(
    socket: &mut Socket,
    mut data: &[u8],
    more: bool,
    timeout: Duration,
) -> io::Result<()> {
    let flags = libc::MSG_NOSIGNAL | if more { libc::MSG_MORE } else { 0 };
    if let Socket::Plain(plain) = socket {
        while !data.is_empty() {
            match send(plain.as_raw_fd(), data, flags) {
                Ok(n) => data = &data[n..],
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => break,
                Err(err) => return Err(err),
            }
        }
        if data.is_empty() {
            return Ok(());
        }
    }
    let stream = socket.registered()?;
    while !data.is_empty() {
        match stream.try_io(Interest::WRITABLE, || send(stream.as_raw_fd(), data, flags)) {
            Ok(n) => data = &data[n..],
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => {
                wait_writable(stream, timeout).await?;
            }
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
    Ok(())
}

/// One sendfile(2) of up to `len` bytes of `file` from `offset` to `out` (also the io_uring
/// engine's way for large files: io_uring has no sendfile).
pub(crate) fn sendfile(out: RawFd, file: &File, offset: u64, len: u64) -> io::Result<u64> {
    // Large chunks: the kernel sends what the socket buffer takes and says how much.
    let chunk = len.min(1 << 30) as usize;
    let mut off = offset as libc::off_t;
    // SAFETY: both descriptors are open for the call; `off` is a valid pointer.
    let n = unsafe { libc::sendfile(out, file.as_raw_fd(), &mut off, chunk) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as u64)
    }
}

/// Sends `len` bytes of `file` from `offset`. Returns the bytes sent, fewer than `len` only if
/// the file shrank meanwhile.
/// Sends the last `*left` bytes of `file` before `end`, lowering `*left` as they go, so that
/// the caller knows how far it got however it ends (the access log's bytes: the future may be
/// dropped at the shutdown timeout). It stops with bytes left only if the file shrank.
pub(crate) async fn sendfile_all(
    socket: &mut Socket,
    file: &File,
    end: u64,
    left: &mut u64,
    timeout: Duration,
) -> io::Result<()> {
    if let Socket::Plain(plain) = socket {
        while *left > 0 {
            match sendfile(plain.as_raw_fd(), file, end - *left, *left) {
                Ok(0) => return Ok(()),
                Ok(n) => *left -= n,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => break,
                Err(err) => return Err(err),
            }
        }
        if *left == 0 {
            return Ok(());
        }
    }
    let stream = socket.registered()?;
    sendfile_stream(stream, file, end, left, timeout).await
}

/// Sends the last `*left` bytes of `file` before `end` on a registered stream (plain TCP, or a
/// kTLS socket, where the kernel encrypts what sendfile hands it), lowering `*left` as they go.
pub(crate) async fn sendfile_stream(
    stream: &TcpStream,
    file: &File,
    end: u64,
    left: &mut u64,
    timeout: Duration,
) -> io::Result<()> {
    while *left > 0 {
        let result = stream.try_io(Interest::WRITABLE, || {
            sendfile(stream.as_raw_fd(), file, end - *left, *left)
        });
        match result {
            Ok(0) => break, // the file is shorter than it was when the head was sent
            Ok(n) => *left -= n,
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => {
                wait_writable(stream, timeout).await?;
            }
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
    Ok(())
}

async fn wait_writable(stream: &TcpStream, timeout: Duration) -> io::Result<()> {
    tokio::time::timeout(timeout, stream.writable())
        .await
        .map_err(|_| io::Error::from(io::ErrorKind::TimedOut))?
}
