//! webscope's pages: what the lab wrote to disk, drawn. The lab's report (`index.html` with
//! its charts and tables, `report.json`, one CSV per table, the terminal summary), compare's
//! page and characterize's. Reads only the files the lab and the access-log reader wrote,
//! through their types, so `webscope report DIR` gives the same bytes as the lab did; the
//! one thing of its own it reads is the papers' findings (`papers/*.toml`, built in).
//!
//! ```text
//! report::render(dir)                  lab.json: the set-up; then for each experiment
//!   └─ its page (PAGES, by name)       clients, filesize, techniques, saturation, model,
//!        │                             protocols, degradation, capacity, replay, users, ab
//!        ├─ point: load_points, pool   its runs as Points (figures, health, verdict)
//!        ├─ charts, sweep, cells       shared charts, fits, table cells
//!        ├─ per_run                    a sweep's table of runs (clients; any x)
//!        ├─ queue_wait                 the accept-queue wait (kernel module), time split
//!        ├─ connections                the kernel's lifetimes, TIME_WAIT, retransmits
//!        ├─ kernel_cost                what the kernel module costs (the run's, the bench's)
//!        ├─ paper_panels, published    the paper's numbers beside ours
//!        │    └─ papers                the five papers' findings as data, and comparisons
//!        └─ page::ExperimentPage       the section, its table, CSV, summary, JSON
//!   baseline (--baseline)              compare's table against a stored lab
//! compare::page                        `webscope compare --html`
//! characterize::{page, summary}        `webscope characterize`'s page and terminal text
//! ```
//!
//! Not for: measuring or deciding (the lab's experiments and verdicts, `webscope-lab`, which
//! never calls this crate), nor the HTML and SVG themselves (`webscope_report`).

#![deny(missing_docs)]

pub mod ab;
pub mod ab_capacity;
pub mod baseline;
pub mod capacity;
pub mod cells;
pub mod characterize;
pub mod charts;
pub mod clients;
pub mod compare;
pub mod connections;
pub mod degradation;
pub mod filesize;
pub mod kernel_cost;
pub mod model;
pub mod page;
pub mod paper_panels;
pub mod papers;
pub mod per_run;
pub mod point;
pub mod protocols;
pub mod protocols_loss;
pub mod published;
pub mod queue_wait;
pub mod rendered;
pub mod replay;
pub mod report;
pub mod saturation;
pub mod sweep;
pub mod techniques;
pub mod users;

// What the lab's table of experiments and `webscope report` call.
pub use rendered::Rendered;
pub use report::{render, Rendering};

use std::path::Path;

use webscope_lab::runner::Sweep;
use webscope_lab::{clients as lab_clients, model as lab_model, replay as lab_replay};
use webscope_record::ExperimentRecord;

/// How an experiment's page is drawn: its section, tables and summary added to the report,
/// from its directory only.
pub type Draw = fn(&Path, &ExperimentRecord, &mut Rendered) -> anyhow::Result<()>;

/// Each experiment's page, by the name its [`Sweep`] writes in `experiment.json`.
pub const PAGES: &[(&str, Draw)] = &[
    (
        <lab_clients::ClientSweep<lab_clients::Clients>>::NAME,
        clients::render,
    ),
    (<webscope_lab::filesize::Filesize>::NAME, filesize::render),
    (
        <webscope_lab::techniques::Techniques>::NAME,
        techniques::render,
    ),
    (
        <webscope_lab::saturation::Saturation>::NAME,
        saturation::render,
    ),
    (
        <lab_clients::ClientSweep<lab_model::Model>>::NAME,
        model::render,
    ),
    (
        <webscope_lab::protocols::Protocols>::NAME,
        protocols::render,
    ),
    (
        <webscope_lab::degradation::Degradation>::NAME,
        degradation::render,
    ),
    (
        <webscope_lab::capacity::experiment::Capacity>::NAME,
        capacity::render,
    ),
    (<lab_replay::ReplaySweep>::NAME, replay::render),
    (<webscope_lab::users::UsersSearch>::NAME, users::render),
    (<webscope_lab::ab::trial::AbTrials>::NAME, ab::render),
];

/// The page of the experiment named `name`.
pub fn page_of(name: &str) -> Option<Draw> {
    PAGES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, draw)| *draw)
}

#[cfg(test)]
mod tests {
    /// An experiment the lab can run has a page, and a page belongs to one experiment.
    #[test]
    fn every_experiment_the_lab_runs_has_one_page() {
        for e in webscope_lab::EXPERIMENTS {
            assert!(super::page_of(e.name).is_some(), "{} has no page", e.name);
        }
        assert_eq!(super::PAGES.len(), webscope_lab::EXPERIMENTS.len());
    }
}
