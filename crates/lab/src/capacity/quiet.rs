//! Whether the machine was quiet while a probe ran (issue #33 §3): what else used the
//! server's and the generator's CPUs, steal, the run-queue wait of their threads, CPU and I/O
//! pressure ([`webscope_monitor::disturbance`], measured over the probe), and the wait for a
//! quiet machine before a disturbed probe is taken again.
//!
//! The rule: a probe that failed or could not be decided while the machine was disturbed
//! beyond [`Limits`] is `disturbed`, not failed — it says nothing of the server. A probe that
//! passed while disturbed passed all the same (the server met the objective with less of the
//! machine than it had), so a capacity rests on confirmed fails measured on a quiet machine.
//!
//! Not for: judging the objective (`objective`) nor choosing rates (`search`).

use std::time::Duration;

use webscope_monitor::disturbance::{wait_for_quiet, Disturbance, Limits, Sampler, Watched};

use crate::objective::Outcome;
use crate::runner::Ctx;

/// The longest wait for a quiet machine before a disturbed probe is taken again: long enough
/// for a build step or a burst of I/O to pass, short enough that a machine busy for good ends
/// the search in about a minute and a half ([`super::search::MOST_DISTURBED`] waits).
pub const MOST_WAIT: Duration = Duration::from_secs(30);

/// The processes a probe watches: the target's (every process of their trees, where they
/// run on this machine) and this process (the generator, the lab's own threads with it),
/// with the CPUs each is pinned to when pinned.
pub fn watched(ctx: &Ctx<'_>) -> Watched {
    let server: Vec<u32> = webscope_monitor::procs::tree(&ctx.target.pids)
        .iter()
        .map(|p| p.pid)
        .collect();
    let server_cpus = ctx
        .server_cpu
        .map(|c| vec![c])
        .or_else(|| server.first().and_then(|&pid| pinned(pid)));
    Watched {
        server,
        server_cpus,
        generator: vec![std::process::id()],
        generator_cpus: pinned(0),
    }
}

/// The CPUs process `pid` may run on, when that is fewer than the machine's.
pub fn pinned_cpus(pid: u32) -> Option<Vec<usize>> {
    pinned(pid)
}

/// The CPUs `pid` (0: this thread) may run on, when that is fewer than the machine's.
fn pinned(pid: u32) -> Option<Vec<usize>> {
    // SAFETY: a zeroed cpu_set_t filled in by sched_getaffinity with its size.
    let set = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(pid as i32, std::mem::size_of::<libc::cpu_set_t>(), &mut set)
            != 0
        {
            return None;
        }
        set
    };
    // Not available_parallelism: it counts the CPUs this thread may use, the mask itself.
    // SAFETY: sysconf has no preconditions.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as usize;
    // SAFETY: CPU_ISSET reads a bit of the set filled above, within its size.
    let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect();
    (!cpus.is_empty() && cpus.len() < online).then_some(cpus)
}

/// Starts measuring what else uses the machine; None (said by the caller as not measured)
/// when a watched process is gone or /proc cannot be read.
pub fn start(watched: &Watched) -> Option<Sampler> {
    Disturbance::start(watched).ok()
}

/// The probe's outcome once the machine's figures are in: a fail or an undecided probe on a
/// disturbed machine is `disturbed`, with the figures past their limits as its reason; so is
/// a probe the generator fell behind in while other processes took its CPUs (or steal did):
/// it says nothing of the generator either, and ending the search there would give "above
/// N" for a machine that was busy. Not for the waits and CPU pressure alone, which a
/// generator at the end of its CPU causes itself.
pub fn verdict_on(
    outcome: Outcome,
    reason: String,
    disturbance: Option<&Disturbance>,
) -> (Outcome, String) {
    verdict_within(outcome, reason, disturbance, &Limits::default())
}

/// [`verdict_on`] with other limits than the defaults (a server whose own threads share its
/// CPU by design: see the users experiment's step).
pub fn verdict_within(
    outcome: Outcome,
    reason: String,
    disturbance: Option<&Disturbance>,
    limits: &Limits,
) -> (Outcome, String) {
    let limits = match outcome {
        Outcome::Generator => Limits {
            wait: f64::INFINITY,
            cpu_pressure: f64::INFINITY,
            ..*limits
        },
        _ => *limits,
    };
    let beyond = disturbance.and_then(|d| d.beyond(&limits));
    match (outcome, beyond) {
        (Outcome::Fail | Outcome::Undecided | Outcome::Generator, Some(why)) => (
            Outcome::Disturbed,
            format!("the machine was disturbed: {why} (the probe's own verdict: {reason})"),
        ),
        (outcome, _) => (outcome, reason),
    }
}

/// [`wait`], said on the bar as `label`'s: the wait before a probe (or a users step) taken
/// after a disturbed one.
pub fn wait_announced(label: &str, ctx: &Ctx<'_>, watched: &Watched) {
    ctx.bar.set_message(format!(
        "{label}: waiting for a quiet machine (at most {} s)",
        MOST_WAIT.as_secs()
    ));
    wait(watched);
}

/// Waits (at most [`MOST_WAIT`]) for a quiet machine before a disturbed probe is taken again;
/// whether it found one, and the last window's figures in words when it did not.
pub fn wait(watched: &Watched) -> (bool, Option<String>) {
    match wait_for_quiet(watched, &Limits::default(), MOST_WAIT) {
        Ok((quiet, last)) => (quiet, last.beyond(&Limits::default())),
        Err(_) => (false, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_fail_an_undecided_or_a_generator_bound_probe_on_a_disturbed_machine_is_disturbed() {
        let busy: Disturbance = serde_json::from_value(serde_json::json!({
            "seconds": 2.0, "cpu_pressure": 0.6,
        }))
        .unwrap();
        let quiet = Disturbance {
            seconds: 2.0,
            ..Disturbance::default()
        };
        let (o, why) = verdict_on(Outcome::Fail, "p99<=5ms: 9ms".into(), Some(&busy));
        assert_eq!(o, Outcome::Disturbed);
        assert!(why.starts_with("the machine was disturbed: "), "{why}");
        assert!(why.contains("p99<=5ms: 9ms"), "{why}");
        let (o, _) = verdict_on(Outcome::Undecided, String::new(), Some(&busy));
        assert_eq!(o, Outcome::Disturbed);
        // A generator that fell behind: disturbed when others took CPU, not for the
        // pressure it causes itself at the end of its CPU.
        assert_eq!(
            verdict_on(Outcome::Generator, String::new(), Some(&busy)).0,
            Outcome::Generator
        );
        let others: Disturbance = serde_json::from_value(serde_json::json!({
            "seconds": 2.0,
            "regions": [{"cpus": [1], "roles": ["generator"], "others": 0.4, "steal": 0.0}],
        }))
        .unwrap();
        let (o, why) = verdict_on(Outcome::Generator, "behind".into(), Some(&others));
        assert_eq!(o, Outcome::Disturbed, "{why}");
        // A pass stands: the server met the objective with less of the machine.
        assert_eq!(
            verdict_on(Outcome::Pass, String::new(), Some(&busy)).0,
            Outcome::Pass
        );
        assert_eq!(
            verdict_on(Outcome::Fail, String::new(), Some(&quiet)).0,
            Outcome::Fail
        );
        // Not measured: the probe's own verdict.
        assert_eq!(
            verdict_on(Outcome::Fail, String::new(), None).0,
            Outcome::Fail
        );
    }

    #[test]
    fn this_thread_is_pinned_only_when_it_cannot_run_everywhere() {
        // A fresh thread pinned to CPU 0 sees itself pinned there; on a 1-CPU machine
        // nothing is "pinned".
        // SAFETY: sysconf has no preconditions.
        let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as usize;
        let seen = std::thread::spawn(|| {
            // SAFETY: a zeroed cpu_set_t with one bit set, for this thread.
            unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(0, &mut set);
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
            }
            pinned(0)
        })
        .join()
        .unwrap();
        if online > 1 {
            assert_eq!(seen, Some(vec![0]));
        } else {
            assert_eq!(seen, None);
        }
    }
}
