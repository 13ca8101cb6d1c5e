//! The server over TLS: HTTP/2 and HTTP/1.1 chosen by ALPN, answering from the same method
//! table as plain HTTP (conditional requests, ranges, errors, large files), and the hardening
//! of plain HTTP holding under TLS (garbage instead of a ClientHello, a handshake that never
//! completes, malformed requests inside TLS). kTLS: the server's account of whether the
//! kernel took the keys must match what the kernel says to a probe of our own.

mod tls_support;

use std::path::Path;
use std::time::{Duration, Instant};

use tls_support::{h2_get, runtime, start};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use webscope_server::{Config, KtlsState, Server, TlsFiles};

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
