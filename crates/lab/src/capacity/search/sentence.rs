//! How a search's ending is said: one sentence for the page, report.json and the console,
//! and the bracket's half-width. A range's sentence is `range.rs`'s.

use webscope_load::thousands;
use webscope_report::human::pct_brief;

use super::{Ending, Unsettled, MOST_DISTURBED, MOST_UNDECIDED};

impl Ending {
    /// The half-width of the bracket over the capacity, in per cent: 41 800 / 44 000 → 2.6.
    pub fn bracket_pct(&self) -> Option<f64> {
        match self {
            Ending::Found {
                capacity,
                fails_at,
                first_miss,
                ..
            } => Some(50.0 * (first_miss.unwrap_or(*fails_at) - capacity) / capacity),
            _ => None,
        }
    }

    /// One sentence: "capacity 41 800 req/s (passes 3/3; 44 000 fails 3/3; bracket ±2.6 %)".
    pub fn sentence(&self) -> String {
        self.sentence_in("req/s")
    }

    /// [`Ending::sentence`] with another unit than req/s (the users search's: "users").
    pub fn sentence_in(&self, unit: &str) -> String {
        match self {
            Ending::Found {
                first_miss: Some(m),
                ..
            } => self.range_sentence(*m, unit),
            Ending::Found {
                capacity,
                passes,
                fails_at,
                fails,
                unproven,
                unsettled,
                first_miss: None,
                ..
            } => format!(
                "capacity {} {unit} (passes {}/{}; {} fails {}/{}{}; bracket ±{}){}",
                thousands(*capacity),
                passes.0,
                passes.1,
                thousands(*fails_at),
                fails.0,
                fails.1,
                match unproven {
                    0 => String::new(),
                    n => format!(
                        ", {n} of them for {MOST_UNDECIDED} undecided probes: not shown to meet the objective"
                    ),
                },
                pct_brief(self.bracket_pct().unwrap_or(0.0) / 100.0),
                unsettled.map_or(String::new(), |u| u.sentence(unit))
            ),
            Ending::GeneratorBound { above: Some(r), at } => format!(
                "capacity is above {} {unit}, beyond what this generator can offer (it fell behind at {} {unit})",
                thousands(*r),
                thousands(*at)
            ),
            Ending::GeneratorBound { above: None, at } => format!(
                "no capacity measured: the generator fell behind at {} {unit}, the first rate it offered",
                thousands(*at)
            ),
            // A users search that fails with one user says so in the singular.
            Ending::Below { rate } if unit == "users" && *rate == 1.0 => {
                "capacity is below 1 user: the objective failed with a single user".into()
            }
            Ending::Below { rate } => format!(
                "capacity is below {} {unit}: the objective failed at the lowest {} tried",
                thousands(*rate),
                if unit == "users" { "number of users" } else { "rate" }
            ),
            Ending::Undecided { at, why } => format!(
                "no capacity: the probes at {} {unit} could not be decided, {MOST_UNDECIDED} times, each longer ({why})",
                thousands(*at)
            ),
            Ending::Disturbed { at, why, passed } => format!(
                "no capacity: the machine was disturbed ({why}); {MOST_DISTURBED} probes in a row at {} {unit} ran on a disturbed machine{}",
                thousands(*at),
                passed.map_or(String::new(), |p| format!(
                    "; it had passed {} {unit} in {} of {} probes: the capacity is at least that, above it unsettled",
                    thousands(p.rate),
                    p.passes,
                    p.probes
                ))
            ),
            Ending::OutOfProbes { pass, fail } => format!(
                "no capacity: the probes ran out with the bracket open (passed at {}, failed at {})",
                pass.map_or("none".into(), thousands),
                fail.map_or("none".into(), thousands)
            ),
        }
    }
}

impl Unsettled {
    /// "; from 68 000 to 80 000 req/s the server met the objective in 5 of 12 probes (2
    /// rates): neither a capacity nor a limit".
    fn sentence(&self, unit: &str) -> String {
        let rates = if self.rates == 1 {
            format!("at {} {unit}", thousands(self.from))
        } else {
            format!(
                "from {} to {} {unit} ({} rates)",
                thousands(self.from),
                thousands(self.to),
                self.rates
            )
        };
        format!(
            "; {rates} the server met the objective in {} of {} probes: neither a capacity nor a limit, so the bracket spans them",
            self.passes, self.probes
        )
    }
}
