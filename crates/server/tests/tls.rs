//! The server over TLS: HTTP/2 and HTTP/1.1 chosen by ALPN, answering from the same method
//! table as plain HTTP (conditional requests, ranges, errors, large files), and the hardening
//! of plain HTTP holding under TLS (garbage instead of a ClientHello, a handshake that never
//! completes, malformed requests inside TLS). kTLS: the server's account of whether the
//! kernel took the keys must match what the kernel says to a probe of our own.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use webscope_server::{Config, Engine, KtlsState, Running, Server, TlsFiles};

struct Fixture {
    _dir: tempfile::TempDir,
    cert: CertificateDer<'static>,
    running: Option<Running>,
    addr: SocketAddr,
    ktls: KtlsState,
    big: Vec<u8>,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if let Some(running) = self.running.take() {
            running.shutdown();
        }
    }
}

fn start(tune: impl FnOnce(&mut Config)) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("www");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("hello.txt"), b"hello, world\n").unwrap();
    // Above the sendfile threshold: the large-file path, under TLS without sendfile.
    let big: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(root.join("big.bin"), &big).unwrap();
    let made = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert, made.cert.pem()).unwrap();
    std::fs::write(&key, made.key_pair.serialize_pem()).unwrap();
    let mut config = Config::new(&root);
    config.listen = "127.0.0.1:0".parse().unwrap();
    config.workers = 1;
    config.tls = Some(TlsFiles { cert, key });
    tune(&mut config);
    let server = Server::bind(config).unwrap();
    // TLS runs on the epoll engine: the default picks it by itself and says why.
    assert_eq!(
        server.engine(),
        &Engine::Fallback("io_uring does not serve --tls-cert yet".into())
    );
    let ktls = server.ktls().cloned().unwrap();
    let addr = server.local_addr();
    let running = server.start().unwrap();
    Fixture {
        _dir: dir,
        cert: made.cert.der().clone(),
        running: Some(running),
        addr,
        ktls,
        big,
    }
}

impl Fixture {
    fn stats(&self) -> webscope_server::Stats {
        self.running.as_ref().unwrap().stats()
    }

    /// The figures once `requests` are recorded, or after 10 s: a worker records a request
    /// after its last byte is sent, so a client can read the response before it is counted.
    fn stats_after(&self, requests: u64) -> webscope_server::Stats {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let stats = self.stats();
            if stats.requests() >= requests || Instant::now() > deadline {
                return stats;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    async fn tls(&self, alpn: &[u8]) -> tokio_rustls::client::TlsStream<TcpStream> {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(self.cert.clone()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![alpn.to_vec()];
        let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
        let tcp = TcpStream::connect(self.addr).await.unwrap();
        let name = ServerName::try_from("localhost").unwrap();
        connector.connect(name, tcp).await.unwrap()
    }

    async fn h2(&self) -> h2::client::SendRequest<Bytes> {
        let tls = self.tls(b"h2").await;
        assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
        let (sender, driver) = h2::client::handshake(tls).await.unwrap();
        tokio::spawn(async move {
            let _ = driver.await;
        });
        sender
    }
}

/// GET (or HEAD) over HTTP/2 with extra fields: (status, headers, body).
async fn h2_get(
    sender: &h2::client::SendRequest<Bytes>,
    method: &str,
    path: &str,
    fields: &[(&str, &str)],
) -> (u16, http::HeaderMap, Vec<u8>) {
    let mut request = http::Request::builder()
        .method(method)
        .uri(format!("https://localhost{path}"));
    for (name, value) in fields {
        request = request.header(*name, *value);
    }
    let mut sender = sender.clone().ready().await.unwrap();
    let (response, _) = sender
        .send_request(request.body(()).unwrap(), true)
        .unwrap();
    let response = response.await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let mut body = response.into_body();
    let mut bytes = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.unwrap();
        let _ = body.flow_control().release_capacity(chunk.len());
        bytes.extend_from_slice(&chunk);
    }
    (status, headers, bytes)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn http2_answers_as_http1_does() {
    let fx = start(|_| {});
    runtime().block_on(async {
        let h2 = fx.h2().await;
        let (status, headers, body) = h2_get(&h2, "GET", "/hello.txt", &[]).await;
        assert_eq!((status, body.as_slice()), (200, &b"hello, world\n"[..]));
        assert_eq!(headers["content-length"], "13");
        assert_eq!(headers["content-type"], "text/plain");
        assert!(
            headers.get("connection").is_none(),
            "no connection-specific fields in HTTP/2"
        );
        let etag = headers["etag"].to_str().unwrap().to_string();

        let (status, _, body) = h2_get(&h2, "GET", "/hello.txt", &[("if-none-match", &etag)]).await;
        assert_eq!((status, body.len()), (304, 0));
        // #51 §4: the preconditions reach HTTP/2 too.
        let past = [("if-unmodified-since", "Thu, 01 Jan 1970 00:00:00 GMT")];
        assert_eq!(h2_get(&h2, "GET", "/hello.txt", &past).await.0, 412);
        let other = [("if-match", "\"other\"")];
        assert_eq!(h2_get(&h2, "GET", "/hello.txt", &other).await.0, 412);
        let matching = [("if-match", etag.as_str())];
        assert_eq!(h2_get(&h2, "GET", "/hello.txt", &matching).await.0, 200);
        let (status, headers, body) =
            h2_get(&h2, "GET", "/big.bin", &[("range", "bytes=10-19")]).await;
        assert_eq!(status, 206);
        assert_eq!(headers["content-range"], "bytes 10-19/300000");
        assert_eq!(body, fx.big[10..20]);
        let (status, headers, body) = h2_get(&h2, "HEAD", "/big.bin", &[]).await;
        assert_eq!((status, body.len()), (200, 0));
        assert_eq!(headers["content-length"], "300000");
        assert_eq!(h2_get(&h2, "GET", "/missing", &[]).await.0, 404);
        assert_eq!(h2_get(&h2, "POST", "/hello.txt", &[]).await.0, 405);

        // Many streams at once on one connection, large bodies among them, flow-controlled.
        let mut tasks = Vec::new();
        for i in 0..24 {
            let h2 = h2.clone();
            let path = if i % 3 == 0 { "/big.bin" } else { "/hello.txt" };
            tasks.push(tokio::spawn(
                async move { h2_get(&h2, "GET", path, &[]).await },
            ));
        }
        for (i, task) in tasks.into_iter().enumerate() {
            let (status, _, body) = task.await.unwrap();
            assert_eq!(status, 200);
            if i % 3 == 0 {
                assert!(body == fx.big, "stream {i}: the large file arrived intact");
            } else {
                assert_eq!(body, b"hello, world\n");
            }
        }
    });
    let stats = fx.stats_after(33);
    assert_eq!(stats.h2_connections, 1);
    assert_eq!((stats.tls_full, stats.tls_failed), (1, 0));
    assert_eq!(stats.requests(), 33);
    // The handshake is recorded once, with the connection's first request.
    let tls: u64 = stats.phases.iter().map(|p| p[4].len()).sum();
    assert_eq!(tls, 1);
}

#[test]
fn http1_over_tls_keeps_alive_pipelines_and_sends_large_files() {
    let fx = start(|_| {});
    runtime().block_on(async {
        let mut tls = fx.tls(b"http/1.1").await;
        assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
        tls.write_all(
            b"GET /hello.txt HTTP/1.1\r\nHost: localhost\r\n\r\nGET /big.bin HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
        )
        .await
        .unwrap();
        let mut all = Vec::new();
        tls.read_to_end(&mut all).await.unwrap();
        let text = String::from_utf8_lossy(&all[..200]).to_string();
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
        let second = find(&all, b"HTTP/1.1 200 OK\r\n", 10).expect("two responses");
        let body_at = find(&all, b"\r\n\r\n", second).unwrap() + 4;
        assert!(all[body_at..] == fx.big, "the large file arrived intact");
    });
    let stats = fx.stats_after(2);
    assert_eq!((stats.requests(), stats.h2_connections), (2, 0));
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    hay[from..]
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

#[test]
fn malformed_requests_inside_tls_get_their_4xx_and_the_server_serves_on() {
    let fx = start(|_| {});
    let long_target = format!("GET /{} HTTP/1.1\r\nHost: t\r\n\r\n", "a".repeat(9000));
    let big_head = format!(
        "GET / HTTP/1.1\r\nHost: t\r\nX-Big: {}\r\n\r\n",
        "v".repeat(17000)
    );
    let many_fields = format!(
        "GET / HTTP/1.1\r\nHost: t\r\n{}\r\n",
        "X-F: 1\r\n".repeat(101)
    );
    // The plain-HTTP battery's classes (serve_errors.rs), each inside TLS.
    let cases: Vec<(&[u8], &str)> = vec![
        (b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", "400"),
        (b"GARBAGE\r\n\r\n", "400"),
        (b"GET /hello.txt HTTP/1.1\r\n\r\n", "400"),
        (b"GET / HTTP/1.1\r\nHost: t\r\nX-A: a\r\n  b\r\n\r\n", "400"),
        (b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", "400"),
        (b"GET /hello.txt HTTP/3.0\r\nHost: a\r\n\r\n", "505"),
        (b"BREW /pot HTTP/1.1\r\nHost: t\r\n\r\n", "501"),
        (b"DELETE /hello.txt HTTP/1.1\r\nHost: t\r\n\r\n", "405"),
        (b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 99999999\r\n\r\n", "413"),
        (long_target.as_bytes(), "414"),
        (big_head.as_bytes(), "431"),
        (many_fields.as_bytes(), "431"),
    ];
    runtime().block_on(async {
        for (request, status) in cases {
            let mut tls = fx.tls(b"http/1.1").await;
            tls.write_all(request).await.unwrap();
            // The head is enough (a lingering close would make read_to_end wait 2 s).
            let mut all = Vec::new();
            let mut buf = [0u8; 4096];
            while find(&all, b"\r\n\r\n", 0).is_none() {
                match tls.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => all.extend_from_slice(&buf[..n]),
                }
            }
            let text = String::from_utf8_lossy(&all);
            assert!(
                text.starts_with(&format!("HTTP/1.1 {status} ")),
                "{:?}: {text}",
                String::from_utf8_lossy(request)
            );
        }
        let h2 = fx.h2().await;
        assert_eq!(h2_get(&h2, "GET", "/hello.txt", &[]).await.0, 200);
    });
}

#[test]
fn garbage_instead_of_a_client_hello_is_closed_and_counted() {
    let fx = start(|_| {});
    runtime().block_on(async {
        let mut tcp = TcpStream::connect(fx.addr).await.unwrap();
        tcp.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .await
            .unwrap();
        let mut got = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(5), tcp.read_to_end(&mut got)).await;
        assert!(read.is_ok(), "the connection was closed");
        assert!(
            !String::from_utf8_lossy(&got).contains("HTTP/1.1"),
            "no plain HTTP answer on the TLS port"
        );
        let h2 = fx.h2().await;
        assert_eq!(h2_get(&h2, "GET", "/hello.txt", &[]).await.0, 200);
    });
    assert_eq!(fx.stats().tls_failed, 1);
}

#[test]
fn a_handshake_that_never_completes_is_cut_at_the_header_timeout() {
    // Without TCP_DEFER_ACCEPT the server sees the connection at once: the handshake timeout
    // alone bounds it.
    let fx = start(|c| {
        c.header_timeout = Duration::from_millis(800);
        c.defer_accept = false;
    });
    runtime().block_on(async {
        for first in [&b""[..], &[0x16, 0x03, 0x01, 0x02][..]] {
            // Nothing at all, then the start of a record header that never goes on.
            let mut tcp = TcpStream::connect(fx.addr).await.unwrap();
            tcp.write_all(first).await.unwrap();
            let began = Instant::now();
            let mut got = Vec::new();
            let read =
                tokio::time::timeout(Duration::from_secs(5), tcp.read_to_end(&mut got)).await;
            let took = began.elapsed();
            assert!(read.is_ok(), "closed by the server");
            assert!(
                took >= Duration::from_millis(600) && took < Duration::from_secs(3),
                "cut after {took:?}"
            );
        }
        let h2 = fx.h2().await;
        assert_eq!(h2_get(&h2, "GET", "/hello.txt", &[]).await.0, 200);
    });
    assert_eq!(fx.stats().tls_failed, 2);
}

/// What the kernel says to `setsockopt(TCP_ULP, "tls")` on an established connection.
fn kernel_takes_tls_ulp() -> bool {
    use std::os::fd::AsRawFd;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let _server = listener.accept().unwrap();
    // SAFETY: setsockopt on a socket this test owns, with a 3-byte value.
    let rc = unsafe {
        libc::setsockopt(
            client.as_raw_fd(),
            libc::SOL_TCP,
            libc::TCP_ULP,
            c"tls".as_ptr().cast(),
            3,
        )
    };
    rc == 0
}

#[test]
fn ktls_runs_where_the_kernel_has_it_and_falls_back_where_not() {
    let fx = start(|_| {});
    if kernel_takes_tls_ulp() {
        assert_eq!(fx.ktls, KtlsState::On);
    } else {
        match &fx.ktls {
            KtlsState::Unavailable(why) => assert!(why.contains("tls"), "{why}"),
            other => panic!("the kernel has no tls ULP, yet the server says {other}"),
        }
    }
    // Either way the server serves, large files included.
    runtime().block_on(async {
        let h2 = fx.h2().await;
        let (status, _, body) = h2_get(&h2, "GET", "/big.bin", &[]).await;
        assert!(status == 200 && body == fx.big);
        let mut tls = fx.tls(b"http/1.1").await;
        tls.write_all(b"GET /big.bin HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut all = Vec::new();
        let _ = tls.read_to_end(&mut all).await;
        let body_at = find(&all, b"\r\n\r\n", 0).unwrap() + 4;
        assert!(all[body_at..] == fx.big);
    });
    let off = start(|c| c.techniques.ktls = false);
    assert_eq!(off.ktls, KtlsState::Off);
}

#[test]
fn a_bad_certificate_or_key_is_one_line_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.pem");
    std::fs::write(&junk, b"not a certificate").unwrap();
    let made = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let key = dir.path().join("key.pem");
    std::fs::write(&key, made.key_pair.serialize_pem()).unwrap();
    let cert = dir.path().join("cert.pem");
    std::fs::write(&cert, made.cert.pem()).unwrap();
    let other = rcgen::KeyPair::generate().unwrap();
    let other_key = dir.path().join("other.pem");
    std::fs::write(&other_key, other.serialize_pem()).unwrap();
    for (cert, key, says) in [
        (junk.as_path(), key.as_path(), "--tls-cert"),
        (cert.as_path(), junk.as_path(), "--tls-key"),
        (cert.as_path(), Path::new("/nonexistent.pem"), "--tls-key"),
        (cert.as_path(), other_key.as_path(), "do not make"),
    ] {
        let mut config = Config::new(dir.path());
        config.listen = "127.0.0.1:0".parse().unwrap();
        config.tls = Some(TlsFiles {
            cert: cert.into(),
            key: key.into(),
        });
        let err = match Server::bind(config) {
            Ok(_) => panic!("{cert:?} {key:?} accepted"),
            Err(err) => err.to_string(),
        };
        assert!(err.contains(says) && !err.contains('\n'), "{err}");
    }
}

/// #28 §2: HTTP/2 clients that send the preface and a SETTINGS ack, then nothing (no PING
/// answer, no close), fill every slot; the keep-alive timeout and the bound after GOAWAY free
/// them, and a new client is served. Before, they held their slots forever.
#[test]
fn silent_http2_clients_are_cut_and_their_slots_serve_new_clients() {
    const SLOTS: usize = 4;
    let fx = start(|c| {
        c.max_connections = SLOTS;
        c.keepalive_timeout = Duration::from_secs(1);
    });
    runtime().block_on(async {
        let mut silent = Vec::new();
        for _ in 0..SLOTS {
            let mut tls = fx.tls(b"h2").await;
            let mut hello = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
            hello.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 0, 0]); // SETTINGS
            hello.extend_from_slice(&[0, 0, 0, 4, 1, 0, 0, 0, 0]); // SETTINGS ack
            tls.write_all(&hello).await.unwrap();
            tls.flush().await.unwrap();
            silent.push(tls);
        }
        let began = Instant::now();
        let served = tokio::time::timeout(Duration::from_secs(8), async {
            let h2 = fx.h2().await;
            h2_get(&h2, "GET", "/hello.txt", &[]).await.0
        })
        .await;
        let took = began.elapsed();
        assert_eq!(served, Ok(200), "no slot freed after {took:?}");
        assert!(took < Duration::from_secs(5), "served after {took:?}");
        for mut tls in silent {
            let mut rest = Vec::new();
            let read =
                tokio::time::timeout(Duration::from_secs(1), tls.read_to_end(&mut rest)).await;
            assert!(read.is_ok(), "a silent client is still connected");
        }
    });
}

/// Whether to run the body of test `name` here: in the process that runs it alone (this binary
/// again, with only that test). Elsewhere it starts that process and checks that the test ran
/// and passed there. The RSS tests read this process's resident memory, which every other
/// test here moves too (each has a server of its own, and they run at once): alone, the RSS
/// is the test's own. They failed under load, not alone.
fn run_alone(name: &str) -> bool {
    const ALONE: &str = "WEBSCOPE_TLS_TEST_ALONE";
    if std::env::var(ALONE).as_deref() == Ok(name) {
        return true;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(ALONE, name)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success() && stdout.contains("test result: ok. 1 passed"),
        "{name}, alone: {stdout}{stderr}"
    );
    false
}

/// This process's resident memory, from /proc.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// #28 §1: an HTTP/2 client that asks for a 10 MiB file on 100 streams and reads nothing is
/// cut at the send timeout, as an HTTP/1.1 one is, whether it opened its windows to 2^31-1
/// or left the streams' at 0; what the server holds for it meanwhile is bounded (RSS from
/// /proc). Before, the first held ~48 MiB, and neither was ever cut.
#[test]
fn an_http2_client_that_reads_nothing_is_cut_at_the_send_timeout() {
    if !run_alone("an_http2_client_that_reads_nothing_is_cut_at_the_send_timeout") {
        return;
    }
    let fx = start(|c| c.send_timeout = Duration::from_secs(1));
    let huge = fx._dir.path().join("www/huge.bin");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(10 << 20)
        .unwrap();
    runtime().block_on(async {
        for window in [(1u32 << 31) - 1, 0] {
            let before = rss_kib();
            let mut tls = stalled_h2_client(&fx, window).await;
            // Reads nothing while the server would be sending.
            tokio::time::sleep(Duration::from_secs(3)).await;
            let held = rss_kib().saturating_sub(before);
            let mut got = Vec::new();
            // The cut is waited for (a busy machine may be late to it), for at most 20 s.
            let read =
                tokio::time::timeout(Duration::from_secs(20), tls.read_to_end(&mut got)).await;
            assert!(
                read.is_ok(),
                "window {window}: still connected 23 s after a 1 s send timeout"
            );
            assert!(
                got.len() < 100 << 20,
                "window {window}: read {} bytes",
                got.len()
            );
            assert!(
                held < 24 << 10,
                "window {window}: the server held {held} KiB"
            );
        }
        let h2 = fx.h2().await;
        assert_eq!(h2_get(&h2, "GET", "/hello.txt", &[]).await.0, 200);
    });
}

/// #28 §1: what the server held for HTTP/2 clients that read nothing is given back when they
/// leave (before the send timeout): glibc keeps memory freed into the worker's arena unless it
/// is trimmed. RSS of this process, which runs the server, from /proc.
#[test]
fn memory_held_for_http2_clients_that_read_nothing_is_returned_when_they_leave() {
    if !run_alone("memory_held_for_http2_clients_that_read_nothing_is_returned_when_they_leave") {
        return;
    }
    let fx = start(|_| {});
    let huge = fx._dir.path().join("www/huge.bin");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(10 << 20)
        .unwrap();
    runtime().block_on(async {
        let before = rss_kib();
        let mut clients = Vec::new();
        for _ in 0..10 {
            clients.push(stalled_h2_client(&fx, (1u32 << 31) - 1).await);
        }
        let held = settle(|| rss_kib().saturating_sub(before) > 32 << 10).await;
        let held = held.saturating_sub(before);
        assert!(
            held > 32 << 10,
            "10 clients made the server hold only {held} KiB"
        );
        drop(clients);
        let left = settle(|| rss_kib().saturating_sub(before) < 12 << 10).await;
        let left = left.saturating_sub(before);
        assert!(
            left < 12 << 10,
            "{left} KiB still held 20 s after the clients left (they made it hold {held} KiB)"
        );
        let h2 = fx.h2().await;
        assert_eq!(h2_get(&h2, "GET", "/hello.txt", &[]).await.0, 200);
    });
}

/// Waits up to 20 s for `done` (an event a busy machine only delays), looking every 100 ms;
/// then the RSS in KiB.
async fn settle(done: impl Fn() -> bool) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    rss_kib()
}

/// An HTTP/2 client with stream windows of `window` (and, with a wide one, a connection
/// window as wide) that asks for /huge.bin on 100 streams, raw frames over TLS.
async fn stalled_h2_client(
    fx: &Fixture,
    window: u32,
) -> tokio_rustls::client::TlsStream<TcpStream> {
    let mut tls = fx.tls(b"h2").await;
    let mut out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    // SETTINGS: INITIAL_WINDOW_SIZE (4); then the ack of the server's.
    out.extend_from_slice(&[0, 0, 6, 4, 0, 0, 0, 0, 0, 0, 4]);
    out.extend_from_slice(&window.to_be_bytes());
    out.extend_from_slice(&[0, 0, 0, 4, 1, 0, 0, 0, 0]);
    if window > 65_535 {
        out.extend_from_slice(&[0, 0, 4, 8, 0, 0, 0, 0, 0]);
        out.extend_from_slice(&(window - 65_535).to_be_bytes());
    }
    // HPACK: :method GET, :scheme https (static 2, 7); :path and :authority by name.
    let mut block = vec![0x82, 0x87, 0x04, 9];
    block.extend_from_slice(b"/huge.bin");
    block.extend_from_slice(&[0x01, 9]);
    block.extend_from_slice(b"localhost");
    for i in 0..100u32 {
        out.extend_from_slice(&[0, 0, block.len() as u8, 1, 0x05]);
        out.extend_from_slice(&(2 * i + 1).to_be_bytes());
        out.extend_from_slice(&block);
    }
    tls.write_all(&out).await.unwrap();
    tls.flush().await.unwrap();
    tls
}
