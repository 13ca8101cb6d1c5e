//! One log line into an [`Entry`].
//!
//! Fields are found by their delimiters, not by splitting on spaces, because the request and
//! the user agent hold spaces and (escaped) quotes. Apache escapes `"` and `\` with a
//! backslash and other bytes as `\xhh`; nginx writes `\xhh` for both; both are undone.

use std::borrow::Cow;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use compact_str::CompactString;

use crate::clf_time;
use crate::format::{Format, TimeUnit};

/// One request as the server logged it.
///
/// Its text fields are [`CompactString`]s: a client address, a method, a protocol and most
/// paths fit in the 24 bytes a `String` takes anyway, so that a line costs no allocation for
/// them (a log of millions of lines spent a quarter of its reading time in `malloc` and
/// `free` when each was a `String`), and a table keyed by them compares keys without
/// following a pointer.
///
/// A request the server could not read — nginx logs `"-"` for a connection closed or timed
/// out before a request line (status 400 or 408), and the raw bytes when, say, a TLS
/// handshake reaches a plain-text port — is kept as an entry whose `method` and `path` are
/// `"-"` (and `query` `None`, `protocol` empty): it is a response the server gave, so it
/// counts in the request rate and the status mix, but it names no URL, so popularity,
/// `fileset like` and `--replay` leave it out. Only a line whose fields themselves cannot be
/// found (time, status, bytes) is a bad line.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The logged instant (one-second resolution in CLF).
    pub time: SystemTime,
    /// The logged time zone's offset east of UTC, seconds (`-0700` is -25 200): the day the
    /// log names is that of the instant in this zone, as GoAccess counts a day's visitors.
    pub zone_s: i32,
    /// The client as logged (`%h`: an IPv4 or IPv6 address, or a host name). Webscope never
    /// writes it out: it is used only to count requests per client.
    pub client: CompactString,
    /// The request method, or `"-"` when the server logged no readable request.
    pub method: CompactString,
    /// The request target without its query, as logged (escapes undone), or `"-"`.
    pub path: CompactString,
    /// What followed the first `?` of the target.
    pub query: Option<CompactString>,
    /// `HTTP/1.1` etc.; empty when the request line had none (HTTP/0.9 or cut short).
    pub protocol: CompactString,
    /// The final status (`%>s`).
    pub status: u16,
    /// Body bytes sent (`%b`, `$body_bytes_sent`); `-` is 0.
    pub bytes: u64,
    /// The Referer header; `None` when logged as `-` or the format has none.
    pub referer: Option<CompactString>,
    /// The User-Agent header; `None` when logged as `-` or the format has none.
    pub user_agent: Option<CompactString>,
    /// The logged request time, with a timed [`Format`].
    pub request_time: Option<Duration>,
    /// Index of the file it came from, into the paths given to [`crate::read_logs`].
    pub file: usize,
    /// Line number in that file, from 1.
    pub line: u64,
}

impl Entry {
    /// Whether the server logged a readable request (a URL to count, serve or replay).
    pub fn has_request(&self) -> bool {
        self.method != "-"
    }

    /// The day the log names for this entry, in its own time zone: days since 1970-01-01.
    pub fn logged_day(&self) -> i64 {
        let secs = match self.time.duration_since(UNIX_EPOCH) {
            Ok(d) => d.as_secs() as i64,
            Err(before) => -(before.duration().as_secs() as i64),
        };
        (secs + i64::from(self.zone_s)).div_euclid(86_400)
    }
}

/// Whether a logged request of `method` is one webscope sends again and a file set answers:
/// GET and HEAD only. A log keeps no request body (POST, PUT, PATCH), a file set answers GET
/// and HEAD alone, and a replay must change nothing on its target (a logged DELETE sent to a
/// real site would delete). The one rule of which requests count: `load --replay` sends
/// these, `fileset like` makes files for them, and `characterize` counts references among
/// them (`characterize::is_reference`).
pub fn replayed(method: &str) -> bool {
    matches!(method, "GET" | "HEAD")
}

/// Parses one line (without its line end). `None` for `format` auto-detects Common and
/// Combined; text after the user agent (nginx formats often append fields) is ignored unless
/// the format names a request time there. The error says why, in a few words.
///
/// A Combined line cut short in its last quoted field (a user agent, or a referer with no
/// user agent after it, without its closing quote) is accepted, the field being the rest of
/// the line, as GoAccess accepts it: servers cut long headers and truncate the last line of
/// a log being written, and the request, status and size are all there.
pub fn parse_line(line: &str, format: Option<Format>) -> Result<Entry, &'static str> {
    parse_line_repairing(line, format).map(|(entry, _)| entry)
}

/// [`parse_line`], saying whether the line was cut short in its last quoted field and
/// accepted all the same (the reader counts such lines as repaired).
pub(crate) fn parse_line_repairing(
    line: &str,
    format: Option<Format>,
) -> Result<(Entry, bool), &'static str> {
    let line = line.trim_end_matches(['\r', '\n']);
    let (client, rest) = line.split_once(' ').ok_or("no fields")?;
    if client.is_empty() {
        return Err("no client field");
    }
    let open = rest.find('[').ok_or("no [time] field")?;
    let rest = &rest[open + 1..];
    let close = rest.find(']').ok_or("no [time] field")?;
    let (secs, zone_s) = clf_time::parse_zoned(&rest[..close]).ok_or("bad [time] field")?;
    let time = to_system_time(secs).ok_or("time out of range")?;
    let rest = rest[close + 1..]
        .strip_prefix(" \"")
        .ok_or("no quoted request field")?;
    let end = request_end(rest.as_bytes()).ok_or("request field not closed by a quote")?;
    let request = unescape(&rest[..end]);
    let rest = &rest[end + 2..];
    let (status, rest) = rest.split_at(3);
    let status: u16 = status.parse().map_err(|_| "bad status field")?;
    let rest = rest.strip_prefix(' ').unwrap_or(rest);
    let (bytes, rest) = rest.split_once(' ').unwrap_or((rest, ""));
    let bytes = match bytes {
        "-" => 0,
        b => b.parse().map_err(|_| "bad bytes field")?,
    };
    let (referer, user_agent, request_time, repaired) = tail(rest, format)?;
    let (method, path, query, protocol) = split_request(&request);
    let entry = Entry {
        time,
        zone_s,
        client: CompactString::new(client),
        method,
        path,
        query,
        protocol,
        status,
        bytes,
        referer,
        user_agent,
        request_time,
        file: 0,
        line: 0,
    };
    Ok((entry, repaired))
}

/// Referer, user agent, request time, and whether the last quoted field lacked its closing
/// quote.
type Tail = (
    Option<CompactString>,
    Option<CompactString>,
    Option<Duration>,
    bool,
);

/// Referer, user agent and request time from what follows the bytes field.
fn tail(rest: &str, format: Option<Format>) -> Result<Tail, &'static str> {
    let rest = rest.trim_start();
    match format {
        Some(Format::Common) => return Ok((None, None, None, false)),
        None if rest.is_empty() => return Ok((None, None, None, false)),
        None if !rest.starts_with('"') => {
            return Err("text after the bytes field is not a quoted referer")
        }
        Some(_) if rest.is_empty() => {
            return Err("no referer and user agent (a Common log? try --format common)")
        }
        _ => {}
    }
    let referer = quoted(rest);
    let user_agent = referer.and_then(|(_, after)| quoted(after.trim_start()));
    // Only a line whose fields do not all close is looked at again as one cut short: nearly
    // every line closes them, and is scanned once.
    let (Some((referer, _)), Some((user_agent, rest))) = (referer, user_agent) else {
        // A timed format has a field after the user agent, so a quote missing there cannot
        // be told from a line that is wrong: only the untimed formats repair.
        let timed = matches!(format, Some(Format::CombinedWithTime(_)));
        if let Some((cut_referer, cut_agent)) = cut_short(rest).filter(|_| !timed) {
            return Ok((header(cut_referer), cut_agent.and_then(header), None, true));
        }
        return Err(match referer {
            None => "bad referer field",
            Some(_) => "bad user-agent field",
        });
    };
    let request_time = match format {
        Some(Format::CombinedWithTime(unit)) => Some(request_time(rest, unit)?),
        _ => None,
    };
    Ok((header(referer), header(user_agent), request_time, false))
}

/// Referer and user agent of a line cut short in its last quoted field: the user agent (or,
/// with none, the referer) opened by a quote that never closes. `None` for a line whose
/// fields all close (or one that is wrong earlier: the caller says why).
fn cut_short(rest: &str) -> Option<(&str, Option<&str>)> {
    match quoted(rest) {
        Some((referer, after)) => Some((referer, Some(unclosed(after.trim_start())?))),
        None => Some((unclosed(rest)?, None)),
    }
}

/// The contents of a field opened by a quote that never closes (trailing blanks dropped).
fn unclosed(field: &str) -> Option<&str> {
    let body = field.strip_prefix('"')?;
    quoted(field)
        .is_none()
        .then(|| body.trim_end_matches([' ', '\t']))
}

fn request_time(rest: &str, unit: TimeUnit) -> Result<Duration, &'static str> {
    let field = rest
        .split_whitespace()
        .next()
        .ok_or("no request-time field")?;
    match unit {
        TimeUnit::Seconds => field
            .parse::<f64>()
            .ok()
            .and_then(|s| Duration::try_from_secs_f64(s).ok())
            .ok_or("bad request-time field (seconds expected, e.g. 0.004)"),
        TimeUnit::Microseconds => field
            .parse::<u64>()
            .map(Duration::from_micros)
            .map_err(|_| "bad request-time field (whole microseconds expected)"),
    }
}

/// A quoted field at the start of `text`: its raw contents and what follows the quote.
fn quoted(text: &str) -> Option<(&str, &str)> {
    let body = text.strip_prefix('"')?;
    let b = body.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return Some((&body[..i], &body[i + 1..])),
            _ => i += 1,
        }
    }
    None
}

/// `-` is an absent header.
fn header(raw: &str) -> Option<CompactString> {
    (raw != "-").then(|| CompactString::new(unescape(raw)))
}

/// Where the request field ends: the first unescaped `"` followed by ` ddd` (the status).
/// Looking for the status as well keeps old Apache logs, which wrote quotes in the request
/// unescaped, readable.
fn request_end(b: &[u8]) -> Option<usize> {
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' if b.len() >= i + 5
                && b[i + 1] == b' '
                && b[i + 2..i + 5].iter().all(u8::is_ascii_digit)
                && b.get(i + 5).is_none_or(|&c| c == b' ') =>
            {
                return Some(i)
            }
            _ => i += 1,
        }
    }
    None
}

/// Undoes Apache's and nginx's escapes: `\"`, `\\` and `\xhh`. Bytes that are not UTF-8
/// become U+FFFD.
fn unescape(raw: &str) -> Cow<'_, str> {
    if !raw.contains('\\') {
        return Cow::Borrowed(raw);
    }
    let b = raw.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 1 < b.len() {
            match b[i + 1] {
                c @ (b'"' | b'\\') => {
                    out.push(c);
                    i += 2;
                    continue;
                }
                b'x' if i + 3 < b.len() => {
                    if let Ok(v) = u8::from_str_radix(&raw[i + 2..i + 4], 16) {
                        out.push(v);
                        i += 4;
                        continue;
                    }
                }
                _ => {}
            }
        }
        out.push(b[i]);
        i += 1;
    }
    Cow::Owned(String::from_utf8_lossy(&out).into_owned())
}

/// Method, path, query and protocol of a request line; `("-", "-", None, "")` when it is not
/// one (see [`Entry`]).
fn split_request(
    request: &str,
) -> (
    CompactString,
    CompactString,
    Option<CompactString>,
    CompactString,
) {
    let dash = || CompactString::const_new("-");
    let unreadable = || (dash(), dash(), None, CompactString::default());
    let Some((method, rest)) = request.split_once(' ') else {
        return unreadable();
    };
    if method.is_empty() || method.len() > 32 || !method.bytes().all(is_tchar) {
        return unreadable();
    }
    let (target, protocol) = match rest.rsplit_once(' ') {
        Some((t, p)) if p.starts_with("HTTP/") => (t, p),
        _ => (rest, ""),
    };
    if target.is_empty() || target.contains(char::is_control) {
        return unreadable();
    }
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p, Some(CompactString::new(q))),
        None => (target, None),
    };
    (
        CompactString::new(method),
        CompactString::new(path),
        query,
        CompactString::new(protocol),
    )
}

/// RFC 9110's `tchar`: what a method may be made of.
fn is_tchar(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&c)
}

fn to_system_time(secs: i64) -> Option<SystemTime> {
    if secs >= 0 {
        UNIX_EPOCH.checked_add(Duration::from_secs(secs as u64))
    } else {
        UNIX_EPOCH.checked_sub(Duration::from_secs(secs.unsigned_abs()))
    }
}

#[cfg(test)]
#[path = "line_tests.rs"]
mod tests;
