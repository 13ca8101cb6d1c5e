//! Request head parsing with limits, on `httparse`, and the RFC 9112 / 9110 checks that
//! `httparse` leaves to its caller.
//!
//! `httparse` already refuses malformed request lines, field names with whitespace before the
//! colon, obs-fold, and CR / NUL / other control bytes inside field values. This module adds
//! what needs the whole head: the size limits (414, 431), `Host` rules, `Content-Length` and
//! `Transfer-Encoding` framing, the method table (405 / 501) and version checks (505).
//!
//! Parsing is resumable in the simplest way: `parse` on a partial head returns `Ok(None)` and
//! the caller calls it again with more bytes; nothing is kept between calls. A complete head
//! costs one pass of `httparse` plus one pass over the known fields.

use std::fmt;

/// Limits on what a client may send, with the defaults of the foundation issue (nginx uses
/// similar figures).
#[derive(Debug, Clone)]
pub struct Limits {
    /// Longest request target, in bytes (default 8 KiB); longer gets 414.
    pub max_target: usize,
    /// Longest header section including the request line (default 16 KiB); longer gets 431.
    pub max_head: usize,
    /// Most header fields (default 100); more gets 431.
    pub max_headers: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_target: 8 * 1024,
            max_head: 16 * 1024,
            max_headers: 100,
        }
    }
}

/// The request methods this crate knows; anything else is `Unknown` (501).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// GET
    Get,
    /// HEAD
    Head,
    /// A method RFC 9110 or RFC 5789 defines that a static-file server does not allow (405).
    OtherKnown,
    /// A method nobody here knows (501).
    Unknown,
}

impl Method {
    /// The class of a method by its name (case-sensitive, as RFC 9110 says).
    pub fn classify(name: &str) -> Method {
        match name {
            "GET" => Method::Get,
            "HEAD" => Method::Head,
            "POST" | "PUT" | "DELETE" | "CONNECT" | "OPTIONS" | "TRACE" | "PATCH" => {
                Method::OtherKnown
            }
            _ => Method::Unknown,
        }
    }
}

/// HTTP/1.0 or HTTP/1.1: the only versions served (others get 505).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// HTTP/1.0
    Http10,
    /// HTTP/1.1
    Http11,
}

impl Version {
    /// The version as it appears on the request line.
    pub fn as_str(self) -> &'static str {
        match self {
            Version::Http10 => "HTTP/1.0",
            Version::Http11 => "HTTP/1.1",
        }
    }
}

/// How the request's body is framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    /// No body, or `Content-Length: 0`.
    None,
    /// `Content-Length: n` with n > 0.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
}

/// A parsed request head, borrowing from the read buffer.
#[derive(Debug)]
pub struct Request<'b> {
    /// The method as classified.
    pub method: Method,
    /// The method as sent (for the log and error pages).
    pub method_name: &'b str,
    /// The request target as sent (origin-form or absolute-form).
    pub target: &'b str,
    /// The protocol version.
    pub version: Version,
    /// The `Host` field's value, if present.
    pub host: Option<&'b [u8]>,
    /// `Connection: close` was sent.
    pub conn_close: bool,
    /// `Connection: keep-alive` was sent (matters for HTTP/1.0).
    pub conn_keep_alive: bool,
    /// How the body is framed.
    pub body: Body,
    /// `If-Match`, raw.
    pub if_match: Option<&'b [u8]>,
    /// `If-Unmodified-Since`, raw.
    pub if_unmodified_since: Option<&'b [u8]>,
    /// `If-Modified-Since`, raw.
    pub if_modified_since: Option<&'b [u8]>,
    /// `If-None-Match`, raw.
    pub if_none_match: Option<&'b [u8]>,
    /// `Range`, raw.
    pub range: Option<&'b [u8]>,
    /// `If-Range`, raw.
    pub if_range: Option<&'b [u8]>,
    /// `Referer`, raw, for the access log.
    pub referer: Option<&'b [u8]>,
    /// `User-Agent`, raw, for the access log.
    pub user_agent: Option<&'b [u8]>,
    /// Bytes of the head, including the blank line that ends it.
    pub head_len: usize,
}

impl Request<'_> {
    /// Whether the connection may stay open after this request's response, as RFC 9112 §9.3
    /// decides from the version and the `Connection` field.
    pub fn keep_alive(&self) -> bool {
        match self.version {
            Version::Http11 => !self.conn_close,
            Version::Http10 => self.conn_keep_alive && !self.conn_close,
        }
    }
}

/// Why a request head was refused. Each kind maps to one status code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseError {
    /// The request line or a header field is malformed (400).
    Malformed,
    /// HTTP/1.1 without `Host` (400).
    MissingHost,
    /// More than one `Host` (400).
    DuplicateHost,
    /// A `Host` value that is not a valid authority (400).
    InvalidHost,
    /// An invalid or conflicting `Content-Length` (400).
    InvalidContentLength,
    /// Both `Content-Length` and `Transfer-Encoding` (400, then close).
    LengthAndEncoding,
    /// `Transfer-Encoding` whose final coding is not chunked, or in an HTTP/1.0 request (400).
    InvalidTransferEncoding,
    /// A transfer coding this server does not implement (501).
    UnknownTransferEncoding,
    /// The request target is longer than the limit (414).
    TargetTooLong,
    /// The header section is larger than the limit or has too many fields (431).
    HeadTooLarge,
    /// A well-formed version other than 1.0 and 1.1 (505).
    VersionNotSupported,
}

impl ParseError {
    /// The status code that answers this error.
    pub fn status(self) -> u16 {
        match self {
            ParseError::TargetTooLong => 414,
            ParseError::HeadTooLarge => 431,
            ParseError::UnknownTransferEncoding => 501,
            ParseError::VersionNotSupported => 505,
            _ => 400,
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match self {
            ParseError::Malformed => "malformed request line or header field",
            ParseError::MissingHost => "HTTP/1.1 request without Host",
            ParseError::DuplicateHost => "more than one Host field",
            ParseError::InvalidHost => "invalid Host field",
            ParseError::InvalidContentLength => "invalid or conflicting Content-Length",
            ParseError::LengthAndEncoding => "both Content-Length and Transfer-Encoding",
            ParseError::InvalidTransferEncoding => "invalid Transfer-Encoding",
            ParseError::UnknownTransferEncoding => "unknown transfer coding",
            ParseError::TargetTooLong => "request target too long",
            ParseError::HeadTooLarge => "header section too large",
            ParseError::VersionNotSupported => "HTTP version not supported",
        };
        f.write_str(text)
    }
}

impl std::error::Error for ParseError {}

/// Parses one request head from the start of `buf`.
///
/// Returns `Ok(None)` when the head is not complete yet (read more and call again), the
/// request when it is, or the error that decides the response.
pub fn parse<'b>(buf: &'b [u8], limits: &Limits) -> Result<Option<Request<'b>>, ParseError> {
    // Uninitialised: zeroing 128 headers (4 KiB) per request would cost more than parsing.
    let mut headers: [std::mem::MaybeUninit<httparse::Header<'b>>; 128] =
        [const { std::mem::MaybeUninit::uninit() }; 128];
    let max_headers = limits.max_headers.min(headers.len());
    let mut req = httparse::Request::new(&mut []);
    let head_len = match req.parse_with_uninit_headers(buf, &mut headers[..max_headers]) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return partial(buf, limits),
        Err(httparse::Error::TooManyHeaders) => return Err(ParseError::HeadTooLarge),
        Err(httparse::Error::Version) => return Err(version_error(buf)),
        Err(_) => return Err(oversize(buf, limits).unwrap_or(ParseError::Malformed)),
    };
    let (Some(method_name), Some(target), Some(minor)) = (req.method, req.path, req.version) else {
        return Err(ParseError::Malformed);
    };
    if target.len() > limits.max_target {
        return Err(ParseError::TargetTooLong);
    }
    if head_len > limits.max_head {
        return Err(ParseError::HeadTooLarge);
    }
    let version = if minor == 0 {
        Version::Http10
    } else {
        Version::Http11
    };
    let mut out = Request {
        method: Method::classify(method_name),
        method_name,
        target,
        version,
        host: None,
        conn_close: false,
        conn_keep_alive: false,
        body: Body::None,
        if_match: None,
        if_unmodified_since: None,
        if_modified_since: None,
        if_none_match: None,
        range: None,
        if_range: None,
        referer: None,
        user_agent: None,
        head_len,
    };
    let fields = Fields::collect(&mut out, req.headers)?;
    fields.check(&mut out)?;
    Ok(Some(out))
}

/// What the field pass found that needs checking once all fields are seen.
#[derive(Default)]
struct Fields {
    hosts: usize,
    content_length: Option<u64>,
    transfer_encoding: Option<TransferEncoding>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum TransferEncoding {
    Chunked,
    NotChunkedLast,
    Unknown,
}

impl Fields {
    /// One pass over the fields: the ones a static server acts on are kept, the others
    /// skipped. Names are compared case-insensitively (RFC 9110 §5.1).
    fn collect<'b>(
        out: &mut Request<'b>,
        headers: &[httparse::Header<'b>],
    ) -> Result<Fields, ParseError> {
        let mut fields = Fields::default();
        for header in headers {
            let name = header.name;
            let value = header.value;
            let is = |known: &str| name.eq_ignore_ascii_case(known);
            match name.len() {
                4 if is("host") => {
                    fields.hosts += 1;
                    out.host = Some(trim_ows(value));
                }
                5 if is("range") => out.range = Some(trim_ows(value)),
                7 if is("referer") => out.referer = Some(trim_ows(value)),
                8 if is("if-range") => out.if_range = Some(trim_ows(value)),
                8 if is("if-match") => out.if_match = Some(trim_ows(value)),
                10 if is("connection") => {
                    for token in value.split(|&b| b == b',').map(trim_ows) {
                        if token.eq_ignore_ascii_case(b"close") {
                            out.conn_close = true;
                        } else if token.eq_ignore_ascii_case(b"keep-alive") {
                            out.conn_keep_alive = true;
                        }
                    }
                }
                10 if is("user-agent") => out.user_agent = Some(trim_ows(value)),
                13 if is("if-none-match") => out.if_none_match = Some(trim_ows(value)),
                14 if is("content-length") => {
                    let length = content_length(value)?;
                    if fields.content_length.is_some_and(|seen| seen != length) {
                        return Err(ParseError::InvalidContentLength);
                    }
                    fields.content_length = Some(length);
                }
                17 if is("transfer-encoding") => {
                    fields.transfer_encoding =
                        Some(transfer_encoding(value, fields.transfer_encoding));
                }
                17 if is("if-modified-since") => out.if_modified_since = Some(trim_ows(value)),
                19 if is("if-unmodified-since") => out.if_unmodified_since = Some(trim_ows(value)),
                _ => {}
            }
        }
        Ok(fields)
    }

    fn check(self, out: &mut Request<'_>) -> Result<(), ParseError> {
        match self.hosts {
            0 if out.version == Version::Http11 => return Err(ParseError::MissingHost),
            0 | 1 => {}
            _ => return Err(ParseError::DuplicateHost),
        }
        if out.host.is_some_and(|host| !valid_host(host)) {
            return Err(ParseError::InvalidHost);
        }
        out.body = match (self.content_length, self.transfer_encoding) {
            (Some(_), Some(_)) => return Err(ParseError::LengthAndEncoding),
            (_, Some(_)) if out.version == Version::Http10 => {
                return Err(ParseError::InvalidTransferEncoding)
            }
            (_, Some(TransferEncoding::Unknown)) => {
                return Err(ParseError::UnknownTransferEncoding)
            }
            (_, Some(TransferEncoding::NotChunkedLast)) => {
                return Err(ParseError::InvalidTransferEncoding)
            }
            (_, Some(TransferEncoding::Chunked)) => Body::Chunked,
            (Some(0) | None, None) => Body::None,
            (Some(n), None) => Body::Length(n),
        };
        Ok(())
    }
}

/// `Content-Length = 1*DIGIT`; a list of identical values (from a proxy that merged fields)
/// is accepted, as RFC 9110 §8.6 allows; anything else is invalid.
fn content_length(value: &[u8]) -> Result<u64, ParseError> {
    let mut length = None;
    for item in value.split(|&b| b == b',').map(trim_ows) {
        if item.is_empty() || !item.iter().all(u8::is_ascii_digit) {
            return Err(ParseError::InvalidContentLength);
        }
        let mut n: u64 = 0;
        for &digit in item {
            n = n
                .checked_mul(10)
                .and_then(|n| n.checked_add(u64::from(digit - b'0')))
                .ok_or(ParseError::InvalidContentLength)?;
        }
        if length.is_some_and(|seen| seen != n) {
            return Err(ParseError::InvalidContentLength);
        }
        length = Some(n);
    }
    length.ok_or(ParseError::InvalidContentLength)
}

/// Classifies the codings of a `Transfer-Encoding` field (several fields form one list).
fn transfer_encoding(value: &[u8], earlier: Option<TransferEncoding>) -> TransferEncoding {
    if earlier == Some(TransferEncoding::Unknown) {
        return TransferEncoding::Unknown;
    }
    let mut last = earlier.unwrap_or(TransferEncoding::NotChunkedLast);
    for coding in value.split(|&b| b == b',').map(trim_ows) {
        if coding.is_empty() {
            continue;
        }
        // Parameters (`;q=...`) do not change the coding's name.
        let name = trim_ows(coding.split(|&b| b == b';').next().unwrap_or(coding));
        last = if name.eq_ignore_ascii_case(b"chunked") {
            TransferEncoding::Chunked
        } else if [
            &b"gzip"[..],
            b"x-gzip",
            b"deflate",
            b"compress",
            b"x-compress",
            b"identity",
        ]
        .iter()
        .any(|known| name.eq_ignore_ascii_case(known))
        {
            // Known codings, but this server decodes none of them: after them, only chunked
            // may frame the body.
            TransferEncoding::NotChunkedLast
        } else {
            return TransferEncoding::Unknown;
        };
    }
    last
}

/// `Host = uri-host [ ":" port ]` (RFC 9110 §7.2): reg-name characters, IP literals in
/// brackets, percent escapes. Empty is allowed (RFC 9112 §3.2).
fn valid_host(host: &[u8]) -> bool {
    host.iter().all(|&b| {
        b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'-' | b'.'
                    | b'_'
                    | b'~'
                    | b'%'
                    | b'!'
                    | b'$'
                    | b'&'
                    | b'\''
                    | b'('
                    | b')'
                    | b'*'
                    | b'+'
                    | b','
                    | b';'
                    | b'='
                    | b':'
                    | b'['
                    | b']'
            )
    })
}

/// Trims optional whitespace (spaces and tabs, RFC 9110 §5.6.3) from both ends of a field
/// value or list element.
pub fn trim_ows(value: &[u8]) -> &[u8] {
    let start = value
        .iter()
        .position(|b| !matches!(b, b' ' | b'\t'))
        .unwrap_or(value.len());
    let end = value
        .iter()
        .rposition(|b| !matches!(b, b' ' | b'\t'))
        .map_or(start, |i| i + 1);
    &value[start..end]
}

/// A partial head: fine unless it already breaks a limit.
fn partial<'b>(buf: &'b [u8], limits: &Limits) -> Result<Option<Request<'b>>, ParseError> {
    match oversize(buf, limits) {
        Some(err) => Err(err),
        None => Ok(None),
    }
}

/// Which limit an incomplete or unparsable head breaks, if any: a request line that is
/// already longer than a target may be gets 414, a head longer than the limit 431.
fn oversize(buf: &[u8], limits: &Limits) -> Option<ParseError> {
    // Room for the method, two spaces and the version around the longest target.
    const LINE_SLACK: usize = 32;
    let line_end = buf.iter().position(|&b| b == b'\n');
    let line_len = line_end.unwrap_or(buf.len());
    let target_len = request_line_target_len(&buf[..line_len]);
    if target_len > limits.max_target
        || (line_end.is_none() && line_len > limits.max_target + LINE_SLACK)
    {
        return Some(ParseError::TargetTooLong);
    }
    if buf.len() > limits.max_head {
        return Some(ParseError::HeadTooLarge);
    }
    None
}

fn request_line_target_len(line: &[u8]) -> usize {
    let mut parts = line.split(|&b| b == b' ');
    parts.next();
    parts.next().map_or(0, <[u8]>::len)
}

/// httparse says "bad version" both for `HTTP/2.0` (well-formed, unsupported: 505) and for
/// `HTTP/x` (malformed: 400); the request line tells them apart.
fn version_error(buf: &[u8]) -> ParseError {
    let line_end = buf
        .iter()
        .position(|&b| b == b'\r' || b == b'\n')
        .unwrap_or(buf.len());
    let line = &buf[..line_end];
    let version = line.rsplit(|&b| b == b' ').next().unwrap_or(&[]);
    match version {
        [b'H', b'T', b'T', b'P', b'/', major, b'.', minor]
            if major.is_ascii_digit() && minor.is_ascii_digit() =>
        {
            ParseError::VersionNotSupported
        }
        _ => ParseError::Malformed,
    }
}

#[cfg(test)]
mod tests;
