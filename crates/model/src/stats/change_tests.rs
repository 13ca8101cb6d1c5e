//! The change rule against runs drawn from known distributions: each run's figure is the
//! server's true level times a log-normal luck of a stated spread, so the true change is
//! known by construction.

use super::*;

/// A small deterministic generator (xorshift64*), so that the counts below are the same on
/// every machine and in every build.
struct Draw(u64);

impl Draw {
    fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let x = self.0.wrapping_mul(0x2545_f491_4f6c_dd1d);
        ((x >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// A standard normal (Box-Muller).
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }

    /// `n` runs of a server at `level`, each off by its own luck of log-spread `noise`.
    fn runs(&mut self, n: usize, level: f64, noise: f64) -> Vec<f64> {
        (0..n)
            .map(|_| level * (noise * self.normal()).exp())
            .collect()
    }
}

const P95: Confidence = Confidence::P95;

/// Counts of (within, crossed, undecided) over `trials` experiments.
fn verdicts(
    trials: usize,
    limit: Limit,
    mut experiment: impl FnMut(&mut Draw) -> (Vec<f64>, Vec<f64>, Pairing),
) -> (usize, usize, usize) {
    let mut draw = Draw(0x5eed_0fc4_a700);
    let mut counts = (0, 0, 0);
    for _ in 0..trials {
        let (a, b, pairing) = experiment(&mut draw);
        match change(&a, &b, pairing, P95).unwrap().decide(limit) {
            Decision::Pass => counts.0 += 1,
            Decision::Fail => counts.1 += 1,
            Decision::Undecided => counts.2 += 1,
        }
    }
    counts
}

#[test]
fn the_paired_interval_is_the_textbook_t_interval_on_log_ratios() {
    // Log-ratios 0.1, 0.2, 0.3, 0.4: mean 0.25, sd 0.129 099, se 0.064 550, t(3) 3.182 446.
    let a = [2.0; 4];
    let b: Vec<f64> = [0.1f64, 0.2, 0.3, 0.4]
        .iter()
        .map(|d| 2.0 * d.exp())
        .collect();
    let c = change(&a, &b, Pairing::Paired, P95).unwrap();
    let half: f64 = 3.182_446 * 0.129_099 / 2.0;
    assert!((c.estimate - (0.25f64.exp() - 1.0)).abs() < 1e-9, "{c:?}");
    assert!(
        (c.interval.low - ((0.25 - half).exp() - 1.0)).abs() < 1e-5,
        "{c:?}"
    );
    assert!(
        (c.interval.high - ((0.25 + half).exp() - 1.0)).abs() < 1e-5,
        "{c:?}"
    );
    assert_eq!(c.runs, (4, 4));
    assert_eq!(c.lag1, None, "4 pairs are too few to estimate it");
}

#[test]
fn the_unpaired_interval_is_welchs_on_logs() {
    // Logs 0, 0.1, 0.2 and 0.3, 0.5: means 0.1 and 0.4, variances 0.01 and 0.02;
    // se² = 0.01/3 + 0.02/2 = 0.013 333; df = se⁴ / ((0.01/3)²/2 + (0.01)²/1) = 1.684.
    let a: Vec<f64> = [0.0f64, 0.1, 0.2].iter().map(|l| l.exp()).collect();
    let b: Vec<f64> = [0.3f64, 0.5].iter().map(|l| l.exp()).collect();
    let c = change(&a, &b, Pairing::Unpaired, P95).unwrap();
    let (ea, eb) = (0.01f64 / 3.0, 0.02f64 / 2.0);
    let df = (ea + eb).powi(2) / (ea * ea / 2.0 + eb * eb);
    assert!((df - 1.684).abs() < 1e-3, "{df}");
    let t = StudentsT::new(0.0, 1.0, df).unwrap().inverse_cdf(0.975);
    let half = t * 0.013_333_333f64.sqrt();
    assert!((c.estimate - (0.3f64.exp() - 1.0)).abs() < 1e-9);
    assert!(
        (c.interval.low - ((0.3 - half).exp() - 1.0)).abs() < 1e-6,
        "{c:?}"
    );
    assert!(
        (c.interval.high - ((0.3 + half).exp() - 1.0)).abs() < 1e-6,
        "{c:?}"
    );
}

/// #53: a 10 % drop measured with 3 % noise, 4 runs a side, is never called within a 3 %
/// limit, in 4 000 experiments, paired or not; most call it crossed (paired, with 3 degrees
/// of freedom, fewer: 2 659 here), the rest cannot decide.
#[test]
fn a_ten_per_cent_drop_is_never_within_three_per_cent() {
    for pairing in [Pairing::Unpaired, Pairing::Paired] {
        let (within, crossed, undecided) = verdicts(4000, Limit::AtLeast(-0.03), |d| {
            (d.runs(4, 100.0, 0.03), d.runs(4, 90.0, 0.03), pairing)
        });
        eprintln!("{pairing:?}: within {within}, crossed {crossed}, undecided {undecided}");
        assert_eq!(within, 0, "{pairing:?}");
        assert!(crossed > 2000, "{pairing:?}: crossed only {crossed}");
    }
}

/// #53: two runs of one server with 3 % noise, 6 runs a side, are within a 10 % limit
/// (in at least 99 % of 4 000 experiments) and never crossed.
#[test]
fn identical_servers_are_within_ten_per_cent() {
    let (within, crossed, undecided) = verdicts(4000, Limit::AtLeast(-0.10), |d| {
        (
            d.runs(6, 100.0, 0.03),
            d.runs(6, 100.0, 0.03),
            Pairing::Unpaired,
        )
    });
    eprintln!("A/A: within {within}, crossed {crossed}, undecided {undecided}");
    assert_eq!(crossed, 0);
    assert!(within >= 3960, "within only {within} of 4000");
}

/// #53: too few runs decide nothing. One run a side has no interval; two runs a side of an
/// unchanged server against a 3 % limit leave it undecided (t with 1-2 degrees of freedom)
/// in 95 % of experiments and more, and cross it in no more than the interval's own 2.5 %
/// one-sided miss (3 of 2 000 here: two pairs of runs that happened to agree closely).
#[test]
fn too_few_runs_cannot_decide() {
    assert_eq!(
        change(&[1.0], &[1.0, 1.1], Pairing::Unpaired, P95),
        Err(NoInterval::TooFewRuns)
    );
    assert_eq!(
        change(&[1.0, 1.0], &[1.0], Pairing::Paired, P95),
        Err(NoInterval::Unmatched)
    );
    let (within, crossed, undecided) = verdicts(2000, Limit::AtLeast(-0.03), |d| {
        (
            d.runs(2, 100.0, 0.03),
            d.runs(2, 100.0, 0.03),
            Pairing::Unpaired,
        )
    });
    assert!(crossed <= 20, "crossed {crossed} of 2000");
    assert!(
        undecided >= 1900,
        "decided {within} of 2000 with 2 runs a side"
    );
}

/// The interval holds the true change as often as it says: 95 % intervals over 4 000
/// experiments (5 runs a side, 5 % noise, a true change of +7 %) cover it in 93-97 %.
#[test]
fn the_interval_covers_the_true_change_at_its_level() {
    for pairing in [Pairing::Unpaired, Pairing::Paired] {
        let mut draw = Draw(42);
        let covered = (0..4000)
            .filter(|_| {
                let a = draw.runs(5, 100.0, 0.05);
                let b = draw.runs(5, 107.0, 0.05);
                let i = change(&a, &b, pairing, P95).unwrap().interval;
                i.low <= 0.07 && 0.07 <= i.high
            })
            .count();
        eprintln!("{pairing:?}: covered {covered} of 4000");
        assert!((3720..=3880).contains(&covered), "{pairing:?}: {covered}");
    }
}

/// Why pairs: a server whose level drifts 10 % from round to round, B 5 % below A in every
/// round with 2 % of noise of its own. Ten paired rounds find the drop (CROSSED against
/// −2 %) in most experiments (817 of 1 000 here) and never call it within; the same runs
/// taken as unpaired almost never can.
#[test]
fn pairing_cancels_a_drift_that_unpaired_runs_cannot() {
    let experiment = |pairing| {
        move |d: &mut Draw| {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            for _ in 0..10 {
                let level = 100.0 * (0.10 * d.normal()).exp();
                a.push(level * (0.02 * d.normal()).exp());
                b.push(0.95 * level * (0.02 * d.normal()).exp());
            }
            (a, b, pairing)
        }
    };
    let paired = verdicts(1000, Limit::AtLeast(-0.02), experiment(Pairing::Paired));
    let unpaired = verdicts(1000, Limit::AtLeast(-0.02), experiment(Pairing::Unpaired));
    eprintln!("paired {paired:?}, unpaired {unpaired:?}");
    assert!(paired.1 >= 750, "{paired:?}");
    assert_eq!(paired.0, 0, "{paired:?}");
    assert!(unpaired.1 <= 100, "{unpaired:?}");
}

/// Rounds that drift together (positive lag-1 autocorrelation of their log-ratios) widen
/// the interval: the same ratios in an alternating order do not.
#[test]
fn correlated_rounds_widen_the_interval() {
    let a = [1.0; 12];
    let trend: Vec<f64> = (0..12).map(|i| (0.01 * i as f64).exp()).collect();
    // Smallest, largest, second smallest, second largest...: the same ratios, alternating.
    let alternating: Vec<f64> = (0..6).flat_map(|i| [trend[i], trend[11 - i]]).collect();
    let (t, s) = (
        change(&a, &trend, Pairing::Paired, P95).unwrap(),
        change(&a, &alternating, Pairing::Paired, P95).unwrap(),
    );
    assert!(t.lag1.unwrap() > 0.5, "{t:?}");
    assert!((t.estimate - s.estimate).abs() < 1e-12);
    let width = |c: &Change| c.interval.high - c.interval.low;
    assert!(width(&t) > 1.5 * width(&s), "{t:?} {s:?}");
}

#[test]
fn zeros_are_no_change_on_both_sides_and_no_ratio_on_one() {
    let c = change(&[0.0, 0.0], &[0.0, 0.0, 0.0], Pairing::Unpaired, P95).unwrap();
    assert_eq!(
        (c.estimate, c.interval.low, c.interval.high),
        (0.0, 0.0, 0.0)
    );
    assert_eq!(c.decide(Limit::AtMost(0.01)), Decision::Pass);
    assert_eq!(
        change(&[0.0, 0.0], &[0.1, 0.2], Pairing::Unpaired, P95),
        Err(NoInterval::NotPositive)
    );
    assert_eq!(
        change(&[1.0, f64::NAN], &[0.1, 0.2], Pairing::Unpaired, P95),
        Err(NoInterval::NotPositive)
    );
}

/// The runs that would likely decide an undecided limit: more than were taken, and enough
/// that most experiments with that many decide it.
#[test]
fn runs_to_decide_are_enough_to_decide() {
    let mut draw = Draw(7);
    let limit = Limit::AtLeast(-0.03);
    let a = draw.runs(3, 100.0, 0.03);
    let b = draw.runs(3, 92.0, 0.03);
    let c = change(&a, &b, Pairing::Unpaired, P95).unwrap();
    let n = c.runs_to_decide(limit).unwrap();
    assert!(n > 3, "{n}");
    let decided = (0..1000)
        .filter(|_| {
            let a = draw.runs(n, 100.0, 0.03);
            let b = draw.runs(n, 92.0, 0.03);
            change(&a, &b, Pairing::Unpaired, P95)
                .unwrap()
                .decide(limit)
                != Decision::Undecided
        })
        .count();
    eprintln!("{n} runs a side decided {decided} of 1000");
    assert!(decided >= 500, "{n} runs a side decided {decided} of 1000");
    let on_the_limit = Change {
        estimate: -0.03,
        ..c.clone()
    };
    assert_eq!(on_the_limit.runs_to_decide(limit), None);
}
