//! The machine's speed while a search ran, as the page and report.json say it: the mean of
//! the reference loop's readings before every probe ([`crate::capacity::probe::Reference`]).
//! `compare` sets two searches' medians side by side ([`crate::capacity::compare`]).
//!
//! Not for: reading the loop (`webscope_monitor::reference`), nor judging probes with it (one
//! reading is too noisy for that).

use serde_json::{json, Value};
use webscope_monitor::reference::Speed;

use crate::capacity::compare::MACHINE_LIMIT;
use crate::capacity::probe::Judged;

/// The search's reference readings summed up, and the CPU they were read on (None when the
/// server was not pinned); None when no probe has any.
pub fn speed(probes: &[Judged]) -> Option<(Speed, Option<usize>)> {
    let refs: Vec<_> = probes.iter().filter_map(|j| j.reference.as_ref()).collect();
    let readings: Vec<f64> = refs.iter().flat_map(|r| r.ms.iter().copied()).collect();
    Some((Speed::of(&readings)?, refs.first().and_then(|r| r.cpu)))
}

/// The page's sentence.
pub fn sentence((speed, cpu): &(Speed, Option<usize>)) -> String {
    let on = cpu.map_or("unpinned, as the server".into(), |c| {
        format!("on the server's CPU {c}")
    });
    format!(
        "The machine's speed: a reference loop (a fixed amount of work: random reads over 16 MiB and four chains of multiplies) took {:.1} ms of its thread's CPU time on average over {} readings, taken before each measured run {on} (p10 {:.1}, median {:.1}, p90 {:.1} ms). On a shared machine this moves by 10 % and more between searches while nothing in /proc does (the host's other tenants take the core's sibling, its cache, its memory bandwidth), and the server's speed with it: compare sets two searches' means side by side and does not decide a change the machine's own could have made when they differ by more than {:.0} %.",
        speed.mean_ms,
        speed.samples,
        speed.p10_ms,
        speed.median_ms,
        speed.p90_ms,
        100.0 * MACHINE_LIMIT
    )
}

/// report.json's `machine_reference`.
pub fn json((speed, cpu): &(Speed, Option<usize>)) -> Value {
    json!({
        "samples": speed.samples, "mean_ms": speed.mean_ms, "median_ms": speed.median_ms,
        "p10_ms": speed.p10_ms, "p90_ms": speed.p90_ms, "cpu": cpu,
    })
}
