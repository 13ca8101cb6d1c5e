//! A minimal HTTP/3 load client, for `bench/h3_vs_peers.py` only: the floor of what quinn and
//! h3 cost a client per request, against which the load generator (`load --http3`) is
//! measured. Not shipped in the binary and not a tool: no histograms, no intervals, no
//! schedule, no error handling beyond counting; quinn's defaults throughout (its client
//! endpoint, its transport configuration), as a user writing the shortest client would.
//!
//! One thread (a current-thread runtime, as each of the generator's workers), `C` connections
//! on one endpoint, `M` request loops on each, a GET a stream, every body read and dropped,
//! for `SECS` seconds. Prints `requests=N errors=E seconds=S`; the bench reads the process's
//! CPU time from its exit (wait4), as it does the generator's.
//!
//! Usage: h3_min_client ADDR NAME PATH CACERT C M SECS

use std::cell::Cell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;

type Sender = h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() != 7 {
        eprintln!("usage: h3_min_client ADDR NAME PATH CACERT C M SECS");
        std::process::exit(2);
    }
    let parsed = (
        args[0].parse::<SocketAddr>(),
        args[4].parse::<usize>(),
        args[5].parse::<usize>(),
        args[6].parse::<f64>(),
    );
    let (Ok(addr), Ok(connections), Ok(streams), Ok(secs)) = parsed else {
        eprintln!("h3_min_client: ADDR is ip:port, C, M and SECS numbers");
        std::process::exit(2);
    };
    let (name, path, cacert) = (args[1].clone(), args[2].clone(), &args[3]);
    let config = match client_config(cacert) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("h3_min_client: {e}");
            std::process::exit(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("h3_min_client: no runtime: {e}");
            std::process::exit(2);
        }
    };
    let local = tokio::task::LocalSet::new();
    let counts = Rc::new((Cell::new(0u64), Cell::new(0u64)));
    let began = Instant::now();
    let end = began + Duration::from_secs_f64(secs);
    let run = local.run_until(run(
        addr,
        (name, path),
        config,
        (connections, streams),
        end,
        Rc::clone(&counts),
    ));
    if let Err(e) = runtime.block_on(run) {
        eprintln!("h3_min_client: {e}");
        std::process::exit(1);
    }
    println!(
        "requests={} errors={} seconds={:.3}",
        counts.0.get(),
        counts.1.get(),
        began.elapsed().as_secs_f64()
    );
}

/// quinn's client configuration trusting the PEM certificates in `cacert`.
fn client_config(cacert: &str) -> Result<quinn::ClientConfig, String> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(cacert).map_err(|e| format!("{cacert}: {e}"))? {
        let cert = cert.map_err(|e| format!("{cacert}: {e}"))?;
        roots.add(cert).map_err(|e| format!("{cacert}: {e}"))?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let quic = quinn::crypto::rustls::QuicClientConfig::try_from(tls).map_err(|e| e.to_string())?;
    Ok(quinn::ClientConfig::new(Arc::new(quic)))
}

/// Opens the connections, runs their request loops to `end`, closes them.
async fn run(
    addr: SocketAddr,
    (name, path): (String, String),
    config: quinn::ClientConfig,
    (connections, streams): (usize, usize),
    end: Instant,
    counts: Rc<(Cell<u64>, Cell<u64>)>,
) -> Result<(), String> {
    let bind: SocketAddr = if addr.is_ipv6() {
        "[::]:0"
    } else {
        "0.0.0.0:0"
    }
    .parse()
    .map_err(|e| format!("{e}"))?;
    let mut endpoint = quinn::Endpoint::client(bind).map_err(|e| format!("UDP socket: {e}"))?;
    endpoint.set_default_client_config(config);
    let uri: http::Uri = format!("https://{name}{path}")
        .parse()
        .map_err(|e| format!("{path}: {e}"))?;
    let mut loops = Vec::new();
    let mut opened = Vec::new();
    for _ in 0..connections {
        let connecting = endpoint
            .connect(addr, &name)
            .map_err(|e| format!("connect: {e}"))?;
        let quic = connecting.await.map_err(|e| format!("handshake: {e}"))?;
        let (mut driver, sender) = h3::client::new(h3_quinn::Connection::new(quic.clone()))
            .await
            .map_err(|e| format!("HTTP/3 set-up: {e}"))?;
        tokio::task::spawn_local(async move { driver.wait_idle().await });
        for _ in 0..streams {
            let (sender, uri, counts) = (sender.clone(), uri.clone(), Rc::clone(&counts));
            loops.push(tokio::task::spawn_local(requests(sender, uri, end, counts)));
        }
        opened.push((quic, sender));
    }
    for task in loops {
        let _ = task.await;
    }
    for (quic, sender) in opened {
        drop(sender);
        quic.close(0x100u32.into(), b"");
    }
    let _ = tokio::time::timeout(Duration::from_millis(200), endpoint.wait_idle()).await;
    Ok(())
}

/// One stream's closed loop: GET, the whole response, again, until `end`.
async fn requests(
    mut sender: Sender,
    uri: http::Uri,
    end: Instant,
    counts: Rc<(Cell<u64>, Cell<u64>)>,
) {
    while Instant::now() < end {
        match get(&mut sender, &uri).await {
            Ok(()) => counts.0.set(counts.0.get() + 1),
            Err(_) => {
                counts.1.set(counts.1.get() + 1);
                return;
            }
        }
    }
}

async fn get(sender: &mut Sender, uri: &http::Uri) -> Result<(), h3::error::StreamError> {
    let request = http::Request::get(uri.clone()).body(()).unwrap_or_default();
    let mut stream = sender.send_request(request).await?;
    stream.finish().await?;
    let _response = stream.recv_response().await?;
    while let Some(mut chunk) = stream.recv_data().await? {
        let n = chunk.remaining();
        chunk.advance(n);
    }
    Ok(())
}
