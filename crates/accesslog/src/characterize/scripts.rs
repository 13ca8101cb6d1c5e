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
}

/// A session still open: where it stands, and its script when the sample chose it.
#[derive(Debug)]
struct Open {
    /// Its place among the sessions in the order they started, from 1.
    id: u64,
    last: i64,
    views: u64,
    requests: u64,
    /// The sample's slot chosen for it, and what it kept so far; `None` when not chosen, or
    /// evicted by a later session.
    script: Option<(usize, Vec<ScriptView>)>,
}

impl Open {
    fn is_cut(&self) -> bool {
        self.views > MAX_VIEWS as u64 || self.requests > MAX_REQUESTS as u64
    }
}

/// A slot of the sample: the session chosen for it, open or closed.
#[derive(Debug)]
enum Slot {
    Open(u64),
    Closed(u64, Script),
}

impl Slot {
    fn id(&self) -> u64 {
        match self {
            Slot::Open(id) | Slot::Closed(id, _) => *id,
        }
    }
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
    slots: Vec<Slot>,
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
            sessions: 0,
            page_views: 0,
            requests: 0,
            cut: 0,
        }
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
        // A session evicted from the sample by a later one stops keeping its requests.
        if let Some((slot, _)) = s.script {
            if self.slots.get(slot).map(Slot::id) != Some(s.id) {
                s.script = None;
            }
        }
        if !s.is_cut() {
            if let Some((_, views)) = s.script.as_mut() {
                record(views, step, e);
            }
        }
    }

    /// Starts the session of `v` (closing the one it replaces), choosing now whether the
    /// sample keeps it.
    fn start(&mut self, v: Visit, e: &Entry) {
        self.sessions += 1;
        self.page_views += 1;
        let id = self.sessions;
        let slot = self.choose(id);
        let fresh = Open {
            id,
            last: v.t,
            views: 1,
            requests: 1,
            script: slot.map(|slot| (slot, vec![view_of(e)])),
        };
        if let Some(old) = self.open.insert(v.key, fresh) {
            self.close(old);
        }
    }

    /// Algorithm R over the sessions in start order: the `id`-th takes a slot with
    /// probability `limit / id`, evicting the slot's holder.
    fn choose(&mut self, id: u64) -> Option<usize> {
        if self.slots.len() < self.limit {
            self.slots.push(Slot::Open(id));
            return Some(self.slots.len() - 1);
        }
        let draw = self.rng.below(id);
        let slot = self.slots.get_mut(usize::try_from(draw).ok()?)?;
        *slot = Slot::Open(id);
        Some(draw as usize)
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
        let cut = s.is_cut();
        self.cut += u64::from(cut);
        let Some((slot, views)) = s.script else {
            return;
        };
        if let Some(held) = self.slots.get_mut(slot).filter(|h| h.id() == s.id) {
            *held = Slot::Closed(s.id, Script { views, cut });
        }
    }

    /// The sample, every session closed (the log has ended).
    pub fn finish(mut self) -> Scripts {
        self.sweep(i64::MAX);
        let mut closed: Vec<(u64, Script)> = std::mem::take(&mut self.slots)
            .into_iter()
            .filter_map(|slot| match slot {
                Slot::Closed(id, script) => Some((id, script)),
                // Every session is closed by now; an open slot would be a bug, and is left out
                // rather than replayed empty.
                Slot::Open(_) => None,
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
    let summary = stream_logs(paths, options, &mut |e| collector.add(&e), &mut |_| {})?;
    Ok((collector.finish(), summary))
}

#[cfg(test)]
#[path = "scripts_tests.rs"]
mod tests;
