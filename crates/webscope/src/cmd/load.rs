//! `webscope load`: flags to a `webscope_load::Config`, a live line while it runs, the
//! summary at the end (also after Ctrl-C), and the JSON report.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use webscope_load::slo::Slo;
use webscope_load::{Arrivals, Config, Mode, Pacing, Report, Target};
use webscope_report::human::plural;
use webscope_sys::cpus::{self, CpuList};

use judge::judge;
use own::{Output, Own};
use parse::{parse_io, parse_segment, parse_start_at, parse_threshold};

mod judge;
mod own;
mod parse;
mod users;
mod whole;
pub use whole::check_for_pods;

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
    webscope load https://127.0.0.1:8443/ --cacert ca.pem -c 50 --close     # handshakes: full and resumed
    webscope load https://127.0.0.1:8443/ --http3 -M 16 -c 4 --cacert ca.pem   # HTTP/3 over QUIC (UDP 8443)
    webscope load https://127.0.0.1:8443/ --http3 --close --0rtt -k          # 0-RTT resumption, counted
    webscope load http://127.0.0.1:8080/api -m POST --body @order.json -H 'Content-Type: application/json'
    webscope load --requests targets.txt -c 20                              # vegeta's format, a class each
    webscope load --replay access.log --base http://127.0.0.1:8080/ --speed 4  # the log's own timing, 4x
    webscope load --replay access.log.gz http://127.0.0.1:8080/ --loop -d 10m  # repeated for 10 minutes
    webscope load --users 200 --fileset /tmp/spec --base http://127.0.0.1:8080/ -d 2m  # SURGE's users
    webscope load --users 50 --sessions access.log --base http://127.0.0.1:8080/ -d 5m  # the log's own sessions
    webscope load http://10.0.0.5/ -c 300 --segment 1/3 --start-at 2026-11-24T20:00:00Z --json s1.json --hlog s1.hlog
    webscope merge merged/ s0.json s1.json s2.json                          # three hosts' segments, added exactly

Ctrl-C ends the run early; what was measured is still printed and written.";

/// Drive a server with load and measure it: HTTP/1.1 over plain TCP or TLS (https URLs), or
/// HTTP/2 (--http2 over TLS, --h2c with prior knowledge), or HTTP/3 over QUIC (--http3).
///
/// Closed loop (default): each connection sends its next request when the last response ends,
/// like WebStone's clients and wrk. Open loop (--rate): requests are sent on a clock whatever
/// the server does, and a request that had to wait for a free connection has its latency
/// counted from its intended send time (coordinated omission, as wrk2); both corrected and
/// uncorrected latencies are reported. Replay (--replay LOG): open loop on an access log's
/// own timing, each logged request at its logged instant. Latencies are HdrHistograms per
/// class and per interval.
#[derive(clap::Args, Debug)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    // Boxed: the flags are many, and the CLI's subcommand enum should stay small.
    #[command(flatten)]
    flags: Box<Flags>,
}

/// `webscope load`'s flags as a command of their own, for parsing them outside the CLI.
#[derive(clap::Parser)]
#[command(name = "webscope load")]
struct Cli {
    #[command(flatten)]
    args: Args,
}

#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("multiplexed").args(["http2", "http3"])))]
struct Flags {
    /// The URL to request (http:// or https://); or use --fileset and --base. With --group, the
    /// server's URL that the groups' paths are on.
    #[arg(
        value_name = "URL",
        required_unless_present_any = ["fileset", "groups", "requests", "replay", "config", "sessions"],
        conflicts_with_all = ["fileset", "requests"]
    )]
    url: Option<String>,
    /// A request list in vegeta's target format: per request `METHOD URL`, header lines,
    /// an optional `@file` body, then a blank line (`# weight N` before one draws it N times as
    /// often). Each request is a class of the report. All on one server.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["fileset", "groups", "replay"])]
    requests: Option<PathBuf>,
    /// Replay an access log (Common or Combined, plain or gzip; repeat for more files): each
    /// logged request is sent at its logged time relative to the first, divided by --speed,
    /// open loop (latency from the intended send, as --rate); a logged second's requests are
    /// spread evenly within it. To the server of the URL (or --base). Only GET and HEAD
    /// are sent (a log keeps no body, and a replay changes nothing on its target: no DELETE,
    /// no POST); a logged 206 asks a Range of its logged length.
    #[arg(long, value_name = "LOG", conflicts_with_all = ["fileset", "groups", "rate", "think_time", "backoff_503", "body", "method", "http2"])]
    replay: Vec<PathBuf>,
    /// Replay: the speed-up (4: the log's hour in 15 minutes).
    #[arg(long, value_name = "K", default_value_t = 1.0, requires = "replay")]
    speed: f64,
    /// Replay: repeat the log until -d/--duration ends.
    #[arg(long = "loop", requires_all = ["replay", "duration"])]
    looped: bool,
    /// Replay: the log's format (common, combined, nginx-timed, apache-timed) [default:
    /// common or combined, auto-detected].
    #[arg(long, value_name = "FORMAT", requires = "replay")]
    log_format: Option<webscope_accesslog::Format>,
    /// The requests' method (a request list gives its own).
    #[arg(
        short = 'm',
        long,
        value_name = "METHOD",
        default_value = "GET",
        conflicts_with = "requests"
    )]
    method: String,
    /// The requests' body: the text itself, or @FILE for a file's bytes (sent with a
    /// Content-Length; a request list gives its own).
    #[arg(long, value_name = "STRING|@FILE", conflicts_with = "requests")]
    body: Option<String>,
    /// A closed-loop client group NAME=N:URL (repeatable): N connections requesting URL (a
    /// path on the server's URL, or a full URL on the same server), reported as class NAME.
    /// The run's connections are the groups' sum.
    #[arg(long = "group", value_name = "NAME=N:URL", conflicts_with_all = ["fileset", "rate", "connections"])]
    groups: Vec<webscope_load::Group>,
    /// A file set written by `webscope fileset`: requests follow its access probabilities and
    /// are reported per class.
    #[arg(long, value_name = "DIR", requires = "base")]
    fileset: Option<PathBuf>,
    /// The URL under which the file set is served (the server's root, usually), or the
    /// server a --replay goes to.
    #[arg(long, value_name = "URL")]
    base: Option<String>,
    /// Pin the generator to these CPUs, as `taskset -c` does: `1`, `2,3`, `0-3`. With a
    /// server on this machine, the summary says whether it may run on them too.
    #[arg(long, value_name = "LIST", value_parser = CpuList::parse)]
    cpu: Option<CpuList>,
    /// Connections at the start (spread over the threads) [default: 10]; at most what the
    /// open-files limit (ulimit -n) and the memory allow, 33 KiB each.
    #[arg(short = 'c', long, value_name = "N")]
    connections: Option<usize>,
    /// How long to run [default: 10s; a replay: the log's span divided by --speed, then up
    /// to --timeout for the answers to its last requests].
    #[arg(short = 'd', long, value_name = "DURATION", value_parser = super::positive_duration, allow_hyphen_values = true)]
    duration: Option<Duration>,
    /// Worker threads, each with its own event loop [default: number of cores, at most -c];
    /// at most 4 per core (and at least 16 allowed).
    #[arg(short = 't', long, value_name = "N")]
    threads: Option<usize>,
    /// Open loop: send this many requests per second whatever the responses do. A run that
    /// could not (over 1 % of the requests due never sent: every connection busy up to
    /// --max-connections, or the generator too slow) says so in a warning with the rate it
    /// sent, and the lab names the generator as the run's bound.
    #[arg(long, value_name = "R")]
    rate: Option<f64>,
    /// Open loop: evenly spaced sends, or a Poisson process.
    #[arg(long, value_name = "KIND", default_value = "constant", value_parser = ["constant", "poisson"], requires = "rate")]
    arrivals: String,
    /// Open loop: connections may grow to this many when all are busy (HTTP/2: the -c × -M streams are the limit) [default: max(1000, -c), within the open-files limit].
    #[arg(long, value_name = "N", requires = "rate")]
    max_connections: Option<usize>,
    /// A new TCP connection per request (Connection: close), as WebStone's HTTP/1.0 clients.
    #[arg(long)]
    close: bool,
    /// Closed loop: pause between a response and the next request on a connection.
    #[arg(long, value_name = "DURATION", value_parser = crate::cmd::duration, conflicts_with = "rate")]
    think_time: Option<Duration>,
    /// Closed loop: after a 503, the connection waits this long before its next request, as
    /// a client honouring Retry-After would [default: 0, ask again at once, as wrk].
    #[arg(long = "backoff-503", value_name = "DURATION", value_parser = crate::cmd::duration, conflicts_with = "rate")]
    backoff_503: Option<Duration>,
    /// Longest a request may take (connect included) before it counts as a timeout.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = crate::cmd::duration)]
    timeout: Duration,
    /// Length of the reporting intervals (live line, --hlog, per-interval figures).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = crate::cmd::duration)]
    interval: Duration,
    /// Statuses that count as success (e.g. 200, 2xx, 200-204, 200,404) [default: 2xx,3xx]:
    /// any other is an error, in the class rows, each interval and --threshold alike (in a
    /// replay, a status the log had is no error either).
    #[arg(long, value_name = "LIST", value_parser = webscope_load::Expect::parse)]
    expect_status: Option<webscope_load::Expect>,
    /// Judge the run against limits, as k6 does: e.g. 'p99<10ms,errors<1%' (any percentile
    /// p50..p99.99 and max from the whole histogram; errors: failures without a response and
    /// statuses outside --expect-status, over the requests that ended (in a replay, a status
    /// the log had is no error); goodput>=SHARE: the other responses over them; in open loop,
    /// not_sent<=SHARE of the requests due never sent, and late<=SHARE of those sent more
    /// than 1 ms after their time). A crossed threshold exits 99, one whose figure was not
    /// measured exits 3.
    #[arg(long, value_name = "LIST", value_parser = parse_threshold)]
    threshold: Option<Slo>,
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
    /// HTTP/2: over TLS with ALPN h2 for https URLs, with prior knowledge (h2c, as h2load
    /// does) for http URLs; -c connections of -M streams each, in closed loop, or in open
    /// loop with --rate (at most -c × -M requests in flight).
    #[arg(long, visible_alias = "h2c")]
    http2: bool,
    /// HTTP/3 over QUIC (UDP) for https URLs, the port being the server's UDP port: -c
    /// connections of -M streams each, in closed loop, or in open loop with --rate; the QUIC
    /// handshake timed apart, full or resumed; --cacert and -k as for https.
    #[arg(long, conflicts_with = "http2")]
    http3: bool,
    /// HTTP/3: send a resumed connection's first requests as 0-RTT early data; the summary
    /// counts the handshakes whose early data the server accepted (with --close, every
    /// connection after the first resumes).
    #[arg(long = "0rtt", requires = "http3")]
    zero_rtt: bool,
    /// HTTP/2 and HTTP/3: concurrent streams per connection (h2load's -m). With --users,
    /// --user-connections says a user's streams.
    #[arg(
        short = 'M',
        long,
        visible_alias = "streams",
        value_name = "N",
        default_value_t = 1,
        requires = "multiplexed",
        conflicts_with = "users"
    )]
    max_streams: usize,
    /// Busy-poll each connection for up to USECS microseconds before sleeping (SO_BUSY_POLL
    /// and SO_PREFER_BUSY_POLL). Helps on NICs with NAPI, not on loopback; a kernel that
    /// refuses it (without CAP_NET_ADMIN) gets a run without and a warning.
    #[arg(long, value_name = "USECS", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    busy_poll: Option<u32>,
    /// The HTTP/1.1 engine's kernel interface: epoll (a send and a recv per request) or uring
    /// (one io_uring per thread; connects, sends and receives submitted in batches). uring:
    /// plain HTTP/1.1, closed loop.
    #[arg(long, value_name = "epoll|uring", default_value = "epoll", value_parser = parse_io)]
    io: webscope_load::Io,
    /// https: accept any certificate (a test server's self-signed one); the handshake is
    /// still made in full.
    #[arg(short = 'k', long)]
    insecure: bool,
    /// https: trust only the CA certificates in this PEM file (a private CA), instead of the
    /// bundled Mozilla roots. A server certificate that is itself in the file is trusted as
    /// given, as curl does: a self-signed `openssl req -x509` one (CA:TRUE) works as its own
    /// --cacert; its host name is still checked (its subjectAltName, or without one its CN,
    /// as curl does).
    #[arg(long, value_name = "FILE", conflicts_with = "insecure")]
    cacert: Option<PathBuf>,
    /// https: no session resumption, so that every new connection (--close) makes a full
    /// handshake [default: resume, as browsers do].
    #[arg(long, overrides_with = "tls_resume")]
    no_tls_resume: bool,
    /// https: resume sessions (the default; undoes --no-tls-resume).
    #[arg(long, overrides_with = "no_tls_resume")]
    tls_resume: bool,
    /// Add a request header (repeatable), e.g. -H 'Accept-Encoding: gzip'.
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE")]
    headers: Vec<String>,
    /// Seed of the choice of files from a file set.
    #[arg(long, value_name = "N", default_value_t = 1)]
    seed: u64,
    /// Run the I-th of N disjoint shares of this run (0 <= I < N), as k6's execution segments:
    /// N generators given the same flags and --segment 0/N .. N-1/N make together the run one
    /// host would (-c 10 over 3 is 4+3+3 connections; --rate R is R/N each, interleaved), and
    /// `webscope merge` adds their results exactly. -t is each segment's threads.
    #[arg(long, value_name = "I/N", value_parser = parse_segment)]
    segment: Option<(usize, usize)>,
    /// Start on this instant (RFC 3339, e.g. 2026-11-24T20:00:00Z, or Unix seconds), so that
    /// every segment starts together and its intervals are the same wall-clock seconds.
    #[arg(long, value_name = "TIME", value_parser = parse_start_at)]
    start_at: Option<std::time::SystemTime>,
    /// After the summary, print the result (its JSON and its interval log) to stdout as lines
    /// beginning `webscope-result`, for a pod's log: `webscope merge` reads them back from
    /// `kubectl logs` output.
    #[arg(long)]
    emit: bool,
    /// Serve a live page on ADDR while the run goes (PORT or HOST:PORT; loopback when only a
    /// port is given): each interval's throughput, latency, errors, the machine's and the
    /// server's CPU, TCP states and the time left, then the final figures.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = webscope_live::DEFAULT_ADDR)]
    live: Option<String>,
    /// How long the live page stays up after the run, so that open browsers get the final
    /// figures (Ctrl-C ends it sooner).
    #[arg(long, value_name = "DURATION", default_value = "3s", value_parser = crate::cmd::duration, requires = "live")]
    live_linger: Duration,
    /// No live line while running.
    #[arg(short = 'q', long)]
    quiet: bool,
    /// Run a whole load config, as the lab's segments and `webscope distribute`'s pods are
    /// given it (a JSON file, or the JSON itself): every option that shapes the load comes
    /// from it, and only this process's own go on top (--segment, --start-at, --json, --hlog,
    /// --samples, --emit, --threshold, --live, -q). The server's name is resolved here.
    #[arg(long, value_name = "FILE|JSON", conflicts_with_all = whole::SHAPING)]
    config: Option<String>,
    #[command(flatten)]
    users: users::UserFlags,
}

impl Flags {
    fn config(mut self) -> anyhow::Result<(Config, Output)> {
        let own = Own::take(&mut self);
        if let Some(source) = &self.config {
            return own.apply(whole::read(source)?, None);
        }
        if self.base.is_some()
            && self.fileset.is_none()
            && self.replay.is_empty()
            && self.users.sessions.is_empty()
        {
            anyhow::bail!(
                "--base goes with --fileset, --replay or --sessions: give the URL alone otherwise"
            );
        }
        let sessions = self.users.logged(self.seed)?;
        let plan = match self.replay.is_empty() {
            true => None,
            false => Some(webscope_load::replay_log::plan(
                &self.replay,
                self.log_format,
                self.speed,
                self.looped,
            )?),
        };
        let target = match (&self.url, &self.fileset, &self.base, &plan) {
            (url, _, base, Some(plan)) => {
                let server = base.as_deref().or(url.as_deref()).context(
                    "--replay needs the server to send to: give its URL, e.g. --base http://127.0.0.1:8080/",
                )?;
                Target::replay(server, &plan.replay)?
            }
            (url, _, base, None) if sessions.is_some() => {
                let server = base.as_deref().or(url.as_deref()).context(
                    "--sessions needs the server to send to: give its URL, e.g. --base http://127.0.0.1:8080/",
                )?;
                let requests = sessions.as_ref().map_or(&[][..], |s| &s.requests[..]);
                Target::logged(server, requests, "users", "with users on a log's sessions")?
            }
            _ if self.requests.is_some() => {
                Target::request_list(self.requests.as_deref().unwrap_or(std::path::Path::new("")))?
            }
            (url, _, _, _) if !self.groups.is_empty() => {
                Target::groups(url.as_deref(), &self.groups)?
            }
            (Some(url), _, _, _) => Target::url(url)?,
            (None, Some(dir), Some(base), _) => Target::fileset(dir, base)?,
            _ => anyhow::bail!("give a URL, or --fileset DIR with --base URL"),
        };
        let connections = if let Some(users) = self.users.users {
            users
        } else if target.groups.is_empty() {
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
        config.duration = self.duration.unwrap_or(match &plan {
            Some(plan) => plan.replay.span(),
            None => Duration::from_secs(10),
        });
        config.mode = if self.close {
            Mode::Close
        } else {
            Mode::KeepAlive
        };
        if let Some(max) = self.max_connections {
            let budget = webscope_load::limits::socket_budget(config.threads);
            if max > budget {
                anyhow::bail!(
                    "--max-connections {max}: more connections than this process may open ({budget}: {}): give fewer, or raise the limit (ulimit -n, or LimitNOFILE)",
                    webscope_load::limits::files_said(config.threads)
                );
            }
        }
        let rate = match &plan {
            Some(plan) => Some(plan.replay.mean_rate()),
            None => self.rate,
        };
        config.pacing = match rate {
            Some(rate) => Pacing::Open {
                rate,
                arrivals: if self.arrivals == "poisson" {
                    Arrivals::Poisson
                } else {
                    Arrivals::Constant
                },
                // By default up to 1000, or what the open-files limit leaves room for.
                max_connections: self.max_connections.unwrap_or_else(|| {
                    let budget = webscope_load::limits::socket_budget(config.threads);
                    connections.max(1000.min(budget))
                }),
            },
            None => Pacing::Closed {
                think: self.think_time.unwrap_or(Duration::ZERO),
            },
        };
        config.timeout = self.timeout;
        // A replay of the whole log (no --duration) waits for its last requests' answers, up
        // to the timeout they would fail at anyway: they are the log's as much as the first.
        if plan.is_some() && self.duration.is_none() {
            config.drain = self.timeout;
        }
        config.interval = self.interval;
        config.backoff_503 = self.backoff_503.unwrap_or(Duration::ZERO);
        config.headers = self.headers;
        config.seed = self.seed;
        config.method = self.method;
        config.http2 = self.http2.then_some(self.max_streams);
        config.http3 = self.http3.then_some(self.max_streams);
        config.zero_rtt = self.zero_rtt;
        config.busy_poll = self.busy_poll;
        config.io = self.io;
        config.expect = self.expect_status.unwrap_or_default();
        config.body = match self.body.as_deref() {
            Some(text) => match text.strip_prefix('@') {
                Some(file) => std::fs::read(file)
                    .with_context(|| format!("--body @{file}: cannot read it"))?,
                None => text.as_bytes().to_vec(),
            },
            None => Vec::new(),
        };
        config.tls = webscope_load::TlsSettings {
            insecure: self.insecure,
            cacert: self.cacert,
            no_resume: self.no_tls_resume,
        };
        let read_line = plan
            .as_ref()
            .map(webscope_load::replay_log::Plan::describe)
            .or_else(|| sessions.as_ref().map(|s| s.describe()));
        config.users = self.users.plan(
            config.duration,
            sessions.map(|s| webscope_load::users::Sessions::Logged(s.logged)),
        );
        config.replay = plan.map(|plan| std::sync::Arc::new(plan.replay));
        own.apply(config, read_line)
    }
}

pub fn run(mut args: Args) -> anyhow::Result<()> {
    // Before any thread starts (the threads' default count included): all inherit the set.
    let cpus = args.flags.cpu.take();
    if let Some(cpus) = &cpus {
        cpus::pin(cpus).map_err(|e| match e {
            cpus::PinError::NotAllowed { .. } => anyhow::anyhow!("--cpu {cpus}: {e}"),
            cpus::PinError::Os(e) => {
                anyhow::anyhow!("cannot pin the generator to CPUs {cpus}: {e}")
            }
        })?;
    }
    let (config, output) = args.flags.config()?;
    let interrupt = crate::signals::interrupt_flag()?;
    let live = output.live_line && std::io::stderr().is_terminal();
    let start_page = |addr| webscope_live::LoadPage::start(addr, &config);
    let page = output.live_page.as_deref().map(start_page).transpose()?;
    let who = match &config.users {
        Some(users) => format!(
            "{} ({})",
            plural(users.count as u64, "user"),
            users.thinking()
        ),
        None => plural(config.connections_here() as u64, "connection"),
    };
    println!(
        "webscope load: {} for {} with {who} on {}{}",
        config.target.description,
        humantime::format_duration(config.duration),
        plural(config.threads as u64, "thread"),
        if live { " (Ctrl-C stops early)" } else { "" }
    );
    if let Some(line) = &output.read {
        println!("  {line}");
    }
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
    if let Some(line) =
        cpus.and_then(|c| webscope_monitor::procs::cpus_beside_server(&c, config.target.addr))
    {
        println!("{line}");
    }
    std::io::stdout().flush()?;
    if let Some(path) = &output.json {
        report.write_json(path)?;
    }
    if output.emit {
        let hlog = config
            .hlog
            .as_deref()
            .map(std::fs::read_to_string)
            .transpose();
        if let Some(path) = &output.temporary_hlog {
            let _ = std::fs::remove_file(path);
        }
        let hlog = hlog.context("cannot read back the interval log to --emit it")?;
        crate::cmd::merge::emit(&report, hlog.as_deref().unwrap_or(""))?;
    }
    if let Some(page) = page {
        let written = output.json.as_ref().map(|p| p.display().to_string());
        let cost = page.finish(&report, written, output.linger, &interrupt);
        println!("{}", cost.line("the generator's", report.generator_cpu_s));
    }
    judge(&report, output.threshold.as_ref())
}
