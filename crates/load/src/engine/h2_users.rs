//! `--users` over HTTP/2 (`--http2`, `--h2c`): a task per user on the thread's `LocalSet`,
//! each user with one connection, as a browser keeps one HTTP/2 connection per host (RFC 9113
//! §9.1), opened when first needed and again after it fails or the server closes it.
//!
//! The users, their sessions, page views and think times are the HTTP/1.1 engine's
//! ([`UserSet`], `users.rs`): only how the requests travel differs. A page view asks its page
//! on a stream; when the page's answer has come, its objects over up to
//! [`crate::users::Users::connections`] streams at once (a browser's six connections become
//! six streams of one connection, so that a page load over HTTP/2 and over HTTP/1.1 differs
//! by the protocol, not by how many requests a user has out), each stream taking the next
//! object as it frees; then the user thinks, and sleeps for it. A stream the server refused
//! gracefully without processing it (GOAWAY NO_ERROR, REFUSED_STREAM: RFC 9113 §8.7) is asked
//! again once on a new connection, as a browser retries it.
//!
//! A request's latency, its status, bytes and failures are counted by the HTTP/2 engine's
//! [`ask`], as its connections count theirs; the interval clock is its [`keep_time`], the
//! requests in flight at the end counted as unfinished (a slot per user and stream).

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use h2::client::SendRequest;
use tokio::task::JoinSet;

use super::conn::count_failure;
use super::h2::{ask, keep_time, open, Asked, InFlight};
use super::users::UserSet;
use crate::recorder::Failure;
use crate::shared::{Intervals, Shared};
use crate::users::Request;

/// How early a user's think-time timer is set (see `user`).
const TIMER_EARLY: Duration = Duration::from_millis(1);

/// Runs the thread's users (`shared.users`) until the run ends or is stopped, handing the
/// figures over at each interval boundary.
pub(crate) async fn run(shared: Rc<Shared>, mut intervals: Intervals, seed: u64) {
    let Some((plan, first, stride, count)) = shared.users.clone() else {
        return;
    };
    let set = UserSet::new(plan, first, stride, count, seed);
    let (users, streams) = (set.len(), set.per_user());
    let set = Rc::new(RefCell::new(set));
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async move {
            intervals.begin();
            let in_flight: InFlight = Rc::new(RefCell::new(vec![None; users * streams]));
            for u in 0..users {
                let slots = (Rc::clone(&in_flight), u * streams);
                tokio::task::spawn_local(user(Rc::clone(&shared), Rc::clone(&set), u, slots));
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
async fn user(
    shared: Rc<Shared>,
    set: Rc<RefCell<UserSet>>,
    u: usize,
    (in_flight, base): (InFlight, usize),
) {
    let streams = set.borrow().per_user();
    let mut wake_at = shared.start + set.borrow().start_offset(u);
    let mut connection: Option<SendRequest<Bytes>> = None;
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
struct View<'a> {
    shared: &'a Rc<Shared>,
    set: &'a Rc<RefCell<UserSet>>,
    u: usize,
    in_flight: &'a InFlight,
    /// The user's in-flight slots not in use: one per stream it may have open.
    free: Vec<usize>,
}

impl View<'_> {
    /// Asks the page, then its objects, until every request has its answer (true), or the
    /// run ended first (false: what is in flight is waited for, nothing more is asked).
    async fn go(mut self, page: Request, connection: &mut Option<SendRequest<Bytes>>) -> bool {
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
                    let result = ask(&shared, &sender, asked, (&in_flight, slot)).await;
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
        connection: &mut Option<SendRequest<Bytes>>,
        slot: usize,
        request: Request,
    ) -> Result<(SendRequest<Bytes>, Option<Duration>), ()> {
        if let Some(sender) = connection {
            return Ok((sender.clone(), None));
        }
        let class = self.shared.requests.entry(request.request as usize).class as usize;
        self.shared.recorder.borrow_mut().connections += 1;
        self.in_flight.borrow_mut()[slot] = Some((Instant::now(), class));
        let opened = open(self.shared).await;
        self.in_flight.borrow_mut()[slot] = None;
        match opened {
            Ok((sender, took)) => {
                *connection = Some(sender.clone());
                Ok((sender, Some(took)))
            }
            Err(failure) => {
                count_failure(&mut self.shared.recorder.borrow_mut(), class, failure);
                Err(())
            }
        }
    }
}
