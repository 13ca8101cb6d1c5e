//! `webscope load --http3` against real HTTP/3 servers on loopback: `webscope serve --http3`
//! (bytes, handshakes full and resumed, 0-RTT, the access log and /metrics), Caddy (a real
//! peer: quic-go), an external client against `serve --http3` (aioquic's example client),
//! and servers that do not speak HTTP/3 (one clear line, exit 1).

mod lab_support;

use std::path::Path;
use std::time::Duration;

use lab_support::tls::{certificate, load, pattern, site, Caddy, Http3, Serve};

/// A run's requests (at least one), every one answered 200 with all of its `size` bytes.
fn all_whole(r: &serde_json::Value, text: &str, size: u64) -> u64 {
    let requests = r["requests"].as_u64().unwrap();
    assert!(requests > 0, "{text}");
    assert_eq!(r["errors"]["total"], 0, "{text}");
    assert_eq!(r["status_codes"]["200"], requests, "{text}");
    assert_eq!(r["bytes"].as_u64().unwrap(), requests * size, "{text}");
    requests
}

#[test]
fn http3_against_serve_http3_bytes_handshakes_0rtt_log_and_metrics() {
    let h3 = Http3::start(&[]);
    let serve = &h3.serve;

    // Keep-alive, 4 streams on each of 2 connections: every body whole.
    let (r, text) = h3.load("/100k.bin", &["-M", "4", "-c", "2", "-d", "1s"], 0);
    let requests = all_whole(&r, &text, 100 * 1024);
    assert_eq!(r["protocol"], "HTTP/3 (4 streams per connection)");
    assert_eq!(r["tls"]["full"], 2, "{text}");
    assert!(text.contains("TLS handshake"), "{text}");

    // A connection per request, resuming, with 0-RTT: handshakes saved, counted.
    let (r, text) = h3.load("/1k.bin", &["--close", "--0rtt", "-c", "2", "-d", "1s"], 0);
    assert_eq!(r["errors"]["total"], 0, "{text}");
    let (full, resumed, early) = (
        r["tls"]["full"].as_u64().unwrap(),
        r["tls"]["resumed"].as_u64().unwrap(),
        r["tls"]["early"].as_u64().unwrap_or(0),
    );
    assert!(resumed > full, "{full} full, {resumed} resumed: {text}");
    assert!(early > 0 && early <= resumed, "{early} early: {text}");
    assert!(text.contains("with 0-RTT accepted"), "{text}");

    // The same server's figures: its HTTP/3 connections, its handshakes, its log.
    assert!(serve.counter("webscope_http3_connections_total") >= 4.0);
    let resumed_here = serve
        .metrics()
        .lines()
        .find(|l| l.starts_with("webscope_tls_handshakes_total{result=\"resumed\"}"))
        .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .unwrap();
    assert!(resumed_here > 0.0);
    // Every response counted was logged whole; up to the 8 requests in flight at the end
    // may have been answered too (counted as unfinished).
    let lines = serve.log_lines(requests as usize);
    let big = lines
        .iter()
        .filter(|l| l.contains("\"GET /100k.bin HTTP/3.0\" 200 102400"))
        .count() as u64;
    assert!(
        big >= requests && big <= requests + 8,
        "{big} logged, {requests} counted"
    );
}

#[test]
fn a_0rtt_request_that_is_not_idempotent_is_answered_too_early() {
    let h3 = Http3::start(&[]);
    // POSTs, a connection each, in 0-RTT when a ticket allows: those that came as early data
    // are refused (425); the others reach the file server, which allows no POST (405).
    let post = ["--close", "--0rtt", "-m", "POST", "-c", "1", "-d", "1s"];
    let (r, text) = h3.load("/1k.bin", &post, 1);
    let codes = &r["status_codes"];
    let too_early = codes["425"].as_u64().unwrap_or(0);
    let not_allowed = codes["405"].as_u64().unwrap_or(0);
    assert!(too_early > 0, "{text}");
    assert_eq!(
        too_early + not_allowed,
        r["requests"].as_u64().unwrap(),
        "{text}"
    );
    // GETs in 0-RTT are answered, early or not.
    let (r, text) = h3.load("/1k.bin", &["--close", "--0rtt", "-c", "1", "-d", "1s"], 0);
    assert_eq!(r["status_codes"]["200"], r["requests"], "{text}");
    assert!(r["tls"]["early"].as_u64().unwrap_or(0) > 0, "{text}");
}

#[test]
fn http3_against_caddy() {
    let tmp = tempfile::tempdir().unwrap();
    let root = site(tmp.path());
    let Some(caddy) = Caddy::start(&root, tmp.path()) else {
        return;
    };
    let ca = caddy.ca.to_str().unwrap();
    let json = tmp.path().join("r.json");
    let url = format!("https://localhost:{}/100k.bin", caddy.port);
    let (r, text) = load(
        &[
            &url, "--http3", "-M", "8", "-c", "2", "-d", "1s", "--cacert", ca,
        ],
        &json,
        0,
    );
    all_whole(&r, &text, 100 * 1024);
    // Caddy's quic-go resumes and takes 0-RTT too.
    let url = format!("https://localhost:{}/1k.bin", caddy.port);
    let (r, text) = load(
        &[
            &url, "--http3", "--close", "--0rtt", "-c", "1", "-d", "1s", "--cacert", ca,
        ],
        &json,
        0,
    );
    assert_eq!(r["errors"]["total"], 0, "{text}");
    assert!(r["tls"]["resumed"].as_u64().unwrap() > 0, "{text}");
}

/// The warning line of a summary that starts with `prefix`.
fn warning<'a>(text: &'a str, prefix: &str) -> &'a str {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no {prefix:?} in {text}"))
}

#[test]
fn a_server_that_does_not_speak_http3_is_one_clear_line_and_exit_1() {
    let tmp = tempfile::tempdir().unwrap();
    let root = site(tmp.path());
    let (cert, key) = certificate(tmp.path());
    let ca = cert.to_str().unwrap();
    let json = tmp.path().join("r.json");

    // HTTPS on TCP, nothing on the UDP port.
    let tcp_only = Serve::start(&root, tmp.path(), (&cert, &key), &[]);
    let url = tcp_only.url("/1k.bin");
    let (r, text) = load(
        &[
            &url,
            "--http3",
            "-c",
            "1",
            "-d",
            "2s",
            "--timeout",
            "1s",
            "--cacert",
            ca,
        ],
        &json,
        1,
    );
    assert_eq!(r["requests"], 0);
    let line = warning(&text, "warning: TLS:");
    assert!(
        line.contains("no QUIC answer") && line.contains("UDP port"),
        "{line}"
    );
    assert!(text.contains("no request succeeded"), "{text}");

    // A QUIC server that offers another application protocol than h3.
    let (port, stop) = quic_server_without_h3(&cert, &key);
    let url = format!("https://127.0.0.1:{port}/");
    let (r, text) = load(
        &[&url, "--http3", "-c", "1", "-d", "1s", "--cacert", ca],
        &json,
        1,
    );
    stop.send(()).unwrap();
    assert_eq!(r["requests"], 0);
    assert!(r["errors"]["tls"].as_u64().unwrap() > 0, "{text}");
    let line = warning(&text, "warning: TLS:");
    assert!(line.contains("does not speak HTTP/3"), "{line}");

    // An http:// URL is refused before anything is sent.
    let out = lab_support::webscope()
        .args(["load", "http://127.0.0.1:9/", "--http3", "-d", "1s"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("https://") && err.lines().count() == 1,
        "{err}"
    );
}

/// A QUIC server on 127.0.0.1 whose only ALPN is `hq-interop` (HTTP/0.9 over QUIC), on a
/// thread of its own until the sender is used or dropped: its port and the sender.
fn quic_server_without_h3(cert: &Path, key: &Path) -> (u16, std::sync::mpsc::Sender<()>) {
    use rustls::pki_types::pem::PemObject;
    let chain = rustls::pki_types::CertificateDer::pem_file_iter(cert)
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = rustls::pki_types::PrivateKeyDer::from_pem_file(key).unwrap();
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    tls.alpn_protocols = vec![b"hq-interop".to_vec()];
    let quic = quinn::crypto::rustls::QuicServerConfig::try_from(tls).unwrap();
    let config = quinn::ServerConfig::with_crypto(std::sync::Arc::new(quic));
    let (port_tx, port_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let endpoint = quinn::Endpoint::server(config, "127.0.0.1:0".parse().unwrap()).unwrap();
            port_tx.send(endpoint.local_addr().unwrap().port()).unwrap();
            loop {
                if !matches!(
                    stop_rx.try_recv(),
                    Err(std::sync::mpsc::TryRecvError::Empty)
                ) {
                    return;
                }
                let next = tokio::time::timeout(Duration::from_millis(50), endpoint.accept());
                if let Ok(Some(incoming)) = next.await {
                    tokio::spawn(async move {
                        let _ = incoming.await;
                    });
                }
            }
        });
    });
    (port_rx.recv().unwrap(), stop_tx)
}

/// aioquic's example client (`examples/http3_client.py`, in its sdist, not its wheel): the
/// path CI gives in WEBSCOPE_AIOQUIC_CLIENT, or None with a note (a panic under
/// WEBSCOPE_REQUIRE_AIOQUIC, which CI sets).
fn aioquic_client() -> Option<String> {
    let found = std::env::var("WEBSCOPE_AIOQUIC_CLIENT")
        .ok()
        .filter(|p| Path::new(p).exists());
    if found.is_none() {
        assert!(
            std::env::var_os("WEBSCOPE_REQUIRE_AIOQUIC").is_none(),
            "WEBSCOPE_REQUIRE_AIOQUIC is set but WEBSCOPE_AIOQUIC_CLIENT names no http3_client.py (pip install aioquic wsproto; the example is in the sdist)"
        );
        eprintln!("skipping: no aioquic example client (set WEBSCOPE_AIOQUIC_CLIENT)");
    }
    found
}

#[test]
fn aioquic_fetches_from_serve_http3_byte_for_byte() {
    let Some(client) = aioquic_client() else {
        return;
    };
    let h3 = Http3::start(&[]);
    let serve = &h3.serve;
    let out_dir = h3.tmp.path().join("fetched");
    std::fs::create_dir(&out_dir).unwrap();
    let urls: Vec<String> = ["/1k.bin", "/100k.bin", "/1m.bin"]
        .iter()
        .map(|p| serve.url(p))
        .collect();
    let out = std::process::Command::new("python3")
        .arg(&client)
        .arg("--ca-certs")
        .arg(&h3.cert)
        .arg("--output-dir")
        .arg(&out_dir)
        .args(&urls)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    for (name, len) in [
        ("1k.bin", 1024),
        ("100k.bin", 100 * 1024),
        ("1m.bin", 1 << 20),
    ] {
        let got = std::fs::read(out_dir.join(name)).unwrap_or_default();
        assert!(got == pattern(len), "{name}: {} bytes; {said}", got.len());
    }
    let lines = serve.log_lines(3);
    assert!(
        lines
            .iter()
            .any(|l| l.contains("\"GET /1m.bin HTTP/3.0\" 200 1048576")),
        "{lines:?}"
    );
}

#[test]
fn a_server_going_away_after_its_request_limit_is_reconnected_to_without_errors() {
    // GOAWAY after 50 requests, with up to 8 more already sent on the connection: those are
    // rejected unprocessed (H3_REQUEST_REJECTED), which is no error of theirs.
    let h3 = Http3::start(&["--keepalive-requests", "50"]);
    let (r, text) = h3.load("/1k.bin", &["-M", "8", "-c", "1", "-d", "1s"], 0);
    assert_eq!(r["errors"]["total"], 0, "{text}");
    assert!(r["connects"].as_u64().unwrap() > 1, "{text}");
    assert_eq!(r["status_codes"]["200"], r["requests"], "{text}");
}

/// `--users N`, each page view a page and 5 objects, `think` between views, for 1 s.
fn users_args<'a>(users: &'a str, think: &'a str) -> [&'a str; 10] {
    [
        "--users",
        users,
        "--objects",
        "const(5)",
        "--think",
        think,
        "--ramp-up",
        "0s",
        "-d",
        "1s",
    ]
}

/// Issue 50: users over HTTP/3. Against `webscope serve --http3`: each user keeps one QUIC
/// connection (the server counts as many), its page's objects go as streams of it, and the
/// report has the users' figures as over HTTP/2.
#[test]
fn users_over_http3_keep_one_quic_connection_each_and_load_their_pages() {
    let h3 = Http3::start(&[]);
    let serve = &h3.serve;
    // 3 users, each page view a page and 5 objects, 100 ms of thought between views.
    let users_n = 3u64;
    let (r, text) = h3.load("/1k.bin", &users_args("3", "const(100ms)"), 0);
    let users = &r["users"];
    assert_eq!(r["protocol"], "HTTP/3 (a connection per user)", "{text}");
    assert_eq!(r["connects"], users_n, "{text}");
    // Each user's QUIC handshake timed and counted, as over HTTP/2 (the text's line too).
    assert_eq!(r["tls"]["full"], users_n, "{text}");
    assert_eq!(r["tls"]["resumed"], 0, "{text}");
    assert_eq!(r["tls"]["handshake_us"]["count"], users_n, "{text}");
    assert!(
        r["tls"]["handshake_us"]["min"].as_f64() > Some(0.0),
        "{text}"
    );
    assert!(text.contains("TLS handshakes: 3 full, 0 resumed"), "{text}");
    assert_eq!(users["connections_per_user"], 1, "{users}");
    assert_eq!(users["streams_per_user"], 6, "{users}");
    assert_eq!(r["errors"]["total"], 0, "{text}");
    let views = users["page_views"].as_u64().unwrap();
    // At least each user's first view; at most one more than the thinks that fit in 1 s.
    assert!(
        views >= users_n && views <= users_n * 11,
        "{views} views: {text}"
    );
    assert_eq!(users["page_view_errors"], 0, "{users}");
    assert_eq!(users["page_load_us"]["count"], views, "{users}");
    // Every view is 6 requests; a view the end cut has fewer answered (not counted as a
    // view).
    let requests = r["requests"].as_u64().unwrap();
    assert!(
        requests >= 6 * views && requests <= 6 * views + 5 * users_n,
        "{requests} requests for {views} views: {text}"
    );
    assert_eq!(r["bytes"], requests * 1024, "{text}");
    assert!(
        text.contains("one connection each, up to 6 streams"),
        "{text}"
    );
    // The server saw one QUIC connection per user, and HTTP/3 requests.
    assert_eq!(serve.counter("webscope_http3_connections_total"), 3.0);
    let lines = serve.log_lines(requests as usize);
    assert!(
        lines.iter().all(|l| l.contains("HTTP/3.0\" 200 1024")),
        "{lines:?}"
    );
}

/// Issue 50: users over HTTP/3 time and count every handshake, resumed ones apart. The server
/// goes away after 10 requests, so each user opens a new connection every second page view or
/// so; the later ones resume with a ticket of the first: one handshake per connection, each
/// counted full or resumed, as the closed loop counts them.
#[test]
fn users_over_http3_count_a_handshake_per_connection_full_or_resumed() {
    let h3 = Http3::start(&["--keepalive-requests", "10"]);
    let (r, text) = h3.load("/1k.bin", &users_args("2", "const(20ms)"), 0);
    let connects = r["connects"].as_u64().unwrap();
    assert!(connects > 2, "no user reconnected: {text}");
    let (full, resumed) = (r["tls"]["full"].as_u64(), r["tls"]["resumed"].as_u64());
    let (full, resumed) = (full.unwrap(), resumed.unwrap());
    // A connection the run's end cut mid-handshake (at most one per user) is counted as a
    // connect, not a handshake.
    assert!(
        full + resumed <= connects && full + resumed + 2 >= connects,
        "{full} full + {resumed} resumed for {connects} connections: {text}"
    );
    assert_eq!(r["tls"]["handshake_us"]["count"], full + resumed, "{text}");
    assert!(full >= 2, "each user's first handshake is full: {text}");
    assert!(resumed >= 1, "no reconnection resumed: {text}");
    assert_eq!(r["errors"]["total"], 0, "{text}");
}

/// `webscope load URL --http3 -k ARGS MORE` (no --cacert: -k takes any certificate), which
/// must exit with `code`.
fn load_insecure(
    url: &str,
    args: &[&str],
    more: &[&str],
    json: &Path,
    code: i32,
) -> (serde_json::Value, String) {
    let flags: Vec<&str> = [url, "--http3", "-k"]
        .iter()
        .chain(args)
        .chain(more)
        .copied()
        .collect();
    load(&flags, json, code)
}

/// Issue 50 §1: the figures every protocol has, over HTTP/3. `-k` takes the self-signed
/// certificate without `--cacert`; `--interval` cuts the run into intervals and `--hlog`
/// writes one histogram line per interval; `--threshold` judges the HTTP/3 run (a p50 under
/// a microsecond is crossed: exit 99).
#[test]
fn insecure_intervals_hlog_and_thresholds_work_over_http3() {
    let h3 = Http3::start(&[]);
    let url = h3.serve.url("/1k.bin");
    let hlog = h3.tmp.path().join("run.hlog");
    let (r, text) = load_insecure(
        &url,
        &["-c", "2", "-d", "1s", "--interval", "250ms", "--hlog"],
        &[hlog.to_str().unwrap(), "--threshold", "p50<1us,errors<=1%"],
        &h3.tmp.path().join("r.json"),
        99,
    );
    assert!(r["requests"].as_u64().unwrap() > 0, "{text}");
    assert_eq!(r["errors"]["total"], 0, "{text}");
    assert_eq!(r["tls"]["full"], 2, "{text}");
    assert!(
        text.contains("p50<1us: ") && text.contains("FAILED"),
        "{text}"
    );
    assert!(text.contains("errors<=1%: 0 %, passed"), "{text}");
    assert!(
        text.contains("webscope: threshold crossed: p50<1us"),
        "{text}"
    );
    let intervals = r["intervals"].as_array().unwrap();
    assert!((4..=5).contains(&intervals.len()), "{intervals:?}");
    let lines = std::fs::read_to_string(&hlog).unwrap();
    let histograms: Vec<&str> = lines
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with('"') && !l.starts_with("Tag="))
        .collect();
    assert_eq!(histograms.len(), intervals.len(), "{lines}");
    assert!(
        histograms.iter().all(|l| l
            .split(',')
            .nth(3)
            .is_some_and(|h| h.starts_with("HISTFAA"))),
        "{lines}"
    );
}

/// Issue 50, the generator with UDP blocked: a UDP port that takes every datagram and never
/// answers (a bound socket that reads nothing, as a firewall that drops), and a closed one
/// (the kernel's ICMP port unreachable, which quinn's unconnected socket never sees). Each
/// run is one line that names the UDP port and what to do, exit 1, and ends once every
/// connection's first handshake has timed out, long before its duration (`-d 60s --timeout
/// 1s`: 1 s, bounded here by 15 s for a busy machine), with no line blaming a server that
/// never answers.
#[test]
fn with_udp_blocked_the_run_is_one_clear_line_exit_1_once_every_handshake_failed() {
    let tmp = tempfile::tempdir().unwrap();
    let json = tmp.path().join("r.json");
    let dropping = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let dropping_port = dropping.local_addr().unwrap().port();
    let closed_port = {
        let probe = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().port()
    };
    for port in [dropping_port, closed_port] {
        let url = format!("https://127.0.0.1:{port}/1k.bin");
        let started = std::time::Instant::now();
        let run = ["-c", "2", "-d", "60s", "--timeout", "1s"];
        let (r, text) = load_insecure(&url, &run, &[], &json, 1);
        let took = started.elapsed();
        assert!(took < Duration::from_secs(15), "{port}: took {took:?}");
        // Not before the handshakes' timeout: they were given their time.
        assert!(took >= Duration::from_secs(1), "{port}: took {took:?}");
        assert_eq!(r["requests"], 0, "{text}");
        // Each connection's handshake timed out (no answer is no response: a timeout).
        assert!(r["errors"]["total"].as_u64().unwrap() > 0, "{text}");
        let said: Vec<&str> = text.lines().filter(|l| l.contains("UDP")).collect();
        assert_eq!(said.len(), 1, "{text}");
        assert!(
            said[0].contains(&format!("no QUIC answer from the server's UDP port {port}"))
                && said[0].contains("leave --http3 out"),
            "{text}"
        );
        assert!(!text.contains("never answers"), "{text}");
        assert!(
            text.contains("webscope: error: no request succeeded"),
            "{text}"
        );
    }
    drop(dropping);
}

/// The server's WEBSCOPE_QUIC_STATS lines in `file` (one a connection, at its end, waited
/// for up to 10 s): the datagrams its connections sent and the system calls that sent them.
fn server_datagrams_and_calls(file: &Path) -> (u64, u64) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let field = |line: &str, key: &str| -> u64 {
            line.split_whitespace()
                .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("no {key} in {line}"))
        };
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("side=server "))
            .collect();
        if !lines.is_empty() {
            let sum = |key| lines.iter().map(|l| field(l, key)).sum();
            return (sum("udp_tx"), sum("udp_tx_calls"));
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no server line in {}",
            file.display()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Issue 50 §2, `gso` as a technique: 1 MiB downloads from `serve --http3` go out in fewer
/// system calls than datagrams with it (quinn hands the kernel up to 10 of a connection's
/// datagrams at once), and in one call a datagram with `--disable gso`.
#[test]
fn gso_sends_datagrams_in_batches_and_disable_gso_one_a_call() {
    let mut measured = Vec::new();
    // A connection's line is written at its end: idle for 1 s after the run.
    let idle = ["--keepalive-timeout", "1s"];
    for gso in [&[][..], &["--disable", "gso"][..]] {
        let stats_dir = tempfile::tempdir().unwrap();
        let stats = stats_dir.path().join("quic.stats");
        let extra: Vec<&str> = idle.iter().chain(gso).copied().collect();
        let h3 = Http3::start_env(&extra, &[("WEBSCOPE_QUIC_STATS", &stats)]);
        let (r, text) = h3.load("/1m.bin", &["-c", "1", "-d", "1s"], 0);
        assert_eq!(r["errors"]["total"], 0, "{text}");
        assert_eq!(r["connects"], 1, "{text}");
        measured.push(server_datagrams_and_calls(&stats));
    }
    eprintln!("gso on, off: (datagrams, calls) {measured:?}");
    let [(on_datagrams, on_calls), (off_datagrams, off_calls)] = measured[..] else {
        unreachable!()
    };
    // At least a megabyte each way: hundreds of full datagrams.
    assert!(on_datagrams > 700 && off_datagrams > 700, "{measured:?}");
    assert_eq!(off_datagrams, off_calls, "--disable gso batched datagrams");
    if on_calls == on_datagrams {
        lab_support::unchecked("the kernel has no UDP GSO here: one datagram a call either way");
        return;
    }
    assert!(
        on_datagrams >= 2 * on_calls,
        "{on_datagrams} datagrams in {on_calls} calls with gso on"
    );
}
