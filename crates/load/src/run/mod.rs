//! The coordinator: starts the workers, gathers their interval recorders, writes the interval
//! log, the samples file and the live line as intervals complete, stops them at the end (or on
//! interrupt), and hands the totals to the report's assembly (`report::build`).
//!
//! Not for recording (the workers' engines) nor for the report's figures (`report::build`).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::watch;

use crate::config::{Config, Pacing};
use crate::cpu;
use crate::hlog::Hlog;
use crate::recorder::Recorder;
use crate::replay::{Feed, FeedPlan, ReplaySchedule};
use crate::report::build::{self, RunFigures};
use crate::report::{IntervalReport, Report};
use crate::requests::Requests;
use crate::samples::Samples;
use crate::shared::{Message, Snapshot, TlsClient};
use crate::worker::{self, Setup};
use crate::Error;

#[cfg(test)]
mod expect_tests;
#[cfg(test)]
mod replay_tests;
#[cfg(test)]
mod segments_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tls_tests;
#[cfg(test)]
mod users_tests;

/// Workers start this long after the call, so that all threads begin together.
const START_DELAY: Duration = Duration::from_millis(30);

/// Runs the load described by `config`. `interrupt` ends the run early (Ctrl-C) with
/// everything measured so far; `on_interval` is called as each interval completes.
pub fn run(
    config: &Config,
    interrupt: &AtomicBool,
    on_interval: &mut dyn FnMut(&IntervalReport),
) -> Result<Report, Error> {
    config.check()?;
    let requests = Arc::new(Requests::new(
        &config.target,
        config.mode,
        &config.headers,
        &config.method,
        &config.body,
    )?);
    let tls = match &config.target.tls_name {
        Some(name) => Some(crate::tls::client(&config.tls, name)?),
        None => None,
    };
    let http3 = match (config.http3, &config.target.tls_name) {
        (Some(streams), Some(name)) => {
            let client =
                crate::quic::Client::new(&config.tls, name, config.zero_rtt, config.timeout)?;
            if config.users.is_none() {
                client.first.expect(config.connections_here());
            }
            Some((streams, Arc::new(client)))
        }
        _ => None,
    };
    let (start, wall_start, late) = start_instant(config.start_at);
    let mut outputs = Outputs::create(config, wall_start)?;
    let cpu_before = cpu::process_time();
    // Busy polling the kernel refuses is run without, and said in the report.
    let (busy_poll, busy_poll_refused) = match config.busy_poll.map(crate::busy_poll::probe) {
        Some(Ok(usecs)) => (Some(usecs), None),
        Some(Err(why)) => (None, Some(why)),
        None => (None, None),
    };
    let (tx, rx) = mpsc::channel::<Message>();
    let (stop_tx, stop_rx) = watch::channel(false);
    let common = Common {
        requests,
        tls,
        http3,
        busy_poll,
        start,
        end: start + config.duration,
        drain_end: start + config.duration + config.drain,
    };
    let (feed, schedules) = start_feed(config)?;
    let (handles, connections) = start_workers(config, &common, schedules, tx, stop_rx)?;
    let mut gathered = Gather::new(config, start);
    gathered.quic = common.http3.as_ref().map(|(_, client)| Arc::clone(client));
    gathered.until_done(&rx, &stop_tx, interrupt, on_interval, &mut outputs)?;
    let _ = stop_tx.send(true);
    for handle in handles {
        let _ = handle.join();
    }
    let fed = feed.map(Feed::finish);
    if let Some(e) = gathered.failure.take() {
        return Err(e);
    }
    // Intervals some worker never reported (it failed): report what there is.
    for (index, done) in std::mem::take(&mut gathered.pending) {
        gathered.complete(index, &done, &mut outputs, on_interval)?;
    }
    outputs.flush()?;
    let cpu = cpu::process_time().saturating_sub(cpu_before);
    let duration = gathered
        .run_end
        .saturating_duration_since(start)
        .as_secs_f64();
    let (busiest, least_idle) = gathered.busiest(duration);
    Ok(build::report(
        config,
        RunFigures {
            totals: &gathered.totals,
            duration,
            interrupted: gathered.stopped,
            intervals: gathered.intervals,
            not_sent: gathered.not_sent,
            connections,
            started: wall_start,
            late,
            busy_poll_refused,
            ceiling_cut: config.growth_ceiling(0).1,
            cpu,
            busiest,
            least_idle,
            fed,
        },
    ))
}

/// When the workers begin: at `start_at` if given (now, and how late, if it has passed), else
/// a moment from now so that all threads begin together. Returns the instant, the wall-clock
/// time it stands for (the interval log's base time) and the lateness.
fn start_instant(start_at: Option<SystemTime>) -> (Instant, SystemTime, Duration) {
    let (now, wall_now) = (Instant::now(), SystemTime::now());
    match start_at {
        None => (now + START_DELAY, wall_now + START_DELAY, Duration::ZERO),
        Some(at) => match at.duration_since(wall_now) {
            Ok(ahead) => (now + ahead, at, Duration::ZERO),
            // Already past: start now, intervals still counted from `at`.
            Err(passed) => {
                let late = passed.duration();
                (now.checked_sub(late).unwrap_or(now), at, late)
            }
        },
    }
}

/// What the coordinator writes as the run goes: the interval log and the samples file.
struct Outputs {
    hlog: Option<Hlog>,
    samples: Option<Samples>,
}

impl Outputs {
    fn create(config: &Config, wall_start: SystemTime) -> Result<Outputs, Error> {
        Ok(Outputs {
            hlog: match &config.hlog {
                Some(path) => Some(Hlog::create(path, wall_start, &config.target.description)?),
                None => None,
            },
            samples: match &config.samples {
                Some(path) => Some(Samples::create(path)?),
                None => None,
            },
        })
    }

    fn flush(&mut self) -> Result<(), Error> {
        if let Some(log) = self.hlog.as_mut() {
            log.flush()?;
        }
        if let Some(out) = self.samples.as_mut() {
            out.flush()?;
        }
        Ok(())
    }
}

/// What every worker of the run is given alike.
struct Common {
    requests: Arc<Requests>,
    tls: Option<TlsClient>,
    /// HTTP/3: streams per connection and the QUIC client.
    http3: Option<(usize, Arc<crate::quic::Client>)>,
    busy_poll: Option<u32>,
    start: Instant,
    /// The last send, and the end of the wait for the answers still in flight after it.
    end: Instant,
    drain_end: Instant,
}

/// A replay's feed, started before the workers so that their first slots are read, and one
/// schedule per thread; none without a replay.
fn start_feed(config: &Config) -> Result<(Option<Feed>, Vec<Option<ReplaySchedule>>), Error> {
    let Some(replay) = &config.replay else {
        return Ok((None, (0..config.threads).map(|_| None).collect()));
    };
    let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    let plan = FeedPlan {
        segment: config.segment_or_whole(),
        threads: config.threads,
        interval_ns: nanos(config.interval),
        end_ns: nanos(config.duration),
    };
    let (feed, schedules) = Feed::start(Arc::clone(replay), plan)?;
    Ok((Some(feed), schedules.into_iter().map(Some).collect()))
}

/// Starts this process's worker threads; returns them and how many connections they open.
///
/// The run's threads are all segments' threads: this segment's are every `segments`-th, from
/// `segment` on. Connections, rates and phases are shared over all of them as one process
/// with that many threads would share them, so the segments add up to that run.
fn start_workers(
    config: &Config,
    common: &Common,
    schedules: Vec<Option<ReplaySchedule>>,
    tx: Sender<Message>,
    stop: watch::Receiver<bool>,
) -> Result<(Vec<JoinHandle<()>>, usize), Error> {
    let all_threads = config.threads * config.segment_or_whole().1;
    let mut handles = Vec::new();
    let mut connections = 0;
    for (index, replay) in schedules.into_iter().enumerate() {
        let global = config.global_thread(index);
        let share = |n: usize| config.thread_share(index, n);
        let open = match config.pacing {
            Pacing::Open { rate, arrivals, .. } => Some((
                rate / all_threads as f64,
                arrivals,
                global as f64 * 1e9 / rate,
                config.growth_ceiling(index).0,
            )),
            Pacing::Closed { .. } => None,
        };
        // Users go to threads whole: the run's user `g` to its thread `g % threads`.
        let users = config.users.as_ref().map(|plan| {
            let count = share(plan.count);
            (Arc::clone(plan), global, all_threads, count)
        });
        let thread_connections = match &users {
            // Over HTTP/2 a user keeps one connection, its requests on streams of it.
            Some((_, _, _, count)) if config.http2.is_some() => *count,
            Some((plan, _, _, count)) => count * plan.connections.max(1),
            None => share(config.connections),
        };
        connections += thread_connections;
        let setup = Setup {
            index,
            global,
            requests: Arc::clone(&common.requests),
            tls: common.tls.clone(),
            http2: config.http2,
            http3: common.http3.clone(),
            busy_poll: common.busy_poll,
            io: config.io,
            expect: config.expect.clone(),
            replay,
            classes: config.target.classes.len(),
            addr: config.target.addr,
            mode: config.mode,
            timeout: config.timeout,
            think: match config.pacing {
                Pacing::Closed { think } => think,
                Pacing::Open { .. } => Duration::ZERO,
            },
            backoff_503: config.backoff_503,
            connections: thread_connections,
            users,
            open,
            start: common.start,
            end: common.end,
            drain_end: common.drain_end,
            interval: config.interval,
            seed: config.seed,
            threads: all_threads,
            samples: if config.samples.is_some() {
                share(crate::config::MAX_SAMPLES)
            } else {
                0
            },
        };
        let tx = tx.clone();
        let stop = stop.clone();
        let handle = std::thread::Builder::new()
            .name(format!("load-{index}"))
            .spawn(move || worker::run(setup, tx, stop))
            .map_err(Error::Start)?;
        handles.push(handle);
    }
    Ok((handles, connections))
}

/// One interval being assembled from the workers' snapshots.
struct Pending {
    recorder: Recorder,
    reported: usize,
    at: Instant,
    busiest: f64,
    connections: usize,
    users_active: usize,
}

/// The coordinator's view of the workers while they run: the totals, the intervals being
/// assembled and those complete, and each thread's CPU.
struct Gather<'a> {
    config: &'a Config,
    start: Instant,
    totals: Recorder,
    pending: BTreeMap<usize, Pending>,
    reported_upto: Vec<Option<usize>>,
    finished: Vec<bool>,
    next_interval: usize,
    intervals: Vec<IntervalReport>,
    run_end: Instant,
    not_sent: u64,
    thread_cpu: Vec<Duration>,
    thread_wait: Vec<Duration>,
    /// Interrupted (Ctrl-C).
    stopped: bool,
    /// A worker that could not start.
    failure: Option<Error>,
    /// HTTP/3: the run stops once no connection can be opened (`quic::FirstHandshakes`).
    quic: Option<Arc<crate::quic::Client>>,
}

impl Gather<'_> {
    fn new(config: &Config, start: Instant) -> Gather<'_> {
        Gather {
            config,
            start,
            totals: Recorder::new(config.target.classes.len()),
            pending: BTreeMap::new(),
            reported_upto: vec![None; config.threads],
            finished: vec![false; config.threads],
            next_interval: 0,
            intervals: Vec::new(),
            run_end: start,
            not_sent: 0,
            thread_cpu: vec![Duration::ZERO; config.threads],
            thread_wait: vec![Duration::ZERO; config.threads],
            stopped: false,
            failure: None,
            quic: None,
        }
    }

    /// Takes the workers' messages until every worker has finished (or is gone), asking
    /// them to stop on interrupt or when one of them failed.
    fn until_done(
        &mut self,
        rx: &Receiver<Message>,
        stop: &watch::Sender<bool>,
        interrupt: &AtomicBool,
        on_interval: &mut dyn FnMut(&IntervalReport),
        outputs: &mut Outputs,
    ) -> Result<(), Error> {
        loop {
            // Every first QUIC handshake failed and none succeeded: the workers stop now and
            // report what failed, as at the run's end (not an interrupt).
            if self.quic.as_ref().is_some_and(|c| c.first.hopeless()) {
                self.quic = None;
                let _ = stop.send(true);
            }
            match rx.recv_timeout(Duration::from_millis(20)) {
                Ok(Message::Interval(snapshot)) => {
                    self.take(*snapshot, outputs, on_interval)?;
                    if self.finished.iter().all(|f| *f) {
                        return Ok(());
                    }
                }
                Ok(Message::Failed(e)) => {
                    self.failure = Some(Error::Start(e));
                    let _ = stop.send(true);
                }
                Err(RecvTimeoutError::Timeout) => {
                    if interrupt.load(Ordering::Relaxed) && !self.stopped {
                        self.stopped = true;
                        let _ = stop.send(true);
                    }
                }
                Err(RecvTimeoutError::Disconnected) => return Ok(()),
            }
        }
    }

    /// Adds one worker's interval to the totals and to its interval, and completes every
    /// interval that each worker has reported (or finished before).
    fn take(
        &mut self,
        snapshot: Snapshot,
        outputs: &mut Outputs,
        on_interval: &mut dyn FnMut(&IntervalReport),
    ) -> Result<(), Error> {
        let Snapshot {
            thread,
            index,
            at,
            last,
            recorder,
            cpu,
            wait,
            not_sent,
            open_connections,
            users_active,
        } = snapshot;
        if let Some(out) = outputs.samples.as_mut() {
            out.write(&recorder.samples)?;
        }
        self.totals.merge(&recorder);
        self.thread_cpu[thread] += cpu;
        self.thread_wait[thread] += wait;
        self.not_sent += not_sent;
        let begun = self.start + self.config.interval * index as u32;
        let busy = cpu.as_secs_f64() / at.saturating_duration_since(begun).as_secs_f64().max(1e-3);
        let classes = self.config.target.classes.len();
        let entry = self.pending.entry(index).or_insert_with(|| Pending {
            recorder: Recorder::new(classes),
            reported: 0,
            at,
            busiest: 0.0,
            connections: 0,
            users_active: 0,
        });
        entry.recorder.merge(&recorder);
        entry.reported += 1;
        entry.at = entry.at.max(at);
        entry.busiest = entry.busiest.max(busy);
        entry.connections += open_connections;
        entry.users_active += users_active;
        self.reported_upto[thread] = Some(index);
        if last {
            self.finished[thread] = true;
            self.run_end = self.run_end.max(at);
        }
        while self.pending.contains_key(&self.next_interval)
            && self.all_reported(self.next_interval)
        {
            let done = self
                .pending
                .remove(&self.next_interval)
                .expect("checked above");
            self.complete(self.next_interval, &done, outputs, on_interval)?;
            self.next_interval += 1;
        }
        Ok(())
    }

    /// Whether every worker has reported interval `index` (or finished before it).
    fn all_reported(&self, index: usize) -> bool {
        (0..self.config.threads)
            .all(|t| self.finished[t] || self.reported_upto[t].is_some_and(|i| i >= index))
    }

    /// Reports an assembled interval: its interval-log lines, its report line, the live call.
    fn complete(
        &mut self,
        index: usize,
        done: &Pending,
        outputs: &mut Outputs,
        on_interval: &mut dyn FnMut(&IntervalReport),
    ) -> Result<(), Error> {
        let config = self.config;
        let begun = config.interval * index as u32;
        let length = done
            .at
            .saturating_duration_since(self.start + begun)
            .max(Duration::from_micros(1));
        let total = done.recorder.total();
        if let Some(log) = outputs.hlog.as_mut() {
            log.write(&total.latency, begun, length, None)?;
            if config.target.classes.len() > 1 {
                for (name, class) in config.target.classes.iter().zip(&done.recorder.classes) {
                    log.write(&class.latency, begun, length, Some(name))?;
                }
            }
            if config.users.is_some() {
                log.write(
                    &done.recorder.users.page_load,
                    begun,
                    length,
                    Some(crate::slo::PAGE),
                )?;
            }
            log.flush()?;
        }
        let mut report = build::interval(begun, length, &total, done.busiest, done.connections);
        if config.users.is_some() {
            crate::report::users::interval(&mut report, &done.recorder.users, done.users_active);
        }
        on_interval(&report);
        self.intervals.push(report);
        Ok(())
    }

    /// Over a run of `duration` seconds: the busiest thread's CPU share, and the largest share
    /// a thread ran or waited for a CPU (the thread that slept least: running or waiting all
    /// the time means the generator, not the server, set the pace).
    fn busiest(&self, duration: f64) -> (f64, f64) {
        let busiest = self
            .thread_cpu
            .iter()
            .map(|c| c.as_secs_f64() / duration.max(1e-3))
            .fold(0.0, f64::max);
        let least_idle = self
            .thread_cpu
            .iter()
            .zip(&self.thread_wait)
            .map(|(c, w)| (c.as_secs_f64() + w.as_secs_f64()) / duration.max(1e-3))
            .fold(0.0, f64::max);
        (busiest, least_idle)
    }
}
