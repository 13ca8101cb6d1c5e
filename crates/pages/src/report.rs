//! The report's driver: from a lab directory's records to `index.html`, `report.json`, the
//! CSV files and the terminal summary. It opens the page with the set-up, has each
//! experiment's page added (through the lab's table of experiments), adds the baseline's
//! section and the validity banner, and writes the files. Not for any experiment's figures
//! (their page files) nor for a section's skeleton (the page builder's).

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_json::Value;
use webscope_report::{Block, Page, Section};

use super::baseline;
use super::rendered::Rendered;
use webscope_lab::results::report::Validity;
use webscope_record::{read_json, ExperimentRecord, LabRecord};

/// What rendering found, beside the files it wrote.
pub struct Rendering {
    /// `index.html`.
    pub index: PathBuf,
    /// The terminal summary.
    pub summary: String,
    /// Runs judged.
    pub judged: usize,
    /// Runs judged invalid, "experiment run: why".
    pub invalid: Vec<String>,
    /// Runs that failed (no result at all), "experiment: what failed".
    pub failures: Vec<String>,
    /// The lab was stopped (Ctrl-C) before its end: a cut run is not a failure.
    pub interrupted: bool,
}

impl Rendering {
    /// Every judged run was invalid: the lab measured nothing it can stand behind.
    pub fn nothing_valid(&self) -> bool {
        self.judged > 0 && self.invalid.len() == self.judged
    }
}

/// Renders the report for the lab directory `dir`.
pub fn render(dir: &Path) -> anyhow::Result<Rendering> {
    let lab: LabRecord = read_json(&dir.join("lab.json"))
        .with_context(|| format!("{} is not a webscope lab directory", dir.display()))?;
    let mut setup = vec![Block::Text(format!(
        "Target: {}. Machine: {}. Placement: {}. Server processes measured: {}. Runs are valid when at most {} % of requests fail or get a status other than {}; throughput is goodput (those responses only). {} Command: {}.",
        lab.target,
        lab.machine,
        lab.placement,
        if lab.server_processes.is_empty() { "unknown" } else { &lab.server_processes },
        lab.judge.max_error_pct,
        lab.judge.expect_status,
        lab.preflight,
        lab.command
    ))];
    for w in &lab.warnings {
        setup.push(Block::Warning(w.clone()));
    }
    if lab.interrupted {
        setup.push(Block::Warning(
            "The lab was interrupted: this report shows what was measured before it stopped."
                .into(),
        ));
    }
    let mut out = Rendered::new(lab.judge.clone());
    out.sections.push(Section {
        heading: "Set-up".into(),
        blocks: setup,
    });
    let mut failures = Vec::new();
    for name in &lab.experiments {
        let exp_dir = dir.join(name);
        let exp: ExperimentRecord = read_json(&exp_dir.join("experiment.json"))?;
        failures.extend(exp.failures.iter().map(|f| format!("{}: {f}", exp.name)));
        let draw = crate::page_of(&exp.name)
            .with_context(|| format!("{}: unknown experiment {:?}", dir.display(), exp.name))?;
        draw(&exp_dir, &exp, &mut out)?;
    }
    for (name, content) in &out.csv {
        webscope_sys::write_file(&dir.join(name), content.as_bytes())
            .with_context(|| format!("cannot write {}", dir.join(name).display()))?;
    }
    if let Some(baseline) = &lab.baseline {
        let ours = serde_json::Value::Object(out.json.clone());
        let (section, json) = baseline::section(dir, Path::new(baseline), &ours);
        out.sections.push(section);
        out.json
            .insert("baseline".into(), serde_json::to_value(json)?);
    }
    let banner = banner(&out);
    if let Some(b) = &banner {
        out.summary = format!("{b}\n{}", out.summary);
    }
    out.json.insert(
        "validity".into(),
        serde_json::to_value(Validity {
            expect_status: out.judge.expect_status.clone(),
            max_error_pct: out.judge.max_error_pct,
            runs: out.judged,
            invalid: out.invalid.clone(),
        })?,
    );
    let page = Page {
        title: "webscope lab report".into(),
        subtitle: format!("webscope {} — {}", lab.version, lab.target),
        banners: banner.into_iter().collect(),
        sections: out.sections,
    };
    let index = dir.join("index.html");
    webscope_sys::write_file(&index, page.to_html().as_bytes())
        .with_context(|| format!("cannot write {}", index.display()))?;
    let text = serde_json::to_string_pretty(&Value::Object(out.json))? + "\n";
    let json = dir.join("report.json");
    webscope_sys::write_file(&json, text.as_bytes())
        .with_context(|| format!("cannot write {}", json.display()))?;
    Ok(Rendering {
        index,
        summary: out.summary,
        judged: out.judged,
        invalid: out.invalid,
        failures,
        interrupted: lab.interrupted,
    })
}

/// The banner a report opens with when runs were invalid: how many, and the first cause.
fn banner(out: &Rendered) -> Option<String> {
    let first = out.invalid.first()?;
    let n = out.invalid.len();
    Some(if n == out.judged {
        format!(
            "No valid run: all {n} runs failed more than {} % of their requests, so nothing here is a measurement of the server. First: {first}.",
            out.judge.max_error_pct
        )
    } else {
        format!(
            "{n} of {} runs are invalid (more than {} % of requests failed or got a status other than {}) and are left out of knees, fits and models. First: {first}.",
            out.judged, out.judge.max_error_pct, out.judge.expect_status
        )
    })
}
