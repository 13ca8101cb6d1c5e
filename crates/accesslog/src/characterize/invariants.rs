//! The published invariants of Web-server workloads, beside this log's figures.
//!
//! Arlitt & Williamson characterized six servers' logs (three academic, two scientific, one
//! commercial; 1994-95) and named ten properties common to all of them: M. F. Arlitt and
//! C. L. Williamson, "Web Server Workload Characterization: The Search for Invariants",
//! Proc. ACM SIGMETRICS 1996 (cited as \[12\] by the project's seed paper; extended in IEEE/ACM
//! ToN 5(5), 1997). Each row applies the paper's bound to this log's figure and says whether
//! it holds or by how much it differs. Where the paper says "≈" or "about", the row says how
//! near counts as holding; where a log cannot carry the figure (too few documents, clients
//! all behind a proxy), the row says "cannot tell" and why, rather than guess.
//!
//! The rows read [`Figures`]: shares, counts and fits that a characterization keeps whatever
//! the log's length (the status mix, per-URL and per-domain counts, the size fits), never
//! the entries themselves.

use std::collections::BTreeMap;

use super::{Characterization, DocType, Hosts, InterReference, TailFit};

/// Where the invariants and their bounds were read.
pub const PAPER: &str = "M. F. Arlitt and C. L. Williamson, \"Web Server Workload \
    Characterization: The Search for Invariants\", Proc. ACM SIGMETRICS 1996, its summary \
    of the ten invariants (bounds as restated in webscope issue #35)";
/// Arlitt's 1998 restatement, which widens the success rate to 80-90 %.
pub const ARLITT_1998: &str = "M. Arlitt, position paper, W3C HTTP-NG workshop 1998 \
    (www.w3.org/Protocols/HTTP-NG/1998/09/position-papers/arlitt.html)";

/// Whether this log holds one invariant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Within the paper's bound.
    Holds,
    /// Outside it: [`Invariant::difference`] says by how much.
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
    /// The bound applied, e.g. `80-96 %` or `≤ 21 KiB`.
    pub bound: String,
    /// This log's figure, in words.
    pub this_log: String,
    /// Whether it holds.
    pub verdict: Verdict,
    /// How far outside the bound the figure lies, when it differs (`12.5 points below 80 %`).
    pub difference: Option<String>,
    /// How the verdict was reached: what is measured, how near "≈" is, or what is missing.
    pub how: String,
}

/// The figures the invariants read.
#[derive(Debug, Clone, PartialEq)]
pub struct Figures {
    /// Requests (entries) in the log.
    pub requests: u64,
    /// Share of the requests answered 200.
    pub ok_share: f64,
    /// Share answered 304 Not Modified.
    pub not_modified_share: f64,
    /// Successful references by document type.
    pub types: BTreeMap<DocType, u64>,
    /// Successful responses with a body, and their mean size in bytes.
    pub transfers: usize,
    /// Their mean size, bytes.
    pub mean_transfer: f64,
    /// Successful references, distinct URLs among them, and those referenced once.
    pub references: u64,
    /// Distinct URLs referenced.
    pub distinct_urls: usize,
    /// Of them, referenced once.
    pub one_time_urls: usize,
    /// Share of the references to the most referenced 10 % of URLs.
    pub top10_share: f64,
    /// Distinct documents over 1024 bytes, and the Pareto fit of their sizes.
    pub files_over_1k: usize,
    /// The tail fit of those sizes.
    pub tail_over_1k: Option<TailFit>,
    /// The inter-reference times of the popular URLs.
    pub inter_reference: InterReference,
    /// Remote requests and requests by domain.
    pub hosts: Hosts,
}

impl Figures {
    /// The figures of a characterization.
    pub fn of(c: &Characterization) -> Figures {
        Figures {
            requests: c.requests,
            ok_share: c.mix.ok_share,
            not_modified_share: c.mix.not_modified_share,
            types: c.mix.types.clone(),
            transfers: c.sizes.transfer.count,
            mean_transfer: c.sizes.transfer.mean,
            references: c.popularity.references,
            distinct_urls: c.popularity.distinct_urls,
            one_time_urls: c.popularity.one_time_urls,
            top10_share: c.popularity.top10_share,
            files_over_1k: c.sizes.files_over_1k.count,
            tail_over_1k: c.sizes.files_over_1k.tail,
            inter_reference: c.popularity.inter_reference,
            hosts: c.hosts,
        }
    }
}

/// The invariants, compared with `c`.
pub fn compare(c: &Characterization) -> Vec<Invariant> {
    judge(&Figures::of(c))
}

/// The invariants, compared with `f`, in the paper's order.
pub fn judge(f: &Figures) -> Vec<Invariant> {
    vec![
        success(f),
        file_types(f),
        mean_size(f),
        distinct(f),
        one_time(f),
        size_tail(f),
        concentration(f),
        inter_reference(f),
        remote(f),
        wide_area(f),
    ]
}

/// What a figure is, for saying bounds and differences.
#[derive(Debug, Clone, Copy)]
enum Unit {
    /// A share, said in per cent; differences in points.
    Share,
    /// Bytes.
    Bytes,
    /// A plain number, to two decimals.
    Number,
}

impl Unit {
    fn show(self, x: f64) -> String {
        match self {
            Unit::Share => format!("{:.1} %", 100.0 * x),
            Unit::Bytes => webscope_report::human::bytes(x.max(0.0).round()),
            Unit::Number => format!("{x:.2}"),
        }
    }

    fn gap(self, d: f64) -> String {
        match self {
            Unit::Share => format!("{:.1} points", 100.0 * d),
            _ => self.show(d),
        }
    }
}

/// A bound of the paper, on a figure of `unit`.
#[derive(Debug, Clone, Copy)]
struct Bound {
    lo: Option<f64>,
    hi: Option<f64>,
    unit: Unit,
}

impl Bound {
    fn between(lo: f64, hi: f64, unit: Unit) -> Bound {
        Bound {
            lo: Some(lo),
            hi: Some(hi),
            unit,
        }
    }

    fn at_least(lo: f64, unit: Unit) -> Bound {
        Bound {
            lo: Some(lo),
            hi: None,
            unit,
        }
    }

    fn at_most(hi: f64, unit: Unit) -> Bound {
        Bound {
            lo: None,
            hi: Some(hi),
            unit,
        }
    }

    fn text(&self) -> String {
        let u = self.unit;
        match (self.lo, self.hi) {
            (Some(lo), Some(hi)) => match u {
                Unit::Share => format!("{:.1}-{}", 100.0 * lo, u.show(hi)),
                _ => format!("{}-{}", u.show(lo), u.show(hi)),
            },
            (Some(lo), None) => format!("≥ {}", u.show(lo)),
            (None, Some(hi)) => format!("≤ {}", u.show(hi)),
            (None, None) => "any".into(),
        }
    }

    /// `None` when `x` is within; else how far outside, in words.
    fn miss(&self, x: f64) -> Option<String> {
        let u = self.unit;
        match (self.lo, self.hi) {
            (Some(lo), _) if x < lo => Some(format!("{} below {}", u.gap(lo - x), u.show(lo))),
            (_, Some(hi)) if x > hi => Some(format!("{} above {}", u.gap(x - hi), u.show(hi))),
            _ => None,
        }
    }
}

/// A row's verdict from the misses of its checks (each named), or why it cannot tell.
struct Outcome {
    verdict: Verdict,
    difference: Option<String>,
}

fn outcome(misses: &[(&str, Option<String>)]) -> Outcome {
    let said: Vec<String> = misses
        .iter()
        .filter_map(|(what, miss)| {
            miss.as_ref().map(|m| match what.is_empty() {
                true => m.clone(),
                false => format!("{what} {m}"),
            })
        })
        .collect();
    match said.is_empty() {
        true => Outcome {
            verdict: Verdict::Holds,
            difference: None,
        },
        false => Outcome {
            verdict: Verdict::Differs,
            difference: Some(said.join("; ")),
        },
    }
}

const CANNOT_TELL: Outcome = Outcome {
    verdict: Verdict::CannotTell,
    difference: None,
};

/// A row of the table.
struct Row {
    name: &'static str,
    published: &'static str,
    bound: String,
    this_log: String,
    outcome: Outcome,
    how: String,
}

impl Row {
    fn done(self) -> Invariant {
        Invariant {
            name: self.name,
            published: self.published,
            source: PAPER,
            bound: self.bound,
            this_log: self.this_log,
            verdict: self.outcome.verdict,
            difference: self.outcome.difference,
            how: self.how,
        }
    }
}

fn pct(x: f64) -> String {
    Unit::Share.show(x)
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

fn success(f: &Figures) -> Invariant {
    let ok = Bound::between(0.80, 0.96, Unit::Share);
    let nm = Bound::between(0.03, 0.13, Unit::Share);
    let outcome = match f.requests {
        0 => CANNOT_TELL,
        _ => outcome(&[
            ("status 200", ok.miss(f.ok_share)),
            ("Not Modified", nm.miss(f.not_modified_share)),
        ]),
    };
    Row {
        name: "Success rate",
        published: "about 88 % of requests succeed (status 200), about 8 % are Not Modified (304)",
        bound: format!("200: {}; 304: {}", ok.text(), nm.text()),
        this_log: format!("{} status 200, {} Not Modified", pct(f.ok_share), pct(f.not_modified_share)),
        outcome,
        how: format!("shares of all requests; \"about\" read as within 8 points of 88 % (80-96 %, which takes in the 80-90 % of Arlitt's 1998 restatement: {ARLITT_1998}) and within 5 points of 8 %"),
    }
    .done()
}

fn file_types(f: &Figures) -> Invariant {
    let total: u64 = f.types.values().sum();
    let get = |t| f.types.get(&t).copied().unwrap_or(0);
    let unknown = get(DocType::Unknown);
    let share = ratio(
        (get(DocType::Html) + get(DocType::Image)) as f64,
        (total - unknown) as f64,
    );
    let bound = Bound::between(0.90, 1.0, Unit::Share);
    let (outcome, how) = if total == 0 || unknown * 2 > total {
        (CANNOT_TELL, format!("{} of the successful references name paths without an extension, so their type is unknown", pct(ratio(unknown as f64, total as f64))))
    } else {
        (
            outcome(&[("", bound.miss(share))]),
            "HTML and image share of the successful references whose type the extension tells"
                .into(),
        )
    };
    Row {
        name: "File types",
        published: "HTML and image documents account for 90-100 % of requests",
        bound: bound.text(),
        this_log: format!("{} HTML + image", pct(share)),
        outcome,
        how,
    }
    .done()
}

fn mean_size(f: &Figures) -> Invariant {
    let bound = Bound::at_most(21.0 * 1024.0, Unit::Bytes);
    Row {
        name: "Mean transfer size",
        published: "the mean transfer size is at most 21 KB",
        bound: bound.text(),
        this_log: format!(
            "mean {} over {} transfers",
            Unit::Bytes.show(f.mean_transfer),
            f.transfers
        ),
        outcome: match f.transfers {
            0 => CANNOT_TELL,
            _ => outcome(&[("", bound.miss(f.mean_transfer))]),
        },
        how: "mean body of the 2xx responses with a body (KB read as 1024 bytes, as in 1996)"
            .into(),
    }
    .done()
}

fn distinct(f: &Figures) -> Invariant {
    let share = ratio(f.distinct_urls as f64, f.references as f64);
    let bound = Bound::between(0.003, 0.021, Unit::Share);
    Row {
        name: "Distinct requests",
        published: "distinct documents are 0.3-2.1 % of the requests",
        bound: bound.text(),
        this_log: format!(
            "{} distinct URLs in {} references: {}",
            f.distinct_urls,
            f.references,
            pct(share)
        ),
        outcome: match f.references {
            0 => CANNOT_TELL,
            _ => outcome(&[("", bound.miss(share))]),
        },
        how: "distinct URLs (query strings folded) over successful references (2xx and 304)".into(),
    }
    .done()
}

fn one_time(f: &Figures) -> Invariant {
    let share = ratio(f.one_time_urls as f64, f.distinct_urls as f64);
    let bound = Bound::between(1.0 / 3.0 - 0.1, 1.0 / 3.0 + 0.1, Unit::Share);
    Row {
        name: "One-time referencing",
        published: "about one third of the distinct documents are referenced only once",
        bound: bound.text(),
        this_log: format!("{} of the distinct URLs referenced once", pct(share)),
        outcome: match f.distinct_urls {
            0 => CANNOT_TELL,
            _ => outcome(&[("", bound.miss(share))]),
        },
        how: "\"about one third\" read as within 10 points of 33.3 %".into(),
    }
    .done()
}

fn size_tail(f: &Figures) -> Invariant {
    let bound = Bound::between(0.40, 0.63, Unit::Number);
    let (this_log, outcome) = match f.tail_over_1k {
        Some(t) => (
            format!(
                "α = {:.2} (Hill, above {}, {} of {} documents)",
                t.alpha,
                Unit::Bytes.show(t.x_min),
                t.tail,
                t.n
            ),
            outcome(&[("α", bound.miss(t.alpha))]),
        ),
        None => (
            format!(
                "{} documents over 1 KiB: too few for a tail fit",
                f.files_over_1k
            ),
            CANNOT_TELL,
        ),
    };
    Row {
        name: "Size distribution",
        published: "file sizes above 1 KB are Pareto with 0.40 < α < 0.63",
        bound: format!("α {}", bound.text()),
        this_log,
        outcome,
        how: format!("Hill tail index of the distinct documents' sizes above 1024 bytes, the cut chosen by Kolmogorov-Smirnov; a fit needs {} documents over 1 KiB", 2 * super::hill::MIN_TAIL),
    }
    .done()
}

fn concentration(f: &Figures) -> Invariant {
    let bound = Bound::between(0.80, 0.95, Unit::Share);
    let few = f.distinct_urls < 10;
    Row {
        name: "Concentration of references",
        published: "10 % of the documents receive 80-95 % of the requests",
        bound: bound.text(),
        this_log: format!("the top 10 % of URLs receive {}", pct(f.top10_share)),
        outcome: match few {
            true => CANNOT_TELL,
            false => outcome(&[("", bound.miss(f.top10_share))]),
        },
        how: match few {
            true => "fewer than 10 distinct URLs: no top 10 % to speak of".into(),
            false => {
                "share of the successful references to the most referenced 10 % of URLs".into()
            }
        },
    }
    .done()
}

fn inter_reference(f: &Figures) -> Invariant {
    let ir = f.inter_reference;
    let cv_bound = Bound::between(0.75, 1.33, Unit::Number);
    let lag_bound = Bound::at_most(0.1, Unit::Number);
    let (this_log, outcome) = match (ir.median_cv, ir.median_lag1) {
        (Some(cv), Some(r)) => (
            format!(
                "median CV {cv:.2}, median lag-1 autocorrelation {r:.2} over {} URLs",
                ir.urls
            ),
            outcome(&[
                ("CV", cv_bound.miss(cv)),
                ("|lag-1|", lag_bound.miss(r.abs())),
            ]),
        ),
        _ => ("no URL referenced often enough".to_string(), CANNOT_TELL),
    };
    Row {
        name: "Inter-reference times",
        published: "inter-reference times are exponentially distributed and independent",
        bound: format!("CV {}, |lag-1| {}", cv_bound.text(), lag_bound.text()),
        this_log,
        outcome,
        how: format!("over URLs with at least {} references: the median CV of their inter-reference times (exponential: 1) and the median |lag-1 autocorrelation| (independent: 0); times within a second drawn uniformly", super::popularity::MIN_REFERENCES),
    }
    .done()
}

fn remote(f: &Figures) -> Invariant {
    let h = &f.hosts;
    let share = ratio(h.remote_requests as f64, h.requests as f64);
    let bound = Bound::at_least(0.70, Unit::Share);
    let none = h.remote_requests == 0;
    Row {
        name: "Remote requests",
        published: "remote hosts account for at least 70 % of the requests",
        bound: bound.text(),
        this_log: format!("{} of the requests from remote clients", pct(share)),
        outcome: match none {
            true => CANNOT_TELL,
            false => outcome(&[("", bound.miss(share))]),
        },
        how: match none {
            true => "no client is remote: every one is a loopback, private or link-local address or a local name — a test, an intranet, or a server behind a proxy that logs the proxy's address".into(),
            false => "remote read from the client field: anything but a loopback, private (RFC 1918), link-local or unique-local address or a name without a domain (the paper's local was the site's own organisation, which a log does not name: its public clients count as remote)".into(),
        },
    }
    .done()
}

fn wide_area(f: &Figures) -> Invariant {
    let h = &f.hosts;
    let bound = Bound::at_least(0.75, Unit::Share);
    let few = h.domains < 10;
    Row {
        name: "Wide-area usage",
        published: "10 % of the domains account for at least 75 % of the usage",
        bound: bound.text(),
        this_log: format!("the busiest 10 % of {} domains send {}", h.domains, pct(h.top10_domain_share)),
        outcome: match few {
            true => CANNOT_TELL,
            false => outcome(&[("", bound.miss(h.top10_domain_share))]),
        },
        how: match few {
            true => "fewer than 10 domains: no top 10 % to speak of".into(),
            false => "usage read as requests; a domain is a host name's registered domain (its last two labels, three under a country code such as co.uk) or an address's network (IPv4 /24, IPv6 /48)".into(),
        },
    }
    .done()
}

#[cfg(test)]
#[path = "invariants_tests.rs"]
mod tests;
