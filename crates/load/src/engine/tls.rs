//! The HTTP/1.1 engine's https path (`epoll.rs` calls it): the socket I/O of a connection
//! whose bytes go through rustls.
//!
//! The engine stays the same state machine: a request is handed to rustls whole (it keeps it
//! until the handshake is done), `flush` writes whatever records rustls has, and `read` turns
//! arriving records into plaintext in the connection's buffer, driving the handshake on the
//! way. Only the system calls differ: `send` and `recv` on the same non-blocking socket.
//! (The HTTP/2 engine's TLS is tokio-rustls's, in `h2.rs`.)

use std::io::{self, Read, Write};
use std::os::fd::RawFd;
use std::time::Instant;

use rustls::ClientConnection;

use super::conn::{self, send_failure, Conn, Phase};
use crate::recorder::Failure;
use crate::shared::TlsClient;

/// The socket as rustls wants it: `Read` and `Write` over `recv` and `send`.
struct Fd(RawFd);

impl Read for Fd {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        conn::recv(self.0, buf)
    }
}

impl Write for Fd {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        conn::send(self.0, buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A new client session for a new connection.
pub(super) fn session(client: &TlsClient) -> Result<Box<ClientConnection>, Failure> {
    let (config, name) = client;
    Ok(Box::new(
        ClientConnection::new(std::sync::Arc::clone(config), name.clone())
            .map_err(|_| Failure::Tls)?,
    ))
}

/// Writes out the records rustls has; Ok(true) when none is left, Ok(false) when the socket
/// is full (the next writable event resumes).
pub(super) fn flush(tls: &mut ClientConnection, fd: RawFd) -> io::Result<bool> {
    while tls.wants_write() {
        match tls.write_tls(&mut Fd(fd)) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// Sends `request` on connection `conn` (whose session it is) over socket `fd`: hands it to
/// rustls once, whole, and writes out the records; the connection's phase says how far it
/// got. Err: the failure to record.
pub(super) fn send(conn: &mut Conn, fd: RawFd, request: &[u8]) -> Result<(), Failure> {
    let Phase::Sending(done) = conn.phase else {
        return Ok(());
    };
    let Some(tls) = conn.tls.as_mut() else {
        return Ok(());
    };
    if done == 0 && tls.writer().write_all(request).is_err() {
        return Err(Failure::Tls);
    }
    conn.phase = Phase::Sending(request.len());
    match flush(tls, fd) {
        Ok(true) => {
            if let Some(began) = conn.connect_began.take() {
                let now = Instant::now();
                conn.connect = Some(now - began);
                if tls.is_handshaking() {
                    conn.handshake_began = Some(now);
                }
            }
            conn.phase = Phase::Receiving;
            Ok(())
        }
        Ok(false) => Ok(()),
        Err(e) => match send_failure(conn, &e) {
            Some(failure) => Err(failure),
            None => Ok(()),
        },
    }
}

/// Reads plaintext into connection `conn`'s buffer from socket `fd`, and notes when its
/// handshake ended (its time and whether it resumed a session).
pub(super) fn receive(conn: &mut Conn, fd: RawFd) -> Got {
    let Some(tls) = conn.tls.as_mut() else {
        return Got::WouldBlock;
    };
    let got = read(tls, fd, &mut conn.buf[conn.end..]);
    if let Some(began) = conn.handshake_began {
        if !tls.is_handshaking() {
            let resumed = tls.handshake_kind() == Some(rustls::HandshakeKind::Resumed);
            conn.handshake = Some((began.elapsed(), resumed));
            conn.handshake_began = None;
        }
    }
    got
}

/// What a read found.
pub(super) enum Got {
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
fn read(tls: &mut ClientConnection, fd: RawFd, buf: &mut [u8]) -> Got {
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
