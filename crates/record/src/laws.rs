//! A lab run's figures for the operational laws (`webscope model laws --run DIR`): its run
//! file judged as the lab that made it judged it (its `lab.json`'s expectation), so that the
//! laws are applied to the goodput of a valid run only.

/// A lab run's figures for the operational laws (`webscope model laws --run DIR`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LawsFigures {
    /// Goodput, responses per second: the run judged as the lab that made it judged it.
    pub throughput: f64,
    /// Clients (connections, or the run's x when it had none).
    pub clients: f64,
    /// Mean response time, seconds.
    pub response_s: f64,
    /// The server's busy cores, when the run measured them.
    pub busy_cores: Option<f64>,
}

impl LawsFigures {
    /// Reads the run in `dir` (its `run.json`, and its lab's `lab.json` two levels up for
    /// the expectation it was judged by). Refuses an invalid run, whose laws would describe
    /// its errors, and one that completed no request.
    pub fn of_run(dir: &std::path::Path) -> anyhow::Result<LawsFigures> {
        use anyhow::Context;
        let record: crate::RunRecord =
            crate::read_json(&dir.join("run.json")).context("not a lab run directory")?;
        let load = &record.load;
        // Judged as the lab that made it judged it: goodput, and no laws on an invalid run.
        let judge = dir
            .parent()
            .and_then(std::path::Path::parent)
            .and_then(|lab| crate::read_json::<crate::LabRecord>(&lab.join("lab.json")).ok())
            .map(|lab| lab.judge)
            .unwrap_or_default();
        let health = judge.health(load)?;
        if let Some(why) = &health.invalid {
            anyhow::bail!(
                "the run is invalid ({why}); the laws would describe its errors, not the server"
            );
        }
        anyhow::ensure!(
            health.goodput_rps > 0.0,
            "the run completed no request, so there is nothing to apply the laws to"
        );
        Ok(LawsFigures {
            throughput: health.goodput_rps,
            clients: match load.connections {
                0 => record.x,
                n => n as f64,
            },
            response_s: load.total.latency_us.mean / 1e6,
            busy_cores: record.server.map(|s| s.busy_cores),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run directory `exp/run` under `root` whose run answered `statuses` in one second
    /// over 4 connections at a mean of 2 ms (no lab.json: the default judge).
    fn run_dir(root: &std::path::Path, statuses: &[(&str, u64)]) -> PathBuf {
        let dir = root.join("exp/run");
        std::fs::create_dir_all(&dir).unwrap();
        let requests: u64 = statuses.iter().map(|s| s.1).sum();
        let codes: serde_json::Map<String, serde_json::Value> = statuses
            .iter()
            .map(|(c, n)| (c.to_string(), (*n).into()))
            .collect();
        let run = serde_json::json!({
            "x": 4.0, "load_description": "", "server": null, "os": null,
            "load": {"connections": 4, "duration_s": 1.0, "requests": requests,
                     "status_codes": codes, "latency_us": {"mean": 2000.0}},
        });
        std::fs::write(dir.join("run.json"), run.to_string()).unwrap();
        dir
    }

    use std::path::PathBuf;

    #[test]
    fn a_runs_figures_are_its_goodput_and_an_invalid_run_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = run_dir(tmp.path(), &[("200", 100)]);
        let figures = LawsFigures::of_run(&dir).unwrap();
        assert_eq!(
            (figures.throughput, figures.clients, figures.response_s),
            (100.0, 4.0, 0.002)
        );
        assert_eq!(figures.busy_cores, None);
        // All 404: invalid by default, the laws refused.
        let dir = run_dir(tmp.path(), &[("404", 100)]);
        let err = format!("{:#}", LawsFigures::of_run(&dir).unwrap_err());
        assert!(err.starts_with("the run is invalid ("), "{err}");
        let nothing = tmp.path().join("nothing");
        let err = format!("{:#}", LawsFigures::of_run(&nothing).unwrap_err());
        assert!(err.starts_with("not a lab run directory"), "{err}");
    }
}
