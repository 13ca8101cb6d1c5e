//! The loss experiment's entry in report.json (`protocols_loss`): each protocol's page loads
//! at each loss rate, and HTTP/3's page load over HTTP/2's with its interval over the rounds.
//! Typed so that its keys are spelt once; the page (`webscope_pages::protocols_loss`) fills it.

use serde::{Deserialize, Serialize};

use super::handshakes::Handshakes;

/// The experiment's entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LossEntry {
    /// What the table says, in one sentence.
    pub reading: String,
    /// What others measured, cited.
    pub literature: String,
    /// One row per protocol and loss rate.
    pub rows: Vec<LossRow>,
    /// HTTP/3's page load over HTTP/2's at each loss rate both ran.
    pub h3_over_h2: Vec<LossRatio>,
}

/// One protocol at one loss rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LossRow {
    /// `HTTP/2` or `HTTP/3`.
    pub protocol: String,
    /// The link's loss rate, per cent of packets.
    pub loss_pct: f64,
    /// Page views the users completed.
    pub page_views: u64,
    /// Median page load, ms.
    pub page_load_p50_ms: f64,
    /// 99th-percentile page load, ms.
    pub page_load_p99_ms: f64,
    /// Exchanges that got no response.
    pub errors: u64,
    /// The rounds of `--repeat` the row stands for.
    pub runs: usize,
    /// The users' handshakes in the row's run (labs before: none kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handshakes: Option<Handshakes>,
}

/// HTTP/3 over HTTP/2 at one loss rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LossRatio {
    /// The loss rate, per cent.
    pub loss_pct: f64,
    /// Rounds with both protocols' runs.
    pub pairs: usize,
    /// The median page load's ratio.
    pub p50: Estimate,
    /// The 99th percentile's ratio.
    pub p99: Estimate,
}

/// A ratio and its 95 % interval (none from one round).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// The geometric mean of the rounds' ratios.
    pub estimate: f64,
    /// The interval's low end.
    pub low95: Option<f64>,
    /// The interval's high end.
    pub high95: Option<f64>,
}

impl Estimate {
    /// From (estimate, interval), as the page computes it.
    pub fn of((estimate, interval): (f64, Option<(f64, f64)>)) -> Estimate {
        Estimate {
            estimate,
            low95: interval.map(|i| i.0),
            high95: interval.map(|i| i.1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The keys as the page wrote them with `json!` before they were typed.
    #[test]
    fn an_entry_reads_back_equal_with_the_keys_it_always_had() {
        let entry = LossEntry {
            reading: "HTTP/3 loads pages faster under loss.".into(),
            literature: "Langley et al.".into(),
            rows: vec![LossRow {
                protocol: "HTTP/3".into(),
                loss_pct: 1.0,
                page_views: 120,
                page_load_p50_ms: 272.1,
                page_load_p99_ms: 1596.0,
                errors: 0,
                runs: 3,
                handshakes: None,
            }],
            h3_over_h2: vec![LossRatio {
                loss_pct: 1.0,
                pairs: 3,
                p50: Estimate::of((0.81, Some((0.69, 0.95)))),
                p99: Estimate::of((0.86, None)),
            }],
        };
        let written = serde_json::to_value(&entry).unwrap();
        let row = &written["rows"][0];
        for key in [
            "protocol",
            "loss_pct",
            "page_views",
            "page_load_p50_ms",
            "page_load_p99_ms",
            "errors",
            "runs",
        ] {
            assert!(row.get(key).is_some(), "{key} missing from {row}");
        }
        assert_eq!(written["h3_over_h2"][0]["p50"]["low95"], 0.69);
        assert!(written["h3_over_h2"][0]["p99"]["high95"].is_null());
        let back: LossEntry = serde_json::from_value(written).unwrap();
        assert_eq!(back, entry);
    }
}
