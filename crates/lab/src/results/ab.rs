//! The `ab` experiment's plan and verdicts as files keep them: `ab/plan.json` (what it was
//! asked, written when it starts) and report.json's `ab.verdict` (each threshold's verdict
//! with its sentence), which the binary reads for its exit code: 1 when B crossed a
//! threshold, 3 when one cannot be decided.

use std::path::Path;

use serde::{Deserialize, Serialize};
use webscope_model::stats::Decision;

use webscope_compare::Threshold;

use crate::objective::Outcome;

/// What the experiment was asked, for its page to judge by the same limits.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AbPlan {
    /// `--threshold`, as given.
    pub thresholds: String,
    /// `--max-time`, seconds.
    pub max_time_s: f64,
    /// B: the candidate's URL, or the embedded server's extra flags.
    pub candidate: String,
    /// `--duet`: each round loaded A and B at once.
    #[serde(default)]
    pub duet: bool,
}

/// A threshold's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Said {
    /// B's whole interval lies on the threshold's good side.
    Within,
    /// B's whole interval lies beyond it.
    Crossed,
    /// Neither: more rounds, not a verdict.
    Undecided,
}

/// One threshold judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AbVerdict {
    /// As written: `goodput>-3%`.
    pub threshold: String,
    /// What it said.
    pub verdict: Said,
    /// The sentence the page and the console say.
    pub sentence: String,
}

impl AbVerdict {
    /// `t` judged `decision`, said as `sentence`.
    pub fn new(t: &Threshold, decision: Decision, sentence: String) -> AbVerdict {
        AbVerdict {
            threshold: t.to_string(),
            verdict: match decision {
                Decision::Pass => Said::Within,
                Decision::Fail => Said::Crossed,
                Decision::Undecided => Said::Undecided,
            },
            sentence,
        }
    }
}

/// report.json's `ab.verdict`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AbEntry {
    /// The thresholds, as written (`goodput>-3%`).
    pub thresholds: Vec<String>,
    /// Each threshold's verdict, in the same order.
    pub verdicts: Vec<AbVerdict>,
    /// Rounds kept (pairs of trials on a quiet machine).
    pub rounds: usize,
    /// Rounds disturbed, taken again, not used.
    pub disturbed: usize,
    /// The intervals' level.
    pub confidence: f64,
    /// Why it stopped, when it stopped by itself.
    pub stopped: Option<String>,
}

impl AbEntry {
    /// Every threshold undecided: too few rounds to compare.
    pub fn undecided(
        thresholds: &[Threshold],
        rounds: usize,
        disturbed: usize,
        stopped: Option<String>,
    ) -> AbEntry {
        AbEntry {
            thresholds: thresholds.iter().map(Threshold::to_string).collect(),
            verdicts: thresholds
                .iter()
                .map(|t| {
                    AbVerdict::new(
                        t,
                        Decision::Undecided,
                        format!(
                            "B against A: {t}: CANNOT BE DECIDED ({rounds} round{} kept, {disturbed} disturbed and not used: too few to compare)",
                            if rounds == 1 { "" } else { "s" }
                        ),
                    )
                })
                .collect(),
            rounds,
            disturbed,
            confidence: crate::ab::CONFIDENCE,
            stopped,
        }
    }

    /// The A/B verdict of the lab report in `dir`, when it ran the experiment.
    pub fn of_lab(dir: &Path) -> Option<AbEntry> {
        #[derive(Deserialize)]
        struct Report {
            ab: Option<Entry>,
        }
        #[derive(Deserialize)]
        struct Entry {
            verdict: AbEntry,
        }
        let bytes = std::fs::read(dir.join("report.json")).ok()?;
        let report: Report = serde_json::from_slice(&bytes).ok()?;
        Some(report.ab?.verdict)
    }

    /// The first crossed threshold's sentence, else the first undecided one's.
    pub fn worst(&self) -> Option<(Said, &str)> {
        [Said::Crossed, Said::Undecided]
            .into_iter()
            .find_map(|said| {
                self.verdicts
                    .iter()
                    .find(|v| v.verdict == said)
                    .map(|v| (said, v.sentence.as_str()))
            })
    }
}

/// report.json's `ab`: the verdict, the rounds' comparison and the capacity searches'.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AbReport {
    /// Each threshold's verdict: what the binary's exit code reads.
    pub verdict: AbEntry,
    /// The rounds compared, when there were rounds.
    pub comparison: Option<webscope_compare::Comparison>,
    /// What the capacity searches found, when the thresholds asked for them.
    pub capacity: Option<AbCapacity>,
}

/// What the A/B capacity searches found: report.json's `ab.capacity`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AbCapacity {
    /// Side A's ending, as a capacity search's report.json keeps it (none: cut before its end).
    pub a: Option<super::RpsEnding>,
    /// Side B's ending, likewise.
    pub b: Option<super::RpsEnding>,
    /// Steps the searches took in lockstep (each probes both sides).
    pub steps: usize,
    /// The check of the searches' crossing by paired probes, when one ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<Tally>,
}

/// What the pairs of the check of a capacity crossing said (`ab::check`), and how many
/// were not counted: report.json's `ab.capacity.check`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tally {
    /// A met the objective and B missed it.
    pub b_missed: usize,
    /// B met it and A missed it.
    pub a_missed: usize,
    /// Both met it.
    pub both_met: usize,
    /// Both missed it.
    pub both_missed: usize,
    /// Pairs with a probe that was neither a pass nor a miss (disturbed, undecided, the
    /// generator's), or cut short.
    pub not_counted: usize,
}

impl Tally {
    /// The tally of `pairs`, each (A's outcome, B's).
    pub fn of(pairs: &[(Outcome, Outcome)]) -> Tally {
        let mut t = Tally::default();
        for pair in pairs {
            match pair {
                (Outcome::Pass, Outcome::Fail) => t.b_missed += 1,
                (Outcome::Fail, Outcome::Pass) => t.a_missed += 1,
                (Outcome::Pass, Outcome::Pass) => t.both_met += 1,
                (Outcome::Fail, Outcome::Fail) => t.both_missed += 1,
                _ => t.not_counted += 1,
            }
        }
        t
    }

    /// Pairs counted.
    pub fn counted(&self) -> usize {
        self.b_missed + self.a_missed + self.both_met + self.both_missed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ab_entry_reads_back_equal_and_its_verdict_is_what_the_exit_code_reads() {
        let thresholds = Threshold::parse_list("p99<+5%,goodput>-3%").unwrap();
        let report = AbReport {
            verdict: AbEntry::undecided(&thresholds, 1, 2, Some("the time ran out".into())),
            comparison: None,
            capacity: Some(AbCapacity {
                a: None,
                b: None,
                steps: 3,
                check: None,
            }),
        };
        let v = serde_json::to_value(&report).unwrap();
        assert_eq!(v["verdict"]["verdicts"][1]["verdict"], "undecided");
        assert_eq!(v["capacity"]["steps"], 3);
        let again: AbReport = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(again.verdict, report.verdict);
        assert_eq!(again.capacity, report.capacity);
        assert!(again.comparison.is_none());

        let dir = tempfile::tempdir().unwrap();
        let file = serde_json::json!({ "ab": v });
        std::fs::write(dir.path().join("report.json"), file.to_string()).unwrap();
        let read = AbEntry::of_lab(dir.path()).unwrap();
        assert_eq!(read.worst().map(|w| w.0), Some(Said::Undecided));
    }
}
