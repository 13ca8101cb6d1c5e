//! `webscope load`'s verdict after the report: no success at all is an error, then the
//! `--threshold` conditions with their exit codes; a run stopped by Ctrl-C exits 130 after
//! all of it, as the lab does.

use webscope_load::slo::{Measured, Slo, Verdict};
use webscope_load::Report;

use crate::cmd::{Exit, EXIT_INTERRUPTED, EXIT_THRESHOLD_CROSSED, EXIT_UNDECIDED};

/// After the report: no success at all is an error (exit 1, as the lab's), then the
/// thresholds (exit 99 when one is crossed, 3 when one cannot be decided). A status outside
/// the run's expectation (`--expect-status`, kept in its report) is an error, one the log had
/// in a replay is not.
/// A run stopped by Ctrl-C exits 130 (128 + SIGINT, as shells report it, issue 52) whatever
/// its thresholds say: they were judged on part of a run, and are printed for what they are.
pub(super) fn judge(report: &Report, threshold: Option<&Slo>) -> anyhow::Result<()> {
    let verdict = judge_run(report, threshold);
    if report.interrupted {
        return Err(Exit {
            code: EXIT_INTERRUPTED,
            message: "interrupted: what was measured is above".to_string(),
        }
        .into());
    }
    verdict
}

fn judge_run(report: &Report, threshold: Option<&Slo>) -> anyhow::Result<()> {
    let expect = &report.expect;
    let outcomes = report.outcomes();
    if outcomes.good(expect) == 0 && !report.interrupted {
        let responses = match outcomes.responses() {
            0 => "no response".to_string(),
            n => format!("{n} responses, none of them expected ({expect})"),
        };
        anyhow::bail!(
            "no request succeeded ({responses}; {} failed without a response; {} unfinished at the end): see the summary above",
            outcomes.no_response(),
            outcomes.unfinished
        );
    }
    let Some(slo) = threshold else {
        return Ok(());
    };
    let checks = slo.judge(&Measured::of_run(report, slo, expect));
    println!("Thresholds:");
    for check in &checks {
        println!("  {}", check.line());
    }
    let named = |verdict: Verdict| {
        checks
            .iter()
            .filter(|c| c.verdict == verdict)
            .map(|c| c.condition.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match Slo::verdict(&checks) {
        Verdict::Pass => Ok(()),
        Verdict::Fail => Err(Exit {
            code: EXIT_THRESHOLD_CROSSED,
            message: format!("threshold crossed: {}", named(Verdict::Fail)),
        }
        .into()),
        Verdict::Undecided => Err(Exit {
            code: EXIT_UNDECIDED,
            message: format!(
                "threshold cannot be decided: {} (not measured in this run)",
                named(Verdict::Undecided)
            ),
        }
        .into()),
    }
}
