//! `webscope`: the command-line front end of the web-server performance laboratory.
//!
//! This binary is thin on purpose (as ripgrep's is): it parses flags with `clap`, turns them
//! into each library crate's configuration type, calls it, and turns errors into one line on
//! stderr and a non-zero exit code. Everything that measures, serves or models lives in the
//! `webscope-*` crates so that it can be tested and reused without the CLI.

mod cmd;
mod signals;

use clap::{Parser, Subcommand};

/// A web-server performance laboratory: a fast HTTP/1.1 server, the papers' workloads, a load
/// generator, an OS monitor, queueing models and reports.
#[derive(Parser)]
#[command(name = "webscope", version, about, long_about = None, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve static files over HTTP/1.1, HTTPS and HTTP/2 (the server the lab measures by default).
    Serve(Box<cmd::serve::Args>),
    /// Generate a file set (SPECweb96, WebStone, heavy-tail, single) with its manifest.
    Fileset(cmd::fileset::Args),
    /// Drive a server with load over HTTP/1.1, HTTPS or HTTP/2: closed or open loop, keep-alive or close.
    Load(cmd::load::Args),
    /// Sample the operating system: CPU, memory, disks, network, TCP states, threads, profile.
    Monitor(cmd::monitor::Args),
    /// Queueing models: operational laws, MVA, the Universal Scalability Law.
    Model(cmd::model::Args),
    /// Run the experiments on a server and write a report (the whole lab in one command).
    Lab(Box<cmd::lab::Args>),
    /// Re-render a lab report from its directory.
    Report(cmd::report::Args),
    /// Run a load test from N Kubernetes pods: an Indexed Job of load segments.
    Distribute(cmd::distribute::Args),
    /// Merge the segments of one run (load --segment I/N on several hosts), exactly.
    Merge(cmd::merge::Args),
    /// Compare a baseline with a candidate: the change of each figure and its significance.
    Compare(cmd::compare::Args),
    /// Characterize access logs: rate, mix, popularity (Zipf), sizes (Pareto tail), burstiness, invariants.
    Characterize(cmd::characterize::Args),
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(args) => cmd::serve::run(*args),
        Command::Fileset(args) => cmd::fileset::run(args),
        Command::Load(args) => cmd::load::run(args),
        Command::Monitor(args) => cmd::monitor::run(args),
        Command::Model(args) => cmd::model::run(args),
        Command::Lab(args) => cmd::lab::run(*args),
        Command::Report(args) => cmd::report::run(args),
        Command::Compare(args) => cmd::compare::run(args),
        Command::Merge(args) => cmd::merge::run(args),
        Command::Distribute(args) => cmd::distribute::run(args),
        Command::Characterize(args) => cmd::characterize::run(args),
    };
    if let Err(err) = result {
        if let Some(exit) = err.downcast_ref::<cmd::Exit>() {
            eprintln!("webscope: {}", exit.message);
            std::process::exit(exit.code);
        }
        // A closed pipe (`webscope ... | head`) is not an error worth reporting.
        if is_broken_pipe(&err) {
            std::process::exit(0);
        }
        eprintln!("webscope: error: {}", one_line(&err));
        std::process::exit(1);
    }
}

/// Joins an error and its causes into one line, the way operators read errors in logs.
fn one_line(err: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
    }
    parts.join(": ")
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
