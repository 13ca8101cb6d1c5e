//! The characterization as a page: one section per question, each chart with the sentence
//! that says what to read in it, built from the report crate's SVG charts and HTML blocks as
//! the lab's pages are.

use webscope_accesslog::characterize::{invariants, Characterization, SizeFigures, UrlRow};
use webscope_accesslog::printable;
use webscope_report::human::{self, count, plural, sig3};
use webscope_report::svg::{Axis, Series, Style, XyChart};
use webscope_report::{Block, Page, Section, Table};

use super::summary::{date, pct, size, span, verdict};

fn series(name: &str, points: Vec<(f64, f64)>, style: Style) -> Series {
    Series {
        name: name.into(),
        points,
        style,
        spread: Vec::new(),
    }
}

fn chart(title: &str, x: Axis, y: Axis, series: Vec<Series>, reading: String) -> Block {
    let svg = XyChart {
        title: title.into(),
        x,
        y,
        series,
    }
    .to_svg();
    Block::Chart { svg, reading }
}

/// The page of `c`, read from `logs`.
pub fn page(c: &Characterization, logs: &[String]) -> Page {
    let mut banners = Vec::new();
    if c.bad_lines > 0 {
        banners.push(format!(
            "{} not parsed and not counted (the first are shown under Summary)",
            plural(c.bad_lines, "line")
        ));
    }
    if c.coverage.is_partial() {
        banners.push(format!("Coverage: {}", super::summary::coverage(c)));
    }
    let widened = super::summary::widened(c);
    if !widened.is_empty() {
        banners.push(format!("Rate over time{widened}"));
    }
    Page {
        title: "Access-log characterization".into(),
        subtitle: format!(
            "{} · {} from {} to {} · webscope characterize",
            printable(&logs.join(", ")),
            plural(c.requests, "request"),
            date(c.first_unix),
            date(c.last_unix)
        ),
        banners,
        sections: vec![
            summary(c, logs),
            rate(c),
            mix(c),
            popularity(c),
            url_lists(c),
            sizes(c),
            arrivals(c),
            super::sessions::section(c),
            invariants_section(c),
        ],
    }
}

fn summary(c: &Characterization, logs: &[String]) -> Section {
    let mut t = Table::new(["figure", "value"]);
    let p = &c.popularity;
    let rows = [
        ("requests", count(c.requests)),
        ("span", span(c.span_s)),
        ("mean rate", human::rate(c.mean_rate)),
        (
            "peak/mean, per minute",
            c.per_minute.peak_to_mean.map_or("-".into(), sig3),
        ),
        (
            "peak/mean, per hour",
            c.per_hour.peak_to_mean.map_or("-".into(), sig3),
        ),
        (
            "distinct URLs referenced (GET or HEAD answered 2xx or 304)",
            count(p.distinct_urls as u64),
        ),
        (
            "distinct URLs, any method and status",
            count(c.urls.distinct as u64),
        ),
        ("requested once", pct(p.one_time_share)),
        ("top 10 % of URLs get", pct(p.top10_share)),
        (
            "Zipf exponent (MLE)",
            p.zipf.map_or("-".into(), |z| format!("{:.3}", z.s)),
        ),
        ("mean transfer", size(c.sizes.transfer.mean)),
        ("median transfer", size(c.sizes.transfer.median)),
        (
            "tail index α (Hill)",
            c.sizes
                .transfer
                .tail
                .map_or("-".into(), |t| format!("{:.2}", t.alpha)),
        ),
        (
            "inter-arrival CV",
            c.arrivals
                .interarrival_cv
                .map_or("-".into(), |v| format!("{v:.2}")),
        ),
        (
            "Hurst (aggregated variance)",
            c.arrivals.hurst.map_or("-".into(), |v| format!("{v:.2}")),
        ),
        ("clients (addresses)", count(c.clients.distinct as u64)),
        (
            "visitors (GoAccess's: address, user agent and day, 4xx left out)",
            count(c.visitors.distinct),
        ),
        (
            "sessions (address and user agent, ended by a gap)",
            count(c.sessions.sessions),
        ),
        ("busiest 10 % of clients send", pct(c.clients.top10_share)),
        ("bad lines", count(c.bad_lines)),
        (
            "lines repaired (cut short in the user agent)",
            count(c.repaired_lines),
        ),
    ];
    for (k, v) in rows {
        t.row([k.to_string(), v]);
    }
    if let Some(rt) = c.request_times {
        for (k, v) in [
            ("logged request time p50", rt.p50_ms),
            ("logged request time p99", rt.p99_ms),
        ] {
            t.row([k.to_string(), format!("{} ms", sig3(v))]);
        }
    }
    let mut blocks = vec![Block::Table {
        caption: "The log in figures".into(),
        table: t,
    }];
    if !c.bad_examples.is_empty() {
        let mut bad = Table::new(["file", "line", "why", "text (client removed)"]);
        for b in &c.bad_examples {
            // The index is into the paths the command was given, so it names one of them.
            let file = logs.get(b.file).map_or("?", String::as_str);
            bad.row([
                printable(file).into_owned(),
                count(b.line),
                b.why.to_string(),
                printable(&b.text).into_owned(),
            ]);
        }
        blocks.push(Block::Table {
            caption: format!(
                "The first of the {} that did not parse",
                plural(c.bad_lines, "line")
            ),
            table: bad,
        });
    }
    Section {
        heading: "Summary".into(),
        blocks,
    }
}

fn rate(c: &Characterization) -> Section {
    // Per minute up to three days of log, per hour beyond (a chart of more points is a smear).
    let s = if c.per_minute.counts.len() <= 3 * 24 * 60 {
        &c.per_minute
    } else {
        &c.per_hour
    };
    let unit = s.bin_name();
    let points = s
        .counts
        .iter()
        .enumerate()
        .map(|(i, &n)| ((i as u64 * s.bin_s) as f64 / 60.0, n as f64))
        .collect();
    let reading = match (s.peak, s.peak_to_mean, s.mean) {
        (Some(p), Some(r), Some(m)) => format!(
            "Requests per {unit}: the busiest whole {unit} had {}, {} times the mean of {}. A load test at the mean rate never sees that peak.",
            plural(p, "request"),
            sig3(r),
            sig3(m)
        ),
        _ => format!("Requests per {unit}. The log holds fewer than two whole {unit}s, so no peak is compared with the mean."),
    };
    Section {
        heading: "Rate over time".into(),
        blocks: vec![chart(
            &format!("Requests per {unit}"),
            Axis::linear(format!("minutes since {}", date(s.start_unix))),
            Axis::linear(format!("requests per {unit}")),
            vec![series("requests", points, Style::Line)],
            reading,
        )],
    }
}

fn mix(c: &Characterization) -> Section {
    let n = c.requests.max(1) as f64;
    let mut methods = Table::new(["method", "requests", "share"]);
    for (m, k) in &c.mix.methods {
        methods.row([printable(m).into_owned(), count(*k), pct(*k as f64 / n)]);
    }
    let mut statuses = Table::new(["status", "requests", "share"]);
    for (s, k) in &c.mix.statuses {
        statuses.row([s.to_string(), count(*k), pct(*k as f64 / n)]);
    }
    let refs: u64 = c.mix.types.values().sum();
    let mut types = Table::new(["type (by extension)", "references", "share"]);
    for (t, k) in &c.mix.types {
        let name =
            serde_json::to_value(t).map_or(String::new(), |v| v.as_str().unwrap_or("").to_string());
        types.row([name, count(*k), pct(*k as f64 / refs.max(1) as f64)]);
    }
    Section {
        heading: "Methods, statuses, document types".into(),
        blocks: vec![
            Block::Table {
                caption: "Methods (\"-\": a request the server could not read)".into(),
                table: methods,
            },
            Block::Table {
                caption: "Statuses".into(),
                table: statuses,
            },
            Block::Table {
                caption: "Successful references by document type".into(),
                table: types,
            },
        ],
    }
}

fn popularity(c: &Characterization) -> Section {
    let p = &c.popularity;
    let measured: Vec<(f64, f64)> = p
        .rank_frequency
        .iter()
        .map(|&(r, n)| (r as f64, n as f64))
        .collect();
    let mut rank_series = vec![series("references", measured, Style::Points)];
    let mut reading = "No Zipf fit: fewer than two URLs.".to_string();
    if let Some(z) = p.zipf {
        let norm = z.norm();
        let fitted = p
            .rank_frequency
            .iter()
            .map(|&(r, _)| (r as f64, z.expected_share(r, norm) * z.requests as f64))
            .collect();
        rank_series.push(series(
            &format!("Zipf s = {:.2} (MLE)", z.s),
            fitted,
            Style::Dashed,
        ));
        reading = format!(
            "References per URL by popularity rank, log-log. The dashed line is the Zipf law fitted by maximum likelihood (s = {:.3}); where the points bend away from it, Zipf does not describe this site.",
            z.s
        );
    }
    let lorenz = p.lorenz.clone();
    let equal = vec![(0.0, 0.0), (1.0, 1.0)];
    let mut top = Table::new(["rank", "URL", "references"]);
    for (i, d) in p.documents.iter().take(10).enumerate() {
        top.row([
            (i + 1).to_string(),
            printable(&d.path).into_owned(),
            count(d.references),
        ]);
    }
    Section {
        heading: "Popularity".into(),
        blocks: vec![
            chart("Rank-frequency", Axis::log("rank"), Axis::log("references"), rank_series, reading),
            chart(
                "Lorenz curve of references",
                Axis::linear("share of URLs, least popular first"),
                Axis::linear("share of references"),
                vec![series("this log", lorenz, Style::Line), series("equal popularity", equal, Style::Dashed)],
                format!(
                    "The further the curve sags below the diagonal, the more concentrated the references: the top 10 % of URLs get {}, and {} of URLs are requested once.",
                    pct(p.top10_share),
                    pct(p.one_time_share)
                ),
            ),
            Block::Table { caption: "The most requested URLs".into(), table: top },
        ],
    }
}

/// The per-URL lists: the most requested, those that sent the most bytes, the 404s.
fn url_lists(c: &Characterization) -> Section {
    let u = &c.urls;
    let list = |rows: &[UrlRow]| {
        let mut t = Table::new(["URL", "requests", "bytes sent", "404s"]);
        for r in rows.iter().take(10) {
            t.row([
                printable(&r.url).into_owned(),
                r.requests.to_string(),
                size(r.bytes_sent as f64),
                r.not_found.to_string(),
            ]);
        }
        t
    };
    let query = match u.query_folded {
        true => "Query strings are folded into their paths (--fold-query).",
        false => "A URL is its path with its query: /?flav=rss20 is a resource of its own (--fold-query counts paths alone).",
    };
    let reading = format!(
        "{} sent in all, to {} distinct URLs; {} requests answered 404. {query}",
        size(u.total_bytes as f64),
        u.distinct,
        u.not_found_requests
    );
    Section {
        heading: "URLs".into(),
        blocks: vec![
            Block::Text(reading),
            Block::Table {
                caption: "The most requested URLs, any status".into(),
                table: list(&u.by_requests),
            },
            Block::Table {
                caption: "The URLs that sent the most bytes".into(),
                table: list(&u.by_bytes),
            },
            Block::Table {
                caption: "The URLs most often not found (404)".into(),
                table: list(&u.not_found),
            },
        ],
    }
}

/// CCDF points and the fitted model's, for one distribution.
fn ccdf_series(name: &str, f: &SizeFigures, with_model: bool) -> Vec<Series> {
    let mut out = vec![series(name, f.ccdf.clone(), Style::Points)];
    if with_model {
        let model: Vec<(f64, f64)> = f
            .ccdf
            .iter()
            .rev()
            .filter_map(|&(x, _)| f.model_ccdf(x).filter(|p| *p > 0.0).map(|p| (x, p)))
            .collect();
        if !model.is_empty() {
            out.push(series("lognormal body + Pareto tail", model, Style::Dashed));
        }
    }
    out
}

fn sizes(c: &Characterization) -> Section {
    let t = &c.sizes.transfer;
    let mut series_list = ccdf_series("transfers", t, true);
    series_list.extend(ccdf_series("documents", &c.sizes.files, false));
    let fit = match (t.tail, t.body) {
        (Some(tail), Some(body)) => format!(
            "a lognormal body (μ = {:.2}, σ = {:.2} of ln bytes) below {} and a Pareto tail of index α = {:.2} above it, holding {} of the transfers",
            body.mu, body.sigma, size(tail.x_min), tail.alpha, pct(tail.tail as f64 / tail.n as f64)
        ),
        (None, Some(body)) => format!("a lognormal (μ = {:.2}, σ = {:.2}); too few transfers for a tail fit", body.mu, body.sigma),
        _ => "no fit: too few transfers".into(),
    };
    let mut hill = vec![series(
        "α̂(k)",
        t.hill.iter().map(|h| (h.k as f64, h.alpha)).collect(),
        Style::Line,
    )];
    if let Some(tail) = t.tail {
        hill.push(series(
            &format!("chosen cut k = {}", tail.tail),
            vec![(tail.tail as f64, tail.alpha)],
            Style::Points,
        ));
    }
    Section {
        heading: "Transfer sizes".into(),
        blocks: vec![
            chart(
                "Size CCDF",
                Axis::log("bytes"),
                Axis::log("P(size ≥ x)"),
                series_list,
                format!("The share of transfers (and of distinct documents) at least x bytes, log-log. A straight tail is a Pareto tail. Fitted: {fit}. Mean {}, median {}.", size(t.mean), size(t.median)),
            ),
            chart(
                "Hill plot",
                Axis::log("k (largest transfers used)"),
                Axis::linear("tail index α̂"),
                hill,
                "The Hill estimate of the tail index over the k largest transfers. The cut is the k whose Pareto fit is closest (Kolmogorov–Smirnov distance) to the transfers above it (Clauset, Shalizi & Newman 2009); a flat stretch of the plot around it says the estimate is stable. Transfers of one document repeat one size, which makes the plot of a small site saw-toothed.".into(),
            ),
        ],
    }
}

fn arrivals(c: &Characterization) -> Section {
    let a = &c.arrivals;
    let idc: Vec<(f64, f64)> = a.idc.iter().map(|w| (w.window_s as f64, w.value)).collect();
    let poisson: Vec<(f64, f64)> = idc.iter().map(|&(x, _)| (x, 1.0)).collect();
    let var: Vec<(f64, f64)> = a
        .aggregated_variance
        .iter()
        .filter(|w| w.value > 0.0)
        .map(|w| (w.window_s as f64, w.value))
        .collect();
    let slope_one: Vec<(f64, f64)> = var.first().map_or(Vec::new(), |&(m0, v0)| {
        var.iter().map(|&(m, _)| (m, v0 * m0 / m)).collect()
    });
    let hurst = a
        .hurst
        .map_or("not estimated (the log is too short)".to_string(), |h| {
            format!("H = {h:.2}")
        });
    Section {
        heading: "Burstiness of arrivals".into(),
        blocks: vec![
            Block::Text(format!("What the log covers: {}.", super::summary::coverage(c))),
            chart(
                "Index of dispersion of counts",
                Axis::log("window (s)"),
                Axis::log("Var / mean of the count"),
                vec![series("this log", idc, Style::Line), series("Poisson", poisson, Style::Dashed)],
                format!("Variance over mean of the number of requests in windows of growing length. Poisson arrivals stay at 1 at every length; a curve that climbs means bursts that last — a load test with Poisson arrivals at the same mean rate would be gentler than this site's traffic. A curve that climbs and falls back peaks at the time scale of the bursts: {}.", super::summary::idc(a)),
            ),
            chart(
                "Aggregated variance",
                Axis::log("window (s)"),
                Axis::log("variance of the mean rate"),
                vec![series("this log", var, Style::Points), series("Poisson: slope -1", slope_one, Style::Dashed)],
                format!("The variance of the rate averaged over windows of growing length (counted in {}-second bins), log-log; its slope β gives the Hurst parameter H = 1 + β/2: {hurst}. Self-similar traffic (H near 1) flattens the slope.", c.arrivals_bin_s),
            ),
        ],
    }
}

fn invariants_section(c: &Characterization) -> Section {
    let mut t = Table::new([
        "invariant",
        "published",
        "bound applied",
        "this log",
        "verdict",
        "differs by",
        "how judged",
    ]);
    for i in &c.invariants {
        t.row([
            i.name.to_string(),
            i.published.to_string(),
            i.bound.clone(),
            i.this_log.clone(),
            verdict(i.verdict).to_string(),
            i.difference.clone().unwrap_or_else(|| "-".into()),
            i.how.clone(),
        ]);
    }
    Section {
        heading: "Invariants of Web-server workloads".into(),
        blocks: vec![
            Block::Text("Arlitt and Williamson characterized six Web servers' logs (three academic, two scientific, one commercial) and named ten properties common to all of them. Each row applies the paper's bound to this log: it holds, or differs by how much. \"Cannot tell\" means this log lacks what the comparison needs.".into()),
            Block::Table { caption: "Published invariants beside this log".into(), table: t },
            Block::Text(format!("Source: {}.", invariants::PAPER)),
        ],
    }
}
