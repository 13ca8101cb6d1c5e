//! The coordinator: starts the workers, gathers their interval recorders, writes the interval
//! log and the live line as intervals complete, stops them at the end (or on interrupt), and
//! turns the totals into a [`Report`].

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::sync::watch;

use crate::config::{Arrivals, Config, Mode, Pacing};
use crate::cpu;
use crate::hlog::Hlog;
use crate::recorder::{ClassStats, Recorder};
use crate::report::{ClassReport, Errors, IntervalReport, Latency, Report};
use crate::requests::Requests;
use crate::shared::{Message, Snapshot};
use crate::worker::{self, Setup};
use crate::Error;

/// Workers start this long after the call, so that all threads begin together.
const START_DELAY: Duration = Duration::from_millis(30);

/// A thread busier than this (fraction of wall time) is saturated: the run measures it.
const BUSY: f64 = 0.9;

/// One interval being assembled from the workers' snapshots.
struct Pending {
    recorder: Recorder,
    reported: usize,
    at: Instant,
    busiest: f64,
    connections: usize,
}

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
    let classes = config.target.classes.len();
    let (start, wall_start, late) = start_instant(config.start_at);
    let mut hlog = match &config.hlog {
        Some(path) => Some(Hlog::create(path, wall_start, &config.target.description)?),
        None => None,
    };
    let mut samples = match &config.samples {
        Some(path) => Some(Samples::create(path)?),
        None => None,
    };
    let cpu_before = cpu::process_time();
    let end = start + config.duration;
    let (tx, rx) = mpsc::channel::<Message>();
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut handles = Vec::new();
    // The run's threads are all segments' threads: this segment's are every `segments`-th,
    // from `segment` on. Connections, rates and phases are shared over all of them as one
    // process with that many threads would share them, so the segments add up to that run.
    // Busy polling the kernel refuses is run without, and said in the report.
    let (busy_poll, busy_poll_refused) = match config.busy_poll.map(crate::busy_poll::probe) {
        Some(Ok(usecs)) => (Some(usecs), None),
        Some(Err(why)) => (None, Some(why)),
        None => (None, None),
    };
    let (segment, segments) = config.segment_or_whole();
    let all_threads = config.threads * segments;
    let mut my_connections = 0;
    for index in 0..config.threads {
        let global = segment + index * segments;
        let share = |n: usize| n / all_threads + usize::from(global < n % all_threads);
        let open = match config.pacing {
            Pacing::Open {
                rate,
                arrivals,
                max_connections,
            } => Some((
                rate / all_threads as f64,
                arrivals,
                global as f64 * 1e9 / rate,
                share(max_connections),
            )),
            Pacing::Closed { .. } => None,
        };
        my_connections += share(config.connections);
        let setup = Setup {
            index,
            global,
            requests: Arc::clone(&requests),
            tls: tls.clone(),
            http2: config.http2,
            busy_poll,
            io: config.io,
            classes,
            addr: config.target.addr,
            mode: config.mode,
            timeout: config.timeout,
            think: match config.pacing {
                Pacing::Closed { think } => think,
                Pacing::Open { .. } => Duration::ZERO,
            },
            backoff_503: config.backoff_503,
            connections: share(config.connections),
            open,
            start,
            end,
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
        let stop = stop_rx.clone();
        let handle = std::thread::Builder::new()
            .name(format!("load-{index}"))
            .spawn(move || worker::run(setup, tx, stop))
            .map_err(Error::Start)?;
        handles.push(handle);
    }
    drop(tx);

    let mut totals = Recorder::new(classes);
    let mut pending: BTreeMap<usize, Pending> = BTreeMap::new();
    let mut reported_upto: Vec<Option<usize>> = vec![None; config.threads];
    let mut finished = vec![false; config.threads];
    let mut next_interval = 0usize;
    let mut intervals = Vec::new();
    let mut run_end = start;
    let mut not_sent = 0u64;
    let mut thread_cpu = vec![Duration::ZERO; config.threads];
    let mut thread_wait = vec![Duration::ZERO; config.threads];
    let mut stopped = false;
    let mut failure = None;
    loop {
        match rx.recv_timeout(Duration::from_millis(20)) {
            Ok(Message::Interval(snapshot)) => {
                let Snapshot {
                    thread,
                    index,
                    at,
                    last,
                    recorder,
                    cpu,
                    wait,
                    not_sent: unsent,
                    open_connections,
                } = snapshot;
                if let Some(out) = samples.as_mut() {
                    out.write(&recorder.samples)?;
                }
                totals.merge(&recorder);
                thread_cpu[thread] += cpu;
                thread_wait[thread] += wait;
                not_sent += unsent;
                let begun = start + config.interval * index as u32;
                let busy =
                    cpu.as_secs_f64() / at.saturating_duration_since(begun).as_secs_f64().max(1e-3);
                let entry = pending.entry(index).or_insert_with(|| Pending {
                    recorder: Recorder::new(classes),
                    reported: 0,
                    at,
                    busiest: 0.0,
                    connections: 0,
                });
                entry.recorder.merge(&recorder);
                entry.reported += 1;
                entry.at = entry.at.max(at);
                entry.busiest = entry.busiest.max(busy);
                entry.connections += open_connections;
                reported_upto[thread] = Some(index);
                if last {
                    finished[thread] = true;
                    run_end = run_end.max(at);
                }
                // Complete every interval that each worker has reported (or finished before).
                while pending.contains_key(&next_interval)
                    && (0..config.threads).all(|t| {
                        finished[t] || reported_upto[t].is_some_and(|i| i >= next_interval)
                    })
                {
                    let done = pending.remove(&next_interval).expect("checked above");
                    let report =
                        finish_interval(config, start, next_interval, &done, hlog.as_mut())?;
                    on_interval(&report);
                    intervals.push(report);
                    next_interval += 1;
                }
                if finished.iter().all(|f| *f) {
                    break;
                }
            }
            Ok(Message::Failed(e)) => {
                failure = Some(Error::Start(e));
                let _ = stop_tx.send(true);
            }
            Err(RecvTimeoutError::Timeout) => {
                if interrupt.load(Ordering::Relaxed) && !stopped {
                    stopped = true;
                    let _ = stop_tx.send(true);
                }
            }
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    let _ = stop_tx.send(true);
    for handle in handles {
        let _ = handle.join();
    }
    if let Some(e) = failure {
        return Err(e);
    }
    // Intervals some worker never reported (it failed): report what there is.
    for (index, done) in std::mem::take(&mut pending) {
        let report = finish_interval(config, start, index, &done, hlog.as_mut())?;
        on_interval(&report);
        intervals.push(report);
    }
    if let Some(log) = hlog.as_mut() {
        log.flush()?;
    }
    if let Some(out) = samples.as_mut() {
        out.flush()?;
    }
    let generator_cpu = cpu::process_time().saturating_sub(cpu_before);
    let duration = run_end.saturating_duration_since(start).as_secs_f64();
    let busiest = thread_cpu
        .iter()
        .map(|c| c.as_secs_f64() / duration.max(1e-3))
        .fold(0.0, f64::max);
    // The thread that slept least: running or waiting for a CPU all the time means the
    // generator, not the server, set the pace.
    let least_idle = thread_cpu
        .iter()
        .zip(&thread_wait)
        .map(|(c, w)| (c.as_secs_f64() + w.as_secs_f64()) / duration.max(1e-3))
        .fold(0.0, f64::max);
    let mut report = build_report(config, &totals, duration, stopped, intervals, not_sent);
    if config.segment.is_some() {
        report.connections = my_connections;
        report.segment = Some(format!("{segment}/{segments}"));
        report.histograms = Some(crate::merge::encode(&totals));
    }
    report.start_late_s = late.as_secs_f64();
    if let Some(why) = busy_poll_refused {
        report
            .warnings
            .push(format!("--busy-poll: {why}; run without it"));
    }
    if let Some(cause) = &totals.tls_error {
        report.warnings.push(format!("TLS: {cause}"));
    }
    if late > LATE {
        report.warnings.push(format!(
            "started {:.3} s after --start-at: its intervals are aligned to that instant, but its first one is short",
            late.as_secs_f64()
        ));
    }
    report.started_unix_s = wall_start
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64();
    report.generator_cpu_s = generator_cpu.as_secs_f64();
    report.generator_cpu_per_request_us = if report.requests > 0 {
        generator_cpu.as_secs_f64() * 1e6 / report.requests as f64
    } else {
        0.0
    };
    report.generator_busy = busiest;
    report.generator_busy_or_waiting = least_idle.min(1.0);
    let busy: Vec<f64> = report.intervals.iter().map(|i| i.generator_busy).collect();
    if let Some(warning) = self_check(busiest, &busy) {
        report.warnings.push(warning);
    }
    if report.requests == 0 && report.errors.total > 0 {
        report
            .warnings
            .push("no request succeeded: see the errors above".to_string());
    }
    Ok(report)
}

/// A start later than this after `--start-at` is worth a warning.
const LATE: Duration = Duration::from_millis(50);

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

/// The per-request samples file (`Config::samples`).
struct Samples {
    path: std::path::PathBuf,
    out: std::io::BufWriter<std::fs::File>,
}

impl Samples {
    fn create(path: &std::path::Path) -> Result<Samples, Error> {
        let file = std::fs::File::create(path).map_err(|e| Error::Output {
            path: path.to_path_buf(),
            source: e,
        })?;
        let mut samples = Samples {
            path: path.to_path_buf(),
            out: std::io::BufWriter::new(file),
        };
        samples.put(b"end_us,latency_us,class\n")?;
        Ok(samples)
    }

    fn put(&mut self, bytes: &[u8]) -> Result<(), Error> {
        use std::io::Write;
        self.out.write_all(bytes).map_err(|e| Error::Output {
            path: self.path.clone(),
            source: e,
        })
    }

    fn write(&mut self, samples: &[(u64, u64, u16)]) -> Result<(), Error> {
        for (end, latency, class) in samples {
            let line = format!("{},{},{class}\n", end / 1000, latency / 1000);
            self.put(line.as_bytes())?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), Error> {
        use std::io::Write;
        self.out.flush().map_err(|e| Error::Output {
            path: self.path.clone(),
            source: e,
        })
    }
}

/// The generator's self-check: a warning when its busiest thread was saturated over the run,
/// or in most intervals (then the figures measure the generator, not the server).
fn self_check(busiest: f64, interval_busy: &[f64]) -> Option<String> {
    let saturated = interval_busy.iter().filter(|b| **b >= BUSY).count();
    (busiest >= BUSY || saturated * 2 > interval_busy.len().max(1)).then(|| {
        format!(
            "the generator was the bottleneck (its busiest thread used {:.0}% of a core): \
             these figures measure webscope load as much as the server; add threads (-t) or \
             cores, or lower the load",
            busiest.max(interval_busy.iter().cloned().fold(0.0, f64::max)) * 100.0
        )
    })
}

/// Turns an assembled interval into its report line (and its interval-log lines).
fn finish_interval(
    config: &Config,
    start: Instant,
    index: usize,
    done: &Pending,
    hlog: Option<&mut Hlog>,
) -> Result<IntervalReport, Error> {
    let begun = config.interval * index as u32;
    let length = done
        .at
        .saturating_duration_since(start + begun)
        .max(Duration::from_micros(1));
    let total = done.recorder.total();
    if let Some(log) = hlog {
        log.write(&total.latency, begun, length, None)?;
        if config.target.classes.len() > 1 {
            for (name, class) in config.target.classes.iter().zip(&done.recorder.classes) {
                log.write(&class.latency, begun, length, Some(name))?;
            }
        }
        log.flush()?;
    }
    let seconds = length.as_secs_f64();
    Ok(IntervalReport {
        start_s: begun.as_secs_f64(),
        duration_s: seconds,
        requests: total.requests,
        errors: total.failed(),
        requests_per_s: total.requests as f64 / seconds,
        bytes_per_s: total.bytes as f64 / seconds,
        latency_us: Latency::of(&total.latency),
        generator_busy: done.busiest,
        connections: done.connections,
    })
}

fn build_report(
    config: &Config,
    totals: &Recorder,
    duration: f64,
    interrupted: bool,
    intervals: Vec<IntervalReport>,
    not_sent: u64,
) -> Report {
    let open_loop = matches!(config.pacing, Pacing::Open { .. });
    let (rate, arrivals) = match config.pacing {
        Pacing::Open { rate, arrivals, .. } => (
            Some(rate),
            Some(match arrivals {
                Arrivals::Constant => "constant".to_string(),
                Arrivals::Poisson => "poisson".to_string(),
            }),
        ),
        Pacing::Closed { .. } => (None, None),
    };
    let (_, segments) = config.segment_or_whole();
    let mut report = Report {
        target: config.target.description.clone(),
        mode: match config.mode {
            Mode::KeepAlive => "keep-alive".to_string(),
            Mode::Close => "close".to_string(),
        },
        pacing: if open_loop { "open" } else { "closed" }.to_string(),
        protocol: match config.http2 {
            Some(1) => "HTTP/2 (1 stream per connection)".to_string(),
            Some(streams) => format!("HTTP/2 ({streams} streams per connection)"),
            None => "HTTP/1.1".to_string(),
        },
        // A segment's share of the rate and of the connections.
        rate: rate.map(|r| r / segments as f64),
        arrivals,
        connections: config.connections,
        threads: config.threads,
        started_unix_s: 0.0,
        duration_s: duration,
        interrupted,
        requests: 0,
        errors: Errors::default(),
        not_sent,
        connects: 0,
        requests_per_s: 0.0,
        bytes: 0,
        bytes_per_s: 0.0,
        latency_us: Latency::default(),
        uncorrected_latency_us: None,
        ttfb_us: Latency::default(),
        connect_us: None,
        tls: None,
        status_codes: BTreeMap::new(),
        classes: Vec::new(),
        intervals,
        generator_cpu_s: 0.0,
        generator_cpu_per_request_us: 0.0,
        generator_busy: 0.0,
        generator_busy_or_waiting: 0.0,
        warnings: Vec::new(),
        segment: None,
        host: hostname(),
        start_late_s: 0.0,
        histograms: None,
        generators: Vec::new(),
    };
    fill(
        &mut report,
        &config.target.classes,
        totals,
        duration,
        open_loop,
    );
    report
}

/// Sets a report's figures from what was recorded (`totals`, over `duration` seconds): the
/// counters, percentiles from the whole histograms, per class and in total. A single run and a
/// merge of segments both come through here.
pub(crate) fn fill(
    report: &mut Report,
    classes: &[String],
    totals: &Recorder,
    duration: f64,
    open_loop: bool,
) {
    let all: ClassStats = totals.total();
    let whole = ClassReport::of("total", &all, duration, open_loop);
    report.duration_s = duration;
    report.requests = whole.requests;
    report.errors = Errors::of(&all.failures);
    report.connects = totals.connections;
    report.requests_per_s = whole.requests_per_s;
    report.bytes = whole.bytes;
    report.bytes_per_s = whole.bytes_per_s;
    report.latency_us = whole.latency_us;
    report.uncorrected_latency_us = whole.uncorrected_latency_us;
    report.ttfb_us = whole.ttfb_us;
    report.connect_us = whole.connect_us;
    report.tls = (totals.tls_full + totals.tls_resumed > 0).then(|| crate::report::TlsReport {
        full: totals.tls_full,
        resumed: totals.tls_resumed,
        handshake_us: Latency::of(&all.handshake),
    });
    report.status_codes = totals
        .statuses
        .iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(code, n)| (code.to_string(), *n))
        .collect();
    report.classes = classes
        .iter()
        .zip(&totals.classes)
        .map(|(name, stats)| ClassReport::of(name, stats, duration, open_loop))
        .collect();
}

/// This machine's name, for the table of a merged run's generators.
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpListener;

    /// A tiny keep-alive server: answers every request with `body` bytes (or with `head`
    /// verbatim when given), one thread per connection, for `life`.
    fn serve(head: Option<&'static [u8]>, body: usize) -> std::net::SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                std::thread::spawn(move || {
                    let mut buf = [0u8; 4096];
                    let mut pending = Vec::new();
                    loop {
                        let n = match stream.read(&mut buf) {
                            Ok(0) | Err(_) => return,
                            Ok(n) => n,
                        };
                        pending.extend_from_slice(&buf[..n]);
                        while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                            let close = String::from_utf8_lossy(&pending[..end])
                                .contains("Connection: close");
                            pending.drain(..end + 4);
                            let reply = match head {
                                Some(raw) => raw.to_vec(),
                                None => {
                                    let mut r = format!(
                                        "HTTP/1.1 200 OK\r\nContent-Length: {body}\r\n\r\n"
                                    )
                                    .into_bytes();
                                    r.resize(r.len() + body, b'x');
                                    r
                                }
                            };
                            if stream.write_all(&reply).is_err() || close || head.is_some() {
                                return;
                            }
                        }
                    }
                });
            }
        });
        addr
    }

    fn config(addr: std::net::SocketAddr) -> Config {
        let mut config = Config::new(Target::url(&format!("http://{addr}/x")).unwrap());
        config.connections = 2;
        config.threads = 1;
        config.duration = Duration::from_millis(400);
        config.interval = Duration::from_millis(100);
        config
    }

    use crate::target::Target;

    #[test]
    fn the_self_check_warns_when_the_generator_is_saturated() {
        assert!(self_check(0.5, &[0.4, 0.5, 0.6]).is_none());
        assert!(self_check(0.95, &[0.95, 0.95])
            .unwrap()
            .contains("bottleneck"));
        // Saturated in most intervals though not on average (a burst of work).
        assert!(self_check(0.8, &[0.95, 0.97, 0.5]).unwrap().contains("97%"));
        assert!(self_check(0.8, &[0.95, 0.5, 0.5]).is_none());
        assert!(self_check(0.0, &[]).is_none());
    }

    #[test]
    fn counts_requests_bytes_and_intervals() {
        let addr = serve(None, 100);
        let mut seen = 0;
        let report = run(&config(addr), &AtomicBool::new(false), &mut |_| seen += 1).unwrap();
        assert!(report.requests > 100, "{report:#?}");
        assert_eq!(report.errors.total, 0, "{report:#?}");
        assert!(report.bytes >= report.requests * 100);
        assert_eq!(report.status_codes.get("200"), Some(&report.requests));
        assert_eq!(seen, report.intervals.len());
        assert_eq!(report.intervals.len(), 4);
        let summed: u64 = report.intervals.iter().map(|i| i.requests).sum();
        assert_eq!(summed, report.requests);
        assert_eq!(report.connects, 2);
        assert!(report.latency_us.p50 > 0.0 && report.latency_us.max >= report.latency_us.p99);
    }

    #[test]
    fn close_mode_opens_a_connection_per_request() {
        let addr = serve(None, 10);
        let mut config = config(addr);
        config.mode = Mode::Close;
        let report = run(&config, &AtomicBool::new(false), &mut |_| {}).unwrap();
        assert!(report.requests > 20, "{report:#?}");
        // One connect per request; those in flight when the run ended count too.
        let finished = report.requests + report.errors.total;
        assert!(
            (finished..=finished + 2).contains(&report.connects),
            "{} connects for {finished} requests",
            report.connects
        );
        assert!(report.connect_us.is_some());
    }

    #[test]
    fn failures_are_counted_by_kind_and_never_stop_the_run() {
        let cases: [(&'static [u8], usize); 3] = [
            (b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", 4),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort", 5),
            (b"SSH-2.0-OpenSSH\r\n\r\n", 6),
        ];
        for (head, kind) in cases {
            let addr = serve(Some(head), 0);
            let report = run(&config(addr), &AtomicBool::new(false), &mut |_| {}).unwrap();
            let by_kind = [
                report.errors.connect_refused,
                report.errors.connect,
                report.errors.reset,
                report.errors.timeout,
                report.errors.bad_status,
                report.errors.short_body,
                report.errors.parse_error,
            ];
            assert!(
                by_kind[kind] > 0,
                "{}: {:?}",
                FAILURES_NAMES[kind],
                report.errors
            );
        }
        // Nothing listening: connections refused.
        let free = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let report = run(&config(free), &AtomicBool::new(false), &mut |_| {}).unwrap();
        assert!(report.errors.connect_refused > 0, "{:?}", report.errors);
        assert_eq!(report.requests, 0);
        assert!(report
            .warnings
            .iter()
            .any(|w| w.contains("no request succeeded")));
    }

    const FAILURES_NAMES: [&str; 10] = crate::recorder::FAILURES;

    #[test]
    fn a_stalled_server_gives_timeouts_and_fresh_connections() {
        // Accepts, reads, never answers; keeps every connection open until the test ends.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for stream in listener.incoming().flatten() {
                held.push(stream);
            }
        });
        let mut config = config(addr);
        config.timeout = Duration::from_millis(100);
        config.duration = Duration::from_millis(550);
        let report = run(&config, &AtomicBool::new(false), &mut |_| {}).unwrap();
        assert_eq!(report.requests, 0);
        // Two connections, each timing out about every 100-110 ms.
        assert!(
            (6..=12).contains(&report.errors.timeout),
            "{:?}",
            report.errors
        );
        assert!(report.connects >= report.errors.timeout);
    }

    #[test]
    fn open_loop_keeps_the_rate() {
        let addr = serve(None, 10);
        let mut config = config(addr);
        config.duration = Duration::from_secs(1);
        config.pacing = Pacing::Open {
            rate: 1000.0,
            arrivals: Arrivals::Constant,
            max_connections: 100,
        };
        let report = run(&config, &AtomicBool::new(false), &mut |_| {}).unwrap();
        assert!(
            (report.requests as f64 - 1000.0).abs() <= 20.0,
            "{report:#?}"
        );
        assert_eq!(report.not_sent, 0);
        assert!(report.uncorrected_latency_us.is_some());
    }

    #[test]
    fn an_interrupt_ends_the_run_early_with_its_figures() {
        let addr = serve(None, 10);
        let mut config = config(addr);
        config.duration = Duration::from_secs(30);
        let interrupt = AtomicBool::new(false);
        let began = Instant::now();
        let report = run(&config, &interrupt, &mut |i| {
            if i.start_s >= 0.2 {
                interrupt.store(true, Ordering::Relaxed);
            }
        })
        .unwrap();
        assert!(began.elapsed() < Duration::from_secs(5));
        assert!(report.interrupted);
        assert!(report.requests > 0);
        assert!(report.duration_s < 2.0, "{}", report.duration_s);
    }

    /// Runs the `segments` segments of `config` at once, each on its own thread, as separate
    /// generators would; returns their parts (reports and interval logs).
    fn segments(config: &Config, segments: usize, dir: &std::path::Path) -> Vec<crate::Part> {
        let start = SystemTime::now() + Duration::from_millis(200);
        let handles: Vec<_> = (0..segments)
            .map(|i| {
                let mut config = config.clone();
                config.segment = Some((i, segments));
                config.start_at = Some(start);
                config.hlog = Some(dir.join(format!("seg{i}.hlog")));
                std::thread::spawn(move || {
                    let report = run(&config, &AtomicBool::new(false), &mut |_| {}).unwrap();
                    (report, config.hlog.unwrap())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                let (report, hlog) = h.join().unwrap();
                let log = std::fs::read(hlog).unwrap();
                crate::Part { report, log }
            })
            .collect()
    }

    #[test]
    fn segments_share_connections_as_one_run_would_and_merge_exactly() {
        let addr = serve(None, 100);
        let dir = tempfile::tempdir().unwrap();
        let mut config = config(addr);
        config.connections = 10;
        config.duration = Duration::from_millis(600);
        let parts = segments(&config, 3, dir.path());
        let shares: Vec<usize> = parts.iter().map(|p| p.report.connections).collect();
        assert_eq!(shares, [4, 3, 3]);
        for (i, p) in parts.iter().enumerate() {
            assert_eq!(p.report.segment.as_deref(), Some(format!("{i}/3").as_str()));
            assert!(p.report.histograms.is_some());
            // All three began on the same instant: their logs share a base time.
            assert!((p.report.started_unix_s - parts[0].report.started_unix_s).abs() < 1e-6);
        }
        let merged_log = dir.path().join("merged.hlog");
        let merged = crate::merge(&parts, Some(&merged_log)).unwrap();
        assert_eq!(
            merged.requests,
            parts.iter().map(|p| p.report.requests).sum::<u64>()
        );
        assert_eq!(
            merged.connects,
            parts.iter().map(|p| p.report.connects).sum::<u64>()
        );
        assert_eq!(merged.connections, 10);
        assert_eq!(merged.generators.len(), 3);
        // The same requests in one histogram, by another road (every interval of every
        // segment's log): the merged percentiles are its percentiles, exactly.
        let mut one = crate::recorder::histogram();
        for p in &parts {
            for i in crate::parse_intervals(&p.log, None).unwrap() {
                one.add(&i.histogram).unwrap();
            }
        }
        assert_eq!(one.len(), merged.requests);
        let of = Latency::of(&one);
        assert_eq!(merged.latency_us.p50, of.p50);
        assert_eq!(merged.latency_us.p99, of.p99);
        assert_eq!(merged.latency_us.p999, of.p999);
        assert_eq!(merged.latency_us.max, of.max);
        // Intervals added by index, and the merged log holds them.
        let summed: u64 = merged.intervals.iter().map(|i| i.requests).sum();
        assert_eq!(summed, merged.requests);
        let logged: u64 = crate::read_intervals(&merged_log, None)
            .unwrap()
            .iter()
            .map(|i| i.histogram.len())
            .sum();
        assert_eq!(logged, merged.requests);
    }

    #[test]
    fn open_loop_segments_add_up_to_the_rate() {
        let addr = serve(None, 10);
        let dir = tempfile::tempdir().unwrap();
        let mut config = config(addr);
        config.connections = 3;
        config.duration = Duration::from_secs(1);
        config.pacing = Pacing::Open {
            rate: 900.0,
            arrivals: Arrivals::Constant,
            max_connections: 90,
        };
        let parts = segments(&config, 3, dir.path());
        for p in &parts {
            assert_eq!(p.report.rate, Some(300.0));
            let n = p.report.requests as f64;
            assert!((n - 300.0).abs() <= 10.0, "{n}");
        }
        let merged = crate::merge(&parts, None).unwrap();
        assert_eq!(merged.rate, Some(900.0));
        assert!(
            (merged.requests as f64 - 900.0).abs() <= 20.0,
            "{}",
            merged.requests
        );
    }

    #[test]
    fn a_merge_of_part_of_a_run_or_of_two_runs_is_refused() {
        let addr = serve(None, 10);
        let dir = tempfile::tempdir().unwrap();
        let mut config = config(addr);
        config.connections = 3;
        config.duration = Duration::from_millis(300);
        let mut parts = segments(&config, 3, dir.path());
        let third = parts.pop().unwrap();
        let err = crate::merge(&parts, None).unwrap_err().to_string();
        assert!(err.contains("segment 2/3 missing"), "{err}");
        parts.push(third);
        let mut again = segments(&config, 3, dir.path());
        parts[1] = again.remove(0);
        let err = crate::merge(&parts, None).unwrap_err().to_string();
        assert!(err.contains("segment 0/3 given twice"), "{err}");
        let whole = run(&config, &AtomicBool::new(false), &mut |_| {}).unwrap();
        let err = crate::merge(
            &[crate::Part {
                report: whole,
                log: Vec::new(),
            }],
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("not a segment"), "{err}");
    }

    #[test]
    fn a_start_that_has_passed_begins_at_once_and_says_how_late() {
        let addr = serve(None, 10);
        let mut config = config(addr);
        config.start_at = Some(SystemTime::now() - Duration::from_millis(150));
        config.duration = Duration::from_millis(400);
        let report = run(&config, &AtomicBool::new(false), &mut |_| {}).unwrap();
        assert!(report.start_late_s >= 0.15, "{}", report.start_late_s);
        assert!(report
            .warnings
            .iter()
            .any(|w| w.contains("after --start-at")));
        assert!(report.requests > 0);
        // The window is the asked one: it ends 400 ms after the asked start.
        assert!(report.duration_s < 0.45, "{}", report.duration_s);
    }

    #[test]
    fn segments_are_checked() {
        let addr = serve(None, 10);
        let mut config = config(addr);
        config.connections = 2;
        config.segment = Some((0, 3));
        let err = config.check().unwrap_err().to_string();
        assert!(err.contains("-c must be at least 3"), "{err}");
        config.segment = Some((3, 3));
        assert!(config
            .check()
            .unwrap_err()
            .to_string()
            .contains("0 <= I < N"));
    }

    /// A TLS server (rustls, blocking, a thread per connection) with a self-signed certificate
    /// for `names`, answering every request with `body` bytes; returns its address and the
    /// certificate as a PEM file (the CA to trust).
    fn serve_tls(
        names: &[&str],
        body: usize,
        dir: &std::path::Path,
    ) -> (std::net::SocketAddr, std::path::PathBuf) {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        serve_tls_with(
            rcgen::generate_simple_self_signed(names).unwrap(),
            body,
            dir,
        )
    }

    /// [`serve_tls`] with a certificate made elsewhere.
    fn serve_tls_with(
        certified: rcgen::CertifiedKey,
        body: usize,
        dir: &std::path::Path,
    ) -> (std::net::SocketAddr, std::path::PathBuf) {
        use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
        let pem = dir.join("ca.pem");
        std::fs::write(&pem, certified.cert.pem()).unwrap();
        let cert: CertificateDer<'static> = certified.cert.der().clone();
        let key =
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(certified.key_pair.serialize_der()));
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let config = std::sync::Arc::new(
            rustls::ServerConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_no_client_auth()
                .with_single_cert(vec![cert], key)
                .unwrap(),
        );
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let config = std::sync::Arc::clone(&config);
                std::thread::spawn(move || {
                    let conn = rustls::ServerConnection::new(config).unwrap();
                    let mut tls = rustls::StreamOwned::new(conn, stream);
                    let mut buf = [0u8; 4096];
                    let mut pending = Vec::new();
                    loop {
                        let n = match tls.read(&mut buf) {
                            Ok(0) | Err(_) => return,
                            Ok(n) => n,
                        };
                        pending.extend_from_slice(&buf[..n]);
                        while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                            let close = String::from_utf8_lossy(&pending[..end])
                                .contains("Connection: close");
                            pending.drain(..end + 4);
                            let mut reply =
                                format!("HTTP/1.1 200 OK\r\nContent-Length: {body}\r\n\r\n")
                                    .into_bytes();
                            reply.resize(reply.len() + body, b'x');
                            if tls.write_all(&reply).is_err() {
                                return;
                            }
                            if close {
                                tls.conn.send_close_notify();
                                let _ = tls.flush();
                                return;
                            }
                        }
                    }
                });
            }
        });
        (addr, pem)
    }

    fn https(addr: std::net::SocketAddr) -> Config {
        let mut config = Config::new(Target::url(&format!("https://{addr}/x")).unwrap());
        config.connections = 2;
        config.duration = Duration::from_millis(400);
        config.interval = Duration::from_millis(100);
        config
    }

    #[test]
    fn https_keep_alive_makes_one_handshake_per_connection() {
        let dir = tempfile::tempdir().unwrap();
        let (addr, ca) = serve_tls(&["127.0.0.1"], 100, dir.path());
        let mut config = https(addr);
        config.tls.cacert = Some(ca);
        let report = run(&config, &AtomicBool::new(false), &mut |_| {}).unwrap();
        assert!(report.requests > 50, "{report:#?}");
        assert_eq!(
            report.errors.total, 0,
            "{:?} {:?}",
            report.errors, report.warnings
        );
        let tls = report.tls.unwrap();
        assert_eq!((tls.full, tls.resumed), (2, 0));
        assert!(tls.handshake_us.p50 > 0.0);
        assert!(report.bytes >= report.requests * 100);
    }

    #[test]
    fn https_close_mode_resumes_sessions_unless_told_not_to() {
        let dir = tempfile::tempdir().unwrap();
        let (addr, ca) = serve_tls(&["127.0.0.1"], 10, dir.path());
        let mut config = https(addr);
        config.mode = Mode::Close;
        config.tls.cacert = Some(ca);
        let report = run(&config, &AtomicBool::new(false), &mut |_| {}).unwrap();
        assert_eq!(
            report.errors.total, 0,
            "{:?} {:?}",
            report.errors, report.warnings
        );
        let tls = report.tls.unwrap();
        assert!(tls.resumed > tls.full, "{tls:?}");
        assert!(
            tls.full + tls.resumed >= report.requests,
            "{tls:?} for {}",
            report.requests
        );
        config.tls.no_resume = true;
        let report = run(&config, &AtomicBool::new(false), &mut |_| {}).unwrap();
        let tls = report.tls.unwrap();
        assert_eq!(tls.resumed, 0, "{tls:?}");
        assert!(tls.full >= report.requests, "{tls:?}");
    }

    #[test]
    fn failed_handshakes_are_counted_and_say_why() {
        let dir = tempfile::tempdir().unwrap();
        // No CA given: the self-signed certificate is unknown.
        let (addr, ca) = serve_tls(&["127.0.0.1"], 10, dir.path());
        let report = run(&https(addr), &AtomicBool::new(false), &mut |_| {}).unwrap();
        assert_eq!(report.requests, 0);
        assert!(report.errors.tls > 0, "{:?}", report.errors);
        assert!(
            report.warnings.iter().any(|w| w.contains("unknown CA")),
            "{:?}",
            report.warnings
        );
        // --insecure: the same server is fine.
        let mut config = https(addr);
        config.tls.insecure = true;
        let report = run(&config, &AtomicBool::new(false), &mut |_| {}).unwrap();
        assert!(
            report.requests > 0 && report.errors.total == 0,
            "{:?}",
            report.warnings
        );
        // A certificate for another name.
        let other = tempfile::tempdir().unwrap();
        let (addr, ca_other) = serve_tls(&["other.example"], 10, other.path());
        let mut config = https(addr);
        config.tls.cacert = Some(ca_other);
        let report = run(&config, &AtomicBool::new(false), &mut |_| {}).unwrap();
        assert!(
            report
                .warnings
                .iter()
                .any(|w| w.contains("not valid for the URL's host name")),
            "{:?}",
            report.warnings
        );
        // A CA certificate presented as the server's (openssl req -x509 without
        // basicConstraints CA:FALSE makes one), trusted as the CA it is.
        let ca_dir = tempfile::tempdir().unwrap();
        let key_pair = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let cert = params.self_signed(&key_pair).unwrap();
        let (addr, ca_cert) =
            serve_tls_with(rcgen::CertifiedKey { cert, key_pair }, 10, ca_dir.path());
        let mut config = https(addr);
        config.tls.cacert = Some(ca_cert);
        let report = run(&config, &AtomicBool::new(false), &mut |_| {}).unwrap();
        assert!(
            report
                .warnings
                .iter()
                .any(|w| w.contains("is a CA certificate") && w.contains("re-issue it as a leaf")),
            "{:?}",
            report.warnings
        );
        // Plain HTTP on the port: a server that answers anything with a 400, as nginx does
        // a ClientHello on a plain port.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let plain = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            for mut stream in listener.incoming().flatten() {
                let mut buf = [0u8; 1024];
                if stream.read(&mut buf).is_ok() {
                    let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                }
            }
        });
        let mut config = https(plain);
        config.tls.cacert = Some(ca);
        let report = run(&config, &AtomicBool::new(false), &mut |_| {}).unwrap();
        assert!(report.errors.tls > 0, "{:?}", report.errors);
        assert!(
            report
                .warnings
                .iter()
                .any(|w| w.contains("does not speak TLS")),
            "{:?}",
            report.warnings
        );
    }

    /// Requests a test server was sent: each one's head and body.
    type Seen = std::sync::Arc<std::sync::Mutex<Vec<(String, Vec<u8>)>>>;

    /// A server that keeps what it was sent (each request's head and body) and answers 200
    /// with a 5-byte body, or, to a HEAD, the same head with no body.
    fn capture() -> (std::net::SocketAddr, Seen) {
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let keep = std::sync::Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let keep = std::sync::Arc::clone(&keep);
                std::thread::spawn(move || {
                    let mut pending = Vec::new();
                    let mut buf = [0u8; 4096];
                    loop {
                        while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                            let head = String::from_utf8_lossy(&pending[..end]).to_string();
                            let length: usize = head
                                .lines()
                                .find_map(|l| l.strip_prefix("Content-Length: "))
                                .map_or(0, |n| n.trim().parse().unwrap());
                            if pending.len() < end + 4 + length {
                                break;
                            }
                            let body = pending[end + 4..end + 4 + length].to_vec();
                            pending.drain(..end + 4 + length);
                            let reply: &[u8] = if head.starts_with("HEAD ") {
                                b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"
                            } else {
                                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
                            };
                            keep.lock().unwrap().push((head, body));
                            if stream.write_all(reply).is_err() {
                                return;
                            }
                        }
                        match stream.read(&mut buf) {
                            Ok(0) | Err(_) => return,
                            Ok(n) => pending.extend_from_slice(&buf[..n]),
                        }
                    }
                });
            }
        });
        (addr, seen)
    }

    #[test]
    fn a_method_and_a_body_go_with_every_request() {
        let (addr, seen) = capture();
        let mut config = config(addr);
        config.method = "POST".into();
        config.body = b"{\"a\":1}".to_vec();
        let report = run(&config, &AtomicBool::new(false), &mut |_| {}).unwrap();
        assert!(
            report.requests > 10 && report.errors.total == 0,
            "{report:#?}"
        );
        let seen = seen.lock().unwrap();
        let (head, body) = &seen[0];
        assert!(head.starts_with("POST /x HTTP/1.1\r\n"), "{head}");
        assert!(head.contains("Content-Length: 7"), "{head}");
        assert_eq!(body, b"{\"a\":1}");
        config.method = "post".into();
        assert!(config
            .check()
            .unwrap_err()
            .to_string()
            .contains("in capitals"));
    }

    #[test]
    fn a_request_list_sends_each_request_as_written_and_reports_each_as_a_class() {
        let (addr, seen) = capture();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("body.json"), "{\"n\":2}").unwrap();
        let list = dir.path().join("targets.txt");
        std::fs::write(
            &list,
            format!(
                "# weight 2\nGET http://{addr}/a\n\nPOST http://{addr}/b\nContent-Type: application/json\n@body.json\n\nHEAD http://{addr}/c\nX-Test: 1\n"
            ),
        )
        .unwrap();
        let target = Target::request_list(&list).unwrap();
        assert_eq!(target.classes, ["GET /a", "POST /b", "HEAD /c"]);
        assert_eq!(target.weights, [2.0, 1.0, 1.0]);
        let mut config = Config::new(target);
        config.connections = 2;
        config.duration = Duration::from_millis(400);
        let report = run(&config, &AtomicBool::new(false), &mut |_| {}).unwrap();
        assert_eq!(report.errors.total, 0, "{report:#?}");
        let counts: Vec<u64> = report.classes.iter().map(|c| c.requests).collect();
        assert!(counts.iter().all(|n| *n > 10), "{counts:?}");
        // GET /a drawn about twice as often as each of the others.
        assert!(counts[0] as f64 > 1.5 * counts[1] as f64, "{counts:?}");
        let seen = seen.lock().unwrap();
        let post = seen
            .iter()
            .find(|(h, _)| h.starts_with("POST /b "))
            .unwrap();
        assert!(post.0.contains("Content-Type: application/json"));
        assert_eq!(post.1, b"{\"n\":2}");
        let head = seen
            .iter()
            .find(|(h, _)| h.starts_with("HEAD /c "))
            .unwrap();
        assert!(head.0.contains("X-Test: 1"), "{}", head.0);
    }

    #[test]
    fn a_bad_request_list_says_which_line() {
        let dir = tempfile::tempdir().unwrap();
        let list = dir.path().join("t.txt");
        for (text, says) in [
            ("GET http://127.0.0.1:1/a\nnot a header\n", "line 2"),
            ("get http://127.0.0.1:1/a\n", "is not a method"),
            (
                "GET http://127.0.0.1:1/a\n\nGET http://127.0.0.2:1/b\n",
                "not on the first request's server",
            ),
            ("GET http://127.0.0.1:1/a\n@missing.json\n", "body file"),
            ("# nothing\n", "no request in it"),
        ] {
            std::fs::write(&list, text).unwrap();
            let err = Target::request_list(&list).unwrap_err().to_string();
            assert!(err.contains(says), "{text:?}: {err}");
        }
    }
}
