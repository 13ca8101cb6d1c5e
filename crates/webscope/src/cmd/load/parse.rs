//! `webscope load`'s flag values that clap does not parse itself.

use std::time::Duration;

use webscope_load::slo::Slo;

pub(super) fn parse_threshold(text: &str) -> Result<Slo, String> {
    Slo::parse(text)
}

/// `I/N` with 0 <= I < N.
pub(super) fn parse_segment(text: &str) -> Result<(usize, usize), String> {
    let parsed = text
        .split_once('/')
        .and_then(|(i, n)| Some((i.trim().parse().ok()?, n.trim().parse().ok()?)));
    match parsed {
        Some((i, n)) if i < n => Ok((i, n)),
        _ => Err(format!(
            "{text:?} is not a segment: give I/N with 0 <= I < N, e.g. 0/3 (Kubernetes: $(JOB_COMPLETION_INDEX)/3)"
        )),
    }
}

/// RFC 3339 (`2026-11-24T20:00:00Z`) or Unix seconds (`1795550400`, `1795550400.5`).
pub(super) fn parse_start_at(text: &str) -> Result<std::time::SystemTime, String> {
    if let Ok(seconds) = text.trim().parse::<f64>() {
        if seconds.is_finite() && seconds >= 0.0 {
            return Ok(std::time::UNIX_EPOCH + Duration::from_secs_f64(seconds));
        }
    }
    humantime::parse_rfc3339_weak(text.trim()).map_err(|_| {
        format!("{text:?} is not a time: give RFC 3339 (2026-11-24T20:00:00Z) or Unix seconds")
    })
}

pub(super) fn parse_io(name: &str) -> Result<webscope_load::Io, String> {
    match name {
        "epoll" => Ok(webscope_load::Io::Epoll),
        "uring" | "io-uring" | "io_uring" => Ok(webscope_load::Io::Uring),
        _ => Err(format!("{name:?} is not an engine: give epoll or uring")),
    }
}
