//! The rustls side of QUIC that webscope's HTTP/3 server (`webscope-server`'s `quic/`) and
//! load generator (`webscope-load`'s `quic.rs`) share, so that it is written once:
//!
//! - the TLS configuration QUIC is spoken with: rustls on ring (as every TLS in webscope),
//!   TLS 1.3 only (QUIC has no other, RFC 9001 §4.2), ALPN `h3` only ([`server_config`],
//!   [`client_config`]);
//! - a crypto session that watches the handshake messages going through it ([`Watched`]):
//!   neither quinn nor h3 says whether a handshake was full or resumed, nor when a session
//!   ticket came, and both sides count them. A full TLS 1.3 handshake carries the server's
//!   Certificate message and a resumed one does not (RFC 8446 §2.2); a NewSessionTicket is
//!   what the next connection resumes with;
//! - a connection's transport figures at its end, for the loss experiment's diagnosis
//!   ([`stats`]: one line per connection in the file `WEBSCOPE_QUIC_STATS` names).
//!
//! Not here: trust (the load generator's `--cacert`, `-k`), certificates and their resolver
//! (the server's HTTPS set-up), quinn's transport limits (each side's own), and anything of
//! HTTP/3 itself.
#![deny(missing_docs)]

pub mod stats;

use std::sync::Arc;

use quinn_proto::crypto::{
    ExportKeyingMaterialError, HeaderKey, KeyPair, Keys, PacketKey, Session,
};
use quinn_proto::transport_parameters::TransportParameters;
use quinn_proto::{ConnectionId, Side, TransportError};
use rustls::client::danger::ServerCertVerifier;
use rustls::crypto::CryptoProvider;
use rustls::server::ResolvesServerCert;

/// The receive and send buffers asked for a QUIC UDP socket (the kernel caps them at
/// net.core.rmem_max and wmem_max). The default (208 KiB) overflowed: on loopback, 4
/// connections of 8 streams fetching 100 KiB files lost 1 000 to 7 000 datagrams a 2-second
/// run to a full receive buffer (UdpRcvbufErrors), losses QUIC then recovered as a network's;
/// quic-go asks for 7 MiB for the same reason.
pub const UDP_BUFFER: usize = 4 << 20;

/// HTTP/3's ALPN protocol ID (RFC 9114 §3.1).
pub const ALPN_H3: &[u8] = b"h3";

/// The crypto provider: ring, as the rest of webscope's TLS.
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A server's TLS for QUIC: TLS 1.3, no client certificates, ALPN h3, the certificate
/// `resolver` picks. The caller sets what is its own (tickets, early data).
pub fn server_config(
    resolver: Arc<dyn ResolvesServerCert>,
) -> Result<rustls::ServerConfig, rustls::Error> {
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_no_client_auth()
        .with_cert_resolver(resolver);
    config.alpn_protocols = vec![ALPN_H3.to_vec()];
    Ok(config)
}

/// A client's TLS for QUIC: TLS 1.3, no client certificate, ALPN h3, the server checked by
/// `verifier` (whose signatures `provider` checks). The caller sets what is its own
/// (resumption, early data).
pub fn client_config(
    verifier: Arc<dyn ServerCertVerifier>,
    provider: Arc<CryptoProvider>,
) -> Result<rustls::ClientConfig, rustls::Error> {
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    config.alpn_protocols = vec![ALPN_H3.to_vec()];
    Ok(config)
}

/// What a side notes of the handshake messages its session reads and writes.
pub trait Watch: Send + Sync + 'static {
    /// Messages that began in handshake bytes the session read from the peer; `ok` is
    /// whether rustls took them.
    fn read(&self, _seen: Seen, _ok: bool) {}
    /// Messages that began in handshake bytes the session wrote for the peer.
    fn wrote(&self, _seen: Seen) {}
}

/// A crypto session (rustls's, as quinn makes it) with the handshake messages that go
/// through it told to `W`; everything else is the inner session's.
pub struct Watched<W: Watch> {
    inner: Box<dyn Session>,
    read: Messages,
    written: Messages,
    watch: Arc<W>,
}

impl<W: Watch> Watched<W> {
    /// `inner` watched by `watch`.
    pub fn new(inner: Box<dyn Session>, watch: Arc<W>) -> Watched<W> {
        Watched {
            inner,
            read: Messages::default(),
            written: Messages::default(),
            watch,
        }
    }
}

impl<W: Watch> Session for Watched<W> {
    fn read_handshake(&mut self, buf: &[u8]) -> Result<bool, TransportError> {
        let seen = self.read.feed(buf);
        let read = self.inner.read_handshake(buf);
        self.watch.read(seen, read.is_ok());
        read
    }

    fn write_handshake(&mut self, buf: &mut Vec<u8>) -> Option<Keys> {
        let from = buf.len();
        let keys = self.inner.write_handshake(buf);
        if let Some(written) = buf.get(from..) {
            let seen = self.written.feed(written);
            self.watch.wrote(seen);
        }
        keys
    }

    fn initial_keys(&self, dst_cid: &ConnectionId, side: Side) -> Keys {
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
    fn transport_parameters(&self) -> Result<Option<TransportParameters>, TransportError> {
        self.inner.transport_parameters()
    }
    fn next_1rtt_keys(&mut self) -> Option<KeyPair<Box<dyn PacketKey>>> {
        self.inner.next_1rtt_keys()
    }
    fn is_valid_retry(&self, orig_dst_cid: &ConnectionId, header: &[u8], payload: &[u8]) -> bool {
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

/// TLS handshake message types of NewSessionTicket and Certificate (RFC 8446 §4).
const NEW_SESSION_TICKET: u8 = 4;
const CERTIFICATE: u8 = 11;

/// The messages of interest that began in a piece of the handshake stream.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    /// A Certificate: the server's, in a full handshake.
    pub certificate: bool,
    /// A NewSessionTicket: what the next connection may resume with.
    pub ticket: bool,
}

/// A reader of TLS handshake message headers (type, 24-bit length) in a stream of handshake
/// bytes given in pieces, skipping the bodies. Written here because no crate exposes it
/// (rustls keeps its parser private).
#[derive(Default)]
struct Messages {
    header: [u8; 4],
    have: usize,
    skip: usize,
}

impl Messages {
    /// Reads `bytes`; which messages of interest began in them.
    fn feed(&mut self, mut bytes: &[u8]) -> Seen {
        let mut seen = Seen::default();
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
                seen.certificate |= self.header[0] == CERTIFICATE;
                seen.ticket |= self.header[0] == NEW_SESSION_TICKET;
                self.skip = u32::from_be_bytes([0, self.header[1], self.header[2], self.header[3]])
                    as usize;
                self.have = 0;
            }
        }
        seen
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
            let (a, b) = (messages.feed(&full[..cut]), messages.feed(&full[cut..]));
            assert!(a.certificate | b.certificate, "cut at {cut}");
            assert!(!(a.ticket | b.ticket), "cut at {cut}");
        }
        // A resumed handshake: EncryptedExtensions, Finished; a body byte of 11 is no header.
        let resumed = [8, 0, 0, 2, 11, 11, 20, 0, 0, 1, 11];
        assert_eq!(Messages::default().feed(&resumed), Seen::default());
        // A NewSessionTicket after the handshake.
        let ticket = Messages::default().feed(&[4, 0, 0, 2, 11, 11]);
        assert!(ticket.ticket && !ticket.certificate);
    }

    #[test]
    fn the_server_offers_h3_only_and_leaves_early_data_to_its_caller() {
        let made =
            server_config(Arc::new(rustls::server::ResolvesServerCertUsingSni::new())).unwrap();
        assert_eq!(made.alpn_protocols, [ALPN_H3.to_vec()]);
        assert_eq!(made.max_early_data_size, 0);
    }
}
