//! A worker: one OS thread, one current-thread tokio runtime, one listener (SO_REUSEPORT), and
//! the connections it accepts. Nothing on a worker's request path is shared with another
//! worker except the document root's descriptor and the log file's descriptor, so the hot
//! path takes no lock and touches no shared cache line.

use std::cell::{Cell, RefCell};
use std::io;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::unix::AsyncFd;
use tokio::sync::{watch, Notify, Semaphore};
use tokio::task::LocalSet;

use crate::access_log::{Entry, LogBuffer, Mode};
use crate::cache::Caches;
use crate::config::Config;
use crate::conn;
use crate::dns::{self, DnsCache};
use crate::files::Root;
use crate::services::Services;
use crate::timing::{SharedStats, Timing};
use crate::tls::Tls;

/// Per-worker state that connections share (single-threaded: `Rc`, `Cell`).
pub(crate) struct Worker {
    pub config: Arc<Config>,
    pub root: Arc<Root>,
    pub caches: RefCell<Caches>,
    log: RefCell<LogBuffer>,
    dns: Option<Arc<DnsCache>>,
    pub timing: Timing,
    pub services: Option<Arc<Services>>,
    /// The TLS set-up when serving HTTPS.
    pub tls: Option<Arc<Tls>>,
    shutdown: Cell<bool>,
    shutdown_notify: Notify,
    active: Cell<usize>,
    drained: Notify,
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
            log: RefCell::new(LogBuffer::new(log, config.techniques.string_cache)),
            dns: start.dns.clone(),
            timing: Timing::new(config.timing, stats),
            services: start.services.clone(),
            tls: start.tls.clone(),
            shutdown: Cell::new(false),
            shutdown_notify: Notify::new(),
            active: Cell::new(0),
            drained: Notify::new(),
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
        if !self.config.hostname_lookups {
            self.log.borrow_mut().log(&entry);
            return;
        }
        let name: Option<Arc<str>> = match &self.dns {
            Some(cache) => cache.get(entry.peer),
            None => Some(dns::lookup(entry.peer).into()),
        };
        let entry = Entry {
            host: name.as_deref(),
            ..entry
        };
        self.log.borrow_mut().log(&entry);
    }
}

/// Decrements the worker's connection count when a connection task ends, however it ends.
struct Active(Rc<Worker>);

impl Drop for Active {
    fn drop(&mut self) {
        let left = self.0.active.get() - 1;
        self.0.active.set(left);
        if left == 0 {
            self.0.drained.notify_waiters();
        }
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
    pub max_connections: usize,
    pub shutdown: watch::Receiver<bool>,
    /// Told once the worker runs (or why it could not start).
    pub ready: std::sync::mpsc::Sender<io::Result<()>>,
}

/// The worker thread's body: runs until shutdown, then drains.
pub(crate) fn run(start: Start) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            let _ = start.ready.send(Err(err));
            return;
        }
    };
    let local = LocalSet::new();
    local.block_on(&runtime, serve(start));
}

async fn serve(mut start: Start) {
    let worker = Rc::new(Worker::take(&mut start));
    let Start {
        listener,
        config,
        max_connections,
        mut shutdown,
        ready,
        ..
    } = start;
    // SAFETY: the AsyncFd owns the listener, whose descriptor stays open and the same for
    // the AsyncFd's whole life.
    let registered =
        unsafe { AsyncFd::register_with_interest(listener, tokio::io::Interest::READABLE) };
    let listener = match registered {
        Ok(listener) => listener,
        Err(err) => {
            let _ = ready.send(Err(err.into()));
            return;
        }
    };
    let _ = ready.send(Ok(()));
    let flusher = tokio::task::spawn_local(flush_log_every_second(Rc::clone(&worker)));
    let permits = Arc::new(Semaphore::new(max_connections.max(1)));
    tokio::select! {
        biased;
        _ = shutdown.wait_for(|&stop| stop) => {}
        () = accept_loop(&listener, &worker, &permits) => {}
    }
    drop(listener);
    worker.begin_shutdown();
    if worker.active.get() > 0 {
        let drained = worker.drained.notified();
        let _ = tokio::time::timeout(config.shutdown_timeout, drained).await;
    }
    flusher.abort();
    worker.flush_log();
}

async fn accept_loop(
    listener: &AsyncFd<std::net::TcpListener>,
    worker: &Rc<Worker>,
    permits: &Arc<Semaphore>,
) {
    let mut backoff = Backoff::default();
    loop {
        let Ok(permit) = Arc::clone(permits).acquire_owned().await else {
            return;
        };
        match crate::io::accept(listener).await {
            Ok((socket, peer)) => {
                backoff.reset();
                worker.active.set(worker.active.get() + 1);
                let active = Active(Rc::clone(worker));
                let tls = worker.tls.is_some();
                tokio::task::spawn_local(async move {
                    if tls {
                        crate::tls::serve(socket, peer, Rc::clone(&active.0)).await;
                    } else {
                        conn::serve(socket, peer, Rc::clone(&active.0)).await;
                    }
                    drop(permit);
                    drop(active);
                });
            }
            Err(err) => backoff.wait(&err).await,
        }
    }
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

    async fn wait(&mut self, err: &io::Error) {
        if let Some(delay) = self.after(err) {
            tokio::time::sleep(delay).await;
        }
    }
}

async fn flush_log_every_second(worker: Rc<Worker>) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        worker.flush_log();
    }
}
