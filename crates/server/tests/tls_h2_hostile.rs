//! HTTP/2 clients that hold the server's memory over TLS (#28 §1): silent ones are cut and
//! their slots serve new clients, one that reads nothing is cut at the send timeout, and
//! what they held is returned when they leave (RSS from /proc, each such test alone in a
//! process of its own).

mod tls_support;

use std::time::{Duration, Instant};

use tls_support::{h2_get, runtime, start, Fixture};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

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
