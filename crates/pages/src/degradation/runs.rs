//! The degradation experiment's runs as the page reads them: each service's figures in a run
//! (from the load generator's classes and the server's executor), repeats pooled into runs of
//! medians, and the runs' CSV. Not for what they mean (the table's rows and the targets).

use std::path::Path;

use webscope_model::stats::Sorted;
use webscope_report::Table;

use crate::cells::cell;
use webscope_lab::degradation::parse_run_name;
use webscope_record::{read_json, ExperimentRecord, RunRecord};

/// One service in one run.
#[derive(Debug, Clone, Default)]
pub struct Service {
    pub name: String,
    /// Successful responses per second (503s excluded).
    pub ok_per_s: f64,
    /// Refusals (503) per second.
    pub refused_per_s: f64,
    pub p99_ms: f64,
    /// From the server's executor: CPU seconds, mean wait before the first run, mean running.
    pub cpu_s: Option<f64>,
    pub wait_ms: Option<f64>,
    pub running_ms: Option<f64>,
    /// Mean slices per request.
    pub slices: Option<f64>,
}

/// One run: a set, a policy, a number of heavy clients.
#[derive(Debug, Clone)]
pub struct Run {
    pub set: String,
    pub policy: String,
    pub heavy: usize,
    pub services: Vec<Service>,
    /// The server's threads' time waiting for a CPU (run queue), percent of one core.
    pub runqueue_wait_pct: Option<f64>,
    /// Runs pooled into this one (`--repeat`): its figures are their medians.
    pub repeats: usize,
}

impl Run {
    /// The run named `name` (its set, policy and heavy clients are in its name), or None for
    /// a name that is not a degradation run's.
    fn of(name: &str, record: &RunRecord) -> Option<Run> {
        let (set, policy, heavy) = parse_run_name(name)?;
        let duration = record.load.duration_s.max(1e-9);
        let server = record.server.as_ref();
        let services = record
            .load
            .classes
            .iter()
            .map(|class| {
                let name = class.name.clone();
                let requests = class.figures.requests as f64;
                // A service's refusals are its responses of 400 and above (503 from a
                // policy): a class keeps no statuses of its own.
                let refused = class.figures.errors.bad_status as f64;
                let measured = server.and_then(|s| s.services.iter().find(|f| f.service == name));
                Service {
                    ok_per_s: (requests - refused).max(0.0) / duration,
                    refused_per_s: refused / duration,
                    p99_ms: class.figures.latency_us.p99 / 1000.0,
                    cpu_s: measured.map(|m| m.cpu_s),
                    wait_ms: measured.map(|m| m.wait_ms),
                    running_ms: measured.map(|m| m.running_ms),
                    slices: measured.map(|m| m.slices),
                    name,
                }
            })
            .collect();
        let runqueue_wait_pct = record
            .local_os()
            .and_then(|os| os.busiest("process", "wait_pct"));
        Some(Run {
            set: set.to_string(),
            policy: policy.to_string(),
            heavy,
            services,
            runqueue_wait_pct,
            repeats: 1,
        })
    }

    pub fn service(&self, name: &str) -> Option<&Service> {
        self.services.iter().find(|s| s.name == name)
    }

    /// The service's share of the CPU time the services used, percent.
    pub fn cpu_share(&self, name: &str) -> Option<f64> {
        let total: f64 = self.services.iter().filter_map(|s| s.cpu_s).sum();
        let mine = self.service(name)?.cpu_s?;
        (total > 0.0).then(|| 100.0 * mine / total)
    }
}

/// The services of `runs`, each once, in the order they first appear.
pub fn service_names<'a>(runs: impl IntoIterator<Item = &'a Run>) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for s in runs.into_iter().flat_map(|r| &r.services) {
        if !names.contains(&s.name) {
            names.push(s.name.clone());
        }
    }
    names
}

/// The experiment's runs, read from `dir` and pooled.
pub fn load(dir: &Path, exp: &ExperimentRecord) -> anyhow::Result<Vec<Run>> {
    let mut runs = Vec::new();
    for name in &exp.runs {
        let record: RunRecord = read_json(&dir.join(name).join("run.json"))?;
        runs.extend(Run::of(name, &record));
    }
    Ok(pool(runs))
}

/// The repetitions of each point pooled into one run of medians, in the order points first
/// appear.
pub fn pool(runs: Vec<Run>) -> Vec<Run> {
    let mut groups: Vec<Vec<Run>> = Vec::new();
    for run in runs {
        match groups.iter_mut().find(|g| {
            let first = &g[0];
            (first.set.as_str(), first.policy.as_str(), first.heavy)
                == (run.set.as_str(), run.policy.as_str(), run.heavy)
        }) {
            Some(group) => group.push(run),
            None => groups.push(vec![run]),
        }
    }
    groups
        .into_iter()
        .map(|group| {
            let services = service_names(&group)
                .into_iter()
                .map(|name| {
                    let of: Vec<&Service> = group.iter().filter_map(|r| r.service(&name)).collect();
                    let m = |f: &dyn Fn(&Service) -> Option<f64>| {
                        Sorted::new(of.iter().filter_map(|s| f(s))).median()
                    };
                    Service {
                        ok_per_s: m(&|s| Some(s.ok_per_s)).unwrap_or(0.0),
                        refused_per_s: m(&|s| Some(s.refused_per_s)).unwrap_or(0.0),
                        p99_ms: m(&|s| Some(s.p99_ms)).unwrap_or(0.0),
                        cpu_s: m(&|s| s.cpu_s),
                        wait_ms: m(&|s| s.wait_ms),
                        running_ms: m(&|s| s.running_ms),
                        slices: m(&|s| s.slices),
                        name,
                    }
                })
                .collect();
            Run {
                set: group[0].set.clone(),
                policy: group[0].policy.clone(),
                heavy: group[0].heavy,
                services,
                runqueue_wait_pct: Sorted::new(group.iter().filter_map(|r| r.runqueue_wait_pct))
                    .median(),
                repeats: group.len(),
            }
        })
        .collect()
}

/// The runs' CSV: one row per run and service.
pub fn runs_csv(runs: &[Run]) -> String {
    let mut t = Table::new([
        "set",
        "policy",
        "heavy",
        "service",
        "ok_per_s",
        "refused_per_s",
        "p99_ms",
        "wait_ms",
        "running_ms",
        "slices",
        "cpu_s",
        "runqueue_wait_pct",
    ]);
    for r in runs {
        for s in &r.services {
            t.row([
                r.set.clone(),
                r.policy.clone(),
                r.heavy.to_string(),
                s.name.clone(),
                format!("{:.3}", s.ok_per_s),
                format!("{:.3}", s.refused_per_s),
                format!("{:.3}", s.p99_ms),
                cell(s.wait_ms, 3),
                cell(s.running_ms, 3),
                cell(s.slices, 2),
                cell(s.cpu_s, 4),
                cell(r.runqueue_wait_pct, 1),
            ]);
        }
    }
    t.to_csv()
}
