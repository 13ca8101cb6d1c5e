//! How many generators a search that ran out of generator would need (issue #25 §3): from
//! the generator's CPU per request at the last probe that passed, the rate one generator
//! thread can offer, and the generators needed for the search's next step beyond the rate
//! it fell behind at.
//!
//! The ending's sentence for such a search ([`said`], made by `capacity::said`) quotes the
//! figure that ended it.
//!
//! Not for: running several generators (that is `webscope load --segment` and `merge`).

use crate::point::Point;
use webscope_bottleneck::CPU_LIMIT;
pub use webscope_lab::capacity::said::said_of;
use webscope_lab::capacity::search::Ending;
use webscope_lab::objective::Outcome;
use webscope_lab::step::Judged;
use webscope_report::human::pct_brief;

/// The estimate, with what it rests on.
#[derive(Debug, Clone, PartialEq)]
pub struct Needed {
    /// The last probe that passed: its rate and its generator thread's busy share.
    pub rate: f64,
    /// Its generator thread's busy share there, 0..1.
    pub busy: f64,
    /// Generator CPU per request there, µs.
    pub us_per_request: f64,
    /// What one generator thread offers at [`CPU_LIMIT`] of its core.
    pub per_generator: f64,
    /// The rate the search would have probed next, and generators for it.
    pub next_rate: f64,
    /// Generators needed for `next_rate`, each at [`CPU_LIMIT`] of its core (at least 2).
    pub generators: u32,
}

impl Needed {
    /// For a search that ended generator-bound; None otherwise, or without a passing probe
    /// whose generator CPU was measured.
    pub fn of(points: &[Point], probes: &[Judged], ending: &Ending, growth: f64) -> Option<Needed> {
        let Ending::GeneratorBound { at, .. } = ending else {
            return None;
        };
        let (point, _) = points
            .iter()
            .zip(probes)
            .filter(|(p, j)| j.outcome == Outcome::Pass && p.generator_busy > 0.0 && p.rps > 0.0)
            .max_by(|a, b| a.0.x.total_cmp(&b.0.x))?;
        let seconds_per_request = point.generator_busy / point.rps;
        let per_generator = CPU_LIMIT / seconds_per_request;
        let next_rate = at * growth.max(1.0);
        Some(Needed {
            rate: point.x,
            busy: point.generator_busy,
            us_per_request: seconds_per_request * 1e6,
            per_generator,
            next_rate,
            generators: (next_rate / per_generator).ceil().max(2.0) as u32,
        })
    }

    /// The page's paragraph: what one generator offers, and the command lines that would take
    /// the search further.
    pub fn sentence(&self) -> String {
        format!(
            "At {:.0} req/s, the last rate that passed, the generator's thread was {} busy ({:.1} µs a request): one generator offers about {:.0} req/s of this workload at {} of its core. Taking the search on to {:.0} req/s needs {} generators, each on a core (or host) of its own: `webscope lab --segments {n}` where the machine has {n} cores beside the server's, or `webscope load --segment I/{n}` on {n} hosts started together with `--start-at` and added with `webscope merge` (`webscope distribute --kubernetes {n}` writes it as a Job).",
            self.rate,
            pct_brief(self.busy),
            self.us_per_request,
            self.per_generator,
            pct_brief(CPU_LIMIT),
            self.next_rate,
            self.generators,
            n = self.generators,
        )
    }
}

/// The search's ending in one sentence ([`said_of`]), with what each probe achieved read
/// from its point.
pub fn said(ending: &Ending, points: &[Point], probes: &[Judged]) -> String {
    said_of(ending, probes, |i| points.get(i).map(|p| p.rps))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::point::test_point;
    use webscope_bottleneck::Bound;

    fn judged(rate: f64, outcome: &str) -> Judged {
        // As probe.json says it, outcome and all.
        serde_json::from_value(serde_json::json!({
            "number": 1, "rate": rate, "outcome": outcome, "reason": "", "checks": [],
            "not_sent_share": 0.0, "bound": "offered rate", "bound_reading": "", "warmup_s": 0.2,
            "cooldown": {"waited_s": 0.0, "open_before": 0, "open_after": 0, "time_wait": 0, "settled": true}
        }))
        .unwrap()
    }

    #[test]
    fn the_generators_needed_come_from_the_last_good_probe() {
        // 20 000 req/s passed with the generator 60 % busy: 30 µs a request, 30 000 req/s a
        // generator at 90 %; it fell behind at 40 000, the next step is 80 000: 3 generators.
        let points = vec![
            test_point(10_000.0, 10_000.0, 0.3, Some(0.2)),
            test_point(20_000.0, 20_000.0, 0.6, Some(0.4)),
            test_point(40_000.0, 31_000.0, 0.95, Some(0.6)),
        ];
        let probes = vec![
            judged(10_000.0, "pass"),
            judged(20_000.0, "pass"),
            judged(40_000.0, "generator"),
        ];
        let ending = Ending::GeneratorBound {
            above: Some(20_000.0),
            at: 40_000.0,
        };
        let n = Needed::of(&points, &probes, &ending, 2.0).expect("an estimate");
        assert_eq!(n.rate, 20_000.0);
        assert!((n.us_per_request - 30.0).abs() < 1e-9, "{n:?}");
        assert!((n.per_generator - 30_000.0).abs() < 1e-6, "{n:?}");
        assert_eq!((n.next_rate, n.generators), (80_000.0, 3));
        assert!(n.sentence().contains("--segment I/3"), "{}", n.sentence());
        // A search that found its capacity needs no estimate.
        let found = Ending::Below { rate: 100.0 };
        assert_eq!(Needed::of(&points, &probes, &found, 2.0), None);
    }

    /// #33: "fell behind at 12 800 req/s" beside a row that shows 12 776 achieved and
    /// nothing late; the trigger was the generator's thread 91 % busy.
    #[test]
    fn the_generator_ending_quotes_the_figure_that_ended_it() {
        let points = vec![
            test_point(6_400.0, 6_400.0, 0.5, Some(0.2)),
            test_point(12_800.0, 12_776.0, 0.91, Some(0.4)),
        ];
        let mut busy = judged(12_800.0, "generator");
        busy.bound = Bound::Generator;
        busy.bound_reading = "the load generator's busiest thread is 91 % busy (limit 90 %): this run measures the generator, not the server".into();
        let probes = vec![judged(6_400.0, "pass"), busy];
        let ending = Ending::GeneratorBound {
            above: Some(6_400.0),
            at: 12_800.0,
        };
        let said = said(&ending, &points, &probes);
        assert_eq!(
            said,
            "capacity is above 6 400 req/s, beyond what this generator can offer: at 12 800 req/s the load generator's busiest thread is 91 % busy (limit 90 %): this run measures the generator, not the server (it achieved 12 776 req/s; 0.0 % not sent)"
        );
        assert!(!said.contains("fell behind"), "{said}");
        // The lab's closing line, from the probes alone.
        let closing = said_of(&ending, &probes, |_| None);
        assert!(
            closing.ends_with("not the server (0.0 % not sent)"),
            "{closing}"
        );
        // Requests never sent: the objective's reason is the trigger.
        let mut late = judged(12_800.0, "generator");
        late.reason = "12.0 % of the requests were never sent".into();
        let said = super::said(&ending, &points, &[judged(6_400.0, "pass"), late]);
        assert!(
            said.contains("at 12 800 req/s 12.0 % of the requests were never sent"),
            "{said}"
        );
        // Other endings keep the search's own sentence.
        let found = Ending::Below { rate: 100.0 };
        assert_eq!(super::said(&found, &points, &probes), found.sentence());
    }
}
