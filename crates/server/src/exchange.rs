//! Where a parsed request becomes a response, an access-log line and a timing sample, for all
//! three transports: the HTTP/1.1 loops of both engines (through `http1.rs`) and HTTP/2
//! streams (`epoll/h2.rs`). Nothing here does I/O: the response goes into the caller's output
//! buffer (a large body is left as a [`Tail`](crate::respond::Tail) for the engine to send),
//! and the caller calls [`Exchange::done`] once the bytes have left. A `/svc/` reply comes in
//! two halves, [`service_submit`] and [`service_done`], so that an engine without tasks
//! (io_uring) can wait for the services' executor in between.
//!
//! Not here: finding a request in a connection's bytes (`http1.rs`, the h2 crate), moving
//! bytes (the engines), what a response says (`respond.rs`).

use std::net::SocketAddr;

use tokio::sync::oneshot;
use webscope_http::request::{Body, Method, Request};

use crate::access_log::{Deferred, Entry, RequestLine};
use crate::respond::{self, ConnHeader, Reply, Scratch, Site, Tail};
use crate::services::{Refusal, Services};
use crate::timing::{Sample, Timing};
use crate::worker::Worker;

/// Who the client is, as the access log writes it.
pub(crate) struct Peer {
    pub addr: SocketAddr,
    /// The address formatted once per connection (empty when nothing is logged).
    pub text: String,
}

impl Peer {
    pub(crate) fn new(addr: SocketAddr, worker: &Worker) -> Peer {
        let text = if worker.log_enabled() {
            addr.ip().to_string()
        } else {
            String::new()
        };
        Peer { addr, text }
    }
}

/// What the connection does around one request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Terms {
    /// The body exceeds `max_body`: 413, and the connection closes.
    pub too_large: bool,
    /// The connection stays open after the response.
    pub keep_alive: bool,
}

/// The terms of the `served`-th request on a connection (counting this one).
pub(crate) fn terms(worker: &Worker, req: &Request<'_>, served: u64) -> Terms {
    let config = &worker.config;
    let too_large = matches!(req.body, Body::Length(n) if n > config.max_body);
    let keep_alive = req.keep_alive()
        && !too_large
        && req.body != Body::Chunked
        && served < config.keepalive_requests
        && !worker.shutting_down();
    Terms {
        too_large,
        keep_alive,
    }
}

/// One request from its first byte until its response has left: the clock readings its timing
/// sample is made of, and what the response carried. It lives on the stack (or in the
/// connection, while an io_uring write is in flight) and is consumed by [`Exchange::done`].
#[derive(Debug)]
pub(crate) struct Exchange {
    head_start: u64,
    parsed: u64,
    responded: u64,
    logged: u64,
    status: u16,
    body_bytes: u64,
    /// Bytes written for the response (HTTP/1.1: head and body; HTTP/2: body).
    pub sent_bytes: u64,
    /// The TLS handshake's nanoseconds, with a connection's first request only (else 0).
    tls: u64,
    /// Body bytes not (yet) written. The engine keeps it current while the body goes, so
    /// that an exchange dropped with its connection (a client gone, the shutdown timeout)
    /// still logs the bytes that went.
    pub unsent: u64,
    /// The log line of a response with a large body, written with the bytes actually sent
    /// when the exchange ends (done, or dropped with its connection).
    deferred: Option<Deferred>,
}

impl Drop for Exchange {
    fn drop(&mut self) {
        if let Some(deferred) = &mut self.deferred {
            deferred.unsent = self.unsent;
        }
    }
}

impl Exchange {
    /// A request parsed (or refused) now, whose first byte arrived at `head_start` (0: now).
    pub(crate) fn begin(timing: &Timing, head_start: u64, tls: u64) -> Exchange {
        let parsed = timing.now();
        Exchange {
            head_start: if head_start == 0 { parsed } else { head_start },
            parsed,
            responded: parsed,
            logged: parsed,
            status: 0,
            body_bytes: 0,
            sent_bytes: 0,
            tls,
            unsent: 0,
            deferred: None,
        }
    }

    /// `reply` to `req` is written: logs it (`version` as the log line names the protocol).
    pub(crate) fn answered(
        &mut self,
        worker: &Worker,
        peer: &Peer,
        req: &Request<'_>,
        version: &str,
        reply: &Reply,
    ) {
        // A body in the output buffer leaves with the head; a large one (the tail) is sent
        // after, and may be cut: its line waits for the count.
        let large = !matches!(reply.tail, Tail::None);
        self.answered_deferring(worker, peer, (req, version), reply, large);
    }

    /// As [`answered`](Self::answered), the line waiting for the count of bytes sent whenever
    /// there is a body: HTTP/2 hands even a small body to h2, which may hold it.
    pub(crate) fn answered_when_sent(
        &mut self,
        worker: &Worker,
        peer: &Peer,
        (req, version): (&Request<'_>, &str),
        reply: &Reply,
    ) {
        self.answered_deferring(worker, peer, (req, version), reply, reply.body_bytes > 0);
    }

    fn answered_deferring(
        &mut self,
        worker: &Worker,
        peer: &Peer,
        (req, version): (&Request<'_>, &str),
        reply: &Reply,
        defer: bool,
    ) {
        let defer = defer && worker.log_enabled();
        let mut deferred = None;
        self.log(worker, reply, || {
            let entry = request_entry(peer, req, version, reply);
            if defer {
                deferred = Some(worker.log_deferred(entry));
            } else if worker.log_enabled() {
                worker.log(entry);
            }
        });
        self.deferred = deferred;
    }

    /// The refusal of a request that could not be parsed (or timed out) is written: logs it
    /// with the first line of `pending`, the unparsed input.
    pub(crate) fn refused(&mut self, worker: &Worker, peer: &Peer, pending: &[u8], reply: &Reply) {
        self.log(worker, reply, || log_refusal(worker, peer, pending, reply));
    }

    fn log(&mut self, worker: &Worker, reply: &Reply, log: impl FnOnce()) {
        self.responded = worker.timing.now();
        log();
        self.logged = worker.timing.now();
        self.status = reply.status;
        self.body_bytes = reply.body_bytes;
    }

    /// The response has left: records the sample. Returns the clock reading it ended at.
    pub(crate) fn done(self, timing: &Timing) -> u64 {
        let sent = timing.now();
        timing.record(&Sample {
            status: self.status,
            body_bytes: self.body_bytes,
            sent_bytes: self.sent_bytes,
            parse: timing.nanos(self.head_start, self.parsed),
            // Sending counts as processing; logging, which happens between, does not.
            process: timing.nanos(self.parsed, self.responded) + timing.nanos(self.logged, sent),
            log: timing.nanos(self.responded, self.logged),
            total: timing.nanos(self.head_start, sent),
            tls: self.tls,
        });
        sent
    }
}

/// The reply to `req`, written into `out`: a service's under `/svc/` (the connection's task
/// waits for the executor; the worker goes on serving others), else the document root's.
pub(crate) async fn reply(
    worker: &Worker,
    req: &Request<'_>,
    terms: Terms,
    (out, scratch): (&mut Vec<u8>, &mut Scratch),
) -> Reply {
    match service_for(worker, req, terms) {
        Some(services) => {
            let strings = worker.config.techniques.string_cache;
            service_reply(services, req, terms.keep_alive, out, strings).await
        }
        None => file_reply(worker, req, terms, out, scratch),
    }
}

/// The reply from the document root (or 413 for a body too large), written into `out`.
pub(crate) fn file_reply(
    worker: &Worker,
    req: &Request<'_>,
    terms: Terms,
    out: &mut Vec<u8>,
    scratch: &mut Scratch,
) -> Reply {
    let config = &worker.config;
    if terms.too_large {
        let strings = config.techniques.string_cache;
        return respond::error(out, 413, ConnHeader::Close, false, &[], strings);
    }
    let mut caches = worker.caches.borrow_mut();
    let mut site = Site {
        root: &worker.root,
        caches: &mut caches,
        techniques: config.techniques,
        sendfile_threshold: config.sendfile_threshold,
        urls: config.url_map.as_deref(),
    };
    respond::respond(&mut site, req, terms.keep_alive, out, scratch)
}

/// The error reply to a request that could not be parsed (or timed out), written into `out`.
pub(crate) fn refusal(worker: &Worker, status: u16, out: &mut Vec<u8>) -> Reply {
    let strings = worker.config.techniques.string_cache;
    respond::error(out, status, ConnHeader::Close, false, &[], strings)
}

/// The log entry of an answered request.
fn request_entry<'a>(
    peer: &'a Peer,
    req: &'a Request<'_>,
    version: &'a str,
    reply: &Reply,
) -> Entry<'a> {
    Entry {
        peer: peer.addr.ip(),
        peer_text: &peer.text,
        host: None,
        request: RequestLine::Parsed {
            method: req.method_name,
            target: req.target,
            version,
        },
        status: reply.status,
        body_bytes: reply.body_bytes,
        referer: req.referer,
        user_agent: req.user_agent,
    }
}

/// Logs a refused request; its first line (at most 1 KiB of `pending`) is the request field.
fn log_refusal(worker: &Worker, peer: &Peer, pending: &[u8], reply: &Reply) {
    if !worker.log_enabled() {
        return;
    }
    let line_end = pending
        .iter()
        .position(|&b| b == b'\r' || b == b'\n')
        .unwrap_or(pending.len())
        .min(1024);
    worker.log(Entry {
        peer: peer.addr.ip(),
        peer_text: &peer.text,
        host: None,
        request: RequestLine::Raw(&pending[..line_end]),
        status: reply.status,
        body_bytes: reply.body_bytes,
        referer: None,
        user_agent: None,
    });
}

/// The services, if `req` is for them: a `/svc/` target on a server with services.
pub(crate) fn service_for<'w>(
    worker: &'w Worker,
    req: &Request<'_>,
    terms: Terms,
) -> Option<&'w Services> {
    worker
        .services
        .as_ref()
        .filter(|_| !terms.too_large && req.target.starts_with("/svc/"))
        .map(|services| &**services)
}

/// A `/svc/` request's work, running on the services' executor; its result is the body.
pub(crate) type ServiceJob = oneshot::Receiver<String>;

/// Hands a `/svc/` request to the services' executor: the job, or (Err) the reply already
/// written into `out` when the request is refused at once (405, 400, 404, 503).
pub(crate) fn service_submit(
    services: &Services,
    req: &Request<'_>,
    keep_alive: bool,
    out: &mut Vec<u8>,
    strings: bool,
) -> Result<ServiceJob, Reply> {
    let conn = ConnHeader::new(keep_alive, req.version);
    let head_only = req.method == Method::Head;
    if !matches!(req.method, Method::Get | Method::Head) {
        return Err(respond::not_allowed(out, conn, head_only, strings));
    }
    services
        .submit(req.target)
        .map_err(|refusal| match refusal {
            Refusal::BadRequest => respond::error(out, 400, conn, head_only, &[], strings),
            Refusal::NotFound => respond::error(out, 404, conn, head_only, &[], strings),
            Refusal::Unavailable => {
                respond::error(out, 503, conn, head_only, &[("Retry-After", b"1")], strings)
            }
        })
}

/// The reply to a `/svc/` request whose job has ended, written into `out`.
pub(crate) fn service_done(
    req: &Request<'_>,
    keep_alive: bool,
    result: Result<String, oneshot::error::RecvError>,
    out: &mut Vec<u8>,
    strings: bool,
) -> Reply {
    let head_only = req.method == Method::Head;
    match result {
        Ok(body) => {
            let conn = ConnHeader::new(keep_alive, req.version);
            respond::generated(out, conn, head_only, &body, strings)
        }
        // The executor went away (the server is stopping).
        Err(_) => respond::error(
            out,
            503,
            ConnHeader::Close,
            head_only,
            &[("Retry-After", b"1")],
            strings,
        ),
    }
}

/// Runs a `/svc/` request on the services' executor and answers with its result into `out`.
async fn service_reply(
    services: &Services,
    req: &Request<'_>,
    keep_alive: bool,
    out: &mut Vec<u8>,
    strings: bool,
) -> Reply {
    match service_submit(services, req, keep_alive, out, strings) {
        Ok(job) => service_done(req, keep_alive, job.await, out, strings),
        Err(refused) => refused,
    }
}
