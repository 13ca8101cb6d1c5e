//! The `degradation` experiment (Hibino, Kourai & Chiba, Figures 1-3 and Table 1): light,
//! middle and heavy services loaded together by closed-loop client groups, heavy clients
//! growing 0, 5 ... 40, under each scheduling policy of `serve --services`. Workload set 1 is
//! 30 light clients; set 2 is 20 light and 20 middle. Each run has a fresh server, so heavy
//! work left running by one run never weighs on the next.

use std::path::Path;
use std::time::Duration;

use webscope_load::{Config, Group, Mode, Target as LoadTarget};

use crate::measure::measure;
use crate::runner::{Ctx, OnFailure, Points, Run, Sweep};
use crate::target::Target;
use crate::Options;
use webscope_record::RunRecord;

/// The policies compared, with the flags that configure them. Fair uses the weights;
/// admission lets two heavy jobs run (eight may wait) and refuses the rest with 503.
pub const POLICIES: [(&str, &[&str]); 4] = [
    ("threads", &[]),
    ("fair", &["--weight", "light=8,middle=2,heavy=1"]),
    ("priority", &["--priority", "light,middle,heavy"]),
    ("admission", &["--limit", "heavy=2", "--target", "5ms"]),
];

/// A workload set: its name and its fixed groups (name, clients).
pub struct Set {
    /// The set's name, as the runs' labels and the page give it.
    pub name: &'static str,
    /// Its fixed client groups: (class name, closed-loop clients).
    pub fixed: &'static [(&'static str, usize)],
}

/// The paper's two workload sets.
pub const SETS: [Set; 2] = [
    Set {
        name: "set1",
        fixed: &[("light", 30)],
    },
    Set {
        name: "set2",
        fixed: &[("light", 20), ("middle", 20)],
    },
];

/// Heavy clients of the default sweep.
pub const HEAVY: [usize; 9] = [0, 5, 10, 15, 20, 25, 30, 35, 40];
/// Heavy clients of `--quick`.
pub const QUICK_HEAVY: [usize; 2] = [0, 40];

/// How long a refused client waits before asking again: the server's `Retry-After: 1`.
const BACKOFF_503: Duration = Duration::from_secs(1);

fn heavy_counts(options: &Options) -> &'static [usize] {
    if options.quick {
        &QUICK_HEAVY
    } else {
        &HEAVY
    }
}

/// The length of each run: `--duration`, else 5 s (1 s with `--quick`): 72 runs in the
/// default sweep.
fn run_length(options: &Options) -> Duration {
    options.duration.unwrap_or(if options.quick {
        Duration::from_secs(1)
    } else {
        Duration::from_secs(5)
    })
}

/// A run's directory name; the renderer reads set, policy and heavy clients back from it.
/// Repetitions after the first carry `-r2`, `-r3` ... (the runner's `round_name`).
pub fn run_name(set: &str, policy: &str, heavy: usize, repeat: usize) -> String {
    match repeat {
        0 | 1 => format!("{set}-{policy}-heavy-{heavy:03}"),
        r => format!("{set}-{policy}-heavy-{heavy:03}-r{r}"),
    }
}

/// The inverse of [`run_name`] (the repetition is left out: the renderer pools them).
pub fn parse_run_name(name: &str) -> Option<(&str, &str, usize)> {
    let mut parts = name.splitn(5, '-');
    let set = parts.next()?;
    let policy = parts.next()?;
    (parts.next()? == "heavy").then_some(())?;
    let heavy = parts.next()?.parse().ok()?;
    match parts.next() {
        None => {}
        Some(r) => {
            r.strip_prefix('r')?.parse::<usize>().ok()?;
        }
    }
    Some((set, policy, heavy))
}

/// The experiment: every set under every policy at every heavy count, each run its own
/// server.
pub struct Degradation;

impl Sweep for Degradation {
    const NAME: &'static str = "degradation";
    const FACTOR: &'static str = "heavy clients";
    const NEEDS_EMBEDDED: bool = true;
    /// Indices in [`SETS`] and [`POLICIES`], and the heavy clients.
    type Point = (usize, usize, usize);

    fn points(options: &Options) -> Points<Self::Point> {
        let mut points = Vec::new();
        for set in 0..SETS.len() {
            for policy in 0..POLICIES.len() {
                for &heavy in heavy_counts(options) {
                    points.push((set, policy, heavy));
                }
            }
        }
        Points::Fixed(points)
    }

    fn start(_: &Ctx<'_>) -> anyhow::Result<Degradation> {
        Ok(Degradation)
    }

    fn name(&self, &(set, policy, heavy): &Self::Point) -> String {
        run_name(SETS[set].name, POLICIES[policy].0, heavy, 1)
    }

    fn label(&self, run: &Run<'_, Self::Point>) -> String {
        run.name.to_string()
    }

    fn measure(&mut self, run: &Run<'_, Self::Point>, ctx: &Ctx<'_>) -> anyhow::Result<RunRecord> {
        let &(set, policy, heavy) = run.point;
        let (policy, flags) = POLICIES[policy];
        one_run(run.dir, ctx, &SETS[set], policy, flags, heavy)
    }

    /// A policy that fails is reported; the others still run.
    fn on_failure(&self, _: &Self::Point) -> OnFailure {
        OnFailure::Continue
    }
}

fn one_run(
    run_dir: &Path,
    ctx: &Ctx<'_>,
    set: &Set,
    policy: &str,
    flags: &[&str],
    heavy: usize,
) -> anyhow::Result<RunRecord> {
    let extra: Vec<String> = ["--services", "--policy", policy]
        .iter()
        .chain(flags)
        .map(|s| s.to_string())
        .collect();
    let mut target = Target::embedded(ctx.exe, ctx.fileset, 1, ctx.server_cpu, &extra)?;
    let mut groups: Vec<Group> = set
        .fixed
        .iter()
        .map(|(name, clients)| Group {
            name: name.to_string(),
            connections: *clients,
            url: format!("/svc/{name}"),
        })
        .collect();
    if heavy > 0 {
        groups.push(Group {
            name: "heavy".into(),
            connections: heavy,
            url: "/svc/heavy".into(),
        });
    }
    let mut config = Config::new(LoadTarget::groups(Some(&target.base_url), &groups)?);
    config.connections = groups.iter().map(|g| g.connections).sum();
    config.threads = 1;
    config.duration = run_length(ctx.options);
    config.mode = Mode::KeepAlive;
    // Under `threads` a heavy request may wait seconds for a CPU: that is the finding, not
    // a failure.
    config.timeout = Duration::from_secs(60);
    config.backoff_503 = BACKOFF_503;
    let label = format!("{} {policy}, {heavy} heavy", set.name);
    let measured = measure(run_dir, config, &target, ctx.interrupt, ctx.bar, &label);
    // Heavy jobs may still be running; draining them would only delay the next run.
    target.kill();
    let measured = measured?;
    let clients: Vec<String> = groups
        .iter()
        .map(|g| format!("{} {}", g.connections, g.name))
        .collect();
    Ok(RunRecord::new(
        heavy as f64,
        format!(
            "{}, policy {policy} {}, closed loop keep-alive: {}",
            set.name,
            flags.join(" "),
            clients.join(" + ")
        ),
        measured,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_names_read_back() {
        let name = run_name("set2", "admission", 5, 1);
        assert_eq!(name, "set2-admission-heavy-005");
        assert_eq!(parse_run_name(&name), Some(("set2", "admission", 5)));
        let again = run_name("set1", "fair", 40, 3);
        assert_eq!(again, "set1-fair-heavy-040-r3");
        assert_eq!(parse_run_name(&again), Some(("set1", "fair", 40)));
        assert_eq!(parse_run_name("clients-010"), None);
        assert_eq!(parse_run_name("set1-fair-heavy-040-x3"), None);
    }
}
