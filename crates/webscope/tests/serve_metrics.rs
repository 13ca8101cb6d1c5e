//! `webscope serve --admin`: /metrics in the Prometheus text format, /stats.json, and the
//! server-side timing (WebMonitor's parse / process / log phases) adding up.

mod serve_support;

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use serve_support::*;

/// /stats.json once it has counted `requests` (a request is recorded just after its response
/// is sent, so a client can ask before the last one is in).
fn stats_after(addr: std::net::SocketAddr, requests: u64) -> serde_json::Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let stats: serde_json::Value =
            serde_json::from_slice(&admin_get(addr, "/stats.json").body).unwrap();
        if stats["requests"] == requests || std::time::Instant::now() > deadline {
            return stats;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn admin_get(addr: std::net::SocketAddr, path: &str) -> Response {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    stream
        .write_all(format!("GET {path} HTTP/1.1\r\nHost: admin\r\n\r\n").as_bytes())
        .unwrap();
    read_responses(&mut stream, 1, false).remove(0)
}

/// Sends a known mix: 30 small files, 20 of 100 KiB, 10 misses, 5 bad requests.
fn known_traffic(server: &Server) -> u64 {
    let mut stream = server.connect();
    let mut batch = Vec::new();
    for _ in 0..30 {
        batch.extend_from_slice(b"GET /1k.bin HTTP/1.1\r\nHost: t\r\n\r\n");
    }
    for _ in 0..20 {
        batch.extend_from_slice(b"GET /100k.bin HTTP/1.1\r\nHost: t\r\n\r\n");
    }
    for _ in 0..10 {
        batch.extend_from_slice(b"GET /missing HTTP/1.1\r\nHost: t\r\n\r\n");
    }
    stream.write_all(&batch).unwrap();
    assert_eq!(read_responses(&mut stream, 60, false).len(), 60);
    for _ in 0..5 {
        assert_eq!(exchange(server, b"GET / HTTP/9.9\r\n\r\n").status, 505);
    }
    65
}

#[test]
fn metrics_parse_as_prometheus_text_and_count_every_request() {
    let site = Site::new();
    let server = Server::start(site.root(), &["--admin", "127.0.0.1:0"]);
    let admin = server.admin_addr();
    let sent = known_traffic(&server);
    stats_after(admin, sent);
    let resp = admin_get(admin, "/metrics");
    assert_eq!(resp.status, 200);
    assert!(resp
        .header("Content-Type")
        .unwrap()
        .starts_with("text/plain; version=0.0.4"));
    let text = String::from_utf8(resp.body).unwrap();
    let lines = text.lines().map(|l| Ok(l.to_string()));
    let scrape = prometheus_parse::Scrape::parse(lines).expect("valid Prometheus text");
    let value = |name: &str, label: Option<(&str, &str)>| -> f64 {
        scrape
            .samples
            .iter()
            .filter(|s| s.metric == name)
            .filter(|s| label.is_none_or(|(k, v)| s.labels.get(k) == Some(v)))
            .map(|s| match s.value {
                prometheus_parse::Value::Counter(v)
                | prometheus_parse::Value::Gauge(v)
                | prometheus_parse::Value::Untyped(v) => v,
                _ => 0.0,
            })
            .sum()
    };
    assert_eq!(value("webscope_requests_total", None), sent as f64);
    assert_eq!(
        value("webscope_requests_total", Some(("code", "200"))),
        50.0
    );
    assert_eq!(
        value("webscope_requests_total", Some(("code", "404"))),
        10.0
    );
    assert_eq!(value("webscope_requests_total", Some(("code", "505"))), 5.0);
    assert!(value("webscope_sent_bytes_total", None) > (20 * 100 * 1024) as f64);
    assert!(value("webscope_connections_total", None) >= 6.0);
    // The histograms: each phase's count equals the requests of that class.
    let histograms: Vec<_> = scrape
        .samples
        .iter()
        .filter(|s| s.metric == "webscope_request_phase_seconds")
        .collect();
    assert!(!histograms.is_empty(), "no phase histograms in\n{text}");
    let count = |phase: &str, class: &str| -> u64 {
        histograms
            .iter()
            .filter(|s| {
                s.labels.get("phase") == Some(phase) && s.labels.get("size_class") == Some(class)
            })
            .map(|s| match &s.value {
                prometheus_parse::Value::Histogram(buckets) => {
                    buckets.iter().map(|b| b.count as u64).max().unwrap_or(0)
                }
                _ => 0,
            })
            .sum()
    };
    for phase in ["parse", "process", "log", "total"] {
        assert_eq!(count(phase, "1-10KB"), 30, "{phase}");
        assert_eq!(count(phase, "100KB-1MB"), 20, "{phase}");
        assert_eq!(
            count(phase, "0-1KB"),
            15,
            "{phase}: misses and refusals are small"
        );
    }
    assert_eq!(admin_get(admin, "/nothing").status, 404);
}

#[test]
fn stats_json_has_percentiles_that_add_up() {
    let site = Site::new();
    let server = Server::start(site.root(), &["--admin", "127.0.0.1:0"]);
    let admin = server.admin_addr();
    let sent = known_traffic(&server);
    let resp = admin_get(admin, "/stats.json");
    assert_eq!(resp.header("Content-Type"), Some("application/json"));
    let stats = stats_after(admin, sent);
    assert_eq!(stats["requests"], sent);
    assert_eq!(stats["timing"], true);
    let phases = stats["phases_us"].as_object().unwrap();
    let total: u64 = phases
        .values()
        .map(|c| c["total"]["count"].as_u64().unwrap())
        .sum();
    assert_eq!(
        total, sent,
        "the timing histograms add up to the request count"
    );
    let big = &phases["100KB-1MB"];
    for phase in ["parse", "process", "log", "total"] {
        let p = &big[phase];
        assert!(p["p50"].as_f64().unwrap() <= p["p99"].as_f64().unwrap());
        assert!(p["p99"].as_f64().unwrap() <= p["max"].as_f64().unwrap());
    }
    // A request's total covers its phases.
    assert!(big["total"]["mean"].as_f64().unwrap() >= big["process"]["mean"].as_f64().unwrap());
    assert!(big["process"]["mean"].as_f64().unwrap() > 0.0);
}

#[test]
fn no_timing_leaves_the_histograms_empty() {
    let site = Site::new();
    let server = Server::start(site.root(), &["--admin", "127.0.0.1:0", "--no-timing"]);
    let admin = server.admin_addr();
    known_traffic(&server);
    let stats: serde_json::Value =
        serde_json::from_slice(&admin_get(admin, "/stats.json").body).unwrap();
    assert_eq!(stats["timing"], false);
    assert_eq!(stats["requests"], 0);
}

#[test]
fn the_admin_listener_is_separate_from_the_data_listener() {
    let site = Site::new();
    let server = Server::start(
        site.root(),
        &["--admin", "127.0.0.1:0", "--max-connections", "1"],
    );
    let admin = server.admin_addr();
    assert_ne!(admin, server.addr);
    // The data listener's one connection is taken; the admin endpoint still answers.
    let mut held = server.connect();
    held.write_all(b"GET /1k.bin HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    assert_eq!(read_responses(&mut held, 1, false)[0].status, 200);
    assert_eq!(admin_get(admin, "/metrics").status, 200);
    assert_eq!(admin_get(admin, "/").status, 200);
}
