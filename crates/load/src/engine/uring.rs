//! `--io uring`: the HTTP/1.1 engine's connections driven through one io_uring per thread instead of
//! an epoll set and a syscall per send and recv.
//!
//! A new connection is a blocking socket (io_uring answers EAGAIN on a non-blocking one
//! instead of waiting) whose CONNECT is linked to the request's SEND; a SEND is linked to the
//! RECV of its response, so a request costs no syscall of its own: everything a wake-up
//! produced is submitted by the `io_uring_enter` that also waits for the next completions
//! (with the engine's timer as its timeout). A connection's socket and buffer are left alone
//! while any of its operations is in flight: closing one shuts it down, which completes them,
//! and the descriptor is closed after the last; completions of an earlier socket are known
//! by their generation and dropped.
//!
//! Not yet: TLS, HTTP/2, open loop (refused by the configuration's check).

use std::io;
use std::os::fd::AsRawFd;
use std::time::Instant;

use io_uring::{opcode, squeue, types, IoUring};

use super::conn::{connect_failure, io_failure, Phase};
use super::Engine;

const CONNECT: u64 = 1;
const SEND: u64 = 2;
const RECV: u64 = 3;

/// IORING_RECVSEND_POLL_FIRST: a response is never there the moment its request has left, so
/// a receive waits for readability first instead of trying, failing and then waiting.
const POLL_FIRST: u16 = 1;

/// The thread's ring and the server's address in the form CONNECT reads.
pub(super) struct Ring {
    ring: IoUring,
    addr: socket2::SockAddr,
    completions: Vec<(u64, i32)>,
}

impl Ring {
    pub(super) fn new(connections: usize, addr: &std::net::SocketAddr) -> io::Result<Ring> {
        // Each connection has at most a CONNECT, a SEND and a RECV in flight.
        let entries = (3 * connections + 16).next_power_of_two().min(32_768) as u32;
        Ok(Ring {
            // One thread submits and reaps (SINGLE_ISSUER), and the kernel runs completion
            // work only when that thread waits (DEFER_TASKRUN), not by interrupting it.
            ring: IoUring::builder()
                .setup_single_issuer()
                .setup_defer_taskrun()
                .build(entries)?,
            addr: socket2::SockAddr::from(*addr),
            completions: Vec::with_capacity(entries as usize),
        })
    }

    /// Queues an operation, submitting what is queued first if the queue is full.
    fn push(&mut self, entry: squeue::Entry) {
        loop {
            // SAFETY: every buffer and address an entry points to (a connection's buffer, a
            // request's bytes, `addr`) lives, unmoved, until its completion: connections are
            // only reused or closed once their operations have completed.
            if unsafe { self.ring.submission().push(&entry) }.is_ok() {
                return;
            }
            let _ = self.ring.submit();
        }
    }
}

fn user_data(i: usize, generation: u32, op: u64) -> u64 {
    (i as u64) << 32 | u64::from(generation & 0x00ff_ffff) << 8 | op
}

impl Engine {
    /// Submits the rest of connection `i`'s request (its connect first for a new socket),
    /// linked to the receive of its response.
    pub(super) fn ring_send(&mut self, i: usize) {
        let shared = std::rc::Rc::clone(&self.shared);
        let Some(ring) = self.ring.as_mut() else {
            return;
        };
        let conn = &mut self.conns[i];
        let Phase::Sending(done) = conn.phase else {
            return;
        };
        let Some(socket) = &conn.socket else {
            return;
        };
        let fd = types::Fd(socket.as_raw_fd());
        let gen = conn.generation;
        if conn.connecting {
            conn.connecting = false;
            let connect = opcode::Connect::new(fd, ring.addr.as_ptr().cast(), ring.addr.len())
                .build()
                .flags(squeue::Flags::IO_LINK)
                .user_data(user_data(i, gen, CONNECT));
            ring.push(connect);
            conn.inflight += 1;
        }
        let request = &shared.requests.entry(conn.entry).bytes[done..];
        let send = opcode::Send::new(fd, request.as_ptr(), request.len() as u32)
            .flags(libc::MSG_NOSIGNAL)
            .build()
            .flags(squeue::Flags::IO_LINK)
            .user_data(user_data(i, gen, SEND));
        ring.push(send);
        let spare = &mut conn.buf[conn.end..];
        let recv = opcode::Recv::new(fd, spare.as_mut_ptr(), spare.len() as u32)
            .ioprio(POLL_FIRST)
            .build()
            .user_data(user_data(i, gen, RECV));
        ring.push(recv);
        conn.inflight += 2;
    }

    /// Submits a receive into connection `i`'s buffer (more of a response).
    fn ring_recv(&mut self, i: usize) {
        let fd = match self.conns[i].readable() {
            Some(Ok(fd)) => fd,
            Some(Err(failure)) => return self.finish(i, Err(failure)),
            None => return,
        };
        let Some(ring) = self.ring.as_mut() else {
            return;
        };
        let conn = &mut self.conns[i];
        let spare = &mut conn.buf[conn.end..];
        let recv = opcode::Recv::new(types::Fd(fd), spare.as_mut_ptr(), spare.len() as u32)
            .build()
            .user_data(user_data(i, conn.generation, RECV));
        ring.push(recv);
        conn.inflight += 1;
    }

    /// Submits what is queued and waits up to `ms` for completions, then handles them.
    pub(super) fn ring_wait(&mut self, ms: i32) {
        let Some(ring) = self.ring.as_mut() else {
            return;
        };
        let ts = types::Timespec::new()
            .sec((ms / 1000) as u64)
            .nsec((ms % 1000) as u32 * 1_000_000);
        let args = types::SubmitArgs::new().timespec(&ts);
        // ETIME (the timeout) and EINTR are ordinary ends of a wait. Not counted as iowait
        // where the kernel allows (6.15+): the generator's waits would otherwise show as I/O
        // pressure, which the lab reads to tell a disturbed machine.
        let flags = if ring.ring.params().is_feature_no_iowait() {
            io_uring::EnterFlags::NO_IOWAIT
        } else {
            io_uring::EnterFlags::empty()
        };
        let _ = ring
            .ring
            .submitter()
            .submit_with_args_and_flags(1, &args, flags);
        let mut completions = std::mem::take(&mut ring.completions);
        completions.extend(ring.ring.completion().map(|c| (c.user_data(), c.result())));
        for &(data, result) in &completions {
            self.on_completion(data, result);
        }
        completions.clear();
        if let Some(ring) = self.ring.as_mut() {
            ring.completions = completions;
        }
    }

    fn on_completion(&mut self, data: u64, result: i32) {
        let i = (data >> 32) as usize;
        let op = data & 0xff;
        let gen = ((data >> 8) & 0x00ff_ffff) as u32;
        let Some(conn) = self.conns.get_mut(i) else {
            return;
        };
        conn.inflight = conn.inflight.saturating_sub(1);
        if gen != conn.generation & 0x00ff_ffff {
            // An earlier socket's operation: once the last is in, the socket can go.
            if conn.inflight == 0 {
                conn.close();
                if std::mem::take(&mut conn.restart) {
                    self.start(i, Instant::now(), None);
                }
            }
            return;
        }
        match (op, result) {
            // A failed connect cancels the linked send and receive (their completions come
            // with ECANCELED, of this generation's socket, and are dropped below).
            (CONNECT, r) if r < 0 => {
                let e = io::Error::from_raw_os_error(-r);
                self.finish(i, Err(connect_failure(&e)));
            }
            (CONNECT, _) => {}
            (SEND | RECV, r) if r == -libc::ECANCELED => {}
            (SEND, r) if r < 0 => {
                let e = io::Error::from_raw_os_error(-r);
                let failure = if conn.connect_began.is_some() {
                    connect_failure(&e)
                } else {
                    io_failure(&e)
                };
                self.finish(i, Err(failure));
            }
            (SEND, n) => {
                let Phase::Sending(done) = conn.phase else {
                    return;
                };
                let len = self.shared.requests.entry(conn.entry).bytes.len();
                let done = done + n as usize;
                if done < len {
                    // A short send broke the link: the receive was cancelled. Send the rest,
                    // and receive after it again.
                    conn.phase = Phase::Sending(done);
                    self.ring_send(i);
                    return;
                }
                if let Some(began) = conn.connect_began.take() {
                    conn.connect = Some(began.elapsed());
                }
                conn.phase = Phase::Receiving;
            }
            (RECV, r) if r < 0 => {
                let e = io::Error::from_raw_os_error(-r);
                self.finish(i, Err(io_failure(&e)));
            }
            (RECV, n) => {
                if conn.phase != Phase::Receiving {
                    return;
                }
                if self.received(i, n as usize) {
                    self.ring_recv(i);
                }
            }
            _ => {}
        }
    }
}
