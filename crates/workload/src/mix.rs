//! Choosing a file by its access probability in constant time (Walker's alias method, in
//! Vose's numerically stable construction).
//!
//! The load generator draws one file per request on its hot path, so a draw is one 64-bit
//! random number, one 128-bit multiply and one comparison: the high half of `r · n` picks a
//! column, the low half is the coin that keeps the column or takes its alias.

use crate::rng::Rng;

/// A table that draws indices `0..n` with given weights.
#[derive(Debug, Clone)]
pub struct Mix {
    /// Per column, the coin threshold (scaled to 2^64) under which the column itself wins.
    keep: Vec<u64>,
    /// Per column, the index drawn when the coin says otherwise.
    alias: Vec<u32>,
}

impl Mix {
    /// Builds the table. Weights must be finite and non-negative with a positive sum.
    pub fn new(weights: &[f64]) -> Option<Mix> {
        let n = weights.len();
        if n == 0 || n > u32::MAX as usize {
            return None;
        }
        let sum: f64 = weights.iter().sum();
        if !(sum.is_finite() && sum > 0.0) || weights.iter().any(|w| w.is_nan() || *w < 0.0) {
            return None;
        }
        let mut scaled: Vec<f64> = weights.iter().map(|w| w * n as f64 / sum).collect();
        let mut keep = vec![u64::MAX; n];
        let mut alias: Vec<u32> = (0..n as u32).collect();
        let (mut small, mut large): (Vec<usize>, Vec<usize>) =
            (0..n).partition(|&i| scaled[i] < 1.0);
        while let (Some(s), Some(&l)) = (small.pop(), large.last()) {
            keep[s] = to_threshold(scaled[s]);
            alias[s] = l as u32;
            scaled[l] -= 1.0 - scaled[s];
            if scaled[l] < 1.0 {
                large.pop();
                small.push(l);
            }
        }
        // Whatever is left is 1 up to rounding: always kept, unless it never had weight.
        let heaviest = (0..n)
            .max_by(|&a, &b| weights[a].total_cmp(&weights[b]))
            .unwrap_or(0);
        for i in small.into_iter().chain(large) {
            if weights[i] > 0.0 {
                keep[i] = u64::MAX;
            } else {
                keep[i] = 0;
                alias[i] = heaviest as u32;
            }
        }
        Some(Mix { keep, alias })
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.keep.len()
    }

    /// Whether the table is empty (never, once built).
    pub fn is_empty(&self) -> bool {
        self.keep.is_empty()
    }

    /// Draws an index.
    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> usize {
        let n = self.keep.len();
        if n == 1 {
            return 0;
        }
        let product = u128::from(rng.next_u64()) * n as u128;
        let column = (product >> 64) as usize;
        let coin = product as u64;
        if coin < self.keep[column] {
            column
        } else {
            self.alias[column] as usize
        }
    }
}

fn to_threshold(p: f64) -> u64 {
    if p >= 1.0 {
        u64::MAX
    } else {
        (p * 18_446_744_073_709_551_616.0) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frequencies(weights: &[f64], draws: usize) -> Vec<f64> {
        let mix = Mix::new(weights).unwrap();
        let mut rng = Rng::new(11);
        let mut counts = vec![0usize; weights.len()];
        for _ in 0..draws {
            counts[mix.sample(&mut rng)] += 1;
        }
        counts.iter().map(|&c| c as f64 / draws as f64).collect()
    }

    #[test]
    fn draws_follow_the_weights() {
        let weights = [0.35, 0.50, 0.14, 0.01];
        let got = frequencies(&weights, 400_000);
        for (g, w) in got.iter().zip(weights) {
            assert!((g - w).abs() < 0.004, "{got:?}");
        }
    }

    #[test]
    fn zero_weights_are_never_drawn_and_one_entry_always_is() {
        let got = frequencies(&[0.0, 1.0, 0.0, 3.0], 100_000);
        assert_eq!(got[0], 0.0);
        assert_eq!(got[2], 0.0);
        assert!((got[3] - 0.75).abs() < 0.01);
        assert_eq!(frequencies(&[5.0], 10), vec![1.0]);
    }

    #[test]
    fn bad_weights_give_no_table() {
        assert!(Mix::new(&[]).is_none());
        assert!(Mix::new(&[0.0, 0.0]).is_none());
        assert!(Mix::new(&[1.0, -1.0]).is_none());
        assert!(Mix::new(&[f64::NAN]).is_none());
    }

    proptest::proptest! {
        #[test]
        fn any_weights_sample_in_range(weights in proptest::collection::vec(0.0f64..100.0, 1..50), seed: u64) {
            if let Some(mix) = Mix::new(&weights) {
                let mut rng = Rng::new(seed);
                for _ in 0..200 {
                    let i = mix.sample(&mut rng);
                    proptest::prop_assert!(i < weights.len());
                    proptest::prop_assert!(weights[i] > 0.0);
                }
            }
        }
    }
}
