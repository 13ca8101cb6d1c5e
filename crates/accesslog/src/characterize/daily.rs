//! Visitors as GoAccess counts them: the requests of one client address with one user agent
//! on one day of the log (in the log's own time zone) are one visitor, so a client that comes
//! back the next day is a visitor again; a request answered 4xx makes no visitor (GoAccess's
//! default: its `--4xx-to-unique-count` adds them), so a client whose every request was
//! refused or not found is no visitor. Checked against GoAccess 1.7 on the logs of
//! `bench/characterize_vs_goaccess.py` (300 000 lines: 88 122 both) and against each status
//! one line at a time. Beside [`super::Clients`] (addresses, whatever the day, agent or
//! status) and [`super::sessions`] (a client and agent, ended by 30 minutes idle), a third
//! count of "who came", named so that each can be checked against the tool that uses it.
//!
//! Memory: a visitor is a 64-bit hash of (client, agent) and day, kept only while its day may
//! still get requests. The entries come in time order to within the reader's look-back, so a
//! day is counted and dropped once an entry two days later arrives; an entry for a day
//! already counted (a file out of order beyond the look-back) is counted as a visitor of
//! its own, which can only add. Past a bound of visitors held, the same adaptive hash sample
//! as [`super::clients`] (a visitor kept when the top `level` bits of its hash are zero),
//! with its error: about 1/√kept relative.

use std::collections::{BTreeSet, HashSet};
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};

/// GoAccess's unique visitors of a log.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
pub struct Visitors {
    /// Distinct (client, day, user agent) of the requests not answered 4xx; estimated when
    /// `exact` is false.
    pub distinct: u64,
    /// Days of the log with at least one visitor, in its own time zone.
    pub days: u64,
    /// Whether every visitor was counted; if not, a hash sample's estimate.
    pub exact: bool,
}

/// A hasher that passes a `u64` through: the visitors' keys are foldhash's output already,
/// so hashing them again is work for nothing on the thread that counts them.
#[derive(Debug, Clone, Copy, Default)]
struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is used (the keys are u64); any other input is folded in.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type Keys = HashSet<u64, BuildHasherDefault<PassThrough>>;

/// Distinct visitors a day, counted as the entries stream by.
#[derive(Debug, Clone)]
pub struct VisitorDays {
    max: usize,
    level: u32,
    /// The days still open, earliest first (one or two: the entries come in time order).
    open: Vec<(i64, Keys)>,
    /// Keys held in `open`.
    held: usize,
    /// Visitors of the days closed, each scaled by its sample's share.
    closed: f64,
    /// The days seen: at most one a day of the log's span, which the reader bounds (1990 to
    /// a day ahead of the clock).
    days: BTreeSet<i64>,
    last_day: Option<i64>,
}

impl VisitorDays {
    /// Counts exactly up to `max` visitors held at once, then samples.
    pub fn new(max: usize) -> VisitorDays {
        VisitorDays {
            max: max.max(1),
            level: 0,
            open: Vec::new(),
            held: 0,
            closed: 0.0,
            days: BTreeSet::new(),
            last_day: None,
        }
    }

    /// Counts a request of the client–agent pair hashed as `pair`, on `day` (days since
    /// 1970-01-01 in the log's zone).
    pub fn add(&mut self, pair: u64, day: i64) {
        if self.last_day != Some(day) {
            self.days.insert(day);
            self.last_day = Some(day);
            self.close_before(day - 1);
        }
        let key = foldhash::fast::FixedState::with_seed(0x0d15_7001).hash_one((pair, day));
        if !kept(key, self.level) {
            return;
        }
        // A day counted already that comes back opens again: its late visitors count anew.
        let at = match self.open.iter().position(|(d, _)| *d >= day) {
            Some(i) if self.open[i].0 == day => i,
            Some(i) => {
                self.open.insert(i, (day, Keys::default()));
                i
            }
            None => {
                self.open.push((day, Keys::default()));
                self.open.len() - 1
            }
        };
        if self.open[at].1.insert(key) {
            self.held += 1;
        }
        while self.held > self.max && self.level < 63 {
            self.level += 1;
            let level = self.level;
            for (_, keys) in &mut self.open {
                keys.retain(|&k| kept(k, level));
            }
            self.held = self.open.iter().map(|(_, k)| k.len()).sum();
        }
    }

    /// Counts and drops the days before `day`.
    fn close_before(&mut self, day: i64) {
        let ended = self.open.iter().take_while(|(d, _)| *d < day).count();
        for (_, keys) in self.open.drain(..ended) {
            self.held -= keys.len();
            self.closed += keys.len() as f64 * (1u64 << self.level) as f64;
        }
    }

    /// The figures, every day closed.
    pub fn finish(mut self) -> Visitors {
        self.close_before(i64::MAX);
        Visitors {
            distinct: self.closed.round() as u64,
            days: self.days.len() as u64,
            exact: self.level == 0,
        }
    }
}

fn kept(hash: u64, level: u32) -> bool {
    hash.leading_zeros() >= level
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pair_is_a_visitor_once_a_day_and_again_the_next_day() {
        let mut v = VisitorDays::new(100);
        for day in [19_000, 19_000, 19_001, 19_000, 19_003] {
            v.add(1, day);
        }
        v.add(2, 19_001);
        v.add(2, 19_001);
        // Pair 1 on three days, pair 2 on one of them: four visitors on three days.
        assert_eq!(
            v.finish(),
            Visitors {
                distinct: 4,
                days: 3,
                exact: true
            }
        );
    }

    #[test]
    fn a_day_already_counted_adds_its_late_visitors_but_not_a_day() {
        let mut v = VisitorDays::new(100);
        v.add(1, 10);
        v.add(1, 13); // day 10 closed
        v.add(2, 10); // late: pair 2 on day 10 is a visitor of its own
        let f = v.finish();
        assert_eq!((f.distinct, f.days), (3, 2));
    }

    #[test]
    fn past_the_bound_an_estimate_within_its_error() {
        // 20 000 pairs a day over 3 days through a bound of 2 000 held: within 3 standard
        // errors (1/√1000 each: under 10 %).
        let mut v = VisitorDays::new(2000);
        for day in 0..3 {
            for pair in 0..20_000u64 {
                v.add(pair.wrapping_mul(0x9e37_79b9_7f4a_7c15), day);
                v.add(pair.wrapping_mul(0x9e37_79b9_7f4a_7c15), day);
            }
        }
        let f = v.finish();
        assert!(!f.exact);
        assert!((f.distinct as f64 / 60_000.0 - 1.0).abs() < 0.1, "{f:?}");
        assert_eq!(f.days, 3);
    }
}
