//! QUIC for the HTTP/3 engine (`engine/h3.rs`): the client configuration an HTTP/3 target is
//! run with, made once per run, and a quinn configuration per connection; the one-line causes
//! of failed QUIC connections.
//!
//! The trust decision is the https one (`tls.rs`: `--cacert`, `-k`, or the bundled roots), on
//! rustls with ring as everywhere in the generator, with ALPN `h3` only and early data on for
//! `--0rtt`. Each connection gets its own copy of the rustls configuration (the session store
//! stays shared, so tickets from one connection resume the next) whose verifier is wrapped to
//! note whether it was asked: a full handshake checks the server's certificate, a resumed one
//! does not, and neither quinn nor h3 says which one a connection made. The copy costs a few
//! allocations per connection, against a handshake's tens of microseconds of signatures.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use quinn::crypto::rustls::QuicClientConfig;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme};

use crate::{Error, TlsSettings};

/// A stream's receive window and the connection's, as the HTTP/2 engine opens them: large
/// bodies are not throttled by the client.
const STREAM_WINDOW: u32 = 4 << 20;
const CONNECTION_WINDOW: u32 = 16 << 20;

/// What every connection of an HTTP/3 run is made from.
pub(crate) struct Client {
    /// ALPN h3, TLS 1.3 only (QUIC has no other), early data on with `--0rtt`.
    tls: ClientConfig,
    verifier: Arc<dyn ServerCertVerifier>,
    transport: Arc<quinn::TransportConfig>,
    /// The name sent (SNI) and checked.
    pub(crate) name: String,
    /// `--0rtt`: a resumed connection's first requests go before the handshake ends.
    pub(crate) zero_rtt: bool,
}

/// What one connection's handshake told its verifier.
#[derive(Default)]
pub(crate) struct Verified {
    /// The server's certificate was checked: a full handshake.
    asked: AtomicBool,
    /// Why the check failed, in words a user can act on.
    refused: Mutex<Option<String>>,
}

impl Verified {
    /// Whether the handshake was a full one (it checked a certificate).
    pub(crate) fn full(&self) -> bool {
        self.asked.load(Ordering::Relaxed)
    }

    /// Why the certificate was refused, if it was.
    pub(crate) fn refused(&self) -> Option<String> {
        self.refused.lock().ok().and_then(|r| r.clone())
    }
}

impl Client {
    /// The client for `settings` towards server `name`; `timeout` bounds a silent server
    /// (QUIC's idle timeout, so that quinn gives up when the request would).
    pub(crate) fn new(
        settings: &TlsSettings,
        name: &str,
        zero_rtt: bool,
        timeout: Duration,
    ) -> Result<Client, Error> {
        ServerName::try_from(name.to_string()).map_err(|_| {
            Error::Config(format!(
                "{name:?} is not a name TLS can check a certificate against"
            ))
        })?;
        let (verifier, provider) = crate::tls::verifier(settings)?;
        let mut tls = ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(|e| Error::Config(format!("TLS: {e}")))?
            .dangerous()
            .with_custom_certificate_verifier(Arc::clone(&verifier))
            .with_no_client_auth();
        tls.alpn_protocols = vec![b"h3".to_vec()];
        tls.enable_early_data = zero_rtt;
        if settings.no_resume {
            tls.resumption = rustls::client::Resumption::disabled();
        }
        // Checked once here, so that a connection's copy cannot fail.
        QuicClientConfig::try_from(tls.clone()).map_err(|e| Error::Config(format!("QUIC: {e}")))?;
        let mut transport = quinn::TransportConfig::default();
        transport
            .stream_receive_window(STREAM_WINDOW.into())
            .receive_window(CONNECTION_WINDOW.into())
            .max_idle_timeout(quinn::IdleTimeout::try_from(timeout).ok());
        Ok(Client {
            tls,
            verifier,
            transport: Arc::new(transport),
            name: name.to_string(),
            zero_rtt,
        })
    }

    /// A connection's quinn configuration, and what its handshake will tell about itself.
    pub(crate) fn connection(&self) -> (quinn::ClientConfig, Arc<Verified>) {
        let verified = Arc::new(Verified::default());
        let mut tls = self.tls.clone();
        tls.dangerous().set_certificate_verifier(Arc::new(Noting {
            inner: Arc::clone(&self.verifier),
            verified: Arc::clone(&verified),
        }));
        // The same configuration as the one checked in `new`, but for its verifier.
        let quic = QuicClientConfig::try_from(tls).expect("checked in Client::new");
        let mut config = quinn::ClientConfig::new(Arc::new(quic));
        config.transport_config(Arc::clone(&self.transport));
        (config, verified)
    }
}

/// A verifier that notes that it was asked, and why it refused.
#[derive(Debug)]
struct Noting {
    inner: Arc<dyn ServerCertVerifier>,
    verified: Arc<Verified>,
}

impl std::fmt::Debug for Verified {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verified")
            .field("full", &self.full())
            .finish()
    }
}

impl ServerCertVerifier for Noting {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.verified.asked.store(true, Ordering::Relaxed);
        let result =
            self.inner
                .verify_server_cert(end_entity, intermediates, server_name, ocsp, now);
        if let Err(e) = &result {
            if let Ok(mut refused) = self.verified.refused.lock() {
                *refused = Some(crate::tls::cause(e));
            }
        }
        result
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// TLS alert 120, as QUIC carries it (CRYPTO_ERROR 0x100 + alert, RFC 9001 §4.8).
const NO_APPLICATION_PROTOCOL: u64 = 0x100 + 120;

/// A failed QUIC connection in words a user can act on: the cause, and what to do.
/// `port` is the server's UDP port.
pub(crate) fn cause(e: &quinn::ConnectionError, verified: &Verified, port: u16) -> String {
    use quinn::ConnectionError as E;
    if let Some(refused) = verified.refused() {
        return refused;
    }
    match e {
        E::TimedOut => silent(port),
        E::ConnectionClosed(close) if u64::from(close.error_code) == NO_APPLICATION_PROTOCOL => {
            "the server does not speak HTTP/3: it refused ALPN h3 in the QUIC handshake (leave --http3 out, or give its HTTP/3 port)".into()
        }
        E::TransportError(t) if u64::from(t.code) == NO_APPLICATION_PROTOCOL => {
            "the server does not speak HTTP/3: it chose no ALPN h3 in the QUIC handshake (leave --http3 out, or give its HTTP/3 port)".into()
        }
        E::ConnectionClosed(close) => format!("the server closed the QUIC connection: {close}"),
        E::ApplicationClosed(close) => format!("the server closed the HTTP/3 connection: {close}"),
        E::VersionMismatch => "the server speaks no QUIC version in common (quinn speaks QUIC v1)".into(),
        E::Reset => "the server reset the QUIC connection (a stateless reset: it had no state for it, a restart?)".into(),
        other => format!("QUIC failed: {other}"),
    }
}

/// What a silent UDP port means.
pub(crate) fn silent(port: u16) -> String {
    format!("no QUIC answer from the server's UDP port {port} within the timeout: nothing serves HTTP/3 there, or UDP is blocked on the way (leave --http3 out for a TCP-only server)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_config_is_made_from_the_settings_and_its_verifier_starts_unasked() {
        let settings = TlsSettings {
            insecure: true,
            ..TlsSettings::default()
        };
        let client = Client::new(&settings, "localhost", true, Duration::from_secs(5)).unwrap();
        assert_eq!(client.tls.alpn_protocols, vec![b"h3".to_vec()]);
        assert!(client.tls.enable_early_data);
        let (_, verified) = client.connection();
        assert!(!verified.full());
        assert_eq!(verified.refused(), None);
    }

    #[test]
    fn a_name_tls_cannot_check_is_refused_at_once() {
        let e = Client::new(&TlsSettings::default(), "", false, Duration::from_secs(5));
        assert!(matches!(e, Err(Error::Config(m)) if m.contains("not a name")));
    }

    #[test]
    fn a_silent_port_and_a_refused_alpn_are_told_apart() {
        let verified = Verified::default();
        let timed_out = cause(&quinn::ConnectionError::TimedOut, &verified, 8443);
        assert!(timed_out.contains("UDP port 8443"), "{timed_out}");
        let close = quinn::ConnectionError::ConnectionClosed(quinn::ConnectionClose {
            error_code: quinn::TransportErrorCode::crypto(120),
            frame_type: None,
            reason: bytes::Bytes::from_static(b"no application protocol"),
        });
        let alpn = cause(&close, &verified, 8443);
        assert!(alpn.contains("does not speak HTTP/3"), "{alpn}");
    }
}
