//! The log's sessions as scripts a load generator can replay (issue 37, item 2): each one the
//! requests of a real visit, page view by page view, with the think times between them, so
//! that `webscope load --users N --sessions LOG` can have each virtual user play a session
//! drawn from the site's own users.
//!
//! The sessions, page views and think times are exactly those of [`super::sessions`] (the same
//! rule, `Step`, cuts both): a [`ScriptCollector`] and a [`SessionCounter`] given the same log
//! find the same sessions and page views. One addition: a session that starts with objects
//! before any page has them as a leading page view whose `page` is its first request (the
//! counter counts that view too).
//!
//! What a script keeps of a request: its method, target (path and query, as `--replay` sends
//! it), status and bytes; of its timing, only the think time before the next page view, in
//! whole seconds as the log has it (CLF). When an object came within its page view is not
//! kept: a browser fetches them as fast as it can.
//!
//! Memory is bounded whatever the log's length: the sample is a uniform one of at most
//! `limit` sessions (Vitter's algorithm R over the sessions in the order they start, drawn
//! with the seeded [`Rng`]), and the choice is made when a session starts, so only the
//! sessions chosen, open or closed, hold their requests; the others hold a few counters
//! while open, as [`SessionCounter`]'s do. A session longer than [`MAX_VIEWS`] page views or
//! [`MAX_REQUESTS`] requests (a crawler's of 100 000 requests) is cut there and counted: its
//! script holds its start. The sample is the same for a given log and seed, whatever
//! [`ReadOptions::threads`]: the entries come in the same order.
//!
//! And bounded whatever the log's lines: the scripts held, open or closed, stay within a byte
//! budget ([`SCRIPT_BUDGET`]; a request counts its target, its method and
//! [`REQUEST_BYTES`]). One script holds at most a sixteenth of it, and is cut there; when
//! the sample's scripts pass it, slots drawn at random are emptied until they hold three
//! quarters of it, and the sample goes on with that many slots (a uniform sample of a
//! uniform sample is uniform). [`Scripts::budget_cut`] says so. Before, a log of 3 000
//! sessions with URLs of 60 KB held 5.3 GB (issue 51, item 9).
//!
//! Not for: a model of the sessions (a Customer Behavior Model Graph, fitted distributions:
//! `Sessions` has the fits), nor the log's timing within a page view, nor sessions by cookie.
//!
//! [`SessionCounter`]: super::sessions::SessionCounter

use std::collections::HashMap;
use std::path::PathBuf;

use compact_str::{format_compact, CompactString};
use webscope_workload::Rng;

use super::sessions::{ended, sweep_due, Step, Visit, OBJECT_GAP_S};
use crate::line::Entry;
use crate::stream::{stream_logs, ReadOptions, ReadSummary};
use crate::Error;

/// Most page views a script keeps of one session; the session is cut past it.
pub const MAX_VIEWS: usize = 1_000;
/// Most requests a script keeps of one session (a single page view of objects may be long,
/// a crawler fetching images a second apart); the session is cut past it.
pub const MAX_REQUESTS: usize = 10_000;
/// Bytes the sample's scripts may hold: 32 MiB, far above a sample of ordinary sessions
/// (10 000 of 20 requests of 80-byte URLs are 19 MB), and small enough that what is made of
/// them (the distinct requests prebuilt, a config carrying them to a segment) stays a few
/// times that.
pub const SCRIPT_BUDGET: usize = 32 << 20;
/// What a request of a script costs beside its target's and method's bytes (its fields, its
/// place in a vector).
pub const REQUEST_BYTES: usize = 96;

/// A request as the log had it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptRequest {
    /// The method (`GET`, `HEAD`, ...).
    pub method: CompactString,
    /// The target: the path, and `?` and the query when the request had one.
    pub target: CompactString,
    /// The status the server logged, so that a replay can tell an expected 404 from a new one.
    pub status: u16,
    /// Body bytes the server logged.
    pub bytes: u64,
}

impl ScriptRequest {
    fn of(e: &Entry) -> ScriptRequest {
        ScriptRequest {
            method: e.method.clone(),
            target: match &e.query {
                Some(query) => format_compact!("{}?{query}", e.path),
                None => e.path.clone(),
            },
            status: e.status,
            bytes: e.bytes,
        }
    }
}

/// One page view of a session: the page's request, then its objects, then the think time
/// before the next page view.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptView {
    /// The page (or, for a view that starts with an object, that object).
    pub page: ScriptRequest,
    /// The requests that joined the view, in log order.
    pub objects: Vec<ScriptRequest>,
    /// Seconds from this view's last request to the next view's first (whole seconds, as the
    /// log has them); `None` after the script's last view.
    pub think_s: Option<f64>,
}

/// One session of the log, to replay.
#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    /// Its page views, in order.
    pub views: Vec<ScriptView>,
    /// Whether the session went on past [`MAX_VIEWS`] or [`MAX_REQUESTS`]: the views are its
    /// start only.
    pub cut: bool,
}

impl Script {
    /// Requests in the script (pages and objects).
    pub fn requests(&self) -> usize {
        self.views.iter().map(|v| 1 + v.objects.len()).sum()
    }
}

/// A uniform sample of a log's sessions as scripts, and what it is a sample of.
#[derive(Debug, Clone, PartialEq)]
pub struct Scripts {
    /// The sessions sampled, at most `limit`, in the order they started in the log.
    pub scripts: Vec<Script>,
    /// Sessions in the log: the sample's population.
    pub sessions: u64,
    /// Page views in all the log's sessions.
    pub page_views: u64,
    /// Requests in all the log's sessions (entries with a readable request).
    pub requests: u64,
    /// Requests in `scripts`.
    pub kept_requests: u64,
    /// Sessions of the log cut at [`MAX_VIEWS`] or [`MAX_REQUESTS`] (of all, not only of the
    /// sample's).
    pub cut: u64,
    /// Seconds without a request that ended a session.
    pub gap_s: u64,
    /// Seconds within which an object joined the page view before it.
    pub object_gap_s: u64,
    /// Most sessions the sample could hold.
    pub limit: usize,
    /// The seed the sample was drawn with.
    pub seed: u64,
    /// The byte budget of the scripts ([`SCRIPT_BUDGET`] unless set otherwise).
    pub budget: usize,
    /// The budget made the sample smaller than `limit` (to `scripts.len()` sessions at the
    /// end), or cut a script's requests: say so where the sample is used.
    pub budget_cut: bool,
    /// Scripts of the sample cut at their share of the budget (a sixteenth of it).
    pub cut_for_bytes: u64,
    /// Whether the log is sampled by the clock or gapped (`characterize`'s rule; set by
    /// [`session_scripts`], default for a collector fed by hand): a sampled log's sessions
    /// end at its minutes' edges, and its think times are those within them.
    pub coverage: super::Coverage,
}

/// A session still open: where it stands, and its slot when the sample chose it.
#[derive(Debug)]
struct Open {
    /// Its place among the sessions in the order they started, from 1.
    id: u64,
    last: i64,
    views: u64,
    requests: u64,
    /// The sample's slot chosen for it; the slot's script is its own while the slot holds
    /// its `id` (a later session may take the slot).
    slot: Option<usize>,
}

impl Open {
    fn is_cut(&self) -> bool {
        self.views > MAX_VIEWS as u64 || self.requests > MAX_REQUESTS as u64
    }
}

/// A slot of the sample: the session chosen for it, open or closed, and its script so far.
#[derive(Debug)]
struct Slot {
    id: u64,
    open: bool,
    views: Vec<ScriptView>,
    /// What `views` costs against the budget.
    bytes: usize,
    /// Cut at its share of the budget.
    cut: bool,
}

/// What a request costs against the budget.
fn cost(e: &Entry) -> usize {
    REQUEST_BYTES + e.method.len() + e.path.len() + e.query.as_ref().map_or(0, |q| q.len() + 1)
}

/// Scripts collected as the entries come, in time order ([`stream_logs`]'s).
#[derive(Debug)]
pub struct ScriptCollector {
    gap_s: i64,
    limit: usize,
    seed: u64,
    rng: Rng,
    open: HashMap<u64, Open, foldhash::fast::FixedState>,
    swept_at: i64,
    /// Slots by index; an emptied one is `None`, so that the others keep their index.
    slots: Vec<Option<Slot>>,
    /// The indices of the slots in use: the sample's size is its length.
    live: Vec<usize>,
    /// Bytes the live slots' scripts cost.
    held: usize,
    budget: usize,
    budget_cut: bool,
    cut_for_bytes: u64,
    sessions: u64,
    page_views: u64,
    requests: u64,
    cut: u64,
}

impl ScriptCollector {
    /// Sessions ended by `gap_s` seconds without a request (at least 1, as
    /// [`super::sessions::SessionCounter`] has it); a sample of at most `limit` of them,
    /// drawn with `seed`.
    pub fn new(gap_s: i64, limit: usize, seed: u64) -> ScriptCollector {
        ScriptCollector {
            gap_s: gap_s.max(1),
            limit,
            seed,
            rng: Rng::for_stream(seed, "session scripts"),
            open: HashMap::with_hasher(foldhash::fast::FixedState::with_seed(1)),
            swept_at: i64::MIN,
            slots: Vec::new(),
            live: Vec::new(),
            held: 0,
            budget: SCRIPT_BUDGET,
            budget_cut: false,
            cut_for_bytes: 0,
            sessions: 0,
            page_views: 0,
            requests: 0,
            cut: 0,
        }
    }

    /// The same collector with a byte budget of `budget` for its scripts (tests: a small one).
    pub fn with_budget(mut self, budget: usize) -> ScriptCollector {
        self.budget = budget.max(1);
        self
    }

    /// Takes an entry; one without a readable request is no part of a session.
    pub fn add(&mut self, e: &Entry) {
        if !e.has_request() {
            return;
        }
        let agent = e.user_agent.as_deref().unwrap_or("");
        let v = Visit::of(&e.client, agent, super::unix(e), &e.path);
        if sweep_due(self.swept_at, v.t, self.gap_s) {
            self.sweep(v.t);
        }
        self.requests += 1;
        let open = self.open.get_mut(&v.key);
        let step = v.step(open.as_ref().map(|s| s.last), self.gap_s);
        let Some(s) = open.filter(|_| step != Step::Session) else {
            self.start(v, e);
            return;
        };
        s.requests += 1;
        s.last = s.last.max(v.t);
        if let Step::View { .. } = step {
            s.views += 1;
            self.page_views += 1;
        }
        if s.is_cut() {
            return;
        }
        // A session whose slot a later one took keeps its requests no more.
        let Some(slot) = s.slot else {
            return;
        };
        let id = s.id;
        let Some(held) = self.slots.get_mut(slot).and_then(Option::as_mut) else {
            return;
        };
        if held.id != id || held.cut {
            return;
        }
        let bytes = cost(e);
        if held.bytes + bytes > self.budget / 16 {
            held.cut = true;
            self.cut_for_bytes += 1;
            self.budget_cut = true;
            return;
        }
        record(&mut held.views, step, e);
        held.bytes += bytes;
        self.held += bytes;
        self.keep_to_budget();
    }

    /// Starts the session of `v` (closing the one it replaces), choosing now whether the
    /// sample keeps it.
    fn start(&mut self, v: Visit, e: &Entry) {
        self.sessions += 1;
        self.page_views += 1;
        let id = self.sessions;
        let slot = self.choose(id);
        if let Some(held) = slot
            .and_then(|i| self.slots.get_mut(i))
            .and_then(Option::as_mut)
        {
            let bytes = cost(e);
            held.views.push(view_of(e));
            held.bytes = bytes;
            self.held += bytes;
        }
        let fresh = Open {
            id,
            last: v.t,
            views: 1,
            requests: 1,
            slot,
        };
        if let Some(old) = self.open.insert(v.key, fresh) {
            self.close(old);
        }
        self.keep_to_budget();
    }

    /// Algorithm R over the sessions in start order: the `id`-th takes a slot with
    /// probability `limit / id` (the sample's size, once the budget made it smaller),
    /// emptying the slot of its holder.
    fn choose(&mut self, id: u64) -> Option<usize> {
        let fresh = Slot {
            id,
            open: true,
            views: Vec::new(),
            bytes: 0,
            cut: false,
        };
        if self.live.len() < self.limit {
            self.slots.push(Some(fresh));
            self.live.push(self.slots.len() - 1);
            return self.live.last().copied();
        }
        let draw = usize::try_from(self.rng.below(id)).ok()?;
        let index = *self.live.get(draw)?;
        let old = self.slots.get_mut(index)?.replace(fresh);
        self.held -= old.map_or(0, |o| o.bytes);
        Some(index)
    }

    /// Past the budget, empties slots drawn at random until the scripts hold three quarters
    /// of it, and keeps the sample at that many slots from then on.
    fn keep_to_budget(&mut self) {
        if self.held <= self.budget {
            return;
        }
        while self.held > self.budget / 4 * 3 && self.live.len() > 1 {
            let k = self.rng.below(self.live.len() as u64) as usize;
            let index = self.live.swap_remove(k);
            let emptied = self.slots.get_mut(index).and_then(Option::take);
            self.held -= emptied.map_or(0, |s| s.bytes);
        }
        self.limit = self.live.len();
        self.budget_cut = true;
    }

    /// Closes the sessions whose last request lies more than a gap before `now`.
    fn sweep(&mut self, now: i64) {
        for key in ended(&self.open, now, self.gap_s, |s| s.last) {
            if let Some(s) = self.open.remove(&key) {
                self.close(s);
            }
        }
        self.swept_at = now;
    }

    fn close(&mut self, s: Open) {
        self.cut += u64::from(s.is_cut());
        let Some(slot) = s.slot else {
            return;
        };
        if let Some(held) = self.slots.get_mut(slot).and_then(Option::as_mut) {
            if held.id == s.id {
                held.open = false;
                held.cut |= s.is_cut();
            }
        }
    }

    /// The sample, every session closed (the log has ended).
    pub fn finish(mut self) -> Scripts {
        self.sweep(i64::MAX);
        let mut closed: Vec<(u64, Script)> = std::mem::take(&mut self.slots)
            .into_iter()
            .flatten()
            // Every session is closed by now; an open slot would be a bug, and is left out
            // rather than replayed empty.
            .filter(|slot| !slot.open)
            .map(|slot| {
                (
                    slot.id,
                    Script {
                        views: slot.views,
                        cut: slot.cut,
                    },
                )
            })
            .collect();
        closed.sort_by_key(|(id, _)| *id);
        let scripts: Vec<Script> = closed.into_iter().map(|(_, s)| s).collect();
        Scripts {
            kept_requests: scripts.iter().map(|s| s.requests() as u64).sum(),
            scripts,
            sessions: self.sessions,
            page_views: self.page_views,
            requests: self.requests,
            cut: self.cut,
            gap_s: self.gap_s as u64,
            object_gap_s: OBJECT_GAP_S as u64,
            limit: self.limit,
            seed: self.seed,
            budget: self.budget,
            budget_cut: self.budget_cut,
            cut_for_bytes: self.cut_for_bytes,
            coverage: super::Coverage::default(),
        }
    }
}

fn view_of(e: &Entry) -> ScriptView {
    ScriptView {
        page: ScriptRequest::of(e),
        objects: Vec::new(),
        think_s: None,
    }
}

/// Adds `e`, a request that `step` places in a session already started, to its script's
/// `views`. The caller checks the caps: a script chosen at its session's start holds every
/// request of it until the session is cut.
fn record(views: &mut Vec<ScriptView>, step: Step, e: &Entry) {
    match (step, views.last_mut()) {
        (Step::View { think_s }, Some(last)) => {
            last.think_s = Some(think_s as f64);
            views.push(view_of(e));
        }
        (Step::Object, Some(last)) => last.objects.push(ScriptRequest::of(e)),
        // A session's first request made its first view (`start`).
        _ => {}
    }
}

/// The sessions of the logs at `paths` as a uniform sample of at most `limit` scripts drawn
/// with `seed`, sessions ended by `gap_s` seconds without a request ([`SESSION_GAP_S`] is the
/// usual 30 min). A log without one readable request gives no scripts and `sessions` 0: the
/// caller says so. Errors are the reader's ([`stream_logs`]).
///
/// [`SESSION_GAP_S`]: super::sessions::SESSION_GAP_S
pub fn session_scripts(
    paths: &[PathBuf],
    options: &ReadOptions,
    gap_s: i64,
    limit: usize,
    seed: u64,
) -> Result<(Scripts, ReadSummary), Error> {
    let mut collector = ScriptCollector::new(gap_s, limit, seed);
    let mut minutes = super::MinuteCounts::default();
    let summary = stream_logs(
        paths,
        options,
        &mut |e| {
            let t = e
                .time
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            minutes.add(t as i64);
            collector.add(&e)
        },
        &mut |_| {},
    )?;
    let mut scripts = collector.finish();
    scripts.coverage = minutes.coverage();
    Ok((scripts, summary))
}

#[cfg(test)]
#[path = "scripts_tests.rs"]
mod tests;
