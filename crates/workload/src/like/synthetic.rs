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
/// tail's cut, as characterize fits it) or, with the tail's share, the Pareto tail; popularity
/// ranks given at random, independent of size (as SURGE), weighted r^-s.
pub(super) fn drawn(model: &Model, n: u64, seed: u64) -> Result<Vec<Picked>, Error> {
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
                Some((_, x_min, _)) => body_below(model, x_min, &mut sizes),
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
