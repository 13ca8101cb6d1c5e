//! `webscope fileset like LOG...`: the access logs read (webscope-accesslog) and counted per
//! path, for `webscope_workload::like` to plan the set. Only the path, the size and the count
//! of each successful URL leave this module: no client address, query string, referer or
//! user agent is kept, so none can reach the set or its manifest.

use std::collections::HashMap;
use std::path::PathBuf;

use anyhow::Context;
use webscope_accesslog::{Entry, Format};
use webscope_workload::like::{Model, Observed};

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
    /// The characterization's fits (Zipf popularity, lognormal body and Pareto tail of the
    /// documents' sizes), when asked for and the log has enough for them.
    pub model: Option<Model>,
}

/// Reads `logs` and counts each path's successful requests and largest 200 response; with
/// `fit`, takes the characterization's fits too.
pub fn count(logs: &[PathBuf], format: Option<Format>, fit: bool) -> anyhow::Result<Counted> {
    let parsed = webscope_accesslog::read_logs(logs, format).context("fileset like")?;
    let model = if fit { fitted(&parsed) } else { None };
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
        model,
    })
}

/// Fewest documents a fit is drawn from: below, a Zipf exponent and a lognormal are a few
/// points' guess, and resampling the files themselves is more faithful.
const MIN_DOCUMENTS: usize = 30;

/// The model a synthetic set is drawn from: None when the log is too small for a Zipf or a
/// size fit (then the set resamples the log's files, and says so).
fn fitted(parsed: &webscope_accesslog::Parsed) -> Option<Model> {
    use webscope_accesslog::characterize::{characterize_with, Options};
    // By path, as the set's files are counted here.
    let options = Options {
        fold_query: true,
        ..Options::default()
    };
    let c = characterize_with(parsed, options);
    let zipf = c.popularity.zipf.filter(|z| z.documents >= MIN_DOCUMENTS)?;
    let body = c.sizes.files.body?;
    Some(Model {
        zipf: zipf.s,
        mu: body.mu,
        sigma: body.sigma,
        tail: c
            .sizes
            .files
            .tail
            .map(|t| (t.alpha, t.x_min, t.tail as f64 / t.n as f64)),
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
