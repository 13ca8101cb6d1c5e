//! One worker thread: a current-thread tokio runtime running the thread's engine (its share
//! of the connections, see [`crate::engine`]) and the interval clock that hands the thread's
//! recorder to the coordinator at each interval boundary ([`crate::shared::Intervals`]).
//!
//! Nothing is shared between workers while they run (thread-per-core, no locks, no work
//! stealing): each has its connections, its random stream, its open-loop schedule and its
//! recorder; the coordinator only receives whole recorders over a channel once per interval.

use std::cell::{Cell, RefCell};
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::config::{Arrivals, Io, Mode};
use crate::engine::h2_users::{H2, H3};
use crate::engine::Engine;
use crate::recorder::Recorder;
use crate::replay::ReplaySchedule;
use crate::requests::Requests;
use crate::schedule::Schedule;
use crate::shared::{Intervals, Message, Shared, TlsClient};

/// What a worker is given.
pub(crate) struct Setup {
    /// This thread's index in this process.
    pub index: usize,
    /// Its index among all the run's threads, every segment's (`segment + index × segments`):
    /// connection numbering, seeds and open-loop phases follow it, so that the segments
    /// together make the single-host run.
    pub global: usize,
    pub requests: Arc<Requests>,
    pub classes: usize,
    pub addr: SocketAddr,
    pub mode: Mode,
    pub timeout: Duration,
    pub think: Duration,
    pub backoff_503: Duration,
    pub connections: usize,
    /// Open loop: this thread's rate, arrivals, phase (ns) and connection limit.
    pub open: Option<(f64, Arrivals, f64, usize)>,
    pub start: Instant,
    pub end: Instant,
    /// Until when the answers in flight at `end` are waited for (`end`: not at all).
    pub drain_end: Instant,
    pub interval: Duration,
    pub seed: u64,
    /// Threads of the whole run, every segment's.
    pub threads: usize,
    /// Requests this thread may record as samples (0: no samples).
    pub samples: usize,
    /// https: the client configuration and the server's name.
    pub tls: Option<TlsClient>,
    /// HTTP/2: streams per connection.
    pub http2: Option<usize>,
    /// HTTP/3: streams per connection, and what its connections are made from.
    pub http3: Option<(usize, Arc<crate::quic::Client>)>,
    /// SO_BUSY_POLL microseconds for every connection (the kernel took it in a probe).
    pub busy_poll: Option<u32>,
    /// How the HTTP/1.1 engine waits for its sockets.
    pub io: Io,
    /// The run's expectation, by which responses are counted as errors.
    pub expect: crate::Expect,
    /// A replay: this thread's slots from the feed, in place of the open-loop clock's.
    pub replay: Option<ReplaySchedule>,
    /// `--users`: the plan, and this thread's users (the run's `first, first + stride, ...`,
    /// `count` of them).
    pub users: Option<(Arc<crate::users::Users>, usize, usize, usize)>,
}

/// The body of a worker thread.
pub(crate) fn run(mut setup: Setup, tx: Sender<Message>, stop: watch::Receiver<bool>) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            let _ = tx.send(Message::Failed(e));
            return;
        }
    };
    let shared = Rc::new(shared(&mut setup));
    let limit = setup
        .open
        .map_or(setup.connections, |(_, _, _, limit)| limit);
    let seed = setup.seed ^ (setup.global as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let engine = match (setup.http2, &setup.http3) {
        (Some(_), _) | (_, Some(_)) => None,
        (None, None) => {
            match Engine::new(Rc::clone(&shared), setup.connections, limit, seed, setup.io) {
                Ok(engine) => Some(engine),
                Err(e) => {
                    let _ = tx.send(Message::Failed(e));
                    return;
                }
            }
        }
    };
    let intervals = Intervals::new(
        setup.index,
        setup.classes,
        setup.start,
        setup.interval,
        (setup.end, setup.drain_end),
        tx,
        stop,
    );
    runtime.block_on(async {
        tokio::time::sleep_until(setup.start.into()).await;
        match (engine, setup.http2, setup.http3) {
            (Some(engine), _, _) => engine.run(intervals).await,
            // Users over HTTP/2: a connection each, their streams their page views' requests.
            (None, Some(_), _) if shared.users.is_some() => {
                crate::engine::h2_users::run(shared, intervals, seed, H2).await
            }
            // Users over HTTP/3: a QUIC connection each, on the thread's one UDP endpoint.
            (None, None, Some((_, client))) if shared.users.is_some() => {
                match H3::new(&shared, client) {
                    Ok(dial) => crate::engine::h2_users::run(shared, intervals, seed, dial).await,
                    Err(e) => crate::engine::h3::no_endpoint(shared, intervals, &e).await,
                }
            }
            (None, Some(streams), _) => {
                crate::engine::h2::run(shared, intervals, setup.connections, streams, seed).await
            }
            (None, None, Some((streams, client))) => {
                let shape = (setup.connections, streams);
                crate::engine::h3::run(shared, intervals, shape, client, seed).await
            }
            (None, None, None) => {}
        }
    });
    // The engine is gone: its sockets are closed (requests in flight are not counted).
}

/// The state the thread's engine and interval clock share, from the worker's setup.
fn shared(setup: &mut Setup) -> Shared {
    let replay = setup.replay.take();
    let schedule = setup.open.map(|(rate, arrivals, phase, _)| match replay {
        Some(replay) => Schedule::replay(setup.start, replay),
        None => Schedule::new(
            setup.start,
            rate,
            phase,
            arrivals,
            setup.seed ^ (setup.global as u64 + 1) << 32,
        ),
    });
    Shared {
        requests: Arc::clone(&setup.requests),
        tls: setup.tls.clone(),
        addr: setup.addr,
        mode: setup.mode,
        timeout: setup.timeout,
        think: setup.think,
        backoff_503: setup.backoff_503,
        recorder: RefCell::new(Recorder::new(setup.classes)),
        schedule,
        end: setup.end,
        open_connections: Cell::new(setup.connections),
        start: setup.start,
        thread: setup.global,
        threads: setup.threads,
        samples_left: Cell::new(setup.samples),
        busy_poll: setup.busy_poll,
        users: setup.users.take(),
        users_active: Cell::new(0),
        expect: setup.expect.clone(),
    }
}
