//! The server's measurements as text for others to read: the Prometheus text exposition format
//! (`/metrics`) and JSON with percentiles (`/stats.json`, what webscope's own lab collects).
//!
//! The Prometheus histograms are derived from the HdrHistograms at scrape time: for each
//! bucket bound, the count of recorded values at or below it. `_sum` is the HdrHistogram mean
//! times the count (exact to the histogram's 1 % resolution).

use std::fmt::Write;

use hdrhistogram::Histogram;
use serde_json::{json, Value};

use crate::services::{ServiceFigures, SERVICES};
use crate::timing::{Stats, CLASSES, PHASES};

/// Bucket bounds for durations, in seconds.
const SECONDS: [f64; 22] = [
    0.000_001,
    0.000_002_5,
    0.000_005,
    0.000_01,
    0.000_025,
    0.000_05,
    0.000_1,
    0.000_25,
    0.000_5,
    0.001,
    0.002_5,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
];
/// Bucket bounds for requests per connection.
const COUNTS: [f64; 10] = [
    1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 1000.0, 10_000.0, 100_000.0,
];

/// What the exposition says about the server besides its measurements.
#[derive(Debug, Clone)]
pub struct Info {
    /// webscope's version.
    pub version: String,
    /// The techniques in force, comma-separated.
    pub techniques: String,
    /// Whether requests are timed (if not, the histograms stay empty).
    pub timing: bool,
    /// Worker threads.
    pub workers: usize,
    /// With TLS, how records are encrypted: "ktls", or "user-space" and why not kTLS.
    pub tls: Option<String>,
}

/// Renders the Prometheus text exposition format (version 0.0.4).
pub fn prometheus(stats: &Stats, info: &Info) -> String {
    let mut out = String::with_capacity(64 * 1024);
    header(
        &mut out,
        "webscope_info",
        "gauge",
        "The server's version and techniques.",
    );
    let _ = writeln!(
        out,
        "webscope_info{{version=\"{}\",techniques=\"{}\",timing=\"{}\",workers=\"{}\"}} 1",
        info.version, info.techniques, info.timing, info.workers
    );
    header(
        &mut out,
        "webscope_requests_total",
        "counter",
        "Requests answered, by status code.",
    );
    for (code, n) in &stats.by_status {
        let _ = writeln!(out, "webscope_requests_total{{code=\"{code}\"}} {n}");
    }
    header(
        &mut out,
        "webscope_sent_bytes_total",
        "counter",
        "Bytes written to clients.",
    );
    let _ = writeln!(out, "webscope_sent_bytes_total {}", stats.bytes_sent);
    header(
        &mut out,
        "webscope_connections_total",
        "counter",
        "Connections accepted.",
    );
    let _ = writeln!(out, "webscope_connections_total {}", stats.connections);
    header(
        &mut out,
        "webscope_connections_active",
        "gauge",
        "Connections open now.",
    );
    let _ = writeln!(out, "webscope_connections_active {}", stats.active);
    if info.tls.is_some() {
        header(
            &mut out,
            "webscope_tls_handshakes_total",
            "counter",
            "TLS handshakes by result (full, resumed, failed: closed or timed out).",
        );
        for (result, n) in [
            ("full", stats.tls_full),
            ("resumed", stats.tls_resumed),
            ("failed", stats.tls_failed),
        ] {
            let _ = writeln!(
                out,
                "webscope_tls_handshakes_total{{result=\"{result}\"}} {n}"
            );
        }
        header(
            &mut out,
            "webscope_http2_connections_total",
            "counter",
            "Connections that chose HTTP/2 (ALPN h2).",
        );
        let _ = writeln!(
            out,
            "webscope_http2_connections_total {}",
            stats.h2_connections
        );
        header(
            &mut out,
            "webscope_http2_floods_total",
            "counter",
            "HTTP/2 connections ended (GOAWAY ENHANCE_YOUR_CALM) for more control frames than their requests allow.",
        );
        let _ = writeln!(out, "webscope_http2_floods_total {}", stats.h2_floods);
        header(
            &mut out,
            "webscope_http3_connections_total",
            "counter",
            "QUIC connections that spoke HTTP/3 (serve --http3).",
        );
        let _ = writeln!(
            out,
            "webscope_http3_connections_total {}",
            stats.h3_connections
        );
        header(
            &mut out,
            "webscope_quic_retries_total",
            "counter",
            "QUIC connection attempts answered with a Retry (address validation under a flood of handshakes).",
        );
        let _ = writeln!(out, "webscope_quic_retries_total {}", stats.quic_retries);
    }
    header(
        &mut out,
        "webscope_request_phase_seconds",
        "histogram",
        "Time per request phase (parse, process, log, total; tls: the handshake, once per TLS connection) by response size class.",
    );
    for (class, phases) in CLASSES.iter().zip(&stats.phases) {
        for (phase, hist) in PHASES.iter().zip(phases) {
            let labels = format!("phase=\"{phase}\",size_class=\"{class}\"");
            histogram(
                &mut out,
                "webscope_request_phase_seconds",
                &labels,
                hist,
                &SECONDS,
                1e-9,
            );
        }
    }
    header(
        &mut out,
        "webscope_request_duration_seconds",
        "histogram",
        "Time per request, first byte to sent, by status class.",
    );
    for (i, hist) in stats.by_status_class.iter().enumerate().skip(1) {
        let labels = format!("status_class=\"{i}xx\"");
        histogram(
            &mut out,
            "webscope_request_duration_seconds",
            &labels,
            hist,
            &SECONDS,
            1e-9,
        );
    }
    header(
        &mut out,
        "webscope_connection_duration_seconds",
        "histogram",
        "Connection lifetimes, accept to close.",
    );
    histogram(
        &mut out,
        "webscope_connection_duration_seconds",
        "",
        &stats.connection_life,
        &SECONDS,
        1e-9,
    );
    header(
        &mut out,
        "webscope_connection_requests",
        "histogram",
        "Requests served per connection.",
    );
    histogram(
        &mut out,
        "webscope_connection_requests",
        "",
        &stats.requests_per_connection,
        &COUNTS,
        1.0,
    );
    out
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// One Prometheus histogram from an HdrHistogram whose values are `unit` of the exposed unit
/// (1e-9 for nanoseconds exposed as seconds).
fn histogram(
    out: &mut String,
    name: &str,
    labels: &str,
    hist: &Histogram<u64>,
    bounds: &[f64],
    unit: f64,
) {
    let sep = if labels.is_empty() { "" } else { "," };
    for &le in bounds {
        let raw = (le / unit).round() as u64;
        let count = if hist.is_empty() {
            0
        } else {
            hist.count_between(0, raw)
        };
        let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"{le}\"}} {count}");
    }
    let _ = writeln!(
        out,
        "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {}",
        hist.len()
    );
    let sum = hist.mean() * hist.len() as f64 * unit;
    let braces = if labels.is_empty() {
        String::new()
    } else {
        format!("{{{labels}}}")
    };
    let _ = writeln!(out, "{name}_sum{braces} {sum}");
    let _ = writeln!(out, "{name}_count{braces} {}", hist.len());
}

/// A per-service counter: metric name, help text, and how to read it from the figures.
type Counter = (&'static str, &'static str, fn(&ServiceFigures) -> f64);

/// Appends the services' figures: requests completed and refused, CPU time, and the
/// waiting / running split (histograms) per service.
pub fn prometheus_services(out: &mut String, figures: &[ServiceFigures]) {
    let counters: [Counter; 4] = [
        (
            "webscope_service_requests_total",
            "Service requests completed.",
            |f| f.completed as f64,
        ),
        (
            "webscope_service_refused_total",
            "Service requests refused (503).",
            |f| f.refused as f64,
        ),
        (
            "webscope_service_cpu_seconds_total",
            "CPU time spent running each service.",
            |f| f.cpu_ns as f64 * 1e-9,
        ),
        (
            "webscope_service_slices_total",
            "Slices the completed requests ran in (one each when not sliced).",
            // Recorded exactly below 2^11 slices per request (2 significant digits above).
            |f| f.slices.mean() * f.slices.len() as f64,
        ),
    ];
    for (metric, help, value) in counters {
        header(out, metric, "counter", help);
        for (name, f) in SERVICES.iter().zip(figures) {
            let _ = writeln!(out, "{metric}{{service=\"{name}\"}} {}", value(f));
        }
    }
    for (metric, help, pick) in [
        (
            "webscope_service_wait_seconds",
            "Time from arrival to first run.",
            0,
        ),
        (
            "webscope_service_running_seconds",
            "Time running, all slices.",
            1,
        ),
    ] {
        header(out, metric, "histogram", help);
        for (name, f) in SERVICES.iter().zip(figures) {
            let hist = if pick == 0 { &f.wait } else { &f.running };
            let labels = format!("service=\"{name}\"");
            histogram(out, metric, &labels, hist, &SECONDS, 1e-9);
        }
    }
}

/// The services' figures as JSON, by service name.
pub fn json_services(figures: &[ServiceFigures]) -> Value {
    let map: serde_json::Map<String, Value> = SERVICES
        .iter()
        .zip(figures)
        .map(|(name, f)| {
            let value = json!({
                "completed": f.completed,
                "refused": f.refused,
                "cpu_s": f.cpu_ns as f64 * 1e-9,
                "wait_us": percentiles_us(&f.wait),
                "running_us": percentiles_us(&f.running),
                "slices": {
                    "mean": f.slices.mean(),
                    "max": f.slices.max(),
                },
            });
            (name.to_string(), value)
        })
        .collect();
    Value::Object(map)
}

/// Percentiles of a histogram of nanoseconds, in microseconds.
fn percentiles_us(hist: &Histogram<u64>) -> Value {
    let us = |v: u64| v as f64 / 1000.0;
    json!({
        "count": hist.len(),
        "mean": hist.mean() / 1000.0,
        "p50": us(hist.value_at_quantile(0.5)),
        "p90": us(hist.value_at_quantile(0.9)),
        "p99": us(hist.value_at_quantile(0.99)),
        "p999": us(hist.value_at_quantile(0.999)),
        "max": us(hist.max()),
    })
}

/// Renders `/stats.json`: the same figures with percentiles, in microseconds.
pub fn json(stats: &Stats, info: &Info) -> Value {
    let phases: serde_json::Map<String, Value> = CLASSES
        .iter()
        .zip(&stats.phases)
        .map(|(class, phases)| {
            let by_phase: serde_json::Map<String, Value> = PHASES
                .iter()
                .zip(phases)
                .map(|(phase, hist)| (phase.to_string(), percentiles_us(hist)))
                .collect();
            (class.to_string(), Value::Object(by_phase))
        })
        .collect();
    let by_status: serde_json::Map<String, Value> = stats
        .by_status
        .iter()
        .map(|(code, n)| (code.to_string(), json!(n)))
        .collect();
    let by_class: serde_json::Map<String, Value> = stats
        .by_status_class
        .iter()
        .enumerate()
        .skip(1)
        .map(|(i, hist)| (format!("{i}xx"), percentiles_us(hist)))
        .collect();
    json!({
        "version": info.version,
        "techniques": info.techniques,
        "timing": info.timing,
        "workers": info.workers,
        "requests": stats.requests(),
        "requests_by_status": by_status,
        "sent_bytes": stats.bytes_sent,
        "connections": stats.connections,
        "connections_active": stats.active,
        "phases_us": phases,
        "duration_by_status_class_us": by_class,
        "connection_life_us": percentiles_us(&stats.connection_life),
        "requests_per_connection": {
            "count": stats.requests_per_connection.len(),
            "mean": stats.requests_per_connection.mean(),
            "max": stats.requests_per_connection.max(),
        },
        "tls": info.tls.as_ref().map(|records| json!({
            "records": records,
            "handshakes": {
                "full": stats.tls_full,
                "resumed": stats.tls_resumed,
                "failed": stats.tls_failed,
            },
            "http2_connections": stats.h2_connections,
            "http2_floods": stats.h2_floods,
            "http3_connections": stats.h3_connections,
            "quic_retries": stats.quic_retries,
        })),
    })
}
