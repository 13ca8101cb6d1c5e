//! The live page (`--live ADDR` on `load` and `lab`): a self-contained HTML page served by
//! webscope itself, showing each interval as it completes (throughput, latency percentiles,
//! errors, the generator's, server's and machine's CPU, TCP states, the step of the sweep and
//! the time left) and, at the end, the run's final figures (the same numbers as its JSON).
//!
//! It is a polling page, not Server-Sent Events: a browser asks for `/state.json` once an
//! interval, so a browser that goes away holds nothing open, and a headless browser's
//! `--dump-dom` (the test) sees the page settle. The publishing side (the load's coordinator
//! thread, once an interval) only swaps a small struct under a mutex; the serialisation and the
//! sockets are the live thread's, whose CPU time is counted so the cost can be reported.
//!
//! Not for: remote dashboards over the internet (no TLS, no authentication: it binds loopback
//! unless told otherwise) or history beyond the last few hundred intervals (that is the run's
//! JSON and interval log).

#![deny(missing_docs)]

mod gauges;
mod http;
mod load;

pub use gauges::Gauges;
pub use load::LoadPage;

use std::collections::VecDeque;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde::Serialize;

/// `--live` without an address: loopback, the port of Locust's web UI.
pub const DEFAULT_ADDR: &str = "127.0.0.1:8089";

/// Intervals kept for the page's charts (older ones are in the run's JSON and interval log).
const KEPT: usize = 600;

/// One interval as the page draws it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Point {
    /// Seconds since the live page started (the lab: since the sweep began).
    pub t_s: f64,
    /// The run this interval belongs to (the lab's run label; empty for `load`).
    pub run: String,
    /// Complete responses per second over the interval.
    pub requests_per_s: f64,
    /// Errors per second over the interval, as the default expectation counts them (no response,
    /// or a status of 400 and above).
    pub errors_per_s: f64,
    /// The interval's latency percentiles in microseconds (the load's histogram of the interval).
    pub p50_us: f64,
    /// 90th percentile, µs.
    pub p90_us: f64,
    /// 99th percentile, µs.
    pub p99_us: f64,
    /// 99.9th percentile, µs.
    pub p999_us: f64,
    /// The busiest generator thread's CPU share of the interval.
    pub generator_busy: f64,
    /// Connections open at the end of the interval.
    pub connections: usize,
    /// The machine's CPUs over the interval, busy share in per cent.
    pub machine_cpu_pct: Option<f64>,
    /// The server's processes over the interval, CPU in per cent of one CPU.
    pub server_cpu_pct: Option<f64>,
    /// The server port's TCP connections established and in TIME_WAIT (the monitor's latest
    /// walk of the TCP table).
    pub tcp_established: Option<f64>,
    /// The port's connections in TIME_WAIT, on either side (None: the monitor has no walk yet,
    /// or the server is not on this machine).
    pub tcp_time_wait: Option<f64>,
}

impl Point {
    /// An interval of the load generator, stamped `t_s`.
    pub fn of(interval: &webscope_load::IntervalReport, t_s: f64, run: &str) -> Point {
        let per_s = |n: u64| n as f64 / interval.duration_s.max(1e-9);
        Point {
            t_s,
            run: run.to_string(),
            requests_per_s: interval.requests_per_s,
            errors_per_s: per_s(interval.errors),
            p50_us: interval.latency_us.p50,
            p90_us: interval.latency_us.p90,
            p99_us: interval.latency_us.p99,
            p999_us: interval.latency_us.p999,
            generator_busy: interval.generator_busy,
            connections: interval.connections,
            ..Point::default()
        }
    }

    /// Adds the server's and the machine's CPU over the interval.
    pub fn with_cpu(mut self, gauges: &mut Gauges) -> Point {
        (self.server_cpu_pct, self.machine_cpu_pct) = gauges.read();
        self
    }

    /// Adds the TCP states of `port` from the monitor's latest sample.
    pub fn with_tcp(mut self, sample: &webscope_monitor::Sample, port: Option<u16>) -> Point {
        if let Some(port) = port {
            let local = |c: &str| sample.value("ports", &format!("{port}/local"), c);
            let remote = |c: &str| sample.value("ports", &format!("{port}/remote"), c);
            self.tcp_established = local("established");
            self.tcp_time_wait = match (local("time_wait"), remote("time_wait")) {
                (None, None) => None,
                (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
            };
        }
        self
    }
}

/// Where a lab sweep is.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Step {
    /// The experiment being run (its name in the lab's plan).
    pub experiment: String,
    /// The run within it (its label, as in the results' directory names).
    pub run: String,
    /// Runs done so far and planned in all.
    pub done: u64,
    /// Runs planned in all: with `done`, the page's progress bar.
    pub total: u64,
}

/// A finished run of a lab sweep, for the page's table.
#[derive(Debug, Clone, Serialize)]
pub struct RunDone {
    /// The experiment the run belonged to.
    pub experiment: String,
    /// The run's label.
    pub run: String,
    /// Goodput: responses per second with the expected status (the lab's `Health::goodput_rps`).
    pub goodput_per_s: f64,
    /// The run's 99th-percentile latency, µs.
    pub p99_us: f64,
    /// Failed requests and responses with an unexpected status.
    pub errors: u64,
    /// Why the run is invalid, if it is (the lab's judgement).
    pub invalid: Option<String>,
}

/// The run's final figures, from its report (the numbers its JSON holds).
#[derive(Debug, Clone, Serialize)]
pub struct Final {
    /// Complete responses over the whole run.
    pub requests: u64,
    /// Complete responses per second over the run.
    pub requests_per_s: f64,
    /// Errors as each interval's line counts them (the default expectation).
    pub errors: u64,
    /// The run's latency percentiles in microseconds, from its whole histogram.
    pub p50_us: f64,
    /// 90th percentile, µs.
    pub p90_us: f64,
    /// 99th percentile, µs.
    pub p99_us: f64,
    /// 99.9th percentile, µs.
    pub p999_us: f64,
    /// The run's measured length in seconds.
    pub duration_s: f64,
}

impl Final {
    /// The final figures of a load report.
    pub fn of(report: &webscope_load::Report) -> Final {
        Final {
            requests: report.total.requests,
            requests_per_s: report.total.requests_per_s,
            // As each interval's line counts them: the default expectation's errors.
            errors: report.outcomes().errors(&webscope_load::Expect::default()),
            p50_us: report.total.latency_us.p50,
            p90_us: report.total.latency_us.p90,
            p99_us: report.total.latency_us.p99,
            p999_us: report.total.latency_us.p999,
            duration_s: report.duration_s,
        }
    }
}

/// What the page shows: the whole state, sent on each poll.
#[derive(Debug, Clone, Default, Serialize)]
pub struct State {
    /// "load" or "lab".
    pub kind: String,
    /// The page's heading and the browser tab's title.
    pub title: String,
    /// How often the page should ask, in milliseconds (the run's interval).
    pub interval_ms: u64,
    /// Bumped by every change: the page redraws only when it moved.
    pub seq: u64,
    /// Seconds since the page started.
    pub elapsed_s: f64,
    /// The time left, when it is known (a load run's duration, the lab's estimate).
    pub time_left_s: Option<f64>,
    /// Where the lab's sweep is (None for `load`, and before the first run).
    pub step: Option<Step>,
    /// The last intervals (at most `KEPT`), oldest first, for the charts.
    pub points: VecDeque<Point>,
    /// Responses and errors since the start, summed over the intervals.
    pub requests: u64,
    /// Errors since the start, summed over the intervals (see [`Point::errors_per_s`]).
    pub errors: u64,
    /// The lab's finished runs.
    pub runs: Vec<RunDone>,
    /// A load run's final figures, once it is over.
    pub done: Option<Final>,
    /// The run (or the whole lab) is over; nothing will change any more.
    pub finished: bool,
    /// It was cut short (Ctrl-C).
    pub interrupted: bool,
    /// Where the results went (the lab's report, the load's --json), if anywhere.
    pub written_to: Option<String>,
}

struct Shared {
    state: Mutex<State>,
    started: Instant,
    stop: AtomicBool,
    /// Polls answered, and the CPU time of the live thread and of publishing, in ns.
    served: AtomicU64,
    cpu_ns: AtomicU64,
}

/// A running live page. Dropping it (or [`Live::linger`]) closes the port.
pub struct Live {
    shared: Arc<Shared>,
    addr: SocketAddr,
    thread: Option<JoinHandle<()>>,
}

/// What the live page cost, for the run's summary.
#[derive(Debug, Clone, Copy)]
pub struct Cost {
    /// Requests answered (page and polls).
    pub polls: u64,
    /// CPU of the page's threads and of publishing.
    pub cpu_s: f64,
    /// CPU of the monitor that the page alone started (`load --live`; the lab's runs have one
    /// anyway).
    pub monitor_cpu_s: f64,
}

impl Cost {
    /// The run summary's one line for what the page cost, against `of_s` seconds of CPU of
    /// `whose` ("the generator's", "this process's"): `load` and `lab` say it alike.
    pub fn line(&self, whose: &str, of_s: f64) -> String {
        let total = self.cpu_s + self.monitor_cpu_s;
        let parts = if self.monitor_cpu_s > 0.0 {
            format!(
                " (page {:.1} ms, its monitor {:.1} ms)",
                self.cpu_s * 1e3,
                self.monitor_cpu_s * 1e3
            )
        } else {
            String::new()
        };
        format!(
            "live page: {} requests answered; {:.1} ms of CPU{parts} = {:.3} % of {whose} {of_s:.2} s",
            self.polls,
            total * 1e3,
            100.0 * total / of_s.max(1e-9)
        )
    }
}

impl Live {
    /// Binds `addr` (`PORT`, `HOST:PORT`; loopback when only a port is given) and serves the
    /// page from a thread of its own.
    pub fn start(addr: &str, kind: &str, title: &str, interval: Duration) -> anyhow::Result<Live> {
        let addr = parse_addr(addr)?;
        let listener = TcpListener::bind(addr)
            .with_context(|| format!("cannot serve the live page on {addr}"))?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                kind: kind.to_string(),
                title: title.to_string(),
                interval_ms: interval.as_millis().clamp(100, 10_000) as u64,
                ..State::default()
            }),
            started: Instant::now(),
            stop: AtomicBool::new(false),
            served: AtomicU64::new(0),
            cpu_ns: AtomicU64::new(0),
        });
        let inner = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("webscope-live".into())
            .spawn(move || http::serve(listener, &inner))
            .context("cannot start the live page's thread")?;
        Ok(Live {
            shared,
            addr,
            thread: Some(thread),
        })
    }

    /// The page's URL.
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// Seconds since the page started.
    pub fn elapsed_s(&self) -> f64 {
        self.shared.started.elapsed().as_secs_f64()
    }

    /// Changes the state under its lock (timed: publishing is part of the page's cost).
    pub fn update(&self, change: impl FnOnce(&mut State)) {
        let began = thread_cpu_ns();
        if let Ok(mut state) = self.shared.state.lock() {
            change(&mut state);
            state.seq += 1;
            state.elapsed_s = self.elapsed_s();
        }
        self.shared
            .cpu_ns
            .fetch_add(thread_cpu_ns().saturating_sub(began), Ordering::Relaxed);
    }

    /// Adds an interval (and keeps the last `KEPT`); a lab also says where its sweep is.
    pub fn push(
        &self,
        point: Point,
        requests: u64,
        errors: u64,
        time_left_s: Option<f64>,
        step: Option<Step>,
    ) {
        self.update(|state| {
            if step.is_some() {
                state.step = step;
            }
            state.points.push_back(point);
            while state.points.len() > KEPT {
                state.points.pop_front();
            }
            state.requests += requests;
            state.errors += errors;
            state.time_left_s = time_left_s;
        });
    }

    /// What serving the page has cost so far.
    pub fn cost(&self) -> Cost {
        Cost {
            polls: self.shared.served.load(Ordering::Relaxed),
            cpu_s: self.shared.cpu_ns.load(Ordering::Relaxed) as f64 / 1e9,
            monitor_cpu_s: 0.0,
        }
    }

    /// Keeps the page up for `linger` (so open browsers get the final figures), or until
    /// `interrupt` is raised, then closes it and returns its cost.
    pub fn linger(mut self, linger: Duration, interrupt: &AtomicBool) -> Cost {
        let until = Instant::now() + linger;
        while Instant::now() < until && !interrupt.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(50));
        }
        self.close();
        self.cost()
    }

    fn close(&mut self) {
        if let Some(thread) = self.thread.take() {
            self.shared.stop.store(true, Ordering::Relaxed);
            http::wake(self.addr);
            let _ = thread.join();
        }
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.close();
    }
}

/// `8089`, `:8089`, `127.0.0.1:8089`, `[::1]:8089`, `localhost:8089`.
fn parse_addr(text: &str) -> anyhow::Result<SocketAddr> {
    let text = text.trim();
    let port_only = text.strip_prefix(':').unwrap_or(text);
    if let Ok(port) = port_only.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    text.to_socket_addrs()
        .ok()
        .and_then(|mut addrs| addrs.next())
        .with_context(|| {
            format!("--live {text}: give PORT or HOST:PORT, e.g. --live 127.0.0.1:8089")
        })
}

/// CPU time of the calling thread, in nanoseconds (the load generator's own clock).
fn thread_cpu_ns() -> u64 {
    webscope_load::thread_time().as_nanos() as u64
}

#[cfg(test)]
mod tests;
