//! TLS for `serve --tls-cert/--tls-key`, set up once at start: the certificate and key loaded,
//! ALPN (h2 before http/1.1), session resumption, and whether the kernel takes kTLS. Each
//! connection's handshake is `epoll/tls.rs`'s (the engine TLS runs on).
//!
//! kTLS (technique `ktls`): after the handshake the session keys go to the kernel
//! (`TCP_ULP "tls"`, `TLS_TX`/`TLS_RX`), so responses are plain `write`s and large files go by
//! `sendfile` again, encrypted in the kernel. Whether the kernel can is probed once at start
//! (a loopback connection and the ULP setsockopt); where it cannot (no `tls` module: ENOENT),
//! the server says so once and serves with user-space TLS, and its stats say which way it ran.

use std::io;
use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::config::TlsFiles;
use crate::error::Error;

/// Sessions the server remembers for clients that resume by session ID (TLS 1.2 without
/// tickets). Kept small: rustls's cache finds a session to evict by a linear scan, which at
/// 10 240 entries took 14 % of a close-mode profile.
const SESSION_CACHE: usize = 1024;

/// The loaded configuration every worker shares.
pub(crate) struct Tls {
    pub acceptor: tokio_rustls::TlsAcceptor,
    /// kTLS is on and the kernel takes it.
    pub ktls: bool,
}

/// Whether kTLS ran, and why not when it did not: for the start-up line and the stats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KtlsState {
    /// The technique is off.
    Off,
    /// On, and the kernel takes the keys.
    On,
    /// On, but the kernel refused; the reason.
    Unavailable(String),
}

impl std::fmt::Display for KtlsState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KtlsState::Off => f.write_str("off"),
            KtlsState::On => f.write_str("on"),
            KtlsState::Unavailable(why) => write!(f, "off ({why})"),
        }
    }
}

impl Tls {
    /// Loads the PEM files; errors name the file and what is wrong with it.
    pub(crate) fn load(files: &TlsFiles, want_ktls: bool) -> Result<(Tls, KtlsState), Error> {
        let chain = read_chain(&files.cert)?;
        let key = read_key(&files.key)?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::Tls(format!("cannot set up TLS: {e}")))?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(|e| {
                Error::Tls(format!(
                    "{} and {} do not make a usable certificate and key: {e}",
                    files.cert.display(),
                    files.key.display()
                ))
            })?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        config.session_storage = rustls::server::ServerSessionMemoryCache::new(SESSION_CACHE);
        // Resumption by stateless tickets (ChaCha20-Poly1305, keys rotated every 6 h), as
        // OpenSSL does by default for TLS 1.3: no lookup, no shared state between workers.
        config.ticketer = rustls::crypto::ring::Ticketer::new()
            .map_err(|e| Error::Tls(format!("cannot set up TLS session tickets: {e}")))?;
        let state = if !want_ktls {
            KtlsState::Off
        } else {
            match probe_ktls() {
                Ok(()) => KtlsState::On,
                Err(why) => KtlsState::Unavailable(why),
            }
        };
        let ktls = state == KtlsState::On;
        // The keys can be handed to the kernel only if rustls keeps them extractable.
        config.enable_secret_extraction = ktls;
        let tls = Tls {
            acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(config)),
            ktls,
        };
        Ok((tls, state))
    }
}

fn read_chain(path: &Path) -> Result<Vec<CertificateDer<'static>>, Error> {
    let bad = |what: String| Error::Tls(format!("--tls-cert {}: {what}", path.display()));
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(pem_error(e)))?
        .collect::<Result<_, _>>()
        .map_err(|e| bad(pem_error(e)))?;
    if chain.is_empty() {
        return Err(bad(
            "no certificate in it (expected PEM \"BEGIN CERTIFICATE\" blocks)".into(),
        ));
    }
    Ok(chain)
}

fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, Error> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| {
        Error::Tls(format!(
            "--tls-key {}: {} (expected a PEM private key: PKCS#8, PKCS#1 or SEC1)",
            path.display(),
            pem_error(e)
        ))
    })
}

fn pem_error(err: rustls::pki_types::pem::Error) -> String {
    match err {
        rustls::pki_types::pem::Error::Io(e) => e.to_string(),
        rustls::pki_types::pem::Error::NoItemsFound => "nothing of the expected kind in it".into(),
        other => format!("not valid PEM ({other:?})"),
    }
}

/// Tries `setsockopt(TCP_ULP, "tls")` on a loopback connection (the ULP can only be set on an
/// established socket): Ok if the kernel takes it, else why not.
fn probe_ktls() -> Result<(), String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(|e| format!("cannot probe kTLS: {e}"))?;
    let addr = listener
        .local_addr()
        .map_err(|e| format!("cannot probe kTLS: {e}"))?;
    let client =
        std::net::TcpStream::connect(addr).map_err(|e| format!("cannot probe kTLS: {e}"))?;
    let _server = listener
        .accept()
        .map_err(|e| format!("cannot probe kTLS: {e}"))?;
    use std::os::fd::AsRawFd;
    // SAFETY: a setsockopt on a socket this function owns, with a 3-byte option value.
    let rc = unsafe {
        libc::setsockopt(
            client.as_raw_fd(),
            libc::SOL_TCP,
            libc::TCP_ULP,
            c"tls".as_ptr().cast(),
            3,
        )
    };
    if rc == 0 {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    Err(match err.raw_os_error() {
        Some(libc::ENOENT) => {
            "the kernel has no tls ULP (module tls not loaded or not built)".into()
        }
        Some(libc::EPERM) | Some(libc::EACCES) => format!("the kernel refused the tls ULP: {err}"),
        _ => format!("TCP_ULP tls failed: {err}"),
    })
}
