//! One connection of the io_uring engine: the HTTP/1.1 loop of `epoll/conn.rs` as a state
//! machine that reacts to completions instead of awaiting them, around the same `Http1`
//! (`http1.rs`), which finds the requests and has `exchange.rs` answer them.
//!
//! A connection has one multishot receive armed for its whole life (data lands in the
//! worker's provided buffers and is copied to the connection's input), answers every complete
//! request buffered, and has at most one write in flight: the output buffer by SEND, then a
//! large file by sendfile(2) itself (with POLL_ADD for POLLOUT when the socket is full), by
//! SEND from its mapping, or by READ into the output buffer and SEND. Timeouts are deadlines
//! the worker sweeps. Nothing it owns (buffers, descriptor) is released while one of its
//! operations is in flight: `inflight` counts them.
//!
//! Why a syscall for large files on an engine whose point is to have none: io_uring has no
//! sendfile. Its SPLICE (file → pipe → socket) is punted to the kernel's io-wq workers, and
//! SEND from the mapping (or SEND_ZC on loopback, which copies at delivery) copies the body
//! into the socket buffer. Measured per 100 KiB response (one worker, CPU-µs, alternated
//! runs): sendfile 33.5 against 35.8 for SEND from the mapping; in other runs SPLICE took
//! 40.9 and SEND_ZC 42.9 where epoll's sendfile took 31.0 and 35.6.
//!
//! (About 600 lines, kept in one file: the states and the completions that move between them
//! read together; split, one transition would send the reader across files.)

use std::future::Future;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use io_uring::{cqueue, opcode, squeue, types};
use webscope_http::request::{self, Request};

use super::{user_data, Ctx, Op};
use crate::exchange::{Exchange, Peer};
use crate::http1::{After, Answer, Answering, Http1, Waiting};
use crate::respond::Tail;

/// Output is written out once this much is buffered, even if more pipelined requests wait.
const OUT_HIGH_WATER: usize = 64 * 1024;
/// Bytes of a large file per READ when neither sendfile nor mmap is on (the baseline).
const READ_CHUNK: usize = 64 * 1024;
/// Input buffered while a response is being written beyond which receiving pauses.
const PAUSE_INPUT: usize = 1 << 20;
/// How long a closing connection reads and discards what the client still sends.
const LINGER: Duration = Duration::from_secs(2);
/// What a lingering connection reads at most before it closes anyway.
const LINGER_BYTES: usize = 1 << 20;

/// Where a connection is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum State {
    /// Waiting for (more of) a request.
    Reading,
    /// A response is being written.
    Writing,
    /// A `/svc/` request waits for its job on the services' executor.
    Serving,
    /// Half-closed after a last response, reading and discarding until the client closes.
    Lingering,
    /// Done: waiting for its operations to complete before the descriptor is closed.
    Closing,
}

/// A large body being sent after its head.
struct TailSend {
    tail: Tail,
    offset: u64,
    end: u64,
    /// The file ended early: the connection must close once what was read is sent.
    short: bool,
    /// Operations of this tail in flight.
    ops: u32,
}

pub(super) struct Conn {
    pub fd: OwnedFd,
    pub generation: u32,
    pub state: State,
    pub deadline: Instant,
    /// Operations in flight; the descriptor closes when this is 0 in `Closing`.
    pub inflight: u32,
    /// Clock reading at accept (for the connection's life in the stats).
    pub accepted: u64,
    pub h1: Http1,
    /// Bytes of the output already sent.
    sent: usize,
    tail: Option<TailSend>,
    head_deadline: Option<Instant>,
    recv_armed: bool,
    /// Receiving was cancelled because too much input piled up during a write.
    paused: bool,
    /// The client closed its side.
    eof: bool,
    after: After,
    /// The request answered last, whose sample is recorded once its response has left.
    pending: Option<Exchange>,
    /// The `/svc/` request being served (`State::Serving`).
    job: Option<Waiting>,
    drained: usize,
}

impl Conn {
    pub(super) fn new(fd: OwnedFd, generation: u32, peer: Peer, cx: &Ctx) -> Conn {
        Conn {
            fd,
            generation,
            state: State::Reading,
            deadline: cx.now + cx.worker.config.header_timeout,
            inflight: 0,
            accepted: cx.worker.timing.start_connection(),
            h1: Http1::new(peer, 0),
            sent: 0,
            tail: None,
            head_deadline: None,
            recv_armed: false,
            paused: false,
            eof: false,
            after: After::KeepOpen,
            pending: None,
            job: None,
            drained: 0,
        }
    }

    fn raw(&self) -> types::Fd {
        types::Fd(self.fd.as_raw_fd())
    }

    fn push(&mut self, cx: &mut Ctx, slot: usize, op: Op, entry: squeue::Entry) {
        cx.push(entry.user_data(user_data(slot, self.generation, op)));
        self.inflight += 1;
    }

    pub(super) fn arm_recv(&mut self, cx: &mut Ctx, slot: usize) {
        if self.recv_armed || self.eof {
            return;
        }
        let recv = opcode::RecvMulti::new(self.raw(), super::bufs::GROUP).build();
        self.push(cx, slot, Op::Recv, recv);
        self.recv_armed = true;
    }

    /// A receive completed: data (in a provided buffer), the end of input, or an error.
    pub(super) fn on_recv(&mut self, cx: &mut Ctx, slot: usize, result: i32, flags: u32) {
        if !cqueue::more(flags) {
            self.recv_armed = false;
            self.inflight -= 1;
        }
        if let Some(bid) = cqueue::buffer_select(flags) {
            if result > 0 {
                let data = cx.bufs.get(bid, result as usize);
                match self.state {
                    State::Reading | State::Writing | State::Serving => {
                        if self.state == State::Reading && self.h1.start == self.h1.input.len() {
                            self.h1.head_arrived(&cx.worker.timing);
                        }
                        self.h1.input.extend_from_slice(data);
                    }
                    State::Lingering => self.drained += data.len(),
                    State::Closing => {}
                }
            }
            cx.bufs.recycle(bid);
        }
        match result {
            0 => {
                self.eof = true;
                if matches!(self.state, State::Reading | State::Lingering) {
                    self.close(cx, slot);
                }
                return;
            }
            n if n > 0 => {}
            e if e == -libc::ENOBUFS || e == -libc::ECANCELED => {}
            _ => {
                self.abort(cx, slot);
                return;
            }
        }
        match self.state {
            State::Reading => self.advance(cx, slot),
            State::Writing | State::Serving => {
                if self.recv_armed && self.h1.input.len() - self.h1.start > PAUSE_INPUT {
                    let cancel = opcode::AsyncCancel2::new(types::CancelBuilder::user_data(
                        user_data(slot, self.generation, Op::Recv),
                    ))
                    .build();
                    self.push(cx, slot, Op::Cancel, cancel);
                    self.paused = true;
                }
            }
            State::Lingering if self.drained >= LINGER_BYTES => self.close(cx, slot),
            State::Lingering | State::Closing => {}
        }
        if !self.paused
            && matches!(
                self.state,
                State::Reading | State::Writing | State::Serving | State::Lingering
            )
        {
            self.arm_recv(cx, slot);
        }
    }

    /// Answers every complete request buffered, then writes, or waits for more input.
    fn advance(&mut self, cx: &mut Ctx, slot: usize) {
        if self.state != State::Reading {
            return;
        }
        while self.h1.request_waiting() {
            // The request borrows the input while it is answered: lend the buffer out.
            let input = std::mem::take(&mut self.h1.input);
            let answered = self.step(cx, &input);
            self.h1.input = input;
            if !answered
                || self.job.is_some()
                || self.tail.is_some()
                || self.after != After::KeepOpen
                || self.h1.output.len() >= OUT_HIGH_WATER
            {
                break;
            }
        }
        if self.job.is_some() {
            self.state = State::Serving;
            // Its first poll registers the waker (the job may even be done already).
            self.on_service(cx, slot);
        } else if !self.h1.output.is_empty() || self.tail.is_some() {
            self.state = State::Writing;
            self.deadline = cx.now + cx.worker.config.send_timeout;
            self.send_next(cx, slot);
        } else {
            self.wait_input(cx, slot);
        }
    }

    /// Parses the next buffered request and answers it; false if it is not complete yet.
    fn step(&mut self, cx: &mut Ctx, input: &[u8]) -> bool {
        let pending = &input[self.h1.start..];
        match request::parse(pending, &cx.worker.config.limits) {
            Ok(Some(req)) => {
                self.answer(cx, &req, input);
                true
            }
            Ok(None) => false,
            Err(err) => {
                self.refuse(cx, err.status(), pending);
                true
            }
        }
    }

    /// Answers a request from the document root, or hands it to the services (then the
    /// answer waits for [`Conn::on_service`]).
    fn answer(&mut self, cx: &mut Ctx, req: &Request<'_>, input: &[u8]) {
        let worker = Rc::clone(&cx.worker);
        match self.h1.answer(&worker, req, input.len()) {
            Answering::Ready(answer) => self.answered(cx, answer, input.len()),
            Answering::Waiting(waiting) => self.job = Some(waiting),
        }
    }

    /// The service job of this connection may have ended: if it has, its request is
    /// answered (parsed again from the input, which kept it) and the connection goes on.
    pub(super) fn on_service(&mut self, cx: &mut Ctx, slot: usize) {
        let (Some(Waiting { job, .. }), Some(wakeups)) = (self.job.as_mut(), cx.wakeups.as_ref())
        else {
            return;
        };
        if self.state != State::Serving {
            return;
        }
        let waker = wakeups.waker(user_data(slot, self.generation, Op::Wake));
        let Poll::Ready(result) = std::pin::Pin::new(job).poll(&mut Context::from_waker(&waker))
        else {
            return;
        };
        let Some(waiting) = self.job.take() else {
            return;
        };
        let worker = Rc::clone(&cx.worker);
        let input = std::mem::take(&mut self.h1.input);
        // The same bytes parsed before, so they parse again.
        if let Ok(Some(req)) = request::parse(&input[self.h1.start..], &worker.config.limits) {
            let answer = self
                .h1
                .service_answered(&worker, &req, input.len(), waiting, result);
            self.answered(cx, answer, input.len());
        }
        self.h1.input = input;
        self.state = State::Reading;
        self.advance(cx, slot);
    }

    /// What follows an answer: its tail to send, its sample to record now or once sent.
    fn answered(&mut self, cx: &Ctx, answer: Answer, input_len: usize) {
        self.head_deadline = None;
        self.after = answer.after;
        if let Some((offset, end)) = answer.tail.range() {
            self.tail = Some(TailSend {
                tail: answer.tail,
                offset,
                end,
                short: false,
                ops: 0,
            });
            self.pending = Some(answer.exchange);
        } else if answer.pipelined {
            // More requests are answered into the same write: this one is done now.
            self.h1.sent(&cx.worker.timing, answer.exchange, input_len);
        } else {
            self.pending = Some(answer.exchange);
        }
    }

    /// Answers a request that could not be parsed (or timed out); the connection lingers.
    fn refuse(&mut self, cx: &mut Ctx, status: u16, pending: &[u8]) {
        self.pending = Some(self.h1.refuse(&cx.worker, status, pending));
        self.after = After::Linger;
    }

    /// Nothing to write: wait for the next request (or end an idle connection).
    fn wait_input(&mut self, cx: &mut Ctx, slot: usize) {
        let idle = self.h1.idle();
        if self.eof || (idle && cx.worker.shutting_down()) {
            self.close(cx, slot);
            return;
        }
        let config = &cx.worker.config;
        self.deadline = if idle {
            let wait = if self.h1.served == 0 {
                config.header_timeout
            } else {
                config.keepalive_timeout
            };
            cx.now + wait
        } else {
            *self
                .head_deadline
                .get_or_insert(cx.now + config.header_timeout)
        };
        self.h1.compact();
        self.paused = false;
        self.arm_recv(cx, slot);
    }

    /// Submits the next write: the rest of the output, then the tail; or finishes.
    fn send_next(&mut self, cx: &mut Ctx, slot: usize) {
        if self.sent < self.h1.output.len() {
            let data = &self.h1.output[self.sent..];
            // MSG_MORE only while more of the body follows: on the last piece it would hold
            // the final segment back until the kernel's cork timer fires.
            let follows = self
                .tail
                .as_ref()
                .is_some_and(|t| t.offset < t.end && !t.short);
            let more = if follows { libc::MSG_MORE } else { 0 };
            let send = opcode::Send::new(self.raw(), data.as_ptr(), data.len() as u32)
                .flags(libc::MSG_NOSIGNAL | more)
                .build();
            self.push(cx, slot, Op::Send, send);
            return;
        }
        if self.tail.is_some() {
            if self.submit_tail(cx, slot) {
                return;
            }
            self.account_tail();
            if let Some(done) = self.tail.take() {
                if done.short {
                    self.after = After::Close;
                }
            }
        }
        self.written(cx, slot);
    }

    /// Submits the tail's next operations; false when the tail is all sent.
    fn submit_tail(&mut self, cx: &mut Ctx, slot: usize) -> bool {
        let fd = self.raw();
        let Some(t) = self.tail.as_mut() else {
            return false;
        };
        if t.short || t.offset >= t.end {
            return false;
        }
        let entry = match &t.tail {
            Tail::Sendfile(file, ..) => {
                match crate::io::sendfile(fd.0, file, t.offset, t.end - t.offset) {
                    Ok(0) => {
                        // The file shrank since its size was taken.
                        t.short = true;
                        return false;
                    }
                    Ok(n) => {
                        t.offset += n;
                        self.deadline = cx.now + cx.worker.config.send_timeout;
                        if t.offset >= t.end {
                            return false;
                        }
                    }
                    Err(err)
                        if matches!(
                            err.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted
                        ) => {}
                    Err(_) => {
                        self.abort(cx, slot);
                        return true;
                    }
                }
                // The socket took what it could: wait until it takes more.
                (
                    Op::PollOut,
                    opcode::PollAdd::new(fd, libc::POLLOUT as u32).build(),
                )
            }
            Tail::Mapped(map, ..) => {
                let len = (t.end - t.offset).min(1 << 30) as usize;
                let data = &map[t.offset as usize..t.offset as usize + len];
                let send = opcode::Send::new(fd, data.as_ptr(), len as u32)
                    .flags(libc::MSG_NOSIGNAL)
                    .build();
                (Op::SendMapped, send)
            }
            Tail::Read(file, ..) => {
                let chunk = (t.end - t.offset).min(READ_CHUNK as u64) as usize;
                self.h1.output.clear();
                self.h1.output.reserve(chunk);
                let read = opcode::Read::new(
                    types::Fd(file.as_raw_fd()),
                    self.h1.output.as_mut_ptr(),
                    chunk as u32,
                )
                .offset(t.offset)
                .build();
                (Op::Read, read)
            }
            Tail::None => return false,
        };
        t.ops += 1;
        self.push(cx, slot, entry.0, entry.1);
        true
    }

    /// A SEND of the output completed.
    pub(super) fn on_send(&mut self, cx: &mut Ctx, slot: usize, result: i32) {
        self.inflight -= 1;
        if self.state != State::Writing {
            return;
        }
        if result < 0 {
            self.abort(cx, slot);
            return;
        }
        self.deadline = cx.now + cx.worker.config.send_timeout;
        self.sent += result as usize;
        if self.sent >= self.h1.output.len() {
            self.h1.output.clear();
            self.sent = 0;
        }
        self.send_next(cx, slot);
    }

    /// An operation of the tail (POLL_ADD for sendfile, SEND from the mapping, READ) completed.
    pub(super) fn on_tail(&mut self, cx: &mut Ctx, slot: usize, op: Op, result: i32) {
        self.inflight -= 1;
        if result < 0 && result != -libc::ECANCELED && self.state == State::Writing {
            if let Some(t) = self.tail.as_mut() {
                t.ops -= 1;
            }
            self.abort(cx, slot);
            return;
        }
        let Some(t) = self.tail.as_mut() else {
            return;
        };
        t.ops -= 1;
        if self.state != State::Writing {
            return;
        }
        let n = result.max(0) as u64;
        match (op, result) {
            (_, r) if r < 0 => {} // ECANCELED
            (Op::SendMapped, _) => t.offset += n,
            (Op::PollOut, _) => {}
            (Op::Read, _) => {
                let asked = (t.end - t.offset).min(READ_CHUNK as u64);
                // SAFETY: the READ wrote `n` bytes into the output's spare capacity.
                unsafe { self.h1.output.set_len(n as usize) };
                self.sent = 0;
                t.offset += n;
                t.short |= n < asked;
            }
            _ => {}
        }
        if n > 0 {
            self.deadline = cx.now + cx.worker.config.send_timeout;
        }
        if t.ops == 0 {
            self.send_next(cx, slot);
        }
    }

    /// Tells the pending exchange how much of its tail was not written (the log's bytes), when
    /// the tail ends or the connection is cut; a READ's chunk counts once its SEND completed.
    pub(super) fn account_tail(&mut self) {
        let (Some(t), Some(exchange)) = (&self.tail, &mut self.pending) else {
            return;
        };
        let mut unsent = t.end - t.offset;
        if matches!(t.tail, Tail::Read(..)) {
            unsent += (self.h1.output.len() - self.sent.min(self.h1.output.len())) as u64;
        }
        exchange.unsent = unsent;
    }

    /// The response (and every pipelined one before it) has left.
    fn written(&mut self, cx: &mut Ctx, slot: usize) {
        if let Some(exchange) = self.pending.take() {
            let len = self.h1.input.len();
            self.h1.sent(&cx.worker.timing, exchange, len);
        }
        self.state = State::Reading;
        match std::mem::replace(&mut self.after, After::KeepOpen) {
            After::Close => self.close(cx, slot),
            After::Linger => self.linger(cx, slot),
            After::KeepOpen => self.advance(cx, slot),
        }
    }

    /// Half-closes, then reads and discards what the client still sends, for a bounded time,
    /// so that the last response reaches it (RFC 9112 §9.6).
    fn linger(&mut self, cx: &mut Ctx, slot: usize) {
        self.state = State::Lingering;
        self.deadline = cx.now + LINGER;
        self.h1.input.clear();
        self.h1.start = 0;
        let shutdown = opcode::Shutdown::new(self.raw(), libc::SHUT_WR).build();
        self.push(cx, slot, Op::Shutdown, shutdown);
        if self.eof {
            self.close(cx, slot);
        } else {
            self.arm_recv(cx, slot);
        }
    }

    /// A deadline passed.
    pub(super) fn expire(&mut self, cx: &mut Ctx, slot: usize) {
        match self.state {
            State::Reading if self.h1.idle() => self.close(cx, slot),
            State::Reading => {
                let input = std::mem::take(&mut self.h1.input);
                self.refuse(cx, 408, &input[self.h1.start..]);
                self.h1.input = input;
                self.state = State::Writing;
                self.deadline = cx.now + cx.worker.config.send_timeout;
                self.send_next(cx, slot);
            }
            // The send timeout: the client stopped reading. The close is a reset, so that
            // the kernel does not keep its unsent bytes (`io::reset_on_close`).
            State::Writing => {
                crate::io::reset_on_close(self.fd.as_raw_fd());
                self.abort(cx, slot);
            }
            // A job takes what it takes (as on epoll); the shutdown timeout still cuts it.
            State::Serving => self.deadline = cx.now + cx.worker.config.send_timeout,
            State::Lingering => self.close(cx, slot),
            State::Closing => {
                // Something is stuck in the kernel (a send to a peer that reads nothing): wake it.
                shutdown_now(self.fd.as_raw_fd());
                self.deadline = cx.now + LINGER;
            }
        }
    }

    /// Ends the connection: its operations are cancelled, and once none is left the worker
    /// closes the descriptor.
    pub(super) fn close(&mut self, cx: &mut Ctx, slot: usize) {
        if self.state == State::Closing {
            return;
        }
        self.state = State::Closing;
        self.deadline = cx.now + LINGER;
        if self.inflight > 0 {
            // Usually the multishot receive is all that is in flight: found by its user_data,
            // one hash lookup. Cancelling by descriptor walks every armed request of the
            // ring, which cost 2 % of the server's CPU with a connection per request.
            let which = if self.inflight == 1 && self.recv_armed {
                types::CancelBuilder::user_data(user_data(slot, self.generation, Op::Recv))
            } else {
                types::CancelBuilder::fd(self.raw()).all()
            };
            let cancel = opcode::AsyncCancel2::new(which).build();
            self.push(cx, slot, Op::Cancel, cancel);
        }
    }

    /// Cuts the connection (an error, a client that stopped reading).
    pub(super) fn abort(&mut self, cx: &mut Ctx, slot: usize) {
        shutdown_now(self.fd.as_raw_fd());
        self.close(cx, slot);
    }

    /// Shutdown began: an idle connection ends now.
    pub(super) fn stop_if_idle(&mut self, cx: &mut Ctx, slot: usize) {
        if self.state == State::Reading && self.h1.idle() {
            self.close(cx, slot);
        }
    }
}

fn shutdown_now(fd: RawFd) {
    // SAFETY: shutdown on a descriptor the connection owns; it wakes its blocked operations.
    unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
}
