//! TLS for the load generator (rustls, user space): the client configuration an https target
//! is run with, and the one-line causes of failed handshakes.
//!
//! User-space TLS on purpose: the issue of kernel TLS is the server's (sendfile under TLS);
//! a client's records are small and rustls encrypts them in place in the connection's buffers.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

use crate::Error;

/// How an https target is spoken to: settings, not the rustls client built from them (each
/// process builds its own), so they travel in a serialised [`crate::Config`].
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsSettings {
    /// Accept any certificate (`--insecure`): for test servers with self-signed ones.
    pub insecure: bool,
    /// Trust only the CA certificates in this PEM file (`--cacert`), instead of the bundled
    /// Mozilla roots.
    pub cacert: Option<PathBuf>,
    /// Do not resume sessions (`--no-tls-resume`): every new connection makes a full handshake.
    pub no_resume: bool,
}

/// The client configuration for `settings`, and the server name to send (SNI) and check.
pub(crate) fn client(
    settings: &TlsSettings,
    name: &str,
) -> Result<(Arc<ClientConfig>, ServerName<'static>), Error> {
    let (verifier, provider) = verifier(settings)?;
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Config(format!("TLS: {e}")))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    if settings.no_resume {
        config.resumption = rustls::client::Resumption::disabled();
    }
    let name = ServerName::try_from(name.to_string()).map_err(|_| {
        Error::Config(format!(
            "{name:?} is not a name TLS can check a certificate against"
        ))
    })?;
    Ok((Arc::new(config), name))
}

/// `provider` with TLS 1.3's AES-128-GCM-SHA256 offered first, as Chrome, Firefox and Go's
/// crypto/tls order them (rustls offers AES-256-GCM-SHA384 first): the suite a server that
/// follows the client's order picks is a browser's. It is also the cheaper handshake: its key
/// schedule's HMACs are SHA-256 (SHA-NI where the CPU has it) where SHA-384's ran ring's
/// SHA-512 without hardware help, 6-9 % of either side's CPU in full QUIC handshakes
/// (`--close --no-tls-resume`, perf).
fn browser_order(mut provider: CryptoProvider) -> CryptoProvider {
    use rustls::CipherSuite::TLS13_AES_128_GCM_SHA256;
    // Stable: the other suites keep rustls's order.
    provider
        .cipher_suites
        .sort_by_key(|s| s.suite() != TLS13_AES_128_GCM_SHA256);
    provider
}

/// The trust decision `settings` ask for (`--insecure`, `--cacert`, or the bundled Mozilla
/// roots through webpki, as `with_root_certificates` would build it), and the provider it
/// checks signatures with. Apart from the configuration so that the HTTP/3 engine can wrap it
/// per connection (`quic.rs`: whether a handshake checked a certificate tells a full one from
/// a resumed one, which quinn does not say).
pub(crate) fn verifier(
    settings: &TlsSettings,
) -> Result<(Arc<dyn ServerCertVerifier>, Arc<CryptoProvider>), Error> {
    let provider = Arc::new(browser_order(rustls::crypto::ring::default_provider()));
    let verifier: Arc<dyn ServerCertVerifier> = if settings.insecure {
        Arc::new(AnyCertificate(Arc::clone(&provider)))
    } else if let Some(path) = &settings.cacert {
        let (anchors, roots) = anchors_from(path)?;
        let chain =
            WebPkiServerVerifier::builder_with_provider(Arc::new(roots), Arc::clone(&provider))
                .build()
                .map_err(|e| Error::Config(format!("--cacert {}: {e}", path.display())))?;
        Arc::new(crate::anchor::AnchorOrChain { anchors, chain })
    } else {
        let roots = RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        WebPkiServerVerifier::builder_with_provider(Arc::new(roots), Arc::clone(&provider))
            .build()
            .map_err(|e| Error::Config(format!("TLS: {e}")))?
    };
    Ok((verifier, provider))
}

/// The certificates of a `--cacert` PEM file, as given and as trust anchors.
fn anchors_from(path: &Path) -> Result<(Vec<CertificateDer<'static>>, RootCertStore), Error> {
    let bad = |why: String| {
        Error::Config(format!(
            "--cacert {}: {why} (give a PEM file of CA certificates)",
            path.display()
        ))
    };
    let (mut anchors, mut roots) = (Vec::new(), RootCertStore::empty());
    let certs = CertificateDer::pem_file_iter(path).map_err(|e| bad(e.to_string()))?;
    for cert in certs {
        let cert = cert.map_err(|e| bad(e.to_string()))?;
        roots.add(cert.clone()).map_err(|e| bad(e.to_string()))?;
        anchors.push(cert);
    }
    if anchors.is_empty() {
        return Err(bad("no certificate in it".into()));
    }
    Ok((anchors, roots))
}

/// `--insecure`: any certificate is accepted, signatures are still checked to be well formed
/// by the provider (the handshake stays a real one, only the trust decision is skipped).
#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The client configuration and server name an https target is spoken to with, for other
/// clients of the same target (the lab's preflight): the same trust, ALPN http/1.1.
pub fn client_config(
    settings: &TlsSettings,
    name: &str,
) -> Result<(Arc<ClientConfig>, ServerName<'static>), Error> {
    client(settings, name)
}

/// [`cause`] for an I/O error that carries a rustls error (as rustls's and tokio-rustls's
/// streams return them); None for any other I/O error.
pub fn io_cause(e: &std::io::Error) -> Option<String> {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        .map(cause)
}

/// A failed handshake in words a user can act on: the cause, and what to do.
pub fn cause(error: &rustls::Error) -> String {
    use rustls::{CertificateError, Error as E};
    match error {
        E::InvalidCertificate(CertificateError::UnknownIssuer) => {
            "the server's certificate is signed by an unknown CA (give --cacert FILE for a private CA, or --insecure for a test server)".into()
        }
        E::InvalidCertificate(CertificateError::NotValidForName)
        | E::InvalidCertificate(CertificateError::NotValidForNameContext { .. }) => {
            "the server's certificate is not valid for the URL's host name (use a name it was issued for: its subjectAltName, as browsers check, not its CN; openssl req -x509 ... -addext subjectAltName=IP:127.0.0.1,DNS:localhost makes one)".into()
        }
        E::InvalidCertificate(CertificateError::Expired)
        | E::InvalidCertificate(CertificateError::ExpiredContext { .. }) => {
            "the server's certificate has expired".into()
        }
        // webpki's CaUsedAsEndEntity comes through as an opaque "other" error.
        E::InvalidCertificate(CertificateError::Other(other))
            if format!("{other:?}").contains("CaUsedAsEndEntity") =>
        {
            "the server's certificate is a CA certificate (basicConstraints CA:TRUE) presented as the server's own: give that very certificate with --cacert (it is then trusted as given), re-issue it as a leaf (CA:FALSE) signed by a CA you give, or give --insecure for a test server".into()
        }
        E::InvalidCertificate(other) => format!("the server's certificate was refused: {other:?}"),
        E::InvalidMessage(_) | E::InappropriateMessage { .. } | E::InappropriateHandshakeMessage { .. } => {
            format!("the server does not speak TLS as expected ({error}): is the port plain HTTP?")
        }
        E::PeerIncompatible(_) | E::AlertReceived(_) => {
            format!("the server refused the handshake ({error}): protocol versions or ciphers in common?")
        }
        other => format!("TLS failed: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aes_128_gcm_is_offered_first_and_no_suite_is_lost() {
        let rustls_order = rustls::crypto::ring::default_provider();
        let before: Vec<_> = rustls_order
            .cipher_suites
            .iter()
            .map(|s| s.suite())
            .collect();
        let ordered = browser_order(rustls::crypto::ring::default_provider());
        let after: Vec<_> = ordered.cipher_suites.iter().map(|s| s.suite()).collect();
        assert_ne!(before[0], rustls::CipherSuite::TLS13_AES_128_GCM_SHA256);
        assert_eq!(after[0], rustls::CipherSuite::TLS13_AES_128_GCM_SHA256);
        // The rest in rustls's order.
        let rest: Vec<_> = before
            .iter()
            .copied()
            .filter(|s| *s != rustls::CipherSuite::TLS13_AES_128_GCM_SHA256)
            .collect();
        assert_eq!(after[1..], rest[..]);
    }
}
