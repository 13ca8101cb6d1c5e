//! Reports: the charts, tables and pages that turn webscope's measurements into something a
//! reader can take in — one self-contained `index.html` (inline SVG, no scripts, no network),
//! with the same tables as CSV for notebooks and as aligned text for the terminal.
//!
//! What it is: presentation. [`svg`] draws x-y charts (linear or log axes, lines, dashed model
//! curves, points) and bar charts (grouped or stacked), each with a title, axis labels with
//! units and a legend; [`html`] assembles sections of text, charts with the one sentence that
//! says what they show, tables and warnings into a page; [`human`] writes the figures in their
//! text (three significant figures, thousands apart, plurals, durations).
//!
//! What it is not: it measures nothing and models nothing. The lab (in the `webscope` binary)
//! reads run and experiment directories, asks `webscope-model` for fits, and builds the page
//! with these pieces.
//!
//! Output depends only on the input: the same data gives the same bytes on any machine (no
//! fonts are measured, numbers are printed with fixed precision), so a report regenerated from
//! its directory is byte-for-byte the one first written.
//!
//! ```
//! use webscope_report::svg::{Axis, Series, XyChart};
//! let chart = XyChart {
//!     title: "Throughput".into(),
//!     x: Axis::linear("clients"),
//!     y: Axis::linear("requests/s"),
//!     series: vec![Series::line("measured", vec![(1.0, 950.0), (2.0, 1800.0)])],
//! };
//! assert!(chart.to_svg().starts_with("<svg"));
//! ```
#![deny(missing_docs)]

pub mod html;
pub mod human;
pub mod svg;

pub use html::{Block, Page, Section, Table};
