//! `webscope merge`: the segments of one run (`load --segment I/N`, from as many hosts) added
//! into the run's result, exactly, from `load --json` files or the results framed in pods'
//! logs (`webscope_load::frame`, `load --emit`).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use webscope_load::frame;
use webscope_load::{Part, Report};

const EXAMPLES: &str = "\
EXAMPLES:
    # three generators, one segment each, starting together
    webscope load http://10.0.0.5/ -c 300 -d 60s --segment 0/3 --start-at 2026-11-24T20:00:00Z --json s0.json --hlog s0.hlog
    ...
    webscope merge merged/ s0.json s1.json s2.json      # each .json with its .hlog beside it
    kubectl logs -l job-name=webscope-load --prefix > pods.log
    webscope merge merged/ pods.log                     # the results framed in the pods' logs";

/// Merge the segments of one run (`webscope load --segment I/N` on several hosts) into its
/// result: histograms added, so every percentile is exact, never an average of percentiles;
/// counters and errors summed; intervals added second by second (--start-at aligns them).
/// Writes OUT/load.json and OUT/load.hlog, as one run would, and prints the summary with a
/// table of the generators.
#[derive(clap::Args, Debug)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// Directory for the merged result (load.json, load.hlog).
    #[arg(value_name = "OUT")]
    out: PathBuf,
    /// The segments' results: `load --json` files (each with its `--hlog` of the same name
    /// and .hlog beside it), or text holding `load --emit` output (a pod's log; several
    /// results in one file are fine).
    #[arg(value_name = "RESULT", required = true)]
    results: Vec<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let mut parts = Vec::new();
    for path in &args.results {
        parts.extend(read(path)?);
    }
    let made = !args.out.exists();
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let merged = webscope_load::merge(&parts, Some(&args.out.join("load.hlog")))
        .map_err(anyhow::Error::from)
        .and_then(|report| {
            report.write_json(&args.out.join("load.json"))?;
            Ok(report)
        });
    // A merge that failed leaves nothing behind: no empty folder to be taken for a result.
    let report = match merged {
        Ok(report) => report,
        Err(e) => {
            if made {
                let _ = std::fs::remove_dir_all(&args.out);
            }
            return Err(e);
        }
    };
    print!("{}", report.summary());
    std::io::stdout().flush()?;
    Ok(())
}

/// The results in `path`: one JSON result with its interval log, or every framed result.
fn read(path: &Path) -> anyhow::Result<Vec<Part>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    if text.trim_start().starts_with('{') {
        let report: Report = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a webscope load --json result", path.display()))?;
        let hlog = path.with_extension("hlog");
        let log = std::fs::read(&hlog).with_context(|| {
            format!(
                "{} has no interval log beside it ({}): give each segment --hlog with the same name",
                path.display(),
                hlog.display()
            )
        })?;
        let part = frame::part(report, &log).map_err(anyhow::Error::msg);
        return Ok(vec![part.with_context(|| {
            format!(
                "{} is not an interval log that `webscope load --hlog` wrote",
                hlog.display()
            )
        })?]);
    }
    let parts = frame::framed(&text)
        .map_err(anyhow::Error::msg)
        .with_context(|| path.display().to_string())?;
    if parts.is_empty() {
        bail!(
            "{} holds no result: give load --json files, or logs of load --emit",
            path.display()
        );
    }
    Ok(parts)
}

/// Writes `report` and its interval log to stdout, framed (`load --emit`).
pub fn emit(report: &Report, hlog: &str) -> anyhow::Result<()> {
    Ok(frame::emit(&mut std::io::stdout().lock(), report, hlog)?)
}
