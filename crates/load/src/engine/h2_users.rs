//! `--users` over HTTP/2 (`--http2`, `--h2c`) and HTTP/3 (`--http3`): a task per user on the
//! thread's `LocalSet`, each user with one connection, as a browser keeps one HTTP/2
//! connection per host (RFC 9113 §9.1) and one QUIC connection per origin (RFC 9114 §3.3),
//! opened when first needed and again after it fails or the server closes it. The two
//! protocols differ here only in how a connection is opened and a request asked on it
//! ([`Dial`]): the page views' loop below is one for both.
//!
//! The users, their sessions, page views and think times are the HTTP/1.1 engine's
//! ([`UserSet`], `users.rs`): only how the requests travel differs. A page view asks its page
//! on a stream; when the page's answer has come, its objects over up to
//! [`crate::users::Users::connections`] streams at once (a browser's six connections become
//! six streams of one connection, so that a page load over HTTP/2 and over HTTP/1.1 differs
//! by the protocol, not by how many requests a user has out), each stream taking the next
//! object as it frees; then the user thinks, and sleeps for it. A stream the server refused
//! gracefully without processing it (GOAWAY NO_ERROR, REFUSED_STREAM: RFC 9113 §8.7; over
//! HTTP/3 GOAWAY or H3_REQUEST_REJECTED, RFC 9114 §4.1.1) is asked again once on a new
//! connection, as a browser retries it.
//!
//! A request's latency, its status, bytes and failures are counted by the engines' `ask`
//! (HTTP/3's shares HTTP/2's counting), as their connections count theirs; the interval clock is its [`keep_time`], the
//! requests in flight at the end counted as unfinished (a slot per user and stream).

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use std::sync::Arc;

use bytes::Bytes;
use tokio::task::JoinSet;

use super::conn::count_failure;
use super::h2::{keep_time, Asked, InFlight};
use super::users::UserSet;
use crate::recorder::Failure;
use crate::shared::{Intervals, Shared};
use crate::users::Request;

/// How early a user's think-time timer is set (see `user`).
const TIMER_EARLY: Duration = Duration::from_millis(1);

/// How a user's connection is opened and a request asked on it: HTTP/2 ([`H2`]) or HTTP/3
/// ([`H3`]).
pub(crate) trait Dial: 'static {
    /// What asks requests on an open connection (a clone per stream).
    type Sender: Clone + 'static;
    /// Opens a connection, its handshake timed and counted full or resumed by the engine's
    /// own `open` (the closed loop's rule, one for both loops), returning its sender and,
    /// over TCP, the connect time to count with its first request (over QUIC none: the
    /// handshake is the transport's and TLS's at once, `h3.rs`); Err(the failure) when it
    /// could not.
    async fn open(&self, shared: &Rc<Shared>) -> Result<(Self::Sender, Option<Duration>), Failure>;
    /// Asks `asked` on a new stream, holding `slot` meanwhile, and counts what came (see
    /// `h2::ask`).
    async fn ask(
        shared: &Shared,
        sender: &Self::Sender,
        asked: Asked,
        slot: (&InFlight, usize),
    ) -> Result<u16, Option<Failure>>;
}

/// Users over HTTP/2, on TCP (and TLS): a connection each.
pub(crate) struct H2;

impl Dial for H2 {
    type Sender = h2::client::SendRequest<Bytes>;
    async fn open(&self, shared: &Rc<Shared>) -> Result<(Self::Sender, Option<Duration>), Failure> {
        let (sender, took) = super::h2::open(shared).await?;
        Ok((sender, Some(took)))
    }
    async fn ask(
        shared: &Shared,
        sender: &Self::Sender,
        asked: Asked,
        slot: (&InFlight, usize),
    ) -> Result<u16, Option<Failure>> {
        super::h2::ask(shared, sender, asked, slot).await
    }
}

/// Users over HTTP/3: a QUIC connection each, all of the thread's on its one UDP endpoint
/// (as the HTTP/3 engine's connections are).
pub(crate) struct H3 {
    endpoint: quinn::Endpoint,
    client: Arc<crate::quic::Client>,
    /// The connections opened, for their transport figures at the run's end (only kept
    /// when `WEBSCOPE_QUIC_STATS` asks for them).
    opened: std::cell::RefCell<Vec<quinn::Connection>>,
}

impl Drop for H3 {
    fn drop(&mut self) {
        for quic in self.opened.borrow().iter() {
            webscope_quic::stats::note("client", &quic.stats());
        }
    }
}

impl H3 {
    /// The thread's endpoint, bound as the HTTP/3 engine binds its own.
    pub(crate) fn new(shared: &Shared, client: Arc<crate::quic::Client>) -> std::io::Result<H3> {
        let endpoint = super::h3::endpoint(super::h3::unspecified(shared.addr), shared.busy_poll)?;
        Ok(H3 {
            endpoint,
            client,
            opened: Default::default(),
        })
    }
}

impl Dial for H3 {
    type Sender = super::h3::SendRequest;
    async fn open(&self, shared: &Rc<Shared>) -> Result<(Self::Sender, Option<Duration>), Failure> {
        // The QUIC connection closes (H3_NO_ERROR) when its last sender is dropped: when
        // the user drops it for a new one, and at the run's end. `h3::open` has timed the
        // handshake (connect to established) and counted it, as for the closed loop.
        let (quic, sender, _verified) =
            super::h3::open(shared, &self.endpoint, &self.client).await?;
        if std::env::var_os(webscope_quic::stats::STATS_VAR).is_some() {
            self.opened.borrow_mut().push(quic);
        }
        Ok((sender, None))
    }
    async fn ask(
        shared: &Shared,
        sender: &Self::Sender,
        asked: Asked,
        slot: (&InFlight, usize),
    ) -> Result<u16, Option<Failure>> {
        super::h3::ask(shared, sender, asked, slot).await
    }
}

/// Runs the thread's users (`shared.users`) over `dial`'s protocol until the run ends or is
/// stopped, handing the figures over at each interval boundary.
pub(crate) async fn run<D: Dial>(shared: Rc<Shared>, mut intervals: Intervals, seed: u64, dial: D) {
    let Some((plan, first, stride, count)) = shared.users.clone() else {
        return;
    };
    let set = UserSet::new(plan, first, stride, count, seed, shared.expect.clone());
    let (users, streams) = (set.len(), set.per_user());
    let set = Rc::new(RefCell::new(set));
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async move {
            intervals.begin();
            let in_flight: InFlight = Rc::new(RefCell::new(vec![None; users * streams]));
            let dial = Rc::new(dial);
            for u in 0..users {
                let slots = (Rc::clone(&in_flight), u * streams);
                let user = user(
                    Rc::clone(&shared),
                    Rc::clone(&set),
                    Rc::clone(&dial),
                    u,
                    slots,
                );
                tokio::task::spawn_local(user);
            }
            keep_time(&shared, &mut intervals, &in_flight).await;
        })
        .await;
    // The LocalSet is dropped here: streams still in flight are cancelled, counted above as
    // unfinished.
}

/// What a stream's task hands back: its slot, its request, whether it was asked again, and
/// what came.
type Ended = (usize, Request, bool, Result<u16, Option<Failure>>);

/// User `u`: its page views one after the other, a think time between them, from its start
/// in the ramp-up to the run's end.
async fn user<D: Dial>(
    shared: Rc<Shared>,
    set: Rc<RefCell<UserSet>>,
    dial: Rc<D>,
    u: usize,
    (in_flight, base): (InFlight, usize),
) {
    let streams = set.borrow().per_user();
    let mut wake_at = shared.start + set.borrow().start_offset(u);
    let mut connection: Option<D::Sender> = None;
    loop {
        // The runtime's timer fires on the first whole-millisecond tick at or after its
        // deadline, and its thread wakes after that: set half a millisecond early (as the
        // HTTP/1.1 engine's own wait is), a 100-ms think was kept 101.5 ms on average (20
        // users for 3 s, on this shared machine); a millisecond early, 100.4 and 100.9 ms
        // in two runs, the shortest 99.0 ms (never more than a millisecond short).
        let early = wake_at.checked_sub(TIMER_EARLY).unwrap_or(wake_at);
        tokio::time::sleep_until(early.into()).await;
        let Some(page) = set.borrow_mut().wake(u, Instant::now(), &shared) else {
            return;
        };
        let view = View {
            dial: &*dial,
            shared: &shared,
            set: &set,
            u,
            in_flight: &in_flight,
            free: (base..base + streams).rev().collect(),
        };
        if !view.go(page, &mut connection).await {
            // The run ended with the view unfinished: it is not counted, as over HTTP/1.1.
            return;
        }
        let now = Instant::now();
        let think = set.borrow_mut().view_ended(u, now, &shared);
        wake_at = now + think;
    }
}

/// One page view of user `u` in progress.
struct View<'a, D: Dial> {
    dial: &'a D,
    shared: &'a Rc<Shared>,
    set: &'a Rc<RefCell<UserSet>>,
    u: usize,
    in_flight: &'a InFlight,
    /// The user's in-flight slots not in use: one per stream it may have open.
    free: Vec<usize>,
}

impl<D: Dial> View<'_, D> {
    /// Asks the page, then its objects, until every request has its answer (true), or the
    /// run ended first (false: what is in flight is waited for, nothing more is asked).
    async fn go(mut self, page: Request, connection: &mut Option<D::Sender>) -> bool {
        let mut first = Some(page);
        // Requests of the view refused gracefully, to ask again on a new connection.
        let mut again: Vec<Request> = Vec::new();
        let mut objects = false;
        let mut running: JoinSet<Ended> = JoinSet::new();
        let mut ended = false;
        loop {
            while let Some(&slot) = self.free.last() {
                if Instant::now() >= self.shared.end {
                    ended = true;
                    break;
                }
                let (request, retried) = if let Some(r) = again.pop() {
                    (r, true)
                } else if let Some(p) = first.take() {
                    (p, false)
                } else if let Some(r) = objects
                    .then(|| self.set.borrow_mut().next_object(self.u))
                    .flatten()
                {
                    (r, false)
                } else {
                    break;
                };
                let (sender, connect) = match self.connection(connection, slot, request).await {
                    Ok(opened) => opened,
                    Err(()) => {
                        objects |= self.set.borrow_mut().ended(self.u, false);
                        continue;
                    }
                };
                self.free.pop();
                let (shared, in_flight) = (Rc::clone(self.shared), Rc::clone(self.in_flight));
                running.spawn_local(async move {
                    let asked = Asked {
                        index: request.request as usize,
                        waited: None,
                        connect,
                        logged: request.logged,
                    };
                    let result = D::ask(&shared, &sender, asked, (&in_flight, slot)).await;
                    (slot, request, retried, result)
                });
            }
            let Some(joined) = running.join_next().await else {
                return !ended;
            };
            // A stream's task never panics; one that did is a request without an answer.
            let Ok((slot, request, retried, result)) = joined else {
                objects |= self.set.borrow_mut().ended(self.u, false);
                continue;
            };
            self.free.push(slot);
            let ok = match result {
                Ok(status) => self.set.borrow().accepts(Some(status), request.logged),
                // The server closed the connection before taking it, after the run's end:
                // not a request of the run (the view is not counted either).
                Err(None) if ended => continue,
                Err(None) if !retried => {
                    // Before the end: again, on a new connection.
                    *connection = None;
                    again.push(request);
                    continue;
                }
                Err(None) => {
                    // Refused twice: the server is not taking the user's requests.
                    let class = self.shared.requests.entry(request.request as usize).class;
                    let mut recorder = self.shared.recorder.borrow_mut();
                    count_failure(&mut recorder, class as usize, Failure::GoAway);
                    false
                }
                Err(Some(failure)) => {
                    // A stream reset leaves the connection usable; anything else ends it.
                    if failure != Failure::StreamReset {
                        *connection = None;
                    }
                    false
                }
            };
            objects |= self.set.borrow_mut().ended(self.u, ok);
        }
    }

    /// The user's connection for `request`, opened if it has none (the request waiting on
    /// it in `slot`, and its TCP connect time returned to be counted with it); Err when it
    /// could not be opened (the failure counted as the request's).
    async fn connection(
        &self,
        connection: &mut Option<D::Sender>,
        slot: usize,
        request: Request,
    ) -> Result<(D::Sender, Option<Duration>), ()> {
        if let Some(sender) = connection {
            return Ok((sender.clone(), None));
        }
        let class = self.shared.requests.entry(request.request as usize).class as usize;
        self.shared.recorder.borrow_mut().connections += 1;
        self.in_flight.borrow_mut()[slot] = Some((Instant::now(), class));
        let opened = self.dial.open(self.shared).await;
        self.in_flight.borrow_mut()[slot] = None;
        match opened {
            Ok((sender, took)) => {
                *connection = Some(sender.clone());
                Ok((sender, took))
            }
            Err(failure) => {
                count_failure(&mut self.shared.recorder.borrow_mut(), class, failure);
                Err(())
            }
        }
    }
}
