//! The terminal summary of a characterization: a dozen lines, the invariants, the bad lines.

use std::fmt::Write;
use std::time::{Duration, UNIX_EPOCH};

use webscope_accesslog::characterize::{Characterization, Series, Verdict, MAX_SERIES_BINS};
use webscope_report::human::{count, plural, rate, sig3};
use webscope_workload::format_size;

/// A share as a percentage, to three significant figures.
pub fn pct(x: f64) -> String {
    webscope_report::human::pct(x)
}

/// A size in bytes, as `fileset` prints them.
pub fn size(bytes: f64) -> String {
    format_size(bytes.max(0.0).round() as u64)
}

/// A Unix second as an HTTP date (UTC).
pub fn date(unix: i64) -> String {
    let t = UNIX_EPOCH + Duration::from_secs(unix.max(0) as u64);
    httpdate::fmt_http_date(t)
}

/// A span of seconds in its two largest units (3 d 11 h).
pub fn span(seconds: u64) -> String {
    webscope_report::human::duration(seconds as f64)
}

/// Said when the log spans too long for a bin per minute (or hour): the bins are longer.
pub fn widened(c: &Characterization) -> String {
    if !c.per_minute.widened_from(60) {
        return String::new();
    }
    format!(
        " (the log spans {}: at most {MAX_SERIES_BINS} bins are kept, so the minutes are {}s)",
        span(c.span_s),
        c.per_minute.bin_name()
    )
}

/// The bad lines of the kinds that are not the format's fault, when there are any.
fn bad_kinds(c: &Characterization) -> String {
    let mut kinds = Vec::new();
    if c.long_lines > 0 {
        kinds.push(format!("{} longer than 64 KiB", count(c.long_lines)));
    }
    if c.bad_times > 0 {
        kinds.push(format!(
            "{} dated before 1990 or more than a day ahead of this machine's clock",
            count(c.bad_times)
        ));
    }
    match kinds.is_empty() {
        true => String::new(),
        false => format!("; of them {}", kinds.join(", ")),
    }
}

/// The verdict as the table says it.
pub fn verdict(v: Verdict) -> &'static str {
    match v {
        Verdict::Agrees => "agrees",
        Verdict::Differs => "differs",
        Verdict::CannotTell => "cannot tell",
    }
}

/// The busiest whole bin against the mean, or why there is none.
pub fn peak(s: &Series, unit: &str) -> String {
    match (s.peak, s.peak_to_mean) {
        (Some(p), Some(r)) => format!(
            "peak {unit} {} (peak/mean {})",
            plural(p, "request"),
            sig3(r)
        ),
        _ => format!("fewer than two whole {unit}s: no peak/mean"),
    }
}

/// The summary printed on the terminal.
pub fn text(c: &Characterization, logs: &[String]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{}: {} over {} ({} .. {}), {} on average",
        logs.join(", "),
        plural(c.requests, "request"),
        span(c.span_s),
        date(c.first_unix),
        date(c.last_unix),
        rate(c.mean_rate)
    );
    let _ = writeln!(
        s,
        "Rate:      {}; {}{}",
        peak(&c.per_minute, &c.per_minute.bin_name()),
        peak(&c.per_hour, &c.per_hour.bin_name()),
        widened(c)
    );
    let top = |m: Vec<(String, u64)>| {
        m.iter()
            .take(5)
            .map(|(k, v)| format!("{k} {}", pct(*v as f64 / c.requests.max(1) as f64)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut methods: Vec<(String, u64)> = c.mix.methods.clone().into_iter().collect();
    methods.sort_by_key(|m| std::cmp::Reverse(m.1));
    let mut statuses: Vec<(String, u64)> = c
        .mix
        .statuses
        .iter()
        .map(|(k, v)| (k.to_string(), *v))
        .collect();
    statuses.sort_by_key(|s| std::cmp::Reverse(s.1));
    let _ = writeln!(s, "Methods:   {}", top(methods));
    let _ = writeln!(s, "Statuses:  {}", top(statuses));
    let p = &c.popularity;
    let zipf = p
        .zipf
        .map(|z| format!("Zipf s = {:.2} (maximum likelihood)", z.s))
        .unwrap_or_else(|| "no Zipf fit (fewer than 2 URLs)".into());
    let _ = writeln!(
        s,
        "URLs:      {} distinct in {} ({}), {} requested once, top 10 % get {}; {zipf}",
        count(p.distinct_urls as u64),
        plural(p.references, "reference"),
        pct(p.distinct_share),
        pct(p.one_time_share),
        pct(p.top10_share)
    );
    let t = &c.sizes.transfer;
    let tail = match t.tail {
        Some(f) => format!(
            "Pareto tail α = {:.2} above {} ({} of transfers, Hill, cut by KS)",
            f.alpha,
            size(f.x_min),
            pct(f.tail as f64 / f.n as f64)
        ),
        None => "too few transfers for a tail fit".into(),
    };
    let body = t
        .body
        .map(|b| format!("; lognormal body μ = {:.2}, σ = {:.2}", b.mu, b.sigma))
        .unwrap_or_default();
    let _ = writeln!(
        s,
        "Sizes:     mean {}, median {}; {tail}{body}",
        size(t.mean),
        size(t.median)
    );
    let a = &c.arrivals;
    let idc = match (a.idc.first(), a.idc.last()) {
        (Some(f), Some(l)) => format!(
            "IDC {} at {} .. {} at {}",
            sig3(f.value),
            span(f.window_s),
            sig3(l.value),
            span(l.window_s)
        ),
        _ => "IDC: too short a log".into(),
    };
    let opt = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
    let _ = writeln!(
        s,
        "Arrivals:  inter-arrival CV {}, {idc}, Hurst {} (aggregated variance)",
        opt(a.interarrival_cv),
        opt(a.hurst)
    );
    let _ = writeln!(
        s,
        "Clients:   {} (median {} requests each; the busiest 10 % send {})",
        count(c.clients.distinct as u64),
        sig3(c.clients.median_requests),
        pct(c.clients.top10_share)
    );
    if let Some(t) = c.request_times {
        let _ = writeln!(
            s,
            "Logged request times: p50 {} ms, p90 {} ms, p99 {} ms, max {} ms ({})",
            sig3(t.p50_ms),
            sig3(t.p90_ms),
            sig3(t.p99_ms),
            sig3(t.max_ms),
            plural(t.count as u64, "request")
        );
    }
    let _ = writeln!(s, "Invariants (Arlitt & Williamson, SIGMETRICS 1996):");
    for i in &c.invariants {
        let _ = writeln!(
            s,
            "  {:<12} {:<28} {}",
            verdict(i.verdict),
            i.name,
            i.this_log
        );
    }
    if c.bad_lines > 0 {
        let _ = writeln!(
            s,
            "Bad lines: {} (not counted above{}); the first:",
            count(c.bad_lines),
            bad_kinds(c)
        );
        for b in &c.bad_examples {
            let name = logs.get(b.file).map_or("?", String::as_str);
            let _ = writeln!(s, "  {name}:{}: {}: {}", b.line, b.why, b.text);
        }
    }
    s
}
