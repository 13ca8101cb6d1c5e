use super::*;

fn ok(raw: &str) -> Request<'_> {
    match parse(raw.as_bytes(), &Limits::default()) {
        Ok(Some(req)) => req,
        other => panic!("{raw:?} gave {other:?}"),
    }
}

fn err(raw: &str) -> ParseError {
    match parse(raw.as_bytes(), &Limits::default()) {
        Err(e) => e,
        other => panic!("{raw:?} gave {other:?}"),
    }
}

#[test]
fn parses_a_simple_get() {
    let req = ok("GET /a.html HTTP/1.1\r\nHost: x\r\nUser-Agent: t/1\r\n\r\nrest");
    assert_eq!(req.method, Method::Get);
    assert_eq!(req.target, "/a.html");
    assert_eq!(req.version, Version::Http11);
    assert_eq!(req.host, Some(&b"x"[..]));
    assert_eq!(req.user_agent, Some(&b"t/1"[..]));
    assert_eq!(
        req.head_len,
        "GET /a.html HTTP/1.1\r\nHost: x\r\nUser-Agent: t/1\r\n\r\n".len()
    );
    assert!(req.keep_alive());
}

#[test]
fn partial_heads_ask_for_more() {
    let full = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    for cut in 0..full.len() {
        assert!(
            matches!(parse(&full.as_bytes()[..cut], &Limits::default()), Ok(None)),
            "cut {cut}"
        );
    }
}

#[test]
fn keep_alive_follows_version_and_connection() {
    assert!(!ok("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").keep_alive());
    assert!(!ok("GET / HTTP/1.0\r\n\r\n").keep_alive());
    assert!(ok("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").keep_alive());
    assert!(!ok("GET / HTTP/1.1\r\nHost: x\r\nConnection: foo, CLOSE\r\n\r\n").keep_alive());
}

#[test]
fn host_rules() {
    assert_eq!(err("GET / HTTP/1.1\r\n\r\n"), ParseError::MissingHost);
    assert_eq!(
        err("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"),
        ParseError::DuplicateHost
    );
    assert_eq!(
        err("GET / HTTP/1.1\r\nHost: a b\r\n\r\n"),
        ParseError::InvalidHost
    );
    assert_eq!(
        err("GET / HTTP/1.1\r\nHost: a/b\r\n\r\n"),
        ParseError::InvalidHost
    );
    ok("GET / HTTP/1.0\r\n\r\n");
    ok("GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n");
    ok("GET / HTTP/1.1\r\nHost:\r\n\r\n");
}

#[test]
fn field_syntax_errors_are_400() {
    for raw in [
        "GET / HTTP/1.1\r\nHost : x\r\n\r\n", // space before colon
        "GET / HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n\r\n", // obs-fold
        "GET / HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n", // CR inside a value
        "GET / HTTP/1.1\r\nHost: x\r\nX-A: a\0b\r\n\r\n", // NUL inside a value
        "GET / HTTP/1.1\r\nHost: x\r\n: novalue\r\n\r\n", // empty name
        "GET  / HTTP/1.1\r\nHost: x\r\n\r\n", // two spaces
        "GET / HTTP/1.1 extra\r\nHost: x\r\n\r\n",
        "G(T / HTTP/1.1\r\nHost: x\r\n\r\n",
        "GET / HTTP/x.y\r\nHost: x\r\n\r\n",
        "GET / HTTP/2\r\nHost: x\r\n\r\n",
    ] {
        assert_eq!(err(raw).status(), 400, "{raw:?}");
    }
}

#[test]
fn a_bare_lf_inside_a_value_ends_the_line_and_obs_fold_is_refused() {
    // RFC 9112 §2.2 lets a recipient take a lone LF as a line end; what follows must then be
    // a valid field line or the end of the head.
    ok("GET / HTTP/1.1\nHost: x\n\n");
    assert_eq!(
        err("GET / HTTP/1.1\r\nHost: x\r\nX-A: a\n b\r\n\r\n").status(),
        400
    );
}

#[test]
fn versions() {
    assert_eq!(
        err("GET / HTTP/2.0\r\nHost: x\r\n\r\n"),
        ParseError::VersionNotSupported
    );
    assert_eq!(
        err("GET / HTTP/1.2\r\nHost: x\r\n\r\n"),
        ParseError::VersionNotSupported
    );
    assert_eq!(
        err("GET / HTTP/0.9\r\n\r\n"),
        ParseError::VersionNotSupported
    );
    assert_eq!(ok("GET / HTTP/1.0\r\n\r\n").version, Version::Http10);
}

#[test]
fn methods() {
    assert_eq!(ok("HEAD / HTTP/1.0\r\n\r\n").method, Method::Head);
    assert_eq!(ok("POST / HTTP/1.0\r\n\r\n").method, Method::OtherKnown);
    assert_eq!(ok("BREW / HTTP/1.0\r\n\r\n").method, Method::Unknown);
    // Methods are case-sensitive (RFC 9110 §9.1).
    assert_eq!(ok("get / HTTP/1.0\r\n\r\n").method, Method::Unknown);
}

#[test]
fn content_length_rules() {
    assert_eq!(
        ok("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n").body,
        Body::Length(5)
    );
    assert_eq!(
        ok("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n").body,
        Body::None
    );
    assert_eq!(
        ok("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 5\r\n\r\n").body,
        Body::Length(5)
    );
    for bad in [
        "-1",
        "+5",
        "5a",
        "",
        "1 2",
        "5, 6",
        "99999999999999999999999",
    ] {
        let raw = format!("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: {bad}\r\n\r\n");
        assert_eq!(err(&raw), ParseError::InvalidContentLength, "{bad:?}");
    }
    assert_eq!(
        err("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n"),
        ParseError::InvalidContentLength
    );
}

#[test]
fn transfer_encoding_rules() {
    assert_eq!(
        ok("GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n").body,
        Body::Chunked
    );
    assert_eq!(
        ok("GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n").body,
        Body::Chunked
    );
    assert_eq!(
        err("GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n"),
        ParseError::LengthAndEncoding
    );
    assert_eq!(
        err("GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n"),
        ParseError::InvalidTransferEncoding
    );
    assert_eq!(
        err("GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: foo\r\n\r\n"),
        ParseError::UnknownTransferEncoding
    );
    assert_eq!(
        err("GET / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"),
        ParseError::InvalidTransferEncoding
    );
}

#[test]
fn limits() {
    let limits = Limits {
        max_target: 100,
        max_head: 300,
        max_headers: 4,
    };
    let long_target = format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(100));
    assert_eq!(
        parse(long_target.as_bytes(), &limits).unwrap_err(),
        ParseError::TargetTooLong
    );
    // Still arriving, already too long.
    let arriving = format!("GET /{}", "a".repeat(200));
    assert_eq!(
        parse(arriving.as_bytes(), &limits).unwrap_err(),
        ParseError::TargetTooLong
    );
    let many = "GET / HTTP/1.1\r\nHost: x\r\nA: 1\r\nB: 1\r\nC: 1\r\nD: 1\r\n\r\n";
    assert_eq!(
        parse(many.as_bytes(), &limits).unwrap_err(),
        ParseError::HeadTooLarge
    );
    let big = format!(
        "GET / HTTP/1.1\r\nHost: x\r\nA: {}\r\n\r\n",
        "v".repeat(300)
    );
    assert_eq!(
        parse(big.as_bytes(), &limits).unwrap_err(),
        ParseError::HeadTooLarge
    );
    let big_partial = format!("GET / HTTP/1.1\r\nHost: x\r\nA: {}", "v".repeat(300));
    assert_eq!(
        parse(big_partial.as_bytes(), &limits).unwrap_err(),
        ParseError::HeadTooLarge
    );
    assert_eq!(ParseError::TargetTooLong.status(), 414);
    assert_eq!(ParseError::HeadTooLarge.status(), 431);
}

#[test]
fn leading_empty_line_is_ignored() {
    let req = ok("\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(req.target, "/");
}

proptest::proptest! {
    #[test]
    fn never_panics_and_head_len_is_in_bounds(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..512)) {
        if let Ok(Some(req)) = parse(&bytes, &Limits::default()) {
            proptest::prop_assert!(req.head_len <= bytes.len());
        }
    }
}
