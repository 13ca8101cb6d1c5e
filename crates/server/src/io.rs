//! The socket operations of the hot path, written against raw syscalls on purpose: which
//! syscalls a request costs is what webscope studies, so each one here is deliberate.
//!
//! - `read_some` clears tokio's readiness after a short read, as nginx does with its `ready`
//!   flag: a read that returned less than it asked for drained the socket, so the next read
//!   would only say EAGAIN. This saves one syscall per request on keep-alive connections.
//!   Edge-triggered epoll and tokio's readiness ticks make this safe: data that arrives after
//!   the read raises a new event, and a peer's FIN (read-closed) is never cleared.
//! - `write_all` sends with MSG_NOSIGNAL (and MSG_MORE before a sendfile), waiting for
//!   writability with the send timeout only when the socket buffer is full.
//! - `sendfile_all` sends a file range zero-copy.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::time::Duration;

use tokio::io::Interest;
use tokio::net::TcpStream;
use tokio::time::Instant;

/// Reads into the spare capacity of `buf` (at least `min_spare` bytes are made available),
/// waiting until `deadline` for data. Returns the bytes read; 0 means the peer closed.
pub(crate) async fn read_some(
    stream: &TcpStream,
    buf: &mut Vec<u8>,
    min_spare: usize,
    deadline: Instant,
) -> io::Result<usize> {
    buf.reserve(min_spare);
    loop {
        let mut got = None;
        let result = stream.try_io(Interest::READABLE, || {
            let spare = buf.spare_capacity_mut();
            let want = spare.len();
            // SAFETY: the pointer and length describe `buf`'s spare capacity, which recv
            // writes at most `want` bytes into.
            let n = unsafe { libc::recv(stream.as_raw_fd(), spare.as_mut_ptr().cast(), want, 0) };
            if n < 0 {
                return Err(io::Error::last_os_error());
            }
            let n = n as usize;
            got = Some(n);
            if n < want {
                // Drained: tell tokio, so the next wait goes to epoll instead of recv.
                Err(io::ErrorKind::WouldBlock.into())
            } else {
                Ok(())
            }
        });
        if let Some(n) = got {
            // SAFETY: recv initialised the first `n` bytes of the spare capacity.
            unsafe { buf.set_len(buf.len() + n) };
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

/// Sends all of `data`; `more` sets MSG_MORE (more data follows at once, e.g. a sendfile).
pub(crate) async fn write_all(
    stream: &TcpStream,
    mut data: &[u8],
    more: bool,
    timeout: Duration,
) -> io::Result<()> {
    let flags = libc::MSG_NOSIGNAL | if more { libc::MSG_MORE } else { 0 };
    while !data.is_empty() {
        let result = stream.try_io(Interest::WRITABLE, || {
            // SAFETY: `data` is a valid slice for the duration of the call.
            let n =
                unsafe { libc::send(stream.as_raw_fd(), data.as_ptr().cast(), data.len(), flags) };
            if n < 0 {
                Err(io::Error::last_os_error())
            } else {
                Ok(n as usize)
            }
        });
        match result {
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

/// Sends `len` bytes of `file` from `offset`. Returns the bytes sent, fewer than `len` only if
/// the file shrank meanwhile.
pub(crate) async fn sendfile_all(
    stream: &TcpStream,
    file: &File,
    mut offset: u64,
    len: u64,
    timeout: Duration,
) -> io::Result<u64> {
    let end = offset + len;
    while offset < end {
        // Large chunks: the kernel sends what the socket buffer takes and says how much.
        let chunk = (end - offset).min(1 << 30) as usize;
        let result = stream.try_io(Interest::WRITABLE, || {
            let mut off = offset as libc::off_t;
            // SAFETY: both descriptors are open for the call; `off` is a valid pointer.
            let n =
                unsafe { libc::sendfile(stream.as_raw_fd(), file.as_raw_fd(), &mut off, chunk) };
            if n < 0 {
                Err(io::Error::last_os_error())
            } else {
                Ok(n as u64)
            }
        });
        match result {
            Ok(0) => break, // the file is shorter than it was when the head was sent
            Ok(n) => offset += n,
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => {
                wait_writable(stream, timeout).await?;
            }
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
    Ok(len - (end - offset))
}

async fn wait_writable(stream: &TcpStream, timeout: Duration) -> io::Result<()> {
    tokio::time::timeout(timeout, stream.writable())
        .await
        .map_err(|_| io::Error::from(io::ErrorKind::TimedOut))?
}
