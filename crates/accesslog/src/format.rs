//! The log formats the parser knows, as `--format` names them.

use std::fmt;
use std::str::FromStr;

/// The layout of a log line. `None` where an `Option<Format>` is taken means auto-detect:
/// each line is read as Combined when its referer and user agent are there, else as Common.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// NCSA Common Log Format: `%h %l %u %t "%r" %>s %b`.
    Common,
    /// Combined: Common + `"%{Referer}i" "%{User-agent}i"`.
    Combined,
    /// Combined + a trailing request time: nginx `$request_time` (seconds, "0.004") or Apache
    /// `%D` (microseconds, integer) — named by the user, since the two cannot be told apart
    /// from a number alone.
    CombinedWithTime(TimeUnit),
}

/// The unit of a logged request time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    /// nginx `$request_time`: seconds with millisecond resolution, e.g. `0.004`.
    Seconds,
    /// Apache `%D`: whole microseconds, e.g. `4012`.
    Microseconds,
}

impl Format {
    /// The `--format` names accepted, for help texts and error messages.
    pub const NAMES: &'static str = "common, combined, nginx-timed, apache-timed";

    /// The `--format` name of this format.
    pub fn name(self) -> &'static str {
        match self {
            Format::Common => "common",
            Format::Combined => "combined",
            Format::CombinedWithTime(TimeUnit::Seconds) => "nginx-timed",
            Format::CombinedWithTime(TimeUnit::Microseconds) => "apache-timed",
        }
    }

    /// How an optional format is named in messages (`None` is auto-detection).
    pub fn describe(format: Option<Format>) -> String {
        match format {
            Some(f) => format!("--format {} ({})", f.name(), f.layout()),
            None => "common or combined (auto-detected; give --format for another)".to_string(),
        }
    }

    /// The format written as Apache's LogFormat / nginx's log_format would write it.
    pub fn layout(self) -> &'static str {
        match self {
            Format::Common => r#"%h %l %u %t "%r" %>s %b"#,
            Format::Combined => r#"%h %l %u %t "%r" %>s %b "%{Referer}i" "%{User-agent}i""#,
            Format::CombinedWithTime(TimeUnit::Seconds) => {
                r#"combined + " $request_time" (seconds)"#
            }
            Format::CombinedWithTime(TimeUnit::Microseconds) => {
                r#"combined + " %D" (microseconds)"#
            }
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Format, String> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "common" | "clf" => Format::Common,
            "combined" => Format::Combined,
            "nginx-timed" => Format::CombinedWithTime(TimeUnit::Seconds),
            "apache-timed" => Format::CombinedWithTime(TimeUnit::Microseconds),
            _ => {
                return Err(format!(
                    "unknown log format {s:?} (one of: {}; leave it out to auto-detect common/combined)",
                    Format::NAMES
                ))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for f in [
            Format::Common,
            Format::Combined,
            Format::CombinedWithTime(TimeUnit::Seconds),
            Format::CombinedWithTime(TimeUnit::Microseconds),
        ] {
            assert_eq!(f.name().parse::<Format>(), Ok(f));
        }
        let err = "w3c".parse::<Format>().unwrap_err();
        assert!(err.contains("nginx-timed"), "{err}");
    }
}
