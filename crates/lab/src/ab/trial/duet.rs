//! A duet round (#48 item 5; Bulej et al., duet benchmarking): A and B loaded at once, each by
//! its own generator (a thread of the lab, both on the lab's CPU), for the same trial. Both
//! servers then share the machine's state to the millisecond: a neighbour's burst, a
//! frequency change or a cold cache meets both, and cancels in their ratio. Measured before
//! it was built (`bench/duet.py`, 2 vCPUs, load average 2-6, two nginx on CPU 0, 30 s of
//! measuring per experiment): the interval on CPU per request was 0.7-2 points wide, RMIT's
//! back-to-back pairs 18-22; A/A intervals covered 0 once whose generator starts first
//! alternated (with A always first they sat 1.3 % off 0); a B with an access log read
//! +17-19 % CPU per request against +17.5 % from interleaved solo runs.
//!
//! What it changes: each server gets a share of the CPUs they share, so goodput compares
//! the two under contention (a slower B gives up its share's worth, not its solo
//! difference); CPU per request is each server's own.

use std::path::Path;

use anyhow::Context;
use webscope_monitor::disturbance::Limits;

use super::{trial_label, AbTrials, Trial, DISTURBED};
use crate::ab::{run_name, Side};
use crate::capacity::quiet;
use crate::measure::measure;
use crate::runner::Ctx;
use crate::step::warm_up;
use webscope_record::{write_json, RunRecord};

/// What disturbs a duet: steal and I/O pressure. Whatever contends for the CPUs the two
/// servers share, or for the lab's CPU their two generators share, meets both sides at once
/// and cancels in their ratio, which is the duet's point: so others' share of those CPUs is
/// not limited, nor a server thread's run-queue wait or the machine's CPU pressure (the two
/// servers wait for each other by design). With others limited as for a solo trial, a duet
/// under `bench/ab_power.py --hog` (a neighbour busy 2 s of every 4 on the servers' CPU,
/// with others' builds beside it: others took 81 % of CPU 0 and 78 % of CPU 1) kept no
/// round in a minute and could never decide; its rounds are now used, and their spread goes
/// into the interval. 1.0 turns a limit off.
fn limits() -> Limits {
    Limits {
        others: 1.0,
        wait: 1.0,
        cpu_pressure: 1.0,
        ..Limits::default()
    }
}

impl AbTrials {
    /// Measures round `t.round` as a duet: A into `a_dir`, B into the folder beside it
    /// (written here, with its `run.json`); `t.side`'s generator starts first. Returns A's
    /// record, which the runner writes.
    pub(super) fn measure_duet(
        &mut self,
        t: Trial,
        a_dir: &Path,
        ctx: &Ctx<'_>,
    ) -> anyhow::Result<RunRecord> {
        let dir = a_dir
            .parent()
            .context("a run's folder has its experiment's folder above it")?;
        self.dir = Some(dir.to_path_buf());
        let b_dir = dir.join(run_name(t.round, Side::B));
        std::fs::create_dir_all(&b_dir)
            .with_context(|| format!("cannot create {}", b_dir.display()))?;
        let candidate = &self.candidate;
        let (a_config, b_config) = (
            self.trial_config(ctx, ctx.target)?,
            self.trial_config(ctx, candidate)?,
        );
        let label = format!("{}, A and B at once", trial_label(&t));
        std::thread::scope(|s| {
            let b = s.spawn(|| warm_up(&b_config, ctx, &label));
            let a = warm_up(&a_config, ctx, &label);
            a.and(
                b.join()
                    .unwrap_or_else(|_| anyhow::bail!("B's warm-up panicked")),
            )
        })?;
        let mut watched = self.watched(ctx, Side::A);
        watched
            .server
            .extend(self.watched(ctx, Side::B).server.iter().copied());
        let sampler = quiet::start(&watched);
        let (a_label, b_label) = (format!("{label}: A"), format!("{label}: B"));
        let run_a = || {
            measure(
                a_dir,
                a_config.clone(),
                ctx.target,
                ctx.interrupt,
                ctx.bar,
                &a_label,
            )
        };
        let run_b = || {
            measure(
                &b_dir,
                b_config.clone(),
                candidate,
                ctx.interrupt,
                ctx.bar,
                &b_label,
            )
        };
        // Whose generator starts first alternates with the rounds' order: a head start of a
        // few milliseconds is a bias (A/A sat 1.3 % off 0 with A always first).
        let (a, b) = std::thread::scope(|s| {
            if t.side == Side::B {
                let b = s.spawn(run_b);
                (run_a(), b.join())
            } else {
                let a = s.spawn(run_a);
                let b = run_b();
                (
                    a.join()
                        .unwrap_or_else(|_| anyhow::bail!("A's run panicked")),
                    Ok(b),
                )
            }
        });
        let b = b.unwrap_or_else(|_| anyhow::bail!("B's run panicked"))?;
        let a = a?;
        if let Some(why) = sampler
            .and_then(|s| s.stop().ok())
            .and_then(|d| d.beyond(&limits()))
        {
            for d in [a_dir, b_dir.as_path()] {
                std::fs::write(d.join(DISTURBED), &why)
                    .with_context(|| format!("cannot write {}", d.display()))?;
            }
            ctx.bar.set_message(format!(
                "{label}: disturbed ({why}); the round is taken again"
            ));
            quiet::wait(&watched);
        }
        write_json(&b_dir.join("run.json"), &self.record(Side::B, t.round, b))?;
        Ok(self.record(Side::A, t.round, a))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use webscope_monitor::disturbance::{Disturbance, Region, Role};

    fn region(cpu: usize, role: Role, others: f64, steal: f64) -> Region {
        Region {
            cpus: vec![cpu],
            roles: vec![role],
            others,
            steal,
        }
    }

    #[test]
    fn a_neighbour_on_the_shared_cpus_does_not_disturb_a_duet_but_steal_does() {
        let busy = Disturbance {
            seconds: 2.0,
            regions: vec![
                region(0, Role::Server, 0.81, 0.0),
                region(1, Role::Generator, 0.78, 0.0),
            ],
            cpu_pressure: Some(0.9),
            ..Disturbance::default()
        };
        assert_eq!(busy.beyond(&limits()), None);
        // The same neighbour disturbs a solo trial, whose limits are the default ones.
        assert!(busy.beyond(&Limits::default()).is_some());
        let stolen = Disturbance {
            regions: vec![region(0, Role::Server, 0.0, 0.2)],
            ..busy.clone()
        };
        let why = stolen.beyond(&limits()).expect("steal disturbs a duet");
        assert!(why.contains("steal"), "{why}");
        let io = Disturbance {
            io_pressure: Some(0.5),
            ..busy
        };
        assert!(
            io.beyond(&limits()).is_some(),
            "I/O pressure disturbs a duet"
        );
    }
}
