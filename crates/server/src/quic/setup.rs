//! The QUIC side of `--http3`, set up once at start from the HTTPS set-up (`tls.rs`): the
//! rustls configuration for QUIC (the same certificate, ALPN `h3`, TLS 1.3 only, 0-RTT
//! accepted with single-use tickets), quinn's transport limits, and per connection rustls's
//! crypto session wrapped to tell a full handshake from a resumed one: rustls picks the
//! certificate for every ClientHello, resumed or not, and neither quinn nor h3 says which
//! kind a connection made, so the session notes whether the server wrote a Certificate
//! message, which a full TLS 1.3 handshake sends and a resumed one does not (RFC 8446 §2.2).
//!
//! Tickets: the TCP side resumes by stateless tickets (no state shared between workers);
//! rustls accepts early data only with stateful resumption, whose tickets it takes out of the
//! store when used, so a ticket resumes once and a replayed ClientHello with its 0-RTT
//! request finds it gone (RFC 8446 §8.1, single-use tickets). The store is one for all
//! workers (a mutex per handshake).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use quinn::crypto::rustls::QuicServerConfig;
use quinn::crypto::{Keys, Session, UnsupportedVersion};
use quinn_proto::transport_parameters::TransportParameters;
use webscope_quic::Seen;

use crate::config::Config;
use crate::error::Error;
use crate::tls::Tls;

/// Sessions kept for resumption and 0-RTT (each ticket once): the TCP side's size, for the
/// same reason (rustls evicts by a linear scan).
const SESSIONS: usize = 1024;
/// Streams a client may open at once (as HTTP/2's MAX_STREAMS).
const MAX_STREAMS: u32 = 128;
/// Unidirectional streams: HTTP/3 needs three a side (control, QPACK encoder and decoder);
/// a few more for extensions' grease.
const MAX_UNI_STREAMS: u32 = 8;
/// Our receive windows: requests are small, but uploads to be discarded should not stall.
const STREAM_WINDOW: u32 = 256 * 1024;
const CONNECTION_WINDOW: u32 = 1 << 20;
/// Bytes quinn may hold unacknowledged or unsent per connection: with a chunk of
/// `stream::FILE_CHUNK` per stream waiting on it, what a client that reads nothing makes a
/// connection hold (quinn's default is 10 MB).
const SEND_WINDOW: u64 = 2 << 20;
/// Connection attempts quinn may hold before they are accepted or refused, and the bytes of
/// their early packets (quinn's defaults are 65 536 and 10 MiB each, 100 MiB in all).
const MAX_INCOMING: usize = 1024;
const INCOMING_BUFFER: u64 = 16 * 1024;
const INCOMING_BUFFER_TOTAL: u64 = 4 << 20;

/// The QUIC configuration every worker's endpoint shares.
pub(crate) struct Setup {
    /// rustls for QUIC: ALPN h3, early data, stateful single-use tickets.
    crypto: Arc<QuicServerConfig>,
    base: quinn::ServerConfig,
    /// The `gso` technique: segmentation offload on sending (quinn's transport setting) and
    /// GRO on receiving (the socket's UDP_GRO, which `quic::serve` turns off when this is not).
    pub(crate) offload: bool,
}

impl Setup {
    /// From the loaded HTTPS set-up and the server's limits.
    pub(crate) fn new(tls: &Tls, config: &Config) -> Result<Setup, Error> {
        let resolver = Arc::clone(&tls.acceptor.config().cert_resolver);
        let mut server = webscope_quic::server_config(resolver)
            .map_err(|e| Error::Tls(format!("cannot set up TLS for QUIC: {e}")))?;
        server.max_early_data_size = u32::MAX;
        server.session_storage = rustls::server::ServerSessionMemoryCache::new(SESSIONS);
        let quic = Arc::new(
            QuicServerConfig::try_from(server)
                .map_err(|e| Error::Tls(format!("cannot set up QUIC: {e}")))?,
        );
        let mut transport = quinn::TransportConfig::default();
        // Idle at the QUIC level is what the HTTP level calls idle, or a send that stalls.
        let idle = config.keepalive_timeout.max(config.send_timeout) + Duration::from_secs(1);
        transport
            .max_concurrent_bidi_streams(MAX_STREAMS.into())
            .max_concurrent_uni_streams(MAX_UNI_STREAMS.into())
            .stream_receive_window(STREAM_WINDOW.into())
            .receive_window(CONNECTION_WINDOW.into())
            .send_window(SEND_WINDOW)
            .max_idle_timeout(quinn::IdleTimeout::try_from(idle).ok())
            .enable_segmentation_offload(config.techniques.gso);
        webscope_quic::stats::tune(&mut transport).map_err(Error::Tls)?;
        let mut base = quinn::ServerConfig::with_crypto(quic.clone());
        base.transport_config(Arc::new(transport))
            .max_incoming(MAX_INCOMING)
            .incoming_buffer_size(INCOMING_BUFFER)
            .incoming_buffer_size_total(INCOMING_BUFFER_TOTAL);
        Ok(Setup {
            crypto: quic,
            base,
            offload: config.techniques.gso,
        })
    }

    /// The endpoint's configuration (what a connection is accepted with unless it is given
    /// its own).
    pub(crate) fn base(&self) -> quinn::ServerConfig {
        self.base.clone()
    }

    /// One connection's configuration (the endpoint's, its crypto session watched), and what
    /// its handshake shows.
    pub(crate) fn connection(&self) -> (Arc<quinn::ServerConfig>, Arc<Handshake>) {
        let handshake = Arc::new(Handshake::default());
        let mut config = self.base.clone();
        config.crypto = Arc::new(Watched {
            inner: Arc::clone(&self.crypto),
            handshake: Arc::clone(&handshake),
        });
        (Arc::new(config), handshake)
    }
}

/// What one connection's handshake showed: whether the server sent its certificate (a full
/// handshake; a resumed one sends none).
#[derive(Default)]
pub(crate) struct Handshake {
    full: AtomicBool,
}

impl Handshake {
    /// Whether it was a full handshake.
    pub(crate) fn full(&self) -> bool {
        self.full.load(Ordering::Relaxed)
    }
}

impl webscope_quic::Watch for Handshake {
    fn wrote(&self, seen: Seen) {
        if seen.certificate {
            self.full.store(true, Ordering::Relaxed);
        }
    }
}

/// One connection's crypto: rustls's, with the handshake messages it writes watched.
struct Watched {
    inner: Arc<QuicServerConfig>,
    handshake: Arc<Handshake>,
}

impl quinn::crypto::ServerConfig for Watched {
    fn initial_keys(
        &self,
        version: u32,
        dst_cid: &quinn::ConnectionId,
    ) -> Result<Keys, UnsupportedVersion> {
        self.inner.initial_keys(version, dst_cid)
    }

    fn retry_tag(
        &self,
        version: u32,
        orig_dst_cid: &quinn::ConnectionId,
        packet: &[u8],
    ) -> [u8; 16] {
        self.inner.retry_tag(version, orig_dst_cid, packet)
    }

    fn start_session(
        self: Arc<Self>,
        version: u32,
        params: &TransportParameters,
    ) -> Box<dyn Session> {
        Box::new(webscope_quic::Watched::new(
            Arc::clone(&self.inner).start_session(version, params),
            Arc::clone(&self.handshake),
        ))
    }
}
