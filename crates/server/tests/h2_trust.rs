//! experiment
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use webscope_server::{Config, Running, Server, TlsFiles};

struct Fixture {
    dir: tempfile::TempDir,
    cert: CertificateDer<'static>,
    running: Option<Running>,
    addr: SocketAddr,
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
    std::fs::File::create(root.join("huge.bin")).unwrap().set_len(10 << 20).unwrap();
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
    eprintln!("ktls {:?}", server.ktls());
    let addr = server.local_addr();
    let running = server.start().unwrap();
    Fixture { dir, cert: made.cert.der().clone(), running: Some(running), addr }
}

impl Fixture {
    async fn tls(&self) -> tokio_rustls::client::TlsStream<TcpStream> {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(self.cert.clone()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"h2".to_vec()];
        let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
        let tcp = TcpStream::connect(self.addr).await.unwrap();
        let name = ServerName::try_from("localhost").unwrap();
        connector.connect(name, tcp).await.unwrap()
    }
}

async fn silent(fx: &Fixture, streams: u32) -> tokio_rustls::client::TlsStream<TcpStream> {
    let window = (1u32 << 31) - 1;
    let mut tls = fx.tls().await;
    let mut out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    out.extend_from_slice(&[0, 0, 6, 4, 0, 0, 0, 0, 0, 0, 4]);
    out.extend_from_slice(&window.to_be_bytes());
    out.extend_from_slice(&[0, 0, 0, 4, 1, 0, 0, 0, 0]);
    out.extend_from_slice(&[0, 0, 4, 8, 0, 0, 0, 0, 0]);
    out.extend_from_slice(&(window - 65_535).to_be_bytes());
    let mut block = vec![0x82, 0x87, 0x04, 9];
    block.extend_from_slice(b"/huge.bin");
    block.extend_from_slice(&[0x01, 9]);
    block.extend_from_slice(b"localhost");
    for i in 0..streams {
        out.extend_from_slice(&[0, 0, block.len() as u8, 1, 0x05]);
        out.extend_from_slice(&(2 * i + 1).to_be_bytes());
        out.extend_from_slice(&block);
    }
    tls.write_all(&out).await.unwrap();
    tls.flush().await.unwrap();
    tls
}

fn tcp_state(fd: i32) -> u8 {
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    unsafe { libc::getsockopt(fd, libc::SOL_TCP, libc::TCP_INFO, (&mut info as *mut libc::tcp_info).cast(), &mut len) };
    info.tcpi_state
}

#[test]
fn experiment() {
    for ktls in [false, true] {
    let fx = start(|c| { c.send_timeout = Duration::from_secs(3); c.techniques.ktls = ktls; });
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let tls = silent(&fx, 1).await;
        let fd = tls.get_ref().0.as_raw_fd();
        let began = Instant::now();
        let mut last = (0, 0);
        while began.elapsed() < Duration::from_secs(15) {
            let now = (tcp_state(fd), fx.running.as_ref().unwrap().stats().active);
            if now != last { eprintln!("{:?} client state {} server active {}", began.elapsed(), now.0, now.1); last = now; }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let out = std::process::Command::new("ss").args(["-tnoi", "state", "all", &format!("( sport = :{} or dport = :{} )", fx.addr.port(), fx.addr.port())]).output().unwrap();
        eprintln!("{}", String::from_utf8_lossy(&out.stdout));
        drop(tls);
    });
    let _ = &fx.dir;
    }
}
