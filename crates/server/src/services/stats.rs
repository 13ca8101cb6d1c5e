//! Per-service measurements inside the middleware: queueing wait (arrival to first run),
//! running time, slices, completions and refusals — the Hibino paper's Table 1 (running vs
//! waiting time per request) measured where the scheduling happens.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use super::SERVICES;
use crate::timing::histogram;

/// One service's figures.
#[derive(Debug, Clone)]
pub struct ServiceFigures {
    /// Requests completed.
    pub completed: u64,
    /// Requests refused (admission control, or bad parameters are not counted here).
    pub refused: u64,
    /// Nanoseconds from arrival to first run.
    pub wait: Histogram<u64>,
    /// Nanoseconds of running.
    pub running: Histogram<u64>,
    /// Slices per request.
    pub slices: Histogram<u64>,
    /// Total nanoseconds of running (the CPU the service got).
    pub cpu_ns: u64,
}

impl Default for ServiceFigures {
    fn default() -> Self {
        ServiceFigures {
            completed: 0,
            refused: 0,
            wait: histogram(),
            running: histogram(),
            slices: Histogram::new_with_bounds(1, 100_000_000, 2).expect("valid bounds"),
            cpu_ns: 0,
        }
    }
}

/// All services' figures, plus the admission controller's per-service state.
#[derive(Debug)]
pub struct ServiceStats {
    figures: Mutex<Vec<ServiceFigures>>,
    admission: Mutex<Vec<Admission>>,
    /// The admission policy's queueing-delay target and interval (None: no CoDel rule).
    codel: Option<(Duration, Duration)>,
}

/// CoDel-like admission state of one service.
#[derive(Debug, Clone, Default)]
struct Admission {
    in_system: usize,
    /// When the queueing delay first stayed above target (start of the current bad interval).
    above_since: Option<Instant>,
    refusing: bool,
}

impl ServiceStats {
    /// Figures for every service; `codel` is the admission target and interval, if any.
    pub(crate) fn new(codel: Option<(Duration, Duration)>) -> ServiceStats {
        ServiceStats {
            figures: Mutex::new(vec![ServiceFigures::default(); SERVICES.len()]),
            admission: Mutex::new(vec![Admission::default(); SERVICES.len()]),
            codel,
        }
    }

    /// A copy of the figures, by service (in `SERVICES` order).
    pub fn snapshot(&self) -> Vec<ServiceFigures> {
        self.figures.lock().map(|f| f.clone()).unwrap_or_default()
    }

    pub(crate) fn started(&self, service: usize, wait: Duration) {
        self.admission_observe(service, wait);
    }

    pub(crate) fn finished(&self, service: usize, wait: Duration, running: Duration, slices: u32) {
        if let Ok(mut figures) = self.figures.lock() {
            let f = &mut figures[service];
            f.completed += 1;
            f.wait.saturating_record((wait.as_nanos() as u64).max(1));
            f.running
                .saturating_record((running.as_nanos() as u64).max(1));
            f.slices.saturating_record(u64::from(slices.max(1)));
        }
        if let Ok(mut admission) = self.admission.lock() {
            let a = &mut admission[service];
            a.in_system = a.in_system.saturating_sub(1);
        }
    }

    /// A slice of `service` ran for `ran` (CPU time is counted as it is spent, so a long job
    /// shows its share before it finishes).
    pub(crate) fn ran(&self, service: usize, ran: Duration) {
        if let Ok(mut figures) = self.figures.lock() {
            figures[service].cpu_ns += ran.as_nanos() as u64;
        }
    }

    pub(crate) fn refused(&self, service: usize) {
        if let Ok(mut figures) = self.figures.lock() {
            figures[service].refused += 1;
        }
    }

    /// Admission control: whether a new job of `service` may enter, given its limit on jobs
    /// in the system; counts it in if so.
    pub(crate) fn admit(&self, service: usize, limit: Option<usize>) -> bool {
        let Ok(mut admission) = self.admission.lock() else {
            return true;
        };
        let a = &mut admission[service];
        if a.refusing || limit.is_some_and(|l| a.in_system >= l) {
            return false;
        }
        a.in_system += 1;
        true
    }

    /// The CoDel rule, on each job's queueing delay: below target, all is well; above target
    /// for a whole interval, refuse new jobs until a delay below target is seen again.
    fn admission_observe(&self, service: usize, wait: Duration) {
        let Some((target, interval)) = self.codel else {
            return;
        };
        let Ok(mut admission) = self.admission.lock() else {
            return;
        };
        let a = &mut admission[service];
        if wait < target {
            a.above_since = None;
            a.refusing = false;
        } else {
            let now = Instant::now();
            let since = *a.above_since.get_or_insert(now);
            if now.duration_since(since) >= interval {
                a.refusing = true;
            }
        }
    }
}
