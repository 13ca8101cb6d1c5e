//! How requests spread over documents: distinct URLs, one-time referencing, concentration
//! (top 10 % share, Lorenz curve), the rank-frequency profile and its Zipf exponent, and the
//! inter-reference times of popular documents.

use std::collections::HashMap;

use webscope_model::stats::median;
use webscope_workload::Rng;

use super::burst::mean_var;
use super::points::log_spaced;
use super::zipf::{self, ZipfFit};

/// The popularity figures of the references (GET and HEAD requests answered 2xx or 304:
/// [`super::is_reference`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Popularity {
    /// References counted.
    pub references: u64,
    /// Distinct URLs among them (path and query, or paths when queries are folded).
    pub distinct_urls: usize,
    /// distinct_urls / references: Arlitt & Williamson's "distinct requests".
    pub distinct_share: f64,
    /// Distinct URLs referenced exactly once.
    pub one_time_urls: usize,
    /// one_time_urls / distinct_urls.
    pub one_time_share: f64,
    /// Share of references to the most popular 10 % of URLs (at least one URL).
    pub top10_share: f64,
    /// The Lorenz curve: (share of URLs, least popular first; share of references), 101
    /// points from (0, 0) to (1, 1).
    pub lorenz: Vec<(f64, f64)>,
    /// The rank-frequency profile at up to 200 log-spaced ranks: (rank, references).
    pub rank_frequency: Vec<(usize, u64)>,
    /// The Zipf exponent by maximum likelihood.
    pub zipf: Option<ZipfFit>,
    /// The most requested URLs (at most [`MAX_DOCUMENTS`]), most requested first: path,
    /// references and size.
    pub documents: Vec<Document>,
    /// Inter-reference times of the popular URLs.
    pub inter_reference: InterReference,
}

/// One URL's popularity and size.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Document {
    /// The URL (path and query, or path when queries are folded).
    pub path: String,
    /// Successful references to it.
    pub references: u64,
    /// Its size: the largest body of a 200 response to a GET of it (0 if it had none, e.g.
    /// only 304s).
    pub bytes: u64,
}

/// Most documents listed in a report (the rest are counted in the figures but not named).
pub const MAX_DOCUMENTS: usize = 10_000;

/// Whether each document's inter-reference times look exponential and independent.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct InterReference {
    /// URLs with at least 30 references, of the 1000 most popular (of those sampled).
    pub urls: usize,
    /// Median over them of the inter-reference times' CV (1 for exponential).
    pub median_cv: Option<f64>,
    /// Median over them of the lag-1 autocorrelation of the times (0 for independent).
    pub median_lag1: Option<f64>,
    /// Share of the URLs whose reference times were kept, chosen by a hash of the URL (1
    /// when every reference was): the medians are then those of a uniform sample of the
    /// URLs tested, with a sample median's error.
    pub sampled_share: f64,
}

/// Fewest references a URL needs for its inter-reference times to be judged.
pub const MIN_REFERENCES: u64 = 30;

/// A URL referenced at least once, for ranking.
pub(crate) struct Ranked<'a> {
    /// Its id in the reference log.
    pub id: u32,
    pub url: &'a str,
    pub references: u64,
    /// Its largest 200 response's body.
    pub size: Option<u64>,
}

/// Computes the figures of the URLs referenced; `refs` are the (URL id, Unix second) of the
/// references of the URLs `sampled` says were kept, in time order, and the share of URLs
/// sampled.
pub(crate) fn popularity(
    mut ranked: Vec<Ranked>,
    refs: impl Iterator<Item = (u32, i64)>,
    sampled: (impl Fn(u32) -> bool, f64),
) -> Popularity {
    // Descending by count, then by URL so the ranking is reproducible.
    ranked.sort_unstable_by(|a, b| b.references.cmp(&a.references).then(a.url.cmp(b.url)));
    let counts_desc: Vec<u64> = ranked.iter().map(|r| r.references).collect();
    let references = counts_desc.iter().sum::<u64>();
    let distinct = ranked.len();
    let one_time = counts_desc.iter().filter(|&&c| c == 1).count();
    let top = distinct.div_ceil(10);
    let top_refs: u64 = counts_desc.iter().take(top).sum();
    let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
    Popularity {
        references,
        distinct_urls: distinct,
        distinct_share: ratio(distinct as f64, references as f64),
        one_time_urls: one_time,
        one_time_share: ratio(one_time as f64, distinct as f64),
        top10_share: ratio(top_refs as f64, references as f64),
        lorenz: lorenz(&counts_desc),
        rank_frequency: log_spaced(1, distinct, 200)
            .into_iter()
            .map(|r| (r, counts_desc[r - 1]))
            .collect(),
        zipf: zipf::fit(&counts_desc),
        documents: ranked
            .iter()
            .take(MAX_DOCUMENTS)
            .map(|r| Document {
                path: r.url.to_string(),
                references: r.references,
                bytes: r.size.unwrap_or(0),
            })
            .collect(),
        inter_reference: inter_reference(refs, &ranked, sampled),
    }
}

fn lorenz(counts_desc: &[u64]) -> Vec<(f64, f64)> {
    let n = counts_desc.len();
    let total: u64 = counts_desc.iter().sum();
    if n == 0 || total == 0 {
        return Vec::new();
    }
    // Least popular first.
    let mut prefix = Vec::with_capacity(n + 1);
    prefix.push(0u64);
    let mut acc = 0;
    for &c in counts_desc.iter().rev() {
        acc += c;
        prefix.push(acc);
    }
    (0..=100)
        .map(|i| {
            let idx = (i as f64 / 100.0 * n as f64).round() as usize;
            (i as f64 / 100.0, prefix[idx] as f64 / total as f64)
        })
        .collect()
}

fn inter_reference(
    refs: impl Iterator<Item = (u32, i64)>,
    ranked: &[Ranked],
    (in_sample, share): (impl Fn(u32) -> bool, f64),
) -> InterReference {
    let tested: HashMap<u32, usize> = ranked
        .iter()
        .take(1000)
        .filter(|r| r.references >= MIN_REFERENCES && in_sample(r.id))
        .enumerate()
        .map(|(i, r)| (r.id, i))
        .collect();
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); tested.len()];
    // Within its second a reference's instant is drawn uniformly, as in `burst`.
    let mut rng = Rng::new(0x1e7e_12ef);
    for (id, second) in refs {
        if let Some(&i) = tested.get(&id) {
            times[i].push(second as f64 + rng.next_f64());
        }
    }
    let mut cvs = Vec::new();
    let mut lags = Vec::new();
    for t in &mut times {
        t.sort_by(f64::total_cmp);
        let gaps: Vec<f64> = t.windows(2).map(|w| w[1] - w[0]).collect();
        let (mean, var) = mean_var(&gaps);
        if mean <= 0.0 || var <= 0.0 {
            continue;
        }
        cvs.push(var.sqrt() / mean);
        let lag: f64 = gaps
            .windows(2)
            .map(|w| (w[0] - mean) * (w[1] - mean))
            .sum::<f64>()
            / ((gaps.len() - 1) as f64 * var);
        lags.push(lag);
    }
    InterReference {
        urls: tested.len(),
        median_cv: median(&cvs),
        median_lag1: median(&lags),
        sampled_share: share,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The figures of `refs` (URL and second, in time order), every reference kept.
    fn popularity_of(refs: &[(&str, i64)], sizes: &HashMap<&str, u64>) -> Popularity {
        let mut ids: HashMap<&str, (u32, u64)> = HashMap::new();
        for (url, _) in refs {
            let next = ids.len() as u32;
            ids.entry(url).or_insert((next, 0)).1 += 1;
        }
        let ranked = ids
            .iter()
            .map(|(url, &(id, references))| Ranked {
                id,
                url,
                references,
                size: sizes.get(url).copied(),
            })
            .collect();
        let log = refs.iter().map(|(url, t)| (ids[url].0, *t));
        popularity(ranked, log, (|_| true, 1.0))
    }

    #[test]
    fn counts_concentration_and_one_timers() {
        // /a ×7, /b ×2, /c ×1: ten references, three URLs, one requested once.
        let mut refs = vec![("/a", 0i64); 7];
        refs.extend([("/b", 1), ("/b", 2), ("/c", 3)]);
        let sizes = HashMap::from([("/a", 5u64)]);
        let p = popularity_of(&refs, &sizes);
        assert_eq!((p.references, p.distinct_urls, p.one_time_urls), (10, 3, 1));
        assert!((p.one_time_share - 1.0 / 3.0).abs() < 1e-12);
        // The top 10 % of three URLs is one URL: /a, 70 %.
        assert!((p.top10_share - 0.7).abs() < 1e-12);
        assert_eq!(p.rank_frequency, vec![(1, 7), (2, 2), (3, 1)]);
        let a = &p.documents[0];
        assert_eq!((a.path.as_str(), a.references, a.bytes), ("/a", 7, 5));
        assert_eq!(p.documents[2].bytes, 0);
        assert_eq!(
            (p.lorenz[0], *p.lorenz.last().unwrap()),
            ((0.0, 0.0), (1.0, 1.0))
        );
        // One third of the URLs (the least popular, /c) hold 10 % of the references.
        let third = p.lorenz[33];
        assert!((third.1 - 0.1).abs() < 1e-12, "{third:?}");
    }

    #[test]
    fn poisson_references_look_exponential_and_independent() {
        let mut rng = Rng::new(4);
        let mut refs = Vec::new();
        let mut t = 0.0;
        for _ in 0..20_000 {
            t += rng.exponential() * 0.5;
            let path = if rng.next_f64() < 0.5 { "/x" } else { "/y" };
            refs.push((path, t as i64));
        }
        let p = popularity_of(&refs, &HashMap::new());
        let ir = p.inter_reference;
        assert_eq!(ir.urls, 2);
        assert!((ir.median_cv.unwrap() - 1.0).abs() < 0.1, "{ir:?}");
        assert!(ir.median_lag1.unwrap().abs() < 0.05, "{ir:?}");
    }
}
