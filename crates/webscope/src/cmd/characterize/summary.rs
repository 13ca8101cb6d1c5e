//! The terminal summary of a characterization: a dozen lines, the invariants, the bad lines.

use std::fmt::Write;
use std::time::{Duration, UNIX_EPOCH};

use webscope_accesslog::characterize::{
    Characterization, Series, UrlRow, Verdict, MAX_SERIES_BINS,
};
use webscope_workload::format_size;

/// A share as a percentage.
pub fn pct(x: f64) -> String {
    format!("{:.1} %", 100.0 * x)
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

/// A span of seconds as humantime writes it (1h 2m 3s).
pub fn span(seconds: u64) -> String {
    humantime::format_duration(Duration::from_secs(seconds)).to_string()
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
        kinds.push(format!("{} longer than 64 KiB", c.long_lines));
    }
    if c.bad_times > 0 {
        kinds.push(format!(
            "{} dated before 1990 or more than a day ahead of this machine's clock",
            c.bad_times
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
        (Some(p), Some(r)) => format!("peak {unit} {p} requests (peak/mean {r:.2})"),
        _ => format!("fewer than two whole {unit}s: no peak/mean"),
    }
}

/// Total bytes, the most requested URLs and the most frequent 404s.
fn url_lines(c: &Characterization) -> String {
    let u = &c.urls;
    let top = |rows: &[UrlRow], n: fn(&UrlRow) -> u64| {
        rows.iter()
            .take(3)
            .map(|r| format!("{} ({})", r.url, n(r)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut s = format!(
        "Bytes:     {} sent; most requested: {}; most bytes: {}\n",
        size(u.total_bytes as f64),
        top(&u.by_requests, |r| r.requests),
        top(&u.by_bytes, |r| r.bytes_sent)
    );
    if u.not_found_requests > 0 {
        let _ = writeln!(
            s,
            "Not found: {} requests answered 404; most: {}",
            u.not_found_requests,
            top(&u.not_found, |r| r.not_found)
        );
    }
    s
}

/// Which figures are estimates (the log was larger than the bounds of what is kept), and
/// how many entries came out of time order.
fn estimated(c: &Characterization) -> String {
    let mut parts = Vec::new();
    if !c.sizes.transfer_exact {
        parts.push("transfer-size median and body (log-binned, 1 % bins; the tail is exact while its cut lies in the largest kept)".to_string());
    }
    if !c.clients.exact {
        parts.push(format!(
            "clients (a hash sample of {} of them)",
            pct(c.clients.sampled_share)
        ));
    }
    let ir = c.popularity.inter_reference;
    if ir.sampled_share < 1.0 {
        parts.push(format!(
            "inter-reference times (a hash sample of {} of the URLs)",
            pct(ir.sampled_share)
        ));
    }
    if c.request_times.is_some_and(|t| !t.exact) {
        parts.push("request-time percentiles (HDR histogram, within 0.1 %)".to_string());
    }
    let mut s = String::new();
    if !parts.is_empty() {
        let _ = writeln!(s, "Estimated: {}", parts.join("; "));
    }
    if c.out_of_order > 0 {
        let _ = writeln!(
            s,
            "Out of order: {} entries came more than the look-back after a later one; counted, but not in time order",
            c.out_of_order
        );
    }
    s
}

/// The summary printed on the terminal.
pub fn text(c: &Characterization, logs: &[String]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{}: {} requests over {} ({} .. {}), {:.2} req/s on average",
        logs.join(", "),
        c.requests,
        span(c.span_s),
        date(c.first_unix),
        date(c.last_unix),
        c.mean_rate
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
        "URLs:      {} distinct in {} references ({}), {} requested once, top 10 % get {}; {zipf}",
        p.distinct_urls,
        p.references,
        pct(p.distinct_share),
        pct(p.one_time_share),
        pct(p.top10_share)
    );
    s.push_str(&url_lines(c));
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
            "IDC {:.2} at {} .. {:.2} at {}",
            f.value,
            span(f.window_s),
            l.value,
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
        "Clients:   {}{} (median {:.0} requests each; the busiest 10 % send {})",
        if c.clients.exact { "" } else { "about " },
        c.clients.distinct,
        c.clients.median_requests,
        pct(c.clients.top10_share)
    );
    s.push_str(&estimated(c));
    if let Some(t) = c.request_times {
        let _ = writeln!(
            s,
            "Logged request times: p50 {:.1} ms, p90 {:.1} ms, p99 {:.1} ms, max {:.1} ms ({} requests)",
            t.p50_ms, t.p90_ms, t.p99_ms, t.max_ms, t.count
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
            c.bad_lines,
            bad_kinds(c)
        );
        for b in &c.bad_examples {
            let name = logs.get(b.file).map_or("?", String::as_str);
            let _ = writeln!(s, "  {name}:{}: {}: {}", b.line, b.why, b.text);
        }
    }
    s
}
