//! `webscope characterize`: read access logs and describe the traffic in them — rate,
//! mix, popularity, sizes, burstiness, clients — with the fits a workload is built from and
//! the published invariants of Web-server workloads beside them. A page, a JSON file and a
//! short summary on the terminal.

use webscope_pages::characterize::{page, summary};

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use webscope_accesslog::characterize::{Characterization, Characterizer, Options};
use webscope_accesslog::{stream_logs_until, Format, ReadOptions};

use super::reading::Reading;

const EXAMPLES: &str = "\
EXAMPLES:
    webscope characterize /var/log/nginx/access.log                 # the summary on the terminal
    webscope characterize access.log access.log.1 access.log.*.gz --out site/   # + site/index.html, site/report.json
    webscope characterize --format nginx-timed access.log           # combined + $request_time
    webscope characterize --format apache-timed access_log          # combined + %D (microseconds)
    webscope characterize --fold-query access.log                   # /a?x=1 and /a?x=2 count as /a

Lines that do not parse are counted and the first few shown; the files may be given in any
order (they are merged by time; an entry more than a minute out of order is counted and said).
The logs are read once, in memory that follows the distinct URLs and clients, not the lines.
Client addresses are used only for counting and are written nowhere. An input with no line
end in 16 MiB is not a log: it is refused. Ctrl-C (or SIGTERM) stops the reading: what was read
is summarised, --out is not written, and the exit code is 130.";

/// Characterize access logs (Common or Combined Log Format, plain or gzip): requests, rate
/// over time, methods and statuses, popularity with a Zipf exponent fitted by maximum
/// likelihood, transfer sizes with a lognormal body and a Pareto tail (Hill estimator), the
/// burstiness of arrivals (index of dispersion, Hurst parameter), clients, and Arlitt &
/// Williamson's invariants of Web-server workloads beside this log's figures.
#[derive(clap::Args, Debug)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// Access logs, plain or gzip (told by content), in any order.
    #[arg(value_name = "LOG", required = true)]
    logs: Vec<PathBuf>,
    /// Write index.html (charts) and report.json here.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// The log format: auto (common or combined, per line), common, combined, nginx-timed
    /// (combined + $request_time in seconds), apache-timed (combined + %D in microseconds).
    #[arg(long, value_name = "F", default_value = "auto", value_parser = parse_format)]
    format: FormatArg,
    /// Count a URL by its path alone: query strings are folded into it (by default
    /// `/?flav=rss20` is a resource of its own).
    #[arg(long)]
    fold_query: bool,
    /// A session (one client address with one user agent) ends after this long without a
    /// request.
    #[arg(long, value_name = "DURATION", default_value = "30m", value_parser = super::positive_duration)]
    session_gap: std::time::Duration,
    /// No progress line while reading (there is none either when stderr is not a terminal).
    #[arg(short = 'q', long)]
    quiet: bool,
}

/// `--format`: `None` auto-detects.
#[derive(Debug, Clone, Copy)]
struct FormatArg(Option<Format>);

fn parse_format(text: &str) -> Result<FormatArg, String> {
    if text.eq_ignore_ascii_case("auto") {
        return Ok(FormatArg(None));
    }
    text.parse().map(|f| FormatArg(Some(f)))
}

/// What report.json holds: the logs read and how, then the figures.
#[derive(serde::Serialize)]
struct ReportFile<'a> {
    logs: Vec<String>,
    format: String,
    #[serde(flatten)]
    figures: &'a Characterization,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    // Before the logs are read, which may take minutes: an --out that cannot be written is
    // said at once.
    let made_out = match &args.out {
        Some(dir) => {
            let existed = dir.exists();
            std::fs::create_dir_all(dir).with_context(|| {
                format!("cannot create {} (choose a writable --out)", dir.display())
            })?;
            !existed
        }
        None => false,
    };
    let progress = progress_bar(args.quiet);
    let mut characterizer = Characterizer::new(Options {
        fold_query: args.fold_query,
        session_gap_s: i64::try_from(args.session_gap.as_secs().max(1)).unwrap_or(i64::MAX),
        ..Options::default()
    });
    let reading = Reading::start("characterize")?;
    let read = stream_logs_until(
        &args.logs,
        &ReadOptions::format(args.format.0),
        &reading.stop,
        &mut |entry| characterizer.add(&entry),
        &mut |lines| {
            reading.progress(lines);
            progress.set_message(format!("{lines} lines read"));
        },
    );
    let interrupted = reading.finished();
    progress.finish_and_clear();
    let read = read?;
    // A gzip file cut short or damaged is read up to the damage, as zcat reads it: said.
    if let Some(note) = read.cut_note(&args.logs) {
        eprintln!("warning: {note}");
    }
    let unwritten = || {
        // An --out made for this run and left empty goes too: nothing of it was written.
        if let Some(dir) = args.out.as_ref().filter(|_| made_out) {
            let _ = std::fs::remove_dir(dir);
        }
    };
    if interrupted && read.entries == 0 {
        unwritten();
        return Err(Reading::interrupted(format!(
            "characterize interrupted after {}, before any entry: nothing to summarise, nothing written",
            webscope_report::human::plural(read.lines, "line")
        )));
    }
    let figures = characterizer.finish(&read);
    let names: Vec<String> = args.logs.iter().map(|p| p.display().to_string()).collect();
    let mut out = std::io::stdout().lock();
    if interrupted {
        writeln!(
            out,
            "Interrupted after {}: the figures below are those of the logs up to there.",
            webscope_report::human::plural(read.lines, "line")
        )?;
    }
    out.write_all(summary::text(&figures, &names).as_bytes())?;
    out.flush()?;
    // A signal while the figures were drawn stops the run here too, before anything is written.
    if interrupted || reading.stop.load(std::sync::atomic::Ordering::Relaxed) {
        unwritten();
        let not_written = match &args.out {
            Some(dir) => format!("; {} not written", dir.display()),
            None => String::new(),
        };
        return Err(Reading::interrupted(format!(
            "characterize interrupted after {}: the summary above is of those{not_written}",
            webscope_report::human::plural(read.lines, "line")
        )));
    }
    if let Some(dir) = &args.out {
        let report = ReportFile {
            logs: names.clone(),
            format: webscope_accesslog::Format::describe(args.format.0),
            figures: &figures,
        };
        let json = dir.join("report.json");
        webscope_sys::write_file(&json, &serde_json::to_vec_pretty(&report)?)
            .with_context(|| format!("cannot write {}", json.display()))?;
        let html = dir.join("index.html");
        webscope_sys::write_file(&html, page::page(&figures, &names).to_html().as_bytes())
            .with_context(|| format!("cannot write {}", html.display()))?;
        writeln!(out, "Wrote {} and {}", html.display(), json.display())?;
    }
    out.flush()?;
    Ok(())
}

/// A spinner with the lines read, on a terminal only.
fn progress_bar(quiet: bool) -> ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template("{spinner} reading logs: {msg} ({elapsed})")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    bar
}
