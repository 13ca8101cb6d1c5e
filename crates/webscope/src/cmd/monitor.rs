//! `webscope monitor`: flags to a `webscope_monitor::Config`, a live line while it samples,
//! notes as they happen, the summary at the end (also after Ctrl-C), and the files.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::Context;
use webscope_monitor::{Config, Monitor, Sample};

const EXAMPLES: &str = "\
EXAMPLES:
    webscope monitor -d 10s                                   # the whole machine, every 100 ms
    webscope monitor --port 8080 --pid $(pgrep -n webscope) --out run/monitor
    webscope monitor --port 8080 --interval 1s -d 60s --profile --out run/monitor
    webscope monitor --port 80 --tcp-budget 100 -d 5s        # count TCP states at every sample
    webscope monitor --port 80 --pid $(cat /run/nginx.pid) --children   # nginx's master and workers
    webscope monitor --node-exporter http://10.0.0.5:9100/metrics --out run/server   # every 1s
    webscope monitor --port 8080 --pid $(pgrep -n webscope) --kernel -d 30s   # eBPF, as root

Files in --out: one CSV per group (cpu, system, memory, disk, net, tcp, sockets, ports,
listen, process, threads; with --kernel also kernel, kernel_states, runq; a header row, then time_s and unix_time, the key columns and the
values, units in the column names), monitor.json (means, minima, maxima and last values,
the profile, the kernel module's run figures, notes, the monitor's own cost), and with
--profile profile.csv and perf.data.
Ctrl-C stops sampling; what was sampled is kept and summarised.";

/// Sample the operating system while a server runs: CPU per core, memory and paging,
/// disks, network interfaces, TCP counters and socket totals, the TCP states and accept
/// queue of the server's port, and the server's processes and threads (CPU, memory,
/// descriptors, context switches, time running vs waiting for a CPU).
///
/// TCP states per port are counted with netlink sock_diag (as `ss` does); each count walks
/// the kernel's whole socket table, so counts are spaced out to stay within --tcp-budget of
/// one core, while host totals and the accept queue are read every interval. --profile
/// records all CPUs with `perf` and splits the time into low- and high-level networking and
/// file system, timers, scheduler, other kernel, user time and idle.
#[derive(clap::Args, Debug)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// A process to watch, with each of its threads (repeatable).
    #[arg(long = "pid", value_name = "PID")]
    pids: Vec<u32>,
    /// Sample another host through its Prometheus node_exporter (e.g.
    /// http://10.0.0.5:9100/metrics) instead of this machine: the same groups and columns, a
    /// scrape per interval (every 1s unless --interval says otherwise, 500ms at least), empty
    /// cells where the exporter has no figure.
    #[arg(long, value_name = "URL", conflicts_with_all = ["pids", "ports", "profile"])]
    node_exporter: Option<String>,
    /// Watch each --pid's descendants too, as they come and go (nginx's workers, Apache's
    /// children); the process group gets an all/all row with the whole set's figures.
    #[arg(long, requires = "pids")]
    children: bool,
    /// A port whose TCP states and accept queue to count, both ends of its connections
    /// (repeatable).
    #[arg(long = "port", value_name = "PORT")]
    ports: Vec<u16>,
    /// Time between samples [default: 100ms; 1s with --node-exporter, where a scrape costs
    /// the exporter tens of milliseconds of CPU].
    #[arg(long, value_name = "DURATION", value_parser = super::positive_duration, allow_hyphen_values = true)]
    interval: Option<Duration>,
    /// Stop after this long [default: run until Ctrl-C].
    #[arg(short = 'd', long, value_name = "DURATION", value_parser = super::positive_duration, allow_hyphen_values = true)]
    duration: Option<Duration>,
    /// Write the CSV files and monitor.json into this directory (created if need be).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Record a kernel profile with perf on all CPUs and break kernel time down by category.
    #[arg(long)]
    profile: bool,
    /// perf samples per second per CPU.
    #[arg(long, value_name = "HZ", default_value_t = 499, requires = "profile")]
    profile_hz: u32,
    /// The perf program to run.
    #[arg(
        long,
        value_name = "PATH",
        default_value = "perf",
        requires = "profile"
    )]
    perf: PathBuf,
    /// Follow each connection of the --port(s) in the kernel with eBPF (needs root and a
    /// kernel with BTF): how long connections wait in the accept queue, listen drops,
    /// lifetimes, TIME_WAIT entries, state changes and retransmits, and how long the --pid's
    /// threads wait for a CPU (without --pid: the processes holding the port's listener).
    /// Where it cannot load, one line says why and the rest runs as before. Built only
    /// with `--features kernel` (clang, libelf-dev, zlib1g-dev, pkg-config): without it,
    /// --kernel is refused.
    #[arg(long, conflicts_with = "node_exporter")]
    kernel: bool,
    /// Percent of one core the per-port TCP state counts may use; 100 or more: count at
    /// every sample whatever it costs.
    #[arg(long, value_name = "PCT", default_value_t = 0.3)]
    tcp_budget: f64,
    /// No live line while sampling.
    #[arg(short = 'q', long)]
    quiet: bool,
}

impl Args {
    fn config(self) -> (Config, bool) {
        let config = Config {
            interval: self.interval.unwrap_or(match self.node_exporter {
                Some(_) => webscope_monitor::NODE_EXPORTER_INTERVAL,
                None => webscope_monitor::INTERVAL,
            }),
            duration: self.duration,
            pids: self.pids,
            ports: self.ports,
            out: self.out,
            profile: self.profile,
            profile_hz: self.profile_hz,
            perf: self.perf,
            tcp_budget: self.tcp_budget / 100.0,
            children: self.children,
            node_exporter: self.node_exporter,
            kernel: self.kernel,
        };
        (config, !self.quiet)
    }
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let (config, live) = args.config();
    let interrupt = crate::signals::interrupt_flag()?;
    let live = live && std::io::stderr().is_terminal();
    let mut what = vec![format!(
        "every {}",
        humantime::format_duration(config.interval)
    )];
    match config.duration {
        Some(d) => what.push(format!("for {}", humantime::format_duration(d))),
        None => what.push("until Ctrl-C".into()),
    }
    if !config.ports.is_empty() {
        let ports: Vec<String> = config.ports.iter().map(|p| p.to_string()).collect();
        what.push(format!("port {}", ports.join(",")));
    }
    if !config.pids.is_empty() {
        let pids: Vec<String> = config.pids.iter().map(|p| p.to_string()).collect();
        what.push(format!("pid {}", pids.join(",")));
    }
    if let Some(dir) = &config.out {
        what.push(format!("into {}", dir.display()));
    }
    let mut monitor = Monitor::start(config)?;
    println!("webscope monitor: {}", what.join(", "));
    std::io::stdout().flush()?;
    if let Some(why) = monitor.profile_error() {
        eprintln!("webscope monitor: {why}");
    }
    if let Some(why) = monitor.kernel_error() {
        eprintln!("webscope monitor: {why}");
    }
    let mut on_sample = |monitor: &mut Monitor, _sample: &Sample| {
        let notes = monitor.take_new_notes();
        if live && !notes.is_empty() {
            eprint!("\r\x1b[K");
        }
        for note in notes {
            eprintln!("webscope monitor: note ({}): {}", note.source, note.message);
        }
        if live {
            eprint!("\r\x1b[K{}", monitor.live_line());
        }
    };
    let results = webscope_monitor::drive(&mut monitor, &interrupt, &mut on_sample)
        .and_then(|()| {
            if live {
                eprint!("\r\x1b[K");
            }
            if monitor.config().profile && monitor.profile_error().is_none() {
                eprintln!("webscope monitor: classifying the perf samples...");
            }
            monitor.stop()
        })
        .context("monitoring failed")?;
    print!("{}", results.summary.text());
    if !results.files.is_empty() {
        println!(
            "  files    {}",
            results
                .files
                .iter()
                .map(|f| f.display().to_string())
                .collect::<Vec<_>>()
                .join(" ")
        );
    }
    std::io::stdout().flush()?;
    let _ = interrupt.load(Ordering::Relaxed);
    Ok(())
}
