//! A file set like a site (`webscope fileset like LOG`): files, sizes and popularity taken
//! from what an access log saw, and, with `keep_paths`, the site's URL space.
//!
//! What it is for: turning per-target observations ([`Observed`]: a URL path and query, the
//! largest 200 response's size, how often each status answered it) into a [`Manifest`] whose
//! access probabilities are the log's, so that the load generator runs the site's mix, and
//! into a [`UrlMap`] (with nginx and Apache snippets: [`nginx`], [`apache`]) so that
//! replaying the log against the set gives the logged statuses ([`urls`] says how). What it
//! is not: a log reader (the caller counts the targets) nor a fitter of distributions:
//! `--synthetic` draws from the [`Model`] the characterization fitted (a lognormal body and a
//! Pareto tail of file sizes, a Zipf popularity), or, when the log is too small for a fit,
//! resamples the log's own files.
//!
//! Privacy: by default a file is named by its popularity rank (`d0000/0000001.html`), which
//! says nothing about its path: a hash of a guessable path could be reversed by hashing
//! guesses, and a keyed hash with a thrown-away key would make the names change on every
//! run. The extension is kept (a server types its response by it) when it is short and plain.
//! No map is made then: it would name the URLs. `keep_paths` keeps the logged paths that are
//! safe file names; the others get rank names and map entries, counted by reason
//! ([`Renamed`]): one path no file system can hold (a part over 255 bytes) or one named like
//! the set's own `manifest.json` costs one rank name, never the run nor the set's manifest.

pub mod apache;
mod names;
pub mod nginx;
mod said;
mod synthetic;
pub mod urls;

use crate::heavy_tail::{size_class, CLASSES};
use crate::manifest::{File, Manifest};
use crate::Error;
use webscope_report::human::plural;

pub use names::{MAX_NAME, MAX_PATH};
pub use urls::{Answer, UrlCounts, UrlMap, URL_MAP};

/// One distinct logged target (path and query) and what the log says it answered.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Observed {
    /// The path, without query (`/img/a.gif`), as logged.
    pub path: String,
    /// What followed the `?`, as logged.
    pub query: Option<String>,
    /// The body size of its largest 200 response to a GET; None when it had none.
    pub size: Option<u64>,
    /// The largest 206 body (a size when no 200 told one).
    pub partial: u64,
    /// Its successful requests (200, 206, 304) in the log.
    pub requests: u64,
    /// Its other requests, by status.
    pub other: Vec<(u16, u64)>,
}

/// The sizes requests ask for: the median of sizes weighted by requests, and the share of
/// requests for less than `under` bytes. Of a log's documents (`Observed`: size, requests) or
/// of a set's files (size, probability) alike, so that the two can be set side by side.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RequestSizes {
    /// The request-weighted median size, bytes (the smallest size at which half the weight
    /// is reached).
    pub median: u64,
    /// The share of the weight on sizes under `under` bytes.
    pub under: f64,
}

impl RequestSizes {
    /// Of `(size, weight)` pairs; None when the weights sum to nothing.
    pub fn of(pairs: impl IntoIterator<Item = (u64, f64)>, under: u64) -> Option<RequestSizes> {
        let mut pairs: Vec<(u64, f64)> = pairs.into_iter().filter(|p| p.1 > 0.0).collect();
        pairs.sort_by_key(|p| p.0);
        let total: f64 = pairs.iter().map(|p| p.1).sum();
        if total <= 0.0 {
            return None;
        }
        let mut acc = 0.0;
        let median = pairs
            .iter()
            .find(|p| {
                acc += p.1;
                acc >= total / 2.0
            })
            .map_or(0, |p| p.0);
        let small: f64 = pairs.iter().filter(|p| p.0 < under).map(|p| p.1).sum();
        Some(RequestSizes {
            median,
            under: small / total,
        })
    }

    /// Of a log's documents with a size, weighted by their successful requests.
    pub fn of_log(observed: &[Observed], under: u64) -> Option<RequestSizes> {
        let docs = observed
            .iter()
            .filter_map(|o| o.size.map(|s| (s, o.requests as f64)));
        RequestSizes::of(docs, under)
    }

    /// Of a set's files, weighted by their probability.
    pub fn of_set(manifest: &Manifest, under: u64) -> Option<RequestSizes> {
        RequestSizes::of(
            manifest.files.iter().map(|f| (f.size, f.probability)),
            under,
        )
    }
}

/// How to make the set.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LikeOptions {
    /// Keep the logged paths (those that are safe relative file names) and map the others.
    pub keep_paths: bool,
    /// Make this many files by resampling the log's files (size and request count drawn
    /// together), instead of one file per logged path.
    pub synthetic: Option<u64>,
    /// One line saying where the observations came from, for the description.
    pub source: String,
    /// The fitted model `synthetic` draws from; None: resample the log's files.
    pub model: Option<Model>,
}

/// The fits of a log that a synthetic set is drawn from (SURGE's model, fitted).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Model {
    /// Zipf exponent of popularity: rank r is asked for ∝ r^-s.
    pub zipf: f64,
    /// The lognormal body of file sizes: mean of ln bytes.
    pub mu: f64,
    /// Its σ (of ln bytes).
    pub sigma: f64,
    /// The Pareto tail: index α, cut x_min (bytes), and the share of files above the cut.
    pub tail: Option<(f64, f64, f64)>,
}

/// A file to make: its path (a name source), size and weight (probability before
/// normalising).
struct Picked {
    path: String,
    size: u64,
    weight: f64,
}

/// A planned set, its URL map, and how the log's targets were laid out.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    /// The set.
    pub manifest: Manifest,
    /// Paths given rank names although `keep_paths` asked to keep them (all zero without it).
    pub renamed: Renamed,
    /// What the servers must be told (empty without `keep_paths`).
    pub urls: UrlMap,
    /// The targets, by what became of them.
    pub counts: UrlCounts,
}

/// Logged paths given rank names although `keep_paths` asked to keep them, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Renamed {
    /// Not plain file names (a character other than letters, digits and `-_./`, an empty,
    /// `.` or `..` part, a rank directory's name), or a file where another kept path needs a
    /// directory.
    pub not_plain: u64,
    /// A part longer than [`MAX_NAME`] or a path longer than [`MAX_PATH`]: no file can have it.
    pub too_long: u64,
    /// Named like a file the set writes itself at its root (`manifest.json`,
    /// `.webscope-fileset`, `urls.json`, the nginx and Apache snippets), or under one as if a
    /// directory.
    pub reserved: u64,
    /// A query's own file (a different size from its path's).
    pub queries: u64,
}

impl Renamed {
    /// All the paths renamed.
    pub fn total(&self) -> u64 {
        self.not_plain + self.too_long + self.reserved + self.queries
    }
}

/// Plans the set of `observed` (any order). Paths renamed although `keep_paths` asked to keep
/// them are counted by reason, in [`Planned::renamed`] and the manifest's parameters.
pub fn plan(observed: &[Observed], options: &LikeOptions, seed: u64) -> Result<Planned, Error> {
    let total: u64 = observed.iter().map(|o| o.requests).sum();
    if total == 0 {
        return Err(Error::Invalid(
            "the log has no successful request (status 200, 206 or 304) to make a file of".into(),
        ));
    }
    let (files, renamed, urls, counts) = match options.synthetic {
        Some(n) => {
            let picked = match options.model {
                Some(model) => synthetic::drawn(&model, observed, n, seed)?,
                None => synthetic::resample(observed, n, seed)?,
            };
            (
                ranked_files(picked),
                Renamed::default(),
                UrlMap::default(),
                UrlCounts::default(),
            )
        }
        None => site_files(observed, options.keep_paths)?,
    };
    let description = describe(observed, options, files.len(), total);
    let parameters = serde_json::json!({
        "paths": observed.len(),
        "requests": total,
        "synthetic": options.synthetic,
        "model": options.model.map(|m| serde_json::json!({
            "zipf": m.zipf, "mu": m.mu, "sigma": m.sigma,
            "tail": m.tail.map(|(alpha, x_min, share)| serde_json::json!({"alpha": alpha, "x_min": x_min, "share": share})),
        })),
        "keep_paths": options.keep_paths,
        "renamed": renamed.total(),
        "renamed_too_long": renamed.too_long,
        "renamed_reserved": renamed.reserved,
        "url_map": (!urls.entries.is_empty()).then_some(URL_MAP),
        "mapped_urls": urls.entries.len(),
        "redirects": counts.redirects,
        "absences": counts.absences,
    });
    let manifest = Manifest::assemble("like", description, seed, parameters, &CLASSES, files);
    Ok(Planned {
        manifest,
        renamed,
        urls,
        counts,
    })
}

type SiteFiles = (Vec<File>, Renamed, UrlMap, UrlCounts);

/// One file per resource of the log, named by rank or (`keep_paths`) laid out by path.
fn site_files(observed: &[Observed], keep_paths: bool) -> Result<SiteFiles, Error> {
    let (ranked, statuses, mut counts) = urls::resources(observed);
    let total: u64 = ranked.iter().map(|r| r.requests).sum();
    if total == 0 {
        return Err(Error::Invalid(
            "no logged path answered mostly 200, 206 or 304: no file to make".into(),
        ));
    }
    let (names, urls, renamed) = if keep_paths {
        let l = urls::layout(&ranked, &statuses, &mut counts);
        (l.names, l.map, l.renamed)
    } else {
        let names = ranked
            .iter()
            .enumerate()
            .map(|(rank, r)| names::rank_name(rank, &r.primary.path))
            .collect();
        (names, UrlMap::default(), Renamed::default())
    };
    let files = ranked
        .iter()
        .zip(names)
        .map(|(r, path)| File {
            path,
            size: r.size,
            class: CLASSES[size_class(r.size)].to_string(),
            probability: r.requests as f64 / total as f64,
        })
        .collect();
    Ok((files, renamed, urls, counts))
}

/// Synthetic files, most requested first, named by rank.
fn ranked_files(picked: Vec<Picked>) -> Vec<File> {
    let weights: f64 = picked.iter().map(|p| p.weight).sum();
    let mut ranked: Vec<&Picked> = picked.iter().collect();
    ranked.sort_by(|a, b| b.weight.total_cmp(&a.weight).then(a.path.cmp(&b.path)));
    ranked
        .iter()
        .enumerate()
        .map(|(rank, o)| File {
            path: names::rank_name(rank, &o.path),
            size: o.size,
            class: CLASSES[size_class(o.size)].to_string(),
            probability: o.weight / weights,
        })
        .collect()
}

fn describe(observed: &[Observed], options: &LikeOptions, files: usize, total: u64) -> String {
    match (options.synthetic, options.model) {
        (Some(n), Some(m)) => format!(
            "{} drawn from the fits of {} (Zipf {:.2}, lognormal body of ln bytes mu {:.2} sigma {:.2}{})",
            plural(n, "file"),
            options.source,
            m.zipf,
            m.mu,
            m.sigma,
            m.tail
                .map(|(alpha, x_min, _)| format!(", Pareto tail alpha {alpha:.2} above {x_min:.0} bytes"))
                .unwrap_or_default(),
        ),
        (Some(n), None) => format!(
            "{} resampled from the {} of {} (empirical sizes and popularity: too few for a fit)",
            plural(n, "file"),
            plural(observed.len() as u64, "path"),
            options.source
        ),
        (None, _) => format!(
            "{} of {}, {}",
            plural(files as u64, "file"),
            options.source,
            plural(total, "request")
        ),
    }
}

#[cfg(test)]
mod tests;
