//! What the TLS tests share: a server on loopback with a self-signed certificate, TLS and
//! HTTP/2 clients of it, and a runtime to drive them.
#![allow(dead_code)] // each test binary uses its own part

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::net::TcpStream;
use webscope_server::{Config, Engine, KtlsState, Running, Server, TlsFiles};

pub struct Fixture {
    pub _dir: tempfile::TempDir,
    pub cert: CertificateDer<'static>,
    pub running: Option<Running>,
    pub addr: SocketAddr,
    pub ktls: KtlsState,
    pub big: Vec<u8>,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if let Some(running) = self.running.take() {
            running.shutdown();
        }
    }
}

pub fn start(tune: impl FnOnce(&mut Config)) -> Fixture {
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
    pub fn stats(&self) -> webscope_server::Stats {
        self.running.as_ref().unwrap().stats()
    }

    /// The figures once `requests` are recorded, or after 10 s: a worker records a request
    /// after its last byte is sent, so a client can read the response before it is counted.
    pub fn stats_after(&self, requests: u64) -> webscope_server::Stats {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let stats = self.stats();
            if stats.requests() >= requests || Instant::now() > deadline {
                return stats;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub async fn tls(&self, alpn: &[u8]) -> tokio_rustls::client::TlsStream<TcpStream> {
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

    pub async fn h2(&self) -> h2::client::SendRequest<Bytes> {
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
pub async fn h2_get(
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

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}
