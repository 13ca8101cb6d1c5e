//! From the records on disk to the report: `index.html` (charts and tables), `report.json`
//! and one CSV per table, and the terminal summary. Reads only the files the lab wrote, so
//! `webscope report DIR` gives the same bytes as the lab did.
//!
//! ```text
//! report::render(dir)                  lab.json: the set-up; then for each experiment
//!   └─ its page file's render(...)     clients, filesize, techniques, saturation, model,
//!        │                             protocols, degradation, capacity
//!        ├─ point: load_points, pool   its runs as Points (figures, health, verdict)
//!        ├─ charts, sweep, cells       shared charts, fits, table cells
//!        ├─ per_run                    a sweep's table of runs (clients; any x)
//!        ├─ queue_wait                 the accept-queue wait (kernel module), time split
//!        ├─ kernel_cost                what the kernel module costs (the run's, the bench's)
//!        ├─ paper_panels               the paper's numbers beside ours
//!        └─ page::ExperimentPage       the section, its table, CSV, summary, JSON
//!   baseline (--baseline)              compare's table against a stored lab
//! ```
//!
//! Not for measuring (the experiments' run loops) nor for the HTML itself (`webscope_report`).

pub mod ab;
pub mod ab_capacity;
pub mod baseline;
pub mod capacity;
pub mod cells;
pub mod charts;
pub mod clients;
pub mod degradation;
pub mod filesize;
pub mod kernel_cost;
pub mod model;
pub mod page;
pub mod paper_panels;
pub mod per_run;
pub mod point;
pub mod protocols;
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
