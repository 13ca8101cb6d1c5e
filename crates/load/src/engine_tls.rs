//! The engine's TLS path: the socket I/O of a connection whose bytes go through rustls.
//!
//! The engine stays the same state machine: a request is handed to rustls whole (it keeps it
//! until the handshake is done), `flush` writes whatever records rustls has, and `read` turns
//! arriving records into plaintext in the connection's buffer, driving the handshake on the
//! way. Only the system calls differ: `send` and `recv` on the same non-blocking socket.

use std::io::{self, Read, Write};
use std::os::fd::RawFd;

use rustls::ClientConnection;

/// The socket as rustls wants it: `Read` and `Write` over `recv` and `send`.
struct Fd(RawFd);

impl Read for Fd {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        super::engine::recv(self.0, buf)
    }
}

impl Write for Fd {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        super::engine::send(self.0, buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Writes out the records rustls has; Ok(true) when none is left, Ok(false) when the socket
/// is full (the next writable event resumes).
pub(crate) fn flush(tls: &mut ClientConnection, fd: RawFd) -> io::Result<bool> {
    while tls.wants_write() {
        match tls.write_tls(&mut Fd(fd)) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// What a read found.
pub(crate) enum Got {
    /// Plaintext bytes put in the buffer (0: the server closed the connection).
    Bytes(usize),
    /// Nothing yet.
    WouldBlock,
    /// The socket failed.
    Io(io::Error),
    /// A bad record or a refused handshake.
    Tls(rustls::Error),
}

/// Reads plaintext into `buf`, reading and processing records as needed.
pub(crate) fn read(tls: &mut ClientConnection, fd: RawFd, buf: &mut [u8]) -> Got {
    loop {
        match tls.reader().read(buf) {
            Ok(n) => return Got::Bytes(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            // The server closed the TCP connection without a close_notify: an end like any.
            Err(_) => return Got::Bytes(0),
        }
        match tls.read_tls(&mut Fd(fd)) {
            Ok(0) => return Got::Bytes(0),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Got::WouldBlock,
            Err(e) => return Got::Io(e),
        }
        if let Err(e) = tls.process_new_packets() {
            // Tell the server why (the alert rustls queued), then give up.
            let _ = flush(tls, fd);
            return Got::Tls(e);
        }
        // The handshake's next flight (and the request held back until it ended).
        if tls.wants_write() {
            if let Err(e) = flush(tls, fd) {
                return Got::Io(e);
            }
        }
    }
}
