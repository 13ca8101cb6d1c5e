//! The `ab` experiment (#48): is B faster or slower than A, decided on a shared machine by
//! randomized interleaved trials (Abedi & Brecht's RMIT). A round runs A and B back to back,
//! each for a short trial after its own warm-up, under the same load (closed loop, or open
//! loop at `--rate` to compare CPU per request and latency below saturation); the order
//! of each round is random, balanced over pairs of rounds (AB then BA, or BA then AB), so
//! that neither side always runs first. A round whose machine was disturbed (the capacity
//! search's [`crate::capacity::quiet`] rule) is taken again and never used.
//!
//! **The verdict** is `compare`'s, on the rounds as pairs: per metric the change of B against
//! A with its interval (a paired t interval on the rounds' log-ratios, their lag-1
//! autocorrelation checked: `webscope_model::stats::change`), judged against the thresholds
//! (`goodput>-3%,cpu_us<+3%,p99<+10%`): within, CROSSED, or cannot be decided. A pair's ratio
//! holds steady where either side drifts (#48: two identical nginx loaded seconds apart held
//! a ratio within 2.8-4.7 % while each drifted 21-25 % over minutes).
//!
//! **Stopping.** The rounds are looked at after 4, 8, 16, 32 and 64 of them, and once more at
//! the end; the experiment stops at the first look that decides every threshold, or at
//! `--max-time`. Looking repeatedly and stopping when an interval looks good would raise the
//! false alarms past 5 %, so every look uses [`CONFIDENCE`] intervals: the 5 % spent evenly
//! over the [`LOOKS`] (Bonferroni), and the verdict's overall false-alarm rate stays at or
//! under 5 %.
//!
//! **The capacity** (`capacity>-5%` among the thresholds) is found by two range searches in
//! lockstep after the trials ([`capacity`]): each step probes both searches' next rates back
//! to back in a random order, and the two brackets are judged as `compare` judges two
//! searches; a crossing is said only once paired probes at A's lower edge confirm it
//! ([`mod@check`]). `--max-time` bounds the trials; the searches are bounded by their probes (40
//! each), as a capacity search is, and the check by its pairs.
//!
//! Not for: loading both at once (duet benchmarking: not measured yet, #48's note).

pub mod capacity;
pub mod check;
pub mod searches;
pub mod trial;

use std::path::Path;
use std::time::{Duration, Instant};

use webscope_model::stats::Confidence;

use webscope_compare::{self as compare, input, Comparison, Threshold};
use webscope_record::health::Judge;

/// What `lab --experiment ab` is asked.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `--candidate URL`: B, a server of the user's.
    pub candidate: Option<String>,
    /// `--candidate-serve-args`: B is a second embedded server started with these flags.
    pub candidate_serve_args: Vec<String>,
    /// `--threshold`: the limits on B's change.
    pub thresholds: String,
    /// `--max-time`: the experiment stops here, decided or not.
    pub max_time: Duration,
    /// `--rate`: the trials run open loop at this rate rather than closed loop.
    pub rate: Option<f64>,
    /// `--duet`: a round loads A and B at once, each with its own generator.
    pub duet: bool,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            candidate: None,
            candidate_serve_args: Vec::new(),
            thresholds: DEFAULT_THRESHOLDS.into(),
            max_time: Duration::from_secs(300),
            rate: None,
            duet: false,
        }
    }
}

/// The limits judged when `--threshold` does not say.
pub const DEFAULT_THRESHOLDS: &str = "goodput>-3%,cpu_us<+3%,p99<+10%";

/// The rounds after which the experiment looks at its verdicts.
pub const LOOK_AT: [usize; 5] = [4, 8, 16, 32, 64];

/// Looks at most: [`LOOK_AT`] and one at the end.
pub const LOOKS: usize = LOOK_AT.len() + 1;

/// The rounds at most: the last look.
pub const MOST_ROUNDS: usize = 64;

/// Each look's interval level: 5 % spent over the [`LOOKS`] (Bonferroni), 99.17 %.
pub const CONFIDENCE: f64 = 1.0 - 0.05 / LOOKS as f64;

/// Each side's trial when `--duration` does not say: short, so that the two of a round run
/// on a machine in the same state.
pub const TRIAL: Duration = Duration::from_secs(2);

/// Closed-loop connections of every trial when `--clients` does not say: enough to keep one
/// server core busy.
pub const CLIENTS: usize = 16;

/// What `--threshold` asks, split by how each is measured: the trials' figures by rounds
/// of pairs, the capacity by two interleaved searches.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    /// `goodput>-3%` and the like, judged on the rounds.
    pub trials: Vec<Threshold>,
    /// `capacity>-5%`: as written, and the least change allowed (−0.05).
    pub capacity: Option<(String, f64)>,
}

/// The thresholds as parsed, refused in one line when they do not parse.
pub fn thresholds(settings: &Settings) -> anyhow::Result<Limits> {
    let (searched, rest): (Vec<&str>, Vec<&str>) = settings
        .thresholds
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .partition(|t| t.starts_with("capacity") || t.starts_with("users"));
    let mut capacity = None;
    for t in searched {
        anyhow::ensure!(
            !t.starts_with("users"),
            "--threshold {t}: the ab experiment searches capacities in req/s (capacity>-5%); compare two users searches with webscope compare"
        );
        anyhow::ensure!(
            capacity.is_none(),
            "--threshold {t}: give one capacity threshold"
        );
        let least = crate::capacity::compare::parse_threshold(t).map_err(anyhow::Error::msg)?;
        capacity = Some((t.to_string(), least));
    }
    let trials = Threshold::parse_list(&rest.join(",")).map_err(anyhow::Error::msg)?;
    anyhow::ensure!(
        !trials.is_empty() || capacity.is_some(),
        "--threshold is empty: give the limits to judge B by, e.g. '{DEFAULT_THRESHOLDS}' or 'capacity>-5%'"
    );
    Ok(Limits { trials, capacity })
}

/// What cannot work is refused before anything runs: no B, B the same URL as A, a URL and
/// serve flags both, thresholds that do not parse.
pub fn check(options: &crate::Options) -> anyhow::Result<()> {
    let s = &options.ab;
    thresholds(s)?;
    match (&s.candidate, s.candidate_serve_args.is_empty(), &options.target) {
        (None, true, _) => anyhow::bail!(
            "lab --experiment ab needs B: --candidate URL beside --target, or --candidate-serve-args '...' for a second embedded server"
        ),
        (Some(_), false, _) => anyhow::bail!(
            "give B once: --candidate URL (a server of yours) or --candidate-serve-args (a second embedded server), not both"
        ),
        (Some(b), _, Some(a)) if b.trim_end_matches('/') == a.trim_end_matches('/') => {
            anyhow::bail!(
                "--candidate {b} is the --target itself: give B another server"
            )
        }
        (None, false, Some(_)) => anyhow::bail!(
            "--candidate-serve-args starts a second embedded server beside the embedded A: leave --target out, or give B as --candidate URL"
        ),
        _ => Ok(()),
    }
}

/// Which server a trial loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The baseline (`--target`, or the embedded server).
    A,
    /// The candidate (`--candidate`, or the embedded server with `--candidate-serve-args`).
    B,
}

impl Side {
    /// "a" or "b", in the runs' folder names.
    pub fn letter(self) -> char {
        match self {
            Side::A => 'a',
            Side::B => 'b',
        }
    }

    /// "A" or "B", as the page and the bar say it.
    pub fn upper(self) -> char {
        self.letter().to_ascii_uppercase()
    }
}

/// Who goes first, drawn at random and balanced over pairs: the second of each pair runs in
/// the other order of the first, so that neither side always runs first (a server loaded
/// second ran 2.5 % faster in A/A rounds, #48's note).
pub struct Order {
    rng: webscope_workload::Rng,
    /// The second of the pair under way: whether B goes first.
    pending: Option<bool>,
}

impl Order {
    /// Seeded from the clock: each experiment draws its own orders.
    pub fn new() -> Order {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64);
        Order::seeded(seed)
    }

    /// Seeded by hand (tests).
    pub fn seeded(seed: u64) -> Order {
        Order {
            rng: webscope_workload::Rng::new(seed),
            pending: None,
        }
    }

    /// Whether B goes first in the next round (or pair of probes).
    pub fn b_first(&mut self) -> bool {
        self.pending.take().unwrap_or_else(|| {
            let b_first = self.rng.below(2) == 1;
            self.pending = Some(!b_first);
            b_first
        })
    }

    /// The two sides in the next order.
    pub fn sides(&mut self) -> [Side; 2] {
        if self.b_first() {
            [Side::B, Side::A]
        } else {
            [Side::A, Side::B]
        }
    }
}

impl Default for Order {
    fn default() -> Order {
        Order::new()
    }
}

/// One run of the experiment: a trial of a round, or a probe of a capacity search.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// A round's run of one side.
    Trial(trial::Trial),
    /// A probe of one side's capacity search.
    Probe(capacity::SideProbe),
}

/// The folder of round `round`'s trial of `side`: `round-007-b`.
pub fn run_name(round: usize, side: Side) -> String {
    format!("round-{round:03}-{}", side.letter())
}

/// A round taken and kept: A's and B's runs, in the order they ran.
pub struct Round {
    /// The round's number, from 1.
    pub number: usize,
    /// A's run (the baseline).
    pub a: input::Run,
    /// B's run (the candidate).
    pub b: input::Run,
    /// B ran first.
    pub b_first: bool,
}

/// The rounds in `dir` (an `ab` experiment's folder): each round whose two trials ran and
/// were not disturbed, in order; and how many rounds were disturbed.
pub fn rounds(dir: &Path, runs: &[String], judge: &Judge) -> anyhow::Result<(Vec<Round>, usize)> {
    let mut kept = Vec::new();
    let mut disturbed = 0;
    let numbers: std::collections::BTreeSet<usize> = runs
        .iter()
        .filter_map(|r| r.strip_prefix("round-")?.get(..3)?.parse().ok())
        .collect();
    for number in numbers {
        let (a, b) = (run_name(number, Side::A), run_name(number, Side::B));
        // A duet's B is written beside its A, not as a run of its own.
        let taken =
            |name: &String| runs.contains(name) || dir.join(name).join("run.json").is_file();
        let was_disturbed =
            |name: &String| taken(name) && trial::disturbed(&dir.join(name)).is_some();
        if was_disturbed(&a) || was_disturbed(&b) {
            disturbed += 1;
            continue;
        }
        if !(taken(&a) && taken(&b)) {
            // Cut short (Ctrl-C, a failure): half a round is no pair.
            continue;
        }
        let (a, b) = (
            input::lab_run(&dir.join(a), judge)?,
            input::lab_run(&dir.join(b), judge)?,
        );
        let b_first = b.load.started_unix_s < a.load.started_unix_s;
        kept.push(Round {
            number,
            a,
            b,
            b_first,
        });
    }
    Ok((kept, disturbed))
}

/// [`CONFIDENCE`] as the interval rule takes it.
pub fn confidence() -> Confidence {
    Confidence::new(CONFIDENCE).unwrap_or(Confidence::P95)
}

/// The comparison of the kept rounds, B against A, pair by pair, at [`CONFIDENCE`].
pub fn judge(rounds: Vec<Round>) -> (Comparison, Vec<Round>) {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let mut order = Vec::new();
    for r in rounds {
        order.push((r.number, r.b_first));
        a.push(r.a);
        b.push(r.b);
    }
    let c = compare::compare_at("B against A", &a, &b, confidence());
    let back = order
        .into_iter()
        .zip(a.into_iter().zip(b))
        .map(|((number, b_first), (a, b))| Round {
            number,
            a,
            b,
            b_first,
        })
        .collect();
    (c, back)
}

/// Whether every threshold is decided (within or crossed) by `c`.
pub fn all_decided(c: &Comparison, thresholds: &[Threshold]) -> bool {
    thresholds.iter().all(|t| {
        let row = c.rows.iter().find(|r| r.metric == t.metric);
        !t.undecided(row)
    })
}

/// When the experiment stops after `kept` rounds, `started` long ago: a reason, or none to
/// go on. `decided`: the look at `kept` rounds decided every threshold.
pub fn stop(kept: usize, decided: bool, started: Instant, max_time: Duration) -> Option<String> {
    if decided && LOOK_AT.contains(&kept) {
        return Some(format!("every threshold decided after {kept} rounds"));
    }
    if kept >= MOST_ROUNDS {
        return Some(format!("{MOST_ROUNDS} rounds, the most it takes"));
    }
    if started.elapsed() >= max_time {
        return Some(format!(
            "--max-time ({}) reached after {kept} rounds",
            webscope_report::human::duration(max_time.as_secs_f64())
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_looks_spend_five_per_cent() {
        assert_eq!(LOOKS, 6);
        assert!((CONFIDENCE - (1.0 - 0.05 / 6.0)).abs() < 1e-12);
        assert_eq!(run_name(7, Side::B), "round-007-b");
    }

    #[test]
    fn it_stops_only_at_a_look_that_decides_or_out_of_time() {
        let now = Instant::now();
        let long = Duration::from_secs(3600);
        assert_eq!(stop(3, true, now, long), None, "3 is no look");
        assert!(stop(4, true, now, long).unwrap().contains("after 4 rounds"));
        assert_eq!(stop(8, false, now, long), None);
        assert!(stop(64, false, now, long).unwrap().contains("64 rounds"));
        assert!(stop(5, false, now, Duration::ZERO)
            .unwrap()
            .starts_with("--max-time"));
    }

    #[test]
    fn the_default_thresholds_parse_and_an_empty_list_is_refused() {
        let t = thresholds(&Settings::default()).unwrap();
        assert_eq!(t.capacity, None);
        assert_eq!(
            t.trials
                .iter()
                .map(|t| t.metric.as_str())
                .collect::<Vec<_>>(),
            ["goodput", "cpu_us", "p99"]
        );
        let both = Settings {
            thresholds: "p99<+10%, capacity>-5%".into(),
            ..Settings::default()
        };
        let t = thresholds(&both).unwrap();
        assert_eq!(t.trials.len(), 1);
        assert_eq!(t.capacity, Some(("capacity>-5%".into(), -0.05)));
        let only = Settings {
            thresholds: "capacity>-10%".into(),
            ..Settings::default()
        };
        assert!(thresholds(&only).unwrap().trials.is_empty());
        for (text, says) in [
            ("users>-5%", "compare two users searches"),
            ("capacity>-5%,capacity>-3%", "one capacity threshold"),
            ("capacity<5%", "is a floor"),
        ] {
            let bad = Settings {
                thresholds: text.into(),
                ..Settings::default()
            };
            let e = thresholds(&bad).unwrap_err().to_string();
            assert!(e.contains(says), "{text}: {e}");
        }
        let empty = Settings {
            thresholds: " ".into(),
            ..Settings::default()
        };
        assert!(thresholds(&empty)
            .unwrap_err()
            .to_string()
            .contains("--threshold is empty"));
    }
}
