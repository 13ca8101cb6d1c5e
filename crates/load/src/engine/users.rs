//! `--users` on the HTTP/1.1 engine: each user's page views, on the user's own connections
//! (user `u` of the thread owns connections `u·C .. u·C+C`, opened when first needed) and
//! the engine's timers (a think time, and the stagger of the start, is a timer on the user's
//! first connection).
//!
//! A page view: the page on the first connection; when its answer has come, its objects
//! over the user's idle connections, each connection taking the next object as it frees;
//! when the last answer has come, the page load is recorded, the think time drawn (or the
//! logged one taken) and a timer set. A page that got no answer has no objects to fetch; a
//! page view with a failed request waits at least the connect backoff before the next, so
//! that a server that is down is not hammered by users without think times.

use std::cmp::Reverse;
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use webscope_workload::Rng;

use super::conn::nanos;
use super::{Engine, CONNECT_BACKOFF};
use crate::recorder::record;
use crate::requests::Requests;
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
            expect: crate::Expect::default(),
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
}

impl Engine {
    /// Sets each user's start, spread evenly over the ramp-up in the order of the run's users.
    pub(super) fn users_begin(&mut self, start: Instant) {
        let Some(set) = &self.users else {
            return;
        };
        let count = set.plan.count.max(1) as f64;
        for (u, user) in set.users.iter().enumerate() {
            let offset = set.plan.ramp_up.mul_f64(user.global as f64 / count);
            self.timers
                .push(Reverse((start + offset, u * set.per_user)));
        }
    }

    /// A user's think time (or its wait to start) ended: its next page view begins, in a new
    /// session after the last one's end.
    pub(super) fn user_wake(&mut self, lead: usize, now: Instant) {
        let shared = Rc::clone(&self.shared);
        let Some(set) = self.users.as_mut() else {
            return;
        };
        if now >= shared.end {
            return;
        }
        let u = lead / set.per_user;
        let mut recorder = shared.recorder.borrow_mut();
        match set.users[u].thinking.take() {
            Some(since) => record(&mut recorder.users.think, nanos(now, since)),
            None => shared.users_active.set(shared.users_active.get() + 1),
        }
        if set.users[u].view >= set.users[u].session.views.len() {
            let session = set.draw(&shared.requests);
            recorder.users.sessions += 1;
            let user = &mut set.users[u];
            user.session = session;
            user.view = 0;
        }
        drop(recorder);
        let user = &mut set.users[u];
        let Some(view) = user.session.views.get(user.view) else {
            // A logged sample without sessions: nothing to ask.
            return;
        };
        user.pending = view.objects.iter().copied().collect();
        user.outstanding = 1;
        user.page_answered = false;
        user.began = now;
        user.failed = false;
        self.conns[lead].chosen = Some(view.page);
        self.start(lead, now, None);
    }

    /// The exchange on connection `i` (a user's) ended; `answered`: with a response. Asks
    /// the view's next requests, or ends the view.
    pub(super) fn user_done(&mut self, i: usize, answered: bool, now: Instant) {
        let Some(set) = self.users.as_mut() else {
            return;
        };
        // As the run's account has it: a response of an expected status, or of the one the
        // log gave the request (a replay's rule).
        let conn = &self.conns[i];
        let ok = answered
            && conn
                .head
                .is_some_and(|h| set.expect.accepts(h.status) || conn.logged == Some(h.status));
        let per_user = set.per_user;
        let (u, lead) = (i / per_user, i / per_user * per_user);
        let user = &mut set.users[u];
        user.outstanding = user.outstanding.saturating_sub(1);
        user.failed |= !ok;
        let mut next = Vec::new();
        if !user.page_answered {
            user.page_answered = true;
            if !ok {
                user.pending.clear();
            }
            // The objects go out over every idle connection of the user, this one first.
            let idle = std::iter::once(i).chain((lead..lead + per_user).filter(|&c| c != i));
            for c in idle {
                if user.pending.is_empty() {
                    break;
                }
                if c == i || self.conns[c].phase == super::conn::Phase::Idle {
                    next.extend(user.pending.pop_front().map(|r| (c, r)));
                }
            }
        } else if let Some(r) = user.pending.pop_front() {
            next.push((i, r));
        }
        if next.is_empty() && user.outstanding == 0 {
            self.user_view_ended(u, now);
            return;
        }
        // Counted before any starts: a start that fails at once ends its request inside
        // `start`, and must not see the view as done while its siblings are still to go.
        user.outstanding += next.len();
        for (c, request) in next {
            self.conns[c].chosen = Some(request);
            self.start(c, now, None);
        }
    }

    fn user_view_ended(&mut self, u: usize, now: Instant) {
        let Some(set) = self.users.as_mut() else {
            return;
        };
        {
            let mut recorder = self.shared.recorder.borrow_mut();
            let stats = &mut recorder.users;
            stats.views += 1;
            if set.users[u].failed {
                stats.view_errors += 1;
            } else {
                record(&mut stats.page_load, nanos(now, set.users[u].began));
            }
        }
        let mut think = set.think_after(u);
        let user = &mut set.users[u];
        if user.failed {
            think = think.max(CONNECT_BACKOFF);
        }
        user.view += 1;
        user.thinking = Some(now);
        let lead = u * set.per_user;
        self.timers.push(Reverse((now + think, lead)));
    }
}
