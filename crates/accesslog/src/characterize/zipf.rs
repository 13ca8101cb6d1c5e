//! The Zipf exponent of a popularity profile, by maximum likelihood.
//!
//! Why not least squares on the log-log rank-frequency plot: the plot's tail is thousands of
//! points of count 1 and 2, each weighing as much as the head's, and the log of small counts
//! is biased, so the fitted slope depends on where the plot is cut (Clauset, Shalizi &
//! Newman, "Power-law distributions in empirical data", SIAM Review 2009). The likelihood
//! weighs each request once.
//!
//! Model: a request goes to the document of rank r (1..=N, ranked by observed count) with
//! probability r^-s / H(N, s), H the generalized harmonic number. The log-likelihood of
//! counts c_r is -s·Σ c_r ln r - n ln H(N, s); its derivative is zero where the model's mean
//! of ln r equals the observed one, and the model's mean decreases as s grows, so the root
//! is found by bisection.

/// Fitted exponent and how it was bracketed.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct ZipfFit {
    /// The exponent s of P(rank r) ∝ r^-s.
    pub s: f64,
    /// Documents ranked (N).
    pub documents: usize,
    /// Requests counted (n).
    pub requests: u64,
}

/// Largest exponent searched: beyond it practically all requests go to rank 1.
const S_MAX: f64 = 8.0;

/// Fits s to counts sorted in descending order (rank 1 first). `None` with fewer than two
/// documents, where no exponent is defined.
pub fn fit(counts_desc: &[u64]) -> Option<ZipfFit> {
    if counts_desc.len() < 2 {
        return None;
    }
    let n: u64 = counts_desc.iter().sum();
    let logs: Vec<f64> = (1..=counts_desc.len()).map(|r| (r as f64).ln()).collect();
    let observed = counts_desc
        .iter()
        .zip(&logs)
        .map(|(&c, &l)| c as f64 * l)
        .sum::<f64>()
        / n as f64;
    let (mut lo, mut hi) = (0.0f64, S_MAX);
    if model_mean_log(&logs, hi) > observed {
        lo = hi;
    } else if model_mean_log(&logs, lo) < observed {
        hi = lo;
    }
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if model_mean_log(&logs, mid) > observed {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(ZipfFit {
        s: 0.5 * (lo + hi),
        documents: counts_desc.len(),
        requests: n,
    })
}

/// E[ln r] under P(r) ∝ r^-s.
fn model_mean_log(logs: &[f64], s: f64) -> f64 {
    let (mut norm, mut sum) = (0.0, 0.0);
    for &l in logs {
        let w = (-s * l).exp();
        norm += w;
        sum += w * l;
    }
    sum / norm
}

impl ZipfFit {
    /// The fit's normalizing sum, Σ r^-s over the documents: a pass over every rank, so a
    /// caller drawing many points computes it once (per point, it was 40 M `powf` for a chart
    /// of 200 points over 200 000 URLs, a sixth of `characterize`'s time).
    pub fn norm(&self) -> f64 {
        (1..=self.documents).map(|r| (r as f64).powf(-self.s)).sum()
    }

    /// Expected share of requests at `rank` under the fit (for drawing the fitted line), given
    /// [`ZipfFit::norm`].
    pub fn expected_share(&self, rank: usize, norm: f64) -> f64 {
        (rank as f64).powf(-self.s) / norm
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use webscope_workload::Rng;

    /// Draws `n` requests over `docs` documents with P(k) ∝ k^-s and returns the observed
    /// counts ranked, as a log gives them.
    fn sample(s: f64, docs: usize, n: usize, seed: u64) -> Vec<u64> {
        let weights: Vec<f64> = (1..=docs).map(|k| (k as f64).powf(-s)).collect();
        let total: f64 = weights.iter().sum();
        let mut cdf = Vec::with_capacity(docs);
        let mut acc = 0.0;
        for w in &weights {
            acc += w / total;
            cdf.push(acc);
        }
        let mut counts = vec![0u64; docs];
        let mut rng = Rng::new(seed);
        for _ in 0..n {
            let u = rng.next_f64();
            let k = cdf.partition_point(|&c| c < u).min(docs - 1);
            counts[k] += 1;
        }
        counts.retain(|&c| c > 0);
        counts.sort_unstable_by(|a, b| b.cmp(a));
        counts
    }

    #[test]
    fn recovers_zipf_0_8_and_1_2_within_0_05() {
        for (s, seed) in [(0.8, 1), (1.2, 2)] {
            let counts = sample(s, 2000, 200_000, seed);
            let fit = fit(&counts).unwrap();
            assert!((fit.s - s).abs() < 0.05, "s={s}: fitted {}", fit.s);
            assert_eq!(fit.requests, 200_000);
        }
    }

    #[test]
    fn uniform_popularity_is_near_zero_and_degenerate_cases_are_none() {
        let fit = fit(&[100; 50]).unwrap();
        assert!(fit.s < 1e-6, "{}", fit.s);
        assert_eq!(super::fit(&[7]), None);
        assert_eq!(super::fit(&[]), None);
        let norm = fit.norm();
        let share: f64 = (1..=50).map(|r| fit.expected_share(r, norm)).sum();
        assert!((share - 1.0).abs() < 1e-9);
    }
}
