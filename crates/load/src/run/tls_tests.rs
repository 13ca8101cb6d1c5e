//! The load generator end to end over https: handshakes full and resumed, and the failures a
//! user must be told the cause of, against a tiny rustls server.

use super::*;
use crate::config::Mode;
use std::io::{Read, Write};
use std::net::TcpListener;

/// A TLS server (rustls, blocking, a thread per connection) with a self-signed certificate
/// for `names`, answering every request with `body` bytes; returns its address and the
/// certificate as a PEM file (the CA to trust).
fn serve_tls(
    names: &[&str],
    body: usize,
    dir: &std::path::Path,
) -> (std::net::SocketAddr, std::path::PathBuf) {
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    serve_tls_with(
        rcgen::generate_simple_self_signed(names).unwrap(),
        body,
        dir,
    )
}

/// [`serve_tls`] with a certificate made elsewhere.
fn serve_tls_with(
    certified: rcgen::CertifiedKey,
    body: usize,
    dir: &std::path::Path,
) -> (std::net::SocketAddr, std::path::PathBuf) {
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
    let pem = dir.join("ca.pem");
    std::fs::write(&pem, certified.cert.pem()).unwrap();
    let cert: CertificateDer<'static> = certified.cert.der().clone();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(certified.key_pair.serialize_der()));
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = std::sync::Arc::new(
        rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert], key)
            .unwrap(),
    );
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let config = std::sync::Arc::clone(&config);
            std::thread::spawn(move || {
                let conn = rustls::ServerConnection::new(config).unwrap();
                let mut tls = rustls::StreamOwned::new(conn, stream);
                if super::tests::answer(&mut tls, None, body) == super::tests::Ended::Close {
                    tls.conn.send_close_notify();
                    let _ = tls.flush();
                }
            });
        }
    });
    (addr, pem)
}

/// A self-signed certificate with basicConstraints CA:TRUE for `name`, as `openssl req -x509`
/// makes by default.
fn self_signed_ca(name: &str) -> rcgen::CertifiedKey {
    let key_pair = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(vec![name.to_string()]).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let cert = params.self_signed(&key_pair).unwrap();
    rcgen::CertifiedKey { cert, key_pair }
}

fn https(addr: std::net::SocketAddr) -> Config {
    super::tests::short(&format!("https://{addr}/x"))
}

#[test]
fn https_keep_alive_makes_one_handshake_per_connection() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, ca) = serve_tls(&["127.0.0.1"], 100, dir.path());
    let mut config = https(addr);
    config.tls.cacert = Some(ca);
    let report = run(&config, &AtomicBool::new(false), &mut |_| {}).unwrap();
    assert!(report.total.requests > 50, "{report:#?}");
    assert_eq!(
        report.total.errors.total, 0,
        "{:?} {:?}",
        report.total.errors, report.warnings
    );
    let tls = report.tls.unwrap();
    assert_eq!((tls.full, tls.resumed), (2, 0));
    assert!(tls.handshake_us.p50 > 0.0);
    assert!(report.total.bytes >= report.total.requests * 100);
}

#[test]
fn https_close_mode_resumes_sessions_unless_told_not_to() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, ca) = serve_tls(&["127.0.0.1"], 10, dir.path());
    let mut config = https(addr);
    config.mode = Mode::Close;
    config.tls.cacert = Some(ca);
    let report = run(&config, &AtomicBool::new(false), &mut |_| {}).unwrap();
    assert_eq!(
        report.total.errors.total, 0,
        "{:?} {:?}",
        report.total.errors, report.warnings
    );
    let tls = report.tls.unwrap();
    assert!(tls.resumed > tls.full, "{tls:?}");
    assert!(
        tls.full + tls.resumed >= report.total.requests,
        "{tls:?} for {}",
        report.total.requests
    );
    config.tls.no_resume = true;
    let report = run(&config, &AtomicBool::new(false), &mut |_| {}).unwrap();
    let tls = report.tls.unwrap();
    assert_eq!(tls.resumed, 0, "{tls:?}");
    assert!(tls.full >= report.total.requests, "{tls:?}");
}

#[test]
fn failed_handshakes_are_counted_and_say_why() {
    let dir = tempfile::tempdir().unwrap();
    // No CA given: the self-signed certificate is unknown.
    let (addr, ca) = serve_tls(&["127.0.0.1"], 10, dir.path());
    let report = run(&https(addr), &AtomicBool::new(false), &mut |_| {}).unwrap();
    assert_eq!(report.total.requests, 0);
    assert!(report.total.errors.tls > 0, "{:?}", report.total.errors);
    assert!(
        report.warnings.iter().any(|w| w.contains("unknown CA")),
        "{:?}",
        report.warnings
    );
    // --insecure: the same server is fine.
    let mut config = https(addr);
    config.tls.insecure = true;
    let report = run(&config, &AtomicBool::new(false), &mut |_| {}).unwrap();
    assert!(
        report.total.requests > 0 && report.total.errors.total == 0,
        "{:?}",
        report.warnings
    );
    // A certificate for another name.
    let other = tempfile::tempdir().unwrap();
    let (addr, ca_other) = serve_tls(&["other.example"], 10, other.path());
    let mut config = https(addr);
    config.tls.cacert = Some(ca_other);
    let report = run(&config, &AtomicBool::new(false), &mut |_| {}).unwrap();
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.contains("not valid for the URL's host name")),
        "{:?}",
        report.warnings
    );
    // A CA certificate presented as the server's (openssl req -x509 makes one, CA:TRUE),
    // trusted by another --cacert: refused, and told how to trust it.
    let ca_dir = tempfile::tempdir().unwrap();
    let (addr, ca_cert) = serve_tls_with(self_signed_ca("127.0.0.1"), 10, ca_dir.path());
    let mut config = https(addr);
    config.tls.cacert = Some(ca.clone());
    let report = run(&config, &AtomicBool::new(false), &mut |_| {}).unwrap();
    assert!(report.total.errors.tls > 0, "{:?}", report.total.errors);
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.contains("is a CA certificate") && w.contains("--cacert")),
        "{:?}",
        report.warnings
    );
    // Given itself as --cacert, it is the trust anchor: accepted, as curl does.
    config.tls.cacert = Some(ca_cert);
    let report = run(&config, &AtomicBool::new(false), &mut |_| {}).unwrap();
    assert!(
        report.total.requests > 0 && report.total.errors.total == 0,
        "{:?} {:?}",
        report.total.errors,
        report.warnings
    );
    // The same, issued for another name: an anchor is trusted for its own names only.
    let other_ca = tempfile::tempdir().unwrap();
    let (addr, other_ca_cert) =
        serve_tls_with(self_signed_ca("other.example"), 10, other_ca.path());
    let mut config = https(addr);
    config.tls.cacert = Some(other_ca_cert);
    let report = run(&config, &AtomicBool::new(false), &mut |_| {}).unwrap();
    assert!(report.total.errors.tls > 0, "{:?}", report.total.errors);
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.contains("not valid for the URL's host name")),
        "{:?}",
        report.warnings
    );
    // Plain HTTP on the port: a server that answers anything with a 400, as nginx does
    // a ClientHello on a plain port.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let plain = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut buf = [0u8; 1024];
            if stream.read(&mut buf).is_ok() {
                let _ = stream.write_all(
                    b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                );
            }
        }
    });
    let mut config = https(plain);
    config.tls.cacert = Some(ca);
    let report = run(&config, &AtomicBool::new(false), &mut |_| {}).unwrap();
    assert!(report.total.errors.tls > 0, "{:?}", report.total.errors);
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.contains("does not speak TLS")),
        "{:?}",
        report.warnings
    );
}
