//! What the operator chose: the resolved configuration the server runs with.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use webscope_http::request::Limits;

use crate::services::ServicesConfig;
use crate::techniques::Techniques;

/// Where the access log goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AccessLog {
    /// No access log.
    Off,
    /// Standard output (`-`).
    Stdout,
    /// Appended to this file (created if missing).
    File(PathBuf),
}

/// How a worker waits for and moves bytes (`--io`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Io {
    /// A tokio runtime over epoll, a syscall per receive and send. Serves everything,
    /// TLS and HTTP/2 included.
    Epoll,
    /// One io_uring per worker: multishot accept and receive, provided buffers, SEND,
    /// submitted in batches; large files by sendfile. Plain HTTP/1.1 (files and services).
    Uring,
}

/// The engine the workers run on, as [`Server::bind`](crate::Server::bind) chose it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Engine {
    /// io_uring.
    Uring,
    /// epoll, as asked for (`Io::Epoll`).
    Epoll,
    /// epoll, because io_uring cannot serve here (the kernel refuses it, or the configuration
    /// needs what only epoll serves): why, in one clause.
    Fallback(String),
}

/// Where the certificate chain and its key are (PEM).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// The certificate chain, leaf first.
    pub cert: PathBuf,
    /// The private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
}

/// The server's configuration. `Config::new(root)` gives the documented defaults.
#[derive(Debug, Clone)]
pub struct Config {
    /// The document root; only regular files under it are served.
    pub root: PathBuf,
    /// Address to listen on; port 0 picks a free port (see `Server::local_addr`).
    pub listen: SocketAddr,
    /// Worker threads, each with its own listener (SO_REUSEPORT) and runtime.
    pub workers: usize,
    /// Access log destination (Apache Combined Log Format).
    pub access_log: AccessLog,
    /// Follow symlinks that lead out of the root (off: such files get 403).
    pub follow_symlinks: bool,
    /// Request-head limits (414, 431).
    pub limits: Limits,
    /// Largest request body accepted (and discarded); larger gets 413.
    pub max_body: u64,
    /// Requests served on one connection before it is closed (nginx's keepalive_requests).
    pub keepalive_requests: u64,
    /// Open connections across all workers; beyond it the server stops accepting for a while.
    pub max_connections: usize,
    /// Time allowed for a request head to arrive once it has started (slowloris guard); 408.
    pub header_timeout: Duration,
    /// Time a keep-alive connection may sit idle between requests.
    pub keepalive_timeout: Duration,
    /// Time a response may make no progress because the client stopped reading.
    pub send_timeout: Duration,
    /// On SIGINT/SIGTERM, time allowed for responses in flight before connections are cut.
    pub shutdown_timeout: Duration,
    /// Files up to this size are read into memory and sent with their head in one write;
    /// larger ones go by sendfile.
    pub sendfile_threshold: u64,
    /// Which of the paper's techniques are on (all by default).
    pub techniques: Techniques,
    /// Log the client's host name (reverse DNS), as Apache's HostnameLookups.
    pub hostname_lookups: bool,
    /// Where the admin endpoint (/metrics, /stats.json) listens; None for no admin endpoint.
    pub admin: Option<SocketAddr>,
    /// Dynamic services under `/svc/` and their scheduling policy; None: no services.
    pub services: Option<ServicesConfig>,
    /// Time each request's phases (parse, process, log) and each connection's life.
    pub timing: bool,
    /// TCP_DEFER_ACCEPT: connections reach accept() once their first bytes arrived (or after
    /// the header timeout), so the first read finds the request.
    pub defer_accept: bool,
    /// Bytes of small files kept in memory, across all workers (0: no cache, every request
    /// resolves and reads its file afresh). Changes are seen within 1 s either way.
    pub file_cache_bytes: usize,
    /// Paths remembered per worker (metadata, and an open descriptor for large files).
    pub file_cache_entries: usize,
    /// Serve HTTPS (HTTP/1.1 and HTTP/2 by ALPN) with this certificate and key; None: plain
    /// HTTP/1.1.
    pub tls: Option<TlsFiles>,
    /// Serve HTTP/3 over QUIC too, on the UDP port of the same address (needs `tls`).
    pub http3: bool,
    /// Busy-poll the sockets for up to this many microseconds before sleeping in epoll
    /// (SO_BUSY_POLL with SO_PREFER_BUSY_POLL); None: off. Helps only on NICs with NAPI,
    /// not on loopback.
    pub busy_poll: Option<u32>,
    /// TCP's congestion control for every connection (TCP_CONGESTION on the listeners, which
    /// accepted sockets inherit): `cubic`, `reno`, `bbr`, as the kernel has them; None: the
    /// kernel's default (net.ipv4.tcp_congestion_control). The lab's loss experiment sets
    /// QUIC's controller here, so that two transports are compared, not two controllers.
    pub tcp_congestion: Option<String>,
    /// The I/O engine; None (the default): io_uring where it can serve, else epoll. Measured
    /// cheaper per request than epoll with keep-alive, about even with a connection per request
    /// (docs/architecture.md). Asked-for `Io::Uring` falls back to epoll (said once) where the
    /// kernel refuses.
    pub io: Option<Io>,
    /// Targets answered otherwise than by the file their path names (`urls.json` of a set
    /// like a site's, `webscope fileset like --keep-paths`): matched before the lookup.
    pub url_map: Option<std::sync::Arc<crate::UrlMap>>,
}

impl Config {
    /// The defaults of `webscope serve` for a document root.
    pub fn new(root: impl Into<PathBuf>) -> Config {
        Config {
            root: root.into(),
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            workers: std::thread::available_parallelism().map_or(1, usize::from),
            access_log: AccessLog::Off,
            follow_symlinks: false,
            limits: Limits::default(),
            max_body: 1024 * 1024,
            keepalive_requests: 10_000,
            max_connections: 10_000,
            header_timeout: Duration::from_secs(10),
            keepalive_timeout: Duration::from_secs(15),
            send_timeout: Duration::from_secs(30),
            shutdown_timeout: Duration::from_secs(10),
            sendfile_threshold: 16 * 1024,
            techniques: Techniques::default(),
            hostname_lookups: false,
            admin: None,
            services: None,
            timing: true,
            defer_accept: true,
            file_cache_bytes: 64 * 1024 * 1024,
            file_cache_entries: 10_000,
            tls: None,
            http3: false,
            busy_poll: None,
            tcp_congestion: None,
            io: None,
            url_map: None,
        }
    }
}
