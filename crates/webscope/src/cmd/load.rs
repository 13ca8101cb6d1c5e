//! `webscope load`: flags to a `webscope_load::Config`, a live line while it runs, the
//! summary at the end (also after Ctrl-C), and the JSON report.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use webscope_load::{Arrivals, Config, Mode, Pacing, Report, Target};

const EXAMPLES: &str = "\
EXAMPLES:
    webscope load http://127.0.0.1:8080/index.html -c 50 -d 10s -t 2
    webscope load http://127.0.0.1:8080/index.html -c 50 -d 10s --close        # a connection per request
    webscope load http://127.0.0.1:8080/ -c 20 -d 30s --rate 5000             # open loop, wrk2-style
    webscope load http://127.0.0.1:8080/ --rate 5000 --arrivals poisson --json run.json --hlog run.hlog
    webscope load --fileset /tmp/spec --base http://127.0.0.1:8080/ -c 60 -d 60s   # SPECweb96 mix
    webscope load --fileset /tmp/wsA --base http://127.0.0.1:8080/ -c 5 --think-time 100ms
    webscope load http://127.0.0.1:8080/ --group light=30:/svc/light --group heavy=20:/svc/heavy
    webscope load http://127.0.0.1:8080/x -c 20 --samples requests.csv      # one line per request
    webscope load http://127.0.0.1:8080/ -d 5m --live                       # watch at http://127.0.0.1:8089/

Ctrl-C ends the run early; what was measured is still printed and written.";

/// Drive an HTTP/1.1 server with load and measure it.
///
/// Closed loop (default): each connection sends its next request when the last response ends,
/// like WebStone's clients and wrk. Open loop (--rate): requests are sent on a clock whatever
/// the server does, and a request that had to wait for a free connection has its latency
/// counted from its intended send time (coordinated omission, as wrk2); both corrected and
/// uncorrected latencies are reported. Latencies are HdrHistograms per class and per interval.
#[derive(clap::Args, Debug)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    // Boxed: the flags are many, and the CLI's subcommand enum should stay small.
    #[command(flatten)]
    flags: Box<Flags>,
}

#[derive(clap::Args, Debug)]
struct Flags {
    /// The URL to request (http:// only); or use --fileset and --base. With --group, the
    /// server's URL that the groups' paths are on.
    #[arg(
        value_name = "URL",
        required_unless_present_any = ["fileset", "groups"],
        conflicts_with = "fileset"
    )]
    url: Option<String>,
    /// A closed-loop client group NAME=N:URL (repeatable): N connections requesting URL (a
    /// path on the server's URL, or a full URL on the same server), reported as class NAME.
    /// The run's connections are the groups' sum.
    #[arg(long = "group", value_name = "NAME=N:URL", conflicts_with_all = ["fileset", "rate", "connections"])]
    groups: Vec<webscope_load::Group>,
    /// A file set written by `webscope fileset`: requests follow its access probabilities and
    /// are reported per class.
    #[arg(long, value_name = "DIR", requires = "base")]
    fileset: Option<PathBuf>,
    /// The URL under which the file set is served (the server's root, usually).
    #[arg(long, value_name = "URL", requires = "fileset")]
    base: Option<String>,
    /// Connections at the start (spread over the threads) [default: 10].
    #[arg(short = 'c', long, value_name = "N")]
    connections: Option<usize>,
    /// How long to run.
    #[arg(short = 'd', long, value_name = "DURATION", default_value = "10s", value_parser = humantime::parse_duration)]
    duration: Duration,
    /// Worker threads, each with its own event loop [default: number of cores, at most -c].
    #[arg(short = 't', long, value_name = "N")]
    threads: Option<usize>,
    /// Open loop: send this many requests per second whatever the responses do.
    #[arg(long, value_name = "R")]
    rate: Option<f64>,
    /// Open loop: evenly spaced sends, or a Poisson process.
    #[arg(long, value_name = "KIND", default_value = "constant", value_parser = ["constant", "poisson"], requires = "rate")]
    arrivals: String,
    /// Open loop: connections may grow to this many when all are busy [default: max(1000, -c)].
    #[arg(long, value_name = "N", requires = "rate")]
    max_connections: Option<usize>,
    /// A new TCP connection per request (Connection: close), as WebStone's HTTP/1.0 clients.
    #[arg(long)]
    close: bool,
    /// Closed loop: pause between a response and the next request on a connection.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, conflicts_with = "rate")]
    think_time: Option<Duration>,
    /// Closed loop: after a 503, the connection waits this long before its next request, as
    /// a client honouring Retry-After would [default: 0, ask again at once, as wrk].
    #[arg(long = "backoff-503", value_name = "DURATION", value_parser = humantime::parse_duration, conflicts_with = "rate")]
    backoff_503: Option<Duration>,
    /// Longest a request may take (connect included) before it counts as a timeout.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = humantime::parse_duration)]
    timeout: Duration,
    /// Length of the reporting intervals (live line, --hlog, per-interval figures).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = humantime::parse_duration)]
    interval: Duration,
    /// Write the report as JSON to this file.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write an HdrHistogram interval log (latency in ns, a Tag per class) to this file.
    #[arg(long, value_name = "FILE")]
    hlog: Option<PathBuf>,
    /// Write one CSV line per completed request (end_us,latency_us,class: completion time
    /// since the start, latency, class index) to this file, for density maps; at most a
    /// million lines.
    #[arg(long, value_name = "FILE")]
    samples: Option<PathBuf>,
    /// Add a request header (repeatable), e.g. -H 'Accept-Encoding: gzip'.
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE")]
    headers: Vec<String>,
    /// Seed of the choice of files from a file set.
    #[arg(long, value_name = "N", default_value_t = 1)]
    seed: u64,
    /// Serve a live page on ADDR while the run goes (PORT or HOST:PORT; loopback when only a
    /// port is given): each interval's throughput, latency, errors, the machine's and the
    /// server's CPU, TCP states and the time left, then the final figures.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = crate::live::DEFAULT_ADDR)]
    live: Option<String>,
    /// How long the live page stays up after the run, so that open browsers get the final
    /// figures (Ctrl-C ends it sooner).
    #[arg(long, value_name = "DURATION", default_value = "3s", value_parser = humantime::parse_duration, requires = "live")]
    live_linger: Duration,
    /// No live line while running.
    #[arg(short = 'q', long)]
    quiet: bool,
}

/// What `run` needs besides the load's configuration.
struct Output {
    json: Option<PathBuf>,
    live_line: bool,
    live_page: Option<String>,
    linger: Duration,
}

impl Flags {
    fn config(self) -> anyhow::Result<(Config, Output)> {
        let target = match (&self.url, &self.fileset, &self.base) {
            (url, _, _) if !self.groups.is_empty() => Target::groups(url.as_deref(), &self.groups)?,
            (Some(url), _, _) => Target::url(url)?,
            (None, Some(dir), Some(base)) => Target::fileset(dir, base)?,
            _ => anyhow::bail!("give a URL, or --fileset DIR with --base URL"),
        };
        let connections = if target.groups.is_empty() {
            self.connections.unwrap_or(10)
        } else {
            target.groups.iter().sum()
        };
        let mut config = Config::new(target);
        config.connections = connections;
        config.threads = self.threads.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map_or(1, |n| n.get())
                .min(connections.max(1))
        });
        config.duration = self.duration;
        config.mode = if self.close {
            Mode::Close
        } else {
            Mode::KeepAlive
        };
        config.pacing = match self.rate {
            Some(rate) => Pacing::Open {
                rate,
                arrivals: if self.arrivals == "poisson" {
                    Arrivals::Poisson
                } else {
                    Arrivals::Constant
                },
                max_connections: self
                    .max_connections
                    .unwrap_or_else(|| connections.max(1000)),
            },
            None => Pacing::Closed {
                think: self.think_time.unwrap_or(Duration::ZERO),
            },
        };
        config.timeout = self.timeout;
        config.interval = self.interval;
        config.hlog = self.hlog;
        config.samples = self.samples;
        config.backoff_503 = self.backoff_503.unwrap_or(Duration::ZERO);
        config.headers = self.headers;
        config.seed = self.seed;
        config.check()?;
        let output = Output {
            json: self.json,
            live_line: !self.quiet,
            live_page: self.live,
            linger: self.live_linger,
        };
        Ok((config, output))
    }
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let (config, output) = args.flags.config()?;
    let interrupt = crate::signals::interrupt_flag()?;
    let live = output.live_line && std::io::stderr().is_terminal();
    let page = match &output.live_page {
        Some(addr) => Some(crate::live::LoadPage::start(addr, &config)?),
        None => None,
    };
    println!(
        "webscope load: {} for {} with {} connection{} on {} thread{}{}",
        config.target.description,
        humantime::format_duration(config.duration),
        config.connections,
        if config.connections == 1 { "" } else { "s" },
        config.threads,
        if config.threads == 1 { "" } else { "s" },
        if live { " (Ctrl-C stops early)" } else { "" }
    );
    let began = Instant::now();
    let mut on_interval = |interval: &webscope_load::IntervalReport| {
        if live {
            let elapsed = began.elapsed().as_secs_f64();
            eprint!("\r\x1b[K{}", Report::live_line(interval, elapsed));
        }
        if let Some(page) = &page {
            page.interval(interval);
        }
    };
    let report = webscope_load::run(&config, &interrupt, &mut on_interval)?;
    if live {
        eprint!("\r\x1b[K");
    }
    print!("{}", report.summary());
    std::io::stdout().flush()?;
    if let Some(path) = &output.json {
        report.write_json(path)?;
    }
    if let Some(page) = page {
        let written = output.json.as_ref().map(|p| p.display().to_string());
        let cost = page.finish(&report, written, output.linger, &interrupt);
        let total = cost.cpu_s + cost.monitor_cpu_s;
        println!(
            "Live page: {} requests answered; {:.1} ms of CPU (page {:.1} ms, its monitor {:.1} ms) = {:.2} % of the generator's {:.2} s",
            cost.polls,
            total * 1e3,
            cost.cpu_s * 1e3,
            cost.monitor_cpu_s * 1e3,
            100.0 * total / report.generator_cpu_s.max(1e-9),
            report.generator_cpu_s
        );
    }
    Ok(())
}
