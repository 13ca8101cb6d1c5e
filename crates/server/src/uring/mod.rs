//! The default engine (`--io uring`): a worker driven by one io_uring instead of tokio and
//! epoll.
//!
//! One thread, one ring (SINGLE_ISSUER, DEFER_TASKRUN: the kernel runs completion work when
//! the thread waits, never by interrupting it). A multishot ACCEPT on the worker's listener
//! produces connections; each has one multishot RECV drawing from the worker's provided-buffer
//! ring; responses go by SEND, large files by sendfile(2) (see `conn.rs` for why). Everything a
//! round of completions produced is submitted by the one `io_uring_enter` that waits for the
//! next round, so a keep-alive request costs no syscall of its own. Deadlines (header,
//! keep-alive, send, linger) are swept ten times a second, as is the shutdown signal.
//!
//! The `/svc/` services run here too: a job goes to the services' executor and its connection
//! waits (`Serving`) until the executor's wake-up reaches the ring through an eventfd
//! (`wake.rs`). What it is not (yet): TLS and HTTP/2 run on the epoll engine only; with them
//! the server picks epoll by itself (and refuses an explicit `--io uring`). Registered files
//! and SEND_ZC are not used.

mod bufs;
mod conn;
mod wake;

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use io_uring::{cqueue, opcode, squeue, types, IoUring};

use crate::exchange::Peer;
use crate::slots::Slots;
use crate::worker::{Backoff, Start, Worker};
use bufs::BufRing;
use conn::{Conn, State};
use wake::Wakeups;

/// Submission queue entries (completions: four times as many; multishot operations post
/// many completions per submission).
const ENTRIES: u32 = 1024;
/// Provided buffers per worker, and their size: a request head fits one.
const BUFFERS: u16 = 512;
const BUFFER_SIZE: usize = 4096;
/// How often deadlines and the shutdown signal are looked at.
const TICK: Duration = Duration::from_millis(100);
/// The slot number of operations that belong to no connection (the accept, closes).
const NO_SLOT: usize = u32::MAX as usize;

/// What an operation was, in the low byte of its user data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Op {
    Accept = 1,
    Recv,
    Send,
    PollOut,
    SendMapped,
    Read,
    Shutdown,
    Cancel,
    Close,
    /// The READ on the eventfd through which the services' executor wakes the worker.
    Wake,
}

impl Op {
    fn from_byte(b: u8) -> Option<Op> {
        Some(match b {
            1 => Op::Accept,
            2 => Op::Recv,
            3 => Op::Send,
            4 => Op::PollOut,
            5 => Op::SendMapped,
            6 => Op::Read,
            7 => Op::Shutdown,
            8 => Op::Cancel,
            9 => Op::Close,
            10 => Op::Wake,
            _ => return None,
        })
    }
}

/// Slot, generation (24 bits) and operation: a completion of an earlier occupant of a slot
/// is known by its generation.
pub(super) fn user_data(slot: usize, generation: u32, op: Op) -> u64 {
    (slot as u64) << 32 | u64::from(generation & 0x00ff_ffff) << 8 | op as u64
}

/// What the connections of a worker share.
pub(super) struct Ctx {
    /// Declared before `bufs`: the ring (which may write into the buffers) goes first.
    ring: IoUring,
    bufs: BufRing,
    worker: Rc<Worker>,
    /// The clock read once per round of completions.
    now: Instant,
    /// With services: how their executor wakes this worker.
    wakeups: Option<Wakeups>,
}

impl Ctx {
    /// Queues an operation, submitting what is queued first if the queue is full.
    pub(super) fn push(&mut self, entry: squeue::Entry) {
        loop {
            // SAFETY: every buffer an entry points to (a connection's output or input, a
            // mapping, the provided buffers) stays put until its completion: a connection
            // is freed only once none of its operations is in flight.
            if unsafe { self.ring.submission().push(&entry) }.is_ok() {
                return;
            }
            let _ = self.ring.submit();
        }
    }
}

/// Builds the ring a worker runs on (also the start-up probe).
fn ring() -> io::Result<IoUring> {
    IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .setup_cqsize(ENTRIES * 4)
        .build(ENTRIES)
}

/// Whether this kernel gives `--io uring` what it needs: a ring with the set-up flags
/// (SINGLE_ISSUER, DEFER_TASKRUN), every opcode the engine uses, and a provided-buffer ring.
/// Err says what is missing: the server prints it in one line and serves with epoll.
pub fn probe() -> Result<(), String> {
    let ring = ring().map_err(|e| format!("io_uring_setup: {e}"))?;
    let mut probe = io_uring::Probe::new();
    ring.submitter()
        .register_probe(&mut probe)
        .map_err(|e| format!("IORING_REGISTER_PROBE: {e}"))?;
    let needed = [
        (opcode::AcceptMulti::CODE, "ACCEPT"),
        (opcode::RecvMulti::CODE, "RECV"),
        (opcode::Send::CODE, "SEND"),
        (opcode::Read::CODE, "READ"),
        (opcode::PollAdd::CODE, "POLL_ADD"),
        (opcode::Shutdown::CODE, "SHUTDOWN"),
        (opcode::AsyncCancel2::CODE, "ASYNC_CANCEL"),
        (opcode::Close::CODE, "CLOSE"),
    ];
    for (code, name) in needed {
        if !probe.is_supported(code) {
            return Err(format!("the kernel lacks IORING_OP_{name}"));
        }
    }
    BufRing::new(&ring, 1, 64).map_err(|e| format!("IORING_REGISTER_PBUF_RING: {e}"))?;
    Ok(())
}

/// The worker thread's body on io_uring; falls back to the epoll worker (with one line) if
/// the ring cannot be built here.
pub(crate) fn run(mut start: Start) {
    let services = start.services.is_some();
    let built = ring().and_then(|ring| {
        let bufs = BufRing::new(&ring, BUFFERS, BUFFER_SIZE)?;
        let wakeups = services.then(Wakeups::new).transpose()?;
        Ok((ring, bufs, wakeups))
    });
    let (ring, bufs, wakeups) = match built {
        Ok(built) => built,
        Err(err) => {
            eprintln!("webscope serve: io_uring refused ({err}); this worker serves with epoll");
            crate::epoll::run(start);
            return;
        }
    };
    let worker = Rc::new(Worker::take(&mut start));
    let mut engine = Engine {
        cx: Ctx {
            ring,
            bufs,
            worker,
            now: Instant::now(),
            wakeups,
        },
        conns: Vec::new(),
        woken: Vec::new(),
        free: Vec::new(),
        generation: 0,
        active: 0,
        slots: Arc::clone(&start.slots),
        parked: Vec::new(),
        listener: Some(start.listener),
        accept_armed: false,
        backoff: Backoff::default(),
        resume_accept: Instant::now(),
        stopping: None,
    };
    engine.arm_accept();
    engine.arm_wake();
    let _ = start.ready.send(Ok(()));
    engine.run(&start.shutdown);
}

struct Engine {
    cx: Ctx,
    conns: Vec<Option<Conn>>,
    /// Connections whose service job ended, as the wakers reported them.
    woken: Vec<u64>,
    free: Vec<usize>,
    generation: u32,
    active: usize,
    /// `--max-connections`, shared by all workers.
    slots: Arc<Slots>,
    /// Connections accepted past the limit (the multishot accept's cancel lags): they wait
    /// unserved, as in the backlog, until a slot frees.
    parked: Vec<OwnedFd>,
    listener: Option<std::net::TcpListener>,
    accept_armed: bool,
    /// accept() failing for want of descriptors or memory is waited out as on epoll.
    backoff: Backoff,
    resume_accept: Instant,
    /// Shutdown began; connections are cut at this instant.
    stopping: Option<Instant>,
}

impl Engine {
    fn run(mut self, shutdown: &tokio::sync::watch::Receiver<bool>) {
        let mut completions: Vec<(u64, i32, u32)> = Vec::with_capacity(ENTRIES as usize * 4);
        let mut next_tick = Instant::now() + TICK;
        let mut next_flush = Instant::now() + Duration::from_secs(1);
        let ts = types::Timespec::new().nsec(TICK.as_nanos() as u32);
        loop {
            let args = types::SubmitArgs::new().timespec(&ts);
            // ETIME (the tick) and EINTR are ordinary ends of a wait. Not counted as iowait
            // where the kernel allows (6.15+): a ring always armed (multishot accept and
            // receive) parked on its wait is iowait otherwise, and an idle server shows as
            // ~90 % I/O pressure in /proc/pressure/io, which the lab reads to tell a
            // disturbed machine.
            let flags = if self.cx.ring.params().is_feature_no_iowait() {
                io_uring::EnterFlags::NO_IOWAIT
            } else {
                io_uring::EnterFlags::empty()
            };
            let _ = self
                .cx
                .ring
                .submitter()
                .submit_with_args_and_flags(1, &args, flags);
            self.cx.now = Instant::now();
            webscope_http::date::set_now(webscope_http::date::unix_now());
            completions.extend(
                self.cx
                    .ring
                    .completion()
                    .map(|c| (c.user_data(), c.result(), c.flags())),
            );
            for &(data, result, flags) in &completions {
                self.complete(data, result, flags);
            }
            completions.clear();
            self.admit_parked();
            self.arm_accept();
            let now = self.cx.now;
            if now >= next_tick {
                next_tick = now + TICK;
                if self.stopping.is_none() && *shutdown.borrow() {
                    self.begin_stop();
                }
                self.sweep();
            }
            if now >= next_flush {
                next_flush = now + Duration::from_secs(1);
                self.cx.worker.flush_log();
            }
            if let Some(cut) = self.stopping {
                if self.active == 0 && !self.accept_armed {
                    break;
                }
                if now >= cut + Duration::from_secs(1) {
                    break; // operations that would not end even when aborted
                }
                if now >= cut {
                    self.abort_all();
                }
            }
        }
        self.cx.worker.flush_log();
        if self.active > 0 {
            // Operations may still be in flight: the ring goes first, and what they could
            // still write into (provided buffers, output buffers) is left to the process's
            // exit rather than freed under the kernel.
            let Engine { cx, conns, .. } = self;
            let Ctx { ring, bufs, .. } = cx;
            drop(ring);
            std::mem::forget(bufs);
            std::mem::forget(conns);
        }
    }

    fn complete(&mut self, data: u64, result: i32, flags: u32) {
        let slot = (data >> 32) as usize;
        let generation = ((data >> 8) & 0x00ff_ffff) as u32;
        let Some(op) = Op::from_byte(data as u8) else {
            return;
        };
        if slot == NO_SLOT {
            match op {
                Op::Accept => self.on_accept(result, flags),
                Op::Wake => self.on_wake(),
                _ => {}
            }
            return;
        }
        let cx = &mut self.cx;
        let Some(Some(conn)) = self.conns.get_mut(slot) else {
            return;
        };
        if conn.generation & 0x00ff_ffff != generation {
            return;
        }
        match op {
            Op::Recv => conn.on_recv(cx, slot, result, flags),
            Op::Send => conn.on_send(cx, slot, result),
            Op::PollOut | Op::SendMapped | Op::Read => conn.on_tail(cx, slot, op, result),
            Op::Shutdown | Op::Cancel => conn.inflight -= 1,
            Op::Accept | Op::Close | Op::Wake => {}
        }
        if conn.state == State::Closing && conn.inflight == 0 {
            self.finish(slot);
        }
    }

    /// Keeps one READ armed on the eventfd (with services only).
    fn arm_wake(&mut self) {
        if let Some(wakeups) = &self.cx.wakeups {
            let read = wakeups.read().user_data(user_data(NO_SLOT, 0, Op::Wake));
            self.cx.push(read);
        }
    }

    /// The eventfd was written: services' jobs ended, and their connections answer.
    fn on_wake(&mut self) {
        self.arm_wake();
        let mut woken = std::mem::take(&mut self.woken);
        if let Some(wakeups) = &self.cx.wakeups {
            wakeups.drain(&mut woken);
        }
        for key in woken.drain(..) {
            let slot = (key >> 32) as usize;
            let cx = &mut self.cx;
            let Some(Some(conn)) = self.conns.get_mut(slot) else {
                continue;
            };
            if conn.generation & 0x00ff_ffff != ((key >> 8) & 0x00ff_ffff) as u32 {
                continue;
            }
            conn.on_service(cx, slot);
            if conn.state == State::Closing && conn.inflight == 0 {
                self.finish(slot);
            }
        }
        self.woken = woken;
    }

    fn on_accept(&mut self, result: i32, flags: u32) {
        if !cqueue::more(flags) {
            self.accept_armed = false;
        }
        if result < 0 {
            let err = io::Error::from_raw_os_error(-result);
            if let Some(delay) = self.backoff.after(&err) {
                // At the tick's resolution.
                self.resume_accept = self.cx.now + delay;
            }
            return;
        }
        self.backoff.reset();
        // SAFETY: a fresh descriptor from accept, owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(result) };
        if self.stopping.is_some() {
            return; // dropped: closed
        }
        if !self.slots.try_take() {
            self.parked.push(fd);
            self.cancel_accept();
            return;
        }
        self.serve(fd);
        if !self.slots.has_room() {
            self.cancel_accept();
        }
    }

    /// Serves the connections accepted past the limit as slots free (oldest first).
    fn admit_parked(&mut self) {
        while !self.parked.is_empty() && self.stopping.is_none() && self.slots.try_take() {
            let fd = self.parked.remove(0);
            self.serve(fd);
        }
    }

    /// Starts serving an accepted connection that holds a slot.
    fn serve(&mut self, fd: OwnedFd) {
        let peer = if self.cx.worker.log_enabled() {
            peer_addr(fd.as_raw_fd())
        } else {
            SocketAddr::from(([0, 0, 0, 0], 0))
        };
        self.generation = self.generation.wrapping_add(1);
        let mut conn = Conn::new(
            fd,
            self.generation,
            Peer::new(peer, &self.cx.worker),
            &self.cx,
        );
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => {
                self.conns.push(None);
                self.conns.len() - 1
            }
        };
        conn.arm_recv(&mut self.cx, slot);
        self.conns[slot] = Some(conn);
        self.active += 1;
    }

    fn arm_accept(&mut self) {
        if self.accept_armed
            || self.stopping.is_some()
            || !self.parked.is_empty()
            || !self.slots.has_room()
            || self.cx.now < self.resume_accept
        {
            return;
        }
        let Some(listener) = &self.listener else {
            return;
        };
        // Non-blocking: large files go by sendfile(2), which must never block the worker
        // (the ring's own operations do not care).
        let accept = opcode::AcceptMulti::new(types::Fd(listener.as_raw_fd()))
            .flags(libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK)
            .build()
            .user_data(user_data(NO_SLOT, 0, Op::Accept));
        self.cx.push(accept);
        self.accept_armed = true;
    }

    fn cancel_accept(&mut self) {
        if self.accept_armed {
            let cancel = opcode::AsyncCancel2::new(types::CancelBuilder::user_data(user_data(
                NO_SLOT,
                0,
                Op::Accept,
            )))
            .build()
            .user_data(user_data(NO_SLOT, 0, Op::Cancel));
            self.cx.push(cancel);
        }
    }

    /// The connection in `slot` has nothing in flight: close its descriptor and free it.
    fn finish(&mut self, slot: usize) {
        let Some(mut conn) = self.conns[slot].take() else {
            return;
        };
        // A response cut short is logged with the bytes it got.
        conn.account_tail();
        self.cx
            .worker
            .timing
            .end_connection(conn.accepted, conn.h1.served);
        // The close rides on the next submission instead of costing a syscall now.
        let fd = std::mem::ManuallyDrop::new(conn.fd);
        let close = opcode::Close::new(types::Fd(fd.as_raw_fd()))
            .build()
            .user_data(user_data(NO_SLOT, 0, Op::Close));
        self.cx.push(close);
        self.free.push(slot);
        self.active -= 1;
        self.slots.release();
    }

    fn sweep(&mut self) {
        let now = self.cx.now;
        for slot in 0..self.conns.len() {
            let cx = &mut self.cx;
            let Some(conn) = self.conns[slot].as_mut() else {
                continue;
            };
            if conn.deadline <= now {
                conn.expire(cx, slot);
            }
            if conn.state == State::Closing && conn.inflight == 0 {
                self.finish(slot);
            }
        }
    }

    fn begin_stop(&mut self) {
        let worker = Rc::clone(&self.cx.worker);
        worker.begin_shutdown();
        self.stopping = Some(self.cx.now + worker.config.shutdown_timeout);
        self.cancel_accept();
        self.parked.clear();
        // The accept holds its own reference to the socket until it is cancelled.
        self.listener = None;
        for slot in 0..self.conns.len() {
            let cx = &mut self.cx;
            if let Some(conn) = self.conns[slot].as_mut() {
                conn.stop_if_idle(cx, slot);
                if conn.state == State::Closing && conn.inflight == 0 {
                    self.finish(slot);
                }
            }
        }
    }

    fn abort_all(&mut self) {
        for slot in 0..self.conns.len() {
            let cx = &mut self.cx;
            if let Some(conn) = self.conns[slot].as_mut() {
                if conn.state != State::Closing {
                    conn.abort(cx, slot);
                }
                if conn.inflight == 0 {
                    self.finish(slot);
                }
            }
        }
    }
}

/// The peer of an accepted socket (multishot accept does not return it).
fn peer_addr(fd: RawFd) -> SocketAddr {
    // SAFETY: try_init hands getpeername a zeroed sockaddr_storage and its length.
    let got = unsafe {
        socket2::SockAddr::try_init(|storage, len| {
            if libc::getpeername(fd, storage.cast(), len) == 0 {
                Ok(())
            } else {
                Err(io::Error::last_os_error())
            }
        })
    };
    got.ok()
        .and_then(|((), addr)| addr.as_socket())
        .unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)))
}
