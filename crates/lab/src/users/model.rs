//! The users search's model: each step's figures for the interactive system (throughput X
//! of page views, mean page load R, the think time Z the users kept, the response time law
//! R = N/X − Z, the server's CPU per page view D), and MVA's prediction of the capacity in
//! users from them (webscope-model's exact MVA over a closed network: the users' think time
//! as a delay, the page view's time outside the server's CPU as a second delay, the server's
//! CPUs as one queue).
//!
//! Where the two part: MVA gives mean response times, and the objective is on a percentile;
//! the model's percentile is the mean times −ln(1 − q), a response time exponential as
//! M/M/1's (3.0 for a p95). Below the knee the page load is mostly the time outside the CPU
//! (round trips, the objects fetched after the page), which the delay carries; past it the
//! queue does, and a server whose demand grows with its load (contention, a generator that
//! falls behind) bends the measured curve away from MVA's.

use serde::{Deserialize, Serialize};
use webscope_load::slo::{Metric, Slo, PAGE};
use webscope_model::mva::{self, Options as MvaOptions};
use webscope_model::Network;

use crate::capacity::search::Ending;
use crate::results::handshakes::Handshakes;
use webscope_record::RunRecord;

/// The model's curve goes no further than this many users.
const MOST_USERS: f64 = 200_000.0;
/// Points of the model's curve kept for the page.
const CURVE_POINTS: usize = 400;

/// One step's figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StepFigures {
    /// Users the step ran (N).
    pub users: usize,
    /// Page views per second (X).
    pub page_views_per_s: f64,
    /// Mean and 95th percentile page load, seconds.
    pub page_load_mean_s: f64,
    /// 95th-percentile page load, seconds.
    pub page_load_p95_s: f64,
    /// The mean think time kept (Z), seconds.
    pub think_s: f64,
    /// Think times kept: the weight of this step's `think_s` in MVA's Z (labs before issue
    /// 52: 0, every step weighed alike).
    pub thinks: u64,
    /// N/X − Z, seconds.
    pub law_response_s: f64,
    /// The server's CPU seconds per page view (D = U/X), when the server's CPU was measured.
    pub demand_s: Option<f64>,
    /// CPUs the server may use.
    pub server_cpus: Option<f64>,
    /// The server's CPU use over the step, in cores (U).
    pub server_busy: Option<f64>,
    /// Over TLS (HTTPS, HTTP/2, HTTP/3): the users' handshakes, one per connection they
    /// opened (labs before: none kept).
    pub handshakes: Option<Handshakes>,
}

impl StepFigures {
    /// The figures of a users run `record` of `users` users.
    pub fn of(record: &RunRecord, users: usize) -> StepFigures {
        let Some(u) = &record.load.users else {
            return StepFigures {
                users,
                ..StepFigures::default()
            };
        };
        let demand_s = record
            .server
            .as_ref()
            .filter(|s| s.cpu_s > 0.0 && u.page_views > 0)
            .map(|s| s.cpu_s / u.page_views as f64);
        StepFigures {
            users,
            page_views_per_s: u.page_views_per_s,
            page_load_mean_s: u.page_load_us.mean / 1e6,
            page_load_p95_s: u.page_load_p95_us / 1e6,
            think_s: u.think_us.mean / 1e6,
            thinks: u.think_us.count,
            law_response_s: u.law_response_s,
            demand_s,
            server_cpus: record.env.server_cpus,
            server_busy: record.server.as_ref().map(|s| s.busy_cores),
            handshakes: Handshakes::of(&record.load),
        }
    }
}

/// MVA's prediction from the steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    /// The inputs: D ([`demand`]: the slope of the server's CPU use over the page views per
    /// second across three steps or more, or one step's U/X, said in `demand_from`), Z (the
    /// mean of every think time the steps kept: MVA's Z is a mean), the time of a page view
    /// outside the server's CPU (the lightest step's page load less D), the CPUs.
    pub demand_s: f64,
    /// How D was had, in words for the page, with its caveat (labs before issue 52: empty).
    #[serde(default)]
    pub demand_from: String,
    /// Z: the mean think time, seconds.
    pub think_s: f64,
    /// A page view's time outside the server's CPU, seconds.
    pub outside_s: f64,
    /// The server's CPUs: the model's servers.
    pub servers: u32,
    /// The largest N whose predicted percentile meets the objective's page limit.
    pub capacity_users: Option<u32>,
    /// The percentile's multiple of the mean (−ln(1 − q)) and its limit, seconds.
    pub quantile: f64,
    /// The objective's page-load limit, seconds.
    pub limit_s: f64,
    /// (N, X, mean R) along the curve.
    pub curve: Vec<(u32, f64, f64)>,
}

/// The objective's page-load condition: its quantile and limit in seconds.
pub fn page_limit(slo: &Slo) -> Option<(f64, f64)> {
    slo.conditions.iter().find_map(|c| match c.metric {
        Metric::Latency { quantile } if c.class.as_deref() == Some(PAGE) && quantile < 1.0 => {
            Some((quantile, c.limit / 1e6))
        }
        _ => None,
    })
}

/// MVA over 1 ..= `most` users (at least three times the knee) from the steps' figures, against the objective's page limit;
/// None when no step measured the server's CPU (a `--target` without its process) or the
/// objective has no page percentile.
pub fn predict(steps: &[StepFigures], slo: &Slo, most: u32) -> Option<Prediction> {
    let (quantile, limit_s) = page_limit(slo)?;
    let (demand_s, demand_from) = demand(steps)?;
    let think_s = mean_think(steps)?;
    let lightest = steps
        .iter()
        .filter(|s| s.page_load_mean_s > 0.0)
        .min_by_key(|s| s.users)?;
    let outside_s = (lightest.page_load_mean_s - demand_s).max(0.0);
    let servers = steps
        .iter()
        .find_map(|s| s.server_cpus)
        .map_or(1, |c| c.round().max(1.0) as u32);
    let network = Network::single_class(
        "page views",
        1,
        think_s,
        &[
            ("outside the server", 0, outside_s),
            ("server CPU", servers, demand_s),
        ],
    )
    .ok()?;
    // Far enough past the knee, N* = (D + Z + outside)/D per CPU, that the objective's
    // crossing is on the curve.
    let knee = f64::from(servers) * (demand_s + think_s + outside_s) / demand_s.max(1e-9);
    let most = most.max((3.0 * knee).min(MOST_USERS) as u32).max(1);
    let ns: Vec<u32> = (1..=most).collect();
    let (_, points) = mva::curve(&network, &ns, &MvaOptions::default()).ok()?;
    let multiple = -(1.0 - quantile).ln();
    let capacity_users = points
        .iter()
        .filter(|p| p.response_time * multiple <= limit_s)
        .map(|p| p.population)
        .max();
    Some(Prediction {
        demand_s,
        demand_from,
        think_s,
        outside_s,
        servers,
        capacity_users,
        quantile: multiple,
        limit_s,
        // At most CURVE_POINTS of them on the page.
        curve: points
            .iter()
            .step_by(points.len().div_ceil(CURVE_POINTS).max(1))
            .map(|p| (p.population, p.throughput, p.response_time))
            .collect(),
    })
}

/// Z: the mean of the think times every step kept (each step's mean weighed by its count;
/// alike when the counts were not kept). Issue 52: the median of the steps' means was read
/// as Z, 9 s against a mean of 11.3 s.
fn mean_think(steps: &[StepFigures]) -> Option<f64> {
    let kept: Vec<&StepFigures> = steps
        .iter()
        .filter(|s| s.think_s.is_finite() && s.think_s > 0.0)
        .collect();
    let weight = |s: &StepFigures| match kept.iter().all(|s| s.thinks > 0) {
        true => s.thinks as f64,
        false => 1.0,
    };
    let total: f64 = kept.iter().map(|s| weight(s)).sum();
    (total > 0.0).then(|| kept.iter().map(|s| s.think_s * weight(s)).sum::<f64>() / total)
}

/// Fewest steps at different rates D is fitted over: two points always make a line.
const FIT_STEPS: usize = 3;
/// An intercept below minus this share of the mean U says the CPU per page view grew with
/// the load rather than that the server has idle work.
const NEGATIVE_IDLE: f64 = 0.1;

/// D and how it was had. Across `FIT_STEPS` (3) steps or more at different rates, the
/// least-squares slope of U over X (the service demand law U = U₀ + D·X: a server's idle
/// work, its timers and wake-ups, would otherwise load the lightest steps' U/X); when the
/// line's U₀ is well below zero, the CPU per page view grew with the load, a slope would
/// overstate it, and the busiest step's U/X is taken; with fewer steps, the busiest step's
/// U/X, said as one step's. Issue 52: "D = 6.58 ms" beside a table reading 0.80-1.25 ms.
pub fn demand(steps: &[StepFigures]) -> Option<(f64, String)> {
    let points: Vec<(f64, f64, usize)> = steps
        .iter()
        .filter_map(|s| Some((s.page_views_per_s, s.server_busy?, s.users)))
        .filter(|(x, u, _)| *x > 0.0 && u.is_finite() && *u >= 0.0)
        .collect();
    let (x_b, u_b, n_b) = points.iter().copied().max_by(|a, b| a.0.total_cmp(&b.0))?;
    let busiest = u_b / x_b;
    let per_step = |d: f64| format!("{} ms", webscope_report::human::sig3(d * 1e3));
    let range = {
        let ds = points.iter().map(|p| p.1 / p.0);
        let lo = ds.clone().fold(f64::INFINITY, f64::min);
        let hi = ds.fold(0.0, f64::max);
        format!(
            "{}-{}",
            webscope_report::human::sig3(lo * 1e3),
            per_step(hi)
        )
    };
    // Steps at different numbers of users: repeats of one N differ in X by noise alone.
    let mut loads: Vec<usize> = points.iter().map(|p| p.2).collect();
    loads.sort_unstable();
    loads.dedup();
    if loads.len() < FIT_STEPS {
        return (busiest > 0.0).then(|| {
            (
                busiest,
                format!(
                    "D is one step's U/X (the busiest, {n_b} users): with steps at fewer than {FIT_STEPS} numbers of users no slope is fitted, and one step's U/X carries the idle server's work, so it may overstate D, the more the lighter the step"
                ),
            )
        });
    }
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mu = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxu: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - mu)).sum();
    let slope = sxu / sxx;
    let idle = mu - slope * mx;
    if slope > 0.0 && idle >= -NEGATIVE_IDLE * mu {
        return Some((
            slope,
            format!(
                "D is the slope of the server's CPU over page views per second across {} steps (U = U₀ + D·X, U₀ = {} of a CPU of idle work); the table's D column is each step's U/X ({range}), which carries its share of U₀",
                points.len(),
                webscope_report::human::sig3(idle.max(0.0)),
            ),
        ));
    }
    let why = if slope > 0.0 {
        format!(
            "the CPU per page view grew with the load (the table's U/X: {range}), and a line's slope across the steps ({}) would overstate it",
            per_step(slope)
        )
    } else {
        format!(
            "a line through the steps' U over X has no positive slope (the table's U/X: {range}; noise over too narrow a range of X), so no slope is taken"
        )
    };
    (busiest > 0.0).then(|| {
        (
            busiest,
            format!("D is the busiest step's U/X ({n_b} users): {why}"),
        )
    })
}

/// The search's ending in users, the users' think times said beside the first number of
/// users (issue 52: "capacity 80 users" without saying these users think for 10-600 ms).
pub fn ending_sentence(ending: &Ending, thinking: &str) -> String {
    let said = ending.sentence_in("users");
    // " users" or, of one, " user".
    let word_end = said
        .find(" user")
        .map(|at| at + 5 + usize::from(said[at + 5..].starts_with('s')));
    match word_end.filter(|_| !thinking.is_empty()) {
        Some(end) => format!("{} ({thinking}){}", &said[..end], &said[end..]),
        None => said,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(users: usize, demand: f64, think: f64, load: f64) -> StepFigures {
        let x = users as f64 / (think + load);
        StepFigures {
            users,
            page_views_per_s: x,
            page_load_mean_s: load,
            think_s: think,
            demand_s: Some(demand),
            server_cpus: Some(1.0),
            server_busy: Some(demand * x),
            ..StepFigures::default()
        }
    }

    #[test]
    fn d_is_the_slope_of_u_over_x_not_the_idle_servers_share() {
        // U = 0.02 + 0.001·X: a server that burns 2 % of a core idle. U/X at X = 10 is 3 ms,
        // the slope 1 ms.
        let at = |x: f64| StepFigures {
            users: x as usize,
            page_views_per_s: x,
            server_busy: Some(0.02 + 0.001 * x),
            demand_s: Some((0.02 + 0.001 * x) / x),
            ..StepFigures::default()
        };
        let (d, said) = demand(&[at(10.0), at(100.0), at(400.0)]).unwrap();
        assert!((d - 0.001).abs() < 1e-9, "{d}");
        assert!(said.starts_with("D is the slope of the server's CPU over page views per second across 3 steps (U = U₀ + D·X, U₀ = 0.0200 of a CPU"), "{said}");
        // One step, or two: the busiest's U/X, said as one step's.
        let (d, said) = demand(&[at(10.0)]).unwrap();
        assert!((d - 0.003).abs() < 1e-9);
        assert!(said.starts_with("D is one step's U/X"), "{said}");
        let (d, _) = demand(&[at(10.0), at(100.0)]).unwrap();
        assert!((d - 0.0012).abs() < 1e-9, "{d}");
        // Three steps at one N (a boundary confirmed) are one load, not a line.
        let one_n = |x| StepFigures { users: 4, ..at(x) };
        let (_, said) = demand(&[one_n(10.0), one_n(11.0), one_n(9.0)]).unwrap();
        assert!(said.starts_with("D is one step's U/X"), "{said}");
    }

    #[test]
    fn regression_52_a_demand_that_grows_with_the_load_is_not_fitted_past_every_step() {
        // U/X from 0.8 to 1.25 ms, X barely moving at the top: a line through them has a
        // slope of several ms and a negative U₀ (the 6.58 ms beside 0.80-1.25 ms).
        let at = |users, x: f64, d: f64| StepFigures {
            users,
            page_views_per_s: x,
            server_busy: Some(x * d),
            ..StepFigures::default()
        };
        let steps = [
            at(4, 40.0, 0.0008),
            at(8, 80.0, 0.0009),
            at(16, 90.0, 0.00125),
        ];
        let (d, said) = demand(&steps).unwrap();
        assert!((d - 0.00125).abs() < 1e-12, "{d}");
        assert!(said.contains("grew with the load"), "{said}");
        assert!(said.contains("0.800-1.25 ms"), "{said}");
        // A line falling with X: noise, no slope taken.
        let steps = [
            at(4, 40.0, 0.0012),
            at(8, 41.0, 0.0010),
            at(16, 42.0, 0.0008),
        ];
        let (d, said) = demand(&steps).unwrap();
        assert!((d - 0.0008).abs() < 1e-12, "{d}");
        assert!(said.contains("no positive slope"), "{said}");
    }

    #[test]
    fn z_is_the_mean_of_the_think_times_kept_not_a_median() {
        let at = |think_s, thinks| StepFigures {
            think_s,
            thinks,
            ..StepFigures::default()
        };
        // Three steps' means 9, 9 and 20 s: the median of them is 9; weighed by their
        // counts (10, 10, 30) the mean of every think time is 15.6 s.
        let z = mean_think(&[at(9.0, 10), at(9.0, 10), at(20.0, 30)]).unwrap();
        assert!((z - 15.6).abs() < 1e-9, "{z}");
        // Counts not kept (an older lab): the steps alike.
        let z = mean_think(&[at(9.0, 0), at(9.0, 0), at(21.0, 0)]).unwrap();
        assert!((z - 13.0).abs() < 1e-9, "{z}");
        assert_eq!(mean_think(&[]), None);
    }

    #[test]
    fn the_think_times_stand_beside_the_first_number_of_users() {
        let ending = Ending::Below { rate: 4.0 };
        let said = ending_sentence(
            &ending,
            "thinking 10 ms-600 ms, mean 26 ms: SURGE's at 1/100",
        );
        assert!(
            said.starts_with(
                "capacity is below 4 users (thinking 10 ms-600 ms, mean 26 ms: SURGE's at 1/100):"
            ),
            "{said}"
        );
        assert_eq!(ending_sentence(&ending, ""), ending.sentence_in("users"));
        // One user is one user, the thinking beside it all the same.
        assert_eq!(
            ending_sentence(&Ending::Below { rate: 1.0 }, "thinking 1 s"),
            "capacity is below 1 user (thinking 1 s): the objective failed with a single user"
        );
    }

    #[test]
    fn mva_puts_the_knee_where_the_bottleneck_saturates() {
        // D = 1 ms, Z = 99 ms, nothing outside: N* = (D + Z)/D = 100 users. The mean
        // response time stays near D below it and grows by D per user beyond.
        let steps = [step(4, 0.001, 0.099, 0.001), step(64, 0.001, 0.099, 0.002)];
        let slo = Slo::parse("page_p95<=30ms").unwrap();
        let p = predict(&steps, &slo, 400).unwrap();
        assert_eq!(
            (p.servers, p.quantile > 2.99 && p.quantile < 3.0),
            (1, true)
        );
        let at = |n: u32| *p.curve.iter().find(|c| c.0 >= n).unwrap();
        assert!(at(10).2 < 0.0012, "{:?}", at(10));
        // Well past the knee: X at 1/D, R = N·D − Z.
        let (_, x, r) = at(300);
        assert!((x - 1000.0).abs() < 1.0, "{x}");
        assert!((r - (0.3 - 0.099)).abs() < 0.002, "{r}");
        // p95 = 3 R ≤ 30 ms: the asymptote R = N·D − Z would allow 109 users, but near the
        // knee the queue is longer than the asymptote says. Exact MVA's recursion, written out
        // here (R(n) = D(1 + Q(n−1)), X = n/(Z + R), Q = X·R), gives the largest N.
        let (mut q, mut most) = (0.0, 0);
        for n in 1..400 {
            let r = 0.001 * (1.0 + q);
            q = f64::from(n) / (0.099 + r) * r;
            if -(0.05f64.ln()) * r <= 0.030 {
                most = n;
            }
        }
        assert_eq!(p.capacity_users, Some(most));
        assert!((100..109).contains(&most), "{most}");
        // No page condition: no prediction.
        assert!(predict(&steps, &Slo::parse("p99<=5ms").unwrap(), 400).is_none());
    }
}
