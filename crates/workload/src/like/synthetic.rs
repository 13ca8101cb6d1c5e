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
/// weighted r^-s. Which size goes to which rank follows the log (`observed`): a site's most
/// requested files are mostly its small ones (icons, style sheets), and giving sizes to ranks
/// at random, as SURGE does, made the set's requests far larger than the log's (its
/// request-weighted sizes). The r-th most requested of the log's documents has its size at
/// some quantile among the documents' sizes; the set's rank at the same place in its own
/// order gets the drawn size at that quantile (the rank correlation of popularity and size is
/// the log's; the sizes drawn and the Zipf weights are unchanged).
pub(super) fn drawn(
    model: &Model,
    observed: &[Observed],
    n: u64,
    seed: u64,
) -> Result<Vec<Picked>, Error> {
    check_count(n)?;
    let mut draws = Rng::for_stream(seed, "like-sizes");
    let n = n as usize;
    let mut sizes: Vec<f64> = (0..n)
        .map(|_| match model.tail {
            Some((alpha, x_min, share)) if draws.next_f64() < share => {
                (x_min * draws.next_open_f64().powf(-1.0 / alpha)).min(x_min * TAIL_CAP)
            }
            Some((_, x_min, _)) => body_below(model, x_min, &mut draws),
            None => (model.mu + model.sigma * draws.normal()).exp(),
        })
        .collect();
    sizes.sort_by(f64::total_cmp);
    let order = size_order(observed, n, seed);
    Ok(order
        .iter()
        .enumerate()
        .map(|(rank, &size_index)| Picked {
            path: format!("model#{rank}"),
            size: sizes[size_index].round().max(1.0) as u64,
            weight: ((rank + 1) as f64).powf(-model.zipf),
        })
        .collect())
}

/// For each of `n` popularity ranks, the index of its size among `n` sizes sorted ascending:
/// the size quantile of the log's document at the same relative rank, ties and a log without
/// sized documents broken at random (seeded).
fn size_order(observed: &[Observed], n: usize, seed: u64) -> Vec<usize> {
    let mut docs: Vec<(u64, u64)> = observed
        .iter()
        .filter_map(|o| o.size.filter(|_| o.requests > 0).map(|s| (o.requests, s)))
        .collect();
    let mut rng = Rng::for_stream(seed, "like-ranks");
    let mut jitter = |_: usize| rng.next_f64();
    // The log's documents by popularity, each with its size's quantile among them.
    docs.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut by_size: Vec<usize> = (0..docs.len()).collect();
    by_size.sort_by_key(|&i| docs[i].1);
    let mut quantile = vec![0.0; docs.len()];
    for (q, &i) in by_size.iter().enumerate() {
        quantile[i] = (q as f64 + 0.5) / docs.len() as f64;
    }
    let target: Vec<f64> = (0..n)
        .map(|r| match docs.len() {
            0 => jitter(r),
            m => quantile[(r * m / n).min(m - 1)] + 1e-9 * jitter(r),
        })
        .collect();
    // Ranks sorted by their target quantile take the sizes in ascending order.
    let mut ranks: Vec<usize> = (0..n).collect();
    ranks.sort_by(|&a, &b| target[a].total_cmp(&target[b]).then(a.cmp(&b)));
    let mut order = vec![0; n];
    for (size_index, &rank) in ranks.iter().enumerate() {
        order[rank] = size_index;
    }
    order
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
