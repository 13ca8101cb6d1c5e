//! Synthetic runs with known shifts: a 10 % p99 shift on a million samples is found, two
//! samples of one distribution are not told apart.

use hdrhistogram::Histogram;
use webscope_workload::Rng;

use super::fixtures::{run, run_of};
use super::input::Run;
use super::*;
use webscope_model::stats::Decision;

fn row<'a>(c: &'a Comparison, metric: &str) -> &'a Row {
    c.rows.iter().find(|r| r.metric == metric).unwrap()
}

/// A 10 % p99 shift on a million samples a side, one run a side: nothing is decided, and a
/// threshold on it is neither crossed nor passed. One run cannot tell the server's change
/// from the run's luck: two runs of one server differ by more than a run's intervals do.
#[test]
fn one_run_a_side_decides_nothing_however_large_the_change() {
    let base = vec![run(1, 10, 100_000, 1.0)];
    let cand = vec![run(2, 10, 100_000, 1.10)];
    let c = compare("run", &base, &cand);
    let p99 = row(&c, "p99");
    assert!(p99.change_pct > 5.0 && p99.worse, "{p99:?}");
    assert!(!p99.decided && !p99.significant, "{p99:?}");
    assert_eq!(p99.test, format!("cannot be decided: {ONE_RUN}"));
    let t = &Threshold::parse_list("p99<+5%").unwrap()[0];
    assert!(!t.crossed(p99) && t.undecided(Some(p99)));
    assert!(
        t.verdict(Some(p99))
            .ends_with("(cannot be decided: one run a side): CANNOT BE DECIDED against p99<+5%"),
        "{}",
        t.verdict(Some(p99))
    );
}

#[test]
fn two_samples_of_one_distribution_are_not_told_apart() {
    let base = vec![run(3, 10, 100_000, 1.0)];
    let cand = vec![run(4, 10, 100_000, 1.0)];
    let c = compare("run", &base, &cand);
    for r in &c.rows {
        assert!(!r.significant, "{r:?}");
    }
    let d = c.distributions.as_ref().unwrap();
    assert!(d.ks_d < 0.01, "{d:?}");
    let t = &Threshold::parse_list("p99<+5%,goodput>-3%").unwrap();
    assert!(!t[0].crossed(row(&c, "p99")));
}

#[test]
fn repeated_runs_give_the_change_with_its_interval() {
    let base: Vec<Run> = (0..5).map(|s| run(10 + s, 3, 20_000, 1.0)).collect();
    let cand: Vec<Run> = (0..5).map(|s| run(20 + s, 3, 20_000, 1.3)).collect();
    let c = compare("run", &base, &cand);
    assert!(!c.paired, "runs with no start times are not paired");
    let p99 = row(&c, "p99");
    assert_eq!(p99.test, "5 and 5 runs of 1000+ requests (10 beyond p99)");
    let [lo, hi] = p99.interval_pct.unwrap();
    assert!(
        p99.significant && lo > 0.0 && lo <= p99.change_pct && p99.change_pct <= hi,
        "{p99:?}"
    );
    let t = &Threshold::parse_list("p99<+5%").unwrap()[0];
    assert!(t.crossed(p99), "{}", t.verdict(Some(p99)));
    assert!(
        t.verdict(Some(p99)).starts_with("p99 +")
            && t.verdict(Some(p99)).ends_with("): CROSSED p99<+5%"),
        "{}",
        t.verdict(Some(p99))
    );
}

/// #53's table, rebuilt: runs with 3 % of luck each, four a side, of a server 10 % slower
/// (goodput 0.90 of A's). The rank test called four of six such trials "within" a 3 %
/// limit; the interval never does, in 200 trials, and calls most of them CROSSED.
#[test]
fn a_ten_per_cent_regression_is_never_within_a_three_per_cent_limit() {
    let mut rng = Rng::new(0x53);
    let t = &Threshold::parse_list("rps>-3%").unwrap()[0];
    let (mut within, mut crossed) = (0, 0);
    for _ in 0..200 {
        let base = server_runs(&mut rng, 4, 1.0, 0.03);
        let cand = server_runs(&mut rng, 4, 1.0 / 0.90, 0.03);
        let c = compare("run", &base, &cand);
        let r = row(&c, "rps");
        within += usize::from(t.judge(Some(r)) == Decision::Pass);
        crossed += usize::from(t.crossed(r));
    }
    eprintln!("10 % slower, 4 runs a side: within {within}, crossed {crossed} of 200");
    assert_eq!(within, 0);
    assert!(crossed >= 120, "crossed {crossed} of 200");
}

/// Runs taken A B, B A, A B ... (by their start times) are compared pair by pair: a drift
/// of the machine that moves both runs of a pair cancels in their ratio.
#[test]
fn interleaved_runs_pair_and_cancel_a_drift() {
    let mut rng = Rng::new(0x48);
    let (mut base, mut cand) = (Vec::new(), Vec::new());
    for round in 0..8 {
        // The machine's speed drifts 20 % over the rounds; B is 5 % slower in each.
        let drift = 1.0 + 0.2 * round as f64 / 7.0;
        let mut a = server_runs(&mut rng, 1, drift, 0.01).remove(0);
        let mut b = server_runs(&mut rng, 1, drift * 1.05, 0.01).remove(0);
        let t0 = 1_000_000.0 + 10.0 * round as f64;
        let (first, second) = if round % 3 == 0 {
            (t0 + 5.0, t0)
        } else {
            (t0, t0 + 5.0)
        };
        a.load.started_unix_s = first;
        b.load.started_unix_s = second;
        base.push(a);
        cand.push(b);
    }
    assert!(interleaved(&base, &cand));
    let c = compare("run", &base, &cand);
    assert!(c.paired);
    let rps = row(&c, "rps");
    assert_eq!(rps.test, "8 interleaved pairs");
    let t = &Threshold::parse_list("rps>-2%").unwrap()[0];
    assert!(t.crossed(rps), "{}", t.verdict(Some(rps)));
    // The same runs, their times forgotten: the drift swamps the 5 %.
    for r in base.iter_mut().chain(cand.iter_mut()) {
        r.load.started_unix_s = 0.0;
    }
    let unpaired = compare("run", &base, &cand);
    assert!(!unpaired.paired);
    assert!(
        t.undecided(Some(row(&unpaired, "rps"))),
        "{}",
        t.verdict(Some(row(&unpaired, "rps")))
    );
    // Two of one side back to back are not interleaved.
    base[1].load.started_unix_s = 5.0;
    base[0].load.started_unix_s = 4.0;
    cand[0].load.started_unix_s = 6.0;
    cand[1].load.started_unix_s = 7.0;
    for (i, r) in base.iter_mut().enumerate().skip(2) {
        r.load.started_unix_s = 100.0 + 2.0 * i as f64;
    }
    for (i, r) in cand.iter_mut().enumerate().skip(2) {
        r.load.started_unix_s = 101.0 + 2.0 * i as f64;
    }
    assert!(!interleaved(&base, &cand));
}

#[test]
fn thresholds_parse_and_bad_ones_say_how() {
    let t = Threshold::parse_list("p99<+5%, goodput>-3%").unwrap();
    assert_eq!(
        t,
        vec![
            Threshold {
                metric: "p99".into(),
                below: true,
                limit_pct: 5.0
            },
            Threshold {
                metric: "goodput".into(),
                below: false,
                limit_pct: -3.0
            },
        ]
    );
    for bad in ["p99=5%", "latency<5%", "p99<fast"] {
        assert!(
            Threshold::parse_list(bad)
                .unwrap_err()
                .contains("--threshold"),
            "{bad}"
        );
    }
}

/// `runs` runs of a server whose requests take log-normal times (median 200 µs) stretched by
/// `slowdown`, and which, at a fixed number of connections, answers `20 000 / slowdown`
/// requests a run; each run also has its own luck, a factor of spread `run_sd` (log) on all
/// its times and its rate, as live runs of one server do.
fn server_runs(rng: &mut Rng, runs: usize, slowdown: f64, run_sd: f64) -> Vec<Run> {
    (0..runs)
        .map(|_| {
            let luck = (run_sd * rng.normal()).exp();
            let n = (20_000.0 / slowdown / luck).round() as u64;
            let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).unwrap();
            for _ in 0..n {
                let ns = 200_000.0 * (0.5 * rng.normal()).exp() * slowdown * luck;
                h.record((ns as u64).max(1)).unwrap();
            }
            run_of(&h, 1.0, Vec::new())
        })
        .collect()
}

/// For `pairs` comparisons of 5 runs of one server against 5 of one `slowdown` times slower
/// (1.0: the same server), how many found a significant change (an interval without 0), per
/// metric; and how many rows could not be decided.
fn significant_counts(seed: u64, pairs: usize, slowdown: f64) -> Vec<(&'static str, usize, usize)> {
    const TESTED: [&str; 5] = ["rps", "p50", "p90", "p99", "p999"];
    let mut rng = Rng::new(seed);
    let mut counts: Vec<(&str, usize, usize)> = TESTED.iter().map(|m| (*m, 0, 0)).collect();
    for _ in 0..pairs {
        let base = server_runs(&mut rng, 5, 1.0, 0.03);
        let cand = server_runs(&mut rng, 5, slowdown, 0.03);
        let c = compare("run", &base, &cand);
        for (metric, significant, undecided) in counts.iter_mut() {
            let r = row(&c, metric);
            *significant += usize::from(r.significant);
            *undecided += usize::from(!r.decided);
        }
    }
    counts
}

fn pairs_or(default: usize) -> usize {
    std::env::var("COMPARE_PAIRS")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(default)
}

/// Whether `alarms` in `trials` is consistent with a rate of 5 % or less: at most 3
/// standard errors of the count above it (a test at exactly its level gives more than 5 %
/// in half of all finite samples).
fn at_most_five_per_cent(alarms: usize, trials: usize) -> bool {
    let se = (0.05 * 0.95 / trials as f64).sqrt();
    alarms as f64 / trials as f64 <= 0.05 + 3.0 * se
}

/// The false-alarm rate, counted, not assumed: 150 comparisons of 5 runs of one server
/// against 5 more (each run with its own luck) find a change (an interval without 0) in 5 %
/// or fewer for every tested metric, and every row is decided (20 000 requests a run carry
/// p99.9). `COMPARE_PAIRS=2000 cargo test --release -p webscope-lab compare::tests --
/// --nocapture` counts more.
#[test]
fn identical_servers_raise_at_most_five_per_cent_false_alarms() {
    let pairs = pairs_or(150);
    let counts = significant_counts(0xa1a, pairs, 1.0);
    eprintln!("A/A, {pairs} pairs (metric, significant, undecided): {counts:?}");
    let mut all = 0;
    for &(metric, significant, undecided) in &counts {
        assert_eq!(undecided, 0, "{metric}");
        assert!(
            at_most_five_per_cent(significant, pairs),
            "{metric}: {significant} false alarms in {pairs}"
        );
        all += significant;
    }
    assert!(
        at_most_five_per_cent(all, pairs * counts.len()),
        "{counts:?}"
    );
}

/// The other error: a server 10 % slower (every request 10 % longer, 10 % fewer requests a
/// run), against runs whose luck spreads by 3 %, is found by the throughput and the body of
/// the distribution in at least 90 % of 60 comparisons of 5 runs a side, and by p99.9 (about
/// 20 requests a run beyond it) in at least half.
#[test]
fn a_ten_per_cent_slower_server_is_caught() {
    let pairs = pairs_or(60);
    let counts = significant_counts(0xab, pairs, 1.10);
    eprintln!("A/B 10 % slower, {pairs} pairs (metric, significant, undecided): {counts:?}");
    for (metric, significant, _) in counts {
        let least = if metric == "p999" { 50 } else { 90 };
        assert!(
            significant * 100 >= least * pairs,
            "{metric}: caught {significant} of {pairs}"
        );
    }
}

/// What cannot be measured is said, never passed: p99.9 on runs of 2 000 requests (2
/// beyond it), and a small change against a limit near it with two runs a side; and a
/// threshold on such a row is undecided, as one on a figure not measured on both sides (no
/// row).
#[test]
fn what_the_data_cannot_support_is_undecided_not_passed() {
    let mut rng = Rng::new(9);
    let base = server_runs(&mut rng, 2, 1.0, 0.03);
    let cand = server_runs(&mut rng, 2, 1.02, 0.03);
    let c = compare("run", &base, &cand);
    let rps = row(&c, "rps");
    assert!(rps.decided, "{rps:?}");
    let t = &Threshold::parse_list("rps>-3%").unwrap()[0];
    assert!(t.undecided(Some(rps)) && !t.crossed(rps));
    let said = t.verdict(Some(rps));
    assert!(
        said.contains("CANNOT BE DECIDED against rps>-3% (about "),
        "{said}"
    );
    assert!(
        said.contains("runs a side would likely decide it)"),
        "{said}"
    );
    let small = |rng: &mut Rng| {
        let mut runs = server_runs(rng, 5, 1.0, 0.03);
        for r in &mut runs {
            r.load.total.requests = 2000;
        }
        runs
    };
    let c = compare("run", &small(&mut rng), &small(&mut rng));
    let p999 = row(&c, "p999");
    assert!(!p999.decided, "{p999:?}");
    assert_eq!(
        p999.test,
        "cannot be decided: 0 and 0 runs of 10000+ requests (10 beyond p99.9), too few for an interval"
    );
    assert!(row(&c, "p99").decided, "20 beyond p99 a run is enough");
    assert!(Threshold::parse_list("cpu_us<+5%").unwrap()[0].undecided(None));
}

/// A limit without its % is refused in one line, not read as per cent.
#[test]
fn a_limit_without_per_cent_is_refused() {
    let err = Threshold::parse_list("rps>10").unwrap_err();
    assert_eq!(
        err,
        "--threshold \"rps>10\": \"10\" is not a change in per cent (write it with its %, e.g. rps>+10% or rps>-10%)"
    );
    assert!(!err.contains('\n'));
    assert_eq!(
        Threshold::parse_list("rps>-10 %").unwrap()[0].limit_pct,
        -10.0
    );
}
