//! Results framed in a log (`webscope load --emit`, read back by `webscope merge`): a pod's
//! result leaves it through `kubectl logs`, the only channel every cluster gives, as lines
//! `webscope-result begin SEGMENT`, one `json` line (the report), `hlog` lines (the interval
//! log) and `end`. Anything before the frame on a line (`kubectl logs --prefix`) and every
//! other line is passed over.

use std::io::Write;

use crate::{tag_of, Intervals, Part, Report};

/// Every framed line starts so.
pub const FRAME: &str = "webscope-result ";

/// A result, its interval log checked readable now, so that a bad one is named by the file
/// it came from (Err: what is wrong with the log).
pub fn part(report: Report, log: &[u8]) -> Result<Part, String> {
    let mut tags = vec![None];
    if report.classes.len() > 1 {
        tags.extend(report.classes.iter().map(|c| Some(tag_of(&c.name))));
    }
    // Decoded one interval at a time and dropped: a log's intervals are never all held.
    for tag in &tags {
        for interval in Intervals::new(log, tag.as_deref()) {
            interval?;
        }
    }
    Ok(Part {
        report,
        log: log.to_vec(),
    })
}

/// The framed results in a log's text, in their order.
pub fn framed(text: &str) -> Result<Vec<Part>, String> {
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
                let read = serde_json::from_str(body);
                *report = Some(read.map_err(|e| format!("a framed JSON line: {e}"))?)
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
        return Err("a result's framing has no end: was the log cut short?".into());
    }
    Ok(parts)
}

/// Writes `report` and its interval log `hlog` to `out`, framed.
pub fn emit(out: &mut impl Write, report: &Report, hlog: &str) -> std::io::Result<()> {
    let segment = report.segment.as_deref().unwrap_or("whole");
    writeln!(out, "{FRAME}begin {segment}")?;
    writeln!(out, "{FRAME}json {}", serde_json::to_string(report)?)?;
    for line in hlog.lines() {
        writeln!(out, "{FRAME}hlog {line}")?;
    }
    writeln!(out, "{FRAME}end")?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_framed_result_reads_back_whatever_precedes_it_and_a_cut_one_is_refused() {
        let report = Report {
            segment: Some("1/3".into()),
            ..Report::default()
        };
        let mut out = Vec::new();
        emit(&mut out, &report, "").unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("webscope-result begin 1/3\n"), "{text}");
        let prefixed: String = text
            .lines()
            .map(|l| format!("[pod/a] {l}\nnoise\n"))
            .collect();
        let parts = framed(&prefixed).unwrap();
        assert_eq!(parts.len(), 1);
        assert_eq!(parts[0].report.segment.as_deref(), Some("1/3"));
        let cut = text.replace("webscope-result end\n", "");
        let no_end = framed(&cut).err().expect("refused");
        assert!(no_end.contains("no end"), "{no_end}");
        let bad = text.replace("json {", "json [");
        let not_json = framed(&bad).err().expect("refused");
        assert!(not_json.starts_with("a framed JSON line: "), "{not_json}");
    }
}
