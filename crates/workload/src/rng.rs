//! A small, fast pseudo-random generator whose output is fixed forever.
//!
//! Why not the `rand` crate: a file set must be the same bytes for the same seed on every
//! machine and every future build, and `rand` documents that its value-producing algorithms
//! may change between versions. SplitMix64 (Steele, Lea & Flood 2014) is ten lines, passes
//! BigCrush, and is what xoshiro's authors recommend for seeding; the load generator draws
//! from it on its hot path too (one multiply-xorshift chain per number, no state but a u64).

/// SplitMix64: a 64-bit state advanced by a Weyl sequence and mixed by two multiply-xorshifts.
#[derive(Debug, Clone)]
pub struct Rng {
    state: u64,
}

impl Rng {
    /// A generator started from `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng { state: seed }
    }

    /// A generator for one named stream under a seed (e.g. one file's bytes): the same
    /// `(seed, name)` always gives the same stream, whatever else was drawn before.
    pub fn for_stream(seed: u64, name: &str) -> Rng {
        // FNV-1a over the name, then mixed with the seed: names that differ in one byte
        // give unrelated streams.
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in name.bytes() {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
        let mut rng = Rng::new(seed ^ hash.rotate_left(17));
        rng.next_u64();
        rng
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform number in [0, 1) with 53 random bits.
    #[inline]
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A uniform number in (0, 1]: safe to take the logarithm of.
    #[inline]
    pub fn next_open_f64(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A uniform integer in `0..n` (n > 0), by Lemire's multiply-shift (bias below 2^-32
    /// for the sizes used here).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// A standard normal deviate (Box-Muller; one of the pair is dropped to keep no state).
    pub fn normal(&mut self) -> f64 {
        let u1 = self.next_open_f64();
        let u2 = self.next_f64();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// An exponential deviate with mean 1 (inter-arrival times of a Poisson process).
    #[inline]
    pub fn exponential(&mut self) -> f64 {
        -self.next_open_f64().ln()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_and_different_seeds_differ() {
        let a: Vec<u64> = (0..8)
            .scan(Rng::new(7), |r, _| Some(r.next_u64()))
            .collect();
        let b: Vec<u64> = (0..8)
            .scan(Rng::new(7), |r, _| Some(r.next_u64()))
            .collect();
        let c: Vec<u64> = (0..8)
            .scan(Rng::new(8), |r, _| Some(r.next_u64()))
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn splitmix_reference_values() {
        // The published reference output of SplitMix64 for seed 1234567: if this changes,
        // every file set ever generated changes too.
        let mut rng = Rng::new(1_234_567);
        assert_eq!(rng.next_u64(), 6_457_827_717_110_365_317);
        assert_eq!(rng.next_u64(), 3_203_168_211_198_807_973);
    }

    #[test]
    fn streams_depend_on_name() {
        let mut a = Rng::for_stream(1, "dir00000/class0_0");
        let mut b = Rng::for_stream(1, "dir00000/class0_1");
        assert_ne!(a.next_u64(), b.next_u64());
    }

    #[test]
    fn uniform_and_exponential_moments() {
        let mut rng = Rng::new(42);
        let n = 200_000;
        let mean_u: f64 = (0..n).map(|_| rng.next_f64()).sum::<f64>() / n as f64;
        let mean_e: f64 = (0..n).map(|_| rng.exponential()).sum::<f64>() / n as f64;
        let normals: Vec<f64> = (0..n).map(|_| rng.normal()).collect();
        let mean_n = normals.iter().sum::<f64>() / n as f64;
        let var_n = normals.iter().map(|x| (x - mean_n).powi(2)).sum::<f64>() / n as f64;
        assert!((mean_u - 0.5).abs() < 0.01, "{mean_u}");
        assert!((mean_e - 1.0).abs() < 0.01, "{mean_e}");
        assert!(
            mean_n.abs() < 0.01 && (var_n - 1.0).abs() < 0.02,
            "{mean_n} {var_n}"
        );
        let mut counts = [0u32; 7];
        for _ in 0..70_000 {
            counts[rng.below(7) as usize] += 1;
        }
        assert!(
            counts.iter().all(|&c| (9_000..11_000).contains(&c)),
            "{counts:?}"
        );
    }
}
