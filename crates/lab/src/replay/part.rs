//! What of the log one replay run plays: the log's time that holds traffic ([`Timeline`]:
//! a clock-sampled log's minutes, or a gapped log's time between its gaps, back to back),
//! and the run's windows in it ([`Part`]).
//!
//! Why the timeline: a log sampled by the clock (all but 1 % of its requests in minute :05
//! of each hour) has 59 empty minutes in each hour; windows drawn over its whole span fell
//! in them, and the experiment stopped before its first run (issue 52: "no request of the
//! log falls in the run's windows"). Which logs are sampled or gapped is `characterize`'s
//! rule (webscope-accesslog's coverage), read in the replay's first pass; not a second one.

use std::time::{Duration, UNIX_EPOCH};

use webscope_load::replay::{LoggedRequest, Replay};
use webscope_load::replay_log::{sampled_words, Coverage};
use webscope_report::human;

use super::{MOST_WINDOWS, SEED};

/// The log's time that holds its traffic, as stretches of its span played back to back.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    /// (start, length), seconds after the log's first, in order, not overlapping.
    stretches: Vec<(u64, u64)>,
    /// Their total length before each: where each starts on the timeline.
    before: Vec<u64>,
    /// The log's span, seconds.
    span_s: u64,
    /// What was removed, in words; None for the whole span.
    removed: Option<String>,
}

impl Timeline {
    /// The whole span: a log that covers it.
    pub fn whole(span_s: u64) -> Timeline {
        Timeline::of_stretches(vec![(0, span_s.max(1))], span_s.max(1), None)
    }

    /// The log's time with traffic by its `coverage`: the sampled minutes of each hour, or
    /// the span less its gaps (the longest [`webscope_load::replay_log::Coverage::gaps`]
    /// listed), else the whole span. `first_s`: the log's first second.
    pub fn of(coverage: &Coverage, first_s: u64, span_s: u64) -> Timeline {
        let span_s = span_s.max(1);
        let end = first_s + span_s;
        if let Some(words) = sampled_words(coverage) {
            let mut stretches: Vec<(u64, u64)> = Vec::new();
            for hour in first_s / 3600..=(end - 1) / 3600 {
                for &m in &coverage.sampled_minutes {
                    let from = (hour * 3600 + u64::from(m) * 60).max(first_s);
                    let to = (hour * 3600 + u64::from(m) * 60 + 60).min(end);
                    if from < to {
                        push(&mut stretches, from - first_s, to - from);
                    }
                }
            }
            if stretches.is_empty() {
                return Timeline::whole(span_s);
            }
            let kept: u64 = stretches.iter().map(|s| s.1).sum();
            let removed = format!(
                "the log is a sample of {words}, which hold all but 1 % of its requests (the rest left out): its sampled minutes are played back to back, the {} between them removed, and its {} hold {} of traffic",
                human::duration((span_s - kept) as f64),
                human::duration(span_s as f64),
                human::duration(kept as f64)
            );
            return Timeline::of_stretches(stretches, span_s, Some(removed));
        }
        let mut gaps: Vec<(u64, u64)> = coverage
            .gaps
            .iter()
            .filter_map(|g| {
                let from = u64::try_from(g.start_unix).ok()?.max(first_s);
                let to = (u64::try_from(g.start_unix).ok()? + g.length_s).min(end);
                (from < to).then_some((from - first_s, to - first_s))
            })
            .collect();
        if gaps.is_empty() {
            return Timeline::whole(span_s);
        }
        gaps.sort_unstable();
        let mut stretches = Vec::new();
        let mut at = 0;
        for (from, to) in gaps {
            if from > at {
                push(&mut stretches, at, from - at);
            }
            at = at.max(to);
        }
        if at < span_s {
            push(&mut stretches, at, span_s - at);
        }
        if stretches.is_empty() {
            return Timeline::whole(span_s);
        }
        let kept: u64 = stretches.iter().map(|s| s.1).sum();
        let listed = coverage.gaps.len() as u64;
        let which = if coverage.gap_count > listed {
            format!(
                "its {listed} longest gaps (of {}) removed",
                coverage.gap_count
            )
        } else {
            format!(
                "its {} removed",
                human::plural(coverage.gap_count.max(listed), "gap")
            )
        };
        let removed = format!(
            "the log has stretches without a request (of {} and more), so its time with traffic is played back to back, {which}: its {} hold {} of traffic",
            human::duration(coverage.min_gap_s as f64),
            human::duration(span_s as f64),
            human::duration(kept as f64)
        );
        Timeline::of_stretches(stretches, span_s, Some(removed))
    }

    fn of_stretches(stretches: Vec<(u64, u64)>, span_s: u64, removed: Option<String>) -> Timeline {
        let mut before = Vec::with_capacity(stretches.len());
        let mut total = 0;
        for s in &stretches {
            before.push(total);
            total += s.1;
        }
        Timeline {
            stretches,
            before,
            span_s,
            removed,
        }
    }

    /// Its length, seconds: the log's time with traffic.
    pub fn length(&self) -> u64 {
        self.stretches
            .last()
            .zip(self.before.last())
            .map_or(self.span_s, |(s, b)| b + s.1)
    }

    /// Where `offset_s` (seconds after the log's first) falls on the timeline; None in what
    /// was removed.
    pub fn place(&self, offset_s: u64) -> Option<u64> {
        let i = self.stretches.partition_point(|s| s.0 <= offset_s);
        let (start, length) = *self.stretches.get(i.checked_sub(1)?)?;
        (offset_s < start + length).then(|| self.before[i - 1] + offset_s - start)
    }

    /// What was removed from the log's span, in words; None when nothing was.
    pub fn removed(&self) -> Option<&str> {
        self.removed.as_deref()
    }
}

/// Adds a stretch, joined to the one before when they touch.
fn push(stretches: &mut Vec<(u64, u64)>, start: u64, length: u64) {
    match stretches.last_mut() {
        Some(last) if last.0 + last.1 == start => last.1 += length,
        _ => stretches.push((start, length)),
    }
}

/// What of the log one run replays: `count` windows of `length` seconds of the timeline,
/// window `j` starting `starts[j]` seconds into it; or the whole timeline when they would
/// cover it (`count` 1, its length, from 0).
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    /// Where each window starts, seconds into the log's timeline.
    pub starts: Vec<u64>,
    /// Each window's length, seconds.
    pub length: u64,
    /// The windows cover the whole timeline (one window, from 0).
    pub whole: bool,
}

impl Part {
    /// The windows of a run of `run_s` seconds at `speed` over a timeline of `span_s` seconds.
    pub fn choose(span_s: u64, run_s: u64, speed: f64) -> Part {
        let count = run_s.clamp(1, MOST_WINDOWS);
        let length = ((run_s as f64 * speed / count as f64).round() as u64).max(1);
        if count * length >= span_s {
            return Part {
                starts: vec![0],
                length: span_s,
                whole: true,
            };
        }
        // The same points for every speed-up: a longer window holds a shorter one.
        let mut rng = webscope_workload::Rng::new(SEED);
        let stratum = span_s as f64 / count as f64;
        let starts = (0..count)
            .map(|j| {
                let from = j as f64 * stratum;
                let centre = from + stratum * rng.next_f64();
                let start =
                    (centre - length as f64 / 2.0).clamp(from, from + stratum - length as f64);
                start.floor() as u64
            })
            .collect();
        Part {
            starts,
            length,
            whole: false,
        }
    }

    /// Where `at_s` (seconds into the timeline) falls in the run's log: its offset in the
    /// windows played one after another; None outside them.
    pub fn place(&self, at_s: u64) -> Option<u64> {
        self.starts.iter().enumerate().find_map(|(j, &start)| {
            (at_s >= start && at_s < start + self.length)
                .then(|| j as u64 * self.length + at_s - start)
        })
    }

    /// Where the log's second `second` falls in the run's log, on `timeline` from the log's
    /// first second `first_s`; None outside the windows.
    pub fn place_second(&self, timeline: &Timeline, first_s: u64, second: u64) -> Option<u64> {
        self.place(timeline.place(second.checked_sub(first_s)?)?)
    }

    /// The windows' requests as one replay at `speed`, looped (a whole log shorter than
    /// the run repeats).
    pub fn replay(
        &self,
        logged: &[LoggedRequest],
        timeline: &Timeline,
        first_s: u64,
        speed: f64,
    ) -> Option<Replay> {
        let origin = UNIX_EPOCH + Duration::from_secs(first_s);
        let moved: Vec<LoggedRequest> = logged
            .iter()
            .filter_map(|r| {
                let at = self.place_second(timeline, first_s, r.second())?;
                Some(LoggedRequest {
                    time: origin + Duration::from_secs(at),
                    ..r.clone()
                })
            })
            .collect();
        let span = self.starts.len() as u64 * self.length;
        Replay::from_origin(&moved, first_s, span, speed, true)
    }

    /// For people: what the run replays of the log on `timeline`.
    pub fn describe(&self, timeline: &Timeline) -> String {
        let of = match timeline.removed() {
            Some(_) => "of the log's time with traffic, one in each of {n} equal parts of it",
            None => "of the log, one in each of {n} equal parts of its span",
        };
        let mut said = if self.whole {
            match timeline.removed() {
                Some(_) => {
                    "the whole log's time with traffic (looped when shorter than the run)".into()
                }
                None => "the whole log (looped when shorter than the run)".into(),
            }
        } else {
            let n = self.starts.len();
            format!(
                "{n} window{} of {} s {}",
                if n == 1 { "" } else { "s" },
                self.length,
                of.replace("{n}", &n.to_string())
            )
        };
        if let Some(removed) = timeline.removed() {
            said += &format!(" ({removed})");
        }
        said
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use webscope_load::replay_log::Coverage;

    /// 2024-01-01T00:00:00Z.
    const T0: u64 = 1_704_067_200;

    /// The log: 3 d 11 h, two requests a second in minute :05 of each hour alone.
    fn sampled_log() -> (Vec<LoggedRequest>, u64, u64) {
        let first_s = T0 + 300;
        let mut log = Vec::new();
        for hour in 0..83 {
            for s in 0..60 {
                for k in 0..2 {
                    log.push(LoggedRequest {
                        time: UNIX_EPOCH + Duration::from_secs(T0 + hour * 3600 + 300 + s),
                        client: format!("c{k}"),
                        method: "GET".into(),
                        target: format!("/p{}", (s + k) % 7),
                        status: 200,
                        bytes: 100,
                    });
                }
            }
        }
        let last = log.last().unwrap().second();
        (log, first_s, last - first_s + 1)
    }

    fn sampled_coverage() -> Coverage {
        Coverage {
            minutes_checked: true,
            sampled_minutes: vec![5],
            ..Coverage::default()
        }
    }

    #[test]
    fn regression_52_a_sampled_log_s_windows_fall_in_its_minutes_and_hold_requests() {
        let (log, first_s, span_s) = sampled_log();
        // Before: windows over the whole span, 59 minutes of each hour empty.
        let blind = Part::choose(span_s, 5, 1.0);
        let whole = Timeline::whole(span_s);
        assert!(blind.replay(&log, &whole, first_s, 1.0).is_none());
        let timeline = Timeline::of(&sampled_coverage(), first_s, span_s);
        assert_eq!(timeline.length(), 83 * 60);
        let removed = timeline.removed().unwrap();
        assert!(removed.contains("minute :05 of each hour"), "{removed}");
        assert!(
            removed.contains("its 3 d 10 h hold 1 h 23 m of traffic"),
            "{removed}"
        );
        // Offsets in the minutes land back to back; the rest is removed.
        assert_eq!(timeline.place(0), Some(0));
        assert_eq!(timeline.place(3600 + 10), Some(70));
        assert_eq!(timeline.place(61), None);
        // At the logged pace a 5-s run's windows each hold a second of two requests: the
        // log's rate within its minutes, not its mean over the span.
        let mut speed = 1.0;
        while speed <= 1024.0 {
            let part = Part::choose(timeline.length(), 5, speed);
            let replay = part.replay(&log, &timeline, first_s, speed).unwrap();
            let rate = replay.mean_rate();
            assert!(
                (rate - 2.0 * speed).abs() <= 0.02 * 2.0 * speed,
                "{rate} at {speed}×"
            );
            speed *= 2.0;
        }
        let said = Part::choose(timeline.length(), 5, 1.0).describe(&timeline);
        assert!(
            said.starts_with("5 windows of 1 s of the log's time with traffic, one in each of 5 equal parts of it (the log is a sample of minute :05 of each hour, which"),
            "{said}"
        );
    }

    #[test]
    fn a_gapped_log_is_played_without_its_gaps() {
        // Traffic in the first and last hour of a day, nothing between.
        let coverage = Coverage {
            gaps: vec![webscope_load::replay_log::Gap {
                start_unix: (T0 + 3600) as i64,
                length_s: 22 * 3600,
            }],
            gap_count: 1,
            gap_total_s: 22 * 3600,
            min_gap_s: 3600,
            ..Coverage::default()
        };
        let timeline = Timeline::of(&coverage, T0, 86_400);
        assert_eq!(timeline.length(), 2 * 3600);
        assert_eq!(timeline.place(3599), Some(3599));
        assert_eq!(timeline.place(3600), None);
        assert_eq!(timeline.place(23 * 3600), Some(3600));
        let removed = timeline.removed().unwrap();
        assert!(removed.contains("its 1 gap removed"), "{removed}");
        // A log that covers its span keeps it whole, said as before.
        let plain = Timeline::of(&Coverage::default(), T0, 86_400);
        assert_eq!((plain.length(), plain.removed()), (86_400, None));
        assert_eq!(
            Part::choose(86_400, 5, 1.0).describe(&plain),
            "5 windows of 1 s of the log, one in each of 5 equal parts of its span"
        );
    }
}
