//! "The paper found": an experiment's published findings beside ours, as a table (a bar chart
//! where the finding has more than one point), the quotes as published, and report.json's
//! entry. The findings and their comparisons are this crate's ([`crate::papers`]).

use crate::papers::Comparison;
use webscope_lab::results::report::PaperEntry;
use webscope_report::svg::{Axis, BarChart};
use webscope_report::{Block, Table};

fn cell(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(v) if v.abs() >= 100.0 => format!("{v:.0}"),
        Some(v) if v.abs() >= 10.0 => format!("{v:.1}"),
        Some(v) => format!("{v:.2}"),
    }
}

/// The "the paper found" blocks of an experiment, and its report.json entry.
pub fn panel(comparisons: &[Comparison]) -> (Vec<Block>, Vec<PaperEntry>) {
    let mut blocks = Vec::new();
    let mut json = Vec::new();
    for c in comparisons {
        let ratio: Vec<Option<f64>> = c
            .paper
            .iter()
            .zip(&c.ours)
            .map(|((_, p), o)| o.filter(|_| *p != 0.0).map(|o| o / p))
            .collect();
        let mut table = Table::new(["", "the paper", "ours", "ours / paper"]);
        for (((label, p), o), r) in c.paper.iter().zip(&c.ours).zip(&ratio) {
            table.row([label.clone(), cell(Some(*p)), cell(*o), cell(*r)]);
        }
        if c.paper.len() > 1 && c.ours.iter().any(Option::is_some) {
            blocks.push(Block::Chart {
                svg: BarChart {
                    title: format!("The paper found: {}", c.what),
                    categories: c.paper.iter().map(|(l, _)| l.clone()).collect(),
                    y: Axis::linear(""),
                    series: vec![
                        ("the paper".into(), c.paper.iter().map(|p| p.1).collect()),
                        (
                            "ours".into(),
                            c.ours.iter().map(|o| o.unwrap_or(0.0)).collect(),
                        ),
                    ],
                    stacked: false,
                }
                .to_svg(),
                reading: c.reading.clone(),
            });
            blocks.push(Block::Table {
                caption: format!("The paper found: {} ({})", c.what, c.source),
                table,
            });
        } else {
            blocks.push(Block::Table {
                caption: format!("The paper found: {} ({})", c.what, c.source),
                table,
            });
            blocks.push(Block::Text(c.reading.clone()));
        }
        blocks.push(Block::Text(format!(
            "As published: {}",
            c.quotes
                .iter()
                .map(|q| format!("\u{201c}{}\u{201d}", q.replace('\t', " ")))
                .collect::<Vec<_>>()
                .join(" ")
        )));
        json.push(PaperEntry {
            what: c.what.clone(),
            source: c.source.clone(),
            seed: c.seed.clone(),
            quotes: c.quotes.clone(),
            labels: c.paper.iter().map(|p| p.0.clone()).collect(),
            paper: c.paper.iter().map(|p| p.1).collect(),
            ours: c.ours.clone(),
            ratio,
            reading: c.reading.clone(),
        });
    }
    (blocks, json)
}

#[cfg(test)]
mod tests {
    use crate::papers::{find, Comparison};
    use webscope_report::Block;

    use super::panel;

    #[test]
    fn a_panel_keeps_both_series_and_their_ratio() {
        let published = find("filesize", "time_wait").unwrap();
        let c = Comparison::new(
            "TIME_WAIT, relative to A/4",
            &published,
            vec![("A/4".into(), 1.0), ("A*4".into(), 0.28)],
            vec![Some(1.0), Some(0.56)],
            "Ours falls half as fast.".into(),
        );
        let (blocks, json) = panel(&[c]);
        assert!(matches!(blocks[0], Block::Chart { .. }));
        assert_eq!(json[0].ratio[1], Some(2.0));
        assert!(json[0].source.contains("Table 3"));
    }
}
