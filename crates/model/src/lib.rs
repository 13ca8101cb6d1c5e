//! Queueing models of a web server: operational laws, exact and approximate Mean Value
//! Analysis of closed networks, and the Universal Scalability Law.
//!
//! What it is for: turning what webscope measures into what a performance engineer asks
//! next. [`laws`] derives service demands from utilisations and throughput (D = U / X),
//! checks Little's law and bounds throughput and response time; [`mva`] solves a closed
//! network of queues and delays for any populations ("what if 200 clients? what if 4
//! CPUs?"); [`usl`] fits Gunther's USL (and Amdahl's law beside it) to a measured
//! concurrency sweep and says where throughput peaks.
//!
//! What it is not: a measurement tool or a simulator. It does no I/O: model files and CSV
//! text are parsed from strings ([`Network::from_toml_str`], [`usl::parse_csv`]), results
//! come back as values, and [`json`] / [`text`] render them for the CLI.
//!
//! Main types: [`Network`] (classes with populations and think times, stations with
//! servers and per-class demands, always valid once built), [`mva::Solution`] (per class X
//! and R; per station and class U, Q and residence time), [`usl::Scalability`] (σ, κ, λ
//! with standard errors, R², the peak), [`laws::Laws`].
//!
//! ```
//! use webscope_model::{mva, usl, Network};
//!
//! // The paper's web server (shared/seeds/003, §3): what do 4 CPUs buy at 20 + 20 clients?
//! let model = Network::from_toml_str(r#"
//!     [[class]]
//!     name = "pdf"
//!     population = 20
//!     [[class]]
//!     name = "zip"
//!     population = 20
//!     [[station]]
//!     name = "cpu"
//!     servers = 4
//!     discipline = "ps"
//!     demand = { pdf = 0.583, zip = 0.610 }
//!     [[station]]
//!     name = "disk"
//!     demand = { pdf = 0.0323, zip = 0.0211 }
//! "#).unwrap();
//! let solved = mva::solve(&model, &mva::Options::default()).unwrap();
//! assert_eq!(solved.plan.method, mva::Method::Exact);
//! let s = &solved.solutions[0];
//! assert!(s.station_utilization(0) > 3.99); // four busy CPUs
//! assert!((s.classes[0].response_time - 5.84).abs() < 0.05); // the paper: 5.8388 s
//!
//! // A measured sweep and the knee the USL predicts.
//! let points: Vec<usl::Point> = [(1.0, 65.0), (18.0, 996.0), (36.0, 1652.0), (72.0, 1853.0),
//!     (108.0, 1829.0), (144.0, 1775.0), (216.0, 1702.0)]
//!     .iter().map(|&(concurrency, throughput)| usl::Point { concurrency, throughput }).collect();
//! let fit = usl::fit(&points).unwrap();
//! assert!((fit.usl.n_peak.unwrap() - 96.0).abs() < 1.0);
//! ```
//!
//! For the lab: a run's utilisations and throughput become demands with
//! [`laws::analyze`] (D = U / X per resource; [`laws::service_demand`] for one), the
//! measured system's model with [`laws::Laws::network`], the model's curve over the sweep's
//! client counts with [`mva::curve`] (or every figure with [`mva::sweep`]), and the
//! sweep's own scalability and knee with [`usl::fit`]. [`stats`] holds the workspace's one
//! median and quantile, and the confidence intervals a judge reads against a limit.
//!
//! Why this design: exact MVA is exact only for product-form networks, so the network
//! records what BCMP needs to know (multi-server discipline, per-visit service times) and
//! [`mva::plan`] refuses, or under `auto` switches to Bard-Schweitzer, saying so, instead
//! of quietly approximating — JMT's JMVA and PDQ approximate multi-server stations without
//! that choice. The multi-server recursion keeps only the marginal probabilities below
//! the server count and two population levels in memory, so a few hundred jobs in each of
//! three classes solve in a fraction of a second. The USL fit uses a well-kept
//! Levenberg-Marquardt (MINPACK's algorithm) and handles the σ, κ ≥ 0 bounds by solving
//! the four active-set subproblems, which is exact for two bounds and needs no
//! bound-constrained optimiser.
#![deny(missing_docs)]

mod error;
mod file;
pub mod json;
pub mod laws;
pub mod mva;
mod network;
mod population;
pub mod stats;
pub mod text;
pub mod usl;

pub use error::Error;
pub use network::{Class, Discipline, Network, Station, StationKind};
pub use population::{parse_populations, MAX_POINTS};
