//! The one grammar of lengths of time in webscope: every flag, config and objective that takes
//! a duration reads it here (issue 47: there were three, and a bare number meant seconds in
//! one of them and an error in the others).
//!
//! The grammar: one or more `NUMBER UNIT` parts, with or without spaces between them
//! (`10s`, `500ms`, `1m30s`, `1h 30m`, `1.5s`), or a bare number, which is seconds as wrk
//! reads it (`-d 3`). A number is decimal digits with an optional fraction (`0.25`); no sign,
//! no exponent. Units: `ns`; `us` or `µs`; `ms`; `s`, `sec`, `second`; `m`, `min`, `minute`;
//! `h`, `hr`, `hour`; `d`, `day`; `w`, `week`; `y`, `year` (365.25 days, as humantime had
//! it): each also with an `s` on the end (`secs`, `minutes`, `days`).
//!
//! Every length is at most [`MAX`], a year: far beyond any run, timeout or think time, and far
//! below where a clock's arithmetic overflows (an `Instant` plus 500 billion years panicked in
//! a worker, and the run then said "no request succeeded"). A longer one, and anything else,
//! is refused with one line that says what was wrong and what to write.
//!
//! Not here: printing lengths (humantime's `format_duration` writes what this reads back),
//! nor whether zero is allowed (the caller's flag decides; [`parse_positive`] refuses it).
//!
//! Written by hand rather than with humantime: humantime has no bare-number seconds, no
//! fractions, and no bound; its grammar is also the wider one of calendar units (`months`),
//! which a length of a run does not need.

use std::fmt;
use std::time::Duration;

/// The longest length any duration may have: 365 days.
pub const MAX: Duration = Duration::from_secs(365 * 86_400);

/// Why a text is not a length, in one line for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DurationError(String);

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DurationError {}

/// Nanoseconds per unit, by the names the grammar accepts (each also with an `s` on the end).
const UNITS: &[(&[&str], u128)] = &[
    (&["ns", "nsec", "nanosecond"], 1),
    (&["us", "µs", "usec", "microsecond"], 1_000),
    (&["ms", "msec", "millisecond"], 1_000_000),
    (&["s", "sec", "second"], NS_PER_S),
    (&["m", "min", "minute"], 60 * NS_PER_S),
    (&["h", "hr", "hour"], 3_600 * NS_PER_S),
    (&["d", "day"], 86_400 * NS_PER_S),
    (&["w", "week"], 7 * 86_400 * NS_PER_S),
    (&["y", "year"], 31_557_600 * NS_PER_S),
];

const NS_PER_S: u128 = 1_000_000_000;

/// What to write, for the messages.
const EXAMPLE: &str = "e.g. 10s, 500ms, 1m30s, or 3 for seconds";

/// Reads a length (see the module's grammar); zero is allowed.
pub fn parse(text: &str) -> Result<Duration, DurationError> {
    let trimmed = text.trim();
    let bad = |why: String| Err(DurationError(format!("{trimmed} {why}")));
    if trimmed.is_empty() {
        return Err(DurationError(format!(
            "an empty text is not a length: {EXAMPLE}"
        )));
    }
    if trimmed.starts_with('-') {
        return bad(format!("is negative: give a length, {EXAMPLE}"));
    }
    let mut rest = trimmed;
    let mut total: u128 = 0;
    let mut parts = 0;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, after) = rest.split_at(digits);
        let after = after.trim_start();
        let letters = after
            .find(|c: char| c.is_ascii_digit() || c == '.' || c.is_whitespace())
            .unwrap_or(after.len());
        let (unit, after) = after.split_at(letters);
        if scaled(number, 1).is_none() {
            let word = rest.split_whitespace().next().unwrap_or(rest);
            return bad(format!("has {word:?}, which is not a number: {EXAMPLE}"));
        }
        let scale = match unit {
            // A bare number is seconds, but only alone: `1m30` is a slip, not 90 s.
            "" if parts == 0 && after.trim().is_empty() => NS_PER_S,
            "" => return bad(format!("has a number without its unit: {EXAMPLE}")),
            unit => match unit_ns(unit) {
                Some(scale) => scale,
                None => return bad(format!("has an unknown unit {unit:?}: {EXAMPLE}")),
            },
        };
        let ns = scaled(number, scale).unwrap_or(u128::MAX);
        total = total.saturating_add(ns);
        parts += 1;
        rest = after.trim_start();
    }
    if total > MAX.as_nanos() {
        return bad(format!(
            "is longer than the longest length webscope takes, {} days",
            MAX.as_secs() / 86_400
        ));
    }
    // At most MAX, which fits.
    Ok(Duration::from_nanos(total as u64))
}

/// [`parse`], refusing zero: for lengths that must pass (a run, a timeout).
pub fn parse_positive(text: &str) -> Result<Duration, DurationError> {
    let length = parse(text)?;
    if length.is_zero() {
        return Err(DurationError(format!(
            "{} is zero: give a length, {EXAMPLE}",
            text.trim()
        )));
    }
    Ok(length)
}

/// Checks a length that came some other way than text (a config's `{"secs": N}`, a log's
/// span): at most [`MAX`]. `what` names it in the message (`-d/--duration`).
pub fn check(what: &str, length: Duration) -> Result<(), DurationError> {
    if length <= MAX {
        return Ok(());
    }
    Err(DurationError(format!(
        "{what} is {} s, longer than the longest length webscope takes, {} days",
        length.as_secs(),
        MAX.as_secs() / 86_400
    )))
}

fn unit_ns(unit: &str) -> Option<u128> {
    let singular = |u: &str| {
        UNITS
            .iter()
            .find(|(names, _)| names.contains(&u))
            .map(|(_, ns)| *ns)
    };
    singular(unit).or_else(|| {
        // `secs`, `days`; not `ss` nor `ms` read as a plural of `m`.
        let stem = unit.strip_suffix('s')?;
        (stem.len() > 1).then(|| singular(stem)).flatten()
    })
}

/// `number` (digits, an optional fraction) times `scale` nanoseconds, exactly (no float),
/// saturating far above [`MAX`]; None when it is not such a number.
fn scaled(number: &str, scale: u128) -> Option<u128> {
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty()
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || !fraction.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    // Digits past the 30th change nothing below MAX, and would overflow u128.
    let cap = |digits: &str| -> u128 {
        let digits = digits.trim_start_matches('0');
        if digits.len() > 30 {
            return u128::MAX / NS_PER_S / 1_000_000;
        }
        digits.parse().unwrap_or(0)
    };
    let mut ns = cap(whole).saturating_mul(scale);
    // The fraction, to the nanosecond: at most 20 digits count (a year is 3.2e16 ns).
    let mut place = scale;
    for digit in fraction.bytes().take(20) {
        place /= 10;
        ns = ns.saturating_add(u128::from(digit - b'0') * place);
    }
    Some(ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> Duration {
        parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn reads_what_the_flags_and_the_docs_write() {
        assert_eq!(ok("10s"), Duration::from_secs(10));
        assert_eq!(ok("500ms"), Duration::from_millis(500));
        assert_eq!(ok("1m30s"), Duration::from_secs(90));
        assert_eq!(ok("1h 30m"), Duration::from_secs(5400));
        assert_eq!(ok("30m"), Duration::from_secs(1800));
        assert_eq!(ok("2min"), Duration::from_secs(120));
        assert_eq!(ok("5 secs"), Duration::from_secs(5));
        assert_eq!(ok("250us"), Duration::from_micros(250));
        assert_eq!(ok("250µs"), Duration::from_micros(250));
        assert_eq!(ok("7ns"), Duration::from_nanos(7));
        assert_eq!(ok("2days"), Duration::from_secs(2 * 86_400));
        assert_eq!(ok("1w"), Duration::from_secs(7 * 86_400));
        assert_eq!(ok("0s"), Duration::ZERO);
    }

    /// Issue 52, item 6: `load -d 3` was refused; wrk reads it as 3 seconds.
    #[test]
    fn a_bare_number_is_seconds_as_wrk_reads_it() {
        assert_eq!(ok("3"), Duration::from_secs(3));
        assert_eq!(ok(" 3 "), Duration::from_secs(3));
        assert_eq!(ok("0.5"), Duration::from_millis(500));
        // Only alone: a number without its unit after another part is a slip.
        let err = parse("1m30").unwrap_err().to_string();
        assert!(err.contains("without its unit"), "{err}");
    }

    #[test]
    fn fractions_are_exact_to_the_nanosecond() {
        assert_eq!(ok("1.5s"), Duration::from_millis(1500));
        assert_eq!(ok("0.1s"), Duration::from_millis(100));
        assert_eq!(ok(".25s"), Duration::from_millis(250));
        assert_eq!(ok("2.5ms"), Duration::from_micros(2500));
        assert_eq!(ok("0.0000000001s"), Duration::ZERO);
        assert_eq!(ok("1.000000001s"), Duration::from_nanos(1_000_000_001));
    }

    /// Issue 51, item 8: `-d 500000000000years` (and the same for --timeout, --think-time,
    /// --interval) panicked in a clock's arithmetic; each is one line now.
    #[test]
    fn a_length_past_the_maximum_is_one_line_not_a_panic() {
        for text in [
            "500000000000years",
            "366d",
            "366 days",
            "18446744073709551615s",
            "99999999999999999999999999999999999999999999999999s",
            "1y",
        ] {
            let err = parse(text).unwrap_err().to_string();
            assert!(
                err.contains("longest length") && err.contains("365 days"),
                "{text}: {err}"
            );
            assert!(!err.contains('\n'), "{err}");
        }
        assert_eq!(ok("365d"), MAX);
        assert_eq!(ok("8760h"), MAX);
        assert!(check("--timeout", MAX).is_ok());
        let err = check("--timeout", Duration::from_secs(u64::MAX)).unwrap_err();
        assert!(err
            .to_string()
            .starts_with("--timeout is 18446744073709551615 s, longer"));
    }

    #[test]
    fn refuses_what_is_not_a_length_saying_what_to_write() {
        for (text, says) in [
            ("", "not a length"),
            ("-3s", "negative"),
            ("10x", "unknown unit \"x\""),
            ("1.2.3s", "not a number"),
            ("s", "not a number"),
            ("1e3s", "unknown unit \"e\""),
            ("10 s s", "not a number"),
            ("ten seconds", "not a number"),
        ] {
            let err = parse(text).unwrap_err().to_string();
            assert!(err.contains(says), "{text:?}: {err}");
            assert!(err.contains("e.g. 10s"), "{text:?}: {err}");
        }
        assert!(parse_positive("0")
            .unwrap_err()
            .to_string()
            .contains("zero"));
        assert_eq!(parse_positive("2").unwrap(), Duration::from_secs(2));
    }

    /// What humantime's `format_duration` prints reads back here.
    #[test]
    fn the_printed_form_reads_back() {
        assert_eq!(ok("1h 2m 3s 4ms 5us 6ns"), Duration::new(3723, 4_005_006));
    }
}
