//! A search's ending as report.json keeps it: `{"kind": "found", "capacity_rps": 41800,
//! "fails_at_rps": 44000, ...}` for the capacity search, the same with `_users` for the users
//! search. One record type per unit, made by one macro, so that the keys are spelt once and
//! a stored report reads back into the same type that wrote it.

use serde::{Deserialize, Serialize};

use crate::capacity::search::{Ending, Passed, Unsettled};

/// What every ending record says, whatever its unit.
pub trait EndingRecord {
    /// The bracket the capacity lies in, (low, high, the capacity found), both ends
    /// included, `high` infinite when open; `None` when the search established nothing.
    fn bracket(&self) -> Option<(f64, f64, Option<f64>)>;
    /// Whether the machine stayed disturbed and ended the search.
    fn disturbed(&self) -> bool;
    /// How it ended, in a few words ("disturbed: steal 30 %").
    fn how(&self) -> String;
    /// Every figure finite and non-negative, and a found bracket not upside down; else the
    /// field at fault.
    fn check(&self) -> Result<(), String>;
}

/// No search offers a trillion requests (or users) a second: a figure at or above it in a
/// report is not one webscope wrote, and would print as a percentage hundreds of digits long.
const MOST: f64 = 1e12;

/// Defines the record of an ending in one unit: `$unit` is the keys' suffix.
macro_rules! ending_record {
    ($name:ident, $unsettled:ident, $doc:literal,
     capacity = $capacity:tt, fails_at = $fails_at:tt, above = $above:tt, at = $at:tt,
     rate = $rate:tt, pass = $pass:tt, fail = $fail:tt, from = $from:tt, to = $to:tt,
     passed = $passed:tt, first_miss = $first_miss:tt, lone = $lone:tt) => {
        #[doc = $doc]
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "kind", rename_all = "snake_case")]
        pub enum $name {
            /// A bracket closed by the search's own probes.
            Found {
                /// The capacity: the highest rate (or number of users) the probes passed (the range
                /// rule's L).
                #[serde(rename = $capacity)]
                capacity: f64,
                /// Where the probes failed (the range rule's U): the bracket's top.
                #[serde(rename = $fails_at)]
                fails_at: f64,
                // What the bracket rests on; a hand-made report may leave them out.
                /// Probes that passed at the capacity, of all probes there.
                #[serde(default)]
                passes: (u32, u32),
                /// Probes that failed at `fails_at`, of all probes there.
                #[serde(default)]
                fails: (u32, u32),
                /// Of those fails, the ones counted for undecided probes.
                #[serde(default)]
                unproven: u32,
                /// The rates between whose probes kept disagreeing (None: there were none).
                #[serde(default)]
                unsettled: Option<$unsettled>,
                /// The bracket's half-width in per cent of the capacity: 50 × (first miss, else
                /// `fails_at`, − capacity) / capacity (None in hand-made reports).
                #[serde(default)]
                bracket_pct: Option<f64>,
                /// The range rule's M (#48): the capacity's own bracket is [capacity,
                /// first_miss], and `fails_at` is where every probe failed.
                #[serde(rename = $first_miss, default, skip_serializing_if = "Option::is_none")]
                first_miss: Option<f64>,
                /// The range rule's lone misses below the capacity: one probe failed there
                /// and a second never did, and every probe at the capacity passed.
                #[serde(rename = $lone, default, skip_serializing_if = "Vec::is_empty")]
                lone_misses: Vec<f64>,
            },
            /// The generator fell behind.
            Generator {
                /// The highest rate that passed (None: none did): the capacity is above it.
                #[serde(rename = $above, default)]
                above: Option<f64>,
                /// Where the generator fell behind.
                #[serde(rename = $at, default)]
                at: f64,
            },
            /// The lowest rate tried failed.
            Below {
                /// The lowest rate (or number of users) tried.
                #[serde(rename = $rate)]
                rate: f64,
            },
            /// A probe that could not be judged (older reports).
            Undecided {
                /// Where the probe was.
                #[serde(rename = $at)]
                at: f64,
                /// Why it could not be judged.
                why: String,
            },
            /// The machine stayed disturbed; `passed`: what the search had passed before.
            Disturbed {
                /// Where no probe could run on a quiet machine.
                #[serde(rename = $at)]
                at: f64,
                /// What disturbed it ("steal 30 %").
                why: String,
                /// The highest rate the probes had passed before (None: none).
                #[serde(rename = $passed, default, skip_serializing_if = "Option::is_none")]
                passed: Option<f64>,
                /// Probes that passed there, of all probes there.
                #[serde(default, skip_serializing_if = "Option::is_none")]
                passes: Option<(u32, u32)>,
            },
            /// The probes ran out with the bracket open.
            OutOfProbes {
                /// The highest rate that passed (None: none did).
                #[serde(rename = $pass)]
                pass: Option<f64>,
                /// The lowest rate that failed (None: none did).
                #[serde(rename = $fail)]
                fail: Option<f64>,
            },
        }

        /// The rates of a found bracket whose probes kept disagreeing.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        pub struct $unsettled {
            /// The lowest of those rates.
            #[serde(rename = $from)]
            pub from: f64,
            /// The highest of them.
            #[serde(rename = $to)]
            pub to: f64,
            /// How many rates they are.
            pub rates: u32,
            /// Probes that passed at them.
            pub passes: u32,
            /// Probes at them in all.
            pub probes: u32,
        }

        impl From<&Ending> for $name {
            fn from(e: &Ending) -> $name {
                match e {
                    Ending::Found {
                        capacity,
                        passes,
                        fails_at,
                        fails,
                        unproven,
                        unsettled,
                        first_miss,
                        lone_misses,
                    } => $name::Found {
                        capacity: *capacity,
                        fails_at: *fails_at,
                        passes: *passes,
                        fails: *fails,
                        unproven: *unproven,
                        unsettled: unsettled.map(|u: Unsettled| $unsettled {
                            from: u.from,
                            to: u.to,
                            rates: u.rates,
                            passes: u.passes,
                            probes: u.probes,
                        }),
                        bracket_pct: e.bracket_pct(),
                        first_miss: *first_miss,
                        lone_misses: lone_misses.clone(),
                    },
                    Ending::GeneratorBound { above, at } => $name::Generator {
                        above: *above,
                        at: *at,
                    },
                    Ending::Below { rate } => $name::Below { rate: *rate },
                    Ending::Undecided { at, why } => $name::Undecided {
                        at: *at,
                        why: why.clone(),
                    },
                    Ending::Disturbed { at, why, passed } => $name::Disturbed {
                        at: *at,
                        why: why.clone(),
                        passed: passed.map(|p: Passed| p.rate),
                        passes: passed.map(|p| (p.passes, p.probes)),
                    },
                    Ending::OutOfProbes { pass, fail } => $name::OutOfProbes {
                        pass: *pass,
                        fail: *fail,
                    },
                }
            }
        }

        impl EndingRecord for $name {
            fn bracket(&self) -> Option<(f64, f64, Option<f64>)> {
                match self {
                    // A range's capacity is its lower edge L, bracketed by its first miss M.
                    $name::Found {
                        capacity,
                        fails_at,
                        first_miss,
                        ..
                    } => Some((*capacity, first_miss.unwrap_or(*fails_at), Some(*capacity))),
                    $name::Generator { above, .. } => {
                        Some((above.unwrap_or(0.0), f64::INFINITY, None))
                    }
                    $name::Below { rate } => Some((0.0, *rate, None)),
                    $name::OutOfProbes { pass, fail } => Some((
                        pass.unwrap_or(0.0),
                        fail.unwrap_or(f64::INFINITY),
                        None,
                    )),
                    // What a disturbed search passed is a floor; above it, nothing is known.
                    $name::Disturbed {
                        passed: Some(p), ..
                    } => Some((*p, f64::INFINITY, None)),
                    $name::Disturbed { .. } | $name::Undecided { .. } => None,
                }
            }

            fn disturbed(&self) -> bool {
                matches!(self, $name::Disturbed { .. })
            }

            fn how(&self) -> String {
                match self {
                    $name::Found { .. } => "found".into(),
                    $name::Generator { .. } => "generator-bound".into(),
                    $name::Below { .. } => "below the lowest rate".into(),
                    $name::OutOfProbes { .. } => "out of probes".into(),
                    $name::Undecided { why, .. } => format!("undecided: {why}"),
                    $name::Disturbed { why, .. } => format!("disturbed: {why}"),
                }
            }

            fn check(&self) -> Result<(), String> {
                let figure = |name: &str, v: f64| {
                    if (0.0..MOST).contains(&v) {
                        Ok(())
                    } else {
                        Err(format!("ending.{name} is {v}: a rate is at least 0 and below 1e12"))
                    }
                };
                match self {
                    $name::Found {
                        capacity,
                        fails_at,
                        first_miss,
                        lone_misses,
                        ..
                    } => {
                        figure($capacity, *capacity)?;
                        figure($fails_at, *fails_at)?;
                        if let Some(r) = lone_misses.iter().find(|&r| !(0.0..*capacity).contains(r)) {
                            return Err(format!(
                                "ending.{} has {r}, not below ending.{} ({capacity}): a lone miss lies below the capacity",
                                $lone, $capacity
                            ));
                        }
                        if let Some(m) = first_miss {
                            figure($first_miss, *m)?;
                            if m < capacity || m > fails_at {
                                return Err(format!(
                                    "ending.{} ({m}) is outside ending.{} .. ending.{} ({capacity} .. {fails_at}): the first miss lies between them",
                                    $first_miss, $capacity, $fails_at
                                ));
                            }
                        }
                        if capacity > fails_at {
                            return Err(format!(
                                "ending.{} ({capacity}) is above ending.{} ({fails_at}): a bracket upside down",
                                $capacity, $fails_at
                            ));
                        }
                        Ok(())
                    }
                    $name::Generator { above, at } => {
                        above.map_or(Ok(()), |a| figure($above, a))?;
                        figure($at, *at)
                    }
                    $name::Below { rate } => figure($rate, *rate),
                    $name::Undecided { at, .. } => figure($at, *at),
                    $name::Disturbed { at, passed, .. } => {
                        passed.map_or(Ok(()), |p| figure($passed, p))?;
                        figure($at, *at)
                    }
                    $name::OutOfProbes { pass, fail } => {
                        pass.map_or(Ok(()), |p| figure($pass, p))?;
                        fail.map_or(Ok(()), |f| figure($fail, f))?;
                        match (pass, fail) {
                            (Some(p), Some(f)) if p > f => Err(format!(
                                "ending.{} ({p}) is above ending.{} ({f}): a bracket upside down",
                                $pass, $fail
                            )),
                            _ => Ok(()),
                        }
                    }
                }
            }
        }
    };
}

ending_record!(
    RpsEnding,
    RpsUnsettled,
    "A capacity search's ending, its rates in req/s.",
    capacity = "capacity_rps",
    fails_at = "fails_at_rps",
    above = "above_rps",
    at = "at_rps",
    rate = "rate_rps",
    pass = "pass_rps",
    fail = "fail_rps",
    from = "from_rps",
    to = "to_rps",
    passed = "passed_rps",
    first_miss = "first_miss_rps",
    lone = "lone_misses_rps"
);

ending_record!(
    UsersEnding,
    UsersUnsettled,
    "A users search's ending, in users.",
    capacity = "capacity_users",
    fails_at = "fails_at_users",
    above = "above_users",
    at = "at_users",
    rate = "rate_users",
    pass = "pass_users",
    fail = "fail_users",
    from = "from_users",
    to = "to_users",
    passed = "passed_users",
    first_miss = "first_miss_users",
    lone = "lone_misses_users"
);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The record writes the keys report.json has always had, and reads them back.
    #[test]
    fn a_found_ending_round_trips_with_its_units_keys() {
        let e = Ending::Found {
            capacity: 41_800.0,
            passes: (3, 3),
            fails_at: 44_000.0,
            fails: (3, 3),
            unproven: 0,
            unsettled: None,
            first_miss: None,
            lone_misses: Vec::new(),
        };
        let written = serde_json::to_value(RpsEnding::from(&e)).unwrap();
        assert_eq!(
            written,
            json!({
                "kind": "found", "capacity_rps": 41_800.0, "fails_at_rps": 44_000.0,
                "passes": [3, 3], "fails": [3, 3], "unproven": 0, "unsettled": null,
                "bracket_pct": e.bracket_pct(),
            })
        );
        let users = serde_json::to_value(UsersEnding::from(&e)).unwrap();
        assert_eq!(users["capacity_users"], 41_800.0);
        let read: RpsEnding = serde_json::from_value(written).unwrap();
        assert_eq!(read.bracket(), Some((41_800.0, 44_000.0, Some(41_800.0))));
        assert_eq!(read.check(), Ok(()));
    }

    /// #52: a disturbed search's floor is an open bracket; without one, no bracket.
    #[test]
    fn a_disturbed_ending_keeps_its_floor() {
        let e = Ending::Disturbed {
            at: 16_000.0,
            why: "steal 30 %".into(),
            passed: Some(Passed {
                rate: 8_000.0,
                passes: 2,
                probes: 2,
            }),
        };
        let r = RpsEnding::from(&e);
        let written = serde_json::to_value(&r).unwrap();
        assert_eq!(written["passed_rps"], 8_000.0);
        assert_eq!(written["passes"], json!([2, 2]));
        assert_eq!(r.bracket(), Some((8_000.0, f64::INFINITY, None)));
        assert!(r.disturbed());
        // As stored before #52: no floor.
        let old: RpsEnding =
            serde_json::from_value(json!({"kind": "disturbed", "at_rps": 100.0, "why": "busy"}))
                .unwrap();
        assert_eq!(old.bracket(), None);
        assert_eq!(old.how(), "disturbed: busy");
    }

    /// #51: a tampered ending names its field.
    #[test]
    fn a_tampered_ending_names_the_field() {
        let upside_down: RpsEnding = serde_json::from_value(
            json!({"kind": "found", "capacity_rps": 16_500.0, "fails_at_rps": 10.0,
                   "passes": [1, 1], "fails": [1, 1], "unproven": 0, "unsettled": null,
                   "bracket_pct": 1.0}),
        )
        .unwrap();
        assert_eq!(
            upside_down.check(),
            Err("ending.capacity_rps (16500) is above ending.fails_at_rps (10): a bracket upside down".into())
        );
        let negative: RpsEnding =
            serde_json::from_value(json!({"kind": "below", "rate_rps": -5.0})).unwrap();
        assert_eq!(
            negative.check(),
            Err("ending.rate_rps is -5: a rate is at least 0 and below 1e12".into())
        );
        let lone_above: RpsEnding = serde_json::from_value(
            json!({"kind": "found", "capacity_rps": 9_000.0, "fails_at_rps": 12_000.0,
                   "first_miss_rps": 10_000.0, "lone_misses_rps": [6_200.0, 9_500.0]}),
        )
        .unwrap();
        assert_eq!(
            lone_above.check(),
            Err("ending.lone_misses_rps has 9500, not below ending.capacity_rps (9000): a lone miss lies below the capacity".into())
        );
    }

    /// A range's lone misses are written under the unit's key, and only when there are some.
    #[test]
    fn lone_misses_round_trip_and_are_left_out_when_none() {
        let mut e = Ending::Found {
            capacity: 24_800.0,
            passes: (3, 3),
            fails_at: 51_200.0,
            fails: (3, 3),
            unproven: 0,
            unsettled: None,
            first_miss: Some(26_000.0),
            lone_misses: vec![6_200.0],
        };
        let written = serde_json::to_value(RpsEnding::from(&e)).unwrap();
        assert_eq!(written["lone_misses_rps"], json!([6_200.0]));
        let read: RpsEnding = serde_json::from_value(written).unwrap();
        assert_eq!(read, RpsEnding::from(&e));
        assert_eq!(read.check(), Ok(()));
        if let Ending::Found { lone_misses, .. } = &mut e {
            lone_misses.clear();
        }
        let users = serde_json::to_value(UsersEnding::from(&e)).unwrap();
        assert!(users.get("lone_misses_users").is_none(), "{users}");
    }
}
