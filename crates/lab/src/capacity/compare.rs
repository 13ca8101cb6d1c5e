//! Two capacity results side by side (issue #25 §2): "capacity 41 800 → 37 100 req/s
//! (−11.2 %, brackets do not overlap)", and a threshold on the change (`capacity>-5%`) judged
//! with three answers — pass, fail, or cannot decide — from the brackets alone.
//!
//! Each result is read as the interval the true capacity lies in: a found capacity is
//! `[capacity, fails_at)`; "above R, beyond what this generator can offer" is `[R, ∞)`; "below
//! R" is `[0, R)`; probes that ran out leave `[last pass, first fail)`. A change is significant
//! only when the two intervals do not overlap. A threshold passes when even the least
//! favourable reading (the candidate's low end against the baseline's high end) is within it,
//! fails when even the most favourable reading is beyond it, and otherwise cannot decide.
//!
//! Pure: it reads the `capacity` entries of two report.json files. Not for: the other figures
//! `webscope compare` sets side by side (`compare`), nor its command line.

use serde_json::Value;

/// The interval a result puts the capacity in, and its point figure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bracket {
    pub low: f64,
    /// `f64::INFINITY` when the search could not find a failing rate.
    pub high: f64,
    /// The capacity found, when there is one.
    pub capacity: Option<f64>,
}

impl Bracket {
    /// From a report.json `capacity` entry's `ending`; None when the probe could not be
    /// judged or the search was cut (no interval at all).
    pub fn of(entry: &Value) -> Option<Bracket> {
        let e = &entry["ending"];
        let f = |key: &str| e[key].as_f64();
        let (low, high, capacity) = match e["kind"].as_str()? {
            "found" => (f("capacity_rps")?, f("fails_at_rps")?, f("capacity_rps")),
            "generator" => (f("above_rps").unwrap_or(0.0), f64::INFINITY, None),
            "below" => (0.0, f("rate_rps")?, None),
            "out_of_probes" => (
                f("pass_rps").unwrap_or(0.0),
                f("fail_rps").unwrap_or(f64::INFINITY),
                None,
            ),
            _ => return None,
        };
        Some(Bracket {
            low,
            high,
            capacity,
        })
    }

    fn overlaps(&self, other: &Bracket) -> bool {
        self.low.max(other.low) < self.high.min(other.high)
    }
}

/// What a threshold says about a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Pass,
    Fail,
    /// The brackets are too wide (or open) to tell: neither pass nor fail.
    CannotDecide,
}

/// `capacity>-5%`: the least change allowed, as a fraction (−0.05).
pub fn parse_threshold(text: &str) -> Result<f64, String> {
    let rest = text.trim().strip_prefix("capacity").ok_or_else(|| {
        format!("{text:?}: a capacity threshold starts with capacity, e.g. capacity>-5%")
    })?;
    let rest = rest
        .strip_prefix(">=")
        .or_else(|| rest.strip_prefix('>'))
        .ok_or_else(|| format!("{text:?}: capacity is a floor: write capacity>-5%"))?;
    let pct = rest
        .trim()
        .strip_suffix('%')
        .ok_or_else(|| format!("{text:?}: give the change in per cent, e.g. capacity>-5%"))?;
    pct.trim()
        .parse::<f64>()
        .ok()
        .filter(|p| p.is_finite())
        .map(|p| p / 100.0)
        .ok_or_else(|| format!("{text:?}: {pct:?} is not a number"))
}

/// The sentence for a baseline and a candidate.
pub fn sentence(base: &Bracket, cand: &Bracket) -> String {
    let show = |b: &Bracket| match (b.capacity, b.high.is_finite()) {
        (Some(c), _) => format!("{c:.0}"),
        (None, false) => format!("above {:.0}", b.low),
        (None, true) if b.low <= 0.0 => format!("below {:.0}", b.high),
        (None, true) => format!("{:.0}..{:.0}", b.low, b.high),
    };
    let change = match (base.capacity, cand.capacity) {
        (Some(b), Some(c)) if b > 0.0 => format!("{:+.1} %, ", 100.0 * (c - b) / b),
        _ => String::new(),
    };
    let overlap = if base.overlaps(cand) {
        "brackets overlap: no significant change"
    } else {
        "brackets do not overlap"
    };
    format!(
        "capacity {} → {} req/s ({change}{overlap})",
        show(base),
        show(cand)
    )
    .replace('-', "−")
}

/// Whether the candidate's change against the baseline is within `least` (−0.05: a drop of
/// at most 5 %).
pub fn decide(base: &Bracket, cand: &Bracket, least: f64) -> Decision {
    let floor = |b: f64| b * (1.0 + least);
    // Most favourable to the candidate: its high end against the baseline's low end.
    if cand.high <= floor(base.low) {
        return Decision::Fail;
    }
    // Least favourable: its low end against the baseline's high end.
    if base.high.is_finite() && cand.low >= floor(base.high) {
        return Decision::Pass;
    }
    Decision::CannotDecide
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn found(c: f64, f: f64) -> Bracket {
        Bracket::of(&json!({"ending": {"kind": "found", "capacity_rps": c, "fails_at_rps": f}}))
            .unwrap()
    }

    #[test]
    fn a_drop_counts_only_when_the_brackets_say_so() {
        let base = found(41_800.0, 44_000.0);
        let drop = found(37_100.0, 38_900.0);
        assert_eq!(
            sentence(&base, &drop),
            "capacity 41800 → 37100 req/s (−11.2 %, brackets do not overlap)"
        );
        assert_eq!(decide(&base, &drop, -0.05), Decision::Fail);
        let same = found(42_900.0, 45_000.0);
        assert!(sentence(&base, &same).contains("no significant change"));
        assert_eq!(decide(&base, &same, -0.05), Decision::Pass);
        // Wide brackets around a small drop: neither pass nor fail.
        let wide = found(36_000.0, 48_000.0);
        assert_eq!(decide(&base, &wide, -0.05), Decision::CannotDecide);
        // A generator-bound candidate above the baseline's bracket is no drop.
        let above =
            Bracket::of(&json!({"ending": {"kind": "generator", "above_rps": 50_000.0}})).unwrap();
        assert_eq!(decide(&base, &above, -0.05), Decision::Pass);
        assert!(sentence(&base, &above).contains("above 50000"));
        // A generator-bound baseline leaves an open top: nothing passes against it.
        assert_eq!(decide(&above, &base, -0.05), Decision::Fail);
        assert_eq!(decide(&above, &above, -0.05), Decision::CannotDecide);
        assert_eq!(Bracket::of(&json!({"ending": null})), None);
    }

    #[test]
    fn thresholds_read_as_the_least_change_allowed() {
        assert_eq!(parse_threshold("capacity>-5%"), Ok(-0.05));
        assert_eq!(parse_threshold("capacity>=-2.5%"), Ok(-0.025));
        for bad in ["p99>-5%", "capacity<-5%", "capacity>-5", "capacity>x%"] {
            assert!(parse_threshold(bad).is_err(), "{bad}");
        }
    }
}
