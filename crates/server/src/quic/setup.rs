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
use quinn::crypto::{
    ExportKeyingMaterialError, HeaderKey, KeyPair, Keys, PacketKey, Session, UnsupportedVersion,
};
use quinn_proto::transport_parameters::TransportParameters;

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
}

impl Setup {
    /// From the loaded HTTPS set-up and the server's limits.
    pub(crate) fn new(tls: &Tls, config: &Config) -> Result<Setup, Error> {
        let resolver = Arc::clone(&tls.acceptor.config().cert_resolver);
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut server = rustls::ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(|e| Error::Tls(format!("cannot set up TLS for QUIC: {e}")))?
            .with_no_client_auth()
            .with_cert_resolver(Arc::clone(&resolver));
        server.alpn_protocols = vec![b"h3".to_vec()];
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
            .max_idle_timeout(quinn::IdleTimeout::try_from(idle).ok());
        let mut base = quinn::ServerConfig::with_crypto(quic.clone());
        base.transport_config(Arc::new(transport))
            .max_incoming(MAX_INCOMING)
            .incoming_buffer_size(INCOMING_BUFFER)
            .incoming_buffer_size_total(INCOMING_BUFFER_TOTAL);
        Ok(Setup { crypto: quic, base })
    }

    /// The endpoint's configuration (what a connection is accepted with unless it is given
    /// its own).
    pub(crate) fn base(&self) -> quinn::ServerConfig {
        self.base.clone()
    }

    /// One connection's configuration (the endpoint's, its crypto session watched), and a
    /// flag its handshake raises if it is a full one.
    pub(crate) fn connection(&self) -> (Arc<quinn::ServerConfig>, Arc<AtomicBool>) {
        let full = Arc::new(AtomicBool::new(false));
        let mut config = self.base.clone();
        config.crypto = Arc::new(Watched {
            inner: Arc::clone(&self.crypto),
            full: Arc::clone(&full),
        });
        (Arc::new(config), full)
    }
}

/// One connection's crypto: rustls's, with the handshake messages it writes watched.
struct Watched {
    inner: Arc<QuicServerConfig>,
    full: Arc<AtomicBool>,
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
        Box::new(WatchedSession {
            inner: Arc::clone(&self.inner).start_session(version, params),
            messages: Messages::default(),
            full: Arc::clone(&self.full),
        })
    }
}

/// A crypto session that notes a Certificate among the handshake messages it writes.
struct WatchedSession {
    inner: Box<dyn Session>,
    messages: Messages,
    full: Arc<AtomicBool>,
}

impl Session for WatchedSession {
    fn write_handshake(&mut self, buf: &mut Vec<u8>) -> Option<Keys> {
        let from = buf.len();
        let keys = self.inner.write_handshake(buf);
        if self.messages.feed(&buf[from..]) {
            self.full.store(true, Ordering::Relaxed);
        }
        keys
    }

    fn initial_keys(&self, dst_cid: &quinn::ConnectionId, side: quinn::Side) -> Keys {
        self.inner.initial_keys(dst_cid, side)
    }
    fn handshake_data(&self) -> Option<Box<dyn std::any::Any>> {
        self.inner.handshake_data()
    }
    fn peer_identity(&self) -> Option<Box<dyn std::any::Any>> {
        self.inner.peer_identity()
    }
    fn early_crypto(&self) -> Option<(Box<dyn HeaderKey>, Box<dyn PacketKey>)> {
        self.inner.early_crypto()
    }
    fn early_data_accepted(&self) -> Option<bool> {
        self.inner.early_data_accepted()
    }
    fn is_handshaking(&self) -> bool {
        self.inner.is_handshaking()
    }
    fn read_handshake(&mut self, buf: &[u8]) -> Result<bool, quinn_proto::TransportError> {
        self.inner.read_handshake(buf)
    }
    fn transport_parameters(
        &self,
    ) -> Result<Option<TransportParameters>, quinn_proto::TransportError> {
        self.inner.transport_parameters()
    }
    fn next_1rtt_keys(&mut self) -> Option<KeyPair<Box<dyn PacketKey>>> {
        self.inner.next_1rtt_keys()
    }
    fn is_valid_retry(
        &self,
        orig_dst_cid: &quinn::ConnectionId,
        header: &[u8],
        payload: &[u8],
    ) -> bool {
        self.inner.is_valid_retry(orig_dst_cid, header, payload)
    }
    fn export_keying_material(
        &self,
        output: &mut [u8],
        label: &[u8],
        context: &[u8],
    ) -> Result<(), ExportKeyingMaterialError> {
        self.inner.export_keying_material(output, label, context)
    }
}

/// TLS handshake message type of Certificate (RFC 8446 §4).
const CERTIFICATE: u8 = 11;

/// A reader of TLS handshake message headers (type, 24-bit length) in a stream of handshake
/// bytes given in pieces, skipping the bodies. Written here because no crate exposes it
/// (rustls keeps its parser private); the load generator has its twin for what it reads.
#[derive(Default)]
struct Messages {
    header: [u8; 4],
    have: usize,
    skip: usize,
}

impl Messages {
    /// Reads `bytes`; true when a Certificate message began in them.
    fn feed(&mut self, mut bytes: &[u8]) -> bool {
        let mut certificate = false;
        while !bytes.is_empty() {
            if self.skip > 0 {
                let n = self.skip.min(bytes.len());
                self.skip -= n;
                bytes = &bytes[n..];
                continue;
            }
            let n = (4 - self.have).min(bytes.len());
            self.header[self.have..self.have + n].copy_from_slice(&bytes[..n]);
            self.have += n;
            bytes = &bytes[n..];
            if self.have == 4 {
                certificate |= self.header[0] == CERTIFICATE;
                self.skip = u32::from_be_bytes([0, self.header[1], self.header[2], self.header[3]])
                    as usize;
                self.have = 0;
            }
        }
        certificate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_certificate_is_seen_in_handshake_messages_cut_anywhere() {
        // EncryptedExtensions (8, 2 bytes), Certificate (11, 3 bytes), Finished (20, 1 byte).
        let full = [8, 0, 0, 2, 0, 0, 11, 0, 0, 3, 1, 2, 3, 20, 0, 0, 1, 9];
        for cut in 0..full.len() {
            let mut messages = Messages::default();
            let seen = messages.feed(&full[..cut]) | messages.feed(&full[cut..]);
            assert!(seen, "cut at {cut}");
        }
        let resumed = [8, 0, 0, 2, 11, 11, 20, 0, 0, 1, 11];
        assert!(!Messages::default().feed(&resumed));
    }
}
