//! What one worker's connections share, whichever engine moves their bytes (`epoll/`,
//! `uring/`): the configuration, the caches, the access-log buffer, the timing recorder, the
//! services and TLS set-up, and the shutdown flag; and [`Start`], what the server hands a
//! worker thread. Not the accept loops: each engine has its own.
//!
//! A worker is one OS thread. Nothing on its request path is shared with another worker
//! except the document root's descriptor and the log file's descriptor, so the hot path takes
//! no lock and touches no shared cache line.

use std::cell::{Cell, RefCell};
use std::io;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{watch, Notify};

use crate::access_log::{Deferred, Entry, LogBuffer, Mode};
use crate::cache::Caches;
use crate::config::Config;
use crate::dns::{self, DnsCache};
use crate::files::Root;
use crate::services::Services;
use crate::slots::Slots;
use crate::timing::{SharedStats, Timing};
use crate::tls::Tls;

/// Per-worker state that connections share (single-threaded: `Rc`, `Cell`).
pub(crate) struct Worker {
    pub config: Arc<Config>,
    pub root: Arc<Root>,
    pub caches: RefCell<Caches>,
    log: Rc<RefCell<LogBuffer>>,
    dns: Option<Arc<DnsCache>>,
    pub timing: Timing,
    pub services: Option<Arc<Services>>,
    /// The TLS set-up when serving HTTPS.
    pub tls: Option<Arc<Tls>>,
    shutdown: Cell<bool>,
    shutdown_notify: Notify,
}

impl Worker {
    /// The worker state of a worker thread (either engine) from what the server gave it.
    fn new(start: &Start, log: Mode, stats: SharedStats) -> Worker {
        let config = &start.config;
        Worker {
            config: Arc::clone(config),
            root: Arc::clone(&start.root),
            caches: RefCell::new(Caches::new(
                config.techniques,
                config.file_cache_bytes / config.workers.max(1),
                config.file_cache_entries,
                config.sendfile_threshold,
            )),
            log: Rc::new(RefCell::new(LogBuffer::new(
                log,
                config.techniques.string_cache,
            ))),
            dns: start.dns.clone(),
            timing: Timing::new(config.timing, stats),
            services: start.services.clone(),
            tls: start.tls.clone(),
            shutdown: Cell::new(false),
            shutdown_notify: Notify::new(),
        }
    }

    /// The worker state for either engine, taking what it needs from `start` (the listener,
    /// the limits and the shutdown signal stay there).
    pub(crate) fn take(start: &mut Start) -> Worker {
        let log = std::mem::replace(&mut start.log, Mode::Off);
        Worker::new(start, log, Arc::clone(&start.stats))
    }

    /// From now on responses say `Connection: close` and idle connections end.
    pub(crate) fn begin_shutdown(&self) {
        self.shutdown.set(true);
        self.shutdown_notify.notify_waiters();
    }

    /// Writes out the access log lines buffered so far.
    pub(crate) fn flush_log(&self) {
        self.log.borrow_mut().flush();
    }

    pub(crate) fn shutting_down(&self) -> bool {
        self.shutdown.get()
    }

    /// Completes when shutdown begins.
    pub(crate) async fn shutdown_signal(&self) {
        if !self.shutdown.get() {
            self.shutdown_notify.notified().await;
        }
    }

    pub(crate) fn log_enabled(&self) -> bool {
        self.log.borrow().enabled()
    }

    /// Logs one request; with host-name logging, looks the client's name up first (from the
    /// dns-cache, or blocking on the resolver without it).
    pub(crate) fn log(&self, entry: Entry<'_>) {
        self.with_host(entry, |entry| self.log.borrow_mut().log(entry));
    }

    /// As [`Worker::log`], but the line waits for its bytes field until the returned
    /// [`Deferred`] drops (a large body: its bytes are known once it is sent or cut).
    pub(crate) fn log_deferred(&self, entry: Entry<'_>) -> Deferred {
        self.with_host(entry, |entry| LogBuffer::defer(&self.log, entry))
    }

    fn with_host<R>(&self, entry: Entry<'_>, then: impl FnOnce(&Entry<'_>) -> R) -> R {
        if !self.config.hostname_lookups {
            return then(&entry);
        }
        let name: Option<Arc<str>> = match &self.dns {
            Some(cache) => cache.get(entry.peer),
            None => Some(dns::lookup(entry.peer).into()),
        };
        then(&Entry {
            host: name.as_deref(),
            ..entry
        })
    }
}

/// What a worker thread needs from the server.
pub(crate) struct Start {
    pub listener: std::net::TcpListener,
    pub config: Arc<Config>,
    pub root: Arc<Root>,
    pub log: Mode,
    pub dns: Option<Arc<DnsCache>>,
    pub stats: SharedStats,
    pub services: Option<Arc<Services>>,
    pub tls: Option<Arc<Tls>>,
    /// `--max-connections`, shared by all workers.
    pub slots: Arc<Slots>,
    pub shutdown: watch::Receiver<bool>,
    /// `--http3`: the worker's UDP socket and the QUIC set-up (epoll workers only).
    pub quic: Option<(std::net::UdpSocket, Arc<crate::quic::setup::Setup>)>,
    /// Told once the worker runs (or why it could not start).
    pub ready: std::sync::mpsc::Sender<io::Result<()>>,
}

/// accept() errors: running out of descriptors or memory is waited out on a doubling
/// schedule (10 ms .. 1 s) instead of spinning; the operator is told once per episode.
#[derive(Default)]
pub(crate) struct Backoff {
    delay: Option<Duration>,
}

impl Backoff {
    pub(crate) fn reset(&mut self) {
        self.delay = None;
    }

    /// How long to wait before the next accept after `err` (None: at once).
    pub(crate) fn after(&mut self, err: &io::Error) -> Option<Duration> {
        let exhausted = matches!(
            err.raw_os_error(),
            Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
        );
        if !exhausted {
            // ECONNABORTED and friends concern one client only; the next accept is fine.
            return None;
        }
        let delay = match self.delay {
            None => {
                eprintln!("webscope serve: accept failed: {err}; backing off until it clears");
                Duration::from_millis(10)
            }
            Some(d) => (d * 2).min(Duration::from_secs(1)),
        };
        self.delay = Some(delay);
        Some(delay)
    }

    pub(crate) async fn wait(&mut self, err: &io::Error) {
        if let Some(delay) = self.after(err) {
            tokio::time::sleep(delay).await;
        }
    }
}
