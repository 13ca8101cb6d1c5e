//! Before any sweep: fetch a sample of the file set's URLs once, and check that the target
//! answers, with the expected status, the bytes the manifest says (size, and the content
//! itself: the set's bytes are drawn from its seed, so they can be made again and compared).
//! A dead target, a wrong `--base`, a server whose root is another directory or cannot be
//! read, a proxy that rewrites bodies: each is one line and exit 1, before anything is written.
//!
//! A plain blocking client, one connection per request (over rustls for https, with the load's
//! trust settings): twelve requests are not worth the load generator's engine, and its
//! per-request accounting would hide which file went wrong. With `--http3` the sample is
//! fetched over HTTP/3 instead, on one QUIC connection ([`webscope_load::fetch_h3`]): the
//! runs speak it to the target's UDP port, which may serve HTTP/3 alone, so a check over
//! TCP would pass or fail a listener the runs never use.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::Path;
use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use webscope_workload::{File, Manifest};

use webscope_record::health::{reason, status_advice, Expect};

/// Files fetched: the first and the middle file of each class (SPECweb96 has four classes).
const PER_CLASS: usize = 2;
/// Bodies compared byte for byte up to this size; larger ones by size only.
const COMPARE_LIMIT: u64 = 4 << 20;
const TIMEOUT: Duration = Duration::from_secs(5);
/// Most bytes of a response read (a 64 MiB body and its head).
const LIMIT: usize = (64 << 20) + (64 << 10);
/// A connection that closed before a single byte came back.
const NO_RESPONSE: &str = "the connection closed without a response";

/// What the preflight found, for the report's set-up paragraph.
pub struct Checked {
    /// Files fetched.
    pub files: usize,
    /// Of them, compared byte for byte.
    pub compared: usize,
}

/// Fetches the sample from `base_url` (over HTTP/3 when `http3`) and checks it against the
/// set at `fileset`.
pub fn check(
    base_url: &str,
    fileset: &Path,
    expect: &Expect,
    tls: &webscope_load::TlsSettings,
    http3: bool,
) -> anyhow::Result<Checked> {
    let manifest = Manifest::load(fileset)
        .with_context(|| format!("--fileset {} is not a file set", fileset.display()))?;
    let sample = sample(&manifest);
    let (host, port, prefix, https) = split_url(base_url)?;
    if http3 && !https {
        bail!("--http3 speaks QUIC, which is always encrypted: give an https:// --target, not {base_url}");
    }
    let addr = (host.as_str(), port)
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve {host}"))?
        .next()
        .ok_or_else(|| anyhow!("{host} has no address"))?;
    let paths: Vec<String> = sample
        .iter()
        .map(|file| format!("{prefix}{}", file.path))
        .collect();
    // Over HTTP/3 the whole sample comes first, on one connection; over TCP a file at a time.
    let mut over_h3 = match http3 {
        true => {
            let authority = authority(&host, port);
            let fetched =
                webscope_load::fetch_h3(addr, (&host, &authority), &paths, tls, (TIMEOUT, LIMIT))
                    .map_err(|why| {
                    anyhow!("the target {base_url} does not answer over HTTP/3: {why}")
                })?;
            Some(fetched.into_iter())
        }
        false => None,
    };
    let tls = match (https, http3) {
        (true, false) => Some(webscope_load::tls_client_config(tls, &host)?),
        _ => None,
    };
    let mut unexpected: Vec<(u16, &File)> = Vec::new();
    let mut compared = 0;
    for (file, path) in sample.iter().zip(paths) {
        let (status, body) = match over_h3.as_mut() {
            Some(fetched) => fetched
                .next()
                .ok_or_else(|| anyhow!("preflight: no HTTP/3 answer for {path}"))?,
            None => get(addr, &host, port, &path, tls.as_ref())
                .map_err(|err| unanswered(err, base_url, addr))?,
        };
        if !expect.accepts(status) {
            unexpected.push((status, file));
            continue;
        }
        if body.len() as u64 != file.size {
            bail!(
                "preflight: {path} came back with {} bytes where the file set has {}: the server does not serve this file set (wrong --target base, a root other than {}, or a proxy rewriting bodies)",
                body.len(),
                file.size,
                fileset.display()
            );
        }
        if file.size <= COMPARE_LIMIT {
            compared += 1;
            if body != webscope_workload::content(manifest.seed, &file.path, file.size) {
                bail!(
                    "preflight: {path} has the right size but other bytes than the file set's: the server serves another copy of the set (made with another seed?) or a proxy rewrites bodies"
                );
            }
        }
    }
    if let Some(&(status, first)) = unexpected.first() {
        let same = unexpected.iter().filter(|(s, _)| *s == status).count();
        bail!(
            "preflight: {status} {} on {same} of {} sampled files (first {prefix}{}): {}",
            reason(status),
            sample.len(),
            first.path,
            status_advice(status)
        );
    }
    Ok(Checked {
        files: sample.len(),
        compared,
    })
}

/// The first and middle files of each class, in class order: deterministic, and covering
/// every size class the sweep will ask for.
fn sample(manifest: &Manifest) -> Vec<File> {
    let mut out = Vec::new();
    for class in &manifest.classes {
        let files: Vec<&File> = manifest
            .files
            .iter()
            .filter(|f| f.class == class.name)
            .collect();
        let picks = [0, files.len() / 2];
        for &i in picks.iter().take(PER_CLASS) {
            if let Some(f) = files.get(i) {
                if !out.iter().any(|o: &File| o.path == f.path) {
                    out.push((*f).clone());
                }
            }
        }
    }
    out
}

/// `http://host:port/prefix/` → host, port, `/prefix/`, and whether it is https.
fn split_url(url: &str) -> anyhow::Result<(String, u16, String, bool)> {
    let (rest, https) = match (url.strip_prefix("http://"), url.strip_prefix("https://")) {
        (Some(rest), _) => (rest, false),
        (_, Some(rest)) => (rest, true),
        _ => bail!("--target {url}: give an http:// or https:// URL (e.g. http://127.0.0.1:8080/)"),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !authority.ends_with(']') => (
            h,
            p.parse::<u16>()
                .map_err(|_| anyhow!("--target {url}: {p:?} is not a port"))?,
        ),
        _ => (authority, if https { 443 } else { 80 }),
    };
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let prefix = if path.ends_with('/') {
        path.to_string()
    } else {
        format!("{path}/")
    };
    Ok((host, port, prefix, https))
}

/// `host:port` as a Host header or `:authority` says it (an IPv6 address in brackets).
fn authority(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// The client side of an https connection, as rustls gives it.
type Tls = (
    std::sync::Arc<rustls::ClientConfig>,
    rustls::pki_types::ServerName<'static>,
);

/// One GET on a fresh connection: the status and the whole body (Content-Length, chunked or
/// until close, framed by `webscope_http::response::whole`).
fn get(
    addr: std::net::SocketAddr,
    host: &str,
    port: u16,
    path: &str,
    tls: Option<&Tls>,
) -> anyhow::Result<(u16, Vec<u8>)> {
    let tcp = TcpStream::connect_timeout(&addr, TIMEOUT)?;
    tcp.set_read_timeout(Some(TIMEOUT))?;
    tcp.set_write_timeout(Some(TIMEOUT))?;
    let host = authority(host, port);
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: webscope-preflight\r\nConnection: close\r\n\r\n"
    );
    let limit = LIMIT as u64;
    let mut data = Vec::new();
    match tls {
        None => {
            let mut stream = tcp;
            stream.write_all(request.as_bytes())?;
            if let Err(e) = stream.take(limit).read_to_end(&mut data) {
                return Err(broke_off(e.into(), &data));
            }
        }
        Some((config, name)) => {
            let conn = rustls::ClientConnection::new(std::sync::Arc::clone(config), name.clone())?;
            let mut stream = rustls::StreamOwned::new(conn, tcp);
            stream.write_all(request.as_bytes()).map_err(tls_error)?;
            match stream.take(limit).read_to_end(&mut data) {
                Ok(_) => {}
                // A server that closes without close_notify: the body is framed anyway.
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !data.is_empty() => {}
                Err(e) => return Err(broke_off(tls_error(e), &data)),
            }
        }
    }
    if data.is_empty() {
        bail!(NO_RESPONSE);
    }
    let (head, body) = webscope_http::response::whole(&data).map_err(|err| {
        anyhow!("the answer is not a complete HTTP/1.x response ({err}): is the port speaking TLS or another protocol?")
    })?;
    Ok((head.status, body.into_owned()))
}

/// An https exchange's error, with a failed handshake's cause in words.
fn tls_error(e: std::io::Error) -> anyhow::Error {
    match webscope_load::tls_io_cause(&e) {
        Some(why) => anyhow!(Handshake(why)),
        None => e.into(),
    }
}

/// `err` as it is before the first byte of the response; after it, said as a response that
/// broke off (the server did answer, so whether it runs is not the question).
fn broke_off(err: anyhow::Error, data: &[u8]) -> anyhow::Error {
    if data.is_empty() {
        err
    } else {
        anyhow!("the response broke off after {} bytes: {err}", data.len())
    }
}

/// A failed TLS handshake's cause, in words that say what to do.
#[derive(Debug)]
struct Handshake(String);

impl std::fmt::Display for Handshake {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Handshake {}

/// A failed fetch in one line. "Is the server running and listening?" is asked only where it
/// is the question: the connection was refused, timed out, or reset or closed before a single
/// byte; a handshake says what TLS said (and how to fix it), anything else is said as it is.
fn unanswered(err: anyhow::Error, base_url: &str, addr: std::net::SocketAddr) -> anyhow::Error {
    use std::io::ErrorKind as K;
    if let Some(why) = err.downcast_ref::<Handshake>() {
        return anyhow!("the TLS handshake with the target {base_url} failed: {why}");
    }
    let silent = err.downcast_ref::<std::io::Error>().is_some_and(|e| {
        matches!(
            e.kind(),
            K::ConnectionRefused
                | K::ConnectionReset
                | K::ConnectionAborted
                | K::TimedOut
                | K::WouldBlock
                | K::UnexpectedEof
        )
    }) || err.to_string() == NO_RESPONSE;
    if silent {
        anyhow!("the target {base_url} does not answer: {err} (is the server running and listening on {addr}?)")
    } else {
        anyhow!("the target {base_url} does not answer as expected: {err}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_host_port_and_prefix() {
        let s = |u: &str| split_url(u).unwrap();
        assert_eq!(
            s("http://127.0.0.1:8080/"),
            ("127.0.0.1".into(), 8080, "/".into(), false)
        );
        assert_eq!(
            s("http://localhost/spec"),
            ("localhost".into(), 80, "/spec/".into(), false)
        );
        assert_eq!(
            s("http://[::1]:81/a/"),
            ("::1".into(), 81, "/a/".into(), false)
        );
        assert_eq!(s("http://[::1]"), ("::1".into(), 80, "/".into(), false));
        assert_eq!(s("https://x/"), ("x".into(), 443, "/".into(), true));
        assert!(split_url("ftp://x/")
            .unwrap_err()
            .to_string()
            .contains("http:// or https://"));
        assert!(split_url("http://x:port/").is_err());
    }

    #[test]
    fn the_server_is_asked_about_only_when_nothing_came_back() {
        let addr: std::net::SocketAddr = "127.0.0.1:9".parse().unwrap();
        let say = |err: anyhow::Error| unanswered(err, "https://127.0.0.1:9/", addr).to_string();
        let asks = "is the server running and listening on 127.0.0.1:9?";
        let io = |kind| anyhow::Error::from(std::io::Error::from(kind));
        for kind in [
            std::io::ErrorKind::ConnectionRefused,
            std::io::ErrorKind::ConnectionReset,
            std::io::ErrorKind::TimedOut,
        ] {
            assert!(say(io(kind)).contains(asks), "{}", say(io(kind)));
        }
        assert!(say(anyhow!(NO_RESPONSE)).contains(asks));
        // A handshake the server answered: what TLS said, and how to fix it.
        let unknown = webscope_load::tls_cause(&rustls::Error::InvalidCertificate(
            rustls::CertificateError::UnknownIssuer,
        ));
        let line = say(anyhow!(Handshake(unknown)));
        assert!(!line.contains("running"), "{line}");
        assert!(
            line.contains(
                "the TLS handshake with the target https://127.0.0.1:9/ failed: the server's certificate is signed by an unknown CA"
            ) && line.contains("--cacert FILE")
                && line.contains("--insecure"),
            "{line}"
        );
        // A reset after the response began: the server runs.
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        let line = say(broke_off(reset.into(), b"HTTP/1.1 200"));
        assert!(
            !line.contains("running") && line.contains("broke off after 12 bytes"),
            "{line}"
        );
    }

    #[test]
    fn a_refused_connection_is_said_with_the_question() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        let err = get(addr, "127.0.0.1", addr.port(), "/", None).unwrap_err();
        let line = unanswered(err, "http://x/", addr).to_string();
        assert!(line.contains("is the server running"), "{line}");
    }

    #[test]
    fn the_sample_covers_every_class_once_per_pick() {
        let m = webscope_workload::Spec::SpecWeb96 { ops: 1.0 }
            .plan(1)
            .unwrap();
        let s = sample(&m);
        assert_eq!(s.len(), 2 * m.classes.len());
        for class in &m.classes {
            assert!(s.iter().any(|f| f.class == class.name), "{}", class.name);
        }
    }
}
