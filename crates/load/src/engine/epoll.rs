//! The default way the HTTP/1.1 engine waits: an epoll set of the thread's own, each socket
//! registered once, edge-triggered, for reading and writing, and a `send` and `recv` per
//! request on non-blocking sockets (through rustls for https, `tls.rs`).
//!
//! Only how bytes move lives here; what a request and its response do to a connection is the
//! engine's (`mod.rs`) and the connection's (`conn.rs`).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Instant;

use socket2::Socket;

use super::conn::{self, connect_failure, io_failure, send_failure, Phase};
use super::tls::{self, Got};
use super::Engine;
use crate::recorder::Failure;

/// Events collected per `epoll_wait`.
const EVENTS: usize = 256;

/// The engine's epoll set.
pub(super) struct Epoll {
    /// Owns the descriptor `fd` names.
    _owner: OwnedFd,
    fd: RawFd,
}

impl Epoll {
    pub(super) fn new() -> io::Result<Epoll> {
        // SAFETY: epoll_create1 returns a new descriptor we own, or -1.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh descriptor owned by nobody else.
        let owner = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Epoll {
            fd: owner.as_raw_fd(),
            _owner: owner,
        })
    }

    /// Registers a socket for connection `i`, edge-triggered, for reading and writing.
    fn add(&self, socket: &Socket, i: usize) -> bool {
        let mut event = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLOUT | libc::EPOLLRDHUP | libc::EPOLLET) as u32,
            u64: i as u64,
        };
        // SAFETY: registering a descriptor we own with our epoll set.
        let added = unsafe {
            libc::epoll_ctl(self.fd, libc::EPOLL_CTL_ADD, socket.as_raw_fd(), &mut event)
        };
        added == 0
    }
}

/// The buffer one `epoll_wait` fills.
pub(super) fn events() -> Vec<libc::epoll_event> {
    vec![libc::epoll_event { events: 0, u64: 0 }; EVENTS]
}

impl Engine {
    /// Waits up to `ms` for socket events, then handles them.
    pub(super) fn epoll_wait(&mut self, events: &mut [libc::epoll_event], ms: i32) {
        // SAFETY: the buffer holds `events.len()` entries.
        let n = unsafe {
            libc::epoll_wait(self.epoll.fd, events.as_mut_ptr(), events.len() as i32, ms)
        };
        for event in &events[..n.max(0) as usize] {
            self.on_event(event.u64 as usize, event.events);
        }
    }

    /// Connects connection `i`'s new non-blocking socket (begun at `began`), registers it,
    /// and starts its TLS session for https.
    pub(super) fn connect(
        &mut self,
        i: usize,
        socket: Socket,
        began: Instant,
    ) -> Result<(), Failure> {
        match socket.connect(&self.shared.addr.into()) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
            Err(e) => return Err(connect_failure(&e)),
        }
        if !self.epoll.add(&socket, i) {
            return Err(Failure::Connect);
        }
        let session = match &self.shared.tls {
            Some(client) => Some(tls::session(client)?),
            None => None,
        };
        let conn = &mut self.conns[i];
        conn.tls = session;
        conn.handshake_began = None;
        conn.opened(socket, began, false);
        Ok(())
    }

    /// Writes what is left of the request; on completion waits for the response.
    pub(super) fn epoll_send(&mut self, i: usize) {
        let shared = std::rc::Rc::clone(&self.shared);
        let conn = &mut self.conns[i];
        let Phase::Sending(done) = conn.phase else {
            return;
        };
        let Some(socket) = &conn.socket else {
            return;
        };
        let request = &shared.requests.entry(conn.entry).bytes;
        let fd = socket.as_raw_fd();
        if conn.tls.is_some() {
            if let Err(failure) = tls::send(conn, fd, request) {
                self.finish(i, Err(failure));
            }
            return;
        }
        let failure = match conn::send(fd, &request[done..]) {
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
                if let (Some(session), Some(socket)) = (conn.tls.as_mut(), conn.socket.as_ref()) {
                    if tls::flush(session, socket.as_raw_fd()).is_err() {
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
            let fd = match self.conns[i].readable() {
                Some(Ok(fd)) => fd,
                Some(Err(failure)) => return self.finish(i, Err(failure)),
                None => return,
            };
            let conn = &mut self.conns[i];
            let got = if conn.tls.is_some() {
                tls::receive(conn, fd)
            } else {
                match conn::recv(fd, &mut conn.buf[conn.end..]) {
                    Ok(n) => Got::Bytes(n),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => Got::WouldBlock,
                    Err(e) => Got::Io(e),
                }
            };
            let n = match got {
                Got::Bytes(n) => n,
                Got::WouldBlock => return,
                Got::Io(e) => {
                    self.finish(i, Err(io_failure(&e)));
                    return;
                }
                Got::Tls(e) => {
                    let mut recorder = self.shared.recorder.borrow_mut();
                    conn::note_tls_error(&mut recorder, || crate::tls::cause(&e));
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
}
