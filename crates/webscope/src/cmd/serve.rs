//! `webscope serve`: flags to a `webscope_server::Config`, then run until SIGINT/SIGTERM.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use webscope_server::services::{service_index, Policy, ServicesConfig, SERVICES};
use webscope_server::{AccessLog, Config, Engine, Io, KtlsState, Server, Techniques, TlsFiles};

const EXAMPLES: &str = "\
EXAMPLES:
    webscope serve --root ./public
    webscope serve --root ./public --listen 127.0.0.1:0 --workers 1
    webscope serve --root /srv/www --listen [::1]:8080 --access-log access.log
    webscope serve --root ./public --access-log - --keepalive-timeout 5s
    webscope serve --root ./public --baseline --access-log access.log      # the paper's naive server
    webscope serve --root ./public --disable sendfile,mmap                 # ablate techniques
    webscope serve --root ./public --io epoll                              # tokio/epoll, not io_uring
    webscope serve --root ./public --admin 127.0.0.1:9090                  # /metrics, /stats.json
    webscope serve --root ./public --tls-cert cert.pem --tls-key key.pem   # HTTPS, HTTP/2 by ALPN
    webscope serve --root ./public --tls-cert cert.pem --tls-key key.pem --http3  # and HTTP/3 (UDP)

TECHNIQUES (Hu, Nanda & Yang 1999; all on by default, --disable LIST or --baseline turns them off):
    dns-cache     with --hostname-lookups, reverse lookups cached (bounded) and done off the
                  request path; without it every logged request waits for getnameinfo()
    string-cache  Date header and log time formatted once per second, status lines once
    mmap          large files written from a mapping instead of read into a buffer
                  (used when sendfile is off)
    stat-cache    file metadata (size, mtime, ETag, type) cached: a hit costs no stat()
    file-cache    small files' bytes (and large files' descriptors) kept in memory, bounded
                  by --file-cache-size; a response from it is one write
    uri-cache     the URI -> file translation cached, keyed by Host and path
    sendfile      zero-copy send for files above 16 KiB
    async-log     access log buffered and written by its own thread (at least once a
                  second, and at shutdown); without it, one write() per request
    ktls          (not the paper's; with --tls-cert) session keys handed to the kernel after
                  the handshake, so records are encrypted there and sendfile works under TLS;
                  used only where the kernel has the tls ULP (the start-up line says)
    gso           (not the paper's; with --http3) UDP segmentation offload: up to 10 of a
                  connection's datagrams handed to the kernel in one sendmsg, cut into packets
                  below, and GRO, received datagrams coalesced into one buffer; off, one
                  datagram per system call each way. Used where the kernel has them
    Over HTTP/3 the caches and async-log apply unchanged; sendfile, mmap and ktls have no
    meaning (QUIC encrypts and frames every byte in user space); gso is QUIC's own.
    Cached files are revalidated after at most 1 s: a changed or deleted file is noticed
    within 1 s.

SERVICES (--services; Hibino, Kourai & Chiba):
    /svc/light             fib(25) by naive recursion
    /svc/middle            fib(35)
    /svc/heavy             build a DOM from an XML catalogue (--xml-items) and search all its
                           nodes 100 times
    /svc/fib?n=N           fib(N), N <= 40
    /svc/xml?nodes=K&passes=P   K <= 100000 items, P <= 1000 passes
    Policies: threads (a pool of OS threads, the OS schedules), fair (weighted fair CPU
    shares in ~1 ms slices), priority (strict order, in slices), admission (per-service
    limits and a queueing-delay target; 503 with Retry-After beyond).
    webscope serve --root ./public --services --policy fair --weight light=8,heavy=1";

/// Serve the regular files under a directory over HTTP/1.1 (GET and HEAD), or HTTPS with
/// HTTP/2 and HTTP/1.1 by ALPN (--tls-cert, --tls-key).
///
/// Keep-alive and pipelining, conditional requests (304), single byte ranges (206), Content-Type
/// from the file extension, an Apache Combined Log Format access log. Never serves anything
/// outside --root. SIGINT or SIGTERM stop accepting, let responses in flight finish, flush the
/// log and exit 0.
#[derive(clap::Args, Debug)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// Directory whose files are served.
    #[arg(long, value_name = "DIR")]
    root: PathBuf,
    /// A URL map (`urls.json` of `webscope fileset like --keep-paths`): logged targets answered
    /// by another file of the set, a redirect or a 404 [default: the root's urls.json when the
    /// root is a webscope file set; `off`: none].
    #[arg(long, value_name = "FILE|off")]
    url_map: Option<PathBuf>,
    /// Address and port to listen on; port 0 picks a free port (printed at start).
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// Worker threads, each with its own listener and event loop [default: number of cores].
    #[arg(long, value_name = "N")]
    workers: Option<usize>,
    /// Access log (Combined Log Format): a file path, - for stdout, or off.
    #[arg(long, value_name = "PATH|-|off", default_value = "off")]
    access_log: String,
    /// Turn off these techniques (comma-separated; see TECHNIQUES below).
    #[arg(long, value_name = "LIST", value_parser = parse_disable)]
    disable: Option<Techniques>,
    /// Turn every technique off: the naive per-request path the paper started from, on the
    /// paper's engine (epoll; unless --io says otherwise).
    #[arg(long, conflicts_with = "disable")]
    baseline: bool,
    /// Serve HTTPS with this certificate chain (PEM, leaf first); needs --tls-key. Clients
    /// choose HTTP/2 or HTTP/1.1 by ALPN.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Serve HTTP/3 over QUIC too, on the UDP port of --listen (needs --tls-cert): the same
    /// files, log, timing and /metrics; 0-RTT accepted, its non-idempotent requests answered
    /// 425 Too Early.
    #[arg(long, requires = "tls_cert")]
    http3: bool,
    /// Busy-poll sockets for up to USECS microseconds before sleeping (SO_BUSY_POLL and
    /// SO_PREFER_BUSY_POLL on the listeners, inherited by every connection). Helps on NICs
    /// with NAPI, not on loopback; the kernel may refuse it without CAP_NET_ADMIN, and the
    /// server then says so and serves without.
    #[arg(long, value_name = "USECS", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    busy_poll: Option<u32>,
    /// TCP's congestion control for every connection (TCP_CONGESTION on the listeners):
    /// cubic, reno, bbr, as /proc/sys/net/ipv4/tcp_available_congestion_control lists them.
    /// Default: the kernel's (net.ipv4.tcp_congestion_control). One the kernel allows only
    /// for privileged sockets (not in tcp_allowed_congestion_control) needs CAP_NET_ADMIN.
    #[arg(long, value_name = "NAME")]
    tcp_congestion: Option<String>,
    /// The workers' kernel interface: uring (one io_uring per worker: multishot accept and
    /// receive into provided buffers, SEND, submitted in batches; large files by sendfile) or
    /// epoll (a tokio runtime; a recv and a send per request). Default: uring, measured
    /// cheaper per request; epoll where uring cannot serve (the kernel refuses it;
    /// --tls-cert), as the start-up line says. An explicit --io uring with --tls-cert is an
    /// error.
    #[arg(long, value_name = "epoll|uring", value_parser = parse_io)]
    io: Option<Io>,
    /// Serve /metrics (Prometheus text) and /stats.json on this separate address.
    #[arg(long, value_name = "ADDR:PORT")]
    admin: Option<SocketAddr>,
    /// Do not time requests' phases (parse, process, log) and connections' lives.
    #[arg(long)]
    no_timing: bool,
    /// Serve the dynamic services under /svc/ (see SERVICES below).
    #[arg(long, help_heading = "Services")]
    services: bool,
    /// How service work is scheduled: threads, fair, priority or admission.
    #[arg(
        long,
        value_name = "POLICY",
        default_value = "threads",
        help_heading = "Services"
    )]
    policy: Policy,
    /// Weights under --policy fair, e.g. light=8,middle=2,heavy=1 (default 1 each).
    #[arg(long, value_name = "LIST", help_heading = "Services")]
    weight: Option<String>,
    /// Priority order under --policy priority, highest first, e.g. light,middle,heavy.
    #[arg(long, value_name = "LIST", help_heading = "Services")]
    priority: Option<String>,
    /// Jobs allowed to run at once per service under --policy admission, e.g. heavy=2 (4 more
    /// may wait per slot; beyond, 503).
    #[arg(long, value_name = "LIST", help_heading = "Services")]
    limit: Option<String>,
    /// Queueing-delay target under --policy admission: refuse (503) when exceeded for --interval.
    #[arg(long, value_name = "DURATION", default_value = "5ms", value_parser = crate::cmd::duration, help_heading = "Services")]
    target: Duration,
    /// Interval of the admission rule.
    #[arg(long, value_name = "DURATION", default_value = "100ms", value_parser = crate::cmd::duration, help_heading = "Services")]
    interval: Duration,
    /// OS threads of --policy threads (Tomcat's default).
    #[arg(
        long,
        value_name = "N",
        default_value_t = 150,
        help_heading = "Services"
    )]
    pool_threads: usize,
    /// Executor threads of the other policies [default: number of cores].
    #[arg(long, value_name = "N", help_heading = "Services")]
    executors: Option<usize>,
    /// Slice length under fair and priority.
    #[arg(long, value_name = "DURATION", default_value = "1ms", value_parser = crate::cmd::duration, help_heading = "Services")]
    slice: Duration,
    /// Items in the heavy service's XML catalogue (about 8 nodes each).
    #[arg(
        long,
        value_name = "N",
        default_value_t = 5000,
        help_heading = "Services"
    )]
    xml_items: usize,
    /// Log the client's host name instead of its address (reverse DNS, as Apache's
    /// HostnameLookups On).
    #[arg(long)]
    hostname_lookups: bool,
    /// Serve files reached through symlinks that lead outside --root (refused with 403 otherwise).
    #[arg(long)]
    follow_symlinks: bool,
    /// Requests served on one connection before it is closed (nginx's keepalive_requests).
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    keepalive_requests: u64,
    /// Open connections across all workers; beyond it, new connections wait in the backlog.
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    max_connections: usize,
    /// Time for a started request head to arrive completely (slowloris guard; 408 after).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = crate::cmd::duration)]
    header_timeout: Duration,
    /// Time a keep-alive connection may stay idle between requests.
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = crate::cmd::duration)]
    keepalive_timeout: Duration,
    /// Time a response may make no progress because the client stopped reading.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = crate::cmd::duration)]
    send_timeout: Duration,
    /// On SIGINT/SIGTERM, time allowed for responses in flight before connections are cut.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = crate::cmd::duration)]
    shutdown_timeout: Duration,
    /// Longest request target in bytes (414 beyond).
    #[arg(long, value_name = "BYTES", default_value_t = 8192)]
    max_target: usize,
    /// Largest request head in bytes (431 beyond); over HTTP/2, the largest header list
    /// (431 on the stream; GOAWAY for a block four times larger or one that never ends).
    #[arg(long, value_name = "BYTES", default_value_t = 16384)]
    max_head: usize,
    /// Most header fields in a request (431 beyond; at most 128).
    #[arg(long, value_name = "N", default_value_t = 100, value_parser = clap::value_parser!(u16).range(1..=128))]
    max_headers: u16,
    /// Hand connections to the server as soon as they are established, not when their first
    /// bytes arrive (turns TCP_DEFER_ACCEPT off).
    #[arg(long)]
    no_defer_accept: bool,
    /// Bytes of small files cached in memory across all workers, with their metadata; 0
    /// turns the cache off. A changed or deleted file is noticed within 1 s either way.
    #[arg(long, value_name = "BYTES", default_value_t = 64 << 20)]
    file_cache_size: usize,
    /// Largest request body accepted and discarded (413 beyond).
    #[arg(long, value_name = "BYTES", default_value_t = 1 << 20)]
    max_body: u64,
}

/// Parses `name=value,...` over the service names.
fn per_service<T: std::str::FromStr>(list: &str, flag: &str) -> anyhow::Result<Vec<(usize, T)>> {
    let mut out = Vec::new();
    for item in list.split(',').filter(|i| !i.trim().is_empty()) {
        let (name, value) = item.split_once('=').ok_or_else(|| {
            anyhow::anyhow!("{flag}: {item:?} is not NAME=VALUE (e.g. {flag} light=8,heavy=1)")
        })?;
        let index = service_index(name.trim()).ok_or_else(|| {
            anyhow::anyhow!(
                "{flag}: unknown service {name:?} (known: {})",
                SERVICES.join(", ")
            )
        })?;
        let value = value
            .trim()
            .parse()
            .map_err(|_| anyhow::anyhow!("{flag}: {value:?} is not a valid value for {name}"))?;
        out.push((index, value));
    }
    Ok(out)
}

impl Args {
    fn services(&self) -> anyhow::Result<Option<ServicesConfig>> {
        if !self.services {
            return Ok(None);
        }
        let mut config = ServicesConfig {
            policy: self.policy,
            pool_threads: self.pool_threads.max(1),
            slice: self.slice,
            target: self.target,
            interval: self.interval,
            xml_items: self.xml_items.clamp(1, 100_000),
            ..ServicesConfig::default()
        };
        if let Some(executors) = self.executors {
            config.executors = executors.max(1);
        }
        if let Some(list) = &self.weight {
            for (i, w) in per_service::<u32>(list, "--weight")? {
                anyhow::ensure!(w >= 1, "--weight: weights are at least 1");
                config.weights[i] = w;
            }
        }
        if let Some(list) = &self.limit {
            for (i, l) in per_service::<usize>(list, "--limit")? {
                config.limits[i] = Some(l);
            }
        }
        if let Some(list) = &self.priority {
            let mut order = Vec::new();
            for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                let i = service_index(name).ok_or_else(|| {
                    anyhow::anyhow!(
                        "--priority: unknown service {name:?} (known: {})",
                        SERVICES.join(", ")
                    )
                })?;
                if !order.contains(&i) {
                    order.push(i);
                }
            }
            // Services not named come after, in their usual order.
            let rest: Vec<usize> = (0..SERVICES.len()).filter(|i| !order.contains(i)).collect();
            order.extend(rest);
            config.priority = order;
        }
        Ok(Some(config))
    }

    fn config(self) -> anyhow::Result<Config> {
        let services = self.services()?;
        let url_map = url_map(self.url_map.as_deref(), &self.root)?;
        let mut config = Config::new(self.root);
        config.url_map = url_map;
        config.listen = self.listen;
        if let Some(workers) = self.workers {
            config.workers = workers;
        }
        config.access_log = match self.access_log.as_str() {
            "off" => AccessLog::Off,
            "-" => AccessLog::Stdout,
            path => AccessLog::File(PathBuf::from(path)),
        };
        config.follow_symlinks = self.follow_symlinks;
        config.keepalive_requests = self.keepalive_requests;
        config.max_connections = self.max_connections;
        config.header_timeout = self.header_timeout;
        config.keepalive_timeout = self.keepalive_timeout;
        config.send_timeout = self.send_timeout;
        config.shutdown_timeout = self.shutdown_timeout;
        config.limits.max_target = self.max_target;
        config.limits.max_head = self.max_head;
        config.limits.max_headers = usize::from(self.max_headers);
        config.max_body = self.max_body;
        config.file_cache_bytes = self.file_cache_size;
        config.defer_accept = !self.no_defer_accept;
        config.techniques = if self.baseline {
            Techniques::baseline()
        } else {
            self.disable.unwrap_or_default()
        };
        config.hostname_lookups = self.hostname_lookups;
        config.admin = self.admin;
        config.timing = !self.no_timing;
        config.services = services;
        config.busy_poll = self.busy_poll;
        config.tcp_congestion = self.tcp_congestion;
        // The paper's naive server on the paper's engine, so that Hu's ablation stays as it was.
        config.io = self.io.or(self.baseline.then_some(Io::Epoll));
        config.tls = match (self.tls_cert, self.tls_key) {
            (Some(cert), Some(key)) => Some(TlsFiles { cert, key }),
            _ => None,
        };
        config.http3 = self.http3;
        Ok(config)
    }
}

fn parse_io(name: &str) -> Result<Io, String> {
    match name {
        "epoll" => Ok(Io::Epoll),
        "uring" | "io-uring" | "io_uring" => Ok(Io::Uring),
        _ => Err(format!("{name:?} is not an engine: give epoll or uring")),
    }
}

/// The map asked for, or the root's own when the root is a webscope file set that has one.
fn url_map(
    asked: Option<&std::path::Path>,
    root: &std::path::Path,
) -> anyhow::Result<Option<std::sync::Arc<webscope_server::UrlMap>>> {
    let path = match asked {
        Some(p) if p.as_os_str() == "off" => return Ok(None),
        Some(p) => p.to_path_buf(),
        None => {
            let own = root.join(webscope_workload::like::URL_MAP);
            if !(own.is_file() && root.join(webscope_workload::MARKER).is_file()) {
                return Ok(None);
            }
            own
        }
    };
    let map = webscope_server::UrlMap::load(&path)
        .map_err(|why| anyhow::anyhow!("{why} (give --url-map off to serve without it)"))?;
    Ok(Some(std::sync::Arc::new(map)))
}

fn parse_disable(list: &str) -> Result<Techniques, String> {
    let mut techniques = Techniques::default();
    techniques.disable_list(list).map_err(|e| e.to_string())?;
    Ok(techniques)
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let baseline_on_epoll = args.baseline && args.io.is_none();
    let config = args.config()?;
    let workers = config.workers;
    let techniques = config.techniques.describe();
    let root = config.root.clone();
    let mapped = config.url_map.as_ref().map(|m| m.len());
    let server = Server::bind(config)?;
    // Signal handlers go in before the address is printed: whoever reads the address may
    // send SIGTERM at once, and must get a graceful stop, not the default action.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the signal handler")?;
    let _guard = runtime.enter();
    use tokio::signal::unix::{signal, SignalKind};
    let mut interrupt = signal(SignalKind::interrupt()).context("cannot handle SIGINT")?;
    let mut terminate = signal(SignalKind::terminate()).context("cannot handle SIGTERM")?;
    let addr = server.local_addr();
    let ktls = server.ktls().cloned();
    let http3 = server.http3();
    let busy_poll = server.busy_poll().cloned();
    let engine = server.engine().clone();
    let running = server.start()?;
    use std::fmt::Write as _;
    let mut said = format!(
        "webscope serve: listening on {}://{addr} ({workers} worker{}, root {}, techniques {techniques})\n",
        if ktls.is_some() { "https" } else { "http" },
        if workers == 1 { "" } else { "s" },
        root.display()
    );
    if let Some(n) = mapped.filter(|&n| n > 0) {
        let _ = writeln!(
            said,
            "webscope serve: {n} logged URL{} answered through the set's URL map",
            if n == 1 { "" } else { "s" }
        );
    }
    if let Some(admin) = running.admin_addr() {
        let _ = writeln!(
            said,
            "webscope serve: admin on http://{admin} (/metrics, /stats.json)"
        );
    }
    if let Some(ktls) = ktls {
        let records = match ktls {
            KtlsState::On => "records encrypted in the kernel (ktls)".to_string(),
            KtlsState::Off => "records encrypted in user space (ktls disabled)".to_string(),
            KtlsState::Unavailable(why) => {
                format!("records encrypted in user space (ktls unavailable: {why})")
            }
        };
        let _ = writeln!(
            said,
            "webscope serve: TLS 1.2/1.3, ALPN h2 and http/1.1; {records}"
        );
        if http3 {
            let _ = writeln!(
                said,
                "webscope serve: HTTP/3 on QUIC at udp {addr} (TLS 1.3, ALPN h3, 0-RTT)"
            );
        }
    }
    let engine = match engine {
        Engine::Uring => "io_uring (multishot accept and receive, provided buffers, SEND; large files by sendfile)".to_string(),
        Engine::Epoll if baseline_on_epoll => "epoll (--baseline: the paper's server on its engine)".to_string(),
        Engine::Epoll => "epoll (--io epoll)".to_string(),
        Engine::Fallback(why) => format!("{why}: serving with epoll"),
    };
    let _ = writeln!(said, "webscope serve: {engine}");
    match busy_poll {
        Some(Ok(usecs)) => {
            let _ = writeln!(said, "webscope serve: busy polling {usecs} µs");
        }
        Some(Err(why)) => {
            let _ = writeln!(said, "webscope serve: no busy polling: {why}");
        }
        None => {}
    }
    // One write: a reader that takes the lines it needs and closes the pipe (the lab, tests)
    // must not make a later line fail with EPIPE. A closed stdout does not stop the server.
    let mut stdout = std::io::stdout().lock();
    let _ = stdout
        .write_all(said.as_bytes())
        .and_then(|()| stdout.flush());
    drop(stdout);
    runtime.block_on(async {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
    });
    eprintln!("webscope serve: shutting down");
    running.shutdown();
    Ok(())
}
