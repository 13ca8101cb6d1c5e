//! The degradation experiment's page (Hibino et al., Figures 1-3 and Table 1): each
//! service's throughput against heavy clients, one chart per policy and set; the light
//! service under every policy on one chart; the degradation table (throughput at the most
//! heavy clients relative to none) with the waiting / running split measured inside the
//! middleware; and the targets checked against what was measured.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{json, Value};
use webscope_report::svg::{Axis, Series, XyChart};
use webscope_report::{Block, Table};

use super::figures::num;
use super::page::ExperimentPage;
use super::rendered::Rendered;
use crate::degradation::{parse_run_name, POLICIES, SETS};
use crate::record::{read_json, ExperimentRecord, RunRecord};

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
    fn of(name: &str, record: &RunRecord) -> Option<Run> {
        let (set, policy, heavy) = parse_run_name(name)?;
        let duration = num(&record.load, &["duration_s"]).max(1e-9);
        let server = record.server.as_ref();
        let services = record.load["classes"]
            .as_array()?
            .iter()
            .map(|class| {
                let name = class["name"].as_str().unwrap_or("").to_string();
                let requests = num(class, &["requests"]);
                let refused = num(class, &["errors", "bad_status"]);
                let measured = server.and_then(|s| s.services.iter().find(|f| f.service == name));
                Service {
                    ok_per_s: (requests - refused).max(0.0) / duration,
                    refused_per_s: refused / duration,
                    p99_ms: num(class, &["latency_us", "p99"]) / 1000.0,
                    cpu_s: measured.map(|m| m.cpu_s),
                    wait_ms: measured.map(|m| m.wait_ms),
                    running_ms: measured.map(|m| m.running_ms),
                    slices: measured.map(|m| m.slices),
                    name,
                }
            })
            .collect();
        let runqueue_wait_pct = record.os.as_ref().and_then(|os| {
            let rows = os.get("groups")?.get("process")?.get("rows")?.as_object()?;
            rows.values()
                .filter_map(|r| r.get("wait_pct")?.get("mean")?.as_f64())
                .reduce(f64::max)
        });
        Some(Run {
            set: set.to_string(),
            policy: policy.to_string(),
            heavy,
            services,
            runqueue_wait_pct,
            repeats: 1,
        })
    }

    fn service(&self, name: &str) -> Option<&Service> {
        self.services.iter().find(|s| s.name == name)
    }

    /// The service's share of the CPU time the services used, percent.
    fn cpu_share(&self, name: &str) -> Option<f64> {
        let total: f64 = self.services.iter().filter_map(|s| s.cpu_s).sum();
        let mine = self.service(name)?.cpu_s?;
        (total > 0.0).then(|| 100.0 * mine / total)
    }
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
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
            let mut names: Vec<String> = Vec::new();
            for s in group.iter().flat_map(|r| &r.services) {
                if !names.contains(&s.name) {
                    names.push(s.name.clone());
                }
            }
            let services = names
                .into_iter()
                .map(|name| {
                    let of: Vec<&Service> = group.iter().filter_map(|r| r.service(&name)).collect();
                    let m = |f: &dyn Fn(&Service) -> Option<f64>| {
                        median(of.iter().filter_map(|s| f(s)).collect())
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
                runqueue_wait_pct: median(
                    group.iter().filter_map(|r| r.runqueue_wait_pct).collect(),
                ),
                repeats: group.len(),
            }
        })
        .collect()
}

/// One service's degradation under one policy in one set.
#[derive(Debug, Clone)]
pub struct Degradation {
    pub set: String,
    pub policy: String,
    pub service: String,
    pub heavy_max: usize,
    /// Throughput with no heavy clients (None for the heavy service itself).
    pub base_per_s: Option<f64>,
    /// Throughput with the most heavy clients.
    pub last_per_s: f64,
    /// `last / base`, percent.
    pub kept_pct: Option<f64>,
    pub last: Service,
    pub cpu_share_pct: Option<f64>,
    pub base_p99_ms: Option<f64>,
    /// The server's threads' run-queue wait at the most heavy clients (monitor), % of a core.
    pub runqueue_wait_pct: Option<f64>,
}

/// The degradation table's rows, in set, policy, service order.
pub fn degradations(runs: &[Run]) -> Vec<Degradation> {
    let mut rows = Vec::new();
    for set in SETS {
        for (policy, _) in POLICIES {
            let of: Vec<&Run> = runs
                .iter()
                .filter(|r| r.set == set.name && r.policy == policy)
                .collect();
            let (Some(first), Some(last)) = (
                of.iter().min_by_key(|r| r.heavy),
                of.iter().max_by_key(|r| r.heavy),
            ) else {
                continue;
            };
            for service in &last.services {
                let base = (first.heavy == 0 && last.heavy > 0)
                    .then(|| first.service(&service.name))
                    .flatten();
                rows.push(Degradation {
                    set: set.name.into(),
                    policy: policy.into(),
                    service: service.name.clone(),
                    heavy_max: last.heavy,
                    base_per_s: base.map(|b| b.ok_per_s),
                    last_per_s: service.ok_per_s,
                    kept_pct: base
                        .filter(|b| b.ok_per_s > 0.0)
                        .map(|b| 100.0 * service.ok_per_s / b.ok_per_s),
                    last: service.clone(),
                    cpu_share_pct: last.cpu_share(&service.name),
                    base_p99_ms: base.map(|b| b.p99_ms),
                    runqueue_wait_pct: last.runqueue_wait_pct,
                });
            }
        }
    }
    rows
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".into(), |v| format!("{v:.digits$}"))
}

fn table(rows: &[Degradation]) -> Table {
    let mut t = Table::new([
        "set",
        "policy",
        "service",
        "req/s heavy=0",
        "req/s heavy=max",
        "kept %",
        "503/s",
        "p99 ms (0 → max)",
        "wait ms",
        "running ms",
        "slices",
        "CPU share %",
        "threads in run queue",
    ]);
    for d in rows {
        t.row([
            d.set.clone(),
            d.policy.clone(),
            d.service.clone(),
            opt(d.base_per_s, 1),
            format!("{:.1}", d.last_per_s),
            opt(d.kept_pct, 0),
            format!("{:.1}", d.last.refused_per_s),
            format!("{} → {:.1}", opt(d.base_p99_ms, 1), d.last.p99_ms),
            opt(d.last.wait_ms, 1),
            opt(d.last.running_ms, 2),
            opt(d.last.slices, 1),
            opt(d.cpu_share_pct, 0),
            // Time waiting for a CPU summed over threads, in cores: how many wait, on average.
            opt(d.runqueue_wait_pct.map(|p| p / 100.0), 1),
        ]);
    }
    t
}

/// The targets, each as a sentence with its measured figures and a verdict.
pub fn targets(runs: &[Run], rows: &[Degradation]) -> Vec<(String, bool)> {
    let find = |policy: &str, service: &str| {
        rows.iter()
            .find(|d| d.set == "set1" && d.policy == policy && d.service == service)
    };
    let mut out = Vec::new();
    if let (Some(light), Some(heavy)) = (find("fair", "light"), find("fair", "heavy")) {
        if let Some(kept) = light.kept_pct {
            out.push((
                format!(
                    "fair, set 1: light keeps {kept:.0} % of its throughput at {} heavy clients (target ≥ 80 %)",
                    light.heavy_max
                ),
                kept >= 80.0,
            ));
        }
        if let Some(share) = light.cpu_share_pct {
            // Weights light=8, heavy=1: light is owed 8/9 of the CPU when both are backlogged.
            let owed = 800.0 / 9.0;
            out.push((
                format!(
                    "fair, set 1: light has {share:.0} % of the services' CPU, heavy {:.0} % (weights 8:1 give {owed:.0} %, target ± 10 points)",
                    heavy.cpu_share_pct.unwrap_or(0.0)
                ),
                (share - owed).abs() <= 10.0,
            ));
        }
        out.push((
            format!(
                "fair, set 1: heavy completes {:.1} requests/s at {} heavy clients (target: more than none)",
                heavy.last_per_s, heavy.heavy_max
            ),
            heavy.last_per_s > 0.0,
        ));
    }
    if let Some(light) = find("threads", "light") {
        if let Some(kept) = light.kept_pct {
            out.push((
                format!(
                    "threads, set 1: light keeps {kept:.0} % (no target: what this OS's scheduler does; the paper saw 1-3 % on Linux 2.6)"
                ),
                true,
            ));
        }
    }
    if let (Some(light), Some(heavy)) = (find("admission", "light"), find("admission", "heavy")) {
        if let Some(base) = light.base_p99_ms {
            // The light service's own target: its p99 with no heavy load, plus the admission
            // rule's queueing-delay target (5 ms) — what it should cost to share the server.
            let target = base + 5.0;
            out.push((
                format!(
                    "admission, set 1: light p99 {:.1} ms at {} heavy clients against {target:.1} ms (its p99 alone + the 5 ms queueing target), heavy refused {:.1}/s",
                    light.last.p99_ms, light.heavy_max, heavy.last.refused_per_s
                ),
                light.last.p99_ms <= target && heavy.last.refused_per_s > 0.0,
            ));
        }
    }
    let light0 = |policy: &str| {
        runs.iter()
            .find(|r| r.set == "set1" && r.policy == policy && r.heavy == 0)
            .and_then(|r| r.service("light"))
            .map(|s| s.ok_per_s)
    };
    if let (Some(fair), Some(threads)) = (light0("fair"), light0("threads")) {
        if threads > 0.0 {
            let ratio = fair / threads;
            out.push((
                format!(
                    "no contention: light alone does {fair:.0} req/s under fair, {threads:.0} under threads ({ratio:.2}×, target ≥ 0.95×)"
                ),
                ratio >= 0.95,
            ));
        }
    }
    out
}

fn policy_chart(set: &str, policy: &str, runs: &[&Run]) -> Block {
    let mut services: Vec<String> = Vec::new();
    for r in runs {
        for s in &r.services {
            if !services.contains(&s.name) {
                services.push(s.name.clone());
            }
        }
    }
    let series = services
        .iter()
        .map(|name| {
            let points = runs
                .iter()
                .filter_map(|r| Some((r.heavy as f64, r.service(name)?.ok_per_s)))
                .collect();
            Series::line(name, points)
        })
        .collect();
    let light: Vec<f64> = runs
        .iter()
        .filter_map(|r| r.service("light").map(|s| s.ok_per_s))
        .collect();
    let reading = match (light.first(), light.last(), runs.last()) {
        (Some(&a), Some(&b), Some(last)) if a > 0.0 && runs.len() > 1 => format!(
            "Under {policy}, light keeps {:.0} % of its throughput as heavy clients grow to {}; heavy completes {:.1} requests/s{}.",
            100.0 * b / a,
            last.heavy,
            last.service("heavy").map_or(0.0, |s| s.ok_per_s),
            last.service("heavy")
                .filter(|s| s.refused_per_s > 0.0)
                .map_or(String::new(), |s| format!(" and is refused {:.1} times/s", s.refused_per_s))
        ),
        _ => "Too few runs to read a trend.".into(),
    };
    Block::Chart {
        svg: XyChart {
            title: format!("{set} under {policy}: throughput of each service"),
            x: Axis::linear("heavy clients"),
            // Log scale: light does thousands per second, heavy a few.
            y: Axis::log("successful requests/s (log)"),
            series,
        }
        .to_svg(),
        reading,
    }
}

fn light_chart(set: &str, runs: &[Run]) -> Option<Block> {
    let mut series = Vec::new();
    let mut kept = Vec::new();
    for (policy, _) in POLICIES {
        let of: Vec<&Run> = runs
            .iter()
            .filter(|r| r.set == set && r.policy == policy)
            .collect();
        let base = of
            .iter()
            .find(|r| r.heavy == 0)
            .and_then(|r| r.service("light"))
            .map(|s| s.ok_per_s)
            .filter(|b| *b > 0.0)?;
        let points: Vec<(f64, f64)> = of
            .iter()
            .filter_map(|r| Some((r.heavy as f64, 100.0 * r.service("light")?.ok_per_s / base)))
            .collect();
        if let Some(&(_, last)) = points.last() {
            kept.push((policy, last));
        }
        series.push(Series::line(policy, points));
    }
    let best = kept.iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
    let worst = kept.iter().min_by(|a, b| a.1.total_cmp(&b.1))?;
    Some(Block::Chart {
        svg: XyChart {
            title: format!("{set}: the light service under each policy"),
            x: Axis::linear("heavy clients"),
            y: Axis::linear("light throughput, % of heavy = 0"),
            series,
        }
        .to_svg(),
        reading: format!(
            "With the most heavy clients, light keeps {:.0} % under {} and {:.0} % under {}.",
            best.1, best.0, worst.1, worst.0
        ),
    })
}

fn json_rows(rows: &[Degradation]) -> Value {
    Value::Array(
        rows.iter()
            .map(|d| {
                json!({
                    "set": d.set, "policy": d.policy, "service": d.service,
                    "heavy_clients": d.heavy_max, "base_per_s": d.base_per_s,
                    "last_per_s": d.last_per_s, "kept_pct": d.kept_pct,
                    "refused_per_s": d.last.refused_per_s, "p99_ms": d.last.p99_ms,
                    "wait_ms": d.last.wait_ms, "running_ms": d.last.running_ms,
                    "slices": d.last.slices, "runqueue_wait_pct": d.runqueue_wait_pct,
                    "cpu_share_pct": d.cpu_share_pct,
                })
            })
            .collect(),
    )
}

fn runs_csv(runs: &[Run]) -> String {
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
                opt(s.wait_ms, 3),
                opt(s.running_ms, 3),
                opt(s.slices, 2),
                opt(s.cpu_s, 4),
                opt(r.runqueue_wait_pct, 1),
            ]);
        }
    }
    t.to_csv()
}

/// Adds the degradation experiment to the report.
pub fn render(dir: &Path, exp: &ExperimentRecord, out: &mut Rendered) -> anyhow::Result<()> {
    let mut runs = Vec::new();
    for name in &exp.runs {
        let record: RunRecord = read_json(&dir.join(name).join("run.json"))?;
        runs.extend(Run::of(name, &record));
    }
    let runs = pool(runs);
    let mut page = ExperimentPage::new(
        exp,
        "Degradation of light services under heavy load (Hibino et al.)",
    );
    page.push(Block::Text(setup(&runs)));
    let rows = degradations(&runs);
    let checks = targets(&runs, &rows);
    for (sentence, met) in &checks {
        page.push(if *met {
            Block::Text(format!("✓ {sentence}."))
        } else {
            Block::Warning(format!("Target missed: {sentence}."))
        });
    }
    for set in SETS {
        page.extend(light_chart(set.name, &runs));
        for (policy, _) in POLICIES {
            let of: Vec<&Run> = runs
                .iter()
                .filter(|r| r.set == set.name && r.policy == policy)
                .collect();
            if !of.is_empty() {
                page.push(policy_chart(set.name, policy, &of));
            }
        }
    }
    page.table(
        "Degradation: each service's throughput with the most heavy clients relative to none; at the most heavy clients, its 503s, its wait before running and its running time (means, measured by the server's executor: the paper's Table 1), slices per request, its share of the services' CPU, and how many of the server's threads wait in the OS run queue on average (monitor, from schedstat)",
        table(&rows),
    );
    page.csv(runs_csv(&runs));
    page.summary(
        "degradation",
        checks.iter().map(|(sentence, met)| {
            format!("{} {sentence}", if *met { "met:   " } else { "MISSED:" })
        }),
    );
    let mut per_set: BTreeMap<String, Value> = BTreeMap::new();
    for set in SETS {
        let of: Vec<Degradation> = rows.iter().filter(|d| d.set == set.name).cloned().collect();
        per_set.insert(set.name.into(), json_rows(&of));
    }
    page.json(json!({
        "sets": per_set,
        "targets": checks.iter().map(|(s, met)| json!({"target": s, "met": met})).collect::<Vec<_>>(),
    }));
    let lost: Vec<(String, f64)> = rows
        .iter()
        .filter(|r| r.set == "set1" && r.service == "light")
        .filter_map(|r| Some((r.policy.clone(), 100.0 - r.kept_pct?)))
        .collect();
    page.paper(super::paper_panels::degradation(&lost));
    page.finish(out);
    Ok(())
}

/// The sentence on the set-up: the services, the client groups, the policies, the repeats.
fn setup(runs: &[Run]) -> String {
    let repeats = runs.iter().map(|r| r.repeats).max().unwrap_or(1);
    format!(
        "Closed-loop client groups on the services of webscope serve (light: fib(25); middle: fib(35); heavy: a DOM built from an XML catalogue and searched 100 times), a fresh server per run pinned to one CPU. Set 1: 30 light clients; set 2: 20 light and 20 middle; heavy clients added 0 … 40. Policies: {}. A refused client waits 1 s (Retry-After) before asking again. {}",
        POLICIES
            .iter()
            .map(|(p, f)| if f.is_empty() { p.to_string() } else { format!("{p} ({})", f.join(" ")) })
            .collect::<Vec<_>>()
            .join(", "),
        if repeats > 1 {
            format!("Each point is the median of {repeats} runs, taken round the whole sweep.")
        } else {
            "Each point is one run: on a small machine, repeat them (--repeat) before trusting a verdict.".into()
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svc(name: &str, ok: f64, refused: f64, p99: f64, cpu: f64) -> Service {
        Service {
            name: name.into(),
            ok_per_s: ok,
            refused_per_s: refused,
            p99_ms: p99,
            cpu_s: Some(cpu),
            wait_ms: Some(1.0),
            running_ms: Some(1.0),
            slices: Some(1.0),
        }
    }

    fn run(policy: &str, heavy: usize, services: Vec<Service>) -> Run {
        Run {
            set: "set1".into(),
            policy: policy.into(),
            heavy,
            services,
            runqueue_wait_pct: None,
            repeats: 1,
        }
    }

    fn runs() -> Vec<Run> {
        vec![
            run("threads", 0, vec![svc("light", 1000.0, 0.0, 10.0, 4.0)]),
            run(
                "threads",
                40,
                vec![
                    svc("light", 30.0, 0.0, 900.0, 0.1),
                    svc("heavy", 2.0, 0.0, 9000.0, 3.9),
                ],
            ),
            run("fair", 0, vec![svc("light", 980.0, 0.0, 10.0, 4.0)]),
            run(
                "fair",
                40,
                vec![
                    svc("light", 850.0, 0.0, 12.0, 3.5),
                    svc("heavy", 1.0, 0.0, 9000.0, 0.5),
                ],
            ),
            run("admission", 0, vec![svc("light", 1000.0, 0.0, 10.0, 4.0)]),
            run(
                "admission",
                40,
                vec![
                    svc("light", 900.0, 0.0, 20.0, 3.5),
                    svc("heavy", 1.0, 30.0, 900.0, 0.5),
                ],
            ),
        ]
    }

    #[test]
    fn degradation_is_the_last_throughput_over_the_first() {
        let rows = degradations(&runs());
        let light = |p: &str| {
            rows.iter()
                .find(|d| d.policy == p && d.service == "light")
                .unwrap()
        };
        assert_eq!(light("threads").kept_pct, Some(3.0));
        assert_eq!(light("fair").heavy_max, 40);
        let heavy = rows
            .iter()
            .find(|d| d.policy == "fair" && d.service == "heavy")
            .unwrap();
        assert_eq!(heavy.kept_pct, None);
        assert_eq!(heavy.cpu_share_pct, Some(12.5));
    }

    #[test]
    fn repetitions_pool_into_medians() {
        let pooled = pool(vec![
            run("fair", 0, vec![svc("light", 900.0, 0.0, 10.0, 4.0)]),
            run("fair", 40, vec![svc("light", 800.0, 0.0, 12.0, 3.5)]),
            run("fair", 0, vec![svc("light", 1000.0, 0.0, 30.0, 4.0)]),
            run("fair", 0, vec![svc("light", 980.0, 0.0, 20.0, 4.0)]),
        ]);
        assert_eq!(pooled.len(), 2);
        assert_eq!((pooled[0].heavy, pooled[0].repeats), (0, 3));
        let light = pooled[0].service("light").unwrap();
        assert_eq!((light.ok_per_s, light.p99_ms), (980.0, 20.0));
        assert_eq!((pooled[1].heavy, pooled[1].repeats), (40, 1));
    }

    #[test]
    fn targets_are_judged_from_the_figures() {
        let runs = runs();
        let checks = targets(&runs, &degradations(&runs));
        let verdict = |start: &str| {
            checks
                .iter()
                .find(|(s, _)| s.starts_with(start))
                .map(|(_, met)| *met)
                .unwrap()
        };
        // 850 / 980 = 87 %: met; the split 87.5 % vs 88.9 %: met; heavy progresses.
        assert!(verdict("fair, set 1: light keeps 87 %"));
        assert!(verdict("fair, set 1: light has 88 %"));
        assert!(verdict("fair, set 1: heavy completes 1.0"));
        // Light's p99 20 ms against 10 + 5 ms: missed, though heavy is refused.
        assert!(!verdict("admission, set 1: light p99 20.0 ms"));
        // 980 / 1000 = 0.98: met.
        assert!(verdict("no contention: light alone does 980"));
    }
}
