//! Report assembly: a [`Report`] made from what the workers recorded. A single run comes here
//! from the coordinator ([`report`], with the coordinator's own measures in [`RunFigures`]),
//! a merge of segments from `merge` ([`fill`] alone), each interval's line from the
//! coordinator ([`interval`]); so a merged percentile and a single run's are computed by the
//! same code. Not for running (the coordinator) nor for reading a report back (`merge`).

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use webscope_report::human::pct_brief;

use super::histograms;
use super::text::format_us;
use super::{ClassReport, Errors, Figures, IntervalReport, Latency, Report, RunCounts, TlsReport};
use crate::config::{Arrivals, Config, Mode, Pacing};
use crate::recorder::{ClassStats, Recorder};
use crate::replay::{pairs, ReplayReport, NOTE};

/// A thread busier than this (fraction of wall time) is saturated: the run measures it.
const BUSY: f64 = 0.9;

/// A start later than this after `--start-at` is worth a warning.
const LATE: Duration = Duration::from_millis(50);

impl<Run> Figures<Run> {
    /// The figures of `stats`, recorded over `seconds`.
    pub(crate) fn of(stats: &ClassStats, seconds: f64, open_loop: bool, run: Run) -> Figures<Run> {
        let per_s = |n: u64| {
            if seconds > 0.0 {
                n as f64 / seconds
            } else {
                0.0
            }
        };
        Figures {
            requests: stats.requests,
            errors: Errors::of(&stats.failures, stats.bad_status),
            unfinished: stats.unfinished.len(),
            unfinished_age_us: (!stats.unfinished.is_empty())
                .then(|| Latency::of(&stats.unfinished)),
            run,
            requests_per_s: per_s(stats.requests),
            bytes: stats.bytes,
            bytes_per_s: per_s(stats.bytes),
            latency_us: Latency::of(&stats.latency),
            uncorrected_latency_us: open_loop.then(|| Latency::of(&stats.uncorrected)),
            ttfb_us: Latency::of(&stats.ttfb),
            connect_us: (!stats.connect.is_empty()).then(|| Latency::of(&stats.connect)),
        }
    }
}

impl ClassReport {
    pub(crate) fn of(name: &str, stats: &ClassStats, seconds: f64, open_loop: bool) -> ClassReport {
        ClassReport {
            name: name.to_string(),
            figures: Figures::of(stats, seconds, open_loop, ()),
            tls_handshake_us: (!stats.handshake.is_empty()).then(|| Latency::of(&stats.handshake)),
        }
    }
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
    let run = RunCounts {
        not_sent: report.total.run.not_sent,
        connects: totals.connections,
        late_sends: open_loop.then_some(totals.late_sends),
    };
    report.duration_s = duration;
    report.total = Figures::of(&all, duration, open_loop, run);
    report.latency_histogram = Some(all.latency.clone());
    report.tls = (totals.tls_full + totals.tls_resumed > 0).then(|| TlsReport {
        full: totals.tls_full,
        resumed: totals.tls_resumed,
        early: totals.tls_early,
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

/// The line of the interval that began `begun` after the run's start and lasted `length`:
/// `total` is what every class recorded in it, `busiest` its busiest thread's share of it.
pub(crate) fn interval(
    begun: Duration,
    length: Duration,
    total: &ClassStats,
    busiest: f64,
    connections: usize,
) -> IntervalReport {
    let seconds = length.as_secs_f64();
    IntervalReport {
        start_s: begun.as_secs_f64(),
        duration_s: seconds,
        requests: total.requests,
        // The default expectation's errors, for the live page's line: no response, or a
        // status of 400 and above.
        errors: total.failed() + total.bad_status,
        requests_per_s: total.requests as f64 / seconds,
        bytes_per_s: total.bytes as f64 / seconds,
        latency_us: Latency::of(&total.latency),
        generator_busy: busiest,
        connections,
        offered: None,
        users: None,
    }
}

/// What the coordinator measured of a run, beside its recorders.
pub(crate) struct RunFigures<'a> {
    /// Everything every worker recorded.
    pub totals: &'a Recorder,
    /// From the start to the last worker's end, seconds.
    pub duration: f64,
    /// Whether the run was interrupted.
    pub interrupted: bool,
    pub intervals: Vec<IntervalReport>,
    /// Open loop: slots never sent.
    pub not_sent: u64,
    /// This process's share of the connections (a segment's).
    pub connections: usize,
    /// When the run started (wall clock), and how late after `--start-at`.
    pub started: SystemTime,
    pub late: Duration,
    /// Why the kernel refused `--busy-poll`, if it did.
    pub busy_poll_refused: Option<String>,
    /// The open loop's `--max-connections` cut to what this process may open, said.
    pub ceiling_cut: Option<String>,
    /// The generator's CPU time over the run.
    pub cpu: Duration,
    /// The busiest thread's CPU share, and the largest share a thread ran or waited for a CPU.
    pub busiest: f64,
    pub least_idle: f64,
    /// A replay: the slots its feed handed to this process's threads per interval, and why
    /// it stopped reading the log early, if it did.
    pub fed: Option<(BTreeMap<u64, u64>, Option<String>)>,
}

/// A single run's report.
pub(crate) fn report(config: &Config, run: RunFigures) -> Report {
    let mut report = described(config, run.duration, run.interrupted, run.intervals);
    report.total.run.not_sent = run.not_sent;
    fill(
        &mut report,
        &config.target.classes,
        run.totals,
        run.duration,
        matches!(config.pacing, Pacing::Open { .. }),
    );
    if let Some((segment, segments)) = config.segment {
        report.connections = run.connections;
        report.segment = Some(format!("{segment}/{segments}"));
        report.histograms = Some(histograms::encode(run.totals));
    }
    replay_figures(config, &mut report, run.totals, run.fed);
    super::users::fill(config, &mut report, &run.totals.users);
    report.start_late_s = run.late.as_secs_f64();
    if let Some(said) = run.ceiling_cut {
        report.warnings.push(said);
    }
    if let Some(why) = run.busy_poll_refused {
        report
            .warnings
            .push(format!("--busy-poll: {why}; run without it"));
    }
    if let Some(cause) = &run.totals.tls_error {
        report.warnings.push(format!("TLS: {cause}"));
    }
    if let Some(cause) = &run.totals.h2_error {
        let protocol = if config.http3.is_some() {
            "HTTP/3"
        } else {
            "HTTP/2"
        };
        report.warnings.push(format!("{protocol}: {cause}"));
    }
    if run.late > LATE {
        report.warnings.push(format!(
            "started {:.3} s after --start-at: its intervals are aligned to that instant, but its first one is short",
            run.late.as_secs_f64()
        ));
    }
    report.started_unix_s = run
        .started
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64();
    report.generator_cpu_s = run.cpu.as_secs_f64();
    report.generator_cpu_per_request_us = if report.total.requests > 0 {
        run.cpu.as_secs_f64() * 1e6 / report.total.requests as f64
    } else {
        0.0
    };
    report.generator_busy = run.busiest;
    report.generator_busy_or_waiting = run.least_idle.min(1.0);
    let busy: Vec<f64> = report.intervals.iter().map(|i| i.generator_busy).collect();
    if let Some(warning) = self_check(run.busiest, &busy) {
        report.warnings.push(warning);
    }
    let done = report.outcomes().ended();
    let missed = report.rate.and_then(|rate| {
        crate::missed_rate(rate, report.duration_s, done, report.total.run.not_sent)
    });
    if let Some(missed) = missed {
        report.warnings.push(missed.sentence());
    }
    // Over HTTP/3 a connection is made by its handshake: none completed, none was made.
    let never_connected = config.http3.is_some() && report.tls.is_none();
    if let Some(warning) = nothing_finished(&report.total, never_connected) {
        report.warnings.push(warning);
    }
    report
}

/// The warning of a run in which no response came: what became of its requests (failed, or
/// still unanswered at the end and how old). When no connection was ever made (a QUIC
/// handshake with no answer: UDP blocked), the requests unanswered at the end were never
/// sent, and the errors' own warning says why: no "server that never answers".
fn nothing_finished<Run>(total: &Figures<Run>, never_connected: bool) -> Option<String> {
    if total.requests > 0 || total.errors.no_response() + total.unfinished == 0 {
        return None;
    }
    let ages = total.unfinished_age_us.filter(|_| total.unfinished > 0);
    let Some(ages) = ages.filter(|_| !never_connected) else {
        return Some("no request succeeded: see the errors above".to_string());
    };
    Some(format!(
        "no request succeeded: no response came at all; {} request{} still unanswered at the end (the oldest sent {} before it, the median {}){}: a server that accepts and never answers (or --timeout longer than the run)",
        total.unfinished,
        if total.unfinished == 1 { " was" } else { "s were" },
        format_us(ages.max),
        format_us(ages.p50),
        match total.errors.no_response() {
            0 => String::new(),
            n => format!(", {n} failed"),
        }
    ))
}

/// A report of what `config` asked for, its figures still to be filled.
fn described(
    config: &Config,
    duration: f64,
    interrupted: bool,
    intervals: Vec<IntervalReport>,
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
    Report {
        target: config.target.description.clone(),
        mode: match config.mode {
            Mode::KeepAlive => "keep-alive".to_string(),
            Mode::Close => "close".to_string(),
        },
        pacing: if open_loop {
            super::Loop::Open
        } else {
            super::Loop::Closed
        },
        protocol: match (config.http2, config.http3) {
            // A user's streams are its page view's requests at once (`users.rs` says them).
            (Some(_), _) if config.users.is_some() => "HTTP/2 (a connection per user)".to_string(),
            (None, Some(_)) if config.users.is_some() => {
                "HTTP/3 (a connection per user)".to_string()
            }
            (Some(1), _) => "HTTP/2 (1 stream per connection)".to_string(),
            (Some(streams), _) => format!("HTTP/2 ({streams} streams per connection)"),
            (None, Some(1)) => "HTTP/3 (1 stream per connection)".to_string(),
            (None, Some(streams)) => format!("HTTP/3 ({streams} streams per connection)"),
            (None, None) => "HTTP/1.1".to_string(),
        },
        // A segment's share of the rate and of the connections.
        rate: rate.map(|r| r / segments as f64),
        arrivals,
        connections: config.connections,
        threads: config.threads,
        started_unix_s: 0.0,
        duration_s: duration,
        interrupted,
        total: Figures::default(),
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
        replay: None,
        users: None,
        generators: Vec::new(),
        expect: config.expect.clone(),
        latency_histogram: None,
    }
}

/// A replay's figures: the log's, the status pairs, the late sends; and each interval's
/// offered requests (the slots the feed handed to this process's threads).
fn replay_figures(
    config: &Config,
    report: &mut Report,
    totals: &Recorder,
    fed: Option<(BTreeMap<u64, u64>, Option<String>)>,
) {
    let Some(replay) = &config.replay else {
        return;
    };
    let (offered, read_error) = fed.unwrap_or_default();
    for (i, report) in report.intervals.iter_mut().enumerate() {
        report.offered = Some(offered.get(&(i as u64)).copied().unwrap_or(0));
    }
    report.arrivals = Some("replay".to_string());
    report.replay = Some(ReplayReport {
        log_requests: replay.per_pass,
        speed: replay.speed,
        span_s: replay.span().as_secs_f64(),
        looped: replay.looped,
        skipped_method: replay.skipped_method,
        ranges: replay.ranges,
        conditional: replay.conditional,
        read_error,
        status_mismatches: pairs(&totals.mismatches),
        late_sends: totals.late_sends,
        max_send_delay_us: totals.max_send_delay as f64 / 1000.0,
        note: NOTE.to_string(),
    });
}

/// The generator's self-check: a warning when its busiest thread was saturated over the run,
/// or in most intervals (then the figures measure the generator, not the server).
fn self_check(busiest: f64, interval_busy: &[f64]) -> Option<String> {
    let saturated = interval_busy.iter().filter(|b| **b >= BUSY).count();
    (busiest >= BUSY || saturated * 2 > interval_busy.len().max(1)).then(|| {
        format!(
            "the generator was the bottleneck (its busiest thread used {} of a core): \
             these figures measure webscope load as much as the server; add threads (-t) or \
             cores, or lower the load",
            pct_brief(busiest.max(interval_busy.iter().cloned().fold(0.0, f64::max)))
        )
    })
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

    #[test]
    fn the_self_check_warns_when_the_generator_is_saturated() {
        assert!(self_check(0.5, &[0.4, 0.5, 0.6]).is_none());
        assert!(self_check(0.95, &[0.95, 0.95])
            .unwrap()
            .contains("bottleneck"));
        // Saturated in most intervals though not on average (a burst of work).
        assert!(self_check(0.8, &[0.95, 0.97, 0.5])
            .unwrap()
            .contains("used 97 % of a core"));
        assert!(self_check(0.8, &[0.95, 0.5, 0.5]).is_none());
        assert!(self_check(0.0, &[]).is_none());
    }

    /// A segment's report of known figures, made as a run makes it.
    fn a_segment() -> Report {
        use crate::recorder::{record, Failure};
        let mut target = crate::Target::url("https://127.0.0.1:8443/x").unwrap();
        target.classes = vec!["small".into(), "large".into()];
        let mut config = Config::new(target);
        config.connections = 6;
        config.threads = 2;
        config.segment = Some((1, 3));
        config.pacing = Pacing::Open {
            rate: 900.0,
            arrivals: Arrivals::Poisson,
            max_connections: 60,
        };
        let mut totals = Recorder::new(2);
        for (c, base) in [(0usize, 1_000u64), (1, 50_000)] {
            let s = &mut totals.classes[c];
            for k in 1..=200u64 {
                record(&mut s.latency, base * k);
                record(&mut s.uncorrected, base * k / 2 + 7);
                record(&mut s.ttfb, base * k / 3 + 1);
                if k % 50 == 0 {
                    record(&mut s.connect, 20_000 + k);
                    record(&mut s.handshake, 900_000 + k * 13);
                }
                s.requests += 1;
                s.bytes += 1234 * (c as u64 + 1);
            }
            s.failures[Failure::Timeout as usize] = 3 + c as u64;
            for k in 0..=c as u64 {
                record(&mut s.unfinished, 400_000_000 + k * base);
            }
            s.bad_status = 2;
        }
        totals.statuses[200] = 396;
        totals.statuses[404] = 4;
        totals.statuses[599] = 1;
        totals.connections = 17;
        totals.tls_full = 4;
        totals.tls_resumed = 13;
        totals.tls_error = Some("something".into());
        let first = interval(
            Duration::ZERO,
            Duration::from_secs(1),
            &totals.total(),
            0.25,
            6,
        );
        let first = IntervalReport {
            requests: 200,
            errors: 3,
            requests_per_s: 200.0,
            bytes_per_s: 3702.5,
            latency_us: Latency::of(&totals.classes[0].latency),
            ..first
        };
        let intervals = vec![
            first.clone(),
            IntervalReport {
                start_s: 1.0,
                ..first
            },
        ];
        let mut report = report(
            &config,
            RunFigures {
                totals: &totals,
                duration: 2.0,
                interrupted: false,
                intervals,
                not_sent: 5,
                connections: 2,
                started: UNIX_EPOCH + Duration::from_secs_f64(1_700_000_000.5),
                late: Duration::ZERO,
                busy_poll_refused: None,
                ceiling_cut: None,
                cpu: Duration::from_millis(750),
                busiest: 0.5,
                least_idle: 0.625,
                fed: None,
            },
        );
        report.host = "golden".into();
        report.start_late_s = 0.125;
        report
    }

    /// Compares `actual` with the golden file `testdata/NAME`; with `WEBSCOPE_BLESS=1`, a
    /// change meant to alter the bytes writes them instead (and says so in its commit).
    fn golden(name: &str, actual: &str) {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("testdata")
            .join(name);
        if std::env::var_os("WEBSCOPE_BLESS").is_some() {
            std::fs::write(&path, actual).unwrap();
        }
        let expected = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            actual, expected,
            "{name}: differs (WEBSCOPE_BLESS=1 rewrites it)"
        );
    }

    /// The JSON of a report, of a merge and their summaries are byte for byte what they were
    /// before the run's figures and each class's were made one type (`Figures`, flattened):
    /// the files were written by the code before that change, and changed since only by the
    /// requests unfinished at the end (#28 §5) and by one account of the outcomes (#38:
    /// `errors.total` without the responses of 400 and above, `late_sends`, and the missed
    /// rate judged on the one not-sent limit, 5 % of a 2-s run).
    #[test]
    fn reports_keep_their_bytes() {
        let segment = a_segment();
        let json = serde_json::to_string_pretty(&segment).unwrap();
        golden("report-segment.json", &json);
        let parts: Vec<crate::Part> = (0..3)
            .map(|i| {
                let mut report = segment.clone();
                report.segment = Some(format!("{i}/3"));
                report.intervals.clear();
                crate::Part {
                    report,
                    log: Vec::new(),
                }
            })
            .collect();
        let merged = crate::merge(&parts, None).unwrap();
        let merged_json = serde_json::to_string_pretty(&merged).unwrap();
        // The unfinished add up exactly, per class, their ages' histograms too.
        assert_eq!(merged.total.unfinished, 3 * segment.total.unfinished);
        for (m, s) in merged.classes.iter().zip(&segment.classes) {
            assert_eq!(m.figures.unfinished, 3 * s.figures.unfinished);
            assert_eq!(
                m.figures.unfinished_age_us,
                s.figures.unfinished_age_us.map(|a| Latency {
                    count: 3 * a.count,
                    ..a
                })
            );
        }
        golden("report-merged.json", &merged_json);
        golden(
            "report-summary.txt",
            &format!("{}\n----\n{}", segment.summary(), merged.summary()),
        );
        // Read back (as `webscope merge` and the lab read them), they write the same bytes.
        for text in [json, merged_json] {
            let back: Report = serde_json::from_str(&text).unwrap();
            assert_eq!(serde_json::to_string_pretty(&back).unwrap(), text);
        }
    }
}
