//! Whether an open-loop run kept the rate it was asked for: the one rule ([`not_sent_limit`])
//! that the run's own warning (`webscope load`'s summary and JSON), the lab's bottleneck
//! verdict and the objective's judge (capacity probes, replay runs) all apply, so that they
//! cannot disagree about which runs missed.
//!
//! Not for judging the server: a run that missed its rate measured the server at the rate the
//! generator managed, and says so; how fast the server answered is the latency's business.

use crate::report::text::thousands;
use webscope_report::human::pct_brief;

/// An open-loop run missed its rate when more than this share of its schedule's slots was
/// never sent (the same figure as `--threshold not_sent<=…`), or more than
/// [`NOT_SENT_ALLOWANCE_S`] of its schedule when that is more ([`not_sent_limit`]). The
/// open-loop test of a kept rate allows 1 % as well: a busy machine may deschedule the
/// generator across the run's last slot, which is then honestly counted as not sent.
pub const NOT_SENT_LIMIT: f64 = 0.01;

/// The schedule a run may leave unsent whatever its length: a scheduler's hiccup at the end of
/// a 1-s run on a busy machine is 5 % of it, and says nothing of the server.
pub const NOT_SENT_ALLOWANCE_S: f64 = 0.1;

/// The share of the slots due that a run of `duration_s` seconds may leave unsent and still
/// have kept its rate: [`NOT_SENT_LIMIT`], or [`NOT_SENT_ALLOWANCE_S`] of the run when more.
pub fn not_sent_limit(duration_s: f64) -> f64 {
    NOT_SENT_LIMIT.max(NOT_SENT_ALLOWANCE_S / duration_s.max(1e-3))
}

/// How an open-loop run fell short of its rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MissedRate {
    /// The rate asked (this generator's share of it, for a segment), requests per second.
    pub asked: f64,
    /// The rate the schedule's slots were sent at: asked minus the slots never sent.
    pub sent: f64,
    /// Slots never sent (no connection free in time before the run ended).
    pub not_sent: u64,
    /// `not_sent` over the slots that fell due (sent and completed or failed, and not sent).
    pub not_sent_share: f64,
    /// The share it was allowed ([`not_sent_limit`]).
    pub limit: f64,
}

/// The shortfall of an open-loop run at `asked` requests per second over `duration_s` seconds
/// that completed or failed `done` requests and never sent `not_sent`; None when it kept its
/// rate ([`not_sent_limit`]) or there is nothing to judge.
pub fn missed_rate(asked: f64, duration_s: f64, done: u64, not_sent: u64) -> Option<MissedRate> {
    let due = done + not_sent;
    if asked <= 0.0 || duration_s <= 0.0 || due == 0 {
        return None;
    }
    let not_sent_share = not_sent as f64 / due as f64;
    let limit = not_sent_limit(duration_s);
    (not_sent_share > limit).then(|| MissedRate {
        asked,
        sent: (asked - not_sent as f64 / duration_s).max(0.0),
        not_sent,
        not_sent_share,
        limit,
    })
}

impl MissedRate {
    /// The warning in words: what was asked, what was sent, what was not, and why.
    pub fn sentence(&self) -> String {
        format!(
            "open loop missed its rate: {} req/s asked, {} sent ({}); {} requests ({} of those due; limit {}) were never sent, no connection being free in time (all --max-connections busy, or the generator too slow): the figures describe the generator's pace, not the server at the rate asked",
            thousands(self.asked),
            thousands(self.sent),
            pct_brief(self.sent / self.asked),
            self.not_sent,
            pct_brief(self.not_sent_share),
            pct_brief(self.limit)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_missed_by_more_than_one_percent_is_named_with_its_figures() {
        // The run: 200 000 req/s asked for 2 s, 46 658 done, 352 616 never sent.
        let m = missed_rate(200_000.0, 2.0, 46_658, 352_616).expect("missed");
        assert!((m.sent - 23_692.0).abs() < 1.0, "{m:?}");
        let s = m.sentence();
        assert!(s.contains("200 000 req/s asked"), "{s}");
        assert!(s.contains("23 692 sent (12 %)"), "{s}");
        assert!(
            s.contains("352616 requests (88 % of those due; limit 5.0 %)"),
            "{s}"
        );
    }

    #[test]
    fn a_kept_rate_or_nothing_to_judge_is_no_miss() {
        assert_eq!(missed_rate(1000.0, 20.0, 19_800, 200), None);
        assert!(missed_rate(1000.0, 20.0, 19_799, 201).is_some());
        // A 1-s run may leave 100 ms of its schedule unsent.
        assert_eq!(missed_rate(1000.0, 1.0, 900, 100), None);
        assert!(missed_rate(1000.0, 1.0, 899, 101).is_some());
        assert!((not_sent_limit(1.0) - 0.1).abs() < 1e-12);
        assert!((not_sent_limit(15.0) - 0.01).abs() < 1e-12);
        assert_eq!(missed_rate(0.0, 1.0, 0, 5), None);
        assert_eq!(missed_rate(1000.0, 0.0, 0, 5), None);
        assert_eq!(missed_rate(1000.0, 1.0, 0, 0), None);
    }
}
