//! A file set like a site (`webscope fileset like LOG`): files, sizes and popularity taken
//! from what an access log saw.
//!
//! What it is for: turning per-path observations ([`Observed`]: a URL path, the largest 200
//! response's size, how often it was asked for) into a [`Manifest`] whose access
//! probabilities are the log's, so that the load generator runs the site's mix. What it is
//! not: a log reader (the caller counts the paths) nor a fitter of distributions (`--synthetic`
//! resamples the log's own files; fitted models are the characterization's).
//!
//! Privacy: by default a file is named by its popularity rank (`d0000/0000001.html`), which
//! says nothing about its path: a hash of a guessable path could be reversed by hashing
//! guesses, and a keyed hash with a thrown-away key would make the names change on every
//! run. The extension is kept (a server types its response by it) when it is short and plain.
//! `keep_paths` keeps the logged paths that are safe file names.

use std::collections::HashSet;

use crate::heavy_tail::{size_class, CLASSES};
use crate::manifest::{File, Manifest, MAX_FILES};
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
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LikeOptions {
    /// Keep the logged paths (those that are safe relative file names) instead of ranks.
    pub keep_paths: bool,
    /// Make this many files by resampling the log's files (size and request count drawn
    /// together), instead of one file per logged path.
    pub synthetic: Option<u64>,
    /// One line saying where the observations came from, for the description.
    pub source: String,
}

/// Files a directory holds before the next one begins (rank names).
const PER_DIR: usize = 1000;

/// Plans the set of `observed` (any order). Paths renamed although `keep_paths` asked to keep
/// them (not safe file names, or a file where another path needs a directory) are counted in
/// the manifest's parameters (`renamed`).
pub fn plan(observed: &[Observed], options: &LikeOptions, seed: u64) -> Result<Manifest, Error> {
    let picked: Vec<Observed> = match options.synthetic {
        Some(n) => resample(observed, n, seed)?,
        None => observed
            .iter()
            .filter(|o| o.requests > 0)
            .cloned()
            .collect(),
    };
    let total: u64 = picked.iter().map(|o| o.requests).sum();
    if picked.is_empty() || total == 0 {
        return Err(Error::Invalid(
            "the log has no successful request (status 200) to make a file of".into(),
        ));
    }
    // Most requested first (then by path, so the order is the same every time).
    let mut ranked: Vec<&Observed> = picked.iter().collect();
    ranked.sort_by(|a, b| b.requests.cmp(&a.requests).then(a.path.cmp(&b.path)));
    let keep: HashSet<&str> = if options.keep_paths && options.synthetic.is_none() {
        keepable(&ranked)
    } else {
        HashSet::new()
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
            probability: o.requests as f64 / total as f64,
        })
        .collect();
    let renamed = if options.keep_paths {
        files.len() - keep.len()
    } else {
        0
    };
    let description = match options.synthetic {
        Some(n) => format!(
            "{n} files resampled from the {} paths of {} (empirical sizes and popularity)",
            observed.len(),
            options.source
        ),
        None => format!(
            "the {} paths of {}, {total} requests",
            files.len(),
            options.source
        ),
    };
    let parameters = serde_json::json!({
        "paths": observed.len(),
        "requests": total,
        "synthetic": options.synthetic,
        "keep_paths": options.keep_paths,
        "renamed": renamed,
    });
    Ok(Manifest::assemble(
        "like",
        description,
        seed,
        parameters,
        &CLASSES,
        files,
    ))
}

/// `n` files drawn uniformly with replacement from the log's files, each keeping its size and
/// its request count (so the joint distribution of size and popularity is the log's); their
/// paths are the drawn ones with the draw's number, never written (names are ranks).
fn resample(observed: &[Observed], n: u64, seed: u64) -> Result<Vec<Observed>, Error> {
    if n == 0 || n > MAX_FILES {
        return Err(Error::Invalid(format!(
            "--synthetic must be between 1 and {MAX_FILES} files, not {n}"
        )));
    }
    let pool: Vec<&Observed> = observed.iter().filter(|o| o.requests > 0).collect();
    if pool.is_empty() {
        return Ok(Vec::new());
    }
    let mut rng = Rng::for_stream(seed, "like-resample");
    Ok((0..n)
        .map(|i| {
            let o = pool[rng.below(pool.len() as u64) as usize];
            Observed {
                path: format!("{}#{i}", o.path),
                size: o.size,
                requests: o.requests,
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

/// The paths that can be kept as they are: safe file names (letters, digits, `-_.`), not the
/// directory of another kept path, and not under a rank directory's name.
fn keepable<'a>(ranked: &[&'a Observed]) -> HashSet<&'a str> {
    let safe = |p: &str| {
        let p = p.trim_start_matches('/');
        !p.is_empty()
            && !p.ends_with('/')
            && p.split('/')
                .all(|part| !part.is_empty() && part != "." && part != "..")
            && p.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_./".contains(&b))
            && !(p.len() > 5 && p.starts_with('d') && p[1..5].bytes().all(|b| b.is_ascii_digit()))
    };
    let candidates: Vec<&str> = ranked
        .iter()
        .map(|o| o.path.as_str())
        .filter(|p| safe(p))
        .collect();
    // Every directory a kept path needs; a path that is one of them cannot be a file.
    let dirs: HashSet<&str> = candidates
        .iter()
        .flat_map(|p| {
            let p = p.trim_start_matches('/');
            p.match_indices('/').map(move |(i, _)| &p[..i])
        })
        .collect();
    candidates
        .into_iter()
        .filter(|p| !dirs.contains(p.trim_start_matches('/')))
        .collect()
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
        let m = plan(&log(), &LikeOptions::default(), 1).unwrap();
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
        let m = plan(&log(), &options, 1).unwrap();
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
        assert!(m.check().is_ok());
    }

    #[test]
    fn synthetic_sets_resample_the_logs_files_reproducibly() {
        let options = LikeOptions {
            synthetic: Some(2000),
            ..LikeOptions::default()
        };
        let a = plan(&log(), &options, 7).unwrap();
        assert_eq!(a.files.len(), 2000);
        assert!(a.check().is_ok());
        assert_eq!(a, plan(&log(), &options, 7).unwrap());
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
