//! Access logs read (webscope-accesslog) and turned into a replay plan ([`crate::replay`]):
//! what `webscope load --replay LOG` and the lab's replay experiment send. Not for the
//! timing or the sending (the open loop) nor for parsing lines (the accesslog crate).

use std::path::PathBuf;
use std::time::{Duration, UNIX_EPOCH};

use webscope_accesslog::characterize::MinuteCounts;
/// A log's coverage of its span (`characterize`'s rule), as [`Plan::coverage`] carries it.
pub use webscope_accesslog::characterize::{Coverage, Gap};
use webscope_accesslog::{stream_logs, Entry, Format, ReadOptions};
use webscope_report::human::{self, plural};

use crate::replay::{LogSource, LoggedRequest, Replay, MAX_REPLAY};
use crate::Error;

/// What the reading found, for the run's first line.
pub struct Plan {
    /// The log's requests: what is distinct in them, and the log to read the slots from.
    pub replay: Replay,
    /// Lines that did not parse.
    pub bad_lines: u64,
    /// The first of them (`FILE line N: why`).
    pub first_bad: Option<String>,
    /// Parsed lines without a request (`"-"`: a connection closed before it sent one).
    pub no_request: u64,
    /// Entries later than the reader's look-back after a later one: sent in the order read.
    pub out_of_order: u64,
    /// Gzip files whose data stopped being readable, and where: replayed up to there.
    pub cut_note: Option<String>,
    /// Whether the log is sampled by the clock or has long gaps (`characterize`'s rule):
    /// the lab's replay experiment plays only the time that holds traffic.
    pub coverage: Coverage,
}

/// A log entry as the replay takes it: its time, client, method, target with query, status,
/// bytes. None for an entry without a request.
pub(crate) fn logged(entry: &Entry) -> Option<LoggedRequest> {
    entry.has_request().then(|| LoggedRequest {
        time: entry.time,
        client: entry.client.to_string(),
        method: entry.method.to_string(),
        target: match &entry.query {
            Some(query) => format!("{}?{query}", entry.path),
            None => entry.path.to_string(),
        },
        status: entry.status,
        bytes: entry.bytes,
    })
}

/// What the first pass keeps: what is distinct in the log and its counts, never its lines.
#[derive(Default)]
struct FirstPass {
    requests: crate::replay::Interner,
    first_s: Option<u64>,
    last_s: u64,
    kept: u64,
    skipped_method: u64,
    ranges: u64,
    conditional: u64,
    no_request: u64,
    /// Every entry by minute, as `characterize` counts them for its coverage.
    minutes: MinuteCounts,
}

impl FirstPass {
    fn take(&mut self, entry: &Entry) {
        self.minutes.add(unix_s(entry) as i64);
        let Some(logged) = logged(entry) else {
            self.no_request += 1;
            return;
        };
        let Some(request) = logged.request() else {
            self.skipped_method += 1;
            return;
        };
        self.ranges += u64::from(request.range.is_some());
        self.conditional += u64::from(request.not_modified);
        self.requests.intern(request);
        let second = logged.second();
        self.first_s = Some(self.first_s.map_or(second, |f| f.min(second)));
        self.last_s = self.last_s.max(second);
        self.kept += 1;
    }
}

/// Reads `logs` once and makes the plan at `speed`, looping or not: the distinct requests,
/// the span and the counts (a first pass, in memory of what is distinct); the slots are read
/// from the log again as the run goes (`replay::Feed`).
pub fn plan(
    logs: &[PathBuf],
    format: Option<Format>,
    speed: f64,
    looped: bool,
) -> Result<Plan, Error> {
    if !(speed.is_finite() && speed > 0.0) {
        return Err(Error::Config(format!(
            "--speed {speed}: give a positive speed-up, e.g. 1 (as logged) or 4"
        )));
    }
    let mut pass = FirstPass::default();
    let options = ReadOptions::format(format);
    let summary = stream_logs(logs, &options, &mut |e| pass.take(&e), &mut |_| {})
        .map_err(|e| Error::Config(format!("--replay: {e}")))?;
    let Some(first_s) = pass.first_s.filter(|_| pass.kept > 0) else {
        return Err(Error::Config(format!(
            "--replay: no request of the log can be replayed ({} neither GET nor HEAD, {} without a request): replay a log with GET or HEAD requests",
            pass.skipped_method, pass.no_request
        )));
    };
    let span_s = pass.last_s - first_s + 1;
    check_length(Duration::from_secs(span_s), speed)?;
    let first_bad = summary.bad_examples.first().map(|bad| {
        format!(
            "{} line {}: {}",
            logs.get(bad.file)
                .map_or(String::new(), |p| p.display().to_string()),
            bad.line,
            bad.why
        )
    });
    let replay = Replay {
        requests: pass.requests.into_requests(),
        slots: Vec::new(),
        period_ns: (span_s as f64 * 1e9 / speed) as u64,
        speed,
        looped,
        skipped_method: pass.skipped_method,
        ranges: pass.ranges,
        conditional: pass.conditional,
        per_pass: pass.kept,
        log: Some(LogSource {
            paths: logs.to_vec(),
            format: format.map(|f| f.name().to_string()),
            first_s,
        }),
    };
    Ok(Plan {
        replay,
        bad_lines: summary.bad_lines,
        first_bad,
        no_request: pass.no_request,
        out_of_order: summary.out_of_order,
        cut_note: summary.cut_note(logs),
        coverage: pass.minutes.coverage(),
    })
}

/// An entry's second, Unix time.
fn unix_s(entry: &Entry) -> u64 {
    entry
        .time
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The logged requests of `logs` whose second `keep` takes, in time order (the lab's
/// windows of a log: memory follows what is kept, not the log).
pub fn collect(
    logs: &[PathBuf],
    format: Option<Format>,
    keep: &dyn Fn(u64) -> bool,
) -> Result<Vec<LoggedRequest>, Error> {
    let mut kept = Vec::new();
    let mut sink = |entry: Entry| {
        if keep(unix_s(&entry)) {
            kept.extend(logged(&entry));
        }
    };
    stream_logs(logs, &ReadOptions::format(format), &mut sink, &mut |_| {})
        .map_err(|e| Error::Config(format!("--replay: {e}")))?;
    Ok(kept)
}

/// Refuses a replay that would outlast [`MAX_REPLAY`]: its offsets in nanoseconds would not
/// fit the schedule's. The lines' times are already within 1990 and tomorrow
/// ([`webscope_accesslog::implausible_time`]); a slow `--speed` can still stretch decades.
fn check_length(span: Duration, speed: f64) -> Result<(), Error> {
    let length = span.as_secs_f64() / speed;
    if length < MAX_REPLAY.as_secs_f64() {
        return Ok(());
    }
    Err(Error::Config(format!(
        "--replay: the log spans {:.1} years and at --speed {speed} would replay for {:.0} years, more than the {} a replay may last: give a larger --speed, or cut the log to the part to replay",
        span.as_secs_f64() / YEAR_S,
        length / YEAR_S,
        MAX_REPLAY.as_secs_f64() / YEAR_S
    )))
}

/// A year, seconds, for the message.
const YEAR_S: f64 = 365.25 * 86_400.0;

impl Plan {
    /// The line printed before the run: what is replayed, at what pace, what was left out.
    pub fn describe(&self) -> String {
        let r = &self.replay;
        let mut line = format!(
            "replaying {} logged requests ({:.1} req/s on average) over {:.2}s at {}x{}",
            r.per_pass,
            r.mean_rate(),
            r.span().as_secs_f64(),
            r.speed,
            if r.looped { ", looped" } else { "" }
        );
        if r.skipped_method > 0 {
            line += &format!(
                "; {} neither GET nor HEAD skipped (a log keeps no body, and a replay changes nothing on its target)",
                r.skipped_method
            );
        }
        if self.no_request > 0 {
            line += &format!(
                "; {} without a request skipped",
                plural(self.no_request, "line")
            );
        }
        if self.out_of_order > 0 {
            line += &format!(
                "; {} out of time order beyond the reader's look-back, sent in the order read",
                plural(self.out_of_order, "line")
            );
        }
        if self.bad_lines > 0 {
            line += &format!(
                "; {} unreadable (first: {})",
                plural(self.bad_lines, "line"),
                self.first_bad.as_deref().unwrap_or("?")
            );
        }
        if let Some(note) = &self.cut_note {
            line += &format!("; {note}");
        }
        if let Some(sampled) = sampled_words(&self.coverage) {
            line += &format!("; the log is a sample ({sampled}), replayed as logged, the time between its minutes included");
        }
        if let Some(hint) = speed_hint(r.span(), r.speed) {
            line += &format!("; {hint}");
        }
        line
    }
}

/// A replay longer than this at its speed gets a speed suggested.
const LONG_REPLAY: Duration = Duration::from_secs(600);
/// The length a suggested speed aims at.
const SUGGESTED_LENGTH_S: f64 = 60.0;

/// For a replay that would last more than `LONG_REPLAY`: how long it lasts, and a speed
/// that replays the log in about a minute (rounded to 1, 2 or 5 times a power of ten, as a
/// person would type it). Issue 52: a log spanning 3 d 11 h replayed for 3 d 11 h.
pub fn speed_hint(length: Duration, speed: f64) -> Option<String> {
    if length <= LONG_REPLAY {
        return None;
    }
    let wanted = length.as_secs_f64() * speed / SUGGESTED_LENGTH_S;
    let decade = 10f64.powi(wanted.log10().floor() as i32);
    let suggested = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * decade)
        .find(|s| *s >= wanted)
        .unwrap_or(10.0 * decade);
    // Typed as a flag: 5000, not "5 000"; no float noise below a millionth.
    let suggested = (suggested * 1e6).round() / 1e6;
    let at = length.as_secs_f64() * speed / suggested;
    Some(format!(
        "at {speed}x it lasts {}: --speed {suggested} replays it in about {}",
        human::duration(length.as_secs_f64()),
        if (45.0..=90.0).contains(&at) {
            "a minute".to_string()
        } else {
            human::duration(at)
        }
    ))
}

/// The minutes a clock-sampled log keeps, in words ("minute :05 of each hour"), None when
/// it is not sampled.
pub fn sampled_words(coverage: &Coverage) -> Option<String> {
    let minutes = &coverage.sampled_minutes;
    let first = *minutes.first()?;
    let contiguous = minutes.windows(2).all(|w| w[1] == w[0] + 1);
    Some(match minutes.len() {
        1 => format!("minute :{first:02} of each hour"),
        n if contiguous => format!(
            "minutes :{first:02} to :{:02} of each hour",
            first as usize + n - 1
        ),
        n => format!("{n} minutes of each hour"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replay_longer_than_the_limit_is_refused_in_years_not_a_saturated_number() {
        let twenty_years = Duration::from_secs(20 * 365 * 86_400 + 5 * 86_400);
        assert!(check_length(twenty_years, 1.0).is_ok());
        let err = check_length(twenty_years, 0.1).unwrap_err().to_string();
        assert!(
            err.contains("spans 20.0 years") && err.contains("for 200 years"),
            "{err}"
        );
        assert!(!err.contains("584"), "{err}");
    }

    #[test]
    fn a_replay_of_days_gets_a_speed_that_replays_it_in_about_a_minute() {
        // Issue 52: 3 d 11 h.
        let span = Duration::from_secs(3 * 86_400 + 11 * 3600);
        let hint = speed_hint(span, 1.0).unwrap();
        assert!(hint.starts_with("at 1x it lasts 3 d 11 h"), "{hint}");
        assert!(
            hint.contains("--speed 5000 replays it in about a minute"),
            "{hint}"
        );
        // At a speed given, the length is the replay's, and the suggestion the whole speed.
        let hint = speed_hint(span / 100, 100.0).unwrap();
        assert!(hint.contains("--speed 5000 "), "{hint}");
        assert_eq!(speed_hint(Duration::from_secs(300), 1.0), None);
    }

    #[test]
    fn a_sampled_log_s_minutes_are_said() {
        let mut c = Coverage::default();
        assert_eq!(sampled_words(&c), None);
        c.sampled_minutes = vec![5];
        assert_eq!(sampled_words(&c).unwrap(), "minute :05 of each hour");
        c.sampled_minutes = (0..10).collect();
        assert_eq!(
            sampled_words(&c).unwrap(),
            "minutes :00 to :09 of each hour"
        );
        c.sampled_minutes = vec![5, 35];
        assert_eq!(sampled_words(&c).unwrap(), "2 minutes of each hour");
    }
}
