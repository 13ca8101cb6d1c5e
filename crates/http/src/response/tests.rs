#[test]
fn a_whole_response_is_framed_three_ways() {
    let (head, body) = whole(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcdef").unwrap();
    assert_eq!((head.status, &body[..]), (200, &b"abc"[..]));
    let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n";
    assert_eq!(&whole(chunked).unwrap().1[..], b"abcde");
    let close = b"HTTP/1.0 404 Not Found\r\n\r\ngone";
    let (head, body) = whole(close).unwrap();
    assert_eq!((head.status, &body[..]), (404, &b"gone"[..]));
    assert_eq!(
        whole(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nab").unwrap_err(),
        Error::BadLength
    );
    assert_eq!(
        whole(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nab").unwrap_err(),
        Error::BadChunk
    );
    assert_eq!(
        whole(b"SSH-2.0-OpenSSH\r\n\r\n").unwrap_err(),
        Error::Malformed
    );
}
use super::*;
use proptest::prelude::*;

fn head(raw: &str) -> Head {
    parse_head(raw.as_bytes(), false).unwrap().unwrap()
}

#[test]
fn content_length_and_keep_alive() {
    let h = head("HTTP/1.1 200 OK\r\nContent-Length: 1024\r\n\r\nbody");
    assert_eq!(h.status, 200);
    assert_eq!(h.len, 41);
    assert_eq!(h.body, Body::Length(1024));
    assert!(h.keep_alive);
    let closing = head("HTTP/1.1 200 OK\r\nConnection: Close\r\nContent-Length: 1\r\n\r\n");
    assert!(!closing.keep_alive);
    let old = head("HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\n");
    assert!(!old.keep_alive);
    let old_ka = head("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\n");
    assert!(old_ka.keep_alive);
}

#[test]
fn bodiless_statuses_and_head_requests() {
    for status in ["204 No Content", "304 Not Modified", "100 Continue"] {
        let raw = format!("HTTP/1.1 {status}\r\nContent-Length: 10\r\n\r\n");
        assert_eq!(head(&raw).body, Body::Empty, "{status}");
    }
    let raw = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n";
    assert_eq!(parse_head(raw, true).unwrap().unwrap().body, Body::Empty);
    assert!(head("HTTP/1.1 100 Continue\r\n\r\n").is_interim());
    assert!(!head("HTTP/1.1 101 Switching Protocols\r\n\r\n").is_interim());
}

#[test]
fn transfer_encoding_and_close_delimited() {
    let h =
        head("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nContent-Length: 5\r\n\r\n");
    assert_eq!(h.body, Body::Chunked);
    let h = head("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n");
    assert_eq!(h.body, Body::UntilClose);
    assert!(!h.keep_alive);
    let h = head("HTTP/1.1 200 OK\r\n\r\n");
    assert_eq!(h.body, Body::UntilClose);
    assert!(!h.keep_alive);
}

#[test]
fn partial_and_bad_heads() {
    assert_eq!(
        parse_head(b"HTTP/1.1 200 OK\r\nContent-Le", false),
        Ok(None)
    );
    assert_eq!(parse_head(b"", false), Ok(None));
    assert_eq!(parse_head(b"GARBAGE\r\n\r\n", false), Err(Error::Malformed));
    let two = b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n";
    assert_eq!(parse_head(two, false), Err(Error::BadLength));
    let same = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n";
    assert_eq!(
        parse_head(same, false).unwrap().unwrap().body,
        Body::Length(2)
    );
    for bad in ["-1", "1x", "", "99999999999999999999"] {
        let raw = format!("HTTP/1.1 200 OK\r\nContent-Length: {bad}\r\n\r\n");
        assert_eq!(
            parse_head(raw.as_bytes(), false),
            Err(Error::BadLength),
            "{bad}"
        );
    }
    let mut many = String::from("HTTP/1.1 200 OK\r\n");
    for i in 0..=MAX_HEADERS {
        many.push_str(&format!("X-{i}: y\r\n"));
    }
    many.push_str("\r\n");
    assert_eq!(
        parse_head_strict(many.as_bytes(), false),
        Err(Error::TooManyHeaders)
    );
    // The fast scan does not count fields: it reads what servers send.
    assert!(parse_head(many.as_bytes(), false).unwrap().is_some());
}

#[test]
fn chunked_body_with_extensions_and_trailers() {
    let body = b"4;name=value\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nExpires: never\r\n\r\nNEXT";
    let mut walker = Chunked::new();
    let p = walker.feed(body).unwrap();
    assert!(p.done);
    assert_eq!(p.data, 4 + 5 + 14);
    assert_eq!(&body[p.consumed..], b"NEXT");
}

#[test]
fn bad_chunks_are_refused() {
    for bad in [
        &b"x\r\n"[..],
        b"4\r\nabcdX",
        b"\r\n",
        b"11111111111111111\r\n",
    ] {
        assert_eq!(Chunked::new().feed(bad), Err(Error::BadChunk), "{bad:?}");
    }
}

fn encode(body: &[u8], sizes: &[usize]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rest = body;
    let mut k = 0;
    while !rest.is_empty() {
        let n = sizes[k % sizes.len()].clamp(1, rest.len());
        k += 1;
        out.extend_from_slice(format!("{n:x}\r\n").as_bytes());
        out.extend_from_slice(&rest[..n]);
        out.extend_from_slice(b"\r\n");
        rest = &rest[n..];
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

proptest! {
    #[test]
    fn any_split_of_a_chunked_body_gives_the_same_result(
        body in proptest::collection::vec(any::<u8>(), 0..2000),
        sizes in proptest::collection::vec(1usize..300, 1..8),
        cuts in proptest::collection::vec(0usize..3000, 0..6),
    ) {
        let encoded = encode(&body, &sizes);
        let mut points: Vec<usize> = cuts.into_iter().map(|c| c % (encoded.len() + 1)).collect();
        points.push(encoded.len());
        points.sort_unstable();
        let mut walker = Chunked::new();
        let (mut at, mut data, mut done) = (0, 0, false);
        for end in points {
            if end <= at { continue; }
            let p = walker.feed(&encoded[at..end]).unwrap();
            at += p.consumed;
            data += p.data;
            done = p.done;
        }
        prop_assert!(done);
        prop_assert_eq!(at, encoded.len());
        prop_assert_eq!(data, body.len() as u64);
    }

    #[test]
    fn the_fast_scan_agrees_with_httparse(
        status in prop::sample::select(vec![100u16, 200, 204, 206, 304, 404, 500]),
        http10 in any::<bool>(),
        fields in proptest::collection::vec((0usize..7, any::<bool>(), 0u64..100_000), 0..10),
        to_head in any::<bool>(),
        extra in proptest::collection::vec(any::<u8>(), 0..20),
    ) {
        let names = ["Content-Length", "content-length", "Transfer-Encoding", "Connection",
                     "CONNECTION", "Server", "X-Padding"];
        let mut raw = format!("HTTP/1.{} {status} Whatever\r\n", if http10 { 0 } else { 1 });
        for (which, flag, n) in &fields {
            let value = match *which {
                0 | 1 => n.to_string(),
                2 => if *flag { "gzip, chunked".to_string() } else { "chunked".to_string() },
                3 | 4 => if *flag { "close".to_string() } else { "Keep-Alive".to_string() },
                _ => format!("v{n}"),
            };
            raw.push_str(&format!("{}: {value}\r\n", names[*which]));
        }
        raw.push_str("\r\n");
        let mut bytes = raw.into_bytes();
        bytes.extend_from_slice(&extra);
        prop_assert_eq!(parse_head(&bytes, to_head), parse_head_strict(&bytes, to_head));
        for cut in [0, 5, 12, 13, 20, bytes.len() / 2] {
            let cut = cut.min(bytes.len());
            let fast = parse_head(&bytes[..cut], to_head);
            let strict = parse_head_strict(&bytes[..cut], to_head);
            prop_assert_eq!(fast, strict, "cut at {}", cut);
        }
    }

    #[test]
    fn find_matches_position(hay in proptest::collection::vec(any::<u8>(), 0..100), needle: u8) {
        prop_assert_eq!(find(&hay, needle), hay.iter().position(|&b| b == needle));
    }

    #[test]
    fn heads_parse_the_same_whole_or_in_pieces(len in 0u64..1_000_000, cut in 0usize..60) {
        let raw = format!("HTTP/1.1 200 OK\r\nContent-Length: {len}\r\nServer: x\r\n\r\n");
        let whole = parse_head(raw.as_bytes(), false).unwrap().unwrap();
        let cut = cut.min(raw.len() - 1);
        prop_assert_eq!(parse_head(&raw.as_bytes()[..cut], false), Ok(None));
        prop_assert_eq!(whole.len, raw.len());
    }
}
