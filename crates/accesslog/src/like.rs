//! `webscope fileset like LOG...`'s reading: the access logs streamed ([`crate::stream_logs`])
//! and counted per target, for `webscope_workload::like` to plan the set.
//! Memory follows the distinct targets (a path and query, its largest sizes and a count per
//! status), never the log's lines. Only targets, sizes and counts leave this module: no client
//! address, referer or user agent is kept, so none can reach the set or its manifest.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use webscope_workload::like::{Model, Observed};

use crate::characterize::{
    document_size, is_reference_status, Characterization, Characterizer, Options,
};
use crate::{CompactString, Entry, Error, Format, ReadOptions};

/// Statuses that count as a request for the file: a whole response, a part of it, or the
/// client's copy confirmed. Each is a reference (`is_reference_status`); the other 2xx (a 204
/// to a GET) are references that no file answers, counted by status like the 404s.
fn is_success(status: u16) -> bool {
    matches!(status, 200 | 206 | 304)
}

/// What the logs said, target by target.
pub struct Counted {
    /// Each target's counts, by path and query.
    pub observed: Vec<Observed>,
    /// GET and HEAD requests read (the requests a replay sends: `webscope_accesslog::replayed`),
    /// the entries of other methods or with no readable request left out, lines that did not
    /// parse, and entries delivered out of time order.
    pub requests: u64,
    /// Entries of other methods or with no readable request.
    pub left_out: u64,
    /// Lines that did not parse.
    pub bad_lines: u64,
    /// Entries out of time order beyond the look-back.
    pub out_of_order: u64,
    /// Lines read, and whether a signal stopped the reading before the logs' end (the counts
    /// are then of the lines read).
    pub lines: u64,
    /// A signal stopped the reading.
    pub interrupted: bool,
    /// A gzip file cut short or damaged was read up to the damage, as zcat reads it: the
    /// warning that says so ([`crate::ReadSummary::cut_note`]).
    pub cut_note: Option<String>,
    /// The characterization's fits (Zipf popularity, lognormal body and Pareto tail of the
    /// documents' sizes), when asked for and the log has enough for them.
    pub model: Option<Model>,
}

/// Reads `logs` once, as a stream, and counts each target's statuses and largest 200 and 206
/// bodies; with `fit`, characterizes the same stream for its fits (by path, as the set's
/// files are counted here), so memory follows the distinct URLs either way. Raising `stop`
/// stops the reading: the counts are then of what was read, and say so; `progress` is given
/// the lines read so far.
pub fn count(
    logs: &[PathBuf],
    format: Option<Format>,
    fit: bool,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(u64),
) -> Result<Counted, Error> {
    let mut targets: HashMap<(CompactString, Option<CompactString>), Observed> = HashMap::new();
    let (mut requests, mut left_out) = (0, 0);
    let mut characterizer = fit.then(|| {
        Characterizer::new(Options {
            fold_query: true,
            ..Options::default()
        })
    });
    let summary = crate::stream_logs_until(
        logs,
        &ReadOptions::format(format),
        stop,
        &mut |entry| {
            if let Some(c) = characterizer.as_mut() {
                c.add(&entry);
            }
            // The requests a replay sends: a set answers those.
            if crate::replayed(&entry.method) {
                requests += 1;
                note(&mut targets, entry);
            } else {
                left_out += 1;
            }
        },
        progress,
    );
    let interrupted = stop.load(Ordering::Relaxed);
    let summary = summary?;
    // Interrupted, no set is made: the fits are not drawn.
    let model = characterizer
        .filter(|_| !interrupted)
        .and_then(|c| fitted(&c.finish(&summary)));
    let mut observed: Vec<Observed> = targets.into_values().collect();
    observed.sort_by(|a, b| (&a.path, &a.query).cmp(&(&b.path, &b.query)));
    Ok(Counted {
        observed,
        requests,
        left_out,
        bad_lines: summary.bad_lines,
        out_of_order: summary.out_of_order,
        lines: summary.lines,
        interrupted,
        cut_note: summary.cut_note(logs),
        model,
    })
}

/// Fewest documents a fit is drawn from: below, a Zipf exponent and a lognormal are a few
/// points' guess, and resampling the files themselves is more faithful.
const MIN_DOCUMENTS: usize = 30;

/// The model a synthetic set is drawn from: None when the log is too small for a Zipf or a
/// size fit (then the set resamples the log's files, and says so).
fn fitted(c: &Characterization) -> Option<Model> {
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

/// The distinct URLs among `observed` that were referenced — answered 2xx or 304 at least
/// once — by the rule `characterize` counts its distinct URLs with
/// ([`crate::characterize::is_reference_status`]), so that the two commands agree.
pub fn referenced(observed: &[Observed]) -> usize {
    observed
        .iter()
        .filter(|o| {
            o.requests > 0
                || o.other
                    .iter()
                    .any(|&(status, _)| is_reference_status(status))
        })
        .count()
}

fn note(targets: &mut HashMap<(CompactString, Option<CompactString>), Observed>, entry: Entry) {
    let size = document_size(&entry);
    let Entry {
        path,
        query,
        status,
        bytes,
        ..
    } = entry;
    let seen = targets
        .entry((path, query))
        .or_insert_with_key(|(path, query)| Observed {
            path: path.to_string(),
            query: query.as_ref().map(|q| q.to_string()),
            ..Observed::default()
        });
    if is_success(status) {
        seen.requests += 1;
    } else {
        match seen.other.iter_mut().find(|(s, _)| *s == status) {
            Some((_, n)) => *n += 1,
            None => seen.other.push((status, 1)),
        }
    }
    if let Some(size) = size {
        seen.size = Some(seen.size.map_or(size, |s| s.max(size)));
    }
    if status == 206 {
        seen.partial = seen.partial.max(bytes);
    }
}
