//! `--users`: a thread's users and their page views ([`UserSet`]), whatever carries their
//! requests, and how the HTTP/1.1 engine carries them: on each user's own connections (user
//! `u` of the thread owns connections `u·C .. u·C+C`, opened when first needed) and the
//! engine's timers (a think time, and the stagger of the start, is a timer on the user's
//! first connection). HTTP/2 carries them in `h2_users.rs`, with the same [`UserSet`].
//!
//! A page view: the page first; when its answer has come, its objects over the user's idle
//! connections (HTTP/2: streams), each taking the next object as it frees; when the last
//! answer has come, the page load is recorded, the think time drawn (or the logged one
//! taken) and the user sleeps. A page that got no answer has no objects to fetch; a page
//! view with a failed request waits at least the connect backoff before the next, so that a
//! server that is down is not hammered by users without think times.

use std::cmp::Reverse;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use webscope_workload::Rng;

use super::conn::nanos;
use super::{Engine, CONNECT_BACKOFF};
use crate::recorder::record;
use crate::requests::Requests;
use crate::shared::Shared;
use crate::users::{Request, Session, Sessions, Users, View};

/// Most page views of a drawn session and objects of a drawn page: a heavy-tailed draw
/// cannot make a session that holds a user for the whole run.
const MAX_VIEWS: f64 = 1_000.0;
const MAX_OBJECTS: f64 = 150.0;

/// A thread's users.
pub(super) struct UserSet {
    plan: Arc<Users>,
    per_user: usize,
    users: Vec<User>,
    /// A logged sample's think times, drawn from after a session's last view.
    thinks: Vec<f64>,
    /// The run's account of an expected response (`outcome.rs`), for a page view's errors.
    expect: crate::Expect,
    rng: Rng,
}

/// One user: its session and where its page view stands.
struct User {
    /// Its index among all the run's users (the stagger follows it).
    global: usize,
    session: Session,
    /// The page view in progress, or the next one.
    view: usize,
    /// Objects of the view not asked yet.
    pending: VecDeque<Request>,
    /// Requests of the view asked and not yet ended.
    outstanding: usize,
    page_answered: bool,
    began: Instant,
    failed: bool,
    /// When the last page view ended: the user is thinking since.
    thinking: Option<Instant>,
}

impl UserSet {
    /// The users of a thread: the run's users `first, first + stride, ...`, `count` of them.
    pub(super) fn new(
        plan: Arc<Users>,
        first: usize,
        stride: usize,
        count: usize,
        seed: u64,
        expect: crate::Expect,
    ) -> UserSet {
        let thinks = match &plan.sessions {
            Sessions::Logged(logged) => logged.thinks().collect(),
            Sessions::Model(_) => Vec::new(),
        };
        let now = Instant::now();
        UserSet {
            per_user: plan.connections.max(1),
            users: (0..count)
                .map(|k| User {
                    global: first + k * stride,
                    session: Session { views: Vec::new() },
                    view: 0,
                    pending: VecDeque::new(),
                    outstanding: 0,
                    page_answered: false,
                    began: now,
                    failed: false,
                    thinking: None,
                })
                .collect(),
            thinks,
            expect,
            rng: Rng::for_stream(seed, "users"),
            plan,
        }
    }

    /// Connections the thread's users may open.
    pub(super) fn connections(&self) -> usize {
        self.users.len() * self.per_user
    }

    /// A new session.
    fn draw(&mut self, requests: &Requests) -> Session {
        match &self.plan.sessions {
            Sessions::Logged(logged) if !logged.sessions.is_empty() => {
                let k = self.rng.below(logged.sessions.len() as u64) as usize;
                logged.sessions[k].clone()
            }
            Sessions::Logged(_) => Session { views: Vec::new() },
            Sessions::Model(model) => {
                let rng = &mut self.rng;
                let views = model.views.sample(rng).clamp(1.0, MAX_VIEWS).ceil() as usize;
                let pick = |rng: &mut Rng| Request {
                    request: requests.pick_index(rng) as u32,
                    logged: None,
                };
                Session {
                    views: (0..views)
                        .map(|_| {
                            let page = match model.page {
                                Some(request) => Request {
                                    request,
                                    logged: None,
                                },
                                None => pick(rng),
                            };
                            let n = model.objects.sample(rng).clamp(0.0, MAX_OBJECTS) as usize;
                            View {
                                page,
                                objects: (0..n).map(|_| pick(rng)).collect(),
                                think_s: Some(model.think.sample(rng)),
                            }
                        })
                        .collect(),
                }
            }
        }
    }

    /// The think time after the view that just ended.
    fn think_after(&mut self, u: usize) -> Duration {
        let user = &self.users[u];
        let logged = user.session.views.get(user.view).and_then(|v| v.think_s);
        let seconds = match logged {
            Some(s) => s,
            None if self.thinks.is_empty() => 0.0,
            None => self.thinks[self.rng.below(self.thinks.len() as u64) as usize],
        };
        // A draw of a heavy tail may be past any clock (a lognormal without a max): at most
        // the longest length webscope takes, never a panic.
        let most = webscope_sys::duration::MAX.as_secs_f64();
        Duration::from_secs_f64(if seconds.is_finite() {
            seconds.clamp(0.0, most)
        } else {
            most
        })
    }

    /// The thread's users.
    pub(super) fn len(&self) -> usize {
        self.users.len()
    }

    /// Requests a user has out at once at most: its connections (HTTP/2: its streams).
    pub(super) fn per_user(&self) -> usize {
        self.per_user
    }

    /// When user `u` begins, after the run's start: the users spread evenly over the
    /// ramp-up in the order of the run's users.
    pub(super) fn start_offset(&self, u: usize) -> Duration {
        let count = self.plan.count.max(1) as f64;
        self.plan
            .ramp_up
            .mul_f64(self.users[u].global as f64 / count)
    }

    /// Whether an answer of `status` (None: no answer) to a request the log answered
    /// `logged` is as expected: the run's account of an expected response (`outcome.rs`), or
    /// the status the log gave the request (a replay's rule).
    pub(super) fn accepts(&self, status: Option<u16>, logged: Option<u16>) -> bool {
        status.is_some_and(|s| !self.expect.is_error(s, logged))
    }

    /// User `u`'s think time (or its wait to start) ended at `now`: its next page view
    /// begins, in a new session after the last one's end. Returns the page to ask (its one
    /// request outstanding), or None when there is nothing to ask (a logged sample without
    /// sessions) or the run has ended.
    pub(super) fn wake(&mut self, u: usize, now: Instant, shared: &Shared) -> Option<Request> {
        if now >= shared.end {
            return None;
        }
        let mut recorder = shared.recorder.borrow_mut();
        match self.users[u].thinking.take() {
            Some(since) => record(&mut recorder.users.think, nanos(now, since)),
            None => shared.users_active.set(shared.users_active.get() + 1),
        }
        if self.users[u].view >= self.users[u].session.views.len() {
            let session = self.draw(&shared.requests);
            recorder.users.sessions += 1;
            let user = &mut self.users[u];
            user.session = session;
            user.view = 0;
        }
        drop(recorder);
        let user = &mut self.users[u];
        let view = user.session.views.get(user.view)?;
        user.pending = view.objects.iter().copied().collect();
        user.outstanding = 1;
        user.page_answered = false;
        user.began = now;
        user.failed = false;
        Some(view.page)
    }

    /// A request of user `u`'s page view ended, `ok` as [`UserSet::accepts`] says. Returns
    /// whether it was the page's (its objects may now go out: none if it failed).
    pub(super) fn ended(&mut self, u: usize, ok: bool) -> bool {
        let user = &mut self.users[u];
        user.outstanding = user.outstanding.saturating_sub(1);
        user.failed |= !ok;
        let page = !user.page_answered;
        if page {
            user.page_answered = true;
            if !ok {
                user.pending.clear();
            }
        }
        page
    }

    /// The next object of user `u`'s page view to ask, counted as outstanding.
    pub(super) fn next_object(&mut self, u: usize) -> Option<Request> {
        let user = &mut self.users[u];
        let request = user.pending.pop_front()?;
        user.outstanding += 1;
        Some(request)
    }

    /// Whether user `u`'s page view has every answer it will get.
    pub(super) fn view_complete(&self, u: usize) -> bool {
        let user = &self.users[u];
        user.outstanding == 0 && user.pending.is_empty()
    }

    /// User `u`'s page view ended at `now`: counts it (and its page load, when every
    /// request of it was answered as expected) and returns how long the user thinks.
    pub(super) fn view_ended(&mut self, u: usize, now: Instant, shared: &Shared) -> Duration {
        {
            let mut recorder = shared.recorder.borrow_mut();
            let stats = &mut recorder.users;
            stats.views += 1;
            if self.users[u].failed {
                stats.view_errors += 1;
            } else {
                record(&mut stats.page_load, nanos(now, self.users[u].began));
            }
        }
        let mut think = self.think_after(u);
        let user = &mut self.users[u];
        if user.failed {
            think = think.max(CONNECT_BACKOFF);
        }
        user.view += 1;
        user.thinking = Some(now);
        think
    }
}

impl Engine {
    /// Sets each user's start, spread evenly over the ramp-up in the order of the run's users.
    pub(super) fn users_begin(&mut self, start: Instant) {
        let Some(set) = &self.users else {
            return;
        };
        for u in 0..set.len() {
            let at = start + set.start_offset(u);
            self.timers.push(Reverse((at, u * set.per_user())));
        }
    }

    /// A user's think time (or its wait to start) ended: its next page view begins on its
    /// first connection.
    pub(super) fn user_wake(&mut self, lead: usize, now: Instant) {
        let Some(set) = self.users.as_mut() else {
            return;
        };
        let Some(page) = set.wake(lead / set.per_user(), now, &self.shared) else {
            return;
        };
        self.conns[lead].chosen = Some(page);
        self.start(lead, now, None);
    }

    /// The exchange on connection `i` (a user's) ended; `answered`: with a response. Asks
    /// the view's next requests, or ends the view.
    pub(super) fn user_done(&mut self, i: usize, answered: bool, now: Instant) {
        let Some(set) = self.users.as_mut() else {
            return;
        };
        let conn = &self.conns[i];
        let ok = answered && set.accepts(conn.head.map(|h| h.status), conn.logged);
        let per_user = set.per_user();
        let (u, lead) = (i / per_user, i / per_user * per_user);
        // Counted outstanding as they are taken, before any starts: a start that fails at
        // once ends its request inside `start`, and must not see the view as done while its
        // siblings are still to go.
        let mut next = Vec::new();
        if set.ended(u, ok) {
            // The objects go out over every idle connection of the user, this one first.
            let idle = std::iter::once(i).chain((lead..lead + per_user).filter(|&c| c != i));
            for c in idle {
                if c == i || self.conns[c].phase == super::conn::Phase::Idle {
                    match set.next_object(u) {
                        Some(r) => next.push((c, r)),
                        None => break,
                    }
                }
            }
        } else {
            next.extend(set.next_object(u).map(|r| (i, r)));
        }
        if next.is_empty() && set.view_complete(u) {
            let think = set.view_ended(u, now, &self.shared);
            self.timers.push(Reverse((now + think, lead)));
            return;
        }
        for (c, request) in next {
            self.conns[c].chosen = Some(request);
            self.start(c, now, None);
        }
    }
}
