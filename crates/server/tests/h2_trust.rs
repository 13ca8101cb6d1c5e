//! HTTP/2 clients that ask for a large file and then read nothing (#34 §7, §8), on every
//! engine that speaks HTTP/2: epoll over user-space TLS and over kTLS (io_uring serves no TLS,
//! and says so at bind). A silent client, which sends nothing either, not even a PING, is cut
//! at the send timeout, as one that PINGs is; the access log counts the bytes that reached the
//! socket, not those h2 held.

use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use webscope_server::{AccessLog, Config, Io, KtlsState, Running, Server, TlsFiles};

type Client = tokio_rustls::client::TlsStream<TcpStream>;

/// The send timeout the server runs with here.
const SEND_TIMEOUT: Duration = Duration::from_secs(2);
/// How late after the send timeout a cut may come.
const SLACK: Duration = Duration::from_secs(2);
/// The file every client asks for.
const HUGE: u64 = 10 << 20;

struct Fixture {
    _dir: tempfile::TempDir,
    cert: CertificateDer<'static>,
    running: Option<Running>,
    addr: SocketAddr,
    log: PathBuf,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if let Some(running) = self.running.take() {
            running.shutdown();
        }
    }
}

/// An engine: its name, and how to ask for it.
type Engine = (&'static str, fn(&mut Config));

/// The engines that speak HTTP/2.
fn engines() -> [Engine; 2] {
    [
        ("epoll, user-space TLS", |c| c.techniques.ktls = false),
        ("epoll, kTLS where the kernel has it", |c| {
            c.techniques.ktls = true
        }),
    ]
}

fn start(tune: fn(&mut Config)) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("www");
    std::fs::create_dir(&root).unwrap();
    let huge = std::fs::File::create(root.join("huge.bin")).unwrap();
    huge.set_len(HUGE).unwrap();
    let log = dir.path().join("access.log");
    let made = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert, made.cert.pem()).unwrap();
    std::fs::write(&key, made.key_pair.serialize_pem()).unwrap();
    let mut config = Config::new(&root);
    config.listen = "127.0.0.1:0".parse().unwrap();
    config.workers = 1;
    config.send_timeout = SEND_TIMEOUT;
    config.access_log = AccessLog::File(log.clone());
    config.tls = Some(TlsFiles { cert, key });
    tune(&mut config);
    // No other engine speaks HTTP/2: io_uring refuses TLS outright.
    let mut uring = config.clone();
    uring.io = Some(Io::Uring);
    assert!(Server::bind(uring).is_err());
    let server = Server::bind(config).unwrap();
    if matches!(server.ktls(), Some(KtlsState::Unavailable(_))) {
        eprintln!("kTLS unavailable here: {:?}", server.ktls());
    }
    let addr = server.local_addr();
    Fixture {
        _dir: dir,
        cert: made.cert.der().clone(),
        running: Some(server.start().unwrap()),
        addr,
        log,
    }
}

impl Fixture {
    async fn tls(&self) -> Client {
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

    /// The body bytes the access log gives each request for `path`, once the server has
    /// stopped (and flushed the log).
    fn logged(&mut self, path: &str) -> Vec<u64> {
        if let Some(running) = self.running.take() {
            running.shutdown();
        }
        let log = std::fs::read_to_string(&self.log).unwrap();
        let request = format!("GET {path} HTTP/2.0");
        log.lines()
            .filter(|l| l.contains(&request))
            .map(|l| {
                // `... "GET /p HTTP/2.0" 200 BYTES "referer" "agent"`
                let after = l.split('"').nth(2).unwrap();
                after.split_whitespace().nth(1).unwrap().parse().unwrap()
            })
            .collect()
    }
}

/// GET `path` over HTTP/2 with the h2 crate, reading the whole body: its length.
async fn read_all(fx: &Fixture, path: &str) -> usize {
    let (sender, driver) = h2::client::handshake(fx.tls().await).await.unwrap();
    tokio::spawn(async move {
        let _ = driver.await;
    });
    let request = http::Request::get(format!("https://localhost{path}"))
        .body(())
        .unwrap();
    let mut sender = sender.ready().await.unwrap();
    let (response, _) = sender.send_request(request, true).unwrap();
    let mut body = response.await.unwrap().into_body();
    let mut got = 0;
    while let Some(chunk) = body.data().await {
        let chunk = chunk.unwrap();
        let _ = body.flow_control().release_capacity(chunk.len());
        got += chunk.len();
    }
    got
}

/// The most a socket's send buffer may hold here (net.ipv4.tcp_wmem's maximum).
fn send_buffer_max() -> u64 {
    let wmem = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_wmem").unwrap();
    wmem.split_whitespace().nth(2).unwrap().parse().unwrap()
}

/// A client that opens its windows to 2^31 - 1, asks for /huge.bin on `streams` streams in
/// raw frames, and then neither reads nor sends.
async fn silent(fx: &Fixture, streams: u32) -> Client {
    let window = (1u32 << 31) - 1;
    let mut tls = fx.tls().await;
    let mut out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    // SETTINGS: INITIAL_WINDOW_SIZE (4); the ack of the server's; the connection's window.
    out.extend_from_slice(&[0, 0, 6, 4, 0, 0, 0, 0, 0, 0, 4]);
    out.extend_from_slice(&window.to_be_bytes());
    out.extend_from_slice(&[0, 0, 0, 4, 1, 0, 0, 0, 0]);
    out.extend_from_slice(&[0, 0, 4, 8, 0, 0, 0, 0, 0]);
    out.extend_from_slice(&(window - 65_535).to_be_bytes());
    // HPACK: :method GET, :scheme https (static 2, 7); :path and :authority by name.
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

/// The kernel's view of a client's socket: (TCP state, bytes received).
fn tcp_info(client: &Client) -> (u8, u64) {
    let fd = client.get_ref().0.as_raw_fd();
    // SAFETY: a zeroed tcp_info is valid; getsockopt fills at most `len` bytes of it.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: the fd is the client's open socket; info and len are valid for the call.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    assert_eq!(rc, 0);
    (info.tcpi_state, info.tcpi_bytes_received)
}

const TCP_ESTABLISHED: u8 = 1;

/// What happened to one silent client: when its kernel last received a byte, and when its
/// connection stopped being ESTABLISHED (None: still is at the end of the watch).
struct Watched {
    last_byte: Instant,
    closed: Option<Instant>,
    received: u64,
}

/// Watches `clients` (which read nothing) every 50 ms until all are closed or `limit` passed.
async fn watch(clients: &[Client], limit: Duration) -> Vec<Watched> {
    let began = Instant::now();
    let mut seen: Vec<Watched> = clients
        .iter()
        .map(|_| Watched {
            last_byte: began,
            closed: None,
            received: 0,
        })
        .collect();
    while began.elapsed() < limit && seen.iter().any(|w| w.closed.is_none()) {
        for (client, w) in clients.iter().zip(&mut seen) {
            let (state, received) = tcp_info(client);
            if w.closed.is_none() && received > w.received {
                w.received = received;
                w.last_byte = Instant::now();
            }
            if w.closed.is_none() && state != TCP_ESTABLISHED {
                w.closed = Some(Instant::now());
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    seen
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// #34 §8: a client that asks for a 10 MiB file with huge windows and then neither reads
/// nor sends (one stream; 10 connections of 128 streams) is cut within the send timeout (+2 s)
/// of the last byte its kernel took, on every engine that speaks HTTP/2. Before, the server
/// let go at the timeout, but its close queued the FIN behind 3.9 MB the client would never
/// read: the client's connection stayed ESTABLISHED (past 45 s with a 30 s timeout).
#[test]
fn silent_http2_clients_are_cut_at_the_send_timeout_on_every_engine() {
    for (engine, tune) in engines() {
        let fx = start(tune);
        runtime().block_on(async {
            for (connections, streams) in [(1, 1), (10, 128)] {
                let mut clients = Vec::new();
                for _ in 0..connections {
                    clients.push(silent(&fx, streams).await);
                }
                // Bytes trickle in for a few seconds as the client's kernel opens its
                // window; the cut must come within the timeout of the last.
                let asked = Instant::now();
                let seen = watch(&clients, Duration::from_secs(30)).await;
                for (i, w) in seen.iter().enumerate() {
                    let what = format!("{engine}, {connections} × {streams}, client {i}");
                    let closed = w.closed.unwrap_or_else(|| {
                        panic!(
                            "{what}: still ESTABLISHED after 30 s ({} bytes in)",
                            w.received
                        )
                    });
                    let quiet = closed.duration_since(w.last_byte);
                    if i == 0 {
                        eprintln!(
                            "{what}: cut {quiet:?} after its last byte, {:?} after it asked",
                            closed.duration_since(asked)
                        );
                    }
                    assert!(
                        quiet <= SEND_TIMEOUT + SLACK,
                        "{what}: cut {quiet:?} after its last byte came in"
                    );
                }
            }
        });
    }
}

/// #34 §7: the access log gives an HTTP/2 stream the body bytes that reached the socket. A
/// client that asks for 10 MiB on 100 streams and reads nothing is logged no more than its
/// kernel took plus what the server's kernel could hold (its send buffer); one that reads its
/// 10 MiB is logged 10 MiB. Before, the first was logged 10.5 MB (most streams at exactly
/// 65 536 bytes, what h2 held for them) while the client took 127 KB and the kernel held 3.9.
#[test]
fn the_access_log_counts_what_reached_the_socket_on_every_engine() {
    for (engine, tune) in engines() {
        let mut fx = start(tune);
        let took = runtime().block_on(async {
            assert_eq!(read_all(&fx, "/huge.bin").await, HUGE as usize);
            let client = silent(&fx, 100).await;
            let seen = watch(std::slice::from_ref(&client), Duration::from_secs(30)).await;
            assert!(seen[0].closed.is_some(), "{engine}: never cut");
            seen[0].received
        });
        let mut logged = fx.logged("/huge.bin");
        assert_eq!(logged.len(), 101, "{engine}: {logged:?}");
        // The reader's line is the one with the whole body (and only it may have it).
        let whole = logged.iter().position(|&n| n == HUGE);
        logged.remove(whole.unwrap_or_else(|| panic!("{engine}: {logged:?}")));
        let silent: u64 = logged.iter().sum();
        let bound = took + send_buffer_max();
        eprintln!(
            "{engine}: the silent client took {took} bytes; its streams were logged {silent}"
        );
        assert!(
            silent <= bound,
            "{engine}: {silent} bytes logged, the client took {took} and the kernel holds at most {}",
            send_buffer_max()
        );
    }
}
