//! Sessions and page views, from a log read in time order (issue 37): what a users' load
//! test needs to know of the site's users — how many requests and pages a visit makes, how
//! long it lasts, and how long its users think between pages.
//!
//! The definitions, exactly (the page states them, so that a count can be checked):
//! - A **session** is the requests of one client address with one user agent, ended by
//!   [`SESSION_GAP_S`] (30 min, `--session-gap`) without a request: the common web-analytics
//!   rule (GoAccess counts unique visitors per day by the same pair).
//! - A **page view** starts at each *page* — an HTML document, or a path without an extension
//!   (what a site's routes look like) — and holds the session's next requests for other
//!   objects as long as each comes within [`OBJECT_GAP_S`] of the one before: the embedded
//!   objects a browser fetches after parsing the page (SURGE's "active OFF" times, Barford &
//!   Crovella 1998, are mostly well under a second; CLF logs to the second, and a slow client
//!   fetches for a few seconds, hence 5 s). An object after a longer pause (a download, a
//!   deep-linked image) starts a page view of its own.
//! - A **think time** is from the last request of a page view to the first of the next one
//!   in the same session (SURGE's "inactive OFF" time; Pareto-tailed there, α ≈ 1.5 above 1 s).
//!
//! Memory: the sessions open within the last gap (one small record each), bounded by the
//! distinct client–agent pairs active in any 30 minutes, and a reservoir of think times.
//!
//! Not for: sessions by cookie or login (a log has neither), nor the page-view graph between
//! URLs (Menascé's CBMG), which needs the URLs of each step.

use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasher;

use super::hill::{self, TailFit};
use super::lognormal::Lognormal;
use super::traffic::DocType;

/// Seconds without a request that end a session (30 minutes).
pub const SESSION_GAP_S: i64 = 30 * 60;
/// Seconds within which an object joins the page view of the request before it.
pub const OBJECT_GAP_S: i64 = 5;
/// Think times kept one by one for the fits; past it, a uniform sample of them (reservoir).
pub const THINK_SAMPLE: usize = 1 << 20;

/// Whether a path is a page (starts a page view): an HTML document, or a path without an
/// extension.
pub fn is_page(path: &str) -> bool {
    matches!(DocType::of(path), DocType::Html | DocType::Unknown)
}

/// A session still open: its first and last request, its counts, and where its current page
/// view stands.
#[derive(Debug, Clone, Copy)]
struct Open {
    first: i64,
    last: i64,
    requests: u64,
    page_views: u64,
}

/// Sessions and page views counted as the entries come.
#[derive(Debug, Clone)]
pub struct SessionCounter {
    gap_s: i64,
    open: HashMap<u64, Open, foldhash::fast::FixedState>,
    swept_at: i64,
    sessions: u64,
    single_request: u64,
    page_views: u64,
    requests_per_session: BTreeMap<u64, u64>,
    views_per_session: BTreeMap<u64, u64>,
    /// Seconds from a session's first request to its last, per multi-request session.
    durations: BTreeMap<u64, u64>,
    think: Reservoir,
}

impl SessionCounter {
    /// Sessions ended by `gap_s` seconds without a request.
    pub fn new(gap_s: i64) -> SessionCounter {
        SessionCounter {
            gap_s: gap_s.max(1),
            open: HashMap::with_hasher(foldhash::fast::FixedState::with_seed(1)),
            swept_at: i64::MIN,
            sessions: 0,
            single_request: 0,
            page_views: 0,
            requests_per_session: BTreeMap::new(),
            views_per_session: BTreeMap::new(),
            durations: BTreeMap::new(),
            think: Reservoir::new(THINK_SAMPLE),
        }
    }

    /// Counts a request of `client` with user agent `agent` at `t` (Unix seconds) for `path`.
    /// Requests come in time order; one a little out of order joins its session as if on
    /// time.
    pub fn add(&mut self, client: &str, agent: &str, t: i64, path: &str) {
        self.visit(Visit::of(client, agent, t, path));
    }

    /// Counts one request, its visitor already hashed ([`Visit::of`]).
    pub(super) fn visit(&mut self, v: Visit) {
        let t = v.t;
        if sweep_due(self.swept_at, t, self.gap_s) {
            self.sweep(t);
        }
        let open = self.open.get_mut(&v.key);
        let step = v.step(open.as_ref().map(|s| s.last), self.gap_s);
        match (step, open) {
            (Step::View { think_s }, Some(s)) => {
                self.think.add(think_s as f64);
                s.page_views += 1;
                s.requests += 1;
                s.last = s.last.max(t);
            }
            (Step::Object, Some(s)) => {
                s.requests += 1;
                s.last = s.last.max(t);
            }
            _ => {
                let fresh = Open {
                    first: t,
                    last: t,
                    requests: 1,
                    page_views: 1,
                };
                if let Some(old) = self.open.insert(v.key, fresh) {
                    self.close(old);
                }
            }
        }
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
        self.sessions += 1;
        self.page_views += s.page_views;
        *self.requests_per_session.entry(s.requests).or_default() += 1;
        *self.views_per_session.entry(s.page_views).or_default() += 1;
        if s.requests == 1 {
            self.single_request += 1;
        } else {
            *self.durations.entry((s.last - s.first) as u64).or_default() += 1;
        }
    }

    /// The figures, every session closed (the log has ended).
    pub fn finish(mut self) -> Sessions {
        self.sweep(i64::MAX);
        let think = self.think.values();
        Sessions {
            gap_s: self.gap_s as u64,
            object_gap_s: OBJECT_GAP_S as u64,
            sessions: self.sessions,
            single_request: self.single_request,
            page_views: self.page_views,
            requests_per_session: Spread::of(&self.requests_per_session),
            page_views_per_session: Spread::of(&self.views_per_session),
            duration_s: Spread::of(&self.durations),
            think: ThinkTimes::of(&think, self.think.seen, self.think.sum),
        }
    }
}

/// One request as sessions see it: its visitor (client and user agent, hashed), its time,
/// and whether it is a page.
#[derive(Debug, Clone, Copy)]
pub(super) struct Visit {
    pub(super) key: u64,
    pub(super) t: i64,
    page: bool,
}

/// What a request is to its visitor's session, by the module's definitions: one rule for
/// [`SessionCounter`] and the replayable scripts (`scripts.rs`), so that both cut a log alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    /// It starts a session: none is open, or the open one's last request is over a gap ago.
    Session,
    /// It starts a page view, `think_s` seconds after the session's last request.
    View { think_s: i64 },
    /// It is one more object of the current page view.
    Object,
}

/// Whether a collector that last swept at `swept_at` sweeps before a request at `t`: once a
/// gap, so that the sessions closed and the order of the requests that follow are the same
/// for every collector.
pub(super) fn sweep_due(swept_at: i64, t: i64, gap_s: i64) -> bool {
    t >= swept_at.saturating_add(gap_s)
}

/// Whether a session whose last request was at `last` has ended at `now`.
/// The keys of the sessions in `open` whose last request (`last` of each) lies more than
/// `gap_s` before `now`: the ones a sweep closes (the counter's and the scripts' alike).
pub(super) fn ended<T, S>(
    open: &HashMap<u64, T, S>,
    now: i64,
    gap_s: i64,
    last: impl Fn(&T) -> i64,
) -> Vec<u64> {
    open.iter()
        .filter(|(_, s)| has_ended(last(s), now, gap_s))
        .map(|(&k, _)| k)
        .collect()
}

fn has_ended(last: i64, now: i64, gap_s: i64) -> bool {
    now.saturating_sub(last) > gap_s
}

impl Visit {
    /// The request of `client` with user agent `agent` at `t` for `path`.
    pub(super) fn of(client: &str, agent: &str, t: i64, path: &str) -> Visit {
        // 64 bits: two visitors of a day's 10^6 collide with probability about 10^-7.
        let key = foldhash::fast::FixedState::with_seed(0x5e55_1015).hash_one((client, agent));
        Visit {
            key,
            t,
            page: is_page(path),
        }
    }

    /// What this request is to its visitor's open session, whose last request was at `last`
    /// (`None`: no session open).
    pub(super) fn step(&self, last: Option<i64>, gap_s: i64) -> Step {
        match last {
            Some(last) if self.t - last <= gap_s => {
                // A request a little out of order has a negative pause: it joins as if on time.
                let pause = self.t - last;
                if self.page || pause > OBJECT_GAP_S {
                    Step::View {
                        think_s: pause.max(0),
                    }
                } else {
                    Step::Object
                }
            }
            _ => Step::Session,
        }
    }
}

/// A uniform sample of at most `cap` values (Vitter's algorithm R), deterministic: its
/// choices come from the count of values seen, so the same log gives the same sample.
#[derive(Debug, Clone)]
struct Reservoir {
    cap: usize,
    seen: u64,
    sum: f64,
    values: Vec<f64>,
}

impl Reservoir {
    fn new(cap: usize) -> Reservoir {
        Reservoir {
            cap,
            seen: 0,
            sum: 0.0,
            values: Vec::new(),
        }
    }

    fn add(&mut self, v: f64) {
        self.seen += 1;
        self.sum += v;
        if self.values.len() < self.cap {
            self.values.push(v);
            return;
        }
        let draw = splitmix64(self.seen) % self.seen;
        if let Some(slot) = self.values.get_mut(draw as usize) {
            *slot = v;
        }
    }

    fn values(&self) -> Vec<f64> {
        self.values.clone()
    }
}

/// SplitMix64's output for `x` (Steele, Lea & Flood 2014): a well-mixed 64-bit value per
/// counter, so that the reservoir's choices need no generator state.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Sessions and page views of a log (see the module's definitions).
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
pub struct Sessions {
    /// Seconds without a request that end a session.
    pub gap_s: u64,
    /// Seconds within which an object joins the page view before it.
    pub object_gap_s: u64,
    /// Sessions in the log.
    pub sessions: u64,
    /// Sessions of one request (crawlers, monitors, a single hit from a link).
    pub single_request: u64,
    /// Page views in all sessions.
    pub page_views: u64,
    /// Requests in a session.
    pub requests_per_session: Spread,
    /// Page views in a session.
    pub page_views_per_session: Spread,
    /// From the first request to the last, sessions of more than one request.
    pub duration_s: Spread,
    /// Think times between a session's page views.
    pub think: ThinkTimes,
}

impl Sessions {
    /// The definitions these figures were counted by, in words, with this log's gaps: what an
    /// independent count must apply to reproduce them.
    pub fn definition(&self) -> String {
        format!(
            "A session is the requests of one client address with one user agent (every logged request with a readable request line, whatever its status), ended by {} without a request. A page view starts at each page (an HTML document, or a path without an extension) and holds the session's next requests for other objects while each comes within {} s of the request before it; an object after a longer pause starts a page view of its own. A think time runs from the last request of a page view to the first of the next in the same session, in whole seconds (the log's resolution).",
            gap_words(self.gap_s),
            self.object_gap_s
        )
    }
}

/// `1800` → "30 min", `90` → "90 s", `7200` → "2 h".
fn gap_words(s: u64) -> String {
    match s {
        s if s % 3600 == 0 => format!("{} h", s / 3600),
        s if s % 60 == 0 => format!("{} min", s / 60),
        s => format!("{s} s"),
    }
}

/// A count distribution's summary.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
pub struct Spread {
    /// The mean.
    pub mean: f64,
    /// The median, as `webscope_model::stats::median` defines it (the two middle values
    /// averaged when their number is even).
    pub median: f64,
    /// The 90th percentile (nearest rank).
    pub p90: u64,
    /// The largest.
    pub max: u64,
}

impl Spread {
    fn of(counts: &BTreeMap<u64, u64>) -> Spread {
        let n: u64 = counts.values().sum();
        if n == 0 {
            return Spread::default();
        }
        let sum: f64 = counts.iter().map(|(&v, &c)| v as f64 * c as f64).sum();
        // The value at a rank (1 = the smallest) of the counted values, sorted.
        let by_rank = |rank: u64| {
            let mut seen = 0;
            for (&v, &c) in counts {
                seen += c;
                if seen >= rank {
                    return v;
                }
            }
            0
        };
        let median = if n % 2 == 1 {
            by_rank(n.div_ceil(2)) as f64
        } else {
            (by_rank(n / 2) + by_rank(n / 2 + 1)) as f64 / 2.0
        };
        Spread {
            mean: sum / n as f64,
            median,
            // Nearest rank, the rank `webscope_model::stats::quantile` reads a sorted list at.
            p90: webscope_model::stats::nearest_rank(0.9, n).map_or(0, by_rank),
            max: counts.keys().next_back().copied().unwrap_or(0),
        }
    }
}

/// Think times between page views, seconds (whole seconds: CLF's resolution).
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
pub struct ThinkTimes {
    /// Think times in the log (the fits use a sample of [`THINK_SAMPLE`] of them past that).
    pub count: u64,
    /// Mean, seconds (exact, over all of them): the think time Z of the interactive response
    /// time law and of MVA.
    pub mean_s: f64,
    /// Median, seconds (of the sample past [`THINK_SAMPLE`]).
    pub median_s: f64,
    /// Share under one second (logged as 0: the next page came within the same second).
    pub under_1s: f64,
    /// The lognormal fit of the think times of 1 s and more.
    pub lognormal: Option<Lognormal>,
    /// The Pareto tail (Hill, cut by Clauset–Shalizi–Newman) of the think times.
    pub pareto_tail: Option<TailFit>,
}

impl ThinkTimes {
    fn of(sample: &[f64], count: u64, sum: f64) -> ThinkTimes {
        let mut sorted = sample.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let mean_s = if count == 0 { 0.0 } else { sum / count as f64 };
        let median_s = webscope_model::stats::median(&sorted).unwrap_or(0.0);
        let under = sorted.iter().take_while(|&&v| v < 1.0).count();
        let positive = &sorted[under..];
        let desc: Vec<f64> = positive.iter().rev().copied().collect();
        ThinkTimes {
            count,
            mean_s,
            median_s,
            under_1s: if n == 0 { 0.0 } else { under as f64 / n as f64 },
            lognormal: Lognormal::fit(positive.iter().copied()),
            pareto_tail: hill::fit_tail_top(&desc, desc.len()),
        }
    }
}

#[cfg(test)]
#[path = "sessions_tests.rs"]
mod tests;
