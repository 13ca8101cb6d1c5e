//! Dynamic services (`--services`): endpoints that do real CPU and memory work, and the
//! middleware-level policies that decide how each degrades under heavy load (Hibino, Kourai &
//! Chiba: the same degradation scheme on every operating system, chosen by the operator).
//!
//! | endpoint | work | service |
//! |---|---|---|
//! | `/svc/light` | fib(25), naive recursion (the paper's light servlet) | light |
//! | `/svc/middle` | fib(35) | middle |
//! | `/svc/heavy` | build a DOM from the XML catalogue (`--xml-items`, 5000 by default, about 40 000 nodes) and search all nodes 100 times | heavy |
//! | `/svc/fib?n=N` | fib(N), 0 ≤ N ≤ 40 | fib |
//! | `/svc/xml?nodes=K&passes=P` | a catalogue of K items (1..=100 000), P passes (1..=1000) | xml |
//!
//! The work runs on the executor of the chosen policy (`executor.rs`), never on an I/O worker:
//! the connection task waits for the result without blocking its thread.

mod executor;
mod stats;
mod work;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;

pub use stats::{ServiceFigures, ServiceStats};

use executor::{Executor, Job};
use work::{Fib, Work, Xml};

/// The services, in the order their figures are reported.
pub const SERVICES: [&str; 5] = ["light", "middle", "heavy", "fib", "xml"];

/// Bounds of the custom services' parameters (400 beyond).
const MAX_FIB: u32 = 40;
const MAX_ITEMS: usize = 100_000;
const MAX_PASSES: u32 = 1000;
/// Distinct catalogue sizes kept for `/svc/xml` (generated once each).
const CATALOGUES: usize = 16;

/// How service work is scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// A pool of many OS threads; the OS schedules (the baseline).
    Threads,
    /// Weighted fair sharing of CPU time, in slices.
    Fair,
    /// Strict priority among services, in slices.
    Priority,
    /// Admission control: per-service limits and a queueing-delay target; 503 beyond.
    Admission,
}

impl std::str::FromStr for Policy {
    type Err = String;
    fn from_str(s: &str) -> Result<Policy, String> {
        match s {
            "threads" => Ok(Policy::Threads),
            "fair" => Ok(Policy::Fair),
            "priority" => Ok(Policy::Priority),
            "admission" => Ok(Policy::Admission),
            _ => Err(format!(
                "unknown policy {s:?} (known: threads, fair, priority, admission)"
            )),
        }
    }
}

/// The services' configuration.
#[derive(Debug, Clone)]
pub struct ServicesConfig {
    /// The scheduling policy.
    pub policy: Policy,
    /// OS threads of the `threads` policy (Tomcat's default, 150).
    pub pool_threads: usize,
    /// Executor threads of the other policies (default: one per core).
    pub executors: usize,
    /// Slice length under `fair` and `priority`.
    pub slice: Duration,
    /// Weights under `fair`, by service index (default 1 each).
    pub weights: Vec<u32>,
    /// Service indices by priority, highest first (default light, middle, heavy, fib, xml).
    pub priority: Vec<usize>,
    /// Jobs allowed to run at once per service under `admission` (None: no limit).
    pub limits: Vec<Option<usize>>,
    /// Queueing-delay target of the admission rule.
    pub target: Duration,
    /// How long the delay must stay above target before refusing.
    pub interval: Duration,
    /// Items in the heavy service's catalogue.
    pub xml_items: usize,
}

impl Default for ServicesConfig {
    fn default() -> Self {
        ServicesConfig {
            policy: Policy::Threads,
            pool_threads: 150,
            executors: std::thread::available_parallelism().map_or(1, usize::from),
            slice: Duration::from_millis(1),
            weights: vec![1; SERVICES.len()],
            priority: (0..SERVICES.len()).collect(),
            limits: vec![None; SERVICES.len()],
            target: Duration::from_millis(5),
            interval: Duration::from_millis(100),
            xml_items: 5000,
        }
    }
}

/// The index of a service by name.
pub fn service_index(name: &str) -> Option<usize> {
    SERVICES.iter().position(|&s| s == name)
}

/// Why a service request gets no result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Parameters out of bounds or unknown endpoint (400 / 404).
    BadRequest,
    NotFound,
    /// Admission control said no (503).
    Unavailable,
}

/// The services layer shared by all workers.
pub(crate) struct Services {
    config: ServicesConfig,
    heavy_xml: Arc<str>,
    catalogues: Mutex<HashMap<usize, Arc<str>>>,
    executor: Executor,
    pub stats: Arc<ServiceStats>,
}

impl Services {
    pub(crate) fn start(config: ServicesConfig) -> std::io::Result<Services> {
        let stats = Arc::new(ServiceStats::new());
        let executor = Executor::start(&config, Arc::clone(&stats))?;
        Ok(Services {
            heavy_xml: work::catalogue(config.xml_items).into(),
            catalogues: Mutex::new(HashMap::new()),
            config,
            executor,
            stats,
        })
    }

    /// Starts the work a `/svc/...` target asks for; the receiver gets the response body.
    pub(crate) fn submit(&self, target: &str) -> Result<oneshot::Receiver<String>, Refusal> {
        let (service, work) = self.route(target)?;
        let (job, result) = Job::new(service, work);
        let queued = self.executor.submit(job);
        if queued.is_err() {
            self.stats.refused(service);
            return Err(Refusal::Unavailable);
        }
        Ok(result)
    }

    fn route(&self, target: &str) -> Result<(usize, Box<dyn Work>), Refusal> {
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        let param = |name: &str| -> Option<&str> {
            query
                .split('&')
                .filter_map(|kv| kv.split_once('='))
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v)
        };
        match path {
            "/svc/light" => Ok((0, Box::new(Fib::new(25)))),
            "/svc/middle" => Ok((1, Box::new(Fib::new(35)))),
            "/svc/heavy" => Ok((2, Box::new(Xml::new(Arc::clone(&self.heavy_xml), 100)))),
            "/svc/fib" => {
                let n: u32 = param("n")
                    .and_then(|v| v.parse().ok())
                    .filter(|&n| n <= MAX_FIB)
                    .ok_or(Refusal::BadRequest)?;
                Ok((3, Box::new(Fib::new(n))))
            }
            "/svc/xml" => {
                let items: usize = param("nodes")
                    .and_then(|v| v.parse().ok())
                    .filter(|&k| (1..=MAX_ITEMS).contains(&k))
                    .ok_or(Refusal::BadRequest)?;
                let passes: u32 = param("passes")
                    .and_then(|v| v.parse().ok())
                    .filter(|&p| (1..=MAX_PASSES).contains(&p))
                    .ok_or(Refusal::BadRequest)?;
                Ok((4, Box::new(Xml::new(self.catalogue(items), passes))))
            }
            _ => Err(Refusal::NotFound),
        }
    }

    /// The catalogue of `items` items, generated once (a bounded number of sizes are kept).
    fn catalogue(&self, items: usize) -> Arc<str> {
        if items == self.config.xml_items {
            return Arc::clone(&self.heavy_xml);
        }
        let Ok(mut cache) = self.catalogues.lock() else {
            return work::catalogue(items).into();
        };
        if let Some(text) = cache.get(&items) {
            return Arc::clone(text);
        }
        let text: Arc<str> = work::catalogue(items).into();
        if cache.len() >= CATALOGUES {
            if let Some(&victim) = cache.keys().next() {
                cache.remove(&victim);
            }
        }
        cache.insert(items, Arc::clone(&text));
        text
    }
}
