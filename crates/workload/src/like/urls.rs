//! The site's URL space: which logged targets become files, where each file lies, and what
//! the servers must be told ([`UrlMap`]) so that every target answers as it was logged.
//!
//! A target (path and query, as logged) answers what most of its requests got, among what a
//! set can reproduce: a file (200, 206 and 304 together), a redirect (301, 302, 303, 307,
//! 308) or an absence (404, 410). Statuses a set cannot give (5xx, 403, 401, 400, ...) are
//! left to the server.
//!
//! Files: the targets of one path that answered with a file are one resource unless the log
//! shows them distinct (a different largest 200 body): `/feed?flav=rss20` of 9 KB beside `/feed`
//! of 30 KB is a file of its own, `/a.css?v=2` of the same size as `/a.css` is the path's file
//! (a static server ignores the query). With `keep_paths` a resource lies at its path when that
//! is a plain file name (`/` and `/dir/` as `index.html` in their directory); anything else (an
//! unsafe or too long name, a query's own file, a file where a directory is needed) gets a rank
//! name and a map entry. Redirects are always mapped (the log does not say where they led: to
//! the path with a slash, as a directory's); an absence is mapped only where the set would
//! otherwise answer (a file or a directory of the set is there, or the root).

use std::collections::{BTreeMap, HashSet};

use super::names::{plain, rank_name, reserved, MAX_NAME, MAX_PATH};
use super::{Observed, Renamed};

pub use crate::manifest::URL_MAP;
/// Its format tag.
pub const URL_MAP_FORMAT: &str = "webscope-urls/1";

/// What one logged target must answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// The set's file at this path (relative, as in the manifest).
    File(String),
    /// This status, with a `Location` for a redirect.
    Status(u16, Option<String>),
}

/// The targets the servers must be told about, in the order of the manifest's ranks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UrlMap {
    /// (target as logged, what it answers).
    pub entries: Vec<(String, Answer)>,
}

impl UrlMap {
    /// The map as `urls.json`: `{"format": .., "urls": [{"url", "file"} | {"url", "status",
    /// "location"?}]}`.
    pub fn to_json(&self) -> serde_json::Value {
        let urls: Vec<serde_json::Value> = self
            .entries
            .iter()
            .map(|(url, answer)| match answer {
                Answer::File(file) => serde_json::json!({"url": url, "file": file}),
                Answer::Status(status, None) => serde_json::json!({"url": url, "status": status}),
                Answer::Status(status, Some(location)) => {
                    serde_json::json!({"url": url, "status": status, "location": location})
                }
            })
            .collect();
        serde_json::json!({"format": URL_MAP_FORMAT, "urls": urls})
    }
}

/// How the log's targets were laid out, in counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UrlCounts {
    /// Distinct targets read (paths with their queries).
    pub targets: u64,
    /// Targets whose requests mostly got a status a set cannot give (left to the server).
    pub unreproducible: u64,
    /// Targets that are not a path (`*`, an absolute URL): left out.
    pub not_paths: u64,
    /// Redirects mapped.
    pub redirects: u64,
    /// Absences mapped (a file or directory of the set would have answered).
    pub absences: u64,
    /// Targets answered by a file through the map.
    pub mapped: u64,
    /// Files whose size no 200 told: a 206's length, else the median of the sized ones.
    pub sizeless: u64,
}

/// A file to make from the log: its targets, size and requests.
pub(crate) struct Resource<'a> {
    /// The target that names it (the bare path when it is one of them).
    pub primary: &'a Observed,
    /// Other targets answered by the same file.
    pub also: Vec<&'a Observed>,
    pub size: u64,
    pub requests: u64,
    /// A query's own file beside its path's (a different size).
    pub variant: bool,
}

/// Statuses a set reproduces through the map.
fn reproducible(status: u16) -> bool {
    matches!(status, 301 | 302 | 303 | 307 | 308 | 404 | 410)
}

/// Whether a set made by `fileset like` can answer `status` as logged: the successes a file
/// gives (200; 206 to a replayed range; 304 to a replayed conditional request) and the
/// redirects and absences its URL map writes. The others (5xx, 403, 401, 400, a 416 whose
/// asked range the log does not keep, ...) depend on the site's server, not its files: a
/// replay lists them apart from the mismatches the set is answerable for.
pub fn set_can_give(status: u16) -> bool {
    matches!(status, 200 | 206 | 304) || reproducible(status)
}

/// What a target answers: None for a file (most requests succeeded), the status otherwise;
/// `Err(())` when what it mostly got cannot be reproduced.
fn verdict(o: &Observed) -> Result<Option<u16>, ()> {
    let status = o
        .other
        .iter()
        .filter(|(s, _)| reproducible(*s))
        .max_by_key(|(s, n)| (*n, std::cmp::Reverse(*s)));
    let unreproducible: u64 = o
        .other
        .iter()
        .filter(|(s, _)| !reproducible(*s))
        .map(|(_, n)| n)
        .sum();
    let best = status.map_or(0, |(_, n)| *n).max(o.requests);
    if best == 0 || unreproducible > best {
        return Err(());
    }
    Ok(match status {
        Some((s, n)) if *n > o.requests => Some(*s),
        _ => None,
    })
}

/// The target as logged: path and query.
pub(crate) fn target(o: &Observed) -> String {
    match &o.query {
        Some(q) => format!("{}?{q}", o.path),
        None => o.path.clone(),
    }
}

/// The files the log asks for (most requested first), and the targets that answer a status.
pub(crate) fn resources(
    observed: &[Observed],
) -> (Vec<Resource<'_>>, Vec<(&Observed, u16)>, UrlCounts) {
    let mut counts = UrlCounts {
        targets: observed.len() as u64,
        ..UrlCounts::default()
    };
    let mut by_path: BTreeMap<&str, Vec<&Observed>> = BTreeMap::new();
    let mut statuses = Vec::new();
    for o in observed {
        if !o.path.starts_with('/') {
            counts.not_paths += 1;
            continue;
        }
        match verdict(o) {
            Err(()) => counts.unreproducible += 1,
            Ok(Some(status)) => statuses.push((o, status)),
            Ok(None) => by_path.entry(o.path.as_str()).or_default().push(o),
        }
    }
    let median = median_size(observed);
    let mut out = Vec::new();
    for (_, mut group) in by_path {
        // The bare path first, then the most requested.
        group.sort_by_key(|o| (o.query.is_some(), std::cmp::Reverse(o.requests), target(o)));
        let primary = group[0];
        let size = |o: &Observed| o.size.or((o.partial > 0).then_some(o.partial));
        counts.sizeless += u64::from(size(primary).is_none());
        let main_size = size(primary).unwrap_or(median);
        let mut main = Resource {
            primary,
            also: Vec::new(),
            size: main_size,
            requests: primary.requests,
            variant: false,
        };
        for &o in &group[1..] {
            match o.size {
                Some(s) if s != main_size => out.push(Resource {
                    primary: o,
                    also: Vec::new(),
                    size: s,
                    requests: o.requests,
                    variant: true,
                }),
                _ => {
                    main.requests += o.requests;
                    main.also.push(o);
                }
            }
        }
        out.push(main);
    }
    out.sort_by(|a, b| {
        b.requests
            .cmp(&a.requests)
            .then_with(|| target(a.primary).cmp(&target(b.primary)))
    });
    (out, statuses, counts)
}

/// The median largest-200 size of the targets that have one (`webscope_model::stats::median`,
/// rounded to a byte; 1 byte when none has).
fn median_size(observed: &[Observed]) -> u64 {
    let sizes: Vec<f64> = observed
        .iter()
        .filter_map(|o| o.size)
        .map(|s| s as f64)
        .collect();
    webscope_model::stats::median(&sizes)
        .map_or(1, |m| m.round() as u64)
        .max(1)
}

/// Where each resource lies (by rank), and the map that makes every target answer.
pub(crate) struct Layout {
    pub names: Vec<String>,
    pub map: UrlMap,
    pub renamed: Renamed,
}

/// Lays out `ranked` resources keeping their paths where they can be kept, and maps the rest.
pub(crate) fn layout(
    ranked: &[Resource<'_>],
    statuses: &[(&Observed, u16)],
    counts: &mut UrlCounts,
) -> Layout {
    let mut renamed = Renamed::default();
    let mut natural: Vec<Option<String>> = Vec::with_capacity(ranked.len());
    let mut seen = HashSet::new();
    for r in ranked {
        let name = natural_name(r, &mut renamed).filter(|n| {
            let fresh = seen.insert(n.clone());
            renamed.not_plain += u64::from(!fresh);
            fresh
        });
        natural.push(name);
    }
    // A name that another kept file needs as a directory cannot be a file.
    let dirs: HashSet<String> = natural
        .iter()
        .flatten()
        .flat_map(|p| p.match_indices('/').map(move |(i, _)| p[..i].to_string()))
        .collect();
    let mut map = UrlMap::default();
    let mut names = Vec::with_capacity(ranked.len());
    for (rank, (r, name)) in ranked.iter().zip(natural).enumerate() {
        match name.filter(|n| !dirs.contains(n)) {
            Some(n) => names.push(n),
            None => {
                let n = rank_name(rank, &r.primary.path);
                for o in std::iter::once(&r.primary).chain(&r.also) {
                    map.entries.push((target(o), Answer::File(n.clone())));
                }
                names.push(n);
            }
        }
    }
    renamed.not_plain = (ranked.len() as u64)
        .saturating_sub(names.iter().filter(|n| !is_rank(n)).count() as u64)
        .saturating_sub(renamed.too_long + renamed.reserved + renamed.queries);
    let files: HashSet<&str> = names.iter().map(String::as_str).collect();
    for &(o, status) in statuses {
        let answer = match status {
            404 if !answers_anyway(&o.path, &files, &dirs) => continue,
            404 | 410 => Answer::Status(status, None),
            _ => Answer::Status(status, Some(location(&o.path))),
        };
        if status >= 400 {
            counts.absences += 1;
        } else {
            counts.redirects += 1;
        }
        map.entries.push((target(o), answer));
    }
    counts.mapped = map
        .entries
        .iter()
        .filter(|(_, a)| matches!(a, Answer::File(_)))
        .count() as u64;
    Layout {
        names,
        map,
        renamed,
    }
}

fn is_rank(name: &str) -> bool {
    name.len() > 5 && name.starts_with('d') && name[1..5].bytes().all(|b| b.is_ascii_digit())
}

/// The file a resource's path names on disk, when it can be kept (counting why not).
fn natural_name(r: &Resource<'_>, renamed: &mut Renamed) -> Option<String> {
    // A query's own file cannot lie at its path: the path's file is there.
    if r.variant {
        renamed.queries += 1;
        return None;
    }
    let p = r.primary.path.trim_start_matches('/');
    let name = if p.is_empty() {
        "index.html".to_string()
    } else if let Some(dir) = p.strip_suffix('/') {
        format!("{dir}/index.html")
    } else {
        p.to_string()
    };
    if !plain(&name) {
        renamed.not_plain += 1;
        return None;
    }
    if name.len() > MAX_PATH || name.split('/').any(|part| part.len() > MAX_NAME) {
        renamed.too_long += 1;
        return None;
    }
    if reserved(&name) {
        renamed.reserved += 1;
        return None;
    }
    Some(name)
}

/// Whether a static server would answer something other than 404 at `path` in the set: a
/// file or directory of the set is there, or it is the root.
fn answers_anyway(path: &str, files: &HashSet<&str>, dirs: &HashSet<String>) -> bool {
    let p = path.trim_start_matches('/').trim_end_matches('/');
    p.is_empty() || files.contains(p) || dirs.contains(p)
}

/// Where a redirect leads: the path with a slash (a directory's), or the root.
fn location(path: &str) -> String {
    let safe = path
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-_./%~".contains(&b));
    if safe && !path.ends_with('/') {
        format!("{path}/")
    } else {
        "/".to_string()
    }
}

/// Targets by what they answer, for tests.
#[cfg(test)]
pub(crate) fn by_target(map: &UrlMap) -> std::collections::HashMap<&str, &Answer> {
    map.entries.iter().map(|(u, a)| (u.as_str(), a)).collect()
}
