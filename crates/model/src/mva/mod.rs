//! Mean Value Analysis of closed networks: exact where exact is possible, Bard-Schweitzer
//! where the exact recursion would be too large or is not exact, and always saying which.
//!
//! [`sweep`] solves a network at several populations at once (exact MVA visits every
//! smaller population anyway, so a whole curve costs one solve at its largest point);
//! [`solve`] is the one-population case; [`plan`] says which method would run and why.

mod exact;
mod schweitzer;

use crate::network::StationKind;
use crate::{Error, Network};

/// Which solver to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Exact (load-dependent) MVA.
    Exact,
    /// Bard-Schweitzer approximate MVA.
    Schweitzer,
    /// Exact when it is exact for this network and small enough, else Schweitzer.
    Auto,
}

impl Method {
    /// The name used by `--method` and in output.
    pub fn name(self) -> &'static str {
        match self {
            Method::Exact => "exact",
            Method::Schweitzer => "schweitzer",
            Method::Auto => "auto",
        }
    }
}

impl std::str::FromStr for Method {
    type Err = Error;
    fn from_str(s: &str) -> Result<Method, Error> {
        match s {
            "exact" => Ok(Method::Exact),
            "schweitzer" => Ok(Method::Schweitzer),
            "auto" => Ok(Method::Auto),
            _ => Err(Error::invalid(format!(
                "unknown method '{s}': use exact, schweitzer or auto"
            ))),
        }
    }
}

/// How to solve.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// Solver choice.
    pub method: Method,
    /// Schweitzer stops when no queue length changed by more than this, relatively.
    pub tolerance: f64,
    /// Schweitzer gives up (with an error) after this many iterations.
    pub max_iterations: usize,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            method: Method::Auto,
            tolerance: 1e-10,
            max_iterations: 100_000,
        }
    }
}

/// `auto` runs exact MVA up to this many population vectors, Schweitzer beyond. 8·10⁶
/// (three classes of 200 with a 4-server station) took 0.66-0.74 s here in release builds
/// (`cargo bench -p webscope-model --bench mva`), on a shared two-core machine.
pub const AUTO_EXACT_VECTORS: f64 = 1e7;
/// `exact` refuses networks with more population vectors than this (over a minute of work).
pub const MAX_EXACT_VECTORS: f64 = 1e9;
/// Nor more level-buffer memory than this many floats (2 GiB).
const MAX_EXACT_FLOATS: f64 = 2.7e8;

/// Which method will run, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// [`Method::Exact`] or [`Method::Schweitzer`], never `Auto`.
    pub method: Method,
    /// One sentence for the output: why this method.
    pub reason: String,
}

/// One class's results.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassResult {
    /// Class name.
    pub name: String,
    /// Jobs of the class in this solution.
    pub population: u32,
    /// Think time (s), as in the model.
    pub think_time: f64,
    /// Completions per second (X).
    pub throughput: f64,
    /// Seconds from request to completion, think time excluded (R).
    pub response_time: f64,
}

/// One station's results, per class (in class order).
#[derive(Debug, Clone, PartialEq)]
pub struct StationResult {
    /// Station name.
    pub name: String,
    /// Queue (with its servers) or delay.
    pub kind: StationKind,
    /// X_r · D_r: the mean number of busy servers due to class r (at most the servers in
    /// total; the fraction of time busy for one server).
    pub utilization: Vec<f64>,
    /// Mean jobs of class r at the station, waiting or in service.
    pub queue_length: Vec<f64>,
    /// Seconds a class-r job spends at the station per job (all its visits).
    pub residence_time: Vec<f64>,
}

/// A solved network at one population.
#[derive(Debug, Clone, PartialEq)]
pub struct Solution {
    /// The method that produced it ([`Method::Exact`] or [`Method::Schweitzer`]).
    pub method: Method,
    /// Fixed-point iterations (Schweitzer); 0 for exact.
    pub iterations: usize,
    /// Per-class results, in class order.
    pub classes: Vec<ClassResult>,
    /// Per-station results, in station order.
    pub stations: Vec<StationResult>,
}

impl Solution {
    /// Completions per second of all classes together.
    pub fn total_throughput(&self) -> f64 {
        self.classes.iter().map(|c| c.throughput).sum()
    }

    /// Total busy servers at station `k` (all classes).
    pub fn station_utilization(&self, k: usize) -> f64 {
        self.stations[k].utilization.iter().sum()
    }

    /// Total mean jobs at station `k` (all classes).
    pub fn station_queue_length(&self, k: usize) -> f64 {
        self.stations[k].queue_length.iter().sum()
    }

    /// The results both solvers report, from what they compute: per class `throughput[r]`
    /// (X_r) and per station and class `residence[k * classes + r]` (R_kr); the rest follows
    /// by Little's law (Q_kr = X_r R_kr) and the utilization law (U_kr = X_r D_kr).
    fn assemble(
        method: Method,
        iterations: usize,
        network: &Network,
        populations: &[u32],
        throughput: &[f64],
        residence: &[f64],
    ) -> Solution {
        let rc = populations.len();
        let classes = network
            .classes()
            .iter()
            .enumerate()
            .map(|(r, c)| ClassResult {
                name: c.name.clone(),
                population: populations[r],
                think_time: c.think_time,
                throughput: throughput[r],
                response_time: (0..network.stations().len())
                    .map(|k| residence[k * rc + r])
                    .sum(),
            })
            .collect();
        let stations = network
            .stations()
            .iter()
            .enumerate()
            .map(|(k, st)| StationResult {
                name: st.name.clone(),
                kind: st.kind,
                utilization: (0..rc).map(|r| throughput[r] * st.demands[r]).collect(),
                queue_length: (0..rc)
                    .map(|r| throughput[r] * residence[k * rc + r])
                    .collect(),
                residence_time: (0..rc).map(|r| residence[k * rc + r]).collect(),
            })
            .collect();
        Solution {
            method,
            iterations,
            classes,
            stations,
        }
    }
}

/// Solutions at several populations, and which method made them.
#[derive(Debug, Clone, PartialEq)]
pub struct Solved {
    /// The method and why.
    pub plan: Plan,
    /// One solution per requested population, in the order asked.
    pub solutions: Vec<Solution>,
}

/// Which method `options` selects for these target populations, or why none can run.
pub fn plan(network: &Network, targets: &[Vec<u32>], options: &Options) -> Result<Plan, Error> {
    check_targets(network, targets)?;
    let blocker = network.stations().iter().find(|s| !s.exact_solvable());
    let max = max_population(network, targets);
    let vectors: f64 = max.iter().map(|&n| f64::from(n) + 1.0).product();
    let floats = exact::buffer_floats(network, &max);
    match options.method {
        Method::Exact => {
            if let Some(s) = blocker {
                return Err(Error::ExactNotApplicable(format!(
                    "station '{}' is a multi-server FCFS queue whose service time per visit differs by class: no exact product-form solution exists (BCMP); use --method schweitzer, or discipline = \"ps\" if it is a CPU, or give service_time and visits if the time per visit is the same",
                    s.name
                )));
            }
            if vectors > MAX_EXACT_VECTORS || floats > MAX_EXACT_FLOATS {
                return Err(Error::ExactNotApplicable(format!(
                    "exact MVA would visit {vectors:.2e} population vectors (limit {MAX_EXACT_VECTORS:.0e}): use --method schweitzer"
                )));
            }
            Ok(Plan {
                method: Method::Exact,
                reason: "exact MVA (load-dependent where multi-server)".into(),
            })
        }
        Method::Schweitzer => Ok(Plan {
            method: Method::Schweitzer,
            reason: format!(
                "Bard-Schweitzer approximate MVA (tolerance {:.0e})",
                options.tolerance
            ),
        }),
        Method::Auto => Ok(if let Some(s) = blocker {
            Plan {
                method: Method::Schweitzer,
                reason: format!(
                    "Bard-Schweitzer approximate MVA: station '{}' (multi-server FCFS, class-dependent service times) has no exact solution",
                    s.name
                ),
            }
        } else if vectors > AUTO_EXACT_VECTORS || floats > MAX_EXACT_FLOATS {
            Plan {
                method: Method::Schweitzer,
                reason: format!(
                    "Bard-Schweitzer approximate MVA: exact would visit {vectors:.1e} population vectors (auto's limit {AUTO_EXACT_VECTORS:.0e})"
                ),
            }
        } else {
            Plan {
                method: Method::Exact,
                reason: "exact MVA (load-dependent where multi-server)".into(),
            }
        }),
    }
}

/// Solves the network at each target population (one population per class, each ≥ 1).
pub fn sweep(network: &Network, targets: &[Vec<u32>], options: &Options) -> Result<Solved, Error> {
    if !(options.tolerance > 0.0 && options.tolerance < 1.0) {
        return Err(Error::invalid(format!(
            "tolerance {} is out of range: use a small positive number such as 1e-8",
            options.tolerance
        )));
    }
    let plan = plan(network, targets, options)?;
    let solutions = match plan.method {
        Method::Exact => exact::solve(network, targets),
        _ => targets
            .iter()
            .map(|t| schweitzer::solve(network, t, options.tolerance, options.max_iterations))
            .collect::<Result<Vec<_>, _>>()?,
    };
    Ok(Solved { plan, solutions })
}

/// Solves the network at its own populations.
pub fn solve(network: &Network, options: &Options) -> Result<Solved, Error> {
    sweep(network, &[network.populations()], options)
}

/// The target populations of a sweep over N: for one class, N jobs; for several, N jobs of
/// every class (the paper's "concurrency N" of each file type).
pub fn populations_for(network: &Network, ns: &[u32]) -> Vec<Vec<u32>> {
    ns.iter()
        .map(|&n| vec![n; network.classes().len()])
        .collect()
}

/// One point of a model curve.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CurvePoint {
    /// Jobs of each class.
    pub population: u32,
    /// Completions per second, all classes together.
    pub throughput: f64,
    /// Mean response time (s) over all completions (throughput-weighted over classes).
    pub response_time: f64,
}

/// The model's throughput and response time at each N (every class at N jobs): the curve
/// to lay over a measured sweep of the same client counts.
pub fn curve(
    network: &Network,
    ns: &[u32],
    options: &Options,
) -> Result<(Plan, Vec<CurvePoint>), Error> {
    let solved = sweep(network, &populations_for(network, ns), options)?;
    let points = solved
        .solutions
        .iter()
        .zip(ns)
        .map(|(s, &n)| {
            let x = s.total_throughput();
            let weighted: f64 = s
                .classes
                .iter()
                .map(|c| c.throughput * c.response_time)
                .sum();
            CurvePoint {
                population: n,
                throughput: x,
                response_time: if x > 0.0 { weighted / x } else { 0.0 },
            }
        })
        .collect();
    Ok((solved.plan, points))
}

fn check_targets(network: &Network, targets: &[Vec<u32>]) -> Result<(), Error> {
    if targets.is_empty() {
        return Err(Error::invalid("no population to solve at"));
    }
    for t in targets {
        if t.len() != network.classes().len() {
            return Err(Error::invalid(format!(
                "a population of {} classes for a model of {}",
                t.len(),
                network.classes().len()
            )));
        }
        if let Some(r) = t.iter().position(|&n| n == 0) {
            return Err(Error::invalid(format!(
                "population 0 for class '{}': a closed class needs at least one job",
                network.classes()[r].name
            )));
        }
    }
    Ok(())
}

fn max_population(network: &Network, targets: &[Vec<u32>]) -> Vec<u32> {
    (0..network.classes().len())
        .map(|r| targets.iter().map(|t| t[r]).max().unwrap_or(0))
        .collect()
}
