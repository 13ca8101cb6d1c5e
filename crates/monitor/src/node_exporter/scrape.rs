//! One scrape of a Prometheus exporter: an HTTP/1.1 GET and the text exposition format.
//!
//! The GET is written by hand on a std `TcpStream`: one request a second to a plain-HTTP
//! exporter on a known host needs no connection pool, TLS or async runtime, and keeps the
//! monitor free of an HTTP client's dependency tree. The body is parsed with the
//! `prometheus-parse` crate (the exposition format's comments, labels, escapes and special
//! values are its business, not ours).

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
const READ_TIMEOUT: Duration = Duration::from_secs(5);
/// node_exporter's page is 50-300 KB; anything past this is not an exporter page.
const MAX_BODY: u64 = 16 << 20;

/// One sample's labels and value.
pub(crate) type Sample = (HashMap<String, String>, f64);

/// The series of one scrape: metric name → (labels, value) of each sample.
#[derive(Debug, Default, Clone)]
pub(crate) struct Series {
    samples: HashMap<String, Vec<Sample>>,
}

impl Series {
    /// Parses a page in the text exposition format.
    pub fn parse(text: &str) -> Result<Series, String> {
        let lines = text.lines().map(|l| Ok(l.to_string()));
        let scrape = prometheus_parse::Scrape::parse(lines)
            .map_err(|e| format!("not the Prometheus text format: {e}"))?;
        let mut samples: HashMap<String, Vec<Sample>> = HashMap::new();
        for s in scrape.samples {
            let value = match s.value {
                prometheus_parse::Value::Counter(v)
                | prometheus_parse::Value::Gauge(v)
                | prometheus_parse::Value::Untyped(v) => v,
                // Histograms and summaries carry no figure the monitor maps.
                _ => continue,
            };
            let labels: HashMap<String, String> = s
                .labels
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            samples.entry(s.metric).or_default().push((labels, value));
        }
        Ok(Series { samples })
    }

    /// The value of an unlabelled metric (or the sum over its labels).
    pub fn value(&self, metric: &str) -> Option<f64> {
        let all = self.samples.get(metric)?;
        Some(all.iter().map(|(_, v)| v).sum())
    }

    /// The samples of `metric`, with their labels.
    pub fn all(&self, metric: &str) -> &[Sample] {
        self.samples.get(metric).map_or(&[], Vec::as_slice)
    }

    /// Whether the page has `metric` at all.
    pub fn has(&self, metric: &str) -> bool {
        self.samples.contains_key(metric)
    }
}

/// `http://host:port/path` → (host, port, path).
pub(crate) fn split(url: &str) -> Result<(String, u16, String), String> {
    let rest = url.strip_prefix("http://").ok_or_else(|| {
        format!("{url}: only http:// exporters can be scraped (e.g. http://10.0.0.5:9100/metrics)")
    })?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/metrics"),
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !authority.ends_with(']') => (
            h,
            p.parse::<u16>()
                .map_err(|_| format!("{url}: {p:?} is not a port"))?,
        ),
        _ => (authority, 9100),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return Err(format!("{url}: no host"));
    }
    Ok((host.to_string(), port, path.to_string()))
}

/// GETs `url` and parses the page.
pub(crate) fn scrape(url: &str) -> Result<Series, String> {
    let (host, port, path) = split(url)?;
    let addr = (host.as_str(), port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {host}: {e}"))?
        .next()
        .ok_or_else(|| format!("{host} has no address"))?;
    let mut stream =
        TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT).map_err(|e| format!("{addr}: {e}"))?;
    let io = |e: std::io::Error| format!("{addr}: {e}");
    stream.set_read_timeout(Some(READ_TIMEOUT)).map_err(io)?;
    stream.set_write_timeout(Some(READ_TIMEOUT)).map_err(io)?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUser-Agent: webscope-monitor\r\nAccept: text/plain\r\nConnection: close\r\n\r\n"
    )
    .map_err(io)?;
    let mut data = Vec::new();
    stream.take(MAX_BODY).read_to_end(&mut data).map_err(io)?;
    let body = body(&data)?;
    let text = std::str::from_utf8(&body).map_err(|_| "the page is not UTF-8 text".to_string())?;
    Series::parse(text)
}

/// The body of a complete response with status 200 (framed by the wire-format crate).
fn body(data: &[u8]) -> Result<Vec<u8>, String> {
    let (head, body) = webscope_http::response::whole(data)
        .map_err(|e| format!("the answer is not a complete HTTP/1.x response ({e})"))?;
    if head.status != 200 {
        return Err(format!("the exporter answered status {}", head.status));
    }
    Ok(body.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_with_the_exporters_defaults() {
        assert_eq!(
            split("http://10.0.0.5:9100/metrics").unwrap(),
            ("10.0.0.5".into(), 9100, "/metrics".into())
        );
        assert_eq!(
            split("http://host").unwrap(),
            ("host".into(), 9100, "/metrics".into())
        );
        assert_eq!(
            split("http://[::1]:9200/m").unwrap(),
            ("::1".into(), 9200, "/m".into())
        );
        assert!(split("https://host/").unwrap_err().contains("only http://"));
        assert!(split("http://host:x/").is_err());
    }

    #[test]
    fn bodies_are_framed_and_errors_said() {
        let ok = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab\ncd\r\n0\r\n\r\n";
        assert_eq!(body(ok).unwrap(), b"ab\ncd");
        let sized = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcdef";
        assert_eq!(body(sized).unwrap(), b"abc");
        let missing = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
        assert!(body(missing).unwrap_err().contains("404"));
        assert!(body(b"SSH-2.0-OpenSSH\r\n\r\n")
            .unwrap_err()
            .contains("not a complete HTTP"));
    }

    #[test]
    fn the_text_format_is_parsed_with_labels() {
        let page =
            "# HELP node_cpu_seconds_total Seconds.\n# TYPE node_cpu_seconds_total counter\n\
                    node_cpu_seconds_total{cpu=\"0\",mode=\"idle\"} 10.5\n\
                    node_cpu_seconds_total{cpu=\"1\",mode=\"idle\"} 2.5\n\
                    # TYPE node_load1 gauge\nnode_load1 0.25\n";
        let s = Series::parse(page).unwrap();
        assert_eq!(s.value("node_load1"), Some(0.25));
        assert_eq!(s.value("node_cpu_seconds_total"), Some(13.0));
        assert_eq!(s.all("node_cpu_seconds_total")[1].0["cpu"], "1");
        assert!(!s.has("node_forks_total"));
    }
}
