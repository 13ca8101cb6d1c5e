//! Response-head writing: status line, the fields every response carries, and typed fields,
//! appended to a caller's buffer so that a whole small response can go out in one write.

use crate::{date, status};

/// The `Server` field's value.
pub const SERVER: &str = "webscope";

/// Appends the status line and the fields every response has: `Server` and `Date` (RFC 9110
/// §6.6.1: an origin server with a clock must send Date).
pub fn begin(out: &mut Vec<u8>, code: u16) {
    status::write_status_line(out, code);
    out.extend_from_slice(b"Server: webscope\r\nDate: ");
    date::write_cached_http_date(out);
    out.extend_from_slice(b"\r\n");
}

/// Like [`begin`], but formats the status line and the date afresh, as a server without
/// string caching does on every response (the baseline of the techniques ablation).
pub fn begin_uncached(out: &mut Vec<u8>, code: u16) {
    status::format_status_line(out, code);
    out.extend_from_slice(b"Server: webscope\r\nDate: ");
    date::write_http_date(out, date::unix_now());
    out.extend_from_slice(b"\r\n");
}

/// Appends `name: value\r\n`.
pub fn field(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// Appends `name: <decimal>\r\n` without allocating.
pub fn field_u64(out: &mut Vec<u8>, name: &str, value: u64) {
    let mut digits = itoa::Buffer::new();
    field(out, name, digits.format(value).as_bytes());
}

/// Appends `Content-Length: n\r\n`.
pub fn content_length(out: &mut Vec<u8>, length: u64) {
    field_u64(out, "Content-Length", length);
}

/// Appends `name: <HTTP-date>\r\n`.
pub fn field_date(out: &mut Vec<u8>, name: &str, unix_secs: i64) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    date::write_http_date(out, unix_secs);
    out.extend_from_slice(b"\r\n");
}

/// Appends the blank line that ends the head.
pub fn end(out: &mut Vec<u8>) {
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_a_head_that_httparse_reads_back() {
        let mut out = Vec::new();
        begin(&mut out, 200);
        content_length(&mut out, 1234);
        field_date(&mut out, "Last-Modified", 784_111_777);
        field(&mut out, "Content-Type", b"text/html");
        end(&mut out);
        let mut headers = [httparse::EMPTY_HEADER; 8];
        let mut resp = httparse::Response::new(&mut headers);
        assert_eq!(
            resp.parse(&out).unwrap(),
            httparse::Status::Complete(out.len())
        );
        assert_eq!(resp.code, Some(200));
        let get = |name: &str| {
            resp.headers
                .iter()
                .find(|h| h.name == name)
                .map(|h| h.value.to_vec())
        };
        assert_eq!(get("Content-Length").unwrap(), b"1234");
        assert_eq!(
            get("Last-Modified").unwrap(),
            b"Sun, 06 Nov 1994 08:49:37 GMT"
        );
        assert_eq!(get("Server").unwrap(), b"webscope");
        assert_eq!(get("Date").unwrap().len(), date::HTTP_DATE_LEN);
    }
}
