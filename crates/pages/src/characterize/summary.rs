//! The terminal summary of a characterization: a dozen lines, the invariants, the bad lines.

use std::fmt::Write;
use std::time::{Duration, UNIX_EPOCH};
use webscope_report::human::pct_brief;

use webscope_accesslog::characterize::{
    Burstiness, Characterization, Invariant, Series, UrlRow, Verdict, MAX_SERIES_BINS, NEAR_PEAK,
};
use webscope_accesslog::printable;
use webscope_report::human::{count, plural, rate, sig3};

pub use webscope_report::human::pct;

/// A size in bytes (`webscope_report::human::bytes`, as `fileset` prints them).
pub fn size(bytes: f64) -> String {
    webscope_report::human::bytes(bytes.max(0.0).round())
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

/// The lines accepted although cut short, in a sentence.
pub fn repaired(c: &Characterization) -> String {
    format!(
        "Repaired: {} cut short in the user agent (no closing quote), counted as GoAccess counts them",
        lines(c.repaired_lines)
    )
}

/// "1 line", "2 lines".
fn lines(n: u64) -> String {
    match n {
        1 => "1 line".into(),
        _ => format!("{n} lines"),
    }
}

/// The verdict as the table says it.
pub fn verdict(v: Verdict) -> &'static str {
    match v {
        Verdict::Holds => "holds",
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

/// The minutes of the hour as `:05` or `:00-:09` or `:05, :35`.
fn minutes(m: &[u8]) -> String {
    let contiguous = m.windows(2).all(|w| w[1] == w[0] + 1);
    match (m.first(), m.last()) {
        (Some(a), Some(b)) if contiguous && a != b => format!(":{a:02}-:{b:02}"),
        _ => m
            .iter()
            .map(|x| format!(":{x:02}"))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// What the log covers of its span, in a sentence: a sampled or gapped log says that the
/// burstiness figures describe the sampling or the gaps.
pub fn coverage(c: &Characterization) -> String {
    let k = &c.coverage;
    let rate = k
        .covered_rate
        .map_or(String::new(), |r| format!("{r:.2} req/s"));
    let mut said = Vec::new();
    if !k.sampled_minutes.is_empty() {
        let n = k.sampled_minutes.len();
        said.push(format!(
            "the log is a sample: all but 1 % of its requests fall in minute{} {} of the hour, in each of {} hours, and {rate} within {}; the mean rate, IDC and Hurst figures describe that sampling, not the traffic",
            if n == 1 { "" } else { "s" },
            minutes(&k.sampled_minutes),
            k.active_hours,
            if n == 1 { "that minute" } else { "those minutes" }
        ));
    }
    if let Some(longest) = k.gaps.first() {
        let outside = if k.sampled_minutes.is_empty() {
            format!(", {rate} outside them")
        } else {
            String::new()
        };
        said.push(format!(
            "{} stretch{} of {} or more without a request ({} in all, {} of the span; the longest {} from {}): the server was idle or lines are missing, and the mean rate, IDC and Hurst figures include them{outside}",
            k.gap_count,
            if k.gap_count == 1 { "" } else { "es" },
            span(k.min_gap_s),
            span(k.gap_total_s),
            pct(k.gap_total_s as f64 / c.span_s.max(1) as f64),
            span(longest.length_s),
            date(longest.start_unix)
        ));
    }
    if said.is_empty() {
        let minutes = if k.minutes_checked {
            "requests spread over the minutes of the hour"
        } else {
            "minutes of the hour not checked (the log spans too long for per-minute bins)"
        };
        return format!(
            "{minutes}; no stretch of {} or more without a request",
            span(k.min_gap_s)
        );
    }
    said.join("; ")
}

/// The IDC curve in words: its two ends and its peak, with the windows near the peak.
pub fn idc(a: &Burstiness) -> String {
    let (Some(f), Some(l), Some(p)) = (a.idc.first(), a.idc.last(), a.idc_peak) else {
        return "IDC: too short a log".into();
    };
    let ends = format!(
        "IDC {} at {} .. {} at {}",
        sig3(f.value),
        span(f.window_s),
        sig3(l.value),
        span(l.window_s)
    );
    if p.at_longest {
        return format!("{ends} (highest at the longest window: still climbing)");
    }
    let near = if p.near_from_s == p.near_to_s {
        String::new()
    } else {
        format!(
            ", within {} of it from {} to {}",
            pct_brief(1.0 - NEAR_PEAK),
            span(p.near_from_s),
            span(p.near_to_s)
        )
    };
    format!(
        "{ends}, peak {} at {}{near}",
        sig3(p.value),
        span(p.window_s)
    )
}

/// One invariant's line: verdict, name, this log's figure, and by how much it differs.
fn invariant(i: &Invariant) -> String {
    let by = i
        .difference
        .as_ref()
        .map_or(String::new(), |d| format!(" — {d}"));
    format!(
        "  {:<12} {:<28} {} (paper: {}){by}",
        verdict(i.verdict),
        i.name,
        i.this_log,
        i.bound
    )
}

/// Total bytes, the most requested URLs and the most frequent 404s.
fn url_lines(c: &Characterization) -> String {
    let u = &c.urls;
    let top = |rows: &[UrlRow], n: fn(&UrlRow) -> u64| {
        rows.iter()
            .take(3)
            .map(|r| format!("{} ({})", printable(&r.url), count(n(r))))
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
            "Not found: {} answered 404; most: {}",
            plural(u.not_found_requests, "request"),
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
            "Out of order: {} came more than the look-back after a later one; counted, but not in time order",
            plural(c.out_of_order, "entry")
        );
    }
    s
}

/// Every method, most frequent first, as a share of the requests: the first five named, the
/// rest counted (a hostile log can hold thousands of made-up methods).
fn methods(c: &Characterization) -> String {
    let mut methods: Vec<(&String, u64)> = c.mix.methods.iter().map(|(k, v)| (k, *v)).collect();
    methods.sort_by_key(|m| std::cmp::Reverse(m.1));
    let share = |n: u64| pct(n as f64 / c.requests.max(1) as f64);
    let mut said: Vec<String> = methods
        .iter()
        .take(5)
        .map(|(m, n)| format!("{} {}", printable(m), share(*n)))
        .collect();
    let rest = &methods[methods.len().min(5)..];
    if !rest.is_empty() {
        let n: u64 = rest.iter().map(|m| m.1).sum();
        said.push(format!("{} other methods {}", rest.len(), share(n)));
    }
    said.join(", ")
}

/// Every status present, most frequent first, with its share and count: a status of three
/// requests in ten thousand is what a reader looks for (a 500, a 416), so none is left out.
pub fn statuses(c: &Characterization) -> String {
    let mut statuses: Vec<(u16, u64)> = c.mix.statuses.iter().map(|(k, v)| (*k, *v)).collect();
    statuses.sort_by_key(|s| (std::cmp::Reverse(s.1), s.0));
    statuses
        .iter()
        .map(|(status, n)| {
            format!(
                "{status} {} ({})",
                pct(*n as f64 / c.requests.max(1) as f64),
                count(*n)
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// What the distinct URLs count, and how many URLs any request named: the rule is the one
/// `fileset like` and `load --replay` use, so the three agree on a log.
pub fn references_counted(c: &Characterization) -> String {
    format!(
        "(a reference: a GET or HEAD answered 2xx or 304, the requests `load --replay` sends and `fileset like` makes files for; {} distinct URLs with any method and status)",
        count(c.urls.distinct as u64)
    )
}

/// GoAccess's visitors, named with their definition beside the clients and sessions.
pub fn visitors(c: &Characterization) -> String {
    let v = &c.visitors;
    format!(
        "{}{} (as GoAccess counts unique visitors: one client address with one user agent on one day of the log, its own time zone, of the requests not answered 4xx; {}), beside {} client addresses and {} sessions",
        if v.exact { "" } else { "about " },
        count(v.distinct),
        plural(v.days, "day"),
        count(c.clients.distinct as u64),
        count(c.sessions.sessions)
    )
}

/// The summary printed on the terminal.
pub fn text(c: &Characterization, logs: &[String]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{}: {} over {} ({} .. {}), {} on average",
        printable(&logs.join(", ")),
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
    let _ = writeln!(s, "Methods:   {}", methods(c));
    let _ = writeln!(s, "Statuses:  {}", statuses(c));
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
    let _ = writeln!(s, "           {}", references_counted(c));
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
    let idc = idc(a);
    let opt = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
    let _ = writeln!(s, "Coverage:  {}", coverage(c));
    let _ = writeln!(
        s,
        "Arrivals:  inter-arrival CV {}, {idc}, Hurst {} (aggregated variance)",
        opt(a.interarrival_cv),
        opt(a.hurst)
    );
    let _ = writeln!(
        s,
        "Clients:   {}{} addresses (median {} requests each; the busiest 10 % send {})",
        if c.clients.exact { "" } else { "about " },
        count(c.clients.distinct as u64),
        sig3(c.clients.median_requests),
        pct(c.clients.top10_share)
    );
    let _ = writeln!(s, "Visitors:  {}", visitors(c));
    s.push_str(&estimated(c));
    let _ = writeln!(s, "{}", super::sessions::line(c));
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
        let _ = writeln!(s, "{}", invariant(i));
    }
    if c.repaired_lines > 0 {
        let _ = writeln!(s, "{}", repaired(c));
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
            // The line is the log's: its escapes are shown, never sent to the terminal.
            let _ = writeln!(
                s,
                "  {}:{}: {}: {}",
                printable(name),
                b.line,
                b.why,
                printable(&b.text)
            );
        }
    }
    s
}
