//! HTTP/1.1 response heads and bodies as a client reads them: the load generator's parser.
//!
//! [`parse_head`] reads a status line and header fields and decides how the body is delimited
//! (RFC 9112 §6.3): no body for 1xx, 204, 304 and responses to HEAD; a chunked body when
//! `Transfer-Encoding` ends in `chunked`; `Content-Length` bytes; or bytes until the server
//! closes. It also says whether the connection may be reused. Like the request parser it is
//! resumable in the simplest way: `Ok(None)` on a partial head, call again with more bytes.
//! [`Chunked`] walks a chunked body incrementally, counting its data without copying it, with
//! its state kept between calls, as nginx's parser does.
//!
//! Two paths, one answer. The load generator parses one head per request on its hot path, and
//! profiles showed `httparse`'s byte-by-byte validation of every header value taking a tenth
//! of the generator's CPU against nginx's nine-field heads. So a head is first scanned line by
//! line (eight bytes at a time for the line ends), looking only at the three fields that
//! decide framing; anything unusual (an obs-fold, a bare LF, a status line that is not
//! `HTTP/1.x NNN`) is handed to [`parse_head_strict`], built on `httparse`, which decides.
//! The scan checks the status line and the line structure, not every byte of every field
//! nor their number: a load generator must read what servers send, quickly; it is not
//! their validator. A test checks that both paths agree on generated heads.
//!
//! Nothing here allocates, but [`whole`], which decodes a chunked body into memory for the
//! lab's one-off checks and scrapes.

use std::fmt;

/// How many header fields a response may have before it is refused.
pub const MAX_HEADERS: usize = 64;

/// How the body of a response is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    /// No body at all (1xx, 204, 304, or a response to HEAD).
    Empty,
    /// Exactly this many bytes.
    Length(u64),
    /// Chunked transfer coding: walk it with [`Chunked`].
    Chunked,
    /// Everything until the server closes the connection.
    UntilClose,
}

/// A parsed response head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    /// The status code.
    pub status: u16,
    /// Bytes of the head, including the blank line: the body starts here.
    pub len: usize,
    /// How the body is delimited.
    pub body: Body,
    /// Whether the connection may carry another request after this response.
    pub keep_alive: bool,
}

impl Head {
    /// An interim (1xx) response, to skip before the real one (except 101, which ends HTTP).
    pub fn is_interim(&self) -> bool {
        (100..200).contains(&self.status) && self.status != 101
    }
}

/// Why a response head or body was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// The bytes are not an HTTP/1.x response head.
    Malformed,
    /// More than [`MAX_HEADERS`] header fields.
    TooManyHeaders,
    /// `Content-Length` is not a number, or two of them disagree.
    BadLength,
    /// A chunk size line or a chunk's end is not what RFC 9112 §7.1 says.
    BadChunk,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Error::Malformed => "malformed response head",
            Error::TooManyHeaders => "too many header fields in the response",
            Error::BadLength => "bad Content-Length in the response",
            Error::BadChunk => "bad chunked encoding in the response",
        })
    }
}

impl std::error::Error for Error {}

/// Parses a response head from the start of `buf`. `to_head` says whether the request was
/// HEAD (whose response has no body whatever its fields say).
pub fn parse_head(buf: &[u8], to_head: bool) -> Result<Option<Head>, Error> {
    match scan(buf)? {
        Scan::Head(fields) => Ok(Some(fields.head(to_head))),
        Scan::Partial => Ok(None),
        Scan::Unusual => parse_head_strict(buf, to_head),
    }
}

/// Parses a response head with `httparse`'s full validation (what [`parse_head`] falls back
/// to when its scan meets anything unusual).
pub fn parse_head_strict(buf: &[u8], to_head: bool) -> Result<Option<Head>, Error> {
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut fields);
    let len = match response.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(Error::TooManyHeaders),
        Err(_) => return Err(Error::Malformed),
    };
    let status = response.code.ok_or(Error::Malformed)?;
    let http11 = response.version == Some(1);
    let mut length: Option<u64> = None;
    let mut chunked = false;
    let mut transfer_encoding = false;
    let mut close = false;
    let mut keep_alive_token = false;
    for field in response.headers.iter() {
        let name = field.name.as_bytes();
        if name.eq_ignore_ascii_case(b"content-length") {
            let value = parse_length(field.value).ok_or(Error::BadLength)?;
            if length.is_some_and(|seen| seen != value) {
                return Err(Error::BadLength);
            }
            length = Some(value);
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            transfer_encoding = true;
            // The last coding decides whether the body is chunked (RFC 9112 §6.3 item 4).
            chunked = field
                .value
                .rsplit(|&b| b == b',')
                .next()
                .is_some_and(|last| trim(last).eq_ignore_ascii_case(b"chunked"));
        } else if name.eq_ignore_ascii_case(b"connection") {
            for token in field.value.split(|&b| b == b',') {
                let token = trim(token);
                close |= token.eq_ignore_ascii_case(b"close");
                keep_alive_token |= token.eq_ignore_ascii_case(b"keep-alive");
            }
        }
    }
    Ok(Some(
        Framing {
            status,
            len,
            http11,
            length,
            transfer_encoding,
            chunked,
            close,
            keep_alive_token,
        }
        .head(to_head),
    ))
}

/// What a head says about framing, before the request method is taken into account.
#[derive(Debug, Clone, Copy, Default)]
struct Framing {
    status: u16,
    len: usize,
    http11: bool,
    length: Option<u64>,
    transfer_encoding: bool,
    chunked: bool,
    close: bool,
    keep_alive_token: bool,
}

impl Framing {
    fn head(self, to_head: bool) -> Head {
        let status = self.status;
        let body = if to_head || (100..200).contains(&status) || status == 204 || status == 304 {
            Body::Empty
        } else if self.transfer_encoding {
            if self.chunked {
                Body::Chunked
            } else {
                Body::UntilClose
            }
        } else {
            match self.length {
                Some(0) => Body::Empty,
                Some(n) => Body::Length(n),
                None => Body::UntilClose,
            }
        };
        let keep_alive =
            !self.close && (self.http11 || self.keep_alive_token) && body != Body::UntilClose;
        Head {
            status,
            len: self.len,
            body,
            keep_alive,
        }
    }
}

/// What the fast scan found.
enum Scan {
    /// A complete head, fully understood.
    Head(Framing),
    /// The head is not complete yet.
    Partial,
    /// Something the scan does not judge: ask `httparse`.
    Unusual,
}

/// The fast path: checks the status line's shape, walks the lines, reads the framing fields.
fn scan(buf: &[u8]) -> Result<Scan, Error> {
    // "HTTP/1.x NNN" and then a space or the end of the line.
    if buf.len() < 13 {
        let prefix = b"HTTP/1.";
        let n = buf.len().min(prefix.len());
        return Ok(if buf[..n] == prefix[..n] {
            Scan::Partial
        } else {
            Scan::Unusual
        });
    }
    if &buf[..7] != b"HTTP/1."
        || !matches!(buf[7], b'0' | b'1')
        || buf[8] != b' '
        || !buf[9..12].iter().all(u8::is_ascii_digit)
        || !matches!(buf[12], b' ' | b'\r')
    {
        return Ok(Scan::Unusual);
    }
    let mut framing = Framing {
        http11: buf[7] == b'1',
        status: buf[9..12]
            .iter()
            .fold(0u16, |n, &d| n * 10 + u16::from(d - b'0')),
        ..Framing::default()
    };
    let Some(eol) = find(&buf[12..], b'\n') else {
        return Ok(Scan::Partial);
    };
    let mut at = 12 + eol + 1;
    let mut bad_length = false;
    if buf[at - 2] != b'\r' {
        return Ok(Scan::Unusual);
    }
    loop {
        let rest = &buf[at..];
        match rest {
            [] | [b'\r'] => return Ok(Scan::Partial),
            [b'\r', b'\n', ..] if bad_length => return Err(Error::BadLength),
            [b'\r', b'\n', ..] => {
                framing.len = at + 2;
                return Ok(Scan::Head(framing));
            }
            // obs-fold, bare LF, a line starting with a colon: let httparse judge.
            [b' ' | b'\t' | b'\n' | b':' | b'\r', ..] => return Ok(Scan::Unusual),
            _ => {}
        }
        let Some(eol) = find(rest, b'\n') else {
            return Ok(Scan::Partial);
        };
        if rest[eol - 1] != b'\r' {
            return Ok(Scan::Unusual);
        }
        let line = &rest[..eol - 1];
        // Only three fields matter, two starting with C and one with T: skip the rest fast.
        let first = line[0] | 0x20;
        if first != b'c' && first != b't' {
            at += eol + 1;
            continue;
        }
        if let Some(value) = field_value(line, b"content-length:") {
            // A bad length is reported once the head is complete, as httparse's path does
            // (a partial head is never an error).
            match parse_length(value) {
                Some(n) if framing.length.is_none_or(|seen| seen == n) => framing.length = Some(n),
                _ => bad_length = true,
            }
        } else if let Some(value) = field_value(line, b"connection:") {
            for token in value.split(|&b| b == b',') {
                let token = trim(token);
                framing.close |= token.eq_ignore_ascii_case(b"close");
                framing.keep_alive_token |= token.eq_ignore_ascii_case(b"keep-alive");
            }
        } else if let Some(value) = field_value(line, b"transfer-encoding:") {
            framing.transfer_encoding = true;
            framing.chunked = value
                .rsplit(|&b| b == b',')
                .next()
                .is_some_and(|last| trim(last).eq_ignore_ascii_case(b"chunked"));
        }
        at += eol + 1;
    }
}

/// The value of `line` if its field name (with the colon) is `name`, a lower-case name of
/// at least 8 bytes, in any case. Compares eight bytes at a time with the ASCII case bit
/// set: a letter matches either case, and the only other bytes that could pass (CR for '-',
/// 0x1A for ':') cannot appear in a field name that reached this point.
#[inline]
fn field_value<'a>(line: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
    const CASE: u64 = 0x2020_2020_2020_2020;
    let n = name.len();
    if line.len() < n || n < 8 {
        return None;
    }
    let word = |b: &[u8], at: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&b[at..at + 8]);
        u64::from_le_bytes(w)
    };
    // Whole words, then one last word ending at the name's end (overlapping if need be).
    let mut at = 0;
    while at + 8 <= n {
        if word(line, at) | CASE != word(name, at) {
            return None;
        }
        at += 8;
    }
    if at < n && word(line, n - 8) | CASE != word(name, n - 8) {
        return None;
    }
    Some(&line[n..])
}

/// The first `needle` in `hay`, eight bytes at a time (SWAR: a zero byte in `word ^ pattern`
/// marks a match; the lowest such byte is exact).
#[inline]
fn find(hay: &[u8], needle: u8) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let pattern = ONES * u64::from(needle);
    let mut i = 0;
    while i + 8 <= hay.len() {
        let mut word = [0u8; 8];
        word.copy_from_slice(&hay[i..i + 8]);
        let x = u64::from_le_bytes(word) ^ pattern;
        let zero = x.wrapping_sub(ONES) & !x & HIGHS;
        if zero != 0 {
            return Some(i + (zero.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    hay[i..].iter().position(|&b| b == needle).map(|p| i + p)
}

/// A decimal Content-Length (digits only, at most 19 of them).
fn parse_length(value: &[u8]) -> Option<u64> {
    let digits = trim(value);
    if digits.is_empty() || digits.len() > 19 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(
        digits
            .iter()
            .fold(0u64, |n, &d| n * 10 + u64::from(d - b'0')),
    )
}

fn trim(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |i| i + 1);
    &bytes[start..end]
}

/// Where a chunked body walk stands between two reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Reading the hex digits of a chunk size.
    Size,
    /// Skipping a chunk extension up to the end of the line.
    Extension,
    /// Expecting the LF after a CR ending the size line.
    SizeLf,
    /// Inside a chunk's data, this many bytes left.
    Data(u64),
    /// Expecting the CR after a chunk's data.
    DataCr,
    /// Expecting the LF after a chunk's data.
    DataLf,
    /// At the start of a trailer line (or of the final blank line).
    TrailerStart,
    /// Inside a trailer field, up to its LF.
    Trailer,
    /// Expecting the LF of the final blank line.
    EndLf,
    /// The body is over.
    Done,
}

/// A whole response read into memory (a one-off check or scrape, not the load generator's
/// path, which never copies bodies): its head and its body, decoded from `Content-Length`,
/// chunked coding or the bytes up to the close. Err on a malformed or cut-short response.
pub fn whole(data: &[u8]) -> Result<(Head, std::borrow::Cow<'_, [u8]>), Error> {
    let head = parse_head_strict(data, false)?.ok_or(Error::Malformed)?;
    let rest = &data[head.len..];
    let body = match head.body {
        Body::Empty => std::borrow::Cow::Borrowed(&rest[..0]),
        Body::Length(n) => {
            let n = usize::try_from(n).map_err(|_| Error::BadLength)?;
            std::borrow::Cow::Borrowed(rest.get(..n).ok_or(Error::BadLength)?)
        }
        Body::UntilClose => std::borrow::Cow::Borrowed(rest),
        Body::Chunked => std::borrow::Cow::Owned(dechunk(rest)?),
    };
    Ok((head, body))
}

/// The data of a complete chunked body (extensions and trailers dropped).
fn dechunk(mut data: &[u8]) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    loop {
        let line_end = data
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or(Error::BadChunk)?;
        let size_field = data[..line_end]
            .split(|b| *b == b';')
            .next()
            .ok_or(Error::BadChunk)?;
        let size_text = std::str::from_utf8(size_field).map_err(|_| Error::BadChunk)?;
        let size = usize::from_str_radix(size_text.trim(), 16).map_err(|_| Error::BadChunk)?;
        data = &data[line_end + 2..];
        if size == 0 {
            return Ok(out);
        }
        out.extend_from_slice(data.get(..size).ok_or(Error::BadChunk)?);
        data = data.get(size + 2..).ok_or(Error::BadChunk)?;
    }
}

/// An incremental walker over a chunked body: feed it the bytes as they arrive; it says how
/// many belong to the body, how many of those are data, and when the body ends.
#[derive(Debug, Clone)]
pub struct Chunked {
    state: State,
    size: u64,
    digits: u8,
}

/// What one [`Chunked::feed`] call found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Bytes of the input that belong to the body (the rest belong to what follows).
    pub consumed: usize,
    /// Of those, bytes of chunk data (what the body would be once decoded).
    pub data: u64,
    /// Whether the body ended within the input.
    pub done: bool,
}

impl Default for Chunked {
    fn default() -> Self {
        Chunked::new()
    }
}

impl Chunked {
    /// A walker at the start of a body.
    pub fn new() -> Chunked {
        Chunked {
            state: State::Size,
            size: 0,
            digits: 0,
        }
    }

    /// Walks `input`, stopping at the end of the body if it is inside.
    pub fn feed(&mut self, input: &[u8]) -> Result<Progress, Error> {
        let mut i = 0;
        let mut data = 0u64;
        while i < input.len() && self.state != State::Done {
            if let State::Data(left) = self.state {
                let take = left.min((input.len() - i) as u64);
                i += take as usize;
                data += take;
                self.state = if take == left {
                    State::DataCr
                } else {
                    State::Data(left - take)
                };
                continue;
            }
            let byte = input[i];
            i += 1;
            self.state = match (self.state, byte) {
                (State::Size, b) if b.is_ascii_hexdigit() => {
                    if self.digits == 16 {
                        return Err(Error::BadChunk);
                    }
                    self.digits += 1;
                    self.size = self.size << 4 | u64::from(hex_value(b));
                    State::Size
                }
                (State::Size, b';' | b' ' | b'\t') if self.digits > 0 => State::Extension,
                (State::Size, b'\r') if self.digits > 0 => State::SizeLf,
                (State::Size, b'\n') if self.digits > 0 => self.end_of_size_line(),
                (State::Extension, b'\n') | (State::SizeLf, b'\n') => self.end_of_size_line(),
                (State::Extension, _) => State::Extension,
                (State::DataCr, b'\r') => State::DataLf,
                (State::DataCr, b'\n') | (State::DataLf, b'\n') => State::Size,
                (State::TrailerStart, b'\r') => State::EndLf,
                (State::TrailerStart, b'\n') | (State::EndLf, b'\n') => State::Done,
                (State::TrailerStart, _) => State::Trailer,
                (State::Trailer, b'\n') => State::TrailerStart,
                (State::Trailer, _) => State::Trailer,
                _ => return Err(Error::BadChunk),
            };
        }
        Ok(Progress {
            consumed: i,
            data,
            done: self.state == State::Done,
        })
    }

    fn end_of_size_line(&mut self) -> State {
        let size = self.size;
        self.size = 0;
        self.digits = 0;
        if size == 0 {
            State::TrailerStart
        } else {
            State::Data(size)
        }
    }
}

fn hex_value(b: u8) -> u8 {
    match b {
        b'0'..=b'9' => b - b'0',
        b'a'..=b'f' => b - b'a' + 10,
        _ => b - b'A' + 10,
    }
}

#[cfg(test)]
mod tests;
