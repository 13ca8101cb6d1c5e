//! What the five papers found, held as data (`pages/src/papers/*.toml`, one file per paper, each
//! number with the table or sentence it comes from, quoted), and the comparisons of ours with
//! theirs that each experiment's page draws beside its own result.
//!
//! Hardware differs by three decades, so panels compare what survives the move: ratios,
//! shapes, shares and the places where curves bend, never 1997's absolute requests per second.
//! Each experiment's renderer turns its own figures into [`Comparison`]s (the paper's numbers,
//! ours, normalised alike, and one sentence on where they agree or differ, and why), and the
//! pages crate's `published::panel` draws them and keeps both series and their ratio for
//! report.json.

use serde::Deserialize;

/// One paper's file.
#[derive(Debug, Clone, Deserialize)]
pub struct Paper {
    /// Short name: "Yates, Almeida & Almeida 1997".
    pub paper: String,
    /// The title.
    pub title: String,
    /// The paper's text in the steering repository's `seeds/`.
    pub seed: String,
    /// Its numbers.
    #[serde(rename = "finding")]
    pub findings: Vec<Finding>,
}

/// Numbers of one table row or sentence.
#[derive(Debug, Clone, Deserialize)]
pub struct Finding {
    /// The lab experiment it belongs to.
    pub experiment: String,
    /// What is measured, as the renderers ask for it.
    pub quantity: String,
    /// Where in the paper: "Table 3", "§4.1, the text on Figure 1".
    pub cite: String,
    /// The paper's words the numbers come from, verbatim.
    pub quote: String,
    /// What each value is.
    pub labels: Vec<String>,
    /// The numbers.
    pub values: Vec<f64>,
    /// Their unit.
    pub unit: String,
}

/// The papers' files, compiled in.
const FILES: [(&str, &str); 5] = [
    ("yates1997.toml", include_str!("papers/yates1997.toml")),
    ("hu1999.toml", include_str!("papers/hu1999.toml")),
    (
        "chiarini2007.toml",
        include_str!("papers/chiarini2007.toml"),
    ),
    ("mughal.toml", include_str!("papers/mughal.toml")),
    ("hibino.toml", include_str!("papers/hibino.toml")),
];

/// Every paper, parsed.
pub fn papers() -> Result<Vec<Paper>, String> {
    FILES
        .iter()
        .map(|(name, text)| toml::from_str(text).map_err(|e| format!("papers/{name}: {e}")))
        .collect()
}

/// The paper's numbers for `quantity` of `experiment`, labelled, with the paper and the
/// citations they come from (several findings of one quantity are joined in file order).
pub fn find(experiment: &str, quantity: &str) -> Option<Published> {
    let papers = papers().ok()?;
    let mut out: Option<Published> = None;
    for paper in &papers {
        for f in paper
            .findings
            .iter()
            .filter(|f| f.experiment == experiment && f.quantity == quantity)
        {
            let p = out.get_or_insert_with(|| Published {
                paper: format!("{}, \u{201c}{}\u{201d}", paper.paper, paper.title),
                seed: paper.seed.clone(),
                cites: Vec::new(),
                quotes: Vec::new(),
                unit: f.unit.clone(),
                points: Vec::new(),
            });
            if !p.cites.contains(&f.cite) {
                p.cites.push(f.cite.clone());
            }
            p.quotes.push(f.quote.clone());
            p.points
                .extend(f.labels.iter().cloned().zip(f.values.iter().copied()));
        }
    }
    out
}

/// The numbers a paper published for one quantity.
#[derive(Debug, Clone, PartialEq)]
pub struct Published {
    /// Which paper: authors, year and title.
    pub paper: String,
    /// Its text among the steering repository's seeds.
    pub seed: String,
    /// Where in it.
    pub cites: Vec<String>,
    /// The words the numbers come from, verbatim.
    pub quotes: Vec<String>,
    /// The unit as published.
    pub unit: String,
    /// Label and value of each number.
    pub points: Vec<(String, f64)>,
}

impl Published {
    /// The value labelled `label`.
    #[cfg(test)]
    pub fn get(&self, label: &str) -> Option<f64> {
        self.points.iter().find(|(l, _)| l == label).map(|p| p.1)
    }
}

/// One quantity compared: the paper's series and ours, on the same normalised scale.
#[derive(Debug, Clone)]
pub struct Comparison {
    /// What is compared, with its normalisation ("TIME_WAIT, relative to A/4").
    pub what: String,
    /// The paper and where its numbers are.
    pub source: String,
    /// The paper's points.
    pub paper: Vec<(String, f64)>,
    /// Ours, at the same labels (None where we have no such point).
    pub ours: Vec<Option<f64>>,
    /// One sentence: where they agree, where they differ, and why.
    pub reading: String,
    /// The paper's words, verbatim.
    pub quotes: Vec<String>,
    /// The paper's text among the seeds.
    pub seed: String,
}

impl Comparison {
    /// A comparison of `published` (normalised by `norm`) with `ours` at its labels.
    pub fn new(
        what: &str,
        published: &Published,
        paper: Vec<(String, f64)>,
        ours: Vec<Option<f64>>,
        reading: String,
    ) -> Comparison {
        Comparison {
            what: what.to_string(),
            source: format!("{}, {}", published.paper, published.cites.join("; ")),
            paper,
            ours,
            reading,
            quotes: published.quotes.clone(),
            seed: published.seed.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every number of a quote, as written ("4.23", ".86", "14%" → 14, "1,204" → 1204), and
    /// the one the papers write as a word ("doubles": 2).
    fn numbers(text: &str) -> Vec<f64> {
        let mut out = Vec::new();
        if text.contains("doubles") {
            out.push(2.0);
        }
        let mut current = String::new();
        for c in text.chars().chain(std::iter::once(' ')) {
            if c.is_ascii_digit() || (c == '.' && !current.contains('.')) {
                current.push(c);
            } else if c == ',' && !current.is_empty() {
                continue;
            } else {
                let t = current.trim_end_matches('.');
                if let Ok(v) = t.parse::<f64>() {
                    out.push(v);
                }
                current.clear();
            }
        }
        out
    }

    #[test]
    fn every_paper_parses_and_its_numbers_are_in_its_quotes() {
        let papers = papers().unwrap();
        assert_eq!(papers.len(), 5);
        for paper in &papers {
            for f in &paper.findings {
                assert_eq!(
                    f.labels.len(),
                    f.values.len(),
                    "{}: {}",
                    paper.paper,
                    f.quote
                );
                let quoted = numbers(&f.quote);
                for v in &f.values {
                    assert!(
                        quoted.iter().any(|q| (q - v).abs() < 1e-9),
                        "{}: {v} is not in {:?}",
                        paper.paper,
                        f.quote
                    );
                }
            }
        }
    }

    /// The quotes are the papers' words: checked against the seeds where they are at hand
    /// (the steering repository beside this one), which is where the numbers were read.
    #[test]
    fn every_quote_is_verbatim_in_its_seed() {
        let seeds = std::env::var_os("WEBSCOPE_SEEDS")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| {
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/seeds")
            });
        if !seeds.is_dir() {
            eprintln!(
                "skipping: the papers' seeds are not at {} (set WEBSCOPE_SEEDS)",
                seeds.display()
            );
            return;
        }
        for paper in papers().unwrap() {
            let text = std::fs::read_to_string(seeds.join(&paper.seed)).unwrap();
            for f in &paper.findings {
                assert!(
                    text.contains(&f.quote),
                    "{} ({}): not verbatim in {}: {:?}",
                    paper.paper,
                    f.cite,
                    paper.seed,
                    f.quote
                );
            }
        }
    }

    #[test]
    fn findings_are_found_by_experiment_and_quantity() {
        let tw = find("filesize", "time_wait").unwrap();
        assert!(
            tw.paper
                .starts_with("Yates, Almeida & Almeida 1997, “On the Interaction"),
            "{}",
            tw.paper
        );
        assert_eq!(tw.get("A*4"), Some(398.02));
        let steps = find("techniques", "step_gain").unwrap();
        assert_eq!(steps.points.len(), 6, "two sentences joined");
        assert_eq!(steps.get("uri-cache"), Some(10.0));
        let mva = find("model", "mva_throughput").unwrap();
        assert_eq!(mva.get("4 CPUs"), Some(3.43));
        assert!(find("clients", "nothing").is_none());
        assert_eq!(
            numbers("by 97% to 99%. 1,204 .86"),
            vec![97.0, 99.0, 1204.0, 0.86]
        );
    }
}
