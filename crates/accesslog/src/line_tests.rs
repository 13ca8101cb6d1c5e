use super::*;

fn unix(e: &Entry) -> u64 {
    e.time.duration_since(UNIX_EPOCH).unwrap().as_secs()
}

const COMBINED: &str = r#"127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326 "http://www.example.com/start.html" "Mozilla/4.08 [en] (Win98; I ;Nav)""#;

#[test]
fn common() {
    let line =
        r#"127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326"#;
    for format in [None, Some(Format::Common)] {
        let e = parse_line(line, format).unwrap();
        assert_eq!(unix(&e), 971_211_336);
        assert_eq!(e.client, "127.0.0.1");
        assert_eq!(
            (e.method.as_str(), e.path.as_str()),
            ("GET", "/apache_pb.gif")
        );
        assert_eq!(
            (e.protocol.as_str(), e.status, e.bytes),
            ("HTTP/1.0", 200, 2326)
        );
        assert_eq!((e.referer.clone(), e.user_agent.clone()), (None, None));
        assert_eq!(e.request_time, None);
    }
    let err = parse_line(line, Some(Format::Combined)).unwrap_err();
    assert!(err.contains("--format common"), "{err}");
}

#[test]
fn combined_auto_and_named() {
    for format in [None, Some(Format::Combined)] {
        let e = parse_line(COMBINED, format).unwrap();
        assert_eq!(
            e.referer.as_deref(),
            Some("http://www.example.com/start.html")
        );
        assert_eq!(
            e.user_agent.as_deref(),
            Some("Mozilla/4.08 [en] (Win98; I ;Nav)")
        );
    }
    // Named common: the referer and user agent are not read.
    let e = parse_line(COMBINED, Some(Format::Common)).unwrap();
    assert_eq!(e.user_agent, None);
    // nginx formats often append fields after combined: ignored.
    let e = parse_line(&format!("{COMBINED} \"10.0.0.9\" rt=0.1"), None).unwrap();
    assert_eq!(e.bytes, 2326);
}

#[test]
fn timed_nginx_and_apache() {
    let nginx = format!("{COMBINED} 0.004");
    let e = parse_line(&nginx, Some(Format::CombinedWithTime(TimeUnit::Seconds))).unwrap();
    assert_eq!(e.request_time, Some(Duration::from_millis(4)));
    let apache = format!("{COMBINED} 4012");
    let e = parse_line(
        &apache,
        Some(Format::CombinedWithTime(TimeUnit::Microseconds)),
    )
    .unwrap();
    assert_eq!(e.request_time, Some(Duration::from_micros(4012)));
    // Seconds are not microseconds: a decimal for %D is a bad line, and no time is one too.
    let micro = Some(Format::CombinedWithTime(TimeUnit::Microseconds));
    assert!(parse_line(&nginx, micro)
        .unwrap_err()
        .contains("microseconds"));
    assert!(parse_line(COMBINED, micro)
        .unwrap_err()
        .contains("request-time"));
    // Auto-detection ignores a trailing time.
    assert_eq!(parse_line(&nginx, None).unwrap().request_time, None);
}

#[test]
fn escaped_quotes_and_bytes() {
    // Apache escapes: \" and \xhh; nginx: \x22.
    let line = r#"10.1.2.3 - - [01/Jan/2024:00:00:00 +0000] "GET /a\"b?q=\x22x\x22 HTTP/1.1" 404 - "-" "say \"hi\" \\o/""#;
    let e = parse_line(line, None).unwrap();
    assert_eq!(e.path, "/a\"b");
    assert_eq!(e.query.as_deref(), Some("q=\"x\""));
    assert_eq!(e.bytes, 0);
    assert_eq!(e.referer, None);
    assert_eq!(e.user_agent.as_deref(), Some("say \"hi\" \\o/"));
    // Old Apache wrote quotes in the request unescaped: still found by the status after it.
    let old = r#"h - - [01/Jan/2024:00:00:00 +0000] "GET /a"b HTTP/1.0" 200 5"#;
    assert_eq!(parse_line(old, None).unwrap().path, "/a\"b");
}

#[test]
fn ipv6_and_host_clients() {
    let line = r#"2001:db8::1 - - [01/Jan/2024:00:00:00 +0100] "HEAD / HTTP/2.0" 200 0"#;
    let e = parse_line(line, None).unwrap();
    assert_eq!(e.client, "2001:db8::1");
    assert_eq!(e.method, "HEAD");
    assert_eq!(unix(&e), 1_704_063_600);
}

#[test]
fn unreadable_requests_are_entries_without_a_url() {
    for request in ["-", "", r"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"] {
        let line =
            format!(r#"1.2.3.4 - - [01/Jan/2024:00:00:00 +0000] "{request}" 400 157 "-" "-""#);
        let e = parse_line(&line, None).unwrap();
        assert_eq!(
            (e.method.as_str(), e.path.as_str()),
            ("-", "-"),
            "{request}"
        );
        assert!(!e.has_request());
        assert_eq!(e.status, 400);
    }
    // HTTP/0.9 or a line cut short: a request without a protocol.
    let line = r#"1.2.3.4 - - [01/Jan/2024:00:00:00 +0000] "GET /big" 200 9"#;
    let e = parse_line(line, None).unwrap();
    assert_eq!((e.path.as_str(), e.protocol.as_str()), ("/big", ""));
}

#[test]
fn junk_is_an_error_with_a_reason() {
    let cases = [
        ("", "no fields"),
        ("hello world", "[time]"),
        (
            r#"h - - [01/Jan/2024:00:00:00] "GET / HTTP/1.1" 200 5"#,
            "bad [time]",
        ),
        (
            r#"h - - [01/Jan/2024:00:00:00 +0000] GET / 200 5"#,
            "quoted request",
        ),
        (
            r#"h - - [01/Jan/2024:00:00:00 +0000] "GET / HTTP/1.1" 2x0 5"#,
            "not closed",
        ),
        (
            r#"h - - [01/Jan/2024:00:00:00 +0000] "GET / HTTP/1.1" 200 5k"#,
            "bad bytes",
        ),
        (
            r#"h - - [01/Jan/2024:00:00:00 +0000] "GET / HTTP/1.1" 200 5 junk"#,
            "referer",
        ),
        (
            r#"h - - [01/Jan/2024:00:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" ua"#,
            "user-agent",
        ),
    ];
    for (line, why) in cases {
        let err = parse_line(line, None).unwrap_err();
        assert!(err.contains(why), "{line:?}: {err:?} lacks {why:?}");
    }
}

#[test]
fn a_line_cut_short_in_its_last_quoted_field_is_repaired() {
    let head =
        r#"10.0.0.1 - - [01/Jan/2024:00:00:00 +0000] "GET /feed?flav=rss20 HTTP/1.1" 200 512"#;
    // The user agent without its closing quote (GoAccess accepts it): the rest of the line.
    let (e, repaired) = parse_line_repairing(
        &format!(r#"{head} "http://r/" "Mozilla/5.0 (X11; Linux  "#),
        None,
    )
    .unwrap();
    assert!(repaired);
    assert_eq!(e.user_agent.as_deref(), Some("Mozilla/5.0 (X11; Linux"));
    assert_eq!(e.referer.as_deref(), Some("http://r/"));
    assert_eq!((e.path.as_str(), e.status, e.bytes), ("/feed", 200, 512));
    // Named combined too, and a referer cut short with no user agent after it.
    let (e, repaired) =
        parse_line_repairing(&format!(r#"{head} "http://r/pa"#), Some(Format::Combined)).unwrap();
    assert!(repaired);
    assert_eq!(
        (e.referer.as_deref(), e.user_agent),
        (Some("http://r/pa"), None)
    );
    // A whole line is not counted as repaired.
    let (_, repaired) = parse_line_repairing(COMBINED, None).unwrap();
    assert!(!repaired);
    // A timed format has a field after the user agent: a quote missing there stays an error.
    let timed = Some(Format::CombinedWithTime(TimeUnit::Seconds));
    let cut = format!(r#"{head} "-" "curl 0.004"#);
    assert!(parse_line(&cut, timed).is_err());
    // A user agent with no opening quote is not cut short but wrong.
    assert!(parse_line(&format!(r#"{head} "-" curl"#), None).is_err());
}
