//! A heavy-tailed file set with Zipf popularity, after SURGE (Barford & Crovella 1998).
//!
//! Sizes: a lognormal body (μ = 9.357, σ = 1.318 in ln bytes) for 93 % of the files and a
//! Pareto tail (k = 133 KB, α = 1.1) for the rest, SURGE's fit to real web servers; the tail
//! is capped at 1000·k so one draw cannot fill the disk. The whole set is then scaled so that
//! its mean file size is exactly the one asked for, keeping the shape.
//!
//! Popularity: Zipf, the file of popularity rank r is requested with probability ∝ r^-s
//! (s = 1 by default), ranks given to files at random, independent of size, as SURGE does.
//! Files are grouped into the SPECweb96 size classes (the server reports the same ones).

use crate::manifest::{File, Manifest};
use crate::rng::Rng;
use crate::Error;

/// Size classes, by SPECweb96's boundaries (KB = 1024), plus one above 1 MB.
pub const CLASSES: [&str; 5] = ["0-1KB", "1-10KB", "10-100KB", "100KB-1MB", "over-1MB"];

/// The class index of a file of `bytes`.
pub fn size_class(bytes: u64) -> usize {
    match bytes {
        0..=1023 => 0,
        1024..=10_239 => 1,
        10_240..=102_399 => 2,
        102_400..=1_048_575 => 3,
        _ => 4,
    }
}

const BODY_MU: f64 = 9.357;
const BODY_SIGMA: f64 = 1.318;
const TAIL_SHARE: f64 = 0.07;
const TAIL_K: f64 = 133_000.0;
const TAIL_ALPHA: f64 = 1.1;
const TAIL_CAP: f64 = TAIL_K * 1000.0;

/// One raw SURGE size in bytes (before scaling to the asked mean).
fn surge_size(rng: &mut Rng) -> f64 {
    if rng.next_f64() < TAIL_SHARE {
        (TAIL_K * rng.next_open_f64().powf(-1.0 / TAIL_ALPHA)).min(TAIL_CAP)
    } else {
        (BODY_MU + BODY_SIGMA * rng.normal()).exp().min(TAIL_K)
    }
}

/// Plans `files` files of mean size `mean` bytes with Zipf exponent `zipf`.
pub fn plan(files: u64, mean: u64, zipf: f64, seed: u64) -> Result<Manifest, Error> {
    if files == 0 || files > crate::manifest::MAX_FILES {
        return Err(Error::Invalid(format!(
            "--files must be between 1 and {}, not {files}",
            crate::manifest::MAX_FILES
        )));
    }
    if mean == 0 {
        return Err(Error::Invalid("--mean must be at least 1 byte".into()));
    }
    if !(zipf.is_finite() && zipf >= 0.0) {
        return Err(Error::Invalid(format!(
            "--zipf must be a non-negative exponent (1 is classic Zipf), not {zipf}"
        )));
    }
    let n = files as usize;
    let mut rng = Rng::for_stream(seed, "heavy-tail sizes");
    let raw: Vec<f64> = (0..n).map(|_| surge_size(&mut rng)).collect();
    let raw_mean = raw.iter().sum::<f64>() / n as f64;
    let factor = mean as f64 / raw_mean;
    let mut sizes: Vec<u64> = raw
        .iter()
        .map(|s| ((s * factor).round() as u64).max(1))
        .collect();
    // Rounding drifts the total by a few bytes: the largest file absorbs it so the mean is exact.
    let target = mean * files;
    let sum: u64 = sizes.iter().sum();
    if let Some(largest) = (0..n).max_by_key(|&i| sizes[i]) {
        sizes[largest] = (sizes[largest] + target).saturating_sub(sum).max(1);
    }
    // Popularity ranks: a random permutation (Fisher-Yates), independent of size.
    let mut rank: Vec<usize> = (0..n).collect();
    let mut rng = Rng::for_stream(seed, "heavy-tail ranks");
    for i in (1..n).rev() {
        rank.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let weight = |r: usize| ((r + 1) as f64).powf(-zipf);
    let norm: f64 = (0..n).map(weight).sum();
    let files_out = (0..n)
        .map(|i| File {
            path: format!("d{:03}/f{i:07}.bin", i / 1000),
            size: sizes[i],
            class: CLASSES[size_class(sizes[i])].to_string(),
            probability: weight(rank[i]) / norm,
        })
        .collect();
    Ok(Manifest::assemble(
        "heavy-tail",
        format!(
            "heavy-tailed set (SURGE lognormal body, Pareto tail): {files} files, mean {mean} bytes, Zipf {zipf}"
        ),
        seed,
        serde_json::json!({ "files": files, "mean": mean, "zipf": zipf }),
        &CLASSES,
        files_out,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_is_as_asked_and_the_tail_is_heavy() {
        let m = plan(5000, 10_240, 1.0, 3).unwrap();
        assert!(m.check().is_ok());
        assert_eq!(m.total_bytes, 5000 * 10_240);
        let mut sizes: Vec<u64> = m.files.iter().map(|f| f.size).collect();
        sizes.sort_unstable();
        let median = sizes[sizes.len() / 2] as f64;
        let max = *sizes.last().unwrap() as f64;
        // Heavy tail: the median sits well below the mean and the largest file is far above it.
        assert!(median < 0.6 * 10_240.0, "median {median}");
        assert!(max > 20.0 * 10_240.0, "max {max}");
        assert!(m.classes.len() >= 4);
    }

    #[test]
    fn popularity_is_zipf() {
        let m = plan(1000, 4096, 1.0, 9).unwrap();
        let mut p: Vec<f64> = m.files.iter().map(|f| f.probability).collect();
        p.sort_by(|a, b| b.total_cmp(a));
        // Rank 1 is twice rank 2 and ten times rank 10 under Zipf(1).
        assert!((p[0] / p[1] - 2.0).abs() < 1e-9);
        assert!((p[0] / p[9] - 10.0).abs() < 1e-9);
        let h1000: f64 = (1..=1000).map(|r| 1.0 / r as f64).sum();
        assert!((p[0] - 1.0 / h1000).abs() < 1e-12);
    }

    #[test]
    fn same_seed_same_plan_other_seed_other_plan() {
        let a = plan(200, 8192, 1.0, 5).unwrap();
        let b = plan(200, 8192, 1.0, 5).unwrap();
        let c = plan(200, 8192, 1.0, 6).unwrap();
        assert_eq!(a, b);
        assert_ne!(a.files, c.files);
    }

    #[test]
    fn bad_parameters_are_refused() {
        assert!(plan(0, 100, 1.0, 1).is_err());
        assert!(plan(10, 0, 1.0, 1).is_err());
        assert!(plan(10, 100, -1.0, 1).is_err());
    }
}
