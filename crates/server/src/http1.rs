//! The HTTP/1.1 side of a connection, the same on both engines: its input and output buffers,
//! which input bytes are the next request (pipelining, request bodies read and dropped), and
//! the hand-over of each request to `exchange.rs`. The engines (`epoll/conn.rs`,
//! `uring/conn.rs`) only move bytes in and out of these buffers and decide when to wait.
//!
//! A request borrows the input while it is answered, so an engine lends the input out of
//! [`Http1`] for the step (`std::mem::take`, a move of three words) and passes its length
//! here.
//!
//! Not here: deadlines, reads and writes (the engines), the response itself (`exchange.rs`).

use tokio::sync::oneshot::error::RecvError;
use webscope_http::request::{Body, Request};

use crate::exchange::{self, Exchange, Peer, ServiceJob, Terms};
use crate::respond::{Reply, Scratch, Tail};
use crate::timing::Timing;
use crate::worker::Worker;

/// What the connection does once a response is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum After {
    /// Go on with the next request.
    KeepOpen,
    /// Nothing unread: close at once.
    Close,
    /// The client may still be sending: shut down writing, drain for a while, then close.
    Linger,
}

/// A request answered into the output, for the engine to finish sending.
pub(crate) struct Answer {
    /// The part of the body that is not in the output buffer.
    pub tail: Tail,
    pub after: After,
    /// More input is buffered (another request, or body bytes to drop): the engine may answer
    /// on before it writes.
    pub pipelined: bool,
    /// Handed back through [`Http1::sent`] once the response has left.
    pub exchange: Exchange,
}

/// What answering a request gave.
pub(crate) enum Answering {
    Ready(Answer),
    /// A `/svc/` request whose job runs on the services' executor: once it has ended, its
    /// result goes to [`Http1::service_answered`] with the request.
    Waiting(Waiting),
}

/// A request waiting for its services' job.
pub(crate) struct Waiting {
    begun: Begun,
    pub job: ServiceJob,
}

/// A request counted and its exchange started; its reply not yet written.
struct Begun {
    terms: Terms,
    exchange: Exchange,
    out_before: usize,
}

/// One connection's HTTP/1.1 state.
pub(crate) struct Http1 {
    /// Bytes received; those before `start` are consumed.
    pub input: Vec<u8>,
    pub start: usize,
    /// Responses waiting to be sent.
    pub output: Vec<u8>,
    scratch: Scratch,
    /// Requests answered so far.
    pub served: u64,
    /// Body bytes of the last request still to be read and dropped.
    discard: u64,
    /// Clock reading when the first byte of the request being read arrived (0: none yet).
    head_start: u64,
    /// Nanoseconds of the TLS handshake, recorded with the connection's first request.
    handshake: u64,
    peer: Peer,
}

impl Http1 {
    pub(crate) fn new(peer: Peer, handshake: u64) -> Http1 {
        Http1 {
            input: Vec::with_capacity(4096),
            start: 0,
            output: Vec::with_capacity(4096),
            scratch: Scratch::default(),
            served: 0,
            discard: 0,
            head_start: 0,
            handshake,
            peer,
        }
    }

    /// Drops consumed input and the body bytes being skipped; true when bytes of a request
    /// wait to be parsed.
    pub(crate) fn request_waiting(&mut self) -> bool {
        if self.start == self.input.len() {
            self.input.clear();
            self.start = 0;
        }
        if self.discard > 0 && self.start < self.input.len() {
            let n = (self.input.len() - self.start).min(self.discard as usize);
            self.start += n;
            self.discard -= n as u64;
            if self.start == self.input.len() {
                self.input.clear();
                self.start = 0;
            }
        }
        self.discard == 0 && self.start < self.input.len()
    }

    /// Nothing buffered, nothing being skipped.
    pub(crate) fn idle(&self) -> bool {
        self.start == self.input.len() && self.discard == 0
    }

    /// The first bytes of a request arrived now (into an empty input).
    pub(crate) fn head_arrived(&mut self, timing: &Timing) {
        self.head_start = timing.now();
    }

    /// Moves unconsumed input to the front when the buffer's free space runs low.
    pub(crate) fn compact(&mut self) {
        if self.start > 0 && self.input.capacity() - self.input.len() < 2048 {
            self.input.drain(..self.start);
            self.start = 0;
        }
    }

    /// Answers `req`, parsed from the lent input of `input_len` bytes: from the document root
    /// (or a refusal) at once, or by a services' job the engine waits for.
    pub(crate) fn answer(
        &mut self,
        worker: &Worker,
        req: &Request<'_>,
        input_len: usize,
    ) -> Answering {
        let begun = self.begin(worker, req);
        let terms = begun.terms;
        let (out, scratch) = (&mut self.output, &mut self.scratch);
        let reply = match exchange::service_for(worker, req, terms) {
            None => exchange::file_reply(worker, req, terms, out, scratch),
            Some(services) => {
                let strings = worker.config.techniques.string_cache;
                match exchange::service_submit(services, req, terms.keep_alive, out, strings) {
                    Ok(job) => return Answering::Waiting(Waiting { begun, job }),
                    Err(refused) => refused,
                }
            }
        };
        Answering::Ready(self.answered(worker, req, input_len, begun, reply))
    }

    /// The job `waiting` for `req` has ended with `result`: the request is answered.
    pub(crate) fn service_answered(
        &mut self,
        worker: &Worker,
        req: &Request<'_>,
        input_len: usize,
        waiting: Waiting,
        result: Result<String, RecvError>,
    ) -> Answer {
        let Waiting { begun, .. } = waiting;
        let strings = worker.config.techniques.string_cache;
        let keep_alive = begun.terms.keep_alive;
        let reply = exchange::service_done(req, keep_alive, result, &mut self.output, strings);
        self.answered(worker, req, input_len, begun, reply)
    }

    /// Counts `req` and starts its exchange.
    fn begin(&mut self, worker: &Worker, req: &Request<'_>) -> Begun {
        let tls = std::mem::take(&mut self.handshake);
        let exchange = Exchange::begin(&worker.timing, self.head_start, tls);
        self.served += 1;
        Begun {
            terms: exchange::terms(worker, req, self.served),
            exchange,
            out_before: self.output.len(),
        }
    }

    /// `reply` to `req` is written: it is logged, its bytes consumed, and what follows it
    /// decided.
    fn answered(
        &mut self,
        worker: &Worker,
        req: &Request<'_>,
        input_len: usize,
        begun: Begun,
        reply: Reply,
    ) -> Answer {
        let Begun {
            terms,
            mut exchange,
            out_before,
        } = begun;
        exchange.answered(worker, &self.peer, req, req.version.as_str(), &reply);
        self.start += req.head_len;
        if let (Body::Length(n), false) = (req.body, terms.too_large) {
            self.discard = n;
        }
        let Reply { tail, close, .. } = reply;
        exchange.sent_bytes = (self.output.len() - out_before) as u64 + tail.len();
        let pipelined = self.start < input_len || self.discard > 0;
        let after = if !close {
            After::KeepOpen
        } else if terms.too_large || pipelined || req.body == Body::Chunked {
            After::Linger
        } else {
            After::Close
        };
        Answer {
            tail,
            after,
            pipelined,
            exchange,
        }
    }

    /// Answers a request that could not be parsed (or timed out); `pending` is the unparsed
    /// input, whose first line goes to the log. The connection lingers after it.
    pub(crate) fn refuse(&mut self, worker: &Worker, status: u16, pending: &[u8]) -> Exchange {
        let tls = std::mem::take(&mut self.handshake);
        let mut exchange = Exchange::begin(&worker.timing, self.head_start, tls);
        let out_before = self.output.len();
        let reply = exchange::refusal(worker, status, &mut self.output);
        exchange.sent_bytes = (self.output.len() - out_before) as u64;
        exchange.refused(worker, &self.peer, pending, &reply);
        exchange
    }

    /// The response of `exchange` has left: its sample is recorded, and the next request's
    /// head is taken to have started now if its bytes are already buffered.
    pub(crate) fn sent(&mut self, timing: &Timing, exchange: Exchange, input_len: usize) {
        let sent = exchange.done(timing);
        self.head_start = if self.start < input_len { sent } else { 0 };
    }
}
