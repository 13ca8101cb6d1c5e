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
pub const BENCH: &str = "Measured apart, by bench/kernel_cost.py on 2026-11-29 (not in these runs: a 2-vCPU KVM guest, kernel 6.18, shared with other builds, load average 4.1-4.5; the embedded server on one pinned core, 1 KiB responses, 50 connections, 10 pairs with the module on and off in alternating order): the server's CPU per request with it on over off was 0.99 at keep-alive (quartiles 0.92-1.06) and 1.01 with a connection per request (0.90-1.10), no difference the pairs' noise could show; the programs' own run time (kernel.bpf_stats_enabled: every hook on the machine, the client's events and the statistics' own cost included, so an upper bound of the server's share) was 0.44 µs per request at keep-alive, 4 % of the server's 10.6 µs, and 3.8 µs with a connection per request, 11 % of its 33.9 µs. On 2026-11-30, after its receive hook stopped looking up connections past their first receive (4 rounds against the program before, load average 11-12): 0.31 µs per request at keep-alive, 2.5 % of the server's 12.2 µs (0.42 µs, 3.5 %, before), and 3.7 µs with a connection per request, 11 % of its 32.9 µs, unchanged. Later on 2026-11-30, after the connections' hash map gave way to a table of plain loads and stores (3 rounds against the program before, load average 1.3): 2.6 µs per request with a connection per request against 3.8 µs before, 8.0 % of the server's 32.6 µs (9.8 % before), and 0.19 µs at keep-alive, 2.2 %; 18 runs per request at close carry the statistics' own 70-95 ns each, so the true share is lower by an amount this bound cannot say. Later on 2026-11-30, the hooks' share of the server's own CPU samples (bench/kernel_cost.py --perf: perf's software clock on the server's threads, this guest having no hardware counters; 10 rounds of 5 s, load average 2-4): 1.94 % with a connection per request (standard error 0.05; rounds 1.56-2.50), most of it the first receive's hook, and 0.85 % at keep-alive (0.05); 40 pairs of 3 s moved the server's CPU per request by +4.9 % with a connection per request (standard error 1.5) and -3.9 % at keep-alive (2.6), the figure there following the request rate, which the module's hooks on the client's CPU lowered by a median 3.7 % at close.";

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
