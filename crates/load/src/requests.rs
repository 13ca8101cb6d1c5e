//! The requests, built once: each is the exact bytes of one request head, so sending one is
//! a single write of a prebuilt buffer (no formatting, no allocation per request).

use webscope_workload::{Mix, Rng};

use crate::config::Mode;
use crate::target::Target;
use crate::Error;

/// One prebuilt request.
#[derive(Debug)]
pub(crate) struct Entry {
    /// The whole request head.
    pub bytes: Box<[u8]>,
    /// Its class index.
    pub class: u16,
    /// A HEAD request: its response has no body whatever its head says.
    pub head: bool,
    /// The same request in parts, for HTTP/2: method, path, extra header fields, body.
    pub method: String,
    pub path: String,
    pub fields: Vec<(String, String)>,
    pub body: bytes::Bytes,
}

/// All requests of a run and the mix that chooses among them.
#[derive(Debug)]
pub(crate) struct Requests {
    entries: Vec<Entry>,
    mix: Mix,
    /// Load groups: where each group's connections end (cumulative), in entry order.
    group_ends: Vec<usize>,
    /// The server's host and port as the Host field says them (HTTP/2's :authority).
    authority: String,
}

impl Requests {
    pub(crate) fn new(
        target: &Target,
        mode: Mode,
        headers: &[String],
        method: &str,
        body: &[u8],
    ) -> Result<Requests, Error> {
        let mut extra = String::new();
        for header in headers {
            extra.push_str(header);
            extra.push_str("\r\n");
        }
        if mode == Mode::Close {
            extra.push_str("Connection: close\r\n");
        }
        let entries = target
            .paths
            .iter()
            .enumerate()
            .map(|(i, (path, class))| {
                let (method, own, body) = match target.specs.get(i) {
                    Some(spec) => (
                        spec.method.as_str(),
                        spec.headers.as_slice(),
                        spec.body.as_slice(),
                    ),
                    None => (method, &[][..], body),
                };
                let mut head = format!(
                    "{method} {path} HTTP/1.1\r\nHost: {}\r\n{extra}",
                    target.host
                );
                for line in own {
                    head.push_str(line);
                    head.push_str("\r\n");
                }
                // HTTP/2 carries no connection-specific fields (RFC 9113 8.2.2).
                let fields = headers
                    .iter()
                    .chain(own)
                    .filter_map(|l| l.split_once(':'))
                    .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
                    .filter(|(n, _)| {
                        !matches!(
                            n.as_str(),
                            "connection" | "host" | "keep-alive" | "transfer-encoding" | "upgrade"
                        )
                    })
                    .collect();
                // A body says its length; so does a method that carries one, when empty.
                if !body.is_empty() || matches!(method, "POST" | "PUT" | "PATCH") {
                    head.push_str(&format!("Content-Length: {}\r\n", body.len()));
                }
                head.push_str("\r\n");
                let mut bytes = head.into_bytes();
                bytes.extend_from_slice(body);
                Entry {
                    bytes: bytes.into_boxed_slice(),
                    class: *class,
                    head: method == "HEAD",
                    method: method.to_string(),
                    path: path.clone(),
                    fields,
                    body: bytes::Bytes::copy_from_slice(body),
                }
            })
            .collect();
        let group_ends = target
            .groups
            .iter()
            .scan(0, |end, n| {
                *end += n;
                Some(*end)
            })
            .collect();
        Ok(Requests {
            entries,
            mix: target.mix()?,
            group_ends,
            authority: target.host.clone(),
        })
    }

    /// With load groups, the one request of the run's connection number `global` (counted
    /// over all threads); without, None (each request is drawn from the mix).
    pub(crate) fn fixed(&self, global: usize) -> Option<usize> {
        if self.group_ends.is_empty() {
            return None;
        }
        let group = self.group_ends.partition_point(|end| *end <= global);
        Some(group.min(self.group_ends.len() - 1))
    }

    /// Draws the index of the next request.
    #[inline]
    pub(crate) fn pick_index(&self, rng: &mut Rng) -> usize {
        self.mix.sample(rng)
    }

    /// The server's host (and port) as requests name it.
    pub(crate) fn authority(&self) -> &str {
        &self.authority
    }

    /// The request at `index`.
    #[inline]
    pub(crate) fn entry(&self, index: usize) -> &Entry {
        &self.entries[index]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prebuilt_heads() {
        let target = Target::url("http://127.0.0.1:8080/a?b").unwrap();
        let keep = Requests::new(&target, Mode::KeepAlive, &[], "GET", &[]).unwrap();
        let mut rng = Rng::new(1);
        assert_eq!(
            &*keep.entry(keep.pick_index(&mut rng)).bytes,
            b"GET /a?b HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n"
        );
        let close =
            Requests::new(&target, Mode::Close, &["X-Test: 1".to_string()], "GET", &[]).unwrap();
        assert_eq!(
            &*close.entry(close.pick_index(&mut rng)).bytes,
            b"GET /a?b HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nX-Test: 1\r\nConnection: close\r\n\r\n"
        );
        assert_eq!(keep.fixed(0), None);
    }

    #[test]
    fn group_connections_keep_their_group_request() {
        let groups = ["a=2:/a", "b=1:/b", "c=3:/c"].map(|g| g.parse().unwrap());
        let target = Target::groups(Some("http://127.0.0.1:1/"), &groups).unwrap();
        let r = Requests::new(&target, Mode::KeepAlive, &[], "GET", &[]).unwrap();
        let picks: Vec<Option<usize>> = (0..6).map(|g| r.fixed(g)).collect();
        assert_eq!(
            picks,
            [Some(0), Some(0), Some(1), Some(2), Some(2), Some(2)]
        );
        assert_eq!(
            &*r.entry(2).bytes,
            b"GET /c HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n"
        );
    }
}
