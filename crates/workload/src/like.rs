//! A file set like a site (`webscope fileset like LOG`): files, sizes and popularity taken
//! from what an access log saw.
//!
//! What it is for: turning per-path observations ([`Observed`]: a URL path, the largest 200
//! response's size, how often it was asked for) into a [`Manifest`] whose access
//! probabilities are the log's, so that the load generator runs the site's mix. What it is
//! not: a log reader (the caller counts the paths) nor a fitter of distributions: `--synthetic`
//! draws from the [`Model`] the characterization fitted (a lognormal body and a Pareto tail
//! of file sizes, a Zipf popularity), or, when the log is too small for a fit, resamples the
//! log's own files.
//!
//! Privacy: by default a file is named by its popularity rank (`d0000/0000001.html`), which
//! says nothing about its path: a hash of a guessable path could be reversed by hashing
//! guesses, and a keyed hash with a thrown-away key would make the names change on every
//! run. The extension is kept (a server types its response by it) when it is short and plain.
//! `keep_paths` keeps the logged paths that are safe file names; the others get rank names
//! and are counted by reason ([`Renamed`]): one path no file system can hold (a part over
//! 255 bytes) or one named like the set's own `manifest.json` costs one rank name, never the
//! run nor the set's manifest.

use std::collections::HashSet;

use crate::heavy_tail::{size_class, CLASSES};
use crate::manifest::{File, Manifest, MANIFEST, MARKER, MAX_FILES};
use crate::{Error, Rng};

/// One distinct successful URL path of a log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observed {
    /// The path, without query (`/img/a.gif`).
    pub path: String,
    /// The body size of its largest 200 response.
    pub size: u64,
    /// Its successful requests in the log.
    pub requests: u64,
}

/// How to make the set.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LikeOptions {
    /// Keep the logged paths (those that are safe relative file names) instead of ranks.
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
    /// The lognormal body of file sizes (ln bytes).
    pub mu: f64,
    /// Its σ.
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

/// Files a directory holds before the next one begins (rank names).
const PER_DIR: usize = 1000;

/// The longest part of a kept path: NAME_MAX of Linux's file systems.
pub const MAX_NAME: usize = 255;

/// The longest kept path, in bytes: half of PATH_MAX (4096), so that the set's files can be
/// opened under any `--out` of up to 2 KiB (and its `copyNN/` and hidden partial names).
pub const MAX_PATH: usize = 2048;

/// A planned set, and how many logged paths `keep_paths` could not keep.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    /// The set.
    pub manifest: Manifest,
    /// Paths given rank names although `keep_paths` asked to keep them (all zero without it).
    pub renamed: Renamed,
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
    /// Named like a file the set writes itself at its root ([`MANIFEST`], [`MARKER`]), or
    /// under one of those names as if it were a directory.
    pub reserved: u64,
}

impl Renamed {
    /// All the paths renamed.
    pub fn total(&self) -> u64 {
        self.not_plain + self.too_long + self.reserved
    }
}

/// Plans the set of `observed` (any order). Paths renamed although `keep_paths` asked to keep
/// them are counted by reason, in [`Planned::renamed`] and the manifest's parameters.
pub fn plan(observed: &[Observed], options: &LikeOptions, seed: u64) -> Result<Planned, Error> {
    let total: u64 = observed.iter().map(|o| o.requests).sum();
    if total == 0 {
        return Err(Error::Invalid(
            "the log has no successful request (status 200) to make a file of".into(),
        ));
    }
    let picked: Vec<Picked> = match (options.synthetic, options.model) {
        (Some(n), Some(model)) => drawn(&model, n, seed)?,
        (Some(n), None) => resample(observed, n, seed)?,
        (None, _) => observed
            .iter()
            .filter(|o| o.requests > 0)
            .map(|o| Picked {
                path: o.path.clone(),
                size: o.size,
                weight: o.requests as f64,
            })
            .collect(),
    };
    let weights: f64 = picked.iter().map(|p| p.weight).sum();
    // Most requested first (then by path, so the order is the same every time).
    let mut ranked: Vec<&Picked> = picked.iter().collect();
    ranked.sort_by(|a, b| b.weight.total_cmp(&a.weight).then(a.path.cmp(&b.path)));
    let (keep, renamed) = if options.keep_paths && options.synthetic.is_none() {
        keepable(&ranked)
    } else {
        (HashSet::new(), Renamed::default())
    };
    let files: Vec<File> = ranked
        .iter()
        .enumerate()
        .map(|(rank, o)| File {
            path: if keep.contains(o.path.as_str()) {
                o.path.trim_start_matches('/').to_string()
            } else {
                rank_name(rank, &o.path)
            },
            size: o.size,
            class: CLASSES[size_class(o.size)].to_string(),
            probability: o.weight / weights,
        })
        .collect();
    let description = match (options.synthetic, options.model) {
        (Some(n), Some(m)) => format!(
            "{n} files drawn from the fits of {} (Zipf {:.2}, lognormal body mu {:.2} sigma {:.2}{})",
            options.source,
            m.zipf,
            m.mu,
            m.sigma,
            m.tail
                .map(|(alpha, x_min, _)| format!(", Pareto tail alpha {alpha:.2} above {x_min:.0} bytes"))
                .unwrap_or_default()
        ),
        (Some(n), None) => format!(
            "{n} files resampled from the {} paths of {} (empirical sizes and popularity: too few for a fit)",
            observed.len(),
            options.source
        ),
        (None, _) => format!(
            "the {} paths of {}, {total} requests",
            files.len(),
            options.source
        ),
    };
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
    });
    let manifest = Manifest::assemble("like", description, seed, parameters, &CLASSES, files);
    Ok(Planned { manifest, renamed })
}

/// `n` files drawn uniformly with replacement from the log's files, each keeping its size and
/// its request count (so the joint distribution of size and popularity is the log's); their
/// paths are the drawn ones with the draw's number, never written (names are ranks).
fn resample(observed: &[Observed], n: u64, seed: u64) -> Result<Vec<Picked>, Error> {
    check_count(n)?;
    let pool: Vec<&Observed> = observed.iter().filter(|o| o.requests > 0).collect();
    if pool.is_empty() {
        return Ok(Vec::new());
    }
    let mut rng = Rng::for_stream(seed, "like-resample");
    Ok((0..n)
        .map(|i| {
            let o = pool[rng.below(pool.len() as u64) as usize];
            Picked {
                path: format!("{}#{i}", o.path),
                size: o.size,
                weight: o.requests as f64,
            }
        })
        .collect())
}

fn check_count(n: u64) -> Result<(), Error> {
    if n == 0 || n > MAX_FILES {
        return Err(Error::Invalid(format!(
            "--synthetic must be between 1 and {MAX_FILES} files, not {n}"
        )));
    }
    Ok(())
}

/// A tail draw is capped at this many times its cut, as `heavy-tail` caps SURGE's, so that
/// one draw cannot fill the disk.
const TAIL_CAP: f64 = 1000.0;

/// `n` files drawn from `model`: sizes from the body or, with the tail's share, the tail;
/// popularity ranks given at random, independent of size (as SURGE), weighted r^-s.
fn drawn(model: &Model, n: u64, seed: u64) -> Result<Vec<Picked>, Error> {
    check_count(n)?;
    let mut sizes = Rng::for_stream(seed, "like-sizes");
    let mut ranks = Rng::for_stream(seed, "like-ranks");
    let n = n as usize;
    let mut rank: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        rank.swap(i, ranks.below(i as u64 + 1) as usize);
    }
    Ok((0..n)
        .map(|i| {
            let size = match model.tail {
                Some((alpha, x_min, share)) if sizes.next_f64() < share => {
                    (x_min * sizes.next_open_f64().powf(-1.0 / alpha)).min(x_min * TAIL_CAP)
                }
                // The body lies below the cut: a draw above it is clamped there.
                Some((_, x_min, _)) => (model.mu + model.sigma * sizes.normal()).exp().min(x_min),
                None => (model.mu + model.sigma * sizes.normal()).exp(),
            };
            Picked {
                path: format!("model#{i}"),
                size: size.round().max(1.0) as u64,
                weight: ((rank[i] + 1) as f64).powf(-model.zipf),
            }
        })
        .collect())
}

/// The name of the file of popularity `rank` (0: most requested), keeping a plain extension.
fn rank_name(rank: usize, path: &str) -> String {
    let last = path.rsplit('/').next().unwrap_or("");
    let extension = last
        .rsplit_once('.')
        .map(|(_, e)| e)
        .filter(|e| !e.is_empty() && e.len() <= 5 && e.bytes().all(|b| b.is_ascii_alphanumeric()))
        .map(|e| format!(".{}", e.to_ascii_lowercase()))
        .unwrap_or_default();
    format!("d{:04}/{:07}{extension}", rank / PER_DIR, rank + 1)
}

/// The paths that can be kept as they are, and why the others cannot: see [`Renamed`].
fn keepable<'a>(ranked: &[&'a Picked]) -> (HashSet<&'a str>, Renamed) {
    let mut renamed = Renamed::default();
    // (as logged, as a file name)
    let mut candidates: Vec<(&str, &str)> = Vec::new();
    let mut seen = HashSet::new();
    for picked in ranked {
        let p = picked.path.trim_start_matches('/');
        // `/a` and `a` would be one file: the more requested keeps the name.
        if !plain(p) || !seen.insert(p) {
            renamed.not_plain += 1;
        } else if p.len() > MAX_PATH || p.split('/').any(|part| part.len() > MAX_NAME) {
            renamed.too_long += 1;
        } else if p
            .split('/')
            .next()
            .is_some_and(|first| first == MANIFEST || first == MARKER)
        {
            renamed.reserved += 1;
        } else {
            candidates.push((&picked.path, p));
        }
    }
    // Every directory a kept path needs; a path that is one of them cannot be a file.
    let dirs: HashSet<&str> = candidates
        .iter()
        .flat_map(|(_, p)| p.match_indices('/').map(move |(i, _)| &p[..i]))
        .collect();
    let kept: HashSet<&str> = candidates
        .into_iter()
        .filter(|(_, p)| !dirs.contains(p))
        .map(|(logged, _)| logged)
        .collect();
    renamed.not_plain += (ranked.len() - kept.len()) as u64 - renamed.total();
    (kept, renamed)
}

/// A safe relative file name (letters, digits, `-_./`; no empty, `.` or `..` part), not
/// under a rank directory's name.
fn plain(p: &str) -> bool {
    !p.is_empty()
        && !p.ends_with('/')
        && p.split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..")
        && p.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./".contains(&b))
        && !(p.len() > 5 && p.starts_with('d') && p[1..5].bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(path: &str, size: u64, requests: u64) -> Observed {
        Observed {
            path: path.into(),
            size,
            requests,
        }
    }

    fn log() -> Vec<Observed> {
        vec![
            seen("/img/logo.gif", 5000, 30),
            seen("/", 1200, 50),
            seen("/docs", 300, 5),
            seen("/docs/a b.pdf", 2_000_000, 10),
            seen("/docs/guide.html", 9000, 5),
        ]
    }

    #[test]
    fn one_file_per_path_with_the_logs_probability_named_by_rank() {
        let m = plan(&log(), &LikeOptions::default(), 1).unwrap().manifest;
        assert!(m.check().is_ok());
        let got: Vec<(&str, u64, f64)> = m
            .files
            .iter()
            .map(|f| (f.path.as_str(), f.size, f.probability))
            .collect();
        assert_eq!(
            got,
            [
                ("d0000/0000001", 1200, 0.5),
                ("d0000/0000002.gif", 5000, 0.3),
                ("d0000/0000003.pdf", 2_000_000, 0.1),
                ("d0000/0000004", 300, 0.05),
                ("d0000/0000005.html", 9000, 0.05),
            ]
        );
        assert_eq!(m.kind, "like");
        assert_eq!(
            m.classes
                .iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>(),
            ["0-1KB", "1-10KB", "over-1MB"]
        );
        assert_eq!(rank_name(1234, "/x.TXT"), "d0001/0001235.txt");
        assert_eq!(rank_name(0, "/x.tar-gz"), "d0000/0000001");
    }

    #[test]
    fn kept_paths_are_the_safe_ones_and_never_a_file_where_a_directory_is_needed() {
        let options = LikeOptions {
            keep_paths: true,
            ..LikeOptions::default()
        };
        let planned = plan(&log(), &options, 1).unwrap();
        let m = planned.manifest;
        let paths: Vec<&str> = m.files.iter().map(|f| f.path.as_str()).collect();
        // "/" has no name, "a b.pdf" is not a safe name, "/docs" is the directory of a kept
        // file: those three get rank names.
        assert_eq!(
            paths,
            [
                "d0000/0000001",
                "img/logo.gif",
                "d0000/0000003.pdf",
                "d0000/0000004",
                "docs/guide.html"
            ]
        );
        assert_eq!(m.parameters["renamed"], 3);
        assert_eq!(
            planned.renamed,
            Renamed {
                not_plain: 3,
                too_long: 0,
                reserved: 0
            }
        );
        assert!(m.check().is_ok());
    }

    #[test]
    fn paths_no_file_can_have_or_the_sets_own_names_get_rank_names() {
        let options = LikeOptions {
            keep_paths: true,
            ..LikeOptions::default()
        };
        let long_part = format!("/{}.html", "a".repeat(300));
        let long_path = format!("/{}/x.html", vec!["b".repeat(200); 11].join("/"));
        let observed = [
            seen(&long_part, 10, 9),
            seen(&long_path, 10, 8),
            seen("/manifest.json", 1234, 7),
            seen("/.webscope-fileset", 10, 6),
            seen("/manifest.json/inner.html", 10, 5),
            seen("/docs/manifest.json", 10, 4),
            seen("/ok.html", 10, 3),
            seen("ok.html", 10, 2),
        ];
        let planned = plan(&observed, &options, 1).unwrap();
        let paths: Vec<&str> = planned
            .manifest
            .files
            .iter()
            .map(|f| f.path.as_str())
            .collect();
        assert_eq!(
            paths,
            [
                "d0000/0000001.html",
                "d0000/0000002.html",
                "d0000/0000003.json",
                "d0000/0000004",
                "d0000/0000005.html",
                // Only the set's root is its own: a manifest.json deeper is the site's.
                "docs/manifest.json",
                "ok.html",
                "d0000/0000008.html",
            ]
        );
        assert_eq!(
            planned.renamed,
            Renamed {
                not_plain: 1,
                too_long: 2,
                reserved: 3
            }
        );
        assert_eq!(planned.manifest.parameters["renamed"], 6);
        assert!(planned.manifest.check().is_ok());
        // The manifest's own entry is not listed, and the 1 234 bytes are a rank name's.
        assert!(planned
            .manifest
            .files
            .iter()
            .any(|f| f.size == 1234 && f.path == "d0000/0000003.json"));
    }

    #[test]
    fn synthetic_sets_resample_the_logs_files_reproducibly() {
        let options = LikeOptions {
            synthetic: Some(2000),
            ..LikeOptions::default()
        };
        let a = plan(&log(), &options, 7).unwrap().manifest;
        assert_eq!(a.files.len(), 2000);
        assert!(a.check().is_ok());
        assert_eq!(a, plan(&log(), &options, 7).unwrap().manifest);
        // Each logged file is drawn about 400 times; the share of requests to files of
        // "/"'s size is its share of the log weighted by the draws.
        let sizes: HashSet<u64> = a.files.iter().map(|f| f.size).collect();
        assert_eq!(sizes.len(), 5);
        let drawn = a.files.iter().filter(|f| f.size == 1200).count();
        assert!((300..500).contains(&drawn), "{drawn}");
        assert!(a.files.iter().all(|f| !f.path.contains('#')));
        assert!(plan(
            &log(),
            &LikeOptions {
                synthetic: Some(0),
                ..options
            },
            7
        )
        .is_err());
        assert!(plan(&[], &LikeOptions::default(), 1).is_err());
    }
}

#[cfg(test)]
mod model_tests {
    use super::*;

    #[test]
    fn synthetic_sets_follow_the_fitted_model() {
        let model = Model {
            zipf: 1.0,
            mu: 8.0,
            sigma: 1.0,
            tail: Some((1.2, 50_000.0, 0.1)),
        };
        let options = LikeOptions {
            synthetic: Some(20_000),
            model: Some(model),
            ..LikeOptions::default()
        };
        let observed = [Observed {
            path: "/a".into(),
            size: 1,
            requests: 1,
        }];
        let m = plan(&observed, &options, 5).unwrap().manifest;
        assert!(m.check().is_ok());
        assert_eq!(m.files.len(), 20_000);
        // Zipf(1) over the ranks: rank 1 twice rank 2, ten times rank 10.
        let p: Vec<f64> = m.files.iter().map(|f| f.probability).collect();
        assert!((p[0] / p[1] - 2.0).abs() < 1e-9 && (p[0] / p[9] - 10.0).abs() < 1e-9);
        // The tail's share is above the cut, and the body's median is e^mu.
        let sizes: Vec<f64> = m.files.iter().map(|f| f.size as f64).collect();
        let above = sizes.iter().filter(|&&s| s > 50_000.0).count() as f64 / 20_000.0;
        assert!((above - 0.1).abs() < 0.01, "{above}");
        let mut body: Vec<f64> = sizes.iter().copied().filter(|&s| s < 50_000.0).collect();
        body.sort_by(f64::total_cmp);
        let median = body[body.len() / 2];
        assert!((median.ln() - 8.0).abs() < 0.05, "{median}");
        // Hill's estimate of the drawn tail is the model's alpha.
        let mut tail: Vec<f64> = sizes.iter().copied().filter(|&s| s > 50_000.0).collect();
        tail.sort_by(|a, b| b.total_cmp(a));
        let alpha = tail.len() as f64 / tail.iter().map(|s| (s / 50_000.0).ln()).sum::<f64>();
        assert!((alpha - 1.2).abs() < 0.1, "{alpha}");
        assert!(m.description.contains("Zipf 1.00"), "{}", m.description);
    }
}
