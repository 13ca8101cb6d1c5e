//! `--io epoll`: a worker on a current-thread tokio runtime (epoll underneath). Its accept
//! loop hands each connection to a task: plain TCP to the HTTP/1.1 loop (`conn.rs`), TLS to
//! the handshake (`tls.rs`), which goes on with HTTP/2 (`h2.rs`) or the same HTTP/1.1 loop
//! over the encrypted `transport.rs`. Every request those loops parse is answered by
//! `exchange.rs`; this folder only moves bytes.
//!
//! Not here: what connections share (`worker.rs`), the io_uring engine (`uring/`).

mod conn;
mod h2;
mod h2_frames;
mod h2_guard;
mod h2_meter;
mod tls;
mod transport;

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::unix::AsyncFd;
use tokio::sync::Notify;
use tokio::task::LocalSet;

use crate::slots::Slots;
use crate::worker::{Backoff, Start, Worker};

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

/// The connections a worker has open, so that shutdown can wait for the last one.
#[derive(Default)]
struct Open {
    count: Cell<usize>,
    drained: Notify,
}

/// Counts a connection task from accept until it ends, however it ends.
struct Active(Rc<Open>);

impl Active {
    fn new(open: &Rc<Open>) -> Active {
        open.count.set(open.count.get() + 1);
        Active(Rc::clone(open))
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        let left = self.0.count.get() - 1;
        self.0.count.set(left);
        if left == 0 {
            self.0.drained.notify_waiters();
        }
    }
}

async fn serve(mut start: Start) {
    let worker = Rc::new(Worker::take(&mut start));
    let Start {
        listener,
        config,
        slots,
        mut shutdown,
        ready,
        quic,
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
    let open = Rc::new(Open::default());
    // HTTP/3 beside the TCP listener, on this worker's runtime and state.
    let quic = quic.map(|(socket, setup)| {
        let serving = crate::quic::serve(socket, Rc::clone(&worker), setup, Arc::clone(&slots));
        tokio::task::spawn_local(serving)
    });
    tokio::select! {
        biased;
        _ = shutdown.wait_for(|&stop| stop) => {}
        () = accept_loop(&listener, &worker, &slots, &open) => {}
    }
    drop(listener);
    worker.begin_shutdown();
    let drain = async {
        if open.count.get() > 0 {
            open.drained.notified().await;
        }
        if let Some(quic) = quic {
            let _ = quic.await;
        }
    };
    let _ = tokio::time::timeout(config.shutdown_timeout, drain).await;
    flusher.abort();
    worker.flush_log();
}

async fn accept_loop(
    listener: &AsyncFd<std::net::TcpListener>,
    worker: &Rc<Worker>,
    slots: &Arc<Slots>,
    open: &Rc<Open>,
) {
    let mut backoff = Backoff::default();
    loop {
        match crate::io::accept(listener, slots).await {
            Ok((socket, peer, slot)) => {
                backoff.reset();
                let active = Active::new(open);
                let worker = Rc::clone(worker);
                tokio::task::spawn_local(async move {
                    if worker.tls.is_some() {
                        tls::serve(socket, peer, worker).await;
                    } else {
                        conn::serve(socket, peer, worker).await;
                    }
                    drop(slot);
                    drop(active);
                });
            }
            Err(err) => backoff.wait(&err).await,
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
