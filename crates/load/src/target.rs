//! What to request: one URL, or a file set's manifest under a base URL, resolved once.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::Path;

use serde::{Deserialize, Serialize};
use webscope_sys::{Line, LineReader, MAX_LINE};
use webscope_workload::{Manifest, Mix};

use crate::Error;

/// The server's address and the paths to request with their probabilities and classes.
///
/// Serialised whole (a file set's paths and weights included, so a segment needs no copy of
/// the set); [`Target::resolve_again`] looks the server's name up where it is read back.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Target {
    /// Where to connect.
    pub addr: SocketAddr,
    /// The `Host` field's value (host, and port when not 80).
    pub host: String,
    /// Shown in reports: the URL, or the base URL and the file set.
    pub description: String,
    /// Class names, in report order.
    pub classes: Vec<String>,
    /// Request targets (absolute paths with any query), each with its class index.
    pub paths: Vec<(String, u16)>,
    /// Probability of each path.
    pub weights: Vec<f64>,
    /// Load groups: connections given to each path (in `paths` order), each connection
    /// requesting its group's path only. Empty: every request draws a path from `weights`.
    pub groups: Vec<usize>,
    /// The server's name for TLS (SNI and the certificate's check) when the URL is https.
    pub tls_name: Option<String>,
    /// A request list (`--requests`): each path's method, extra headers and body, in `paths`
    /// order. Empty: every request is a GET with the run's method, headers and body.
    pub specs: Vec<RequestSpec>,
}

/// One request of a request list: what goes with its path.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestSpec {
    /// `GET`, `POST`, ...
    pub method: String,
    /// Header lines (`Name: value`) for this request alone.
    pub headers: Vec<String>,
    /// Its body (sent with a Content-Length).
    pub body: Vec<u8>,
}

/// One closed-loop client group: `NAME=N:URL` on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// Shown as the group's class in reports (e.g. `light`).
    pub name: String,
    /// Its connections (clients).
    pub connections: usize,
    /// An `http://` URL, or a path (`/svc/light`) on the run's base URL.
    pub url: String,
}

impl std::str::FromStr for Group {
    type Err = Error;

    /// Parses `NAME=N:URL`, e.g. `light=30:/svc/light`.
    fn from_str(text: &str) -> Result<Group, Error> {
        let bad = |why: &str| {
            Error::Config(format!(
                "--group {text:?}: {why} (write NAME=N:URL, e.g. light=30:/svc/light)"
            ))
        };
        let (name, rest) = text.split_once('=').ok_or_else(|| bad("no '='"))?;
        let (count, url) = rest.split_once(':').ok_or_else(|| bad("no ':' after N"))?;
        if name.is_empty()
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b))
        {
            return Err(bad("the name must be letters, digits, '_', '-' or '.'"));
        }
        let connections: usize = count
            .parse()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| bad("N must be a positive number of connections"))?;
        if !(url.starts_with('/') || url.starts_with("http://") || url.starts_with("https://")) {
            return Err(bad("the URL must start with /, http:// or https://"));
        }
        Ok(Group {
            name: name.to_string(),
            connections,
            url: url.to_string(),
        })
    }
}

/// A parsed `http://` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Url {
    host: String,
    port: u16,
    /// The path and query, starting with `/`.
    path: String,
    /// https.
    tls: bool,
}

fn parse_url(url: &str) -> Result<Url, Error> {
    let bad = |reason: &str| Error::Url {
        url: url.to_string(),
        reason: reason.to_string(),
    };
    let (rest, tls) = if let Some(rest) = url.strip_prefix("http://") {
        (rest, false)
    } else if let Some(rest) = url.strip_prefix("https://") {
        (rest, true)
    } else {
        return Err(bad(
            "give an http:// or https:// URL, e.g. http://127.0.0.1:8080/index.html",
        ));
    };
    let default_port = if tls { 443 } else { 80 };
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) if rest.as_bytes()[i] == b'/' => (&rest[..i], rest[i..].to_string()),
        Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
        None => (rest, "/".to_string()),
    };
    let path = path.split('#').next().unwrap_or("/").to_string();
    if path.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return Err(bad(
            "the path has spaces or control characters (percent-encode them)",
        ));
    }
    if authority.contains('@') {
        return Err(bad("user names in URLs are not supported"));
    }
    let (host, port) = if let Some(inner) = authority.strip_prefix('[') {
        let (host, after) = inner
            .split_once(']')
            .ok_or_else(|| bad("unclosed [ in the IPv6 address"))?;
        match after {
            "" => (host.to_string(), default_port),
            p => (
                host.to_string(),
                parse_port(p.strip_prefix(':').unwrap_or(p)).ok_or_else(|| bad("bad port"))?,
            ),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (
                host.to_string(),
                parse_port(port).ok_or_else(|| bad("bad port"))?,
            ),
            None => (authority.to_string(), default_port),
        }
    };
    if host.is_empty() {
        return Err(bad("no host"));
    }
    Ok(Url {
        host,
        port,
        path,
        tls,
    })
}

/// A logged target as a request line may carry it: spaces and control characters (a log
/// may hold them unescaped) percent-encoded, a target not starting with `/` given one.
fn escape_target(target: &str) -> String {
    let mut out = String::with_capacity(target.len() + 1);
    if !target.starts_with('/') {
        out.push('/');
    }
    for c in target.chars() {
        if c <= ' ' || c == '\u{7f}' {
            out.push_str(&format!("%{:02X}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

fn parse_port(text: &str) -> Option<u16> {
    text.parse().ok().filter(|p| *p != 0)
}

fn resolve(url: &Url) -> Result<SocketAddr, Error> {
    let resolve_err = |source| Error::Resolve {
        host: url.host.clone(),
        source,
    };
    (url.host.as_str(), url.port)
        .to_socket_addrs()
        .map_err(resolve_err)?
        .next()
        .ok_or_else(|| resolve_err(std::io::Error::other("no address")))
}

fn host_field(url: &Url) -> String {
    let host = if url.host.contains(':') {
        format!("[{}]", url.host)
    } else {
        url.host.clone()
    };
    if url.port == if url.tls { 443 } else { 80 } {
        host
    } else {
        format!("{host}:{}", url.port)
    }
}

/// A base URL and the path prefix it puts before the set's or the log's paths.
fn parse_base(base: &str) -> Result<(Url, String), Error> {
    let parsed = parse_url(base)?;
    if parsed.path.contains('?') {
        return Err(Error::Url {
            url: base.to_string(),
            reason: "a base URL cannot have a query".into(),
        });
    }
    let prefix = parsed.path.trim_end_matches('/').to_string();
    Ok((parsed, prefix))
}

impl Target {
    /// The server of `url`, described as `description`, with nothing to request yet: each
    /// constructor adds its classes, paths and weights.
    fn on(url: &Url, description: String) -> Result<Target, Error> {
        Ok(Target {
            addr: resolve(url)?,
            host: host_field(url),
            description,
            classes: Vec::new(),
            paths: Vec::new(),
            weights: Vec::new(),
            groups: Vec::new(),
            tls_name: url.tls.then(|| url.host.clone()),
            specs: Vec::new(),
        })
    }

    /// Looks the server's name (the `Host` field's, with the scheme's port when it has none)
    /// up again here, for a target read back from a serialised config: a segment connects to
    /// the address its own resolver gives (a pod's, the cluster's), as `webscope load URL`
    /// there would, not to the one the writer's machine found.
    pub fn resolve_again(&mut self) -> Result<(), Error> {
        let scheme = if self.tls_name.is_some() {
            "https"
        } else {
            "http"
        };
        self.addr = resolve(&parse_url(&format!("{scheme}://{}/", self.host))?)?;
        Ok(())
    }

    /// One URL, requested every time.
    pub fn url(url: &str) -> Result<Target, Error> {
        let parsed = parse_url(url)?;
        Ok(Target {
            classes: vec!["all".to_string()],
            paths: vec![(parsed.path.clone(), 0)],
            weights: vec![1.0],
            ..Target::on(&parsed, url.to_string())?
        })
    }

    /// Several closed-loop client groups on one server, each with its own connections and
    /// URL, reported as one class each. Paths are taken relative to `base` (any path of
    /// `base` is ignored); absolute URLs must name the same server.
    pub fn groups(base: Option<&str>, groups: &[Group]) -> Result<Target, Error> {
        let first = groups
            .first()
            .ok_or_else(|| Error::Config("no --group given".into()))?;
        let base = match base {
            Some(base) => base,
            None if first.url.starts_with("http") => first.url.as_str(),
            None => {
                return Err(Error::Config(
                    "--group with a path needs the server's URL, e.g. webscope load http://127.0.0.1:8080/ --group light=30:/svc/light".into(),
                ))
            }
        };
        let server = parse_url(base)?;
        let mut paths = Vec::with_capacity(groups.len());
        for (index, group) in groups.iter().enumerate() {
            if groups[..index].iter().any(|g| g.name == group.name) {
                return Err(Error::Config(format!(
                    "--group {}: the name is used twice (each group needs its own)",
                    group.name
                )));
            }
            let path = if group.url.starts_with('/') {
                parse_url(&format!("http://h{}", group.url))?.path
            } else {
                let url = parse_url(&group.url)?;
                if (url.host.as_str(), url.port) != (server.host.as_str(), server.port) {
                    return Err(Error::Config(format!(
                        "--group {}: {} is not on {} (all groups load one server)",
                        group.name, group.url, base
                    )));
                }
                url.path
            };
            paths.push((path, index as u16));
        }
        let description = groups
            .iter()
            .zip(&paths)
            .map(|(g, (path, _))| format!("{}={}:{}", g.name, g.connections, path))
            .collect::<Vec<_>>()
            .join(" ");
        Ok(Target {
            classes: groups.iter().map(|g| g.name.clone()).collect(),
            paths,
            weights: groups.iter().map(|g| g.connections as f64).collect(),
            groups: groups.iter().map(|g| g.connections).collect(),
            ..Target::on(
                &server,
                format!("{} groups {description}", host_field(&server)),
            )?
        })
    }

    /// The files of the set in `dir` (its manifest), under `base` (e.g.
    /// `http://127.0.0.1:8080/` when the server's root is the set), chosen by their
    /// access probabilities.
    pub fn fileset(dir: &Path, base: &str) -> Result<Target, Error> {
        let manifest = Manifest::load(dir)?;
        let (parsed, prefix) = parse_base(base)?;
        let classes: Vec<String> = manifest.classes.iter().map(|c| c.name.clone()).collect();
        let paths = manifest
            .files
            .iter()
            .map(|f| {
                let class = classes.iter().position(|c| *c == f.class).unwrap_or(0) as u16;
                (format!("{prefix}/{}", f.path), class)
            })
            .collect();
        let description = format!("{base} with {} ({})", dir.display(), manifest.description);
        Ok(Target {
            classes,
            paths,
            weights: manifest.files.iter().map(|f| f.probability).collect(),
            ..Target::on(&parsed, description)?
        })
    }

    /// A replay's distinct requests on the server of `base` (its path, if any, prefixed to
    /// the logged ones): one class, `replay`; each slot names its request, so the weights
    /// are never drawn from.
    pub fn replay(base: &str, replay: &crate::replay::Replay) -> Result<Target, Error> {
        Target::logged(base, &replay.requests, "replay", "replaying a log")
    }

    /// A log's distinct requests on the server of `base`, as [`Target::replay`] makes them,
    /// in one class named `class`; `doing` ends the description.
    pub fn logged(
        base: &str,
        requests: &[crate::replay::ReplayRequest],
        class: &str,
        doing: &str,
    ) -> Result<Target, Error> {
        let (parsed, prefix) = parse_base(base)?;
        let paths = requests
            .iter()
            .map(|r| (format!("{prefix}{}", escape_target(&r.target)), 0))
            .collect();
        // A logged 304: conditional on a time after the files were made and not after any
        // send (servers ignore a date in their future), so that a server answers 304 as it
        // did; now, when the requests are built, is both.
        let mut now = Vec::new();
        webscope_http::date::write_http_date(&mut now, webscope_http::date::unix_now());
        let since = format!("If-Modified-Since: {}", String::from_utf8_lossy(&now));
        let specs = requests
            .iter()
            .map(|r| RequestSpec {
                method: r.method.clone(),
                headers: r
                    .range
                    .map(|n| format!("Range: bytes=0-{}", n - 1))
                    .into_iter()
                    .chain(r.not_modified.then(|| since.clone()))
                    .collect(),
                body: Vec::new(),
            })
            .collect();
        Ok(Target {
            classes: vec![class.to_string()],
            paths,
            weights: vec![1.0; requests.len()],
            specs,
            ..Target::on(&parsed, format!("{base} {doing}"))?
        })
    }

    /// The mix that draws paths by probability.
    /// A request list in vegeta's target format: per request, a `METHOD URL` line, header
    /// lines, an optional `@file` line for its body (relative to the list's directory), and a
    /// blank line; `#` lines are comments, and `# weight N` before a request draws it N times
    /// as often (default 1). All URLs must be on one server. Each request is a class of its own.
    pub fn request_list(path: &Path) -> Result<Target, Error> {
        let io = |e: std::io::Error| Error::Config(format!("--requests {}: {e}", path.display()));
        let file = std::io::BufReader::new(std::fs::File::open(path).map_err(io)?);
        let mut lines = LineReader::new(file, MAX_LINE);
        let dir = path.parent().unwrap_or(Path::new("."));
        let bad = |line: usize, why: String| {
            Error::Config(format!("--requests {} line {line}: {why}", path.display()))
        };
        let mut server: Option<Url> = None;
        let (mut classes, mut paths, mut weights, mut specs) = (vec![], vec![], vec![], vec![]);
        let mut weight = 1.0;
        let mut current: Option<RequestSpec> = None;
        let mut number = 0;
        while let Some(read) = lines.next_line().map_err(io)? {
            number += 1;
            let line = match read {
                Line::Text(text) => std::str::from_utf8(text)
                    .map_err(|_| bad(number, "is not UTF-8 text".into()))?
                    .trim_end(),
                Line::TooLong { bytes, .. } => {
                    return Err(bad(
                        number,
                        format!("{bytes} bytes, over the 64 KiB of a line"),
                    ))
                }
            };
            if let Some(comment) = line.strip_prefix('#') {
                if let Some(n) = comment.trim().strip_prefix("weight") {
                    weight = n
                        .trim()
                        .parse::<f64>()
                        .ok()
                        .filter(|w| w.is_finite() && *w > 0.0)
                        .ok_or_else(|| {
                            bad(number, format!("{line:?}: give # weight N with N > 0"))
                        })?;
                }
                continue;
            }
            if line.is_empty() {
                if let Some(spec) = current.take() {
                    specs.push(spec);
                }
                continue;
            }
            match current.as_mut() {
                None => {
                    let (method, url) = line
                        .split_once(' ')
                        .ok_or_else(|| bad(number, format!("{line:?} is not `METHOD URL`")))?;
                    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase()) {
                        return Err(bad(
                            number,
                            format!("{method:?} is not a method (GET, POST ...)"),
                        ));
                    }
                    let parsed = parse_url(url.trim())?;
                    match &server {
                        Some(s)
                            if (&s.host, s.port, s.tls)
                                != (&parsed.host, parsed.port, parsed.tls) =>
                        {
                            return Err(bad(number, format!("{url} is not on the first request's server (one list loads one server)")));
                        }
                        Some(_) => {}
                        None => server = Some(parsed.clone()),
                    }
                    let name = format!("{method} {}", parsed.path);
                    let name = if classes.contains(&name) {
                        format!("{name} #{}", classes.len() + 1)
                    } else {
                        name
                    };
                    paths.push((parsed.path.clone(), classes.len() as u16));
                    classes.push(name);
                    weights.push(weight);
                    weight = 1.0;
                    current = Some(RequestSpec {
                        method: method.to_string(),
                        ..RequestSpec::default()
                    });
                }
                Some(spec) => {
                    if let Some(file) = line.strip_prefix('@') {
                        let file = dir.join(file.trim());
                        spec.body = std::fs::read(&file).map_err(|e| {
                            bad(number, format!("body file {}: {e}", file.display()))
                        })?;
                    } else if line
                        .split_once(':')
                        .is_some_and(|(n, _)| !n.is_empty() && !n.contains(' '))
                    {
                        spec.headers.push(line.to_string());
                    } else {
                        return Err(bad(number, format!("{line:?} is neither a header nor @file (separate requests with a blank line)")));
                    }
                }
            }
        }
        if let Some(spec) = current.take() {
            specs.push(spec);
        }
        let server = server.ok_or_else(|| {
            Error::Config(format!("--requests {}: no request in it", path.display()))
        })?;
        let description = format!("{} requests of {}", classes.len(), path.display());
        Ok(Target {
            classes,
            paths,
            weights,
            specs,
            ..Target::on(&server, description)?
        })
    }

    pub(crate) fn mix(&self) -> Result<Mix, Error> {
        Mix::new(&self.weights).ok_or_else(|| {
            Error::Config("the target has no request with a positive probability".into())
        })
    }
}

#[cfg(test)]
#[path = "target_tests.rs"]
mod tests;
