//! `webscope serve --http3` against hostile QUIC clients made here with quinn and h3: a flood
//! of handshakes whose answers never reach their sender (as from spoofed addresses), clients
//! that open streams and never read, a flood of reset streams, and a flood of new connection
//! IDs. Each time the server must
//! keep its memory bounded and go on serving an honest client (`webscope load --http3`).

mod lab_support;

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use lab_support::tls::{load, Http3};

/// A client configuration that trusts `cert` (the server's own), ALPN h3; `window` bounds
/// what the client takes unread on a stream (and 4 times it on the connection).
fn client_config(cert: &std::path::Path, window: Option<u32>) -> quinn::ClientConfig {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls::pki_types::CertificateDer::pem_file_iter(cert).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let quic = quinn::crypto::rustls::QuicClientConfig::try_from(tls).unwrap();
    let mut config = quinn::ClientConfig::new(Arc::new(quic));
    if let Some(window) = window {
        let mut transport = quinn::TransportConfig::default();
        transport
            .stream_receive_window(window.into())
            .receive_window((4 * window).into());
        config.transport_config(Arc::new(transport));
    }
    config
}

/// An HTTP/3 client of `addr` on `endpoint`: its QUIC connection and its request sender,
/// the connection's driver a task of the runtime.
async fn h3_client(
    endpoint: &quinn::Endpoint,
    config: quinn::ClientConfig,
    addr: SocketAddr,
) -> (
    quinn::Connection,
    h3::client::SendRequest<h3_quinn::OpenStreams, bytes::Bytes>,
) {
    let quic = endpoint
        .connect_with(config, addr, "localhost")
        .unwrap()
        .await
        .unwrap();
    let (mut driver, sender) = h3::client::new(h3_quinn::Connection::new(quic.clone()))
        .await
        .unwrap();
    tokio::spawn(async move {
        let _ = driver.wait_idle().await;
    });
    (quic, sender)
}

/// A one-way relay: what reaches its address goes on to `server`, what the server answers is
/// lost, as for a client whose source address was spoofed. Runs until `stop`.
fn one_way_relay(server: SocketAddr, stop: Arc<AtomicBool>) -> SocketAddr {
    let inbound = UdpSocket::bind("127.0.0.1:0").unwrap();
    let outbound = UdpSocket::bind("127.0.0.1:0").unwrap();
    inbound
        .set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    let addr = inbound.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut buf = [0u8; 2048];
        while !stop.load(Ordering::Relaxed) {
            if let Ok((n, _)) = inbound.recv_from(&mut buf) {
                let _ = outbound.send_to(&buf[..n], server);
            }
        }
    });
    addr
}

/// An honest client's run during the abuse: every request answered.
fn honest_run(h3: &Http3) -> serde_json::Value {
    let (r, text) = h3.load("/1k.bin", &["-c", "1", "-d", "1s"], 0);
    assert_eq!(r["errors"]["total"], 0, "{text}");
    assert!(r["requests"].as_u64().unwrap() > 0, "{text}");
    r
}

#[test]
fn a_flood_of_handshakes_that_never_finish_is_met_with_retries() {
    let h3 = Http3::start(&["--header-timeout", "3s"]);
    let serve = &h3.serve;
    let rss_before = serve.rss_kib();
    let stop = Arc::new(AtomicBool::new(false));
    let relay = one_way_relay(serve.addr, Arc::clone(&stop));
    let config = client_config(&h3.cert, None);
    // 400 connection attempts through the relay: their Initials reach the server, its answers
    // never come back, so the handshakes stay in progress until the header timeout.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let flood = runtime.block_on(async {
        let endpoint = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
        let mut attempts = Vec::new();
        for _ in 0..400 {
            let connecting = endpoint
                .connect_with(config.clone(), relay, "localhost")
                .unwrap();
            attempts.push(tokio::spawn(async move {
                tokio::time::timeout(Duration::from_secs(2), connecting).await
            }));
            tokio::time::sleep(Duration::from_micros(500)).await;
        }
        endpoint
    });
    let r = honest_run(&h3);
    let retries = serve.counter("webscope_quic_retries_total");
    stop.store(true, Ordering::Relaxed);
    drop(flood);
    let grown = serve.rss_kib().saturating_sub(rss_before);
    eprintln!("handshake flood: {retries} retries, RSS +{grown} KiB");
    assert!(retries > 0.0, "no Retry under 400 unfinished handshakes");
    assert!(grown < 64 * 1024, "RSS grew by {grown} KiB");
    assert!(r["tls"]["full"].as_u64().unwrap() >= 1);
}

#[test]
fn streams_never_read_are_cut_and_hold_bounded_memory_and_resets_free_theirs() {
    let h3 = Http3::start(&["--send-timeout", "1s"]);
    let (serve, cert) = (&h3.serve, &h3.cert);
    let rss_before = serve.rss_kib();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let addr = serve.addr;
    // 4 clients, each with 100 streams asking for 1 MiB and taking at most 16 KiB of each
    // unread: the server may buffer only a bounded share of the 400 MiB asked for.
    let held = runtime.block_on(async {
        let mut held = Vec::new();
        for _ in 0..4 {
            let endpoint = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
            let config = client_config(cert, Some(16 * 1024));
            let (_, mut sender) = h3_client(&endpoint, config, addr).await;
            let mut streams = Vec::new();
            for _ in 0..100 {
                let request =
                    http::Request::get(format!("https://localhost:{}/1m.bin", addr.port()))
                        .body(())
                        .unwrap();
                let mut stream = sender.send_request(request).await.unwrap();
                stream.finish().await.unwrap();
                streams.push(stream);
            }
            held.push((endpoint, sender, streams));
        }
        // Past the send timeout, with nothing read.
        tokio::time::sleep(Duration::from_secs(3)).await;
        held
    });
    let grown = serve.rss_kib().saturating_sub(rss_before);
    eprintln!("400 unread streams: RSS +{grown} KiB");
    assert!(
        grown < 96 * 1024,
        "RSS grew by {grown} KiB for 400 unread streams"
    );
    honest_run(&h3);
    // The unread responses were cut: their log lines say what left, less than the file.
    let deadline = Instant::now() + Duration::from_secs(10);
    let cut = loop {
        let lines = serve.log_lines(0);
        let cut = lines
            .iter()
            .filter(|l| l.contains("/1m.bin HTTP/3.0\" 200 ") && !l.contains(" 200 1048576 "))
            .count();
        if cut >= 100 || Instant::now() > deadline {
            break cut;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    eprintln!("{cut} responses cut of 400 unread");
    assert!(cut >= 100, "{cut} responses cut of 400 unread");
    drop(held);

    // A flood of streams reset as soon as they are opened.
    let reset = runtime.block_on(async {
        let endpoint = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
        let (_, mut sender) = h3_client(&endpoint, client_config(cert, None), addr).await;
        let mut reset = 0;
        for _ in 0..2000 {
            let request = http::Request::get(format!("https://localhost:{}/1m.bin", addr.port()))
                .body(())
                .unwrap();
            let Ok(Ok(mut stream)) =
                tokio::time::timeout(Duration::from_secs(2), sender.send_request(request)).await
            else {
                break;
            };
            stream.stop_sending(h3::error::Code::H3_REQUEST_CANCELLED);
            stream.stop_stream(h3::error::Code::H3_REQUEST_CANCELLED);
            reset += 1;
        }
        reset
    });
    // Each reset stream's slot came back: 2000 streams through a limit of 128 at once.
    assert_eq!(reset, 2000);
    let grown = serve.rss_kib().saturating_sub(rss_before);
    eprintln!("after a reset flood: RSS +{grown} KiB");
    assert!(
        grown < 96 * 1024,
        "RSS grew by {grown} KiB after a reset flood"
    );
    honest_run(&h3);
}

/// A two-way relay between one client and `server` that keeps every datagram the client sent,
/// in order. Runs until `stop`.
fn recording_relay(
    server: SocketAddr,
    stop: Arc<AtomicBool>,
) -> (SocketAddr, Arc<std::sync::Mutex<Vec<Vec<u8>>>>) {
    let inbound = UdpSocket::bind("127.0.0.1:0").unwrap();
    let outbound = UdpSocket::bind("127.0.0.1:0").unwrap();
    for socket in [&inbound, &outbound] {
        socket.set_nonblocking(true).unwrap();
    }
    let addr = inbound.local_addr().unwrap();
    let sent = Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = Arc::clone(&sent);
    std::thread::spawn(move || {
        let mut buf = [0u8; 2048];
        let mut client = None;
        while !stop.load(Ordering::Relaxed) {
            let mut idle = true;
            if let Ok((n, from)) = inbound.recv_from(&mut buf) {
                client = Some(from);
                kept.lock().unwrap().push(buf[..n].to_vec());
                let _ = outbound.send_to(&buf[..n], server);
                idle = false;
            }
            if let (Ok((n, _)), Some(client)) = (outbound.recv_from(&mut buf), client) {
                let _ = inbound.send_to(&buf[..n], client);
                idle = false;
            }
            if idle {
                std::thread::sleep(Duration::from_micros(200));
            }
        }
    });
    (addr, sent)
}

/// A QUIC variable-length integer at `at` (RFC 9000 §16): its value and the next offset.
fn varint(bytes: &[u8], at: usize) -> Option<(u64, usize)> {
    let first = *bytes.get(at)?;
    let len = 1usize << (first >> 6);
    let mut value = u64::from(first & 0x3f);
    for i in 1..len {
        value = (value << 8) | u64::from(*bytes.get(at + i)?);
    }
    Some((value, at + len))
}

/// The long-header packets coalesced in a datagram (RFC 9000 §17.2, §12.2): each one's type
/// (0 Initial, 1 0-RTT, 2 Handshake) and destination connection ID; a short-header packet
/// ends the walk.
fn long_packets(datagram: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut packets = Vec::new();
    let mut at = 0;
    while let Some(&first) = datagram.get(at) {
        if first & 0x80 == 0 {
            break;
        }
        let kind = (first >> 4) & 0x3;
        let Some(&dcid_len) = datagram.get(at + 5) else {
            break;
        };
        let dcid_at = at + 6;
        let Some(dcid) = datagram.get(dcid_at..dcid_at + dcid_len as usize) else {
            break;
        };
        let scid_len_at = dcid_at + dcid_len as usize;
        let Some(&scid_len) = datagram.get(scid_len_at) else {
            break;
        };
        let mut next = scid_len_at + 1 + scid_len as usize;
        if kind == 0 {
            let Some((token, after)) = varint(datagram, next) else {
                break;
            };
            next = after + token as usize;
        }
        let Some((length, payload)) = varint(datagram, next) else {
            break;
        };
        packets.push((kind, dcid.to_vec()));
        at = payload + length as usize;
    }
    packets
}

#[test]
fn a_replayed_0rtt_flight_does_nothing() {
    let h3 = Http3::start(&["--header-timeout", "1s"]);
    let serve = &h3.serve;
    let stop = Arc::new(AtomicBool::new(false));
    let (relay, sent) = recording_relay(serve.addr, Arc::clone(&stop));
    // A client that POSTs, a connection per request, in 0-RTT when it can.
    let url = format!("https://127.0.0.1:{}/1k.bin", relay.port());
    let (r, text) = load(
        &[
            &url,
            "--http3",
            "--close",
            "--0rtt",
            "-m",
            "POST",
            "-c",
            "1",
            "-d",
            "1s",
            "--cacert",
            h3.cacert(),
        ],
        &h3.tmp.path().join("r.json"),
        1,
    );
    stop.store(true, Ordering::Relaxed);
    assert!(r["tls"]["early"].as_u64().unwrap_or(0) > 0, "{text}");
    // The first flight of the first connection that sent 0-RTT packets (alone or coalesced
    // after its Initial): the datagrams to the connection ID its Initial chose. Not the
    // last one's: the run may end before that connection is closed, and a replayed Initial
    // whose connection ID the server still holds goes to that connection, which drops it.
    let sent = sent.lock().unwrap().clone();
    let flight_of = |chosen: &[u8]| -> Vec<&Vec<u8>> {
        sent.iter()
            .filter(|d| long_packets(d).iter().any(|(_, dcid)| dcid == chosen))
            .collect()
    };
    let has_0rtt = |flight: &[&Vec<u8>]| {
        flight
            .iter()
            .flat_map(|d| long_packets(d))
            .any(|(kind, _)| kind == 1)
    };
    let flight = sent
        .iter()
        .flat_map(|d| long_packets(d))
        .filter(|(kind, _)| *kind == 0)
        .map(|(_, dcid)| flight_of(&dcid))
        .find(|flight| has_0rtt(flight))
        .expect("a first flight with 0-RTT packets");
    let posts = |lines: &[String]| lines.iter().filter(|l| l.contains("\"POST ")).count();
    let requests = r["requests"].as_u64().unwrap() as usize;
    let before = posts(&serve.log_lines(requests));
    let failed = |s: &lab_support::tls::Serve| {
        s.metrics()
            .lines()
            .find(|l| l.starts_with("webscope_tls_handshakes_total{result=\"failed\"}"))
            .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    let failed_before = failed(serve);
    // The attacker's copy, from another address: the ticket was used once already, so the
    // server makes it a full handshake without the early data, which the replayer can never
    // finish.
    let attacker = UdpSocket::bind("127.0.0.1:0").unwrap();
    for datagram in &flight {
        attacker.send_to(datagram, serve.addr).unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while failed(serve) <= failed_before {
        assert!(
            Instant::now() < deadline,
            "the replay never reached a handshake"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(1200));
    let after = posts(&serve.log_lines(0));
    assert_eq!(after, before, "the replayed POST was processed");
}

/// Connection IDs that live 2 ms: quinn retires each as it expires and issues a new one, a
/// NEW_CONNECTION_ID frame whose retire_prior_to makes the server retire the old ones (a
/// RETIRE_CONNECTION_ID back each), as fast as the round trip allows. IDs made from a
/// counter, not at random: the flood needs them distinct, not unguessable.
struct Rotating(u64);

impl quinn::ConnectionIdGenerator for Rotating {
    fn generate_cid(&mut self) -> quinn::ConnectionId {
        self.0 += 1;
        quinn::ConnectionId::new(&self.0.to_be_bytes())
    }
    fn cid_len(&self) -> usize {
        8
    }
    fn cid_lifetime(&self) -> Option<Duration> {
        Some(Duration::from_millis(2))
    }
}

/// Issue 50: a flood of new connection IDs. 32 HTTP/3 connections whose client rotates its
/// connection IDs every 2 ms: the server takes and retires thousands (counted by the
/// clients' frames) while its memory stays bounded and an honest client is served.
#[test]
fn a_flood_of_new_connection_ids_holds_bounded_memory_and_others_are_served() {
    let h3 = Http3::start(&[]);
    let serve = &h3.serve;
    let rss_before = serve.rss_kib();
    let (addr, config) = (serve.addr, client_config(&h3.cert, None));
    let flood = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let mut endpoint_config = quinn::EndpointConfig::default();
            endpoint_config.cid_generator(|| Box::new(Rotating(0)));
            let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
            let endpoint =
                quinn::Endpoint::new(endpoint_config, None, socket, Arc::new(quinn::TokioRuntime))
                    .unwrap();
            let mut held = Vec::new();
            for _ in 0..32 {
                held.push(h3_client(&endpoint, config.clone(), addr).await);
            }
            // At least 2 s (the honest run's second within it), until 2 000 new IDs have
            // gone (about 800 a second here), for at most 15 s.
            let started = tokio::time::Instant::now();
            loop {
                tokio::time::sleep(Duration::from_millis(100)).await;
                let (mut issued, mut retired, mut open) = (0, 0, 0);
                for (quic, _) in &held {
                    let stats = quic.stats();
                    issued += stats.frame_tx.new_connection_id;
                    retired += stats.frame_rx.retire_connection_id;
                    open += usize::from(quic.close_reason().is_none());
                }
                let elapsed = started.elapsed();
                let enough = issued >= 2000 && elapsed >= Duration::from_secs(2);
                // Past 15 s the connections may reach their idle timeout (a host with steal
                // sent 1 981 in 15 s with all 32 open, and 1 416 in 90 s with none open).
                if enough || elapsed >= Duration::from_secs(15) {
                    break (issued, retired, open);
                }
            }
        })
    });
    std::thread::sleep(Duration::from_millis(500));
    let r = honest_run(&h3);
    let (issued, retired, open) = flood.join().unwrap();
    let grown = serve.rss_kib().saturating_sub(rss_before);
    eprintln!(
        "connection ID flood: {issued} NEW_CONNECTION_ID sent, {retired} retired by the server, \
         {open} of 32 connections open, RSS +{grown} KiB"
    );
    assert!(
        issued >= 1000,
        "only {issued} new connection IDs sent in 15 s"
    );
    assert!(
        retired >= issued / 2,
        "the server retired only {retired} of {issued}"
    );
    assert_eq!(open, 32, "the server closed a flooding connection");
    assert!(grown < 32 * 1024, "RSS grew by {grown} KiB");
    assert_eq!(r["tls"]["full"], 1, "{r}");
    honest_run(&h3);
}
