//! The `saturation` experiment (Chiarini & Couch): closed-loop clients doubling 1, 2, 4 ...
//! on the lab's target until the mean response time stops doubling with them (or errors
//! start, or a cap), each step's response-time histogram kept; then a two-class run (a ~22 KB
//! and a ~1.1 MB file, as in the paper) on a server of its own with every request's
//! completion time and duration written out, for the density map.
//!
//! The rule, from the paper: below saturation the mean response time hardly moves as clients
//! double; once the server is saturated it doubles with them (Little's law: N = X R with X
//! flat); when it then stops doubling, the server has gone past saturation into erratic
//! behaviour (refusals, drops), and figures beyond are not reliable. So: keep doubling while
//! no step has doubled yet or the last step doubled; stop at the first step that does not
//! double after one that did, at the first errors, or at the cap.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::Context;
use webscope_load::{Config, Group, Mode, Target as LoadTarget};

use super::clients::{measure, Plan};
use super::record::{write_json, ExperimentRecord, RunRecord};
use super::target::Target;
use super::{Ctx, Options};

/// A step "doubles" the mean response time when it grows by this factor or more as clients
/// double (2 less the noise of short runs).
pub const DOUBLING: f64 = 1.7;

/// Most clients of the default sweep, and of `--quick`.
pub const CAP: usize = 256;
pub const QUICK_CAP: usize = 32;

/// The density run's two files (Chiarini's 22 KB and 1.1 MB) and their clients.
pub const SMALL_BYTES: usize = 22 * 1024;
pub const LARGE_BYTES: usize = 1_100 * 1024;
const SMALL_CLIENTS: usize = 8;
const LARGE_CLIENTS: usize = 2;

fn cap(options: &Options) -> usize {
    if options.quick {
        QUICK_CAP
    } else {
        CAP
    }
}

/// Runs planned at most: the doubling steps up to the cap, and the density run.
pub fn runs(options: &Options) -> usize {
    (cap(options) as f64).log2() as usize + 2
}

/// What the rule says after the steps so far: `None` to go on, or why to stop.
/// `steps` are (clients, mean response time, errors), in order.
pub fn stop_reason(steps: &[(usize, f64, f64)], cap: usize) -> Option<String> {
    let &(clients, _, errors) = steps.last()?;
    if errors > 0.0 {
        return Some(format!("errors started at {clients} clients"));
    }
    let ratios = ratios(steps);
    let doubled_before = ratios[..ratios.len().saturating_sub(1)]
        .iter()
        .any(|r| *r >= DOUBLING);
    if let Some(&last) = ratios.last() {
        if doubled_before && last < DOUBLING {
            return Some(format!(
                "the mean response time stopped doubling at {clients} clients (×{last:.2})"
            ));
        }
    }
    (clients * 2 > cap).then(|| format!("the cap of {cap} clients"))
}

/// Each step's mean response time over the previous step's.
pub fn ratios(steps: &[(usize, f64, f64)]) -> Vec<f64> {
    steps
        .windows(2)
        .map(|w| if w[0].1 > 0.0 { w[1].1 / w[0].1 } else { 0.0 })
        .collect()
}

/// The knee: the last load before the mean response time began to double with the clients
/// (there throughput stopped growing). None if it never doubled.
pub fn knee(steps: &[(usize, f64, f64)]) -> Option<usize> {
    let first = ratios(steps).iter().position(|r| *r >= DOUBLING)?;
    Some(steps[first].0)
}

/// Runs the doubling steps, then the density run, into `dir`.
pub fn run(dir: &Path, ctx: &Ctx<'_>) -> anyhow::Result<ExperimentRecord> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut record = ExperimentRecord {
        name: "saturation".into(),
        factor: "clients".into(),
        runs: Vec::new(),
        complete: false,
        failures: Vec::new(),
    };
    let plan = Plan {
        clients: Vec::new(),
        duration: ctx.duration,
        close: !ctx.options.keep_alive,
        fileset: ctx.fileset,
    };
    let mut steps = Vec::new();
    let mut clients = 1;
    let mut stopped = None;
    while stopped.is_none() && !ctx.interrupt.load(Ordering::Relaxed) {
        let name = format!("clients-{clients:03}");
        let run_dir = dir.join(&name);
        std::fs::create_dir_all(&run_dir)?;
        match super::clients::one_run(&run_dir, clients, &plan, ctx.target, ctx.interrupt, ctx.bar)
        {
            Ok(run) => {
                steps.push((
                    clients,
                    run.load["latency_us"]["mean"].as_f64().unwrap_or(0.0),
                    run.load["errors"]["total"].as_f64().unwrap_or(0.0),
                ));
                write_json(&run_dir.join("run.json"), &run)?;
                record.runs.push(name);
            }
            Err(err) => {
                record.failures.push(format!("{clients} clients: {err:#}"));
                break;
            }
        }
        ctx.bar.inc(1);
        write_json(&dir.join("experiment.json"), &record)?;
        stopped = stop_reason(&steps, cap(ctx.options));
        clients *= 2;
    }
    // The steps the rule saved are not run: the bar jumps over them.
    let planned_steps = runs(ctx.options) - 1;
    ctx.bar
        .inc(planned_steps.saturating_sub(steps.len()) as u64);
    if ctx.options.target.is_some() {
        record.failures.push(
            "the two-class run needs the embedded server (it serves its own two files): not run against --target".into(),
        );
    } else if !ctx.interrupt.load(Ordering::Relaxed) && record.failures.is_empty() {
        match density_run(dir, ctx) {
            Ok(name) => record.runs.push(name),
            Err(err) => record.failures.push(format!("the two-class run: {err:#}")),
        }
        ctx.bar.inc(1);
    }
    record.complete = stopped.is_some() && record.runs.len() > steps.len();
    write_json(&dir.join("experiment.json"), &record)?;
    Ok(record)
}

/// The two-class run: its own server on a directory holding the two files, a client group
/// per file, every request written to `samples.csv`.
fn density_run(dir: &Path, ctx: &Ctx<'_>) -> anyhow::Result<String> {
    let root = ctx.options.work.join("chiarini-two-class");
    for (name, size) in [("small.bin", SMALL_BYTES), ("large.bin", LARGE_BYTES)] {
        let path = root.join(name);
        if std::fs::metadata(&path).map(|m| m.len() as usize).ok() != Some(size) {
            std::fs::create_dir_all(&root)
                .with_context(|| format!("cannot create {}", root.display()))?;
            std::fs::write(&path, vec![b'x'; size])
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
    }
    let name = "two-class".to_string();
    let run_dir = dir.join(&name);
    std::fs::create_dir_all(&run_dir)?;
    let mut target = Target::embedded(ctx.exe, &root, 1, ctx.server_cpu, &[])?;
    let groups = [
        Group {
            name: "22KB".into(),
            connections: SMALL_CLIENTS,
            url: "/small.bin".into(),
        },
        Group {
            name: "1.1MB".into(),
            connections: LARGE_CLIENTS,
            url: "/large.bin".into(),
        },
    ];
    let mut config = Config::new(LoadTarget::groups(Some(&target.base_url), &groups)?);
    config.connections = SMALL_CLIENTS + LARGE_CLIENTS;
    config.threads = 1;
    config.duration = ctx.duration;
    config.mode = if ctx.options.keep_alive {
        Mode::KeepAlive
    } else {
        Mode::Close
    };
    config.timeout = Duration::from_secs(10);
    config.samples = Some(run_dir.join("samples.csv"));
    let label = "two classes, 22 KB and 1.1 MB";
    let measured = measure(&run_dir, config, &target, ctx.interrupt, ctx.bar, label);
    target.stop();
    let measured = measured?;
    let run = RunRecord::new(
        (SMALL_CLIENTS + LARGE_CLIENTS) as f64,
        format!(
            "{label}: {SMALL_CLIENTS} clients on the 22 KB file and {LARGE_CLIENTS} on the 1.1 MB one, closed loop"
        ),
        measured,
    );
    write_json(&run_dir.join("run.json"), &run)?;
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_waits_for_doubling_then_stops_when_it_ends() {
        // Flat below saturation: go on.
        let flat = [(1, 1.0, 0.0), (2, 1.05, 0.0), (4, 1.1, 0.0)];
        assert_eq!(stop_reason(&flat, 256), None);
        assert_eq!(knee(&flat), None);
        // Doubling from 4 clients on: still going.
        let doubling = [
            (1, 1.0, 0.0),
            (2, 1.0, 0.0),
            (4, 1.1, 0.0),
            (8, 2.2, 0.0),
            (16, 4.3, 0.0),
        ];
        assert_eq!(stop_reason(&doubling, 256), None);
        assert_eq!(knee(&doubling), Some(4));
        // Then only ×1.3: stop there.
        let mut ended = doubling.to_vec();
        ended.push((32, 5.6, 0.0));
        let why = stop_reason(&ended, 256).unwrap();
        assert!(why.contains("stopped doubling at 32 clients"), "{why}");
        // Errors stop at once; so does the cap.
        assert!(stop_reason(&[(1, 1.0, 0.0), (2, 1.0, 3.0)], 256)
            .unwrap()
            .contains("errors started at 2"));
        assert!(stop_reason(&flat, 4).unwrap().contains("cap of 4"));
        assert_eq!(runs(&crate::tests_options(false)), 10);
    }
}
