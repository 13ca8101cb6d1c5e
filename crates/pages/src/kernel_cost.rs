//! What the monitor's kernel module (#49) costs, said under the figures it gave, as the
//! monitor says its own cost: the part a run can know (the monitor's CPU time reading the
//! module's figures, `cost.by_source["kernel"]` in its summary) and the part it cannot (the
//! hooks run inside the kernel, in the time of whatever task hits them: the server's own CPU
//! time, among the rest), quoted from `bench/kernel_cost.py` with its date and machine.
//! Present only where a run has kernel figures, so a lab stored without them renders as it
//! did. Not for measuring the cost (the bench does).

use webscope_report::Block;

use webscope_record::RunRecord;

/// The bench's figure, the last time it ran: of that machine and day, not of these runs.
/// Rerun `bench/kernel_cost.py` and update this (and docs/architecture.md) when the program's
/// hooks change.
pub const BENCH: &str = "Measured apart, by bench/kernel_cost.py on 2026-11-30 (not in these runs: a 2-vCPU KVM guest, kernel 6.18; the embedded server on one pinned core, 1 KiB responses, the generator on the other; its history is in docs/architecture.md): with the module on and off in 30 alternating pairs at a fixed offered rate (--rate: 10 000 req/s with a connection per request, 30 000 at keep-alive, 4 s each, load average 1-2), the server's CPU per request rose by 1.1 % with a connection per request (standard error 0.5) and by 0.9 % at keep-alive (0.6); the hooks' share of the server's own CPU samples (--perf, perf's software clock on the server's threads, this guest having no hardware counters; 4 rounds of 5 s) was 1.24 % with a connection per request (standard error 0.05), most of it the first receive's hook, and 0.78 % at keep-alive.";

/// The monitor's CPU time reading the kernel module's figures over one run, per cent of one
/// core (its summary's cost of the `kernel` source over the run's wall time).
fn reading_pct(run: &RunRecord) -> Option<f64> {
    let os = run.local_os()?;
    os.kernel.as_ref()?;
    let cost = os.cost.by_source.get("kernel")?;
    let wall = os.cost.wall_s.max(os.duration_s);
    (wall > 0.0).then(|| 100.0 * cost.calls as f64 * cost.mean_us / 1e6 / wall)
}

/// The sentence on the module's cost, where any run has its figures.
pub fn note<'a>(runs: impl IntoIterator<Item = &'a RunRecord>) -> Option<Block> {
    let most = runs.into_iter().filter_map(reading_pct).reduce(f64::max)?;
    Some(Block::Text(format!(
        "The kernel module's cost: reading its figures took the monitor at most {most:.2} % of one core in these runs; its hooks run inside the kernel, in the time of the tasks they trace (the server's included), which no run measures apart. {BENCH}"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::point::test_point;

    #[test]
    fn the_cost_is_said_only_where_a_run_has_kernel_figures() {
        let mut run = test_point(1.0, 100.0, 0.3, Some(0.5)).run;
        assert!(note([&run]).is_none(), "a stored lab: nothing");
        run.os = Some(
            serde_json::from_value(serde_json::json!({
                "ports": [80],
                "kernel": {"dequeue": "", "unattached": [],
                    "runq": {"pids": [], "untimed": 0, "wait": null}, "ports": []},
                "cost": {"sampler_cpu_s": 0.1, "wall_s": 4.0, "pct_of_one_core": 2.5,
                    "mean_sample_us": 2500.0,
                    "by_source": {"kernel": {"calls": 40, "mean_us": 50.0, "max_us": 90.0}}},
            }))
            .expect("a monitor summary"),
        );
        let Some(Block::Text(text)) = note([&run]) else {
            panic!("no note");
        };
        // 40 readings of 50 µs over 4 s: 0.05 % of a core.
        assert!(text.contains("at most 0.05 % of one core"), "{text}");
        assert!(text.contains("bench/kernel_cost.py"), "{text}");
    }
}
