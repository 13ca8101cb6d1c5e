//! One QUIC connection speaking HTTP/3: its handshake (timed, told full or resumed, bounded
//! by the header timeout), 0-RTT (requests answered before the handshake ends, the
//! non-idempotent refused: `stream.rs`), then its request streams, each a task, until the
//! client closes, the keep-alive timeout finds it idle (no stream open), it reaches
//! `--keepalive-requests`, or the server shuts down: then GOAWAY, as the HTTP/2 loop does.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::Notify;
use tokio::time::{sleep_until, Instant};

use super::shared::Shared;
use super::stream::Stream;
use super::{Live, Setup};
use crate::exchange::Peer;
use crate::worker::Worker;

/// H3_NO_ERROR (RFC 9114 §8.1): how a connection is closed when all went well.
const H3_NO_ERROR: u32 = 0x100;
/// After GOAWAY with no stream open, how long the client has to close before we do.
const GOAWAY_GRACE: Duration = Duration::from_secs(1);
/// The largest field section (request head) accepted, as HTTP/1.1's head limit.
const MAX_FIELD_SECTION: u64 = 16 * 1024;

/// What a connection's task starts with.
pub(super) struct Conn {
    pub worker: Rc<Worker>,
    pub setup: Arc<Setup>,
    pub live: Rc<Live>,
}

impl Drop for Conn {
    fn drop(&mut self) {
        let left = self.live.connections.get() - 1;
        self.live.connections.set(left);
        if left == 0 {
            self.live.drained.notify_waiters();
        }
    }
}

/// A handshake in progress, counted in [`Live::handshaking`] until dropped.
struct Handshaking(Rc<Live>);

impl Handshaking {
    fn new(live: &Rc<Live>) -> Handshaking {
        live.handshaking.set(live.handshaking.get() + 1);
        Handshaking(Rc::clone(live))
    }
}

impl Drop for Handshaking {
    fn drop(&mut self) {
        self.0.handshaking.set(self.0.handshaking.get() - 1);
    }
}

/// A connection attempt accepted by [`Conn::accept`]: its handshake's first flight computed
/// and queued, the rest of it to come in [`Conn::serve`].
pub(super) struct Accepted {
    connecting: quinn::Connecting,
    accepted: u64,
    began: u64,
    peer: Rc<Peer>,
    shown: Arc<super::setup::Handshake>,
    handshaking: Handshaking,
}

impl Conn {
    /// Starts the handshake of `incoming`: quinn reads its ClientHello and rustls computes
    /// the server's first flight (key exchange, certificate signature) here, in the caller's
    /// turn, and queues it for the connection's driver to send. None: it could not start
    /// (counted as a failed handshake).
    pub(super) fn accept(&self, incoming: quinn::Incoming) -> Option<Accepted> {
        let worker = &self.worker;
        let timing = &worker.timing;
        let accepted = timing.start_connection();
        let peer = Rc::new(Peer::new(incoming.remote_address(), worker));
        let (quinn_config, shown) = self.setup.connection();
        let handshaking = Handshaking::new(&self.live);
        let began = timing.now();
        let Ok(connecting) = incoming.accept_with(quinn_config) else {
            timing.handshake(None);
            timing.end_connection(accepted, 0);
            return None;
        };
        Some(Accepted {
            connecting,
            accepted,
            began,
            peer,
            shown,
            handshaking,
        })
    }

    pub(super) async fn serve(self, accepted: Accepted) {
        let worker = &self.worker;
        let timing = &worker.timing;
        let config = &worker.config;
        let Accepted {
            connecting,
            accepted,
            began,
            peer,
            shown,
            handshaking,
        } = accepted;
        // On the server this always succeeds: requests that came as 0-RTT early data are
        // answered before the handshake ends, which the second half tells.
        let (quic, done) = match connecting.into_0rtt() {
            Ok(pair) => pair,
            Err(_) => {
                timing.handshake(None);
                timing.end_connection(accepted, 0);
                return;
            }
        };
        let shared = Rc::new(Shared {
            handshake_done: Cell::new(false),
            handshake_ns: Cell::new(0),
            open: Cell::new(0),
            idle_since: Cell::new(Instant::now()),
            went_idle: Notify::new(),
        });
        // The handshake's end, bounded as a request head is: a client that never finishes
        // it (a replayed 0-RTT flight, whose sender has no keys) is closed.
        {
            let worker = Rc::clone(worker);
            let shared = Rc::clone(&shared);
            let quic = quic.clone();
            tokio::task::spawn_local(async move {
                // It says whether the client's early data was taken (false without any), or
                // false when the connection failed: the close reason tells which.
                let ended = tokio::time::timeout(worker.config.header_timeout, done).await;
                drop(handshaking);
                if ended.is_ok() && quic.close_reason().is_none() {
                    let timing = &worker.timing;
                    timing.handshake(Some(!shown.full()));
                    shared
                        .handshake_ns
                        .set(timing.nanos(began, timing.now()).max(1));
                    shared.handshake_done.set(true);
                } else {
                    worker.timing.handshake(None);
                    quic.close(H3_NO_ERROR.into(), b"handshake timeout");
                }
            });
        }
        let built = tokio::time::timeout(
            config.header_timeout,
            h3::server::builder()
                .max_field_section_size(MAX_FIELD_SECTION)
                .build::<_, Bytes>(h3_quinn::Connection::new(quic.clone())),
        )
        .await;
        let served = match built {
            Ok(Ok(h3)) => {
                timing.quic(false);
                self.requests(h3, &shared, &peer).await
            }
            _ => 0,
        };
        // The streams may outlive the connection's loop; they end on their own (a reset
        // stream, the send timeout), and closing the connection ends them at once.
        while shared.open.get() > 0 {
            let idle = shared.went_idle.notified();
            if shared.open.get() == 0 {
                break;
            }
            idle.await;
        }
        quic.close(H3_NO_ERROR.into(), b"");
        webscope_quic::stats::note("server", &quic.stats());
        timing.end_connection(accepted, served);
    }

    /// Accepts request streams until the connection ends; returns how many.
    async fn requests(
        &self,
        mut h3: h3::server::Connection<h3_quinn::Connection, Bytes>,
        shared: &Rc<Shared>,
        peer: &Rc<Peer>,
    ) -> u64 {
        let worker = &self.worker;
        let config = &worker.config;
        let mut served = 0u64;
        // Set once GOAWAY is sent: from then on the connection ends with its last stream.
        let mut closing: Option<Instant> = None;
        loop {
            let idle = shared.open.get() == 0;
            let since = shared.idle_since.get();
            let deadline = match closing {
                None => since + config.keepalive_timeout,
                Some(goaway) => since.max(goaway) + GOAWAY_GRACE,
            };
            let next = tokio::select! {
                biased;
                next = h3.accept() => next,
                () = worker.shutdown_signal(), if closing.is_none() => {
                    let _ = h3.shutdown(1).await;
                    closing = Some(Instant::now());
                    continue;
                }
                () = shared.went_idle.notified(), if !idle => continue,
                () = sleep_until(deadline), if idle => {
                    if closing.is_some() {
                        break;
                    }
                    let _ = h3.shutdown(1).await;
                    closing = Some(Instant::now());
                    continue;
                }
            };
            let Ok(Some(resolver)) = next else {
                break;
            };
            served += 1;
            shared.open.set(shared.open.get() + 1);
            let stream = Stream {
                worker: Rc::clone(worker),
                peer: Rc::clone(peer),
                shared: Rc::clone(shared),
            };
            tokio::task::spawn_local(stream.answer(resolver));
            if served >= config.keepalive_requests && closing.is_none() {
                let _ = h3.shutdown(1).await;
                closing = Some(Instant::now());
            }
        }
        served
    }
}
