//! Service-level objectives: absolute conditions on one run, such as `p99<=5ms,errors<=0.1%`.
//! One grammar for every place that judges a run against limits: the capacity search (a probe
//! passes when every condition holds) and `load --threshold` (k6's convention: a run that
//! breaks a threshold exits with its own code).
//!
//! Not for: relative changes between two runs (`webscope compare --threshold 'p99<+5%'` judges
//! those, with significance), nor for computing the figures: the caller measures and hands
//! them over as [`Measured`], and a condition whose figure was not measured is undecided, never
//! passed.

use std::fmt;

use crate::outcome::Expect;

/// The class a users run's page loads go by (`page_p95<=1s` is `p95[page]<=1s`): the tag of
/// their histograms in the interval log.
pub const PAGE: &str = "page";

/// A list of conditions, all of which must hold.
#[derive(Debug, Clone, PartialEq)]
pub struct Slo {
    /// In the order given.
    pub conditions: Vec<Condition>,
}

/// One condition: a metric, a direction and a limit.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    /// What is judged.
    pub metric: Metric,
    /// A latency condition on one class of requests only (`p99[0-1KB]<=5ms`: the file set's
    /// size class, or a load group): None for the whole run.
    pub class: Option<String>,
    /// `<` / `>` when true, `<=` / `>=` when false.
    pub strict: bool,
    /// Microseconds for a latency, a fraction (0..=1) for a share.
    pub limit: f64,
}

/// What a condition is on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Metric {
    /// A latency quantile (0 < q < 1) from the corrected histogram, or the largest (q = 1).
    Latency {
        /// 0.99 for p99; 1.0 for max.
        quantile: f64,
    },
    /// Errors (failures and unexpected statuses) over requests that ended: a ceiling
    /// ([`Outcomes::error_share`](crate::Outcomes::error_share)).
    Errors,
    /// Expected responses over requests that ended: a floor ([`Outcomes::goodput_share`](crate::Outcomes::goodput_share)).
    Goodput,
    /// The server's CPU use over the CPUs it may use: a ceiling.
    Cpu,
    /// Open loop: requests never sent (no connection free in time) over requests due: a
    /// ceiling ([`Outcomes::not_sent_share`](crate::Outcomes::not_sent_share)).
    NotSent,
    /// Open loop: requests sent more than 1 ms after their slot over requests sent: a ceiling
    /// (a late generator measures itself, not the server; [`Outcomes::late_share`](crate::Outcomes::late_share)).
    Late,
}

/// The figures of one run that conditions are judged on. `None`: not measured in this run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Measured {
    /// Latency in microseconds at the quantiles [`Slo::quantiles`] asked for: (q, µs).
    pub latency_us: Vec<(f64, f64)>,
    /// [`Outcomes::error_share`](crate::Outcomes::error_share).
    pub error_share: Option<f64>,
    /// [`Outcomes::goodput_share`](crate::Outcomes::goodput_share).
    pub goodput_share: Option<f64>,
    /// The server's CPU use over the CPUs it may use.
    pub cpu_share: Option<f64>,
    /// [`Outcomes::not_sent_share`](crate::Outcomes::not_sent_share).
    pub not_sent_share: Option<f64>,
    /// [`Outcomes::late_share`](crate::Outcomes::late_share).
    pub late_share: Option<f64>,
    /// Confidence intervals of the figures, where the caller computed them (the capacity
    /// search's judge does; `load --threshold` judges the figures themselves): a condition
    /// whose figure has one passes only when all of it meets the limit, fails only when none
    /// of it does, and is undecided when it straddles the limit. The class is a per-class
    /// condition's.
    pub intervals: Vec<(Metric, Option<String>, Range)>,
    /// Latency of one class in microseconds at the (class, quantile) pairs
    /// [`Slo::class_quantiles`] asked for: (class, q, µs).
    pub class_latency_us: Vec<(String, f64, f64)>,
}

/// A confidence interval of a figure, in its condition's unit; ±∞ on a side the data do not
/// bound.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Range {
    /// The lowest value the true figure may have.
    pub low: f64,
    /// The highest.
    pub high: f64,
}

/// A condition judged on one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// The condition.
    pub condition: Condition,
    /// The figure it was judged on, in the condition's unit (µs or a fraction).
    pub measured: Option<f64>,
    /// Its confidence interval, when the judge had one.
    pub interval: Option<Range>,
    /// Whether it held.
    pub verdict: Verdict,
}

/// Whether a condition (or a run) met its objective; on disk `pass`, `fail`, `undecided`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Measured, and within the limit.
    Pass,
    /// Measured, and past the limit.
    Fail,
    /// The figure was not measured in this run: not a pass.
    Undecided,
}

impl Measured {
    /// The figures a load run measured itself, for the latency `quantiles` asked, its outcomes
    /// judged on `expect` (one account: [`crate::Outcomes`]). The server's CPU is not a load run's
    /// figure (None).
    pub fn of_load(report: &crate::Report, quantiles: &[f64], expect: &Expect) -> Measured {
        let outcomes = report.outcomes();
        Measured {
            latency_us: quantiles
                .iter()
                .filter_map(|&q| Some((q, report.latency_at(q)?)))
                .collect(),
            error_share: outcomes.error_share(expect),
            goodput_share: outcomes.goodput_share(expect),
            cpu_share: None,
            not_sent_share: outcomes.not_sent_share(),
            late_share: outcomes.late_share(),
            intervals: Vec::new(),
            class_latency_us: Vec::new(),
        }
    }
}

impl Measured {
    /// The figures `slo` judges, of the load run `report`: [`Measured::of_load`] for the
    /// whole run, and each class's latency at the percentiles its conditions ask, from the
    /// report's per-class figures (p50, p90, p99, p99.9, max; a caller with the class's
    /// histogram fills the others).
    pub fn of_run(report: &crate::Report, slo: &Slo, expect: &Expect) -> Measured {
        let mut m = Measured::of_load(report, &slo.quantiles(), expect);
        m.class_latency_us = slo
            .class_quantiles()
            .into_iter()
            .filter_map(|(class, q)| {
                let us = match (&report.users, class.as_str()) {
                    (Some(users), PAGE) if (q - 0.95).abs() < 1e-9 => users
                        .page_load_us
                        .count
                        .gt(&0)
                        .then_some(users.page_load_p95_us)?,
                    (Some(users), PAGE) => crate::report::Latency::at(&users.page_load_us, q)?,
                    _ => {
                        let c = report.classes.iter().find(|c| c.name == class)?;
                        crate::report::Latency::at(&c.figures.latency_us, q)?
                    }
                };
                Some((class, q, us))
            })
            .collect();
        m
    }
}

impl Check {
    /// One line for people: `p99<=5ms: 4.90ms, passed`, or with its interval
    /// `p99<=5ms: 4.90ms (3.10ms .. 6.80ms), cannot be decided`.
    pub fn line(&self) -> String {
        let measured = self
            .measured
            .map_or("not measured in this run".to_string(), |v| {
                self.condition.show(v)
            });
        let measured = match (self.measured, self.interval) {
            (Some(_), Some(r)) => {
                let side = |x: f64| {
                    if x.is_finite() {
                        self.condition.show(x)
                    } else {
                        "?".to_string()
                    }
                };
                format!("{measured} ({} .. {})", side(r.low), side(r.high))
            }
            _ => measured,
        };
        let verdict = match self.verdict {
            Verdict::Pass => "passed",
            Verdict::Fail => "FAILED",
            Verdict::Undecided => "cannot be decided",
        };
        format!("{}: {measured}, {verdict}", self.condition)
    }
}

const EXAMPLE: &str = "e.g. p99<=5ms,errors<=0.1%,goodput>=99%";

impl Slo {
    /// Parses `p99<=5ms,errors<=0.1%`; an error names the bad part and shows the grammar.
    pub fn parse(text: &str) -> Result<Slo, String> {
        let parts: Vec<&str> = text.split(',').map(str::trim).collect();
        if parts.iter().all(|p| p.is_empty()) {
            return Err(format!(
                "the objective is empty: give conditions, {EXAMPLE}"
            ));
        }
        let conditions = parts
            .iter()
            .map(|part| Condition::parse(part))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Slo { conditions })
    }

    /// With `goodput>=SHARE` added unless a goodput condition is there: a server that answers
    /// fewer requests than were offered has not met an objective, whatever its latency.
    pub fn with_goodput_floor(mut self, share: f64) -> Slo {
        if !self.conditions.iter().any(|c| c.metric == Metric::Goodput) {
            self.conditions.push(Condition {
                metric: Metric::Goodput,
                class: None,
                strict: false,
                limit: share,
            });
        }
        self
    }

    /// The latency quantiles the whole run's conditions need (1.0 for the largest).
    pub fn quantiles(&self) -> Vec<f64> {
        let mut qs: Vec<f64> = Vec::new();
        for c in self.conditions.iter().filter(|c| c.class.is_none()) {
            if let Metric::Latency { quantile } = c.metric {
                if !qs.contains(&quantile) {
                    qs.push(quantile);
                }
            }
        }
        qs
    }

    /// The (class, quantile) pairs the conditions on one class need.
    pub fn class_quantiles(&self) -> Vec<(String, f64)> {
        let mut out: Vec<(String, f64)> = Vec::new();
        for c in &self.conditions {
            if let (Metric::Latency { quantile }, Some(class)) = (c.metric, &c.class) {
                if !out.iter().any(|(k, q)| k == class && *q == quantile) {
                    out.push((class.clone(), quantile));
                }
            }
        }
        out
    }

    /// Every condition judged on `figures`.
    pub fn judge(&self, figures: &Measured) -> Vec<Check> {
        self.conditions.iter().map(|c| c.judge(figures)).collect()
    }

    /// Pass only when every condition passed; Fail when one failed; else Undecided.
    pub fn verdict(checks: &[Check]) -> Verdict {
        if checks.iter().any(|c| c.verdict == Verdict::Fail) {
            Verdict::Fail
        } else if checks.iter().all(|c| c.verdict == Verdict::Pass) {
            Verdict::Pass
        } else {
            Verdict::Undecided
        }
    }
}

impl fmt::Display for Slo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.conditions.iter().map(|c| c.to_string()).collect();
        f.write_str(&parts.join(","))
    }
}

impl std::str::FromStr for Slo {
    type Err = String;
    fn from_str(text: &str) -> Result<Slo, String> {
        Slo::parse(text)
    }
}

/// Stored as `--slo` writes it (`"p99<=5ms,errors<=0.1%"`), read back through
/// [`Slo::parse`]: a file's objective is parsed once, where it is read, and a bad one is an
/// error there rather than a quiet default at each use.
impl serde::Serialize for Slo {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Slo {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Slo, D::Error> {
        let text = String::deserialize(d)?;
        Slo::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl Condition {
    fn parse(part: &str) -> Result<Condition, String> {
        if part.is_empty() {
            return Err(format!("an empty condition between commas: {EXAMPLE}"));
        }
        let Some(at) = part.find(['<', '>']) else {
            return Err(format!(
                "{part:?} has no comparison: write METRIC<=LIMIT or METRIC>=LIMIT, {EXAMPLE}"
            ));
        };
        let (name, rest) = part.split_at(at);
        let below = rest.starts_with('<');
        let (strict, value) = match rest[1..].strip_prefix('=') {
            Some(value) => (false, value),
            None => (true, &rest[1..]),
        };
        let (name, class) = split_class(name.trim()).map_err(|why| format!("{part:?}: {why}"))?;
        // `page_p95`: a users run's page loads (`p95[page]`, the class of its interval log).
        let (name, class) = match (name.strip_prefix("page_"), class) {
            (Some(metric), None) => (metric, Some(PAGE.to_string())),
            (_, class) => (name, class),
        };
        let metric = Metric::parse(name).map_err(|why| format!("{part:?}: {why}"))?;
        if class.is_some() && !matches!(metric, Metric::Latency { .. }) {
            return Err(format!(
                "{part:?}: only a latency percentile is judged on one class (p99[0-1KB]<=5ms)"
            ));
        }
        if metric.is_floor() == below {
            let (want, other) = if metric.is_floor() {
                (">=", "a floor")
            } else {
                ("<=", "a ceiling")
            };
            return Err(format!(
                "{part:?}: {name} is {other}: write {name}{want}{}",
                value.trim()
            ));
        }
        let limit = metric
            .parse_limit(value.trim())
            .map_err(|why| format!("{part:?}: {why}"))?;
        Ok(Condition {
            metric,
            class,
            strict,
            limit,
        })
    }

    fn judge(&self, figures: &Measured) -> Check {
        let measured = match (self.metric, &self.class) {
            (Metric::Latency { quantile }, Some(class)) => figures
                .class_latency_us
                .iter()
                .find(|(k, q, _)| k == class && *q == quantile)
                .map(|&(_, _, us)| us),
            (metric, _) => self.whole(metric, figures),
        };
        let interval = figures
            .intervals
            .iter()
            .find(|(m, k, _)| *m == self.metric && *k == self.class)
            .map(|&(_, _, r)| r)
            .filter(|_| measured.is_some());
        self.decided(measured, interval)
    }

    /// The whole run's figure of `metric`.
    fn whole(&self, metric: Metric, figures: &Measured) -> Option<f64> {
        match metric {
            Metric::Latency { quantile } => figures
                .latency_us
                .iter()
                .find(|(q, _)| *q == quantile)
                .map(|&(_, us)| us),
            Metric::Errors => figures.error_share,
            Metric::Goodput => figures.goodput_share,
            Metric::Cpu => figures.cpu_share,
            Metric::NotSent => figures.not_sent_share,
            Metric::Late => figures.late_share,
        }
    }

    /// The check of `measured` (with its interval, when there is one).
    fn decided(&self, measured: Option<f64>, interval: Option<Range>) -> Check {
        let verdict = match (measured, interval) {
            (None, _) => Verdict::Undecided,
            (Some(v), _) if v.is_nan() => Verdict::Undecided,
            (Some(_), Some(r)) if r.low.is_nan() || r.high.is_nan() => Verdict::Undecided,
            (Some(_), Some(r)) => match (self.holds(r.low), self.holds(r.high)) {
                (true, true) => Verdict::Pass,
                (false, false) => Verdict::Fail,
                _ => Verdict::Undecided,
            },
            (Some(v), None) => {
                if self.holds(v) {
                    Verdict::Pass
                } else {
                    Verdict::Fail
                }
            }
        };
        Check {
            condition: self.clone(),
            measured,
            interval,
            verdict,
        }
    }

    /// Whether the figure `v` meets the limit.
    fn holds(&self, v: f64) -> bool {
        match (self.metric.is_floor(), self.strict) {
            (true, true) => v > self.limit,
            (true, false) => v >= self.limit,
            (false, true) => v < self.limit,
            (false, false) => v <= self.limit,
        }
    }

    /// The limit or a measured figure in the condition's unit, for people: `5 ms`, `0.1 %`.
    pub fn show(&self, value: f64) -> String {
        match self.metric {
            Metric::Latency { .. } => crate::format_us(value),
            _ => webscope_report::human::pct(value),
        }
    }
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = match (self.metric.is_floor(), self.strict) {
            (true, true) => ">",
            (true, false) => ">=",
            (false, true) => "<",
            (false, false) => "<=",
        };
        let limit = match self.metric {
            Metric::Latency { .. } if self.limit >= 1e6 => {
                format!("{}s", trim_float(self.limit / 1e6))
            }
            Metric::Latency { .. } if self.limit >= 1000.0 => {
                format!("{}ms", trim_float(self.limit / 1000.0))
            }
            Metric::Latency { .. } => format!("{}us", trim_float(self.limit)),
            _ => format!("{}%", trim_float(self.limit * 100.0)),
        };
        match &self.class {
            Some(class) if class == PAGE => write!(f, "page_{}{op}{limit}", self.metric),
            Some(class) => write!(f, "{}[{class}]{op}{limit}", self.metric),
            None => write!(f, "{}{op}{limit}", self.metric),
        }
    }
}

impl Metric {
    fn parse(name: &str) -> Result<Metric, String> {
        match name {
            "errors" => return Ok(Metric::Errors),
            "goodput" => return Ok(Metric::Goodput),
            "cpu" => return Ok(Metric::Cpu),
            "late" => return Ok(Metric::Late),
            "not_sent" => return Ok(Metric::NotSent),
            "max" => return Ok(Metric::Latency { quantile: 1.0 }),
            // The load report's own names for 99.9 and 99.99.
            "p999" => return Ok(Metric::Latency { quantile: 0.999 }),
            "p9999" => return Ok(Metric::Latency { quantile: 0.9999 }),
            _ => {}
        }
        let known =
            "known: p50 .. p99.99 (any percentile), max, errors, goodput, cpu, not_sent, late";
        let Some(digits) = name.strip_prefix('p') else {
            return Err(format!("unknown metric {name:?} ({known})"));
        };
        match digits.parse::<f64>() {
            Ok(pct) if pct > 0.0 && pct < 100.0 && !digits.starts_with(['+', '-']) => {
                // Rounded to 1e-6 so that p99.9 is the same 0.999 as the report's p999.
                Ok(Metric::Latency {
                    quantile: (pct * 10_000.0).round() / 1_000_000.0,
                })
            }
            Ok(_) => Err(format!(
                "{name:?} is not a percentile: give one above 0 and below 100 (p99, p99.9), or max"
            )),
            Err(_) => Err(format!("unknown metric {name:?} ({known})")),
        }
    }

    /// Goodput is a floor; the others are ceilings.
    fn is_floor(self) -> bool {
        self == Metric::Goodput
    }

    fn parse_limit(self, value: &str) -> Result<f64, String> {
        if value.is_empty() {
            return Err("no limit after the comparison".into());
        }
        let split = value
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(value.len());
        let (number, unit) = value.split_at(split);
        let n: f64 = number
            .parse()
            .ok()
            .filter(|n: &f64| n.is_finite())
            .ok_or_else(|| format!("{value:?} is not a number with a unit"))?;
        match self {
            // The one grammar of lengths (`webscope_sys::duration`), but with its unit: a
            // bare `p99<10` could be read as seconds or as milliseconds, so it is asked for.
            Metric::Latency { .. } if unit.trim().is_empty() => Err(format!(
                "{value:?} has no unit: write {number}ms (or us, s)"
            )),
            Metric::Latency { .. } => webscope_sys::duration::parse(value)
                .map(|limit| limit.as_nanos() as f64 / 1e3)
                .map_err(|e| e.to_string()),
            _ => match unit.trim() {
                "%" if n <= 100.0 => Ok(n / 100.0),
                "%" => Err(format!("{value:?} is more than 100 %")),
                "" => Err(format!("{value:?} has no unit: write {number}%")),
                other => Err(format!(
                    "{other:?} is not a share: write a per cent, e.g. {number}%"
                )),
            },
        }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Metric::Latency { quantile } => f.write_str(&quantile_name(*quantile)),
            Metric::Errors => f.write_str("errors"),
            Metric::Goodput => f.write_str("goodput"),
            Metric::Cpu => f.write_str("cpu"),
            Metric::NotSent => f.write_str("not_sent"),
            Metric::Late => f.write_str("late"),
        }
    }
}

/// The one rule for a quantile's name, as people write it and as `--slo` reads it back:
/// `p50`, `p99`, `p99.9` (never report.json's key `p999`), `p99.99`; `max` for 1.
pub fn quantile_name(q: f64) -> String {
    if q >= 1.0 {
        "max".into()
    } else {
        format!("p{}", trim_float(q * 100.0))
    }
}

/// `p99[0-1KB]` → (`p99`, Some(`0-1KB`)); a name without brackets is the whole run's.
fn split_class(name: &str) -> Result<(&str, Option<String>), String> {
    let Some(open) = name.find('[') else {
        return Ok((name, None));
    };
    let class = name[open + 1..]
        .strip_suffix(']')
        .map(str::trim)
        .filter(|c| !c.is_empty() && !c.contains(['[', ']']))
        .ok_or_else(|| {
            format!("{name:?}: a class goes in brackets after the percentile, e.g. p99[0-1KB]")
        })?;
    Ok((name[..open].trim(), Some(class.to_string())))
}

/// A float without trailing zeros: 99.9, 5, 0.1 (rounded to 6 decimals first, so that
/// 0.999 × 100 prints as 99.9).
fn trim_float(x: f64) -> String {
    let s = format!("{:.6}", x);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

#[cfg(test)]
mod tests;
