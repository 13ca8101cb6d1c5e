//! `webscope merge`: the segments of one run (`load --segment I/N`, from as many hosts) added
//! into the run's result, exactly; and the line framing (`load --emit`) that carries a
//! segment's result out of a pod's log.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use webscope_load::{tag_of, Intervals, Part, Report};

/// Every framed line starts so; anything before it on the line (`kubectl logs --prefix`) and
/// every other line is ignored.
const FRAME: &str = "webscope-result ";

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
        return Ok(vec![part(report, &log).with_context(|| {
            format!(
                "{} is not an interval log that `webscope load --hlog` wrote",
                hlog.display()
            )
        })?]);
    }
    let parts = framed(&text).with_context(|| path.display().to_string())?;
    if parts.is_empty() {
        bail!(
            "{} holds no result: give load --json files, or logs of load --emit",
            path.display()
        );
    }
    Ok(parts)
}

/// A result, its log checked readable now so that a bad one is named by its file.
fn part(report: Report, log: &[u8]) -> anyhow::Result<Part> {
    let mut tags = vec![None];
    if report.classes.len() > 1 {
        tags.extend(report.classes.iter().map(|c| Some(tag_of(&c.name))));
    }
    // Decoded one interval at a time and dropped: a log's intervals are never all held.
    for tag in &tags {
        for interval in Intervals::new(log, tag.as_deref()) {
            interval.map_err(anyhow::Error::msg)?;
        }
    }
    Ok(Part {
        report,
        log: log.to_vec(),
    })
}

/// The framed results in a log: `begin`, one `json` line, `hlog` lines, `end`.
fn framed(text: &str) -> anyhow::Result<Vec<Part>> {
    let mut parts = Vec::new();
    let mut current: Option<(Option<Report>, String)> = None;
    for line in text.lines() {
        let Some(at) = line.find(FRAME) else {
            continue;
        };
        let rest = &line[at + FRAME.len()..];
        let (kind, body) = rest.split_once(' ').unwrap_or((rest, ""));
        match (kind, current.as_mut()) {
            ("begin", _) => current = Some((None, String::new())),
            ("json", Some((report, _))) => {
                *report = Some(serde_json::from_str(body).context("a framed JSON line")?)
            }
            ("hlog", Some((_, log))) => {
                log.push_str(body);
                log.push('\n');
            }
            ("end", Some(_)) => {
                if let Some((Some(report), log)) = current.take() {
                    parts.push(part(report, log.as_bytes())?);
                }
            }
            // A line out of order (a log cut short): the result it belonged to is dropped
            // unless its end comes.
            _ => {}
        }
    }
    if current.is_some() {
        bail!("a result's framing has no end: was the log cut short?");
    }
    Ok(parts)
}

/// Writes `report` and its interval log to stdout, framed (`load --emit`).
pub fn emit(report: &Report, hlog: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{FRAME}begin {}",
        report.segment.as_deref().unwrap_or("whole")
    )?;
    writeln!(out, "{FRAME}json {}", serde_json::to_string(report)?)?;
    for line in hlog.lines() {
        writeln!(out, "{FRAME}hlog {line}")?;
    }
    writeln!(out, "{FRAME}end")?;
    out.flush()?;
    Ok(())
}
