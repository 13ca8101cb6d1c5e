//! Requests per client, and how concentrated they are: counted exactly up to a bound of
//! distinct clients, then on a sample of the clients chosen by a hash of the address.
//!
//! The sample is adaptive distinct sampling (Gibbons 2001, the idea behind KMV and
//! HyperLogLog sketches): a client is kept when the top `level` bits of its address's hash
//! are zero, and each time the kept clients pass the bound the level rises by one and the
//! clients no longer passing are dropped. A kept client's hash passed every earlier level, so
//! every one of its requests was counted: the sample is a uniform sample of the clients with
//! their exact counts, of share 2^-level. Hence the estimates, and their error:
//! - distinct clients: kept · 2^level, relative standard error about 1/√kept (kept is at
//!   least half the bound: 0.14 % for a bound of a million);
//! - median requests per client and the share of the busiest 10 %: those of the sample, a
//!   sample quantile's error (a few 1/√kept);
//! - mean requests per client: all requests over the estimated distinct count;
//! - the most requests from one client: the sample's, a lower bound.

// foldhash, not std's SipHash: one lookup per entry of a log of millions, keyed by
// strings a log's writer does not choose to collide (a hostile log could slow it, not break it).
use compact_str::CompactString;
use foldhash::HashMap;
use std::hash::{Hash, Hasher};

use webscope_model::stats::median;

/// The client figures. Addresses themselves are never reported.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Clients {
    /// Distinct clients (`%h` values); estimated when `exact` is false.
    pub distinct: usize,
    /// Mean requests per client.
    pub mean_requests: f64,
    /// Median requests per client.
    pub median_requests: f64,
    /// Most requests from one client (of those sampled, when not exact).
    pub max_requests: u64,
    /// Share of requests from the busiest 10 % of clients (at least one).
    pub top10_share: f64,
    /// Whether every client was counted; if not, the figures are a hash sample's (see the
    /// module doc for their error).
    pub exact: bool,
    /// Share of the clients sampled (1 when exact).
    pub sampled_share: f64,
}

/// Requests per client as entries stream by.
#[derive(Debug, Clone)]
pub struct ClientCounter {
    max: usize,
    /// A client is kept when the top `level` bits of its hash are zero.
    level: u32,
    counts: HashMap<CompactString, u64>,
    requests: u64,
}

impl ClientCounter {
    /// Counts exactly up to `max` distinct clients, then samples.
    pub fn new(max: usize) -> ClientCounter {
        ClientCounter {
            max: max.max(1),
            level: 0,
            counts: HashMap::default(),
            requests: 0,
        }
    }

    /// Counts one request from `client`.
    pub fn add(&mut self, client: &str) {
        self.requests += 1;
        if let Some(c) = self.counts.get_mut(client) {
            *c += 1;
            return;
        }
        if self.level > 0 && !kept(hash(client), self.level) {
            return;
        }
        self.counts.insert(CompactString::new(client), 1);
        while self.counts.len() > self.max && self.level < 63 {
            self.level += 1;
            let level = self.level;
            self.counts.retain(|c, _| kept(hash(c), level));
        }
    }

    /// The figures.
    /// The clients counted and their requests: every client while the count is exact, a
    /// sample chosen by hash past it.
    pub fn counted(&self) -> impl Iterator<Item = (&str, u64)> + '_ {
        self.counts.iter().map(|(c, &n)| (c.as_str(), n))
    }

    pub fn figures(&self) -> Clients {
        let mut counts: Vec<u64> = self.counts.values().copied().collect();
        counts.sort_unstable_by(|a, b| b.cmp(a));
        let n = counts.len();
        let total: u64 = counts.iter().sum();
        let as_f: Vec<f64> = counts.iter().map(|&c| c as f64).collect();
        let scale = (1u64 << self.level) as f64;
        let distinct = (n as f64 * scale).round() as usize;
        let requests = if self.level == 0 {
            total
        } else {
            self.requests
        };
        Clients {
            distinct,
            mean_requests: if n > 0 {
                requests as f64 / distinct as f64
            } else {
                0.0
            },
            median_requests: median(&as_f).unwrap_or(0.0),
            max_requests: counts.first().copied().unwrap_or(0),
            top10_share: if total > 0 {
                counts.iter().take(n.div_ceil(10)).sum::<u64>() as f64 / total as f64
            } else {
                0.0
            },
            exact: self.level == 0,
            sampled_share: 1.0 / scale,
        }
    }
}

/// A hash of a client that is the same in every run (`DefaultHasher::new` has fixed keys,
/// unlike a `HashMap`'s), so that the sample, and every figure drawn from it, is
/// reproducible.
pub(crate) fn hash(text: &str) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

fn kept(hash: u64, level: u32) -> bool {
    hash.leading_zeros() >= level
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_under_the_bound_sampled_over_it() {
        let mut c = ClientCounter::new(100);
        for i in 0..50 {
            for _ in 0..=(i % 3) {
                c.add(&format!("10.0.0.{i}"));
            }
        }
        let f = c.figures();
        assert!(f.exact);
        assert_eq!(
            (f.distinct, f.max_requests, f.median_requests),
            (50, 3, 2.0)
        );
        // 20 000 clients of 1 to 3 requests each through a bound of 2 000: the distinct count
        // within 3 standard errors (1/√1000 each: under 10 %), the median exactly.
        let mut c = ClientCounter::new(2000);
        for i in 0..20_000 {
            for _ in 0..=(i % 3) {
                c.add(&format!("client-{i}"));
            }
        }
        let f = c.figures();
        assert!(!f.exact && f.sampled_share < 0.2, "{f:?}");
        assert!((f.distinct as f64 / 20_000.0 - 1.0).abs() < 0.1, "{f:?}");
        assert_eq!((f.median_requests, f.max_requests), (2.0, 3));
        let requests: u64 = (0..20_000u64).map(|i| i % 3 + 1).sum();
        assert!((f.mean_requests - requests as f64 / f.distinct as f64).abs() < 1e-9);
    }
}
