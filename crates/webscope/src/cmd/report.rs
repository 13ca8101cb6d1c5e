//! `webscope report`: re-render a lab report from its directory.

use std::path::PathBuf;

/// Re-render index.html, report.json and the CSV tables of a lab directory from the data it
/// holds (the same bytes as the lab wrote, on any machine).
#[derive(clap::Args, Debug)]
#[command(after_help = "EXAMPLES:\n    webscope report ./webscope-report")]
pub struct Args {
    /// A directory written by webscope lab.
    #[arg(value_name = "DIR")]
    dir: PathBuf,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let outcome = webscope_pages::report::render(&args.dir)?;
    print!("{}", outcome.summary);
    println!("report: {}", outcome.index.display());
    Ok(())
}
