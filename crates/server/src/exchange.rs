//! One request's answer, decided and written into the output buffer without any I/O: shared
//! by the epoll loop (`conn.rs`) and the io_uring loop (`uring/`), which differ only in how
//! the bytes move.

use std::net::SocketAddr;

use webscope_http::request::{Body, Method, Request};

use crate::access_log::{Entry, RequestLine};
use crate::respond::{self, ConnHeader, Reply, Scratch, Site};
use crate::services::{Refusal, Services};
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
    };
    respond::respond(&mut site, req, terms.keep_alive, out, scratch)
}

/// The error reply to a request that could not be parsed (or timed out), written into `out`.
pub(crate) fn refusal(worker: &Worker, status: u16, out: &mut Vec<u8>) -> Reply {
    let strings = worker.config.techniques.string_cache;
    respond::error(out, status, ConnHeader::Close, false, &[], strings)
}

/// Logs an answered request.
pub(crate) fn log_request(worker: &Worker, peer: &Peer, req: &Request<'_>, reply: &Reply) {
    if !worker.log_enabled() {
        return;
    }
    worker.log(Entry {
        peer: peer.addr.ip(),
        peer_text: &peer.text,
        host: None,
        request: RequestLine::Parsed {
            method: req.method_name,
            target: req.target,
            version: req.version.as_str(),
        },
        status: reply.status,
        body_bytes: reply.body_bytes,
        referer: req.referer,
        user_agent: req.user_agent,
    });
}

/// Logs a refused request; its first line (at most 1 KiB of `pending`) is the request field.
pub(crate) fn log_refusal(worker: &Worker, peer: &Peer, pending: &[u8], reply: &Reply) {
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

/// Runs a `/svc/` request on the services' executor and answers with its result into `out`.
/// The connection's task waits; the I/O thread goes on serving other connections.
pub(crate) async fn service_reply(
    services: &Services,
    req: &Request<'_>,
    keep_alive: bool,
    out: &mut Vec<u8>,
    strings: bool,
) -> Reply {
    let conn = ConnHeader::new(keep_alive, req.version);
    let head_only = req.method == Method::Head;
    if !matches!(req.method, Method::Get | Method::Head) {
        return respond::error(
            out,
            405,
            conn,
            head_only,
            &[("Allow", b"GET, HEAD")],
            strings,
        );
    }
    let pending = match services.submit(req.target) {
        Ok(pending) => pending,
        Err(Refusal::BadRequest) => return respond::error(out, 400, conn, head_only, &[], strings),
        Err(Refusal::NotFound) => return respond::error(out, 404, conn, head_only, &[], strings),
        Err(Refusal::Unavailable) => {
            return respond::error(out, 503, conn, head_only, &[("Retry-After", b"1")], strings)
        }
    };
    match pending.await {
        Ok(body) => respond::generated(out, conn, head_only, &body, strings),
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
