//! From a parsed request to a response: the method table, the file lookup, conditional
//! requests (304), ranges (206 / 416), and the error pages. The head and small bodies are
//! appended to the connection's output buffer; large bodies are left to sendfile.

use std::fs::File;
use std::rc::Rc;

use webscope_http::head;
use webscope_http::path;
use webscope_http::request::{Method, Request, Version};

use crate::cache::{Caches, Entry, Resolved};
use crate::files::{self, Lookup, Root};
use crate::range::{self, RangeAnswer};
use crate::techniques::Techniques;
use crate::url_map::{Mapped, UrlMap};
use webscope_http::request::trim_ows;

/// What the connection must do after the head (and maybe the body) is in the output buffer.
#[derive(Debug)]
pub(crate) struct Reply {
    pub status: u16,
    /// Body bytes the response carries (for the log's `%b`).
    pub body_bytes: u64,
    /// The part of the body that is not in the output buffer.
    pub tail: Tail,
    /// The connection must close after this response.
    pub close: bool,
}

impl Tail {
    /// Bytes the tail will send.
    pub(crate) fn len(&self) -> u64 {
        match self {
            Tail::None => 0,
            Tail::Sendfile(_, _, len) | Tail::Mapped(_, _, len) | Tail::Read(_, _, len) => *len,
        }
    }

    /// The byte range of the file the tail sends (None: no tail).
    pub(crate) fn range(&self) -> Option<(u64, u64)> {
        match self {
            Tail::None => None,
            Tail::Sendfile(_, offset, len)
            | Tail::Mapped(_, offset, len)
            | Tail::Read(_, offset, len) => Some((*offset, offset + len)),
        }
    }
}

/// A large body, sent after the head by the technique in force.
#[derive(Debug)]
pub(crate) enum Tail {
    /// Everything is in the output buffer.
    None,
    /// `sendfile(file, offset, len)`.
    Sendfile(Rc<File>, u64, u64),
    /// A write from a mapping of the file.
    Mapped(Rc<memmap2::Mmap>, u64, u64),
    /// Read into a buffer and write, chunk by chunk (the baseline).
    Read(Rc<File>, u64, u64),
}

/// Per-connection scratch space, reused across requests so a request allocates nothing.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    pub open: Vec<u8>,
}

/// What `respond` needs from the worker.
pub(crate) struct Site<'a> {
    pub root: &'a Root,
    pub caches: &'a mut Caches,
    pub techniques: Techniques,
    pub sendfile_threshold: u64,
    /// Targets answered otherwise than by their path (a set like a site's).
    pub urls: Option<&'a UrlMap>,
}

/// Answers `req`, writing into `out`.
pub(crate) fn respond(
    site: &mut Site<'_>,
    req: &Request<'_>,
    keep_alive: bool,
    out: &mut Vec<u8>,
    scratch: &mut Scratch,
) -> Reply {
    let head_only = req.method == Method::Head;
    let conn = ConnHeader::new(keep_alive, req.version);
    let strings = site.techniques.string_cache;
    match req.method {
        Method::Get | Method::Head => {}
        Method::OtherKnown => return not_allowed(out, conn, head_only, strings),
        Method::Unknown => return error(out, 501, conn, head_only, &[], strings),
    }
    let host = req.host.unwrap_or(b"");
    let mut target = req.target;
    match site.urls.and_then(|urls| urls.get(req.target)) {
        Some(Mapped::File(file)) => target = file,
        Some(Mapped::Status(status, location)) => {
            let fields: &[(&str, &[u8])] = match location {
                Some(l) => &[("Location", l)],
                None => &[],
            };
            return error(out, *status, conn, head_only, fields, strings);
        }
        None => {}
    }
    let resolved = site
        .caches
        .resolve(site.root, host, target, &mut scratch.open);
    let lookup = match resolved {
        Resolved::File(entry) => return file_response(site, req, &entry, conn, out, scratch),
        Resolved::BadTarget => return error(out, 400, ConnHeader::Close, head_only, &[], strings),
        Resolved::Other(lookup) => lookup,
    };
    match lookup {
        // `resolve` turns every file into an entry.
        Lookup::File(_) => error(out, 500, ConnHeader::Close, head_only, &[], strings),
        Lookup::DirectoryWithoutSlash => {
            let mut location = path::target_path(req.target)
                .unwrap_or("/")
                .as_bytes()
                .to_vec();
            location.push(b'/');
            error(
                out,
                301,
                conn,
                head_only,
                &[("Location", &location)],
                strings,
            )
        }
        Lookup::NotFound => error(out, 404, conn, head_only, &[], strings),
        Lookup::Forbidden => error(out, 403, conn, head_only, &[], strings),
        Lookup::Unavailable => error(out, 503, conn, head_only, &[("Retry-After", b"1")], strings),
    }
}

/// The `Connection` field a response carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ConnHeader {
    /// HTTP/1.1 keep-alive: nothing to say.
    None,
    /// HTTP/1.0 keep-alive must be confirmed.
    KeepAlive,
    /// The connection closes after this response.
    Close,
}

impl ConnHeader {
    pub(crate) fn new(keep_alive: bool, version: Version) -> ConnHeader {
        match (keep_alive, version) {
            (false, _) => ConnHeader::Close,
            (true, Version::Http10) => ConnHeader::KeepAlive,
            (true, Version::Http11) => ConnHeader::None,
        }
    }

    fn write(self, out: &mut Vec<u8>) {
        match self {
            ConnHeader::None => {}
            ConnHeader::KeepAlive => out.extend_from_slice(b"Connection: keep-alive\r\n"),
            ConnHeader::Close => out.extend_from_slice(b"Connection: close\r\n"),
        }
    }
}

fn file_response(
    site: &Site<'_>,
    req: &Request<'_>,
    file: &Entry,
    conn: ConnHeader,
    out: &mut Vec<u8>,
    scratch: &mut Scratch,
) -> Reply {
    let head_only = req.method == Method::Head;
    let strings = site.techniques.string_cache;
    if !preconditions_hold(req, &file.etag, file.mtime) {
        return error(out, 412, conn, head_only, &[], strings);
    }
    if not_modified(req, &file.etag, file.mtime) {
        begin(out, 304, strings);
        validators(out, file, strings);
        conn.write(out);
        head::end(out);
        return reply(304, 0, conn);
    }
    let ranged = match req.range {
        Some(value) if if_range_holds(req, &file.etag, file.mtime) => {
            range::answer(value, file.size)
        }
        _ => RangeAnswer::Whole,
    };
    let (status, start, len) = match ranged {
        RangeAnswer::Whole => (200, 0, file.size),
        RangeAnswer::Part { start, end } => (206, start, end - start + 1),
        RangeAnswer::Unsatisfiable => {
            let mut value = b"bytes */".to_vec();
            value.extend_from_slice(itoa::Buffer::new().format(file.size).as_bytes());
            return error(
                out,
                416,
                conn,
                head_only,
                &[("Content-Range", &value)],
                strings,
            );
        }
    };
    begin(out, status, strings);
    head::field(out, "Content-Type", file.content_type.as_bytes());
    head::content_length(out, len);
    validators(out, file, strings);
    out.extend_from_slice(b"Accept-Ranges: bytes\r\n");
    if status == 206 {
        content_range(out, start, len, file.size);
    }
    conn.write(out);
    head::end(out);
    if head_only || len == 0 {
        return reply(status, 0, conn);
    }
    body(site, file, status, start, len, conn, out, scratch)
}

/// Appends the body (small) or says how to send it (large), by the techniques in force.
#[allow(clippy::too_many_arguments)]
fn body(
    site: &Site<'_>,
    file: &Entry,
    status: u16,
    start: u64,
    len: u64,
    conn: ConnHeader,
    out: &mut Vec<u8>,
    scratch: &mut Scratch,
) -> Reply {
    let range = start as usize..(start + len) as usize;
    if let Some(bytes) = &file.bytes {
        out.extend_from_slice(&bytes[range]);
        return reply(status, len, conn);
    }
    let small = len <= site.sendfile_threshold;
    if let Some(map) = &file.map {
        if small {
            out.extend_from_slice(&map[range]);
            return reply(status, len, conn);
        }
        return with_tail(status, len, conn, Tail::Mapped(Rc::clone(map), start, len));
    }
    let fd = match &file.fd {
        Some(fd) => Rc::clone(fd),
        None => match site.root.reopen(&file.opened, &mut scratch.open) {
            Ok(fd) => Rc::new(fd),
            // Gone since it was cached: the promised length cannot be kept.
            Err(_) => return reply(status, 0, ConnHeader::Close),
        },
    };
    if small {
        return match files::read_at(&fd, start, len, out) {
            Ok(n) if n == len => reply(status, len, conn),
            // The file shrank since its size was taken: the only honest end is to close
            // after what there is.
            Ok(n) => reply(status, n, ConnHeader::Close),
            Err(_) => reply(status, 0, ConnHeader::Close),
        };
    }
    let tail = if site.techniques.sendfile {
        Tail::Sendfile(fd, start, len)
    } else if site.techniques.mmap {
        // SAFETY: a read-only mapping (see cache.rs for the truncation hazard).
        match unsafe { memmap2::Mmap::map(&*fd) } {
            Ok(map) => Tail::Mapped(Rc::new(map), start, len),
            Err(_) => Tail::Read(fd, start, len),
        }
    } else {
        Tail::Read(fd, start, len)
    };
    with_tail(status, len, conn, tail)
}

fn with_tail(status: u16, len: u64, conn: ConnHeader, tail: Tail) -> Reply {
    let mut r = reply(status, len, conn);
    r.tail = tail;
    r
}

/// The status line, Server and Date: from the once-a-second cache, or formatted afresh.
fn begin(out: &mut Vec<u8>, status: u16, cached: bool) {
    if cached {
        head::begin(out, status);
    } else {
        head::begin_uncached(out, status);
    }
}

fn reply(status: u16, body_bytes: u64, conn: ConnHeader) -> Reply {
    Reply {
        status,
        body_bytes,
        tail: Tail::None,
        close: conn == ConnHeader::Close,
    }
}

fn validators(out: &mut Vec<u8>, file: &Entry, cached_strings: bool) {
    if cached_strings {
        head::field(out, "Last-Modified", &file.last_modified);
    } else {
        head::field_date(out, "Last-Modified", file.mtime);
    }
    head::field(out, "ETag", &file.etag);
}

fn content_range(out: &mut Vec<u8>, start: u64, len: u64, size: u64) {
    let mut digits = itoa::Buffer::new();
    out.extend_from_slice(b"Content-Range: bytes ");
    out.extend_from_slice(digits.format(start).as_bytes());
    out.push(b'-');
    out.extend_from_slice(digits.format(start + len - 1).as_bytes());
    out.push(b'/');
    out.extend_from_slice(digits.format(size).as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// RFC 9110 §13.2.2, steps 1-2: If-Match (strong comparison) decides when present;
/// otherwise If-Unmodified-Since with a valid date. False: 412. The file exists here, so
/// `If-Match: *` holds.
fn preconditions_hold(req: &Request<'_>, etag: &[u8], mtime: i64) -> bool {
    if let Some(list) = req.if_match {
        return list == b"*" || list.split(|&b| b == b',').any(|tag| trim_ows(tag) == etag);
    }
    // An invalid date is ignored (§13.1.4).
    http_date(req.if_unmodified_since).is_none_or(|since| mtime <= since)
}

/// RFC 9110 §13.2.2, steps 3-4: If-None-Match (weak comparison) decides when present;
/// otherwise If-Modified-Since with a valid date no later than now (§13.1.3: a later date is
/// invalid, and ignored: a client whose clock runs ahead must not be told 304 for a file
/// changed since its last copy).
fn not_modified(req: &Request<'_>, etag: &[u8], mtime: i64) -> bool {
    if let Some(list) = req.if_none_match {
        return list == b"*" || list.split(|&b| b == b',').any(|tag| weak_eq(tag, etag));
    }
    http_date(req.if_modified_since)
        .is_some_and(|since| mtime <= since && since <= webscope_http::date::cached_now())
}

/// A field's value as an HTTP date (Unix seconds), if it is one.
fn http_date(value: Option<&[u8]>) -> Option<i64> {
    std::str::from_utf8(value?)
        .ok()
        .and_then(webscope_http::date::parse_http_date)
}

/// RFC 9110 §13.1.5: a Range is used only if If-Range (when present) matches the current
/// representation: a strong ETag match, or exactly its Last-Modified date.
fn if_range_holds(req: &Request<'_>, etag: &[u8], mtime: i64) -> bool {
    let Some(value) = req.if_range else {
        return true;
    };
    if value.starts_with(b"\"") {
        return value == etag;
    }
    std::str::from_utf8(value)
        .ok()
        .and_then(webscope_http::date::parse_http_date)
        .is_some_and(|date| date == mtime)
}

fn weak_eq(tag: &[u8], etag: &[u8]) -> bool {
    let tag = trim_ows(tag);
    let tag = tag.strip_prefix(b"W/").unwrap_or(tag);
    tag == etag
}

/// Appends a response with a generated body (the dynamic services').
pub(crate) fn generated(
    out: &mut Vec<u8>,
    conn: ConnHeader,
    head_only: bool,
    body: &str,
    strings: bool,
) -> Reply {
    begin(out, 200, strings);
    out.extend_from_slice(
        b"Content-Type: text/plain; charset=utf-8\r\nCache-Control: no-store\r\n",
    );
    head::content_length(out, body.len() as u64);
    conn.write(out);
    head::end(out);
    if head_only {
        return reply(200, 0, conn);
    }
    out.extend_from_slice(body.as_bytes());
    reply(200, body.len() as u64, conn)
}

/// Appends the 405 for a method other than GET and HEAD.
pub(crate) fn not_allowed(
    out: &mut Vec<u8>,
    conn: ConnHeader,
    head_only: bool,
    strings: bool,
) -> Reply {
    error(
        out,
        405,
        conn,
        head_only,
        &[("Allow", b"GET, HEAD")],
        strings,
    )
}

/// Appends an error (or redirect) response with a small HTML body.
pub(crate) fn error(
    out: &mut Vec<u8>,
    status: u16,
    conn: ConnHeader,
    head_only: bool,
    fields: &[(&str, &[u8])],
    strings: bool,
) -> Reply {
    let reason = webscope_http::status::reason(status);
    let mut digits = itoa::Buffer::new();
    let code = digits.format(status);
    // "<html>...<title>404 Not Found</title>...<h1>404 Not Found</h1>...</html>\n"
    const FRAME: usize = "<html><head><title></title></head><body><h1></h1></body></html>\n".len();
    let body_len = FRAME + 2 * (code.len() + 1 + reason.len());
    begin(out, status, strings);
    out.extend_from_slice(b"Content-Type: text/html\r\n");
    head::content_length(out, body_len as u64);
    for (name, value) in fields {
        head::field(out, name, value);
    }
    conn.write(out);
    head::end(out);
    if !head_only {
        let start = out.len();
        for part in [
            "<html><head><title>",
            code,
            " ",
            reason,
            "</title></head><body><h1>",
            code,
            " ",
            reason,
            "</h1></body></html>\n",
        ] {
            out.extend_from_slice(part.as_bytes());
        }
        debug_assert_eq!(out.len() - start, body_len);
    }
    reply(status, if head_only { 0 } else { body_len as u64 }, conn)
}
