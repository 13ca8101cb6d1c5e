//! Status codes, their reason phrases and prebuilt status lines.

/// The reason phrase RFC 9110 gives a status code (empty for codes it does not name).
pub fn reason(code: u16) -> &'static str {
    match code {
        100 => "Continue",
        101 => "Switching Protocols",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Content Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
        416 => "Range Not Satisfiable",
        417 => "Expectation Failed",
        421 => "Misdirected Request",
        422 => "Unprocessable Content",
        425 => "Too Early",
        426 => "Upgrade Required",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        _ => "",
    }
}

/// Appends `HTTP/1.1 <code> <reason>\r\n`. A server sends its own highest version whatever
/// the request's (RFC 9110 §6.2), so there is one line per code.
pub fn write_status_line(out: &mut Vec<u8>, code: u16) {
    match code {
        // The common lines as single copies: the hot path's status line costs one memcpy.
        200 => out.extend_from_slice(b"HTTP/1.1 200 OK\r\n"),
        206 => out.extend_from_slice(b"HTTP/1.1 206 Partial Content\r\n"),
        304 => out.extend_from_slice(b"HTTP/1.1 304 Not Modified\r\n"),
        404 => out.extend_from_slice(b"HTTP/1.1 404 Not Found\r\n"),
        _ => format_status_line(out, code),
    }
}

/// Appends the status line formatted piece by piece (what `write_status_line` avoids for the
/// common codes).
pub fn format_status_line(out: &mut Vec<u8>, code: u16) {
    out.extend_from_slice(b"HTTP/1.1 ");
    let mut code_buf = itoa::Buffer::new();
    out.extend_from_slice(code_buf.format(code).as_bytes());
    out.push(b' ');
    out.extend_from_slice(reason(code).as_bytes());
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_and_slow_lines_agree() {
        for code in [200u16, 206, 304, 404, 416, 505, 599] {
            let mut out = Vec::new();
            write_status_line(&mut out, code);
            let expected = format!("HTTP/1.1 {code} {}\r\n", reason(code));
            assert_eq!(String::from_utf8(out).unwrap(), expected);
            let mut slow = Vec::new();
            format_status_line(&mut slow, code);
            assert_eq!(String::from_utf8(slow).unwrap(), expected);
        }
    }
}
