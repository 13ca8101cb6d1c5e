//! `webscope serve` over raw TCP: what it serves and how connections behave.

mod serve_support;

use std::io::Write;
use std::time::Duration;

use serve_support::*;

#[test]
fn get_returns_the_file_with_its_metadata() {
    let site = Site::new();
    let server = Server::start(site.root(), &[]);
    let resp = get(&server, "/1k.bin");
    assert_eq!(resp.status, 200);
    assert_eq!(resp.body, pattern(1024));
    assert_eq!(resp.header("Content-Length"), Some("1024"));
    assert_eq!(
        resp.header("Content-Type"),
        Some("application/octet-stream")
    );
    assert_eq!(resp.header("Server"), Some("webscope"));
    assert!(resp.header("Date").is_some_and(|d| d.ends_with(" GMT")));
    assert!(resp
        .header("Last-Modified")
        .is_some_and(|d| d.ends_with(" GMT")));
    assert!(resp
        .header("ETag")
        .is_some_and(|e| e.starts_with('"') && e.ends_with('"')));
    let big = get(&server, "/100k.bin");
    assert_eq!(big.status, 200);
    assert_eq!(
        big.body,
        pattern(100 * 1024),
        "sendfile path delivers the same bytes"
    );
    let empty = get(&server, "/empty.txt");
    assert_eq!((empty.status, empty.body.len()), (200, 0));
}

#[test]
fn content_type_comes_from_the_extension() {
    let site = Site::new();
    let table = [
        ("a.html", "text/html"),
        ("a.css", "text/css"),
        ("a.json", "application/json"),
        ("a.txt", "text/plain"),
        ("a.png", "image/png"),
        ("a.jpg", "image/jpeg"),
        ("a.gif", "image/gif"),
        ("a.svg", "image/svg+xml"),
        ("a.pdf", "application/pdf"),
        ("a.zip", "application/zip"),
        ("a.mp3", "audio/mpeg"),
        ("a.mp4", "video/mp4"),
        ("a.weird", "application/octet-stream"),
    ];
    for (name, _) in table {
        site.write(name, b"x");
    }
    let server = Server::start(site.root(), &[]);
    for (name, ty) in table {
        let resp = get(&server, &format!("/{name}"));
        assert_eq!(resp.header("Content-Type"), Some(ty), "{name}");
    }
}

#[test]
fn head_has_the_headers_and_no_body() {
    let site = Site::new();
    let server = Server::start(site.root(), &[]);
    let mut stream = server.connect();
    stream
        .write_all(b"HEAD /1k.bin HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let head = read_responses(&mut stream, 1, true).remove(0);
    assert_eq!(head.status, 200);
    assert_eq!(head.header("Content-Length"), Some("1024"));
    assert!(head.body.is_empty());
    // If HEAD had carried a body, this would parse garbage.
    stream
        .write_all(b"GET /index.html HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let next = read_responses(&mut stream, 1, false).remove(0);
    assert_eq!(next.body, b"<h1>home</h1>\n");
}

#[test]
fn keep_alive_is_the_default_in_http_1_1_and_close_is_honoured() {
    let site = Site::new();
    let server = Server::start(site.root(), &[]);
    let mut stream = server.connect();
    for _ in 0..3 {
        stream
            .write_all(b"GET /1k.bin HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        let resp = read_responses(&mut stream, 1, false).remove(0);
        assert_eq!(resp.status, 200);
        assert_eq!(resp.header("Connection"), None);
    }
    stream
        .write_all(b"GET /1k.bin HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .unwrap();
    let resp = read_responses(&mut stream, 1, false).remove(0);
    assert_eq!(resp.header("Connection"), Some("close"));
    assert!(closed_within(&mut stream, Duration::from_secs(2)));
}

#[test]
fn http_1_0_closes_unless_keep_alive_is_asked() {
    let site = Site::new();
    let server = Server::start(site.root(), &[]);
    let mut stream = server.connect();
    stream.write_all(b"GET /1k.bin HTTP/1.0\r\n\r\n").unwrap();
    assert_eq!(read_responses(&mut stream, 1, false).remove(0).status, 200);
    assert!(closed_within(&mut stream, Duration::from_secs(2)));

    let mut stream = server.connect();
    stream
        .write_all(b"GET /1k.bin HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        .unwrap();
    let resp = read_responses(&mut stream, 1, false).remove(0);
    assert_eq!(resp.header("Connection"), Some("keep-alive"));
    stream
        .write_all(b"GET /index.html HTTP/1.0\r\n\r\n")
        .unwrap();
    assert_eq!(read_responses(&mut stream, 1, false).remove(0).status, 200);
    assert!(closed_within(&mut stream, Duration::from_secs(2)));
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let site = Site::new();
    let server = Server::start(site.root(), &[]);
    let mut stream = server.connect();
    let mut batch = Vec::new();
    let paths = [
        "/index.html",
        "/1k.bin",
        "/missing",
        "/docs/",
        "/100k.bin",
        "/1k.bin",
    ];
    for path in paths {
        batch.extend_from_slice(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
    }
    stream.write_all(&batch).unwrap();
    let responses = read_responses(&mut stream, paths.len(), false);
    let statuses: Vec<u16> = responses.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [200, 200, 404, 200, 200, 200]);
    assert_eq!(responses[0].body, b"<h1>home</h1>\n");
    assert_eq!(responses[3].body, b"<p>docs</p>\n");
    assert_eq!(responses[4].body.len(), 100 * 1024);
    assert_eq!(responses[5].body, pattern(1024));
}

#[test]
fn requests_per_connection_are_capped() {
    let site = Site::new();
    let server = Server::start(site.root(), &["--keepalive-requests", "3"]);
    let mut stream = server.connect();
    for i in 1..=3 {
        stream
            .write_all(b"GET /1k.bin HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        let resp = read_responses(&mut stream, 1, false).remove(0);
        let expect = if i == 3 { Some("close") } else { None };
        assert_eq!(resp.header("Connection"), expect, "request {i}");
    }
    assert!(closed_within(&mut stream, Duration::from_secs(2)));
}

#[test]
fn conditional_requests_get_304() {
    let site = Site::new();
    let server = Server::start(site.root(), &[]);
    let first = get(&server, "/1k.bin");
    let etag = first.header("ETag").unwrap().to_string();
    let modified = first.header("Last-Modified").unwrap().to_string();
    let ask = |field: &str| {
        exchange(
            &server,
            format!("GET /1k.bin HTTP/1.1\r\nHost: t\r\n{field}\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        )
    };
    let by_etag = ask(&format!("If-None-Match: {etag}"));
    assert_eq!(by_etag.status, 304);
    assert!(by_etag.body.is_empty());
    assert_eq!(by_etag.header("ETag"), Some(etag.as_str()));
    assert_eq!(ask(&format!("If-None-Match: \"x\", W/{etag}")).status, 304);
    assert_eq!(ask("If-None-Match: *").status, 304);
    assert_eq!(ask("If-None-Match: \"other\"").status, 200);
    assert_eq!(ask(&format!("If-Modified-Since: {modified}")).status, 304);
    assert_eq!(
        ask("If-Modified-Since: Thu, 01 Jan 1970 00:00:00 GMT").status,
        200
    );
    assert_eq!(ask("If-Modified-Since: not a date").status, 200);
    // If-None-Match decides when both are present.
    assert_eq!(
        ask(&format!(
            "If-None-Match: \"other\"\r\nIf-Modified-Since: {modified}"
        ))
        .status,
        200
    );
}

/// #51 §4 (RFC 9110 §13.2.2): If-Unmodified-Since in the past gives 412 (it gave 200, or
/// 206 with a Range), as does an If-Match that names no current ETag; an If-Modified-Since
/// later than the server's clock is invalid and ignored (200: it gave 304).
#[test]
fn failed_preconditions_get_412_and_a_future_if_modified_since_is_ignored() {
    let site = Site::new();
    let server = Server::start(site.root(), &[]);
    let first = get(&server, "/1k.bin");
    let etag = first.header("ETag").unwrap().to_string();
    let modified = first.header("Last-Modified").unwrap().to_string();
    let ask = |method: &str, fields: &str| {
        exchange(
            &server,
            format!("{method} /1k.bin HTTP/1.1\r\nHost: t\r\n{fields}Connection: close\r\n\r\n")
                .as_bytes(),
        )
        .status
    };
    let past = "Thu, 01 Jan 1970 00:00:00 GMT";
    assert_eq!(ask("GET", &format!("If-Unmodified-Since: {past}\r\n")), 412);
    assert_eq!(
        ask("HEAD", &format!("If-Unmodified-Since: {past}\r\n")),
        412
    );
    let ranged = "Range: bytes=0-9\r\n";
    assert_eq!(
        ask("GET", &format!("If-Unmodified-Since: {past}\r\n{ranged}")),
        412
    );
    assert_eq!(
        ask(
            "GET",
            &format!("If-Unmodified-Since: {modified}\r\n{ranged}")
        ),
        206
    );
    assert_eq!(ask("GET", "If-Unmodified-Since: not a date\r\n"), 200);
    assert_eq!(ask("GET", &format!("If-Match: {etag}\r\n")), 200);
    assert_eq!(ask("GET", &format!("If-Match: \"x\", {etag}\r\n")), 200);
    assert_eq!(ask("GET", "If-Match: *\r\n"), 200);
    assert_eq!(ask("GET", "If-Match: \"other\"\r\n"), 412);
    // If-Match compares strongly: a weak tag never matches.
    assert_eq!(ask("GET", &format!("If-Match: W/{etag}\r\n")), 412);
    // If-Match decides when present: If-Unmodified-Since is not looked at.
    let both = format!("If-Match: {etag}\r\nIf-Unmodified-Since: {past}\r\n");
    assert_eq!(ask("GET", &both), 200);
    // A year ahead of the server's clock.
    let ahead = std::time::SystemTime::now() + Duration::from_secs(365 * 86_400);
    let future = httpdate::fmt_http_date(ahead);
    assert_eq!(ask("GET", &format!("If-Modified-Since: {future}\r\n")), 200);
    assert_eq!(
        ask("GET", &format!("If-Modified-Since: {modified}\r\n")),
        304
    );
}

#[test]
fn a_single_range_gets_206_and_others_are_handled() {
    let site = Site::new();
    let server = Server::start(site.root(), &[]);
    let body = pattern(100 * 1024);
    let ask = |range: &str, path: &str| {
        exchange(
            &server,
            format!(
                "GET {path} HTTP/1.1\r\nHost: t\r\nRange: {range}\r\nConnection: close\r\n\r\n"
            )
            .as_bytes(),
        )
    };
    let part = ask("bytes=100-199", "/100k.bin");
    assert_eq!(part.status, 206);
    assert_eq!(part.header("Content-Range"), Some("bytes 100-199/102400"));
    assert_eq!(part.body, &body[100..200]);
    let tail = ask("bytes=-10", "/100k.bin");
    assert_eq!(tail.status, 206);
    assert_eq!(tail.body, &body[body.len() - 10..]);
    let big_part = ask("bytes=1000-", "/100k.bin");
    assert_eq!(big_part.status, 206);
    assert_eq!(
        big_part.body,
        &body[1000..],
        "ranges above the sendfile threshold"
    );
    let small = ask("bytes=0-0", "/1k.bin");
    assert_eq!((small.status, small.body.as_slice()), (206, &[0u8][..]));
    let beyond = ask("bytes=5000-", "/1k.bin");
    assert_eq!(beyond.status, 416);
    assert_eq!(beyond.header("Content-Range"), Some("bytes */1024"));
    let several = ask("bytes=0-1,5-6", "/1k.bin");
    assert_eq!((several.status, several.body.len()), (200, 1024));
    let stale = exchange(
        &server,
        b"GET /1k.bin HTTP/1.1\r\nHost: t\r\nRange: bytes=0-9\r\nIf-Range: \"stale\"\r\nConnection: close\r\n\r\n",
    );
    assert_eq!((stale.status, stale.body.len()), (200, 1024));
}

#[test]
fn directories_serve_index_html_and_are_never_listed() {
    let site = Site::new();
    let server = Server::start(site.root(), &[]);
    assert_eq!(get(&server, "/").body, b"<h1>home</h1>\n");
    let docs = get(&server, "/docs/");
    assert_eq!(
        (docs.status, docs.header("Content-Type")),
        (200, Some("text/html"))
    );
    let redirect = get(&server, "/docs");
    assert_eq!(redirect.status, 301);
    assert_eq!(redirect.header("Location"), Some("/docs/"));
    assert_eq!(get(&server, "/noindex/").status, 404);
    assert_eq!(get(&server, "/noindex/a.txt").status, 200);
    assert_eq!(get(&server, "/nothing-here").status, 404);
}

#[test]
fn a_changed_file_is_served_fresh_within_the_documented_second() {
    let site = Site::new();
    let server = Server::start(site.root(), &[]);
    site.write("change.txt", b"old");
    assert_eq!(get(&server, "/change.txt").body, b"old");
    site.write("change.txt", b"new and longer");
    std::thread::sleep(Duration::from_millis(1100));
    assert_eq!(get(&server, "/change.txt").body, b"new and longer");
    std::fs::remove_file(site.root().join("change.txt")).unwrap();
    std::thread::sleep(Duration::from_millis(1100));
    assert_eq!(get(&server, "/change.txt").status, 404);
}

#[test]
fn absolute_form_targets_are_accepted() {
    let site = Site::new();
    let server = Server::start(site.root(), &[]);
    let resp = exchange(
        &server,
        b"GET http://t/1k.bin?x=1 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(resp.status, 200);
    assert_eq!(resp.body.len(), 1024);
}

#[test]
fn clients_that_wait_before_sending_are_served_with_and_without_deferred_accept() {
    let site = Site::new();
    for extra in [&[][..], &["--no-defer-accept"][..]] {
        let server = Server::start(site.root(), extra);
        let mut stream = server.connect();
        std::thread::sleep(Duration::from_millis(150));
        stream
            .write_all(b"GET /1k.bin HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        assert_eq!(
            read_responses(&mut stream, 1, false)[0].body,
            pattern(1024),
            "{extra:?}"
        );
        std::thread::sleep(Duration::from_millis(150));
        stream
            .write_all(b"GET /100k.bin HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        assert_eq!(
            read_responses(&mut stream, 1, false)[0].body.len(),
            100 * 1024,
            "{extra:?}"
        );
    }
}
