//! Starting and stopping the server: bind, spawn the workers, and on shutdown let them drain.

use std::net::SocketAddr;
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;

use tokio::sync::watch;

use crate::access_log::{LogThread, Mode, Sink};
use crate::admin::{self, Admin};
use crate::config::{Config, Engine, Io};
use crate::dns::DnsCache;
use crate::error::Error;
use crate::files::Root;
use crate::metrics::Info;
use crate::services::{ServiceFigures, Services};
use crate::slots::Slots;
use crate::timing::{self, SharedStats, Stats};
use crate::tls::{KtlsState, Tls};
use crate::{epoll, listener, worker};

/// Names the dns-cache keeps (Apache has no bound; this one has).
const DNS_CACHE_NAMES: usize = 4096;

/// A server that is bound but not yet serving. Binding first lets the caller learn the real
/// port (for `--listen 127.0.0.1:0`) and report errors before anything runs.
pub struct Server {
    config: Arc<Config>,
    listeners: Vec<std::net::TcpListener>,
    admin_listener: Option<std::net::TcpListener>,
    local_addr: SocketAddr,
    root: Arc<Root>,
    sink: Sink,
    tls: Option<(Arc<Tls>, KtlsState)>,
    busy_poll: Option<Result<u32, String>>,
    engine: Engine,
    /// `--http3`: a UDP socket per worker and the QUIC set-up.
    quic: Option<(Vec<std::net::UdpSocket>, Arc<crate::quic::setup::Setup>)>,
}

/// A running server. Dropping it without `shutdown` leaves the workers running until the
/// process exits.
pub struct Running {
    stop: watch::Sender<bool>,
    services: Option<Arc<Services>>,
    admin: Option<Admin>,
    stats: Vec<SharedStats>,
    workers: Vec<JoinHandle<()>>,
    log_thread: Option<LogThread>,
    local_addr: SocketAddr,
}

impl Server {
    /// Checks the configuration, opens the root and the access log, and binds the listeners.
    pub fn bind(config: Config) -> Result<Server, Error> {
        if config.workers == 0 {
            return Err(Error::Config("--workers must be at least 1".into()));
        }
        if config.keepalive_requests == 0 {
            return Err(Error::Config(
                "--keepalive-requests must be at least 1".into(),
            ));
        }
        if config.max_connections < config.workers {
            return Err(Error::Config(format!(
                "--max-connections ({}) must be at least the number of workers ({})",
                config.max_connections, config.workers
            )));
        }
        // Asked for by name, io_uring is not swapped for epoll behind the operator's back:
        // a measurement that names its engine must run on it.
        if config.io == Some(Io::Uring) && epoll_only(&config).is_some() {
            return Err(Error::Config(
                "--io uring serves plain HTTP/1.1 only: it does not run with --tls-cert yet (use --io epoll for it)".into(),
            ));
        }
        let root = Root::open(&config.root, config.follow_symlinks).map_err(|source| {
            if source.kind() == std::io::ErrorKind::NotADirectory {
                Error::RootNotDirectory(config.root.clone())
            } else {
                Error::Root {
                    path: config.root.clone(),
                    source,
                }
            }
        })?;
        let tls = match &config.tls {
            Some(files) => {
                let (tls, state) = Tls::load(files, config.techniques.ktls)?;
                Some((Arc::new(tls), state))
            }
            None => None,
        };
        let sink = Sink::open(&config.access_log)?;
        let defer = if config.defer_accept {
            config.header_timeout.as_secs().clamp(1, 3600) as u32
        } else {
            0
        };
        let listeners = listener::bind(config.listen, config.workers, defer)?;
        if let Some(name) = &config.tcp_congestion {
            for l in &listeners {
                socket2::SockRef::from(l)
                    .set_tcp_congestion(name.as_bytes())
                    .map_err(|e| {
                        let have = std::fs::read_to_string(
                            "/proc/sys/net/ipv4/tcp_available_congestion_control",
                        )
                        .unwrap_or_default();
                        Error::Config(format!(
                            "--tcp-congestion {name}: the kernel refused it ({e}); it has: {}",
                            have.trim()
                        ))
                    })?;
            }
        }
        // Refused busy polling is served without, and said once (the start-up line).
        let busy_poll = config.busy_poll.map(|usecs| {
            listeners
                .iter()
                .try_for_each(|l| listener::set_busy_poll(l, usecs))
                .map(|()| usecs)
                .map_err(|e| format!("the kernel refused SO_BUSY_POLL/SO_PREFER_BUSY_POLL: {e}"))
        });
        let engine = engine(&config);
        let local_addr = listeners[0]
            .local_addr()
            .map_err(|e| Error::bind(config.listen, e))?;
        let quic = match (&tls, config.http3) {
            (_, false) => None,
            (None, true) => {
                return Err(Error::Config(
                    "--http3 needs --tls-cert and --tls-key: QUIC is always encrypted".into(),
                ))
            }
            (Some((tls, _)), true) => {
                let sockets = crate::quic::bind(local_addr, config.workers)?;
                Some((
                    sockets,
                    Arc::new(crate::quic::setup::Setup::new(tls, &config)?),
                ))
            }
        };
        let admin_listener = match config.admin {
            Some(addr) => {
                Some(std::net::TcpListener::bind(addr).map_err(|e| Error::bind(addr, e))?)
            }
            None => None,
        };
        Ok(Server {
            config: Arc::new(config),
            listeners,
            admin_listener,
            local_addr,
            root: Arc::new(root),
            sink,
            tls,
            busy_poll,
            engine,
            quic,
        })
    }

    /// The engine the workers will run on, and why not io_uring when it is epoll by fallback.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// With `--busy-poll`, the microseconds in force, or why the kernel refused.
    pub fn busy_poll(&self) -> Option<&Result<u32, String>> {
        self.busy_poll.as_ref()
    }

    /// With TLS, whether kTLS will be used (and why not, if it will not); None without TLS.
    pub fn ktls(&self) -> Option<&KtlsState> {
        self.tls.as_ref().map(|(_, state)| state)
    }

    /// The address the server listens on (with the real port when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Whether HTTP/3 is served too (on the UDP port of [`Server::local_addr`]).
    pub fn http3(&self) -> bool {
        self.quic.is_some()
    }

    /// Starts the workers and returns once every one of them is accepting.
    pub fn start(self) -> Result<Running, Error> {
        let (stop, stop_rx) = watch::channel(false);
        let techniques = self.config.techniques;
        let (log_thread, log_tx) = if techniques.async_log && !self.sink.is_off() {
            let (thread, tx) = LogThread::start(self.sink.clone()).map_err(Error::Start)?;
            (Some(thread), Some(tx))
        } else {
            (None, None)
        };
        let services = match &self.config.services {
            Some(config) => Some(Arc::new(
                Services::start(config.clone()).map_err(Error::Start)?,
            )),
            None => None,
        };
        let dns = if self.config.hostname_lookups && techniques.dns_cache {
            Some(Arc::new(
                DnsCache::start(DNS_CACHE_NAMES).map_err(Error::Start)?,
            ))
        } else {
            None
        };
        let (ready_tx, ready_rx) = mpsc::channel();
        let slots = Arc::new(Slots::new(self.config.max_connections));
        let mut workers = Vec::new();
        let stats: Vec<SharedStats> = (0..self.listeners.len())
            .map(|_| SharedStats::default())
            .collect();
        let (mut quic_sockets, quic_setup) = match self.quic {
            Some((sockets, setup)) => (sockets.into_iter(), Some(setup)),
            None => (Vec::new().into_iter(), None),
        };
        for (id, listener) in self.listeners.into_iter().enumerate() {
            let start = worker::Start {
                listener,
                config: Arc::clone(&self.config),
                root: Arc::clone(&self.root),
                log: match (&log_tx, self.sink.is_off()) {
                    (_, true) => Mode::Off,
                    (Some(tx), false) => Mode::Async(tx.clone()),
                    (None, false) => Mode::Direct(self.sink.clone()),
                },
                dns: dns.clone(),
                stats: Arc::clone(&stats[id]),
                services: services.clone(),
                tls: self.tls.as_ref().map(|(tls, _)| Arc::clone(tls)),
                slots: Arc::clone(&slots),
                shutdown: stop_rx.clone(),
                quic: quic_setup
                    .as_ref()
                    .and_then(|setup| Some((quic_sockets.next()?, Arc::clone(setup)))),
                ready: ready_tx.clone(),
            };
            let uring = self.engine == Engine::Uring;
            let handle = std::thread::Builder::new()
                .name(format!("webscope-w{id}"))
                .spawn(move || {
                    if uring {
                        crate::uring::run(start)
                    } else {
                        epoll::run(start)
                    }
                })
                .map_err(Error::Start)?;
            workers.push(handle);
        }
        drop(ready_tx);
        // The workers hold the only senders now: the log thread ends after the last worker.
        drop(log_tx);
        let mut running = Running {
            stop,
            services,
            admin: None,
            stats,
            workers,
            log_thread,
            local_addr: self.local_addr,
        };
        for _ in 0..running.workers.len() {
            match ready_rx.recv() {
                Ok(Ok(())) => {}
                Ok(Err(err)) => {
                    running.shutdown();
                    return Err(Error::Start(err));
                }
                Err(_) => {
                    running.shutdown();
                    return Err(Error::Start(std::io::Error::other(
                        "a worker exited at start",
                    )));
                }
            }
        }
        if let Some(listener) = self.admin_listener {
            let info = Info {
                version: env!("CARGO_PKG_VERSION").to_string(),
                techniques: techniques.describe(),
                timing: self.config.timing,
                workers: self.config.workers,
                tls: self.tls.as_ref().map(|(_, state)| match state {
                    KtlsState::On => "ktls".to_string(),
                    KtlsState::Off => "user-space (ktls disabled)".to_string(),
                    KtlsState::Unavailable(why) => format!("user-space (ktls unavailable: {why})"),
                }),
            };
            let stop_rx = running.stop.subscribe();
            let service_stats = running.services.as_ref().map(|s| Arc::clone(&s.stats));
            match admin::start(
                listener,
                running.stats.clone(),
                service_stats,
                info,
                stop_rx,
            ) {
                Ok(admin) => running.admin = Some(admin),
                Err(err) => {
                    running.shutdown();
                    return Err(Error::Start(err));
                }
            }
        }
        Ok(running)
    }
}

/// io_uring unless epoll was asked for or io_uring cannot serve this configuration or kernel.
fn engine(config: &Config) -> Engine {
    if config.io == Some(Io::Epoll) {
        return Engine::Epoll;
    }
    if let Some(flag) = epoll_only(config) {
        return Engine::Fallback(format!("io_uring does not serve {flag} yet"));
    }
    match crate::uring::probe() {
        Ok(()) => Engine::Uring,
        Err(why) => Engine::Fallback(format!("io_uring refused by the kernel ({why})")),
    }
}

/// The option in `config` that only the epoll engine serves, as its flag (TLS, and with it
/// HTTP/2).
fn epoll_only(config: &Config) -> Option<&'static str> {
    config.tls.as_ref().map(|_| "--tls-cert")
}

impl Running {
    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Where the admin endpoint listens, if there is one.
    pub fn admin_addr(&self) -> Option<SocketAddr> {
        self.admin.as_ref().map(|a| a.addr)
    }

    /// What the workers have measured so far, summed (empty when timing is off).
    pub fn stats(&self) -> Stats {
        timing::merged(&self.stats)
    }

    /// What the services layer has measured, by service (None without `--services`).
    pub fn service_figures(&self) -> Option<Vec<ServiceFigures>> {
        self.services.as_ref().map(|s| s.stats.snapshot())
    }

    /// Stops accepting, lets responses in flight finish (up to the shutdown timeout), flushes
    /// the access log, and returns when every worker has stopped.
    pub fn shutdown(self) {
        let _ = self.stop.send(true);
        for worker in self.workers {
            let _ = worker.join();
        }
        if let Some(log_thread) = self.log_thread {
            log_thread.join();
        }
        if let Some(admin) = self.admin {
            admin.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(cc: &str) -> Config {
        let mut config = Config::new(std::env::temp_dir());
        config.listen = SocketAddr::from(([127, 0, 0, 1], 0));
        config.workers = 1;
        config.tcp_congestion = Some(cc.into());
        config
    }

    #[test]
    fn a_tcp_congestion_control_the_kernel_lacks_is_one_clear_error() {
        // Reno is every kernel's fallback, allowed to any socket.
        assert!(Server::bind(config("reno")).is_ok());
        let err = Server::bind(config("no-such-cc")).err().expect("refused");
        let text = err.to_string();
        assert!(
            text.starts_with("--tcp-congestion no-such-cc: the kernel refused it"),
            "{text}"
        );
        assert!(text.contains("reno") && !text.contains('\n'), "{text}");
    }
}
