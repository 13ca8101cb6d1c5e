//! The entries of report.json that are the report's own rather than one experiment's: the
//! runs' validity, the published findings beside ours (`NAME_paper`) and the comparison with
//! a baseline lab (`baseline`). Typed, so that their keys are spelt once; the pages fill them.

use serde::{Deserialize, Deserializer, Serialize};

use crate::capacity::compare::Bracket;

/// `report.json`'s `validity`: how the runs were judged valid, and which were not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Validity {
    /// `--expect-status`, as given.
    pub expect_status: String,
    /// The share of errors above which a run is invalid, per cent.
    pub max_error_pct: f64,
    /// Runs judged.
    pub runs: usize,
    /// The invalid runs, each with its reason.
    pub invalid: Vec<String>,
}

/// One published finding beside ours: an item of `NAME_paper`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PaperEntry {
    /// What is compared.
    pub what: String,
    /// Where the paper says it.
    pub source: String,
    /// The seed of the comparison's published figures.
    pub seed: String,
    /// The paper's words, as published.
    pub quotes: Vec<String>,
    /// The points' labels.
    pub labels: Vec<String>,
    /// The paper's figure at each label.
    pub paper: Vec<f64>,
    /// Ours at each label, where measured.
    pub ours: Vec<Option<f64>>,
    /// Ours over the paper's at each label.
    pub ratio: Vec<Option<f64>>,
    /// The comparison in words.
    pub reading: String,
}

/// `report.json`'s `baseline`: this lab against the one `--baseline` named.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BaselineEntry {
    /// The baseline lab's directory.
    pub baseline: String,
    /// The clients sweeps' comparisons, point by point (absent where only searches were
    /// compared).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparisons: Option<Vec<webscope_compare::Comparison>>,
    /// The capacity searches side by side, when this lab ran one: absent when it did not,
    /// null when the two could not be compared (the page says why).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub capacity: Option<Option<BaselineSearch<RpsSide>>>,
    /// The users searches side by side, likewise.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub users: Option<Option<BaselineSearch<UsersSide>>>,
}

/// A key that is there, null or not: `Some` (serde's `default` makes a missing one `None`).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// JSON has no infinity: an open top is null.
fn finite(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

/// The two labs' searches of one kind side by side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineSearch<S> {
    /// The comparison in words.
    pub sentence: String,
    /// The baseline's bracket.
    pub baseline: S,
    /// This lab's.
    pub this_lab: S,
    /// Whether the brackets overlap.
    pub overlap: bool,
}

/// A capacity bracket, requests/s.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpsSide {
    /// The highest rate that met the objective.
    pub low_rps: f64,
    /// The lowest that missed it (none: open at the top).
    pub high_rps: Option<f64>,
    /// The capacity found.
    pub capacity_rps: Option<f64>,
}

impl From<&Bracket> for RpsSide {
    fn from(b: &Bracket) -> RpsSide {
        RpsSide {
            low_rps: b.low,
            high_rps: finite(b.high),
            capacity_rps: b.capacity,
        }
    }
}

/// A users bracket, users.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UsersSide {
    /// The most users that met the objective.
    pub low_users: f64,
    /// The fewest that missed it (none: open at the top).
    pub high_users: Option<f64>,
    /// The capacity found.
    pub capacity_users: Option<f64>,
}

impl From<&Bracket> for UsersSide {
    fn from(b: &Bracket) -> UsersSide {
        UsersSide {
            low_users: b.low,
            high_users: finite(b.high),
            capacity_users: b.capacity,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Entries as the stored lab of `report_stored` (crates/webscope/tests/data) has them.
    const STORED_VALIDITY: &str =
        r#"{"expect_status": "2xx,3xx", "invalid": [], "max_error_pct": 1.0, "runs": 33}"#;
    const STORED_PAPER: &str = r#"{"labels": ["clients at saturation"], "ours": [null], "paper": [5.0], "quotes": ["our server is saturated when 5 clients are making requests at full speed"], "ratio": [null], "reading": "The paper saturates at 5 clients.", "seed": "000_46a1af8af431b11f.txt", "source": "Yates, Almeida & Almeida 1997", "what": "clients at which throughput saturates"}"#;

    fn same<T: Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug>(
        stored: &str,
    ) -> T {
        let t: T = serde_json::from_str(stored).unwrap();
        let written = serde_json::to_value(&t).unwrap();
        assert_eq!(
            written,
            serde_json::from_str::<serde_json::Value>(stored).unwrap()
        );
        assert_eq!(serde_json::from_value::<T>(written).unwrap(), t);
        t
    }

    #[test]
    fn stored_entries_read_into_their_types_and_write_back_the_same() {
        let validity: Validity = same(STORED_VALIDITY);
        assert_eq!(
            (validity.runs, validity.expect_status.as_str()),
            (33, "2xx,3xx")
        );
        let paper: PaperEntry = same(STORED_PAPER);
        assert_eq!((paper.paper[0], paper.ours[0]), (5.0, None));
    }

    #[test]
    fn a_baseline_keeps_apart_a_search_not_run_and_one_that_could_not_be_compared() {
        let bracket = |low: f64, high: f64| Bracket {
            low,
            high,
            capacity: Some(low),
            machine_ms: None,
            machine_se_ms: None,
            peak_spread: None,
        };
        let entry = BaselineEntry {
            baseline: "before".into(),
            comparisons: None,
            capacity: Some(Some(BaselineSearch {
                sentence: "capacity 1000 → 1010 req/s".into(),
                baseline: RpsSide::from(&bracket(1000.0, f64::INFINITY)),
                this_lab: RpsSide::from(&bracket(1010.0, 1060.0)),
                overlap: true,
            })),
            users: Some(None),
        };
        let v = serde_json::to_value(&entry).unwrap();
        assert!(
            v["users"].is_null() && v.get("comparisons").is_none(),
            "{v}"
        );
        assert!(v["capacity"]["baseline"]["high_rps"].is_null(), "{v}");
        assert_eq!(v["capacity"]["this_lab"]["low_rps"], 1010.0);
        let again: BaselineEntry = serde_json::from_value(v).unwrap();
        assert_eq!(again.users, Some(None));
        assert_eq!(again.capacity, entry.capacity);
        let without: BaselineEntry =
            serde_json::from_str(r#"{"baseline": "before", "comparisons": []}"#).unwrap();
        assert_eq!((without.capacity, without.users), (None, None));
    }
}
