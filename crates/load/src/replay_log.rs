//! Access logs read (webscope-accesslog) and turned into a replay plan ([`crate::replay`]):
//! what `webscope load --replay LOG` and the lab's replay experiment send. Not for the
//! timing or the sending (the open loop) nor for parsing lines (the accesslog crate).

use std::path::PathBuf;
use std::time::Duration;

use webscope_accesslog::{Entry, Format};
use webscope_report::human::plural;

use crate::replay::{LoggedRequest, Replay, MAX_REPLAY};
use crate::Error;

/// What the reading found, for the run's first line.
pub struct Plan {
    /// The log's requests as slots.
    pub replay: Replay,
    /// Lines that did not parse.
    pub bad_lines: u64,
    /// The first of them (`FILE line N: why`).
    pub first_bad: Option<String>,
    /// Parsed lines without a request (`"-"`: a connection closed before it sent one).
    pub no_request: u64,
}

/// A log entry as the replay takes it: its time, method, target with query, status, bytes.
/// None for an entry without a request.
fn logged(entry: &Entry) -> Option<LoggedRequest> {
    entry.has_request().then(|| LoggedRequest {
        time: entry.time,
        method: entry.method.clone(),
        target: match &entry.query {
            Some(query) => format!("{}?{query}", entry.path),
            None => entry.path.clone(),
        },
        status: entry.status,
        bytes: entry.bytes,
    })
}

/// Reads `logs` and makes the plan at `speed`, looping or not.
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
    let parsed = webscope_accesslog::read_logs(logs, format)
        .map_err(|e| Error::Config(format!("--replay: {e}")))?;
    let logged: Vec<LoggedRequest> = parsed.entries.iter().filter_map(logged).collect();
    check_length(&parsed.entries, speed)?;
    let no_request = (parsed.entries.len() - logged.len()) as u64;
    let replay = Replay::new(&logged, speed, looped).ok_or_else(|| {
        Error::Config(format!(
            "--replay: no request of the log can be replayed ({} of a body-carrying method, {no_request} without a request): replay a log with GET or HEAD requests",
            logged.len()
        ))
    })?;
    let first_bad = parsed.bad_examples.first().map(|bad| {
        format!(
            "{} line {}: {}",
            logs.get(bad.file)
                .map_or(String::new(), |p| p.display().to_string()),
            bad.line,
            bad.why
        )
    });
    Ok(Plan {
        replay,
        bad_lines: parsed.bad_lines,
        first_bad,
        no_request,
    })
}

/// Refuses a replay that would outlast [`MAX_REPLAY`]: its offsets in nanoseconds would not
/// fit the schedule's. The lines' times are already within 1990 and tomorrow
/// ([`webscope_accesslog::implausible_time`]); a slow `--speed` can still stretch decades.
fn check_length(entries: &[Entry], speed: f64) -> Result<(), Error> {
    let (Some(first), Some(last)) = (entries.first(), entries.last()) else {
        return Ok(());
    };
    let span = last.time.duration_since(first.time).unwrap_or_default() + Duration::from_secs(1);
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
            r.slots.len(),
            r.mean_rate(),
            r.span().as_secs_f64(),
            r.speed,
            if r.looped { ", looped" } else { "" }
        );
        if r.skipped_no_body > 0 {
            line += &format!(
                "; {} POST/PUT/PATCH skipped (the log has no body)",
                r.skipped_no_body
            );
        }
        if self.no_request > 0 {
            line += &format!(
                "; {} without a request skipped",
                plural(self.no_request, "line")
            );
        }
        if self.bad_lines > 0 {
            line += &format!(
                "; {} unreadable (first: {})",
                plural(self.bad_lines, "line"),
                self.first_bad.as_deref().unwrap_or("?")
            );
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(date: &str) -> Entry {
        let line = format!("::1 - - [{date} +0000] \"GET / HTTP/1.1\" 200 1 \"-\" \"t\"");
        webscope_accesslog::parse_line(&line, None).unwrap()
    }

    #[test]
    fn a_replay_longer_than_the_limit_is_refused_in_years_not_a_saturated_number() {
        let log = [entry("01/Jan/2000:00:00:00"), entry("01/Jan/2020:00:00:00")];
        assert!(check_length(&log, 1.0).is_ok());
        let err = check_length(&log, 0.1).unwrap_err().to_string();
        assert!(
            err.contains("spans 20.0 years") && err.contains("for 200 years"),
            "{err}"
        );
        assert!(!err.contains("584"), "{err}");
    }
}
