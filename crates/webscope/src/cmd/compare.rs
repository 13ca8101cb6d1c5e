//! `webscope compare`: a baseline against a candidate, per metric, each change with its
//! interval, and thresholds that fail the command (for CI).

use std::path::PathBuf;

use anyhow::{bail, Context};
use webscope_compare::{self as compare, input, Comparison, Threshold};
use webscope_lab::capacity::compare as capacity;
use webscope_lab::results::{Search, Searches};
use webscope_pages::compare::table::{table, Layout};
use webscope_report::human::plural;

use super::{Exit, EXIT_UNDECIDED};

const EXAMPLES: &str = "\
EXAMPLES:
    webscope compare before/ after/                       # two lab reports, point by point
    webscope compare before/ after/ --threshold 'p99<+5%,goodput>-3%'   # exit 1 when crossed
    webscope compare base/clients/clients-010 new/clients/clients-010 --json diff.json
    webscope compare base/ new/                           # directories of webscope load --json results (+ .hlog)
    webscope compare before/ after/ --html diff.html      # the distributions overlaid, and their difference
    webscope compare before/ after/ --threshold 'capacity>-5%'   # two capacity searches, by their brackets
    webscope compare before/ after/ --threshold 'users>-5%'      # two users searches (lab --experiment users)

Metrics: goodput, rps, error_pct, p50, p90, p99, p999, cpu_us (server CPU per request), and
capacity (two labs' capacity searches, by their brackets [lo, hi]: the highest rate that
passed and the lowest that failed; [R, inf) for a search the generator ended, [0, R] for one
that failed at its lowest rate). The candidate's change may be anything from its lo over the
baseline's hi to its hi over the baseline's lo. capacity>-5% is CROSSED when even the most
favourable of these is -5 % or lower; within when even the least favourable is above -5 %;
it CANNOT BE DECIDED otherwise.
Each search records the machine's speed (the mean of a reference loop timed on the server's
CPU before every probe) and its standard error: when the two means differ by more than 5 %, or
by more than 1.645 standard errors of their difference, and the slower machine could explain a
CROSSED (or the faster one a pass), it CANNOT BE DECIDED either (near the knee a machine a few
per cent slower can take far more off the capacity).
users>-5% judges two users searches (their capacities in users) by the same rule.
A side is a lab report, a lab run directory, a load --json file, or a directory of load --json
files (the repeated runs of one configuration).
The verdict on a run metric rests on the change's 95 % interval over the repeated runs (a t
interval on the runs' logarithms; pair by pair when the runs were taken interleaved, A B A B,
by their start times): p99<+5% is within when the whole interval lies below +5 %, CROSSED when
it lies wholly above, and CANNOT BE DECIDED otherwise, with the runs that would likely decide
it. An interval needs 2 or more runs a side (4 or more to be narrow: lab --repeat 4, or a
directory of load results); one run a side decides nothing (runs of one server differ by more
than one run's intervals do), nor does a percentile on runs with fewer than 10 requests
beyond it (p99.9: 10 000 requests a run).
Exit codes: 0 every threshold held; 1 the whole interval of a change crossed one (or an
error); 3 a threshold cannot be decided (never a pass).";

/// Compare a baseline with a candidate: throughput, goodput, errors, latency percentiles and
/// server CPU per request, each with its change and its 95 % interval, and the latency
/// distributions as wholes (Kolmogorov-Smirnov).
#[derive(clap::Args, Debug)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// The baseline: a lab report, a lab run directory, or a load --json file.
    #[arg(value_name = "BASELINE")]
    baseline: PathBuf,
    /// The candidate, of the same kind.
    #[arg(value_name = "CANDIDATE")]
    candidate: PathBuf,
    /// Limits on the change in per cent (the % is required), e.g. 'p99<+5%,goodput>-3%': exit 1
    /// when the change's whole interval crosses one, 3 when one cannot be decided.
    #[arg(long, value_name = "LIST")]
    threshold: Option<String>,
    /// Write the comparison as JSON to this file.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write a page with the tables, the latency distributions overlaid and their difference.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    // `capacity>-5%` and `users>-5%` are judged on the searches' brackets; the rest on the
    // runs.
    let (capacity_limits, others): (Vec<&str>, Vec<&str>) = args
        .threshold
        .as_deref()
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .partition(|t| t.starts_with("capacity") || t.starts_with("users"));
    let thresholds = Threshold::parse_list(&others.join(",")).map_err(anyhow::Error::msg)?;
    let capacity_limits = capacity_limits
        .iter()
        .map(|t| capacity::parse_any(t).map(|(what, least)| (t.to_string(), what, least)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| anyhow::anyhow!("--threshold {e}"))?;
    let (mut crossed, mut undecided) = (Vec::new(), Vec::new());
    let mut both_capacities = false;
    let searches = (
        Searches::of_lab(&args.baseline)?,
        Searches::of_lab(&args.candidate)?,
    );
    for what in capacity::Searched::ALL {
        let limits: Vec<_> = capacity_limits.iter().filter(|l| l.1 == what).collect();
        let pair = (searches.0.get(what), searches.1.get(what));
        // Two labs that each ran the search, found or not: their brackets say what there is.
        both_capacities |= pair.0 != Search::None && pair.1 != Search::None;
        judge_searches(pair, what, &limits, (&mut crossed, &mut undecided));
    }
    let sides =
        input::side(&args.baseline).and_then(|base| Ok((base, input::side(&args.candidate)?)));
    let (base, cand) = match sides {
        Ok(sides) => sides,
        // Two capacity searches and nothing else to set side by side: the brackets said it.
        Err(_) if both_capacities => return verdict(&crossed, &undecided),
        Err(e) => return Err(e),
    };
    let mut comparisons = Vec::new();
    let mut pairs = Vec::new();
    for (scope, runs) in &base {
        let Some((_, other)) = cand.iter().find(|(s, _)| s == scope) else {
            continue;
        };
        comparisons.push(compare::compare(scope, runs, other));
        pairs.push((runs.as_slice(), other.as_slice()));
    }
    if comparisons.is_empty() && both_capacities {
        return verdict(&crossed, &undecided);
    }
    if comparisons.is_empty() {
        bail!(
            "nothing to compare: {} and {} share no point (compare a lab report with a lab report, a run with a run)",
            args.baseline.display(),
            args.candidate.display()
        );
    }
    for c in &comparisons {
        println!(
            "{} ({}, {})",
            c.scope,
            plural(c.runs.0 as u64, "baseline run"),
            plural(c.runs.1 as u64, "candidate run")
        );
        for t in &thresholds {
            let row = c.rows.iter().find(|r| r.metric == t.metric);
            let verdict = t.verdict(row);
            println!("  {verdict}");
            if row.is_some_and(|r| t.crossed(r)) {
                crossed.push(format!("{}: {verdict}", c.scope));
            } else if t.undecided(row) {
                undecided.push(format!("{}: {verdict}", c.scope));
            }
        }
        print!("{}", table([c], &Layout::ONE_POINT).to_text());
        if c.runs.0 < 2 || c.runs.1 < 2 {
            println!("  {}", compare::ONE_RUN_WHY);
        }
        if let Some(d) = &c.distributions {
            println!(
                "  latency distributions: Kolmogorov-Smirnov D = {:.4}, p = {:.3}",
                d.ks_d, d.ks_p
            );
        }
    }
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&comparisons)? + "\n";
        webscope_sys::write_file(path, text.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(path) = &args.html {
        let with_runs: Vec<(Comparison, &[input::Run], &[input::Run])> = comparisons
            .iter()
            .cloned()
            .zip(pairs.iter().copied())
            .map(|(c, (a, b))| (c, a, b))
            .collect();
        let title = format!(
            "{} against {}",
            args.candidate.display(),
            args.baseline.display()
        );
        webscope_sys::write_file(
            path,
            webscope_pages::compare::page(&title, &with_runs).as_bytes(),
        )
        .with_context(|| format!("cannot write {}", path.display()))?;
    }
    verdict(&crossed, &undecided)
}

/// Two searches of `what` side by side, and their thresholds judged: a crossed one or one
/// that cannot be decided is added to its list.
fn judge_searches(
    (base, cand): (Search, Search),
    what: capacity::Searched,
    limits: &[&(String, capacity::Searched, f64)],
    (crossed, undecided): (&mut Vec<String>, &mut Vec<String>),
) {
    let (base, cand) = match (base, cand) {
        (Search::Bracket(b), Search::Bracket(c)) => (b, c),
        (base, cand) => {
            // Name the side that has no bracket, and how its search ended.
            let why = [("the baseline", base), ("the candidate", cand)]
                .into_iter()
                .filter_map(|(side, s)| match s {
                    Search::Bracket(_) => None,
                    Search::Ended(how) => Some(format!("{side} found no {} ({how})", what.name)),
                    Search::None => Some(format!(
                        "{side} has no {} search (lab --experiment {})",
                        what.name, what.name
                    )),
                })
                .collect::<Vec<_>>()
                .join("; ");
            if limits.is_empty() && !why.is_empty() {
                println!("{}: nothing to compare ({why})", what.name);
            }
            for (text, _, _) in limits {
                let said = format!("{text}: CANNOT BE DECIDED ({why})");
                println!("  {said}");
                undecided.push(said);
            }
            return;
        }
    };
    println!("{}", capacity::sentence_of(&base, &cand, what));
    for (text, _, least) in limits {
        let decided = capacity::decide(&base, &cand, *least);
        let said = decided.decision.said();
        let said = format!("{text}: {said} ({})", decided.why);
        println!("  {said}");
        match decided.decision {
            capacity::Decision::Pass => {}
            capacity::Decision::Fail => crossed.push(said),
            capacity::Decision::CannotDecide => undecided.push(said),
        }
    }
}

/// The exit: a crossed threshold is a definite failure (1); one that cannot be decided is
/// never a pass (3).
fn verdict(crossed: &[String], undecided: &[String]) -> anyhow::Result<()> {
    if let Some(first) = crossed.first() {
        bail!(
            "{} crossed: {first}",
            plural(crossed.len() as u64, "threshold")
        );
    }
    if let Some(first) = undecided.first() {
        return Err(Exit {
            code: EXIT_UNDECIDED,
            message: format!(
                "{} cannot be decided (exit {EXIT_UNDECIDED}, never a pass): {first}",
                plural(undecided.len() as u64, "threshold")
            ),
        }
        .into());
    }
    Ok(())
}
