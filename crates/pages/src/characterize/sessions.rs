//! Sessions and page views on the page and in the text summary: the figures a users' load
//! test takes from the log (how many requests and pages a visit makes, and the think time Z
//! between pages), with the definition they were counted by.

use webscope_accesslog::characterize::sessions::Sessions;
use webscope_accesslog::characterize::Characterization;
use webscope_report::human::{count, pct, sig3};
use webscope_report::{Block, Section, Table};

/// The think times' fits in words: "lognormal μ 3.1 σ 1.2 (ln s) above 1 s; Pareto tail
/// α 1.45 above 120 s".
fn fits(s: &Sessions) -> String {
    let mut parts = Vec::new();
    if let Some(l) = s.think.lognormal {
        parts.push(format!(
            "lognormal μ {:.2}, σ {:.2} (ln s) of those of 1 s and more",
            l.mu, l.sigma
        ));
    }
    if let Some(t) = s.think.pareto_tail {
        parts.push(format!(
            "Pareto tail α {:.2} above {} s ({} of them)",
            t.alpha,
            sig3(t.x_min),
            count(t.tail as u64)
        ));
    }
    if parts.is_empty() {
        "too few to fit".into()
    } else {
        parts.join("; ")
    }
}

fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// The section of the page.
pub fn section(c: &Characterization) -> Section {
    let s = &c.sessions;
    let mut t = Table::new(["figure", "mean", "median", "90th percentile", "largest"]);
    let spread = |name: &str, x: &webscope_accesslog::characterize::sessions::Spread| {
        [
            name.to_string(),
            sig3(x.mean),
            sig3(x.median),
            count(x.p90),
            count(x.max),
        ]
    };
    t.row(spread("requests a session", &s.requests_per_session));
    t.row(spread("page views a session", &s.page_views_per_session));
    t.row(spread(
        "duration, s (sessions of 2 requests or more)",
        &s.duration_s,
    ));
    t.row([
        "think time, s".to_string(),
        sig3(s.think.mean_s),
        sig3(s.think.median_s),
        "-".into(),
        "-".into(),
    ]);
    let reading = format!(
        "{} sessions, {} of them of a single request ({}: crawlers, monitors, a visit from a link); {} page views. {} think times between page views, {} under a second; mean Z = {} s, the think time of the interactive response time law and of MVA; fits: {}.",
        count(s.sessions),
        count(s.single_request),
        pct(share(s.single_request, s.sessions)),
        count(s.page_views),
        count(s.think.count),
        pct(s.think.under_1s),
        sig3(s.think.mean_s),
        fits(s)
    );
    let mut blocks = Vec::new();
    if c.coverage.is_partial() {
        blocks.push(Block::Warning(
            "The log covers only part of its span (see Coverage): a session that ran across a gap in it is counted as two or more, and its think time across the gap is lost.".into(),
        ));
    }
    blocks.push(Block::Text(reading));
    blocks.push(Block::Table {
        caption: "Sessions".into(),
        table: t,
    });
    blocks.push(Block::Text(format!(
        "How they are counted: {}",
        s.definition()
    )));
    Section {
        heading: "Sessions and page views".into(),
        blocks,
    }
}

/// The text summary's line.
pub fn line(c: &Characterization) -> String {
    let s = &c.sessions;
    format!(
        "Sessions:  {} (one client address with one user agent, ended by {} without a request; {} single-request), {} page views; a session makes {} requests and {} page views on average; think time mean {} s, median {} s ({})",
        count(s.sessions),
        webscope_report::human::duration(s.gap_s as f64),
        pct(share(s.single_request, s.sessions)),
        count(s.page_views),
        sig3(s.requests_per_session.mean),
        sig3(s.page_views_per_session.mean),
        sig3(s.think.mean_s),
        sig3(s.think.median_s),
        fits(s)
    )
}
