//! The server's own peak, as the search's overloaded probes measured it: in a probe that
//! was behind its rate from start to end, every request waited for the server, so what it
//! carried is what the server could carry just then. A search has several such probes (its
//! doubling overshoots, and each fail is confirmed), minutes apart; their spread is how far
//! the server itself moved under load within one search. The reference loop, read while the
//! server is idle, misses this: #33 measured nginx (1 worker, 2-vCPU VM, 64 connections, 3-s
//! runs half a second apart) carrying 87 500 to 116 000 req/s at its peak from one run to the
//! next, in spells that last minutes, while the loop held within 2 %. A capacity found near
//! that peak is no steadier than it, whatever its bracket says, and the page says so.
//!
//! Not for: a figure of capacity (the objective decides that), nor judging a probe.

use webscope_load::thousands;
use webscope_model::stats::Sorted;
use webscope_report::human::pct_brief;

use super::Point;
use webscope_lab::objective::Outcome;
use webscope_lab::step::Judged;

/// A probe was behind its rate from start to end when at least this share of its requests
/// went out late: it never ran out of work to give the server.
const BEHIND: f64 = 0.99;
/// ... and it carried at most this share of the rate asked: the server, not the schedule,
/// set the pace.
const SHORT: f64 = 0.97;
/// A peak that moved more than this within one search (as a share of its median) is said to
/// make the capacity unsteady: the smallest change a threshold is usually asked about
/// (`capacity>-5%`).
const STEADY: f64 = 0.05;

/// The peaks of a search's overloaded probes.
#[derive(Debug, Clone, PartialEq)]
pub struct Peak {
    /// Overloaded probes.
    pub probes: usize,
    pub low_rps: f64,
    pub median_rps: f64,
    pub high_rps: f64,
    /// The first and last of them, by probe number: how much of the search they span.
    pub first: usize,
    pub last: usize,
}

impl Peak {
    /// (high − low) / median.
    pub fn spread(&self) -> f64 {
        (self.high_rps - self.low_rps) / self.median_rps
    }
}

/// From each probe's figures and its judged outcome; None below two overloaded probes.
pub fn of<'a>(probes: impl IntoIterator<Item = (&'a Point, &'a Judged)>) -> Option<Peak> {
    Peak::from(
        probes
            .into_iter()
            .filter_map(|(p, j)| {
                let total = &p.run.load.total;
                carried(
                    j.outcome,
                    j.level.value(),
                    p.rps,
                    total.requests,
                    total.run.late_sends.unwrap_or(0),
                )
                .map(|rps| (j.number, rps))
            })
            .collect(),
    )
}

/// What a probe at `rate` req/s that ended `outcome` carried at the server's peak: its
/// goodput `rps`, when it failed while behind its rate from start to end (`late` of its
/// `requests` sent late) and carried less than asked; None otherwise.
fn carried(outcome: Outcome, rate: f64, rps: f64, requests: u64, late: u64) -> Option<f64> {
    (outcome == Outcome::Fail
        && requests > 0
        && late as f64 >= BEHIND * requests as f64
        && rps <= SHORT * rate
        && rps.is_finite()
        && rps > 0.0)
        .then_some(rps)
}

impl Peak {
    /// From what the overloaded probes carried; None below two.
    fn from(probes: Vec<(usize, f64)>) -> Option<Peak> {
        if probes.len() < 2 {
            return None;
        }
        let numbers = probes.iter().map(|(n, _)| *n);
        let (first, last) = (numbers.clone().min()?, numbers.max()?);
        let n = probes.len();
        // The workspace's one rule for a median (the mean of the two middle ones for an
        // even count), as everywhere else the pages say "median".
        let carried = Sorted::new(probes.into_iter().map(|(_, rps)| rps));
        let values = carried.as_slice();
        Some(Peak {
            probes: n,
            low_rps: *values.first()?,
            median_rps: carried.median()?,
            high_rps: *values.last()?,
            first,
            last,
        })
    }
}

/// The page's sentence.
pub fn sentence(p: &Peak) -> String {
    let spread = 100.0 * p.spread();
    let reading = if p.spread() > STEADY {
        format!(
            " A capacity found near that peak is no steadier than it, whatever its bracket: two searches of an unchanged server here may differ by as much, so read a change smaller than {} between them as the machine's, not the server's.",
            pct_brief(spread / 100.0)
        )
    } else {
        format!(
            " It held within {} over them, though probes taken close together see less of the machine's moves than probes minutes apart.",
            pct_brief(STEADY)
        )
    };
    let carried = if p.low_rps == p.high_rps {
        format!("{} req/s each", thousands(p.low_rps))
    } else {
        format!(
            "{} to {} req/s (median {}), {spread:.1} % apart within this one search",
            thousands(p.low_rps),
            thousands(p.high_rps),
            thousands(p.median_rps),
        )
    };
    format!(
        "The server's own peak: the {} probes it could not keep up with (probes {} to {}, each behind its rate from start to end, so the server never waited for work) carried {carried}.{reading}",
        p.probes,
        p.first,
        p.last,
    )
}

/// When the capacity found lies above what the server carried in most of the probes it had
/// fallen behind in (their median: one slow probe alone does not say it): a rate it keeps up
/// with from a standing start but may not catch up in once behind. Such a window is what
/// makes a knee bistable: a burst or a stall tips the server, its backlog grows its
/// connections, each request then costs it more (#33: nginx passed 88 000 req/s at 97 % of
/// its core, 11.0 µs a request, and carried 77 600-82 400 at 100 % once behind, 12.5 µs), and
/// it may stay behind while the load stays (the overloaded probes ran at higher rates than the
/// capacity, so the sentence says may). None otherwise.
pub fn above(p: &Peak, capacity: f64) -> Option<String> {
    (capacity > p.median_rps).then(|| {
        format!(
            "The capacity, {} req/s, is above what the server carried in most of the probes it had fallen behind in ({} to {} req/s, median {}): it keeps up at that rate only while nothing tips it, and after a burst or a stall it may not catch up while the load stays there (those probes were offered more than this rate, so this is what they suggest, not what was measured at it). It carried at least {} req/s in every one of those probes: a rate to stake a decision on is no higher.",
            thousands(capacity),
            thousands(p.low_rps),
            thousands(p.high_rps),
            thousands(p.median_rps),
            thousands(p.low_rps),
        )
    })
}

/// report.json's `peak`; `capacity_above_median`: [`above`] said so.
pub fn entry(p: &Peak, capacity: Option<f64>) -> webscope_lab::results::capacity::Peak {
    webscope_lab::results::capacity::Peak {
        probes: p.probes,
        low_rps: p.low_rps,
        median_rps: p.median_rps,
        high_rps: p.high_rps,
        spread: Some(p.spread()),
        first_probe: p.first,
        last_probe: p.last,
        capacity_above_median: capacity.map(|c| c > p.median_rps),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_probes_behind_from_start_to_end_and_short_of_their_rate_measure_the_peak() {
        let late = |rps: f64, share: f64| (rps * 3.0 * share) as u64;
        let requests = |rps: f64| (rps * 3.0) as u64;
        // Behind throughout, short of 128 000: the peak.
        assert_eq!(
            carried(Outcome::Fail, 128e3, 92e3, requests(92e3), late(92e3, 1.0)),
            Some(92e3)
        );
        // Behind for part of the probe only (a backlog that came late): not the peak.
        assert_eq!(
            carried(Outcome::Fail, 96e3, 90e3, requests(90e3), late(90e3, 0.6)),
            None
        );
        // Carried its rate, failing on latency: the server kept up, so no peak was reached.
        assert_eq!(
            carried(Outcome::Fail, 96e3, 95.9e3, requests(96e3), late(96e3, 1.0)),
            None
        );
        // A pass, a probe the generator bound, a disturbed one: not the server's peak.
        for o in [Outcome::Pass, Outcome::Generator, Outcome::Disturbed] {
            assert_eq!(
                carried(o, 128e3, 92e3, requests(92e3), late(92e3, 1.0)),
                None
            );
        }
        assert_eq!(carried(Outcome::Fail, 128e3, 0.0, 0, 0), None);
    }

    #[test]
    fn a_peak_that_moved_is_named_a_steady_one_is_not_blamed() {
        // #33's fixed-connection search: the overloaded probes' goodput over its minutes.
        let carried = [109e3, 98e3, 105e3, 104e3, 106e3, 104e3, 91e3, 90e3];
        let numbers = [8, 9, 10, 16, 17, 18, 21, 22];
        let moved = Peak::from(numbers.into_iter().zip(carried).collect()).unwrap();
        assert_eq!(
            (
                moved.probes,
                moved.low_rps,
                moved.median_rps,
                moved.high_rps
            ),
            (8, 90e3, 104e3, 109e3)
        );
        assert_eq!((moved.first, moved.last), (8, 22));
        let said = sentence(&moved);
        assert!(
            said.contains("the 8 probes it could not keep up with (probes 8 to 22,")
                && said.contains("carried 90 000 to 109 000 req/s (median 104 000), 18.3 % apart")
                && said.contains("read a change smaller than 18 %"),
            "{said}"
        );
        assert!((entry(&moved, None).spread.unwrap() - 19e3 / 104e3).abs() < 1e-12);
        let steady = Peak::from(vec![(5, 850.0), (6, 850.0), (9, 860.0)]).unwrap();
        assert!(
            sentence(&steady).contains("held within 5.0 %"),
            "{}",
            sentence(&steady)
        );
        assert_eq!(Peak::from(vec![(5, 850.0)]), None);
    }

    #[test]
    fn a_capacity_above_what_the_server_carried_once_behind_is_named() {
        // #33's search 5 of stop 46: 88 000 passed 3 of 3, while the probes it fell behind
        // in carried 77 600 to 82 400.
        let peak = Peak::from(vec![(8, 77_600.0), (9, 81_700.0), (13, 82_400.0)]).unwrap();
        let said = above(&peak, 88_000.0).unwrap();
        assert!(
            said.contains("The capacity, 88 000 req/s, is above what the server carried in most of the probes it had fallen behind in (77 600 to 82 400 req/s, median 81 700)")
                && said.contains("It carried at least 77 600 req/s in every one of those probes"),
            "{said}"
        );
        assert_eq!(
            entry(&peak, Some(88_000.0)).capacity_above_median,
            Some(true)
        );
        // Above the slowest probe only (stop 46's 72 000 over 68 100-80 800): one slow spell
        // does not make the window.
        assert_eq!(above(&peak, 80_000.0), None);
        assert_eq!(
            entry(&peak, Some(72_000.0)).capacity_above_median,
            Some(false)
        );
        assert_eq!(entry(&peak, None).capacity_above_median, None);
    }
}
