//! One HTTP/3 request stream: its head read (bounded by the header timeout), a [`Request`]
//! made of it as for HTTP/2 (`fields.rs`), answered by `exchange.rs` (files, services, the
//! log line, the timing sample), the HTTP/1.1 head it wrote read back into the HTTP/3
//! response, and the body sent as DATA in chunks, each waiting for room in quinn's send
//! window, so nothing is read from a file ahead of what the client takes.
//!
//! 0-RTT: a request that arrives before the handshake has ended came as early data, which an
//! attacker may have replayed (RFC 8446 §8, RFC 9001 §9.2). One that is safe to repeat (the
//! idempotent methods of RFC 9110 §9.2.2) is answered at once, which is what 0-RTT is for; any
//! other gets 425 Too Early (RFC 8470 §5.2), as nginx's `$ssl_early_data` lets one configure,
//! and the client sends it again once the handshake is done. A replayer cannot end the
//! handshake (it has no keys), so its copy never gets past the refusal.

use std::rc::Rc;

use bytes::Bytes;
use h3::server::{RequestResolver, RequestStream};
use webscope_http::request::Request;

use super::shared::Shared;
use crate::exchange::{self, Exchange, Peer, Terms};
use crate::fields::{request, translate};
use crate::files::read_at;
use crate::respond::{Reply, Scratch, Tail};
use crate::worker::Worker;

/// Bytes of a file read per DATA frame (at most one such chunk per stream waits for room in
/// quinn's send window).
const FILE_CHUNK: u64 = 64 * 1024;

type Resolver = RequestResolver<h3_quinn::Connection, Bytes>;
type H3Stream = RequestStream<h3_quinn::BidiStream<Bytes>, Bytes>;

/// H3_REQUEST_CANCELLED (RFC 9114 §8.1): a stream we give up on (the send timeout, a file
/// cut short).
const CANCELLED: u64 = 0x10c;

/// One request stream and what it needs from its connection.
pub(super) struct Stream {
    pub worker: Rc<Worker>,
    pub peer: Rc<Peer>,
    pub shared: Rc<Shared>,
}

impl Drop for Stream {
    fn drop(&mut self) {
        let left = self.shared.open.get() - 1;
        self.shared.open.set(left);
        if left == 0 {
            self.shared.idle_since.set(tokio::time::Instant::now());
            self.shared.went_idle.notify_waiters();
        }
    }
}

/// Whether repeating `method` has the effect of doing it once (RFC 9110 §9.2.2).
fn idempotent(method: &http::Method) -> bool {
    use http::Method as M;
    [M::GET, M::HEAD, M::OPTIONS, M::TRACE, M::PUT, M::DELETE].contains(method)
}

impl Stream {
    pub(super) async fn answer(self, resolver: Resolver) {
        let worker = Rc::clone(&self.worker);
        let timing = &worker.timing;
        let started = timing.now();
        let head = tokio::time::timeout(worker.config.header_timeout, resolver.resolve_request());
        // A stream without a head in time, or with a bad one, is reset by h3 or dropped here.
        let Ok(Ok((request_head, mut stream))) = head.await else {
            return;
        };
        let (parts, ()) = request_head.into_parts();
        let req: Request<'_> = request(&parts);
        let early = !self.shared.handshake_done.get();
        // The handshake's time goes with the first request after it.
        let handshake = if early {
            0
        } else {
            self.shared.handshake_ns.take()
        };
        let mut exchange = Exchange::begin(timing, started, handshake);
        let mut out = Vec::with_capacity(512);
        let reply = if early && !idempotent(&parts.method) {
            exchange::refusal(&worker, 425, &mut out)
        } else {
            let terms = Terms {
                too_large: false,
                keep_alive: true,
            };
            let mut scratch = Scratch::default();
            exchange::reply(&worker, &req, terms, (&mut out, &mut scratch)).await
        };
        exchange.answered_when_sent(&worker, &self.peer, (&req, "HTTP/3.0"), &reply);
        let promised = reply.body_bytes;
        // Until the bytes are counted: a stream cut or the shutdown timeout logs none.
        exchange.unsent = promised;
        let mut left = promised;
        if send(&worker, &mut stream, out, reply, &mut left)
            .await
            .is_err()
        {
            stream.stop_stream(CANCELLED.into());
        }
        exchange.sent_bytes = promised - left;
        exchange.unsent = left;
        exchange.done(timing);
    }
}

/// Why a response stopped short.
struct Cut;

/// The HTTP/3 response from the HTTP/1.1 head `respond` wrote, then the body; `left` (the
/// body's length on entry) is lowered by the body bytes quinn took. Each write waits at most
/// the send timeout for room (the client reads and acknowledges nothing: cut).
async fn send(
    worker: &Worker,
    stream: &mut H3Stream,
    mut out: Vec<u8>,
    reply: Reply,
    left: &mut u64,
) -> Result<(), Cut> {
    let Some((response, head_len)) = translate(&out) else {
        return Err(Cut);
    };
    let limit = worker.config.send_timeout;
    within(limit, stream.send_response(response)).await?;
    let inline = out.split_off(head_len);
    if !inline.is_empty() {
        let len = inline.len() as u64;
        within(limit, stream.send_data(Bytes::from(inline))).await?;
        *left -= len.min(*left);
    }
    match reply.tail {
        Tail::None => {}
        Tail::Sendfile(file, offset, len) | Tail::Read(file, offset, len) => {
            let mut sent = 0;
            while sent < len {
                let want = (len - sent).min(FILE_CHUNK);
                let mut buf = Vec::with_capacity(want as usize);
                // A read error is a file cut short: the stream is reset.
                let n = read_at(&file, offset + sent, want, &mut buf).unwrap_or_default();
                if n < want {
                    return Err(Cut);
                }
                within(limit, stream.send_data(Bytes::from(buf))).await?;
                sent += n;
                *left -= n.min(*left);
            }
        }
        Tail::Mapped(map, offset, len) => {
            let mut at = offset;
            while at < offset + len {
                let end = (at + FILE_CHUNK).min(offset + len);
                let chunk = Bytes::copy_from_slice(&map[at as usize..end as usize]);
                within(limit, stream.send_data(chunk)).await?;
                *left -= (end - at).min(*left);
                at = end;
            }
        }
    }
    within(limit, stream.finish()).await
}

/// `write` within `limit` (the send timeout), else the response is cut.
async fn within(
    limit: std::time::Duration,
    write: impl std::future::Future<Output = Result<(), h3::error::StreamError>>,
) -> Result<(), Cut> {
    match tokio::time::timeout(limit, write).await {
        Ok(Ok(())) => Ok(()),
        _ => Err(Cut),
    }
}
