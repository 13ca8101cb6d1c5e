//! The `ab` experiment (#48): is B faster or slower than A, decided on a shared machine by
//! randomized interleaved trials (Abedi & Brecht's RMIT). A round runs A and B back to back,
//! each for a short trial after its own warm-up, under the same closed-loop load; the order
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
//! Not for: the capacity at an objective (two interleaved searches: not built yet), nor
//! loading both at once (duet benchmarking: not measured yet). Both are #48's, said in its
//! note.

pub mod trial;

use std::path::Path;
use std::time::{Duration, Instant};

use webscope_model::stats::Confidence;

use crate::compare::{self, input, Comparison, Threshold};
use crate::health::Judge;

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
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            candidate: None,
            candidate_serve_args: Vec::new(),
            thresholds: DEFAULT_THRESHOLDS.into(),
            max_time: Duration::from_secs(300),
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

/// The thresholds as parsed, refused in one line when they do not parse.
pub fn thresholds(settings: &Settings) -> anyhow::Result<Vec<Threshold>> {
    let parsed = Threshold::parse_list(&settings.thresholds).map_err(anyhow::Error::msg)?;
    anyhow::ensure!(
        !parsed.is_empty(),
        "--threshold is empty: give the limits to judge B by, e.g. '{DEFAULT_THRESHOLDS}'"
    );
    Ok(parsed)
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
}

/// The folder of round `round`'s trial of `side`: `round-007-b`.
pub fn run_name(round: usize, side: Side) -> String {
    format!("round-{round:03}-{}", side.letter())
}

/// A round taken and kept: A's and B's runs, in the order they ran.
pub struct Round {
    pub number: usize,
    pub a: input::Run,
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
        let taken = |name: &String| runs.contains(name);
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
        assert_eq!(
            t.iter().map(|t| t.metric.as_str()).collect::<Vec<_>>(),
            ["goodput", "cpu_us", "p99"]
        );
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
