//! `webscope serve` under many connections and under random bytes.

mod serve_support;

use std::io::{Read, Write};
use std::net::Shutdown;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use serve_support::*;

#[test]
fn a_thousand_concurrent_connections_are_served() {
    let site = Site::new();
    let server = Server::start(site.root(), &["--workers", "2"]);
    let addr = server.addr;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ok = runtime.block_on(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        // Open all thousand first, so they are concurrent, then use each.
        let mut streams = Vec::new();
        for _ in 0..1000 {
            streams.push(tokio::net::TcpStream::connect(addr).await.unwrap());
        }
        let mut tasks = Vec::new();
        for mut stream in streams {
            tasks.push(tokio::spawn(async move {
                stream
                    .write_all(b"GET /1k.bin HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
                    .await
                    .ok()?;
                let mut buf = Vec::new();
                tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut buf))
                    .await
                    .ok()?
                    .ok()?;
                let (resp, _) = parse_response(&buf, false)?;
                Some(resp.status == 200 && resp.body == pattern(1024))
            }));
        }
        let mut ok = 0;
        for task in tasks {
            if task.await.ok().flatten() == Some(true) {
                ok += 1;
            }
        }
        ok
    });
    assert_eq!(ok, 1000);
}

/// Reads whatever the server sends until it closes; every byte must belong to well-formed
/// responses.
fn responses_then_close(stream: &mut std::net::TcpStream) -> Result<usize, String> {
    stream
        .set_read_timeout(Some(Duration::from_secs(3)))
        .unwrap();
    let mut buf = Vec::new();
    let started = Instant::now();
    let mut chunk = [0u8; 65536];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => {
                return Err(format!(
                    "no answer and no close after {:?}: {e}",
                    started.elapsed()
                ))
            }
        }
    }
    let mut count = 0;
    let mut rest = &buf[..];
    while !rest.is_empty() {
        // Responses to HEAD have no body, but random input rarely makes a valid HEAD; a
        // response we cannot frame shows up as a parse failure here.
        match parse_response(rest, false) {
            Some((_, used)) => {
                rest = &rest[used..];
                count += 1;
            }
            None => {
                return Err(format!(
                    "trailing bytes that are not a response: {:?}",
                    String::from_utf8_lossy(rest)
                ))
            }
        }
    }
    Ok(count)
}

#[test]
fn random_bytes_never_harm_the_server() {
    let site = Site::new();
    let server = Server::start(site.root(), &["--header-timeout", "1s"]);
    let prefixes: [&[u8]; 3] = [
        b"",
        b"GET / HTTP/1.1\r\n",
        b"GET /1k.bin HTTP/1.1\r\nHost: t\r\n\r\n",
    ];
    let input = (
        0..prefixes.len(),
        proptest::collection::vec(any::<u8>(), 0..600),
    );
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 48,
        ..ProptestConfig::default()
    });
    let result = runner.run(&input, |(prefix, noise)| {
        let mut stream = server.connect();
        stream.write_all(prefixes[prefix]).unwrap();
        // The server may close early (e.g. after a 400) while noise is still being sent.
        let _ = stream.write_all(&noise);
        let _ = stream.shutdown(Shutdown::Write);
        let answered = responses_then_close(&mut stream);
        prop_assert!(answered.is_ok(), "{:?}", answered);
        prop_assert_eq!(get(&server, "/1k.bin").status, 200);
        Ok(())
    });
    if let Err(err) = result {
        panic!("{err}");
    }
    let mut server = server;
    assert!(server.alive());
}
