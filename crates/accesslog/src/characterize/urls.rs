//! The per-URL table, kept as entries stream by: memory follows the distinct URLs, not the
//! lines. A URL is the path with its query (`/?flav=rss20` is a resource of its own, as a
//! site's feed often is), unless the queries are folded into their paths.
//!
//! Beside the counts, the table keeps the instants of the references to a sample of the URLs
//! for their inter-reference times: every reference up to a bound, then those of the URLs
//! whose hash passes a level that rises (dropping half the URLs) each time the bound is
//! passed, as [`super::clients`] samples clients. The choice is by a hash of the URL, so
//! reproducible, and a URL kept has every one of its references.

// foldhash, not std's SipHash: one lookup per entry of a log of millions, keyed by
// strings a log's writer does not choose to collide (a hostile log could slow it, not break it).
use compact_str::CompactString;
use foldhash::HashMap;

use super::clients::hash;
use super::popularity::Ranked;
use super::{document_size, is_reference};
use crate::line::Entry;

/// Most URLs each list of [`UrlTable`] names.
pub const TOP_URLS: usize = 100;

/// One URL's counts.
#[derive(Debug, Clone, Copy)]
struct UrlStats {
    /// Index into the reference log's URL ids.
    id: u32,
    requests: u64,
    references: u64,
    bytes_sent: u64,
    not_found: u64,
    /// The largest body of a 200 response.
    size: Option<u64>,
}

impl UrlStats {
    /// Counts the entry; its URL's id when it is a reference.
    fn count(&mut self, e: &Entry) -> Option<u32> {
        self.requests += 1;
        self.bytes_sent += e.bytes;
        self.not_found += u64::from(e.status == 404);
        if let Some(bytes) = document_size(e) {
            self.size = Some(self.size.map_or(bytes, |s| s.max(bytes)));
        }
        if !is_reference(e) {
            return None;
        }
        self.references += 1;
        Some(self.id)
    }
}

/// The URLs as entries stream by.
#[derive(Debug, Clone)]
pub struct UrlCounter {
    fold_query: bool,
    /// Keyed by [`CompactString`]: most URLs are held in the key itself, so that a lookup
    /// compares it without a second cache miss.
    urls: HashMap<CompactString, UrlStats>,
    /// Per URL id: whether its references are still in the log.
    hashes: Vec<u64>,
    /// (URL id, second after `base`) of each reference of the URLs sampled, in arrival order.
    refs: Vec<(u32, i32)>,
    base: Option<i64>,
    max_refs: usize,
    level: u32,
    total_bytes: u64,
    key: CompactString,
}

/// One URL in a list of the report.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct UrlRow {
    /// The URL: path and query (path only when queries are folded).
    pub url: String,
    /// Requests with any status.
    pub requests: u64,
    /// Body bytes sent for it.
    pub bytes_sent: u64,
    /// Of the requests, those answered 404.
    pub not_found: u64,
}

/// The per-URL lists of the report: the most requested URLs, those that sent the most bytes,
/// and the most requested of those not found.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct UrlTable {
    /// Whether query strings were folded into their paths (`--fold-query`).
    pub query_folded: bool,
    /// Body bytes of every response, with or without a readable request.
    pub total_bytes: u64,
    /// Distinct URLs requested, whatever the status.
    pub distinct: usize,
    /// Requests answered 404.
    pub not_found_requests: u64,
    /// The [`TOP_URLS`] most requested.
    pub by_requests: Vec<UrlRow>,
    /// The [`TOP_URLS`] that sent the most bytes.
    pub by_bytes: Vec<UrlRow>,
    /// The [`TOP_URLS`] most requested of those answered 404, by their 404s.
    pub not_found: Vec<UrlRow>,
}

impl UrlCounter {
    /// An empty table; `max_refs` bounds the reference log.
    pub fn new(fold_query: bool, max_refs: usize) -> UrlCounter {
        UrlCounter {
            fold_query,
            urls: HashMap::default(),
            hashes: Vec::new(),
            refs: Vec::new(),
            base: None,
            max_refs: max_refs.max(1),
            level: 0,
            total_bytes: 0,
            key: CompactString::default(),
        }
    }

    /// Counts one entry logged at Unix second `t`.
    pub fn add(&mut self, e: &Entry, t: i64) {
        self.total_bytes += e.bytes;
        if !e.has_request() {
            return;
        }
        // The path is the key as it is, unless a query is kept with it.
        let key = match (&e.query, self.fold_query) {
            (Some(q), false) => {
                self.key.clear();
                self.key.push_str(&e.path);
                self.key.push('?');
                self.key.push_str(q);
                self.key.as_str()
            }
            _ => e.path.as_str(),
        };
        let id = match self.urls.get_mut(key) {
            Some(stats) => stats.count(e),
            None => {
                let id = self.hashes.len() as u32;
                self.hashes.push(hash(key));
                let mut stats = UrlStats {
                    id,
                    requests: 0,
                    references: 0,
                    bytes_sent: 0,
                    not_found: 0,
                    size: None,
                };
                let counted = stats.count(e);
                self.urls.insert(CompactString::new(key), stats);
                counted
            }
        };
        if let Some(id) = id {
            self.reference(id, t);
        }
    }

    fn reference(&mut self, id: u32, t: i64) {
        if !kept(self.hashes[id as usize], self.level) {
            return;
        }
        let base = *self.base.get_or_insert(t);
        let offset = (t - base).clamp(i32::MIN as i64, i32::MAX as i64) as i32;
        if self.refs.len() == self.max_refs {
            while self.refs.len() >= self.max_refs && self.level < 64 {
                self.level += 1;
                let (level, hashes) = (self.level, &self.hashes);
                self.refs.retain(|r| kept(hashes[r.0 as usize], level));
            }
            if !kept(self.hashes[id as usize], self.level) {
                return;
            }
        }
        self.refs.push((id, offset));
    }

    /// Each URL referenced at least once, with its id, references and size (unranked).
    pub(crate) fn referenced(&self) -> Vec<Ranked<'_>> {
        self.urls
            .iter()
            .filter(|(_, s)| s.references > 0)
            .map(|(url, s)| Ranked {
                id: s.id,
                url,
                references: s.references,
                size: s.size,
            })
            .collect()
    }

    /// The reference log: (URL id, Unix second) in arrival order.
    pub(crate) fn reference_log(&self) -> impl Iterator<Item = (u32, i64)> + '_ {
        let base = self.base.unwrap_or(0);
        self.refs.iter().map(move |&(id, s)| (id, base + s as i64))
    }

    /// Whether the URL's references are all in the log, and the share of URLs sampled.
    pub(crate) fn sampled(&self) -> (impl Fn(u32) -> bool + '_, f64) {
        let level = self.level;
        let share = 0.5f64.powi(level as i32);
        (move |id: u32| kept(self.hashes[id as usize], level), share)
    }

    /// The lists of the report.
    pub fn table(&self) -> UrlTable {
        let top = |key: &dyn Fn(&UrlStats) -> u64| {
            let mut rows: Vec<(&CompactString, &UrlStats)> =
                self.urls.iter().filter(|(_, s)| key(s) > 0).collect();
            let order = |a: &(&CompactString, &UrlStats), b: &(&CompactString, &UrlStats)| {
                key(b.1).cmp(&key(a.1)).then(a.0.cmp(b.0))
            };
            // Only the top few are wanted: partition them out, then sort those (a whole sort
            // of 200 000 URLs, ties broken by comparing them, took a tenth of the run).
            if rows.len() > TOP_URLS {
                rows.select_nth_unstable_by(TOP_URLS, order);
                rows.truncate(TOP_URLS);
            }
            rows.sort_unstable_by(order);
            rows.iter()
                .take(TOP_URLS)
                .map(|(url, s)| UrlRow {
                    url: url.to_string(),
                    requests: s.requests,
                    bytes_sent: s.bytes_sent,
                    not_found: s.not_found,
                })
                .collect()
        };
        UrlTable {
            query_folded: self.fold_query,
            total_bytes: self.total_bytes,
            distinct: self.urls.len(),
            not_found_requests: self.urls.values().map(|s| s.not_found).sum(),
            by_requests: top(&|s| s.requests),
            by_bytes: top(&|s| s.bytes_sent),
            not_found: top(&|s| s.not_found),
        }
    }
}

fn kept(hash: u64, level: u32) -> bool {
    level == 0 || hash.leading_zeros() >= level
}
