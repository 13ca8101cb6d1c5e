//! Synthetic sets: files drawn from a log's fitted model, or resampled from its files.

use crate::manifest::MAX_FILES;
use crate::{Error, Rng};

use super::{Model, Observed, Picked};

/// `n` files drawn uniformly with replacement from the log's files, each keeping its size and
/// its request count (so the joint distribution of size and popularity is the log's).
pub(super) fn resample(observed: &[Observed], n: u64, seed: u64) -> Result<Vec<Picked>, Error> {
    check_count(n)?;
    let pool: Vec<&Observed> = observed
        .iter()
        .filter(|o| o.requests > 0 && o.size.is_some())
        .collect();
    if pool.is_empty() {
        return Ok(Vec::new());
    }
    let mut rng = Rng::for_stream(seed, "like-resample");
    Ok((0..n)
        .map(|i| {
            let o = pool[rng.below(pool.len() as u64) as usize];
            Picked {
                path: format!("{}#{i}", o.path),
                size: o.size.unwrap_or(1),
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

/// Body draws tried below the cut before the far-tail approximation is taken.
const TRIES: usize = 100;

/// `n` files drawn from `model`: sizes in bytes from the body (a lognormal truncated below the
/// tail's cut, as characterize fits it) or, with the tail's share, the Pareto tail; rank r
/// weighted r^-s. Which size goes to which rank follows the log (`observed`), so that the
/// set's requests have the log's sizes ([`by_request_share`]); the sizes drawn (the set's
/// files' distribution) and the Zipf weights are the model's.
pub(super) fn drawn(
    model: &Model,
    observed: &[Observed],
    n: u64,
    seed: u64,
) -> Result<Vec<Picked>, Error> {
    check_count(n)?;
    let mut draws = Rng::for_stream(seed, "like-sizes");
    let n = n as usize;
    let sizes: Vec<u64> = (0..n)
        .map(|_| match model.tail {
            Some((alpha, x_min, share)) if draws.next_f64() < share => {
                (x_min * draws.next_open_f64().powf(-1.0 / alpha)).min(x_min * TAIL_CAP)
            }
            Some((_, x_min, _)) => body_below(model, x_min, &mut draws),
            None => (model.mu + model.sigma * draws.normal()).exp(),
        })
        .map(|size| size.round().max(1.0) as u64)
        .collect();
    let weights: Vec<f64> = (0..n)
        .map(|rank| ((rank + 1) as f64).powf(-model.zipf))
        .collect();
    let assigned = by_request_share(observed, &weights, sizes, seed);
    Ok(assigned
        .into_iter()
        .zip(weights)
        .enumerate()
        .map(|(rank, (size, weight))| Picked {
            path: format!("model#{rank}"),
            size,
            weight,
        })
        .collect())
}

/// Gives each rank (`weights`, most requested first) one of `sizes`, so that the set's
/// requests have the sizes of the log's requests.
///
/// The log's documents, most requested first, each hold a stretch of the cumulative share of
/// requests; so does each rank of the set, by its Zipf weight. A rank wants the size of the
/// log's document whose stretch holds the middle of its own, and takes the drawn size nearest
/// to it (by ratio) among those left, the most requested rank first. The size of the set's
/// request at any point of the cumulative share is then that of the log's request at the same
/// point, whatever the fitted Zipf makes of the log's concentration: a site whose three pages
/// take half the requests, fitted by a Zipf that gives its top ranks a tenth, got the sizes
/// of its least requested documents for half its requests when sizes followed rank alone
/// (request-weighted median 4.7 KB for the log's 12.3 KB, issue #52). The ranks least
/// requested take what is left: the drawn sizes stay the model's, file for file.
///
/// Ties and a log without sized documents: sizes in a seeded random order.
fn by_request_share(
    observed: &[Observed],
    weights: &[f64],
    mut sizes: Vec<u64>,
    seed: u64,
) -> Vec<u64> {
    let mut docs: Vec<(u64, u64)> = observed
        .iter()
        .filter_map(|o| o.size.filter(|_| o.requests > 0).map(|s| (o.requests, s)))
        .collect();
    if docs.is_empty() {
        let mut rng = Rng::for_stream(seed, "like-ranks");
        for i in (1..sizes.len()).rev() {
            sizes.swap(i, rng.below(i as u64 + 1) as usize);
        }
        return sizes;
    }
    docs.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let log_total: f64 = docs.iter().map(|d| d.0 as f64).sum();
    // The upper end of each document's stretch of the cumulative share.
    let mut ends = Vec::with_capacity(docs.len());
    let mut acc = 0.0;
    for d in &docs {
        acc += d.0 as f64 / log_total;
        ends.push(acc);
    }
    // The drawn sizes as a multiset: size → how many are left.
    let mut left: std::collections::BTreeMap<u64, usize> = std::collections::BTreeMap::new();
    for s in sizes {
        *left.entry(s).or_default() += 1;
    }
    let total: f64 = weights.iter().sum();
    let mut before = 0.0;
    weights
        .iter()
        .map(|w| {
            let middle = (before + w / 2.0) / total;
            before += w;
            let doc = ends
                .partition_point(|&end| end < middle)
                .min(docs.len() - 1);
            take_nearest(&mut left, docs[doc].1)
        })
        .collect()
}

/// Takes from `left` the size nearest to `want` by ratio (the smaller on a tie).
fn take_nearest(left: &mut std::collections::BTreeMap<u64, usize>, want: u64) -> u64 {
    let below = left.range(..=want).next_back().map(|(&s, _)| s);
    let above = left.range(want..).next().map(|(&s, _)| s);
    let size = match (below, above) {
        (Some(b), Some(a)) if (a as f64 / want as f64) < (want as f64 / b as f64) => a,
        (Some(b), _) => b,
        (None, Some(a)) => a,
        // As many sizes as ranks: one is always left.
        (None, None) => return want,
    };
    if let Some(count) = left.get_mut(&size) {
        *count -= 1;
        if *count == 0 {
            left.remove(&size);
        }
    }
    size
}

/// A draw of the lognormal body conditioned on lying below `cut` (bytes). Clamping a draw
/// above the cut to it piled a model's upper half on one size (1 148 of 2 000 files at the
/// cut); redrawing does not. Where the cut lies so far below the body's median that redraws
/// would rarely land under it, ln X below the cut is, to first order, the cut less an
/// exponential of mean σ/|z| (z the cut's standard score): the normal's far tail.
fn body_below(model: &Model, cut: f64, rng: &mut Rng) -> f64 {
    for _ in 0..TRIES {
        let x = (model.mu + model.sigma * rng.normal()).exp();
        if x < cut {
            return x;
        }
    }
    let z = ((cut.ln() - model.mu) / model.sigma).abs().max(1.0);
    (cut.ln() - model.sigma / z * rng.exponential()).exp()
}
