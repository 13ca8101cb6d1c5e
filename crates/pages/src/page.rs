//! One experiment's page (its section of the report), built one way for every experiment.
//!
//! An experiment's page file says only what is particular to it: which charts and sentences,
//! which table, what its report.json entry holds, which of the paper's numbers it sets beside
//! its own. [`ExperimentPage`] owns the rest, so that every section has the same skeleton:
//!
//! ```text
//! section   = warnings (failed runs, an early stop)     always first
//!           + what the page pushed, in its order        notes, charts, sentences
//!           + the table                                 when the page gave one
//!           + the paper's panel                         when there are comparisons
//! beside it:  NAME.csv          the table's rows (or the CSV the page gave instead)
//!             the summary       a title line, the table as text, the page's lines
//!             report.json       NAME (the page's entry) and NAME_paper (the panel's)
//! ```
//!
//! NAME is the experiment's name. Not for: reading runs (the page does, before it opens its
//! section) or drawing charts (`webscope_report::svg` and [`super::charts`]).

use serde_json::Value;
use webscope_report::{Block, Section, Table};

use super::point::Point;
use super::rendered::Rendered;
use crate::papers::Comparison;
use crate::published::panel;
use webscope_record::ExperimentRecord;

/// An experiment's section in the making, and what it adds beside it; [`finish`] adds it all
/// to the report.
///
/// [`finish`]: ExperimentPage::finish
pub struct ExperimentPage {
    /// The experiment's name: its CSV file's and its report.json entries' names.
    name: String,
    heading: String,
    blocks: Vec<Block>,
    /// Caption and table, drawn after the page's blocks.
    table: Option<(String, Table)>,
    /// A CSV other than the table's own rows.
    csv: Option<String>,
    /// The summary's title line and the lines after its table.
    summary: Option<(String, Vec<String>)>,
    json: Option<Value>,
    paper: Vec<Comparison>,
}

impl ExperimentPage {
    /// Opens `exp`'s section under `heading`, with the warnings every section starts with.
    pub fn new(exp: &ExperimentRecord, heading: impl Into<String>) -> ExperimentPage {
        ExperimentPage {
            name: exp.name.clone(),
            heading: heading.into(),
            blocks: failure_blocks(exp),
            table: None,
            csv: None,
            summary: None,
            json: None,
            paper: Vec::new(),
        }
    }

    /// Adds a block (a note, a warning, a chart) after those already there.
    pub fn push(&mut self, block: Block) {
        self.blocks.push(block);
    }

    /// Adds blocks in their order.
    pub fn extend(&mut self, blocks: impl IntoIterator<Item = Block>) {
        self.blocks.extend(blocks);
    }

    /// Adds a chart (an SVG from `webscope_report::svg`) with the sentence read from it.
    pub fn chart(&mut self, svg: String, reading: impl Into<String>) {
        self.push(Block::Chart {
            svg,
            reading: reading.into(),
        });
    }

    /// Says how many runs each figure rests on, when `--repeat` made more than one.
    pub fn repeats_note(&mut self, points: &[Point]) {
        self.blocks.extend(repeats_note(points));
    }

    /// The section's table: drawn after everything pushed, written as `NAME.csv` (unless
    /// [`csv`](Self::csv) gives another) and printed in the summary.
    pub fn table(&mut self, caption: impl Into<String>, table: Table) {
        self.table = Some((caption.into(), table));
    }

    /// `NAME.csv` holds this instead of the table's rows (runs rather than the table's rows).
    pub fn csv(&mut self, csv: String) {
        self.csv = Some(csv);
    }

    /// The terminal summary's part: `title` on a line, the table as text, then each line.
    pub fn summary(&mut self, title: impl Into<String>, lines: impl IntoIterator<Item = String>) {
        self.summary = Some((title.into(), lines.into_iter().collect()));
    }

    /// The page's entry in report.json, under the experiment's name: a type of
    /// `webscope_lab::results`, so that no page spells its keys by hand (#47). A Value's
    /// keys are sorted (serde_json without `preserve_order`), so the field order is free.
    pub fn entry(&mut self, entry: &impl serde::Serialize) -> anyhow::Result<()> {
        self.json = Some(serde_json::to_value(entry)?);
        Ok(())
    }

    /// The paper's numbers beside ours: drawn last, kept in report.json as `NAME_paper`.
    pub fn paper(&mut self, comparisons: Vec<Comparison>) {
        self.paper = comparisons;
    }

    /// Adds the section, its CSV, its summary and its report.json entries to the report.
    pub fn finish(self, out: &mut Rendered) {
        let ExperimentPage {
            name,
            heading,
            mut blocks,
            table,
            csv,
            summary,
            json,
            paper,
        } = self;
        if let Some(csv) = csv.or_else(|| table.as_ref().map(|(_, t)| t.to_csv())) {
            out.csv.push((format!("{name}.csv"), csv));
        }
        if let Some((title, lines)) = summary {
            out.summary.push_str(&title);
            out.summary.push('\n');
            if let Some((_, t)) = &table {
                out.summary.push_str(&t.to_text());
            }
            for line in lines {
                out.summary.push_str(&line);
                out.summary.push('\n');
            }
        }
        if let Some(entry) = json {
            out.json.insert(name.clone(), entry);
        }
        if let Some((caption, table)) = table {
            blocks.push(Block::Table { caption, table });
        }
        blocks.extend(paper_blocks(paper, out, &name));
        out.sections.push(Section { heading, blocks });
    }
}

/// Warnings every experiment section starts with: failed runs, what was not run and why, an
/// early stop.
fn failure_blocks(exp: &ExperimentRecord) -> Vec<Block> {
    let mut blocks: Vec<Block> = exp
        .failures
        .iter()
        .map(|f| Block::Warning(format!("A run failed: {f}")))
        .collect();
    blocks.extend(
        exp.skipped
            .iter()
            .map(|s| Block::Text(format!("Not run: {s}."))),
    );
    if !exp.complete && exp.failures.is_empty() {
        blocks.push(Block::Warning(
            "The experiment was stopped before its last run: what is shown is what was measured."
                .into(),
        ));
    }
    blocks
}

/// Says how many runs each figure rests on, when `--repeat` made more than one.
pub fn repeats_note(points: &[Point]) -> Option<Block> {
    let most = points.iter().map(|p| p.repeats).max()?;
    let least = points.iter().map(|p| p.repeats).min()?;
    (most > 1).then(|| {
        Block::Text(format!(
            "Each point is the median run of {} valid repeats (taken round the whole sweep, not back to back); bars and the min-max column give the spread of goodput.",
            if least == most { most.to_string() } else { format!("{least} to {most}") }
        ))
    })
}

/// The paper's panel under a heading sentence; the comparisons go to report.json.
fn paper_blocks(comparisons: Vec<Comparison>, out: &mut Rendered, experiment: &str) -> Vec<Block> {
    if comparisons.is_empty() {
        return Vec::new();
    }
    let (mut blocks, json) = panel(&comparisons);
    blocks.insert(
        0,
        Block::Text(format!(
            "The paper found — its published numbers beside ours, normalised where the hardware differs ({} comparison{}).",
            comparisons.len(),
            if comparisons.len() == 1 { "" } else { "s" }
        )),
    );
    // Strings and numbers only: nothing in it can fail to become a Value.
    let json = serde_json::to_value(json).expect("a paper entry is strings and numbers");
    out.json.insert(format!("{experiment}_paper"), json);
    blocks
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::point::test_point;

    fn exp(complete: bool, failures: &[&str]) -> ExperimentRecord {
        serde_json::from_value(serde_json::json!({
            "name": "sweep", "factor": "clients", "runs": [],
            "complete": complete, "failures": failures,
        }))
        .expect("an experiment record")
    }

    fn rendered() -> Rendered {
        Rendered::new(Default::default())
    }

    #[test]
    fn the_tail_is_the_table_its_csv_its_summary_and_the_entry() {
        let mut out = rendered();
        let mut page = ExperimentPage::new(&exp(false, &[]), "A sweep");
        let mut points = vec![test_point(1.0, 10.0, 0.1, None)];
        points[0].repeats = 3;
        page.repeats_note(&points);
        page.chart("<svg/>".into(), "It grows.");
        let mut t = Table::new(["x", "y"]);
        t.row(["1", "10"]);
        page.table("Per point", t.clone());
        page.summary("sweep", ["It grows.".to_string()]);
        #[derive(serde::Serialize)]
        struct Entry {
            reading: &'static str,
        }
        page.entry(&Entry {
            reading: "It grows.",
        })
        .unwrap();
        page.finish(&mut out);
        assert_eq!(out.csv, vec![("sweep.csv".to_string(), t.to_csv())]);
        assert_eq!(out.summary, format!("sweep\n{}It grows.\n", t.to_text()));
        assert_eq!(out.json["sweep"]["reading"], "It grows.");
        let section = &out.sections[0];
        assert_eq!(section.heading, "A sweep");
        // The early stop's warning, the note on repeats, the chart, then the table.
        assert!(matches!(section.blocks[0], Block::Warning(_)));
        assert!(matches!(&section.blocks[1], Block::Text(t) if t.contains("of 3 valid repeats")));
        assert!(matches!(section.blocks[2], Block::Chart { .. }));
        assert!(
            matches!(&section.blocks[3], Block::Table { caption, .. } if caption == "Per point")
        );
        assert_eq!(section.blocks.len(), 4);
    }

    #[test]
    fn a_page_without_a_table_adds_only_its_section() {
        let mut out = rendered();
        let mut page = ExperimentPage::new(&exp(true, &["run 2: refused"]), "A sweep");
        page.csv("a,b\n".into());
        page.finish(&mut out);
        assert_eq!(
            out.csv,
            vec![("sweep.csv".to_string(), "a,b\n".to_string())]
        );
        assert!(out.summary.is_empty() && out.json.is_empty());
        assert!(
            matches!(&out.sections[0].blocks[..], [Block::Warning(w)] if w == "A run failed: run 2: refused")
        );
    }
}
