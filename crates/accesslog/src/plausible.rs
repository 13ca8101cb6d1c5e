//! Which logged instants are believed: the rule every reader of a log applies, so that
//! `characterize`, `fileset like` and `load --replay` agree on which lines are bad.
//!
//! A log line's time says how far apart requests were, and every figure built on time (the
//! bins of `characterize`, the span a replay runs for) takes memory or time in proportion to
//! the span from the first line to the last. One line dated year 1 or year 9999 among a
//! day's lines would make that span millennia. Such a line is not evidence of the site's
//! traffic but of a broken clock or a forged line, so it is a bad line, counted and shown
//! like any other: before 1990-01-01 (there was no Web server to log it), or more than a day
//! after the clock of the machine reading the log (no log holds its future; a day leaves room
//! for a clock that is a little off and for any time zone).
//!
//! The window is absolute, not relative to the log's median: a line is judged alone, as it
//! is read, so that a streaming reader can apply the same rule. Within the window a log may
//! still span decades; the figures that bin time cap their number of bins instead
//! (characterize's).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// 1990-01-01T00:00:00Z, Unix seconds: the earliest instant a line may carry.
pub const EARLIEST_UNIX: u64 = 631_152_000;
/// How far past the reading machine's clock a line may be.
pub const AHEAD: Duration = Duration::from_secs(86_400);

/// Why a logged `time` is not believed when read at `now`, or `None` when it is.
pub fn implausible_time(time: SystemTime, now: SystemTime) -> Option<&'static str> {
    if time < UNIX_EPOCH + Duration::from_secs(EARLIEST_UNIX) {
        Some("[time] before 1990: a broken clock or a forged line")
    } else if time > now + AHEAD {
        Some("[time] more than a day ahead of this machine's clock")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_runs_from_1990_to_a_day_past_now() {
        let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let at = |s: u64| UNIX_EPOCH + Duration::from_secs(s);
        assert_eq!(implausible_time(at(EARLIEST_UNIX), now), None);
        assert_eq!(implausible_time(now + AHEAD, now), None);
        assert!(implausible_time(at(EARLIEST_UNIX - 1), now)
            .unwrap()
            .contains("before 1990"));
        assert!(implausible_time(now + AHEAD + Duration::from_secs(1), now)
            .unwrap()
            .contains("ahead"));
        assert!(implausible_time(UNIX_EPOCH, now).is_some());
    }
}
