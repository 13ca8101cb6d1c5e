//! Where service work runs, never on an I/O worker: the policies of the degradation issue.
//!
//! - `threads`: a pool of many OS threads (150 by default, like Tomcat's) taking jobs in
//!   arrival order and running each to completion; the operating system decides who gets the
//!   CPU. This is what the Hibino paper measured on each OS.
//! - `fair`: a few executor threads (one per core) run jobs in slices of about 1 ms and, between
//!   slices, pick the service with the least weighted CPU time (virtual time += slice / weight,
//!   as in weighted fair queueing): a light request never waits behind a whole heavy one.
//! - `priority`: the same slices, the highest-priority service with work always first.
//! - `admission`: the pool of OS threads, behind admission control: a per-service limit on
//!   jobs running at once (the others wait in the service's own queue, so one service never
//!   queues behind another), a bounded queue (4 × the limit; beyond, 503 at once), and a
//!   CoDel-like rule that refuses a service's new jobs while its queueing delay has stayed
//!   above the target for an interval (its oldest waiting job is older than both).

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use super::stats::ServiceStats;
use super::work::Work;
use super::{Policy, ServicesConfig, SERVICES};

/// Under admission, jobs that may wait per running slot; beyond, new jobs are refused at once.
const QUEUE_PER_SLOT: usize = 4;

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

impl Job {
    /// A job for `service` enqueued now, and the receiver its reply comes to.
    pub(crate) fn new(service: usize, work: Box<dyn Work>) -> (Job, oneshot::Receiver<String>) {
        let (reply, rx) = oneshot::channel();
        let job = Job {
            service,
            work,
            enqueued: Instant::now(),
            started: None,
            running: Duration::ZERO,
            slices: 0,
            reply,
        };
        (job, rx)
    }
}

/// The queues and the state the policy decides with.
struct State {
    /// One queue per service (fair, priority) or all in queue 0 (threads, admission).
    queues: Vec<VecDeque<Job>>,
    /// Weighted CPU time per service, nanoseconds / weight (fair).
    vtime: Vec<f64>,
    /// Jobs per service in the system, queued or running: a service is idle only at zero.
    active: Vec<usize>,
    /// Jobs per service running now (admission).
    running: Vec<usize>,
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
    /// Jobs allowed to run at once, per service (admission).
    limits: Vec<Option<usize>>,
    /// Admission refuses a service's new jobs while its oldest queued job has waited longer
    /// than `target + interval`: then every job dequeued over the last interval waited more
    /// than the target (CoDel's "minimum sojourn time above target for an interval").
    target: Duration,
    interval: Duration,
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
        let queues = if config.policy == Policy::Threads {
            1
        } else {
            SERVICES.len()
        };
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                queues: (0..queues).map(|_| VecDeque::new()).collect(),
                vtime: vec![0.0; SERVICES.len()],
                active: vec![0; SERVICES.len()],
                running: vec![0; SERVICES.len()],
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
            limits: config.limits.clone(),
            target: config.target,
            interval: config.interval,
            stats,
        });
        let count = match config.policy {
            Policy::Threads | Policy::Admission => config.pool_threads,
            Policy::Fair | Policy::Priority => config.executors,
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

    /// Queues a job; gives it back if its service's queue is full (admission).
    pub(crate) fn submit(&self, job: Job) -> Result<(), Job> {
        let shared = &self.shared;
        let Ok(mut state) = shared.state.lock() else {
            return Err(job);
        };
        let queue = if state.queues.len() == 1 {
            0
        } else {
            job.service
        };
        if shared.policy == Policy::Admission {
            let waiting = &state.queues[queue];
            let full = shared.limits[job.service]
                .is_some_and(|limit| waiting.len() >= QUEUE_PER_SLOT * limit.max(1));
            let late = waiting
                .front()
                .is_some_and(|head| head.enqueued.elapsed() > shared.target + shared.interval);
            if full || late {
                return Err(job);
            }
        }
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
        Ok(())
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
        Policy::Threads => state.queues[0].pop_front(),
        Policy::Admission => {
            // The oldest job among services with a free slot.
            let service = (0..state.queues.len())
                .filter(|&s| shared.limits[s].is_none_or(|l| state.running[s] < l))
                .filter_map(|s| state.queues[s].front().map(|j| (s, j.enqueued)))
                .min_by_key(|&(_, t)| t)
                .map(|(s, _)| s)?;
            state.running[service] += 1;
            state.queues[service].pop_front()
        }
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
        let cpu_start = webscope_sys::thread_time();
        if job.started.is_none() {
            job.started = Some(start);
        }
        let deadline = sliced.then(|| start + shared.slice);
        let result = job.work.run(deadline);
        let ran = start.elapsed();
        // CPU time, not wall time: a pool thread the OS preempts (threads, admission) is not
        // running its service meanwhile, and the fair share is a share of the CPU.
        let cpu = webscope_sys::thread_time().saturating_sub(cpu_start);
        shared.stats.ran(job.service, cpu);
        job.running += ran;
        job.slices += 1;
        if sliced {
            if let Ok(mut state) = shared.state.lock() {
                state.vtime[job.service] += cpu.as_nanos() as f64 / shared.weights[job.service];
                if result.is_none() {
                    // Back to the front: within a service, jobs run in arrival order; slices
                    // interleave services, not the jobs of one service.
                    state.queues[job.service].push_front(job);
                    drop(state);
                    shared.ready.notify_one();
                    continue;
                }
            }
        }
        if let Ok(mut state) = shared.state.lock() {
            state.active[job.service] = state.active[job.service].saturating_sub(1);
            state.running[job.service] = state.running[job.service].saturating_sub(1);
        }
        if shared.policy == Policy::Admission {
            // A slot is free and a job of that service may be waiting for it. This thread
            // may pick another service's job next, so one sleeper is woken to take it; all
            // 150 would be a thundering herd on every completion.
            shared.ready.notify_one();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::services::work::Fib;

    fn job(service: usize, n: u32) -> (Job, oneshot::Receiver<String>) {
        Job::new(service, Box::new(Fib::new(n)))
    }

    /// Work that holds its executor thread until the test opens the gate, and says when it
    /// has started: a job that is running for as long as the test needs, however fast the CPU.
    struct Gate {
        started: std::sync::mpsc::Sender<()>,
        open: Arc<(Mutex<bool>, Condvar)>,
    }

    impl Work for Gate {
        fn run(&mut self, _deadline: Option<Instant>) -> Option<String> {
            let _ = self.started.send(());
            let (lock, opened) = &*self.open;
            let mut open = lock.lock().unwrap_or_else(|e| e.into_inner());
            while !*open {
                open = opened.wait(open).unwrap_or_else(|e| e.into_inner());
            }
            Some("gate\n".into())
        }
    }

    /// Another job's slice counter, and what it read at each of this job's slices.
    type Watch = (Arc<std::sync::atomic::AtomicU32>, Arc<Mutex<Vec<u32>>>);

    /// Work that takes slices, counting them in `slices`: until the gate opens (`open`, each
    /// slice waiting on it until the deadline), or for `needed` slices of CPU work when there
    /// is no gate.
    /// Its first slice says so on `started`. The order of slices is the policy's, whatever
    /// the machine's speed.
    struct Sliced {
        slices: Arc<std::sync::atomic::AtomicU32>,
        needed: Option<u32>,
        open: Option<Arc<(Mutex<bool>, Condvar)>>,
        started: Option<std::sync::mpsc::Sender<()>>,
        /// At each slice, the other job's slice count is pushed onto the list.
        other: Option<Watch>,
    }

    impl Work for Sliced {
        fn run(&mut self, deadline: Option<Instant>) -> Option<String> {
            use std::sync::atomic::Ordering::SeqCst;
            let done = self.slices.fetch_add(1, SeqCst) + 1;
            if let Some(started) = self.started.take() {
                let _ = started.send(());
            }
            if let Some((other, seen)) = &self.other {
                seen.lock().unwrap().push(other.load(SeqCst));
            }
            if let Some(open) = &self.open {
                let (lock, opened) = &**open;
                let mut is_open = lock.lock().unwrap_or_else(|e| e.into_inner());
                let until = deadline.unwrap_or_else(Instant::now);
                while !*is_open && Instant::now() < until {
                    let left = until.saturating_duration_since(Instant::now());
                    is_open = opened
                        .wait_timeout(is_open, left)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
                return is_open.then(|| "opened\n".into());
            }
            // Without a gate, each slice works (spins) to its deadline: CPU time, which is
            // what `fair` shares.
            while deadline.is_some_and(|d| Instant::now() < d) {
                std::hint::spin_loop();
            }
            (Some(done) >= self.needed).then(|| format!("{done} slices\n"))
        }
    }

    /// Priority, as an order of events: a light job that arrives while a middle one is
    /// running takes every slice until it is done (the middle job runs no slice meanwhile),
    /// and the middle one then goes on. Under `fair` the middle job would get slices between
    /// the light one's, and under `threads` the light job would wait for the gate.
    #[test]
    fn priority_runs_every_slice_of_the_first_service_while_it_has_work() {
        use std::sync::atomic::AtomicU32;
        let config = ServicesConfig {
            policy: Policy::Priority,
            executors: 1,
            priority: (0..SERVICES.len()).collect(),
            ..ServicesConfig::default()
        };
        let executor = Executor::start(&config, Arc::new(ServiceStats::new())).unwrap();
        let middle_slices = Arc::new(AtomicU32::new(0));
        let open = Arc::new((Mutex::new(false), Condvar::new()));
        let (started_tx, started) = std::sync::mpsc::channel();
        let (middle, middle_reply) = Job::new(
            1,
            Box::new(Sliced {
                slices: Arc::clone(&middle_slices),
                needed: None,
                open: Some(Arc::clone(&open)),
                started: Some(started_tx),
                other: None,
            }),
        );
        assert!(executor.submit(middle).is_ok());
        started
            .recv_timeout(Duration::from_secs(10))
            .expect("the middle job starts");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let light_slices = Arc::new(AtomicU32::new(0));
        let (light, mut light_reply) = Job::new(
            0,
            Box::new(Sliced {
                slices: Arc::clone(&light_slices),
                needed: Some(5),
                open: None,
                started: None,
                other: Some((Arc::clone(&middle_slices), Arc::clone(&seen))),
            }),
        );
        assert!(executor.submit(light).is_ok());
        // Bounded: a policy that let the middle job hold the executor would never answer.
        let deadline = Instant::now() + Duration::from_secs(20);
        let answer = loop {
            match light_reply.try_recv() {
                Ok(body) => break body,
                Err(oneshot::error::TryRecvError::Empty) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5))
                }
                Err(e) => panic!("the light job was not answered while the middle one ran: {e}"),
            }
        };
        assert_eq!(answer, "5 slices\n");
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 5, "{seen:?}");
        assert!(
            seen.iter().all(|&m| m == seen[0]),
            "the middle job ran slices between the light one's: {seen:?}"
        );
        // The middle job was not dropped: it goes on, and finishes once the gate opens.
        *open.0.lock().unwrap() = true;
        open.1.notify_all();
        assert_eq!(middle_reply.blocking_recv().unwrap(), "opened\n");
        assert!(middle_slices.load(std::sync::atomic::Ordering::SeqCst) > seen[0]);
    }

    #[test]
    fn admission_refuses_once_the_oldest_waiting_job_is_late() {
        let mut limits = vec![None; SERVICES.len()];
        limits[1] = Some(1);
        let config = ServicesConfig {
            policy: Policy::Admission,
            pool_threads: 4,
            limits,
            target: Duration::from_millis(5),
            interval: Duration::from_millis(20),
            ..ServicesConfig::default()
        };
        let executor = Executor::start(&config, Arc::new(ServiceStats::new())).unwrap();
        // One job holds the service's one slot until the gate opens (waited on as an event,
        // not timed: a fast CPU finished the fib(34) this used before in under 45 ms).
        let (started_tx, started) = std::sync::mpsc::channel();
        let open = Arc::new((Mutex::new(false), Condvar::new()));
        let gate = Gate {
            started: started_tx,
            open: Arc::clone(&open),
        };
        let (running, r1) = Job::new(1, Box::new(gate));
        assert!(executor.submit(running).is_ok());
        started
            .recv_timeout(Duration::from_secs(10))
            .expect("the gated job starts");
        let (waiting, r2) = job(1, 1);
        assert!(
            executor.submit(waiting).is_ok(),
            "the queue has room and nobody is late yet"
        );
        // Sleeping makes the waiting job at least this old; a busy machine only older.
        std::thread::sleep(Duration::from_millis(40));
        let (late, _r3) = job(1, 1);
        assert!(
            executor.submit(late).is_err(),
            "the waiting job is older than target + interval"
        );
        // Another service is not affected.
        let (light, r4) = job(0, 10);
        assert!(executor.submit(light).is_ok());
        assert_eq!(r4.blocking_recv().unwrap(), "fib(10) = 55\n");
        // The gate opens: the slot's job and the one behind it finish.
        *open.0.lock().unwrap() = true;
        open.1.notify_all();
        assert_eq!(r1.blocking_recv().unwrap(), "gate\n");
        assert_eq!(r2.blocking_recv().unwrap(), "fib(1) = 1\n");
    }
}
