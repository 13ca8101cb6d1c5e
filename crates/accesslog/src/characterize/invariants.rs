//! The published invariants of Web-server workloads, beside this log's figures.
//!
//! Arlitt & Williamson characterized six servers' logs (three academic, two scientific, one
//! commercial; 1994-95) and named ten properties common to all of them: M. F. Arlitt and
//! C. L. Williamson, "Web Server Workload Characterization: The Search for Invariants",
//! Proc. ACM SIGMETRICS 1996 (cited as \[12\] by the project's seed paper; extended in IEEE/ACM
//! ToN 5(5), 1997). The paper's own text was not reachable from where this was written; the
//! numbers and words below are taken, each as marked, from
//! - [`SUMMARY`]: a summary of the SIGMETRICS paper that quotes its figures, and
//! - [`ARLITT_1998`]: Arlitt's own restatement of the study's common characteristics in his
//!   W3C HTTP-NG workshop position paper (1998).
//!
//! An invariant whose figure is not in either is not compared (the mean transfer size: its
//! row says so), rather than compared with a remembered number.

use super::{Characterization, DocType};

/// Where the summary of the SIGMETRICS paper was read.
pub const SUMMARY: &str = "summary of Arlitt & Williamson, SIGMETRICS 1996 \
    (study.space/p/Web_server_workload_characterization%3A_the_search_for_invariants)";
/// Where Arlitt's 1998 restatement was read.
pub const ARLITT_1998: &str = "M. Arlitt, position paper, W3C HTTP-NG workshop 1998 \
    (www.w3.org/Protocols/HTTP-NG/1998/09/position-papers/arlitt.html)";

/// Whether this log agrees with one invariant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Within the published range.
    Agrees,
    /// Outside it.
    Differs,
    /// The log lacks what the comparison needs.
    CannotTell,
}

/// One invariant beside this log's figure.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Invariant {
    /// Its name in the paper.
    pub name: &'static str,
    /// The paper's words and numbers.
    pub published: &'static str,
    /// Where they were read.
    pub source: &'static str,
    /// This log's figure, in words.
    pub this_log: String,
    /// Whether it agrees.
    pub verdict: Verdict,
    /// How the verdict was reached (the test applied, or what is missing).
    pub how: String,
}

fn pct(x: f64) -> String {
    format!("{:.1} %", 100.0 * x)
}

fn within(x: f64, lo: f64, hi: f64) -> Verdict {
    if (lo..=hi).contains(&x) {
        Verdict::Agrees
    } else {
        Verdict::Differs
    }
}

/// The invariants, compared with `c`.
pub fn compare(c: &Characterization) -> Vec<Invariant> {
    vec![
        success(c),
        file_types(c),
        median_size(c),
        mean_size(c),
        distinct(c),
        one_time(c),
        size_tail(c),
        concentration(c),
        inter_reference(c),
        remote(),
    ]
}

fn success(c: &Characterization) -> Invariant {
    Invariant {
        name: "Success rate",
        published: "\"Approximately 80-90% of the requests to a Web server result in the successful return of an object\" (the 1996 paper: about 88 %, Not Modified about 8 %, per its summary)",
        source: ARLITT_1998,
        this_log: format!("{} status 200 ({} Not Modified)", pct(c.mix.ok_share), pct(c.mix.not_modified_share)),
        verdict: within(c.mix.ok_share, 0.80, 0.90),
        how: "status-200 share within 80-90 % (the 1998 range)".into(),
    }
}

fn file_types(c: &Characterization) -> Invariant {
    let total: u64 = c.mix.types.values().sum();
    let get = |t| c.mix.types.get(&t).copied().unwrap_or(0);
    let unknown = get(DocType::Unknown);
    let known = total - unknown;
    let share = if known > 0 {
        (get(DocType::Html) + get(DocType::Image)) as f64 / known as f64
    } else {
        0.0
    };
    let (verdict, how) = if total == 0 || unknown * 2 > total {
        (
            Verdict::CannotTell,
            format!("{} of the successful requests name paths without an extension, so their type is unknown", pct(unknown as f64 / total.max(1) as f64)),
        )
    } else {
        (
            within(share, 0.90, 1.0),
            "HTML + image share of the requests whose type the extension tells, at least 90 %"
                .into(),
        )
    };
    Invariant {
        name: "File types",
        published: "HTML and image documents account for 90-100 % of all requests",
        source: SUMMARY,
        this_log: format!("{} HTML + image", pct(share)),
        verdict,
        how,
    }
}

fn median_size(c: &Characterization) -> Invariant {
    let m = c.sizes.transfer.median;
    let (verdict, how) = if c.sizes.transfer.count == 0 {
        (
            Verdict::CannotTell,
            "no successful response with a body".to_string(),
        )
    } else {
        (
            if m < 5.0 * 1024.0 {
                Verdict::Agrees
            } else {
                Verdict::Differs
            },
            "median transfer size below 5 KB (read as 5 KiB)".to_string(),
        )
    };
    Invariant {
        name: "Median response size",
        published:
            "\"Most responses are small; the median response size is typically less than 5 KB\"",
        source: ARLITT_1998,
        this_log: format!("median {:.0} bytes", m),
        verdict,
        how,
    }
}

fn mean_size(c: &Characterization) -> Invariant {
    Invariant {
        name: "Mean transfer size",
        published: "the mean transfer size is small (the paper's bound was not in the text reachable here)",
        source: SUMMARY,
        this_log: format!("mean {:.0} bytes", c.sizes.transfer.mean),
        verdict: Verdict::CannotTell,
        how: "no published number to compare with was available; the median (above) is compared instead".into(),
    }
}

fn distinct(c: &Characterization) -> Invariant {
    let p = &c.popularity;
    Invariant {
        name: "Distinct requests",
        published: "only 0.3-2.1 % of requests (and 0.4-5.1 % of bytes) are for distinct documents",
        source: SUMMARY,
        this_log: format!("{} of {} references are to distinct URLs ({} URLs)", pct(p.distinct_share), p.references, p.distinct_urls),
        verdict: if p.references == 0 { Verdict::CannotTell } else if p.distinct_share <= 0.021 { Verdict::Agrees } else { Verdict::Differs },
        how: "distinct URLs / successful references at most 2.1 % (fewer distinct documents than the range counts as agreeing: the invariant is that they are few)".into(),
    }
}

fn one_time(c: &Characterization) -> Invariant {
    let p = &c.popularity;
    Invariant {
        name: "One-time referencing",
        published: "approximately one-third of the distinct documents are requested only once (and one-third of distinct bytes transferred only once)",
        source: SUMMARY,
        this_log: format!("{} of the distinct URLs requested once", pct(p.one_time_share)),
        verdict: if p.distinct_urls == 0 { Verdict::CannotTell } else { within(p.one_time_share, 1.0 / 3.0 - 0.1, 1.0 / 3.0 + 0.1) },
        how: "one-time share within one-third ± 10 points (our reading of \"approximately\")".into(),
    }
}

fn size_tail(c: &Characterization) -> Invariant {
    let f = &c.sizes.files_over_1k;
    let (this_log, verdict, how) = match f.tail {
        Some(t) => (
            format!(
                "α = {:.2} (Hill, above {:.0} bytes, {} of {} files)",
                t.alpha, t.x_min, t.tail, t.n
            ),
            within(t.alpha, 0.40, 0.63),
            "Hill tail index of the distinct documents' sizes above 1024 bytes within 0.40-0.63"
                .to_string(),
        ),
        None => (
            format!("{} documents over 1024 bytes", f.count),
            Verdict::CannotTell,
            format!(
                "a tail fit needs at least {} documents over 1024 bytes",
                2 * super::hill::MIN_TAIL
            ),
        ),
    };
    Invariant {
        name: "Size distribution",
        published: "file sizes larger than 1024 bytes follow a Pareto distribution with α between 0.40 and 0.63",
        source: SUMMARY,
        this_log,
        verdict,
        how,
    }
}

fn concentration(c: &Characterization) -> Invariant {
    let p = &c.popularity;
    Invariant {
        name: "Concentration of references",
        published: "10 % of the distinct documents receive 80-95 % of all requests",
        source: SUMMARY,
        this_log: format!("top 10 % of URLs: {} of references", pct(p.top10_share)),
        verdict: if p.distinct_urls < 10 {
            Verdict::CannotTell
        } else {
            within(p.top10_share, 0.80, 0.95)
        },
        how: if p.distinct_urls < 10 {
            "fewer than 10 distinct URLs: no top 10 % to speak of".into()
        } else {
            "top-10 % share within 80-95 %".into()
        },
    }
}

fn inter_reference(c: &Characterization) -> Invariant {
    let ir = c.popularity.inter_reference;
    let (this_log, verdict) = match (ir.median_cv, ir.median_lag1) {
        (Some(cv), Some(r)) => (
            format!(
                "median CV {cv:.2}, median lag-1 autocorrelation {r:.2} over {} URLs",
                ir.urls
            ),
            if (0.75..=1.33).contains(&cv) && r.abs() < 0.1 {
                Verdict::Agrees
            } else {
                Verdict::Differs
            },
        ),
        _ => (
            "no URL referenced often enough".to_string(),
            Verdict::CannotTell,
        ),
    };
    Invariant {
        name: "Inter-reference times",
        published: "inter-reference times are exponentially distributed and independent",
        source: SUMMARY,
        this_log,
        verdict,
        how: format!(
            "over URLs with at least {} references: median CV within 0.75-1.33 (exponential: 1) and median |lag-1 autocorrelation| below 0.1 (independent: 0); times within a second drawn uniformly",
            super::popularity::MIN_REFERENCES
        ),
    }
}

fn remote() -> Invariant {
    Invariant {
        name: "Remote requests",
        published: "remote hosts account for over 75 % of requests on most servers",
        source: SUMMARY,
        this_log: "not known".into(),
        verdict: Verdict::CannotTell,
        how: "telling local from remote clients needs the site's own networks or domain, which a log does not hold; webscope does not guess them".into(),
    }
}
