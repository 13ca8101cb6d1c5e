//! `webscope fileset like LOG...`: the access logs read (webscope-accesslog) and counted per
//! path, for `webscope_workload::like` to plan the set. Only the path, the size and the count
//! of each successful URL leave this module: no client address, query string, referer or
//! user agent is kept, so none can reach the set or its manifest.

use std::collections::HashMap;
use std::path::PathBuf;

use anyhow::Context;
use webscope_accesslog::{Entry, Format};
use webscope_workload::like::Observed;

/// Statuses that count as a request for the file: a whole response, a part of it, or the
/// client's copy confirmed.
fn is_success(status: u16) -> bool {
    matches!(status, 200 | 206 | 304)
}

/// What the logs said, path by path.
pub struct Counted {
    pub observed: Vec<Observed>,
    /// Requests read, lines that did not parse, and paths left out (never answered 200, so
    /// of unknown size).
    pub requests: u64,
    pub bad_lines: u64,
    pub unsized_paths: u64,
}

/// Reads `logs` and counts each path's successful requests and largest 200 response.
pub fn count(logs: &[PathBuf], format: Option<Format>) -> anyhow::Result<Counted> {
    let parsed = webscope_accesslog::read_logs(logs, format).context("fileset like")?;
    // path -> (largest 200 body, successful requests)
    let mut paths: HashMap<&str, (Option<u64>, u64)> = HashMap::new();
    let mut requests = 0;
    for entry in parsed.entries.iter().filter(|e| e.has_request()) {
        requests += 1;
        note(&mut paths, entry);
    }
    let mut observed = Vec::new();
    let mut unsized_paths = 0;
    for (path, (size, count)) in paths {
        match size {
            Some(size) => observed.push(Observed {
                path: path.to_string(),
                size,
                requests: count,
            }),
            None => unsized_paths += 1,
        }
    }
    observed.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(Counted {
        observed,
        requests,
        bad_lines: parsed.bad_lines,
        unsized_paths,
    })
}

fn note<'a>(paths: &mut HashMap<&'a str, (Option<u64>, u64)>, entry: &'a Entry) {
    if !is_success(entry.status) {
        return;
    }
    let seen = paths.entry(entry.path.as_str()).or_insert((None, 0));
    seen.1 += 1;
    if entry.status == 200 && entry.method == "GET" {
        seen.0 = Some(seen.0.map_or(entry.bytes, |s| s.max(entry.bytes)));
    }
}
