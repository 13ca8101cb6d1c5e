//! QUIC for the HTTP/3 engine (`engine/h3.rs`): the client configuration an HTTP/3 target is
//! run with, made once per run, and a quinn configuration per connection; the one-line causes
//! of failed QUIC connections.
//!
//! The trust decision is the https one (`tls.rs`: `--cacert`, `-k`, or the bundled roots), on
//! rustls with ring as everywhere in the generator, with ALPN `h3` only and early data on for
//! `--0rtt` (the TLS configuration QUIC is spoken with is `webscope-quic`'s, shared with the
//! server). One rustls configuration serves every connection: rustls resumes a ticket only
//! with the very verifier it was issued under. Whether a handshake was full or resumed,
//! which neither quinn nor h3 says, is read from its messages: each connection's crypto
//! session is rustls's watched (`webscope_quic::Watched`) for a Certificate message from the
//! server, which a full TLS 1.3 handshake sends and a resumed one does not (RFC 8446 §2.2),
//! and for its session tickets. Whether any connection of the run can be opened at all
//! ([`FirstHandshakes`]), so that a run against a port nothing answers on ends early.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use quinn::crypto::rustls::QuicClientConfig;
use quinn::crypto::Session;
use quinn_proto::transport_parameters::TransportParameters;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use webscope_quic::Seen;

use crate::{Error, TlsSettings};

/// A stream's receive window and the connection's, as the HTTP/2 engine opens them: large
/// bodies are not throttled by the client.
const STREAM_WINDOW: u32 = 4 << 20;
const CONNECTION_WINDOW: u32 = 16 << 20;

/// What every connection of an HTTP/3 run is made from.
pub(crate) struct Client {
    /// ALPN h3, TLS 1.3 only (QUIC has no other), early data on with `--0rtt`.
    crypto: Arc<QuicClientConfig>,
    /// Why the server's certificate was last refused.
    refused: Arc<Mutex<Option<String>>>,
    transport: Arc<quinn::TransportConfig>,
    /// The name sent (SNI) and checked.
    pub(crate) name: String,
    /// `--0rtt`: a resumed connection's first requests go before the handshake ends.
    pub(crate) zero_rtt: bool,
    /// How the connections' first attempts ended, shared by the run's threads.
    pub(crate) first: FirstHandshakes,
}

/// Whether any of the run's connections could be opened (its QUIC handshake and HTTP/3's
/// set-up): once every connection's first attempt has failed and none ever succeeded, nothing
/// on the way answers QUIC (a silent or blocked UDP port, a server without h3) and the run
/// stops then, rather than retrying to the end of `-d` (a `-d 60s` run against a dropping
/// port took its minute and the timeout for one line). Counted only for the connections
/// engine: `--users` begin over the run, and a failed first user says little of the later.
#[derive(Debug, Default)]
pub(crate) struct FirstHandshakes {
    /// Connections whose first attempt has not ended (0: nothing expected, never hopeless).
    left: AtomicUsize,
    /// Some connection was opened.
    reached: AtomicBool,
    /// Every first attempt failed, none succeeded.
    hopeless: AtomicBool,
}

impl FirstHandshakes {
    /// Expects `connections` first attempts (this process's, before any begins).
    pub(crate) fn expect(&self, connections: usize) {
        self.left.store(connections, Ordering::Release);
    }

    /// A connection's first attempt ended, opened (`ok`) or not.
    pub(crate) fn ended(&self, ok: bool) {
        if ok {
            self.reached.store(true, Ordering::Release);
        }
        // AcqRel on the count: the attempt that takes it to 0 sees every earlier `reached`.
        let before = self
            .left
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
        if before == Ok(1) && !self.reached.load(Ordering::Acquire) {
            self.hopeless.store(true, Ordering::Release);
        }
    }

    /// Whether every first attempt failed and none succeeded: no point going on.
    pub(crate) fn hopeless(&self) -> bool {
        self.hopeless.load(Ordering::Acquire)
    }
}

/// What one connection's handshake showed.
#[derive(Debug, Default)]
pub(crate) struct Verified {
    /// The server sent its certificate: a full handshake.
    full: AtomicBool,
    /// The server sent a session ticket (NewSessionTicket), and when it did.
    ticket: AtomicBool,
    ticket_came: tokio::sync::Notify,
    /// Why the certificate was refused, if it was (any connection's, the last).
    refused: Arc<Mutex<Option<String>>>,
}

impl Verified {
    /// Whether the handshake was a full one (the server sent a certificate).
    pub(crate) fn full(&self) -> bool {
        self.full.load(Ordering::Relaxed)
    }

    /// Why the certificate was refused, if it was.
    pub(crate) fn refused(&self) -> Option<String> {
        self.refused.lock().ok().and_then(|r| r.clone())
    }

    /// Completes once the server has sent a session ticket on this connection.
    pub(crate) async fn ticket(&self) {
        let came = self.ticket_came.notified();
        if self.ticket.load(Ordering::Acquire) {
            return;
        }
        came.await;
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
        let refused = Arc::new(Mutex::new(None));
        let noting = Arc::new(Noting {
            inner: verifier,
            refused: Arc::clone(&refused),
        });
        let mut tls = webscope_quic::client_config(noting, provider)
            .map_err(|e| Error::Config(format!("TLS: {e}")))?;
        tls.enable_early_data = zero_rtt;
        if settings.no_resume {
            tls.resumption = rustls::client::Resumption::disabled();
        }
        let crypto =
            QuicClientConfig::try_from(tls).map_err(|e| Error::Config(format!("QUIC: {e}")))?;
        let mut transport = quinn::TransportConfig::default();
        transport
            .stream_receive_window(STREAM_WINDOW.into())
            .receive_window(CONNECTION_WINDOW.into())
            .max_idle_timeout(quinn::IdleTimeout::try_from(timeout).ok());
        webscope_quic::stats::tune(&mut transport).map_err(Error::Config)?;
        Ok(Client {
            crypto: Arc::new(crypto),
            refused,
            transport: Arc::new(transport),
            name: name.to_string(),
            zero_rtt,
            first: FirstHandshakes::default(),
        })
    }

    /// A connection's quinn configuration, and what its handshake will show.
    pub(crate) fn connection(&self) -> (quinn::ClientConfig, Arc<Verified>) {
        let verified = Arc::new(Verified {
            full: AtomicBool::new(false),
            ticket: AtomicBool::new(false),
            ticket_came: tokio::sync::Notify::new(),
            refused: Arc::clone(&self.refused),
        });
        let watched = Watched {
            inner: Arc::clone(&self.crypto),
            verified: Arc::clone(&verified),
        };
        let mut config = quinn::ClientConfig::new(Arc::new(watched));
        config.transport_config(Arc::clone(&self.transport));
        (config, verified)
    }
}

/// One connection's crypto: rustls's, with the server's handshake messages watched.
struct Watched {
    inner: Arc<QuicClientConfig>,
    verified: Arc<Verified>,
}

impl quinn::crypto::ClientConfig for Watched {
    fn start_session(
        self: Arc<Self>,
        version: u32,
        server_name: &str,
        params: &TransportParameters,
    ) -> Result<Box<dyn Session>, quinn::ConnectError> {
        let inner = Arc::clone(&self.inner).start_session(version, server_name, params)?;
        Ok(Box::new(webscope_quic::Watched::new(
            inner,
            Arc::clone(&self.verified),
        )))
    }
}

/// What the handshake's messages from the server show: a certificate (a full handshake), a
/// session ticket (taken by rustls).
impl webscope_quic::Watch for Verified {
    fn read(&self, seen: Seen, ok: bool) {
        if seen.certificate {
            self.full.store(true, Ordering::Relaxed);
        }
        if seen.ticket && ok {
            self.ticket.store(true, Ordering::Release);
            self.ticket_came.notify_waiters();
        }
    }
}

/// A verifier that keeps why it refused, in words a user can act on (quinn's error says only
/// "the cryptographic handshake failed").
#[derive(Debug)]
struct Noting {
    inner: Arc<dyn ServerCertVerifier>,
    refused: Arc<Mutex<Option<String>>>,
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
        let result =
            self.inner
                .verify_server_cert(end_entity, intermediates, server_name, ocsp, now);
        if let Err(e) = &result {
            if let Ok(mut refused) = self.refused.lock() {
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
        assert!(client.zero_rtt);
        let (_, verified) = client.connection();
        assert!(!verified.full());
        assert_eq!(verified.refused(), None);
    }

    #[test]
    fn the_run_is_hopeless_only_when_every_first_attempt_failed() {
        let first = FirstHandshakes::default();
        // Nothing expected (the users' engine): never hopeless, however many fail.
        first.ended(false);
        assert!(!first.hopeless());
        first.expect(3);
        first.ended(false);
        first.ended(false);
        assert!(!first.hopeless());
        first.ended(false);
        assert!(first.hopeless());

        let some = FirstHandshakes::default();
        some.expect(3);
        some.ended(false);
        some.ended(true);
        some.ended(false);
        assert!(!some.hopeless());
        // More endings than expected (none should come) change nothing.
        some.ended(false);
        assert!(!some.hopeless());
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
