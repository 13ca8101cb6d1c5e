//! The exact merge of a run's segments (`webscope merge`): histograms added, never
//! percentiles averaged.
//!
//! A segment (`--segment I/N`) keeps its whole histograms per class in its report (latency,
//! uncorrected latency, time to first byte, connect time, V2-compressed and base64-encoded)
//! and its per-interval histograms in its interval log. Merging rebuilds each segment's
//! recorder from those and its counters, adds the recorders, and makes the report from the sum
//! with the same code a single run uses, so a merged percentile is the percentile of all the
//! requests; intervals are added by index (`--start-at` aligns them to one wall-clock second).

use std::collections::BTreeMap;
use std::path::Path;
use webscope_report::human::pct_brief;

use crate::hlog::{tag_of, Hlog};
use crate::recorder::{histogram, ClassStats, Recorder, FAILURES, STATUSES};
use crate::replay::ReplayReport;
use crate::report::build::fill;
use crate::report::histograms::decode;
use crate::report::{Generator, IntervalReport, Latency, Report};
use crate::slo::PAGE as PAGE_TAG;
use crate::Error;

/// A segment's result: its report and its interval log (the log's text; its intervals are
/// decoded one tag at a time while merging).
pub struct Part {
    /// Its report (`load --json`).
    pub report: Report,
    /// Its interval log (`--hlog`), as written.
    pub log: Vec<u8>,
}

/// A generator thread busier than this (of its run) saturated it.
const SATURATED: f64 = 0.9;

/// The recorder a segment's report stands for: its histograms and its counters.
fn recorder_of(report: &Report) -> Result<Recorder, String> {
    let segment = report.segment.as_deref().unwrap_or("?");
    let histograms = report.histograms.as_ref().ok_or_else(|| {
        format!("it has no histograms (segment {segment}): merge needs results of `webscope load --segment I/N`")
    })?;
    if histograms.len() != report.classes.len() {
        return Err(format!(
            "{} classes but {} sets of histograms",
            report.classes.len(),
            histograms.len()
        ));
    }
    let mut recorder = Recorder::new(report.classes.len());
    for ((stats, class), h) in recorder
        .classes
        .iter_mut()
        .zip(&report.classes)
        .zip(histograms)
    {
        let figures = &class.figures;
        let e = &figures.errors;
        // A segment written before a histogram was kept has none: empty, as it was.
        let optional = |text: &str| {
            if text.is_empty() {
                Ok(histogram())
            } else {
                decode(text)
            }
        };
        *stats = ClassStats {
            latency: decode(&h.latency)?,
            uncorrected: decode(&h.uncorrected)?,
            ttfb: decode(&h.ttfb)?,
            connect: decode(&h.connect)?,
            handshake: optional(&h.handshake)?,
            unfinished: optional(&h.unfinished)?,
            requests: figures.requests,
            bytes: figures.bytes,
            bad_status: e.bad_status,
            failures: e.as_array(),
        };
        debug_assert_eq!(stats.failures.len(), FAILURES.len());
        if stats.unfinished.len() != figures.unfinished {
            return Err(format!(
                "class {}: {} unfinished requests but {} ages of them",
                class.name,
                figures.unfinished,
                stats.unfinished.len()
            ));
        }
    }
    for (code, n) in &report.status_codes {
        let code: usize = code.parse().map_err(|_| format!("status {code:?}"))?;
        recorder.statuses[code.min(STATUSES - 1)] += n;
    }
    recorder.connections = report.total.run.connects;
    if let Some(tls) = &report.tls {
        recorder.tls_full = tls.full;
        recorder.tls_resumed = tls.resumed;
        recorder.tls_early = tls.early;
    }
    Ok(recorder)
}

/// Checks that the parts are segments of one run: same target, mode, pacing and classes,
/// each segment once, all of them.
fn check(parts: &[Part]) -> Result<usize, Error> {
    let bad = |m: String| Err(Error::Config(m));
    let Some(first) = parts.first() else {
        return bad("nothing to merge: give the segments' results".into());
    };
    let mut seen = BTreeMap::new();
    let mut count = None;
    for part in parts {
        let r = &part.report;
        if r.target != first.report.target
            || r.mode != first.report.mode
            || r.pacing != first.report.pacing
            || r.classes
                .iter()
                .map(|c| &c.name)
                .ne(first.report.classes.iter().map(|c| &c.name))
        {
            return bad(format!(
                "segment {} is of another run ({}, {}, {}) than segment {} ({}, {}, {}): merge the segments of one run",
                r.segment.as_deref().unwrap_or("?"),
                r.target, r.mode, r.pacing,
                first.report.segment.as_deref().unwrap_or("?"),
                first.report.target, first.report.mode, first.report.pacing
            ));
        }
        let Some((i, n)) = r
            .segment
            .as_deref()
            .and_then(|s| s.split_once('/'))
            .and_then(|(i, n)| Some((i.parse::<usize>().ok()?, n.parse::<usize>().ok()?)))
        else {
            return bad(format!(
                "a result of {} is not a segment: run each generator with --segment I/N",
                r.target
            ));
        };
        if *count.get_or_insert(n) != n {
            return bad(format!(
                "segments of {n} and of {} mixed",
                count.unwrap_or(0)
            ));
        }
        if seen.insert(i, ()).is_some() {
            return bad(format!("segment {i}/{n} given twice"));
        }
    }
    let n = count.unwrap_or(0);
    if seen.len() != n {
        let missing: Vec<String> = (0..n)
            .filter(|i| !seen.contains_key(i))
            .map(|i| format!("{i}/{n}"))
            .collect();
        return bad(format!(
            "segment{} {} missing: a merge of part of a run would understate it",
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", ")
        ));
    }
    Ok(n)
}

/// Merges the segments of one run into its report; writes the merged interval log to `hlog`
/// when given.
pub fn merge(parts: &[Part], hlog: Option<&Path>) -> Result<Report, Error> {
    check(parts)?;
    let first = &parts[0].report;
    let open_loop = first.open_loop();
    let names: Vec<String> = first.classes.iter().map(|c| c.name.clone()).collect();
    let mut totals = Recorder::new(names.len());
    for part in parts {
        let recorder = recorder_of(&part.report).map_err(|why| {
            Error::Config(format!(
                "segment {} of {}: {why}",
                part.report.segment.as_deref().unwrap_or("?"),
                part.report.host
            ))
        })?;
        fits(&totals, &recorder).map_err(|why| {
            Error::Config(format!(
                "segment {} of {}: {why}: these are not counts a run makes",
                part.report.segment.as_deref().unwrap_or("?"),
                part.report.host
            ))
        })?;
        totals.merge(&recorder);
    }
    let began = parts
        .iter()
        .map(|p| p.report.started_unix_s)
        .fold(f64::INFINITY, f64::min);
    let ended = parts
        .iter()
        .map(|p| p.report.started_unix_s + p.report.duration_s)
        .fold(0.0, f64::max);
    let duration = (ended - began).max(0.0);
    let mut report = first.clone();
    fill(&mut report, &names, &totals, duration, open_loop);
    report.started_unix_s = began;
    report.interrupted = parts.iter().any(|p| p.report.interrupted);
    report.total.run.not_sent = parts.iter().map(|p| p.report.total.run.not_sent).sum();
    report.connections = parts.iter().map(|p| p.report.connections).sum();
    report.threads = parts.iter().map(|p| p.report.threads).sum();
    report.rate = open_loop.then(|| parts.iter().filter_map(|p| p.report.rate).sum());
    report.generator_cpu_s = parts.iter().map(|p| p.report.generator_cpu_s).sum();
    report.generator_cpu_per_request_us = if report.total.requests > 0 {
        report.generator_cpu_s * 1e6 / report.total.requests as f64
    } else {
        0.0
    };
    report.generator_busy = parts
        .iter()
        .map(|p| p.report.generator_busy)
        .fold(0.0, f64::max);
    report.generator_busy_or_waiting = parts
        .iter()
        .map(|p| p.report.generator_busy_or_waiting)
        .fold(0.0, f64::max);
    report.segment = None;
    report.histograms = None;
    report.host = String::new();
    report.start_late_s = parts
        .iter()
        .map(|p| p.report.start_late_s)
        .fold(0.0, f64::max);
    report.replay = replay(parts);
    let users: Vec<_> = parts.iter().map(|p| p.report.users.as_ref()).collect();
    report.users = crate::report::users::merged(&users, duration)
        .map_err(|why| Error::Config(format!("the users figures: {why}")))?;
    report.generators = generators(parts);
    report.warnings = warnings(parts, &report.generators);
    report.intervals = intervals(parts, &names, began, hlog, &report.target)?;
    Ok(report)
}

/// Checks, before anything is written, that each segment's log has an interval for each of
/// its report's intervals with requests (a log of another run, or cut short, has fewer).
fn check_logs(parts: &[Part]) -> Result<(), Error> {
    for part in parts {
        let segment = part.report.segment.as_deref().unwrap_or("?");
        let reported = part
            .report
            .intervals
            .iter()
            .filter(|r| r.requests > 0)
            .count();
        let mut in_log = 0;
        for logged in crate::hlog::Intervals::new(&part.log, None) {
            let logged = logged.map_err(|why| {
                Error::Config(format!("segment {segment}: its interval log: {why}"))
            })?;
            in_log += usize::from(!logged.histogram.is_empty());
        }
        if in_log < reported {
            return Err(Error::Config(format!(
                "segment {segment}: its interval log has {in_log} intervals with requests, its report {reported}: give each result's own .hlog beside its .json"
            )));
        }
    }
    Ok(())
}

/// Refuses a segment whose counts would take the merged ones past u64 (histograms add
/// saturating, and a saturated count reads as a real one).
fn fits(totals: &Recorder, more: &Recorder) -> Result<(), String> {
    for (mine, theirs) in totals.classes.iter().zip(&more.classes) {
        let pairs = [
            (mine.latency.len(), theirs.latency.len()),
            (mine.uncorrected.len(), theirs.uncorrected.len()),
            (mine.ttfb.len(), theirs.ttfb.len()),
            (mine.connect.len(), theirs.connect.len()),
            (mine.handshake.len(), theirs.handshake.len()),
            (mine.unfinished.len(), theirs.unfinished.len()),
            (mine.requests, theirs.requests),
            (mine.bytes, theirs.bytes),
        ];
        if let Some((a, b)) = pairs.iter().find(|(a, b)| a.checked_add(*b).is_none()) {
            return Err(format!("its counts add up past {} ({a} + {b})", u64::MAX));
        }
    }
    Ok(())
}

/// A replay's figures of the whole run: the segments' status pairs and late sends added
/// (the log's own counts are each segment's alike).
fn replay(parts: &[Part]) -> Option<ReplayReport> {
    let mut merged = parts.first()?.report.replay.clone()?;
    let mut pairs = BTreeMap::new();
    merged.late_sends = 0;
    for r in parts.iter().filter_map(|p| p.report.replay.as_ref()) {
        for pair in &r.status_mismatches {
            *pairs.entry((pair.logged, pair.got)).or_insert(0) += pair.count;
        }
        merged.late_sends += r.late_sends;
        merged.max_send_delay_us = merged.max_send_delay_us.max(r.max_send_delay_us);
    }
    merged.status_mismatches = crate::replay::pairs(&pairs);
    Some(merged)
}

fn generators(parts: &[Part]) -> Vec<Generator> {
    let mut out: Vec<Generator> = parts
        .iter()
        .map(|p| {
            let r = &p.report;
            Generator {
                segment: r.segment.clone().unwrap_or_default(),
                host: r.host.clone(),
                requests: r.total.requests,
                cpu_s: r.generator_cpu_s,
                busy: r.generator_busy,
                busy_or_waiting: r.generator_busy_or_waiting,
                start_late_s: r.start_late_s,
                saturated: r.generator_busy >= SATURATED
                    || r.generator_busy_or_waiting >= SATURATED,
            }
        })
        .collect();
    out.sort_by_key(|g| {
        g.segment
            .split('/')
            .next()
            .and_then(|i| i.parse::<usize>().ok())
    });
    out
}

fn warnings(parts: &[Part], generators: &[Generator]) -> Vec<String> {
    let mut out = Vec::new();
    for g in generators.iter().filter(|g| g.saturated) {
        out.push(format!(
            "generator {} on {} was saturated (busiest thread {} busy, {} running or waiting for a CPU): the merged figures measure it as much as the server; add generators or cores",
            g.segment, g.host, pct_brief(g.busy), pct_brief(g.busy_or_waiting)
        ));
    }
    for p in parts {
        for w in &p.report.warnings {
            if !w.contains("the generator was the bottleneck") {
                out.push(format!(
                    "segment {}: {w}",
                    p.report.segment.as_deref().unwrap_or("?")
                ));
            }
        }
    }
    out
}

/// The merged intervals: the segments' i-th intervals added (counters from their reports,
/// latencies from their logs), written to the merged log one tag after the other (all
/// requests, then each class). Memory holds one interval's sum and one decoded interval per
/// segment at a time, whatever the run's length (it held every interval of a tag, 150 KB
/// each: issue 51), beside the logs' text.
fn intervals(
    parts: &[Part],
    names: &[String],
    began: f64,
    hlog: Option<&Path>,
    target: &str,
) -> Result<Vec<IntervalReport>, Error> {
    check_logs(parts)?;
    let count = parts
        .iter()
        .map(|p| p.report.intervals.len())
        .max()
        .unwrap_or(0);
    let base = std::time::UNIX_EPOCH + std::time::Duration::from_secs_f64(began.max(0.0));
    let mut log = match hlog {
        Some(path) => Some(Hlog::create(path, base, &format!("{target} (merged)"))?),
        None => None,
    };
    // All requests, each class, and a users run's page loads (as a single run's log has
    // them: issue 52, merge dropped the per-interval users figures).
    let users = parts.iter().any(|p| p.report.users.is_some());
    let tags: Vec<Option<String>> = std::iter::once(None)
        .chain(
            (names.len() > 1)
                .then(|| names.iter().map(|n| Some(tag_of(n))))
                .into_iter()
                .flatten(),
        )
        .chain(users.then(|| Some(PAGE_TAG.to_string())))
        .collect();
    let mut out: Vec<IntervalReport> = (0..count)
        .map(|i| {
            let reported: Vec<&IntervalReport> = parts
                .iter()
                .filter_map(|p| p.report.intervals.get(i))
                .collect();
            let start_s = reported
                .iter()
                .map(|r| r.start_s)
                .fold(f64::INFINITY, f64::min);
            let duration_s = reported.iter().map(|r| r.duration_s).fold(0.0, f64::max);
            let requests: u64 = reported.iter().map(|r| r.requests).sum();
            let seconds = duration_s.max(1e-9);
            IntervalReport {
                start_s,
                duration_s,
                requests,
                errors: reported.iter().map(|r| r.errors).sum(),
                requests_per_s: requests as f64 / seconds,
                bytes_per_s: reported
                    .iter()
                    .map(|r| r.bytes_per_s * r.duration_s)
                    .sum::<f64>()
                    / seconds,
                latency_us: Latency::default(),
                generator_busy: reported
                    .iter()
                    .map(|r| r.generator_busy)
                    .fold(0.0, f64::max),
                connections: reported.iter().map(|r| r.connections).sum(),
                offered: reported.iter().map(|r| r.offered).sum(),
                // The counts here, the page loads from the logs' `page` lines below.
                users: crate::report::users::merged_interval(&reported, seconds),
            }
        })
        .collect();
    for (t, tag) in tags.iter().enumerate() {
        // Interval by interval, every segment's log read alongside the others': one sum
        // and one decoded interval per segment in memory, whatever the run's length.
        let page = tag.as_deref() == Some(PAGE_TAG);
        let mut logs: Vec<(&Part, crate::hlog::Intervals)> = parts
            .iter()
            .map(|p| (p, crate::hlog::Intervals::new(&p.log, tag.as_deref())))
            .collect();
        for (i, interval) in out.iter_mut().enumerate() {
            let mut sum = histogram();
            for (part, logged) in logs.iter_mut() {
                let segment = part.report.segment.as_deref().unwrap_or("?");
                let Some(logged) = logged.next() else {
                    // A log without a page line where its report counted page loads (of
                    // another run, cut short, or of a build before them) would understate
                    // the interval's.
                    let loads = part.report.intervals.get(i).and_then(|r| r.users.as_ref());
                    if page && loads.is_some_and(|u| u.page_load_us.count > 0) {
                        return Err(Error::Config(format!(
                            "segment {segment}: its interval log has no page loads for interval {i}, its report has: give each result's own .hlog beside its .json"
                        )));
                    }
                    continue;
                };
                let logged = logged.map_err(|why| {
                    Error::Config(format!("segment {segment}: its interval log: {why}"))
                })?;
                crate::hdr_text::add(&mut sum, &logged.histogram).map_err(|why| {
                    Error::Config(format!(
                        "segment {segment}: its interval log's interval {i}, added to the others': {why}"
                    ))
                })?;
            }
            if let Some(log) = log.as_mut() {
                let offset = std::time::Duration::from_secs_f64(interval.start_s.max(0.0));
                let length = std::time::Duration::from_secs_f64(interval.duration_s.max(1e-6));
                log.write(&sum, offset, length, tag.as_deref())?;
            }
            if t == 0 {
                interval.latency_us = Latency::of(&sum);
            }
            if let Some(users) = interval.users.as_mut().filter(|_| page) {
                crate::report::users::interval_loads(users, &sum);
            }
        }
    }
    if let Some(log) = log.as_mut() {
        log.flush()?;
    }
    Ok(out)
}
