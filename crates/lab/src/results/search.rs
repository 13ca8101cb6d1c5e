//! A search's entry in report.json (`capacity`, `users`) as `compare` and `--baseline` read
//! it: how the search ended, the machine's reference speed while it ran, and how far the
//! server's own peak moved within it. The page writes many more fields; these are the ones
//! a verdict rests on, checked as they are read.

use serde::Deserialize;

pub use super::capacity::{MachineReference, Peak};
use super::ending::EndingRecord;
use crate::capacity::compare::Bracket;

/// A search's entry.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct SearchEntry<E> {
    /// Its ending; none when the search was stopped before it ended.
    #[serde(default = "none")]
    pub ending: Option<E>,
    /// The page's sentence for it.
    #[serde(default)]
    pub sentence: String,
    /// The machine's speed while it ran (searches since #33).
    #[serde(default)]
    pub machine_reference: Option<MachineReference>,
    /// The server's own peak (searches since #33).
    #[serde(default)]
    pub peak: Option<Peak>,
}

fn none<E>() -> Option<E> {
    None
}

impl<E: EndingRecord> SearchEntry<E> {
    /// Every figure a verdict rests on is one webscope could have written; else the field
    /// at fault, from the entry down (`ending.capacity_rps is -5: ...`).
    pub fn check(&self) -> Result<(), String> {
        if let Some(e) = &self.ending {
            e.check()?;
        }
        if let Some(m) = &self.machine_reference {
            if let Some(mean) = m.mean_ms.filter(|v| !(v.is_finite() && *v > 0.0)) {
                return Err(format!(
                    "machine_reference.mean_ms is {mean}: a time is finite and above 0"
                ));
            }
            if let Some(se) = m.se_ms.filter(|v| !(v.is_finite() && *v >= 0.0)) {
                return Err(format!(
                    "machine_reference.se_ms is {se}: a standard error is finite and not negative"
                ));
            }
        }
        if let Some(spread) = self
            .peak
            .and_then(|p| p.spread)
            .filter(|v| !(v.is_finite() && *v >= 0.0))
        {
            return Err(format!(
                "peak.spread is {spread}: a spread is finite and not negative"
            ));
        }
        Ok(())
    }

    /// The bracket its ending puts the capacity in, with the machine's speed and the
    /// peak's spread beside it; none when the search established nothing.
    pub fn bracket(&self) -> Option<Bracket> {
        let (low, high, capacity) = self.ending.as_ref()?.bracket()?;
        Some(Bracket {
            low,
            high,
            capacity,
            machine_ms: self.machine_reference.and_then(|m| m.mean_ms),
            machine_se_ms: self.machine_reference.and_then(|m| m.se_ms),
            peak_spread: self.peak.and_then(|p| p.spread),
        })
    }

    /// The bracket, or how the search ended without one.
    pub fn search(&self) -> super::Search {
        match self.bracket() {
            Some(b) => super::Search::Bracket(b),
            None => super::Search::Ended(self.how()),
        }
    }

    /// How the search ended, in a few words, for a verdict that cannot use it.
    pub fn how(&self) -> String {
        self.ending
            .as_ref()
            .map_or("stopped before its end".into(), |e| e.how())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::RpsEnding;
    use serde_json::json;

    fn entry(v: serde_json::Value) -> SearchEntry<RpsEnding> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn the_bracket_carries_the_machine_and_the_peak() {
        let e = entry(json!({
            "ending": {"kind": "found", "capacity_rps": 1.0, "fails_at_rps": 2.0,
                       "passes": [3, 3], "fails": [3, 3], "unproven": 0, "unsettled": null,
                       "bracket_pct": 50.0},
            "machine_reference": {"mean_ms": 18.5, "se_ms": 0.2, "samples": 25},
            "peak": {"spread": 0.12, "probes": 4},
            "probes": [],
        }));
        let b = e.bracket().unwrap();
        assert_eq!((b.low, b.high, b.capacity), (1.0, 2.0, Some(1.0)));
        assert_eq!(
            (b.machine_ms, b.machine_se_ms, b.peak_spread),
            (Some(18.5), Some(0.2), Some(0.12))
        );
        assert_eq!(e.check(), Ok(()));
        // Stopped before its end: no ending, no bracket.
        let stopped = entry(json!({"ending": null}));
        assert_eq!(stopped.bracket(), None);
        assert_eq!(stopped.how(), "stopped before its end");
    }

    /// #51: a machine reference of 0 and a negative standard error are refused, not
    /// skipped.
    #[test]
    fn a_tampered_machine_reference_names_its_field() {
        let e = entry(json!({
            "ending": {"kind": "below", "rate_rps": 100.0},
            "machine_reference": {"mean_ms": 0.0, "se_ms": -1.0},
        }));
        assert_eq!(
            e.check(),
            Err("machine_reference.mean_ms is 0: a time is finite and above 0".into())
        );
        let e = entry(json!({"machine_reference": {"mean_ms": 3.0, "se_ms": -1.0}}));
        assert_eq!(
            e.check(),
            Err(
                "machine_reference.se_ms is -1: a standard error is finite and not negative".into()
            )
        );
    }
}
