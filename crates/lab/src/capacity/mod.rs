//! The capacity experiment: how much traffic a server carries within a latency objective
//! (issue #25). [`search`] chooses the offered rates (grow, then bisect, with repeats at the
//! boundary); [`probe`] runs one rate (warm-up, the open-loop run, [`cooldown`]) and judges
//! it with the objective and the generator's health; [`experiment`] is the runner's adaptive
//! sweep that joins the two; [`compare`] sets two results side by side. The objective's
//! grammar and verdicts are `webscope_load::slo`'s; the page is `webscope_pages::capacity`.
//!
//! Not for: closed-loop sweeps (clients, saturation) nor drawing anything.

pub mod compare;
pub mod cooldown;
pub mod experiment;
pub mod kubernetes;
pub mod probe;
pub mod quiet;
pub mod said;
pub mod search;
pub mod segments;

use webscope_load::slo::Slo;
use webscope_load::Arrivals;

/// The objective when `--slo` is not given.
pub const DEFAULT_SLO: &str = "p99<=10ms,errors<=0.1%";
/// Goodput floor added to every objective without one: a server that answers fewer than 99 %
/// of the offered requests has not met it, whatever its latency.
pub const GOODPUT_FLOOR: f64 = 0.99;
/// The first rate offered without `--from`, requests per second.
pub const DEFAULT_FROM: f64 = 100.0;
/// The bracket's width at which the search stops without `--precision`.
pub const DEFAULT_PRECISION: f64 = 0.05;

/// What `--slo`, `--from`, `--precision` and `--arrivals` asked of the capacity experiment.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The objective each probe is judged on (the goodput floor already added).
    pub slo: Slo,
    /// The first rate offered, requests per second.
    pub from: f64,
    /// The bracket closes when (fail − pass) / pass is at most this.
    pub precision: f64,
    /// `--arrivals`: constant or Poisson spacing of the probes' requests.
    pub arrivals: Arrivals,
    /// How a rate's probes decide it: the range (L and U, #48) unless `--majority`.
    pub rule: search::Rule,
    /// `--segments`: generators (load processes) each probe is split across; 1 runs the
    /// probe in the lab's own generator.
    pub segments: usize,
    /// `--kubernetes IMAGE`: the segments are a Kubernetes Job's pods.
    pub kubernetes: Option<kubernetes::Pods>,
}

impl Settings {
    /// Settings from the flags' texts; an error names the bad part.
    pub fn new(
        slo: &str,
        from: Option<f64>,
        precision: Option<f64>,
        arrivals: Arrivals,
    ) -> Result<Settings, String> {
        let slo = Slo::parse(slo)
            .map_err(|why| format!("--slo: {why}"))?
            .with_goodput_floor(GOODPUT_FLOOR);
        let from = from.unwrap_or(DEFAULT_FROM);
        if !(from.is_finite() && from >= 1.0) {
            return Err(format!("--from {from}: give a rate of at least 1 req/s"));
        }
        let precision = precision.unwrap_or(DEFAULT_PRECISION);
        if !(precision.is_finite() && precision > 0.0 && precision < 1.0) {
            return Err(format!(
                "--precision {precision}: give a share above 0 and below 1 (e.g. 0.05 for 5 %)"
            ));
        }
        Ok(Settings {
            slo,
            from,
            precision,
            arrivals,
            rule: search::Rule::Range,
            segments: 1,
            kubernetes: None,
        })
    }
}

impl Default for Settings {
    fn default() -> Settings {
        let slo = Slo::parse(DEFAULT_SLO).unwrap_or(Slo {
            conditions: Vec::new(),
        });
        Settings {
            slo: slo.with_goodput_floor(GOODPUT_FLOOR),
            from: DEFAULT_FROM,
            precision: DEFAULT_PRECISION,
            arrivals: Arrivals::Constant,
            rule: search::Rule::Range,
            segments: 1,
            kubernetes: None,
        }
    }
}
