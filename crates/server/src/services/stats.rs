//! Per-service measurements inside the middleware: queueing wait (arrival to first run),
//! running time, slices, completions and refusals — the Hibino paper's Table 1 (running vs
//! waiting time per request) measured where the scheduling happens.

use std::sync::Mutex;
use std::time::Duration;

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

/// All services' figures.
#[derive(Debug)]
pub struct ServiceStats {
    figures: Mutex<Vec<ServiceFigures>>,
}

impl ServiceStats {
    /// Zero figures for every service.
    pub(crate) fn new() -> ServiceStats {
        ServiceStats {
            figures: Mutex::new(vec![ServiceFigures::default(); SERVICES.len()]),
        }
    }

    /// A copy of the figures, by service (in `SERVICES` order).
    pub fn snapshot(&self) -> Vec<ServiceFigures> {
        self.figures.lock().map(|f| f.clone()).unwrap_or_default()
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
}
