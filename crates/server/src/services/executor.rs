//! Where service work runs, never on an I/O worker: the policies of the degradation issue.
//!
//! - `threads`: a pool of many OS threads (150 by default, like Tomcat's) taking jobs in
//!   arrival order and running each to completion; the operating system decides who gets the
//!   CPU. This is what the Hibino paper measured on each OS.
//! - `fair`: a few executor threads (one per core) run jobs in slices of about 1 ms and, between
//!   slices, pick the service with the least weighted CPU time (virtual time += slice / weight,
//!   as in weighted fair queueing): a light request never waits behind a whole heavy one.
//! - `priority`: the same slices, the highest-priority service with work always first.
//! - `admission`: executor threads run jobs in arrival order to completion, behind admission
//!   control: a per-service limit on jobs in the system, and a CoDel-like rule that refuses a
//!   service's new jobs while its queueing delay has stayed above the target for an interval.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use super::stats::ServiceStats;
use super::work::Work;
use super::{Policy, ServicesConfig, SERVICES};

/// A request's work on its way through an executor.
pub(crate) struct Job {
    pub service: usize,
    pub work: Box<dyn Work>,
    pub enqueued: Instant,
    pub started: Option<Instant>,
    pub running: Duration,
    pub slices: u32,
    pub reply: oneshot::Sender<String>,
}

/// The queues and the state the policy decides with.
struct State {
    /// One queue per service (fair, priority) or all in queue 0 (threads, admission).
    queues: Vec<VecDeque<Job>>,
    /// Weighted CPU time per service, nanoseconds / weight (fair).
    vtime: Vec<f64>,
    /// Jobs per service in the system, queued or running: a service is idle only at zero.
    active: Vec<usize>,
    stop: bool,
}

struct Shared {
    state: Mutex<State>,
    ready: Condvar,
    policy: Policy,
    slice: Duration,
    weights: Vec<f64>,
    /// Service indices, highest priority first.
    order: Vec<usize>,
    stats: Arc<ServiceStats>,
}

/// The running executor threads.
pub(crate) struct Executor {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

impl Executor {
    pub(crate) fn start(
        config: &ServicesConfig,
        stats: Arc<ServiceStats>,
    ) -> std::io::Result<Executor> {
        let queues = if matches!(config.policy, Policy::Fair | Policy::Priority) {
            SERVICES.len()
        } else {
            1
        };
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                queues: (0..queues).map(|_| VecDeque::new()).collect(),
                vtime: vec![0.0; SERVICES.len()],
                active: vec![0; SERVICES.len()],
                stop: false,
            }),
            ready: Condvar::new(),
            policy: config.policy,
            slice: config.slice,
            weights: config
                .weights
                .iter()
                .map(|&w| f64::from(w.max(1)))
                .collect(),
            order: config.priority.clone(),
            stats,
        });
        let count = match config.policy {
            Policy::Threads => config.pool_threads,
            _ => config.executors,
        };
        let mut threads = Vec::with_capacity(count);
        for i in 0..count.max(1) {
            let shared = Arc::clone(&shared);
            threads.push(
                std::thread::Builder::new()
                    .name(format!("webscope-svc{i}"))
                    .stack_size(256 * 1024)
                    .spawn(move || executor_loop(&shared))?,
            );
        }
        Ok(Executor { shared, threads })
    }

    /// Queues a job.
    pub(crate) fn submit(&self, job: Job) {
        let shared = &self.shared;
        let Ok(mut state) = shared.state.lock() else {
            return;
        };
        let queue = if state.queues.len() == 1 {
            0
        } else {
            job.service
        };
        if state.active[job.service] == 0 && shared.policy == Policy::Fair {
            // Waking up: no credit for the time it was idle. It starts level with the least
            // served of the services that are busy (start-time fair queueing).
            let floor = (0..SERVICES.len())
                .filter(|&s| state.active[s] > 0)
                .map(|s| state.vtime[s])
                .min_by(f64::total_cmp);
            if let Some(floor) = floor {
                let v = &mut state.vtime[job.service];
                *v = v.max(floor);
            }
        }
        state.active[job.service] += 1;
        state.queues[queue].push_back(job);
        drop(state);
        shared.ready.notify_one();
    }
}

impl Drop for Executor {
    fn drop(&mut self) {
        if let Ok(mut state) = self.shared.state.lock() {
            state.stop = true;
            // Jobs still queued are dropped: their connections answer 503.
            for queue in &mut state.queues {
                queue.clear();
            }
        }
        self.shared.ready.notify_all();
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

fn pick(shared: &Shared, state: &mut State) -> Option<Job> {
    match shared.policy {
        Policy::Threads | Policy::Admission => state.queues[0].pop_front(),
        Policy::Priority => shared
            .order
            .iter()
            .find_map(|&s| state.queues[s].pop_front()),
        Policy::Fair => {
            let service = (0..state.queues.len())
                .filter(|&s| !state.queues[s].is_empty())
                .min_by(|&a, &b| state.vtime[a].total_cmp(&state.vtime[b]))?;
            state.queues[service].pop_front()
        }
    }
}

fn executor_loop(shared: &Shared) {
    let sliced = matches!(shared.policy, Policy::Fair | Policy::Priority);
    loop {
        let mut job = {
            let Ok(mut state) = shared.state.lock() else {
                return;
            };
            loop {
                if state.stop {
                    return;
                }
                if let Some(job) = pick(shared, &mut state) {
                    break job;
                }
                state = match shared.ready.wait(state) {
                    Ok(state) => state,
                    Err(_) => return,
                };
            }
        };
        let start = Instant::now();
        if job.started.is_none() {
            job.started = Some(start);
            shared.stats.started(job.service, start - job.enqueued);
        }
        let deadline = sliced.then(|| start + shared.slice);
        let result = job.work.run(deadline);
        let ran = start.elapsed();
        shared.stats.ran(job.service, ran);
        job.running += ran;
        job.slices += 1;
        if sliced {
            if let Ok(mut state) = shared.state.lock() {
                state.vtime[job.service] += ran.as_nanos() as f64 / shared.weights[job.service];
                if result.is_none() {
                    state.queues[job.service].push_back(job);
                    drop(state);
                    shared.ready.notify_one();
                    continue;
                }
            }
        }
        if let Ok(mut state) = shared.state.lock() {
            state.active[job.service] = state.active[job.service].saturating_sub(1);
        }
        let Some(body) = result else {
            // Unsliced work always finishes; a poisoned lock lands here: drop the job.
            continue;
        };
        let wait = job.started.map_or(Duration::ZERO, |s| s - job.enqueued);
        shared
            .stats
            .finished(job.service, wait, job.running, job.slices);
        let _ = job.reply.send(body);
    }
}
