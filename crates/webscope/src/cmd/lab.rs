//! `webscope lab`: the whole experiment on an embedded default, in one command.

use std::path::PathBuf;
use std::time::Duration;

use webscope_lab::{self as lab, Options};

use super::{Exit, EXIT_DISTURBED, EXIT_INTERRUPTED};

const EXAMPLES: &str = "\
EXAMPLES:
    webscope lab --quick                          # about a minute: the README's first command
    webscope lab                                  # the default sweep, a few minutes
    webscope lab --clients 1,5,10,50 --duration 10s --keep-alive
    webscope lab --experiment clients --experiment filesize     # + WebStone A/4 .. A*4
    webscope lab --experiment techniques --experiment model     # ablation; MVA and USL vs measured
    webscope lab --experiment saturation                        # doubling clients, histograms, density map
    webscope lab --experiment degradation --repeat 3            # services under each policy, medians of 3
    webscope lab --target http://127.0.0.1:8080/ --fileset /tmp/spec        # nginx found by its port
    webscope lab --target http://127.0.0.1:8080/ --fileset /tmp/spec --server-pid $(cat nginx.pid)
    webscope lab --target http://10.0.0.5/ --fileset /tmp/spec --server-metrics http://10.0.0.5:9100/metrics
    webscope lab --target http://127.0.0.1:8080/ --fileset /tmp/spec --expect-status 200 --max-error-pct 0.1
    webscope lab --target https://www.example.internal/ --fileset /tmp/spec --cacert ca.pem --keep-alive
    webscope lab --experiment saturation --live   # watch the sweep at http://127.0.0.1:8089/
    webscope lab --tls --experiment clients --experiment filesize   # the same over HTTPS
    webscope lab --experiment protocols          # HTTP/1.1, HTTPS, HTTP/2 side by side
    webscope lab --experiment capacity --slo 'p99<=5ms,errors<=0.1%' --duration 2s   # req/s within the objective
    webscope lab --experiment capacity --target http://127.0.0.1:8080/ --fileset /tmp/spec --keep-alive --repeat 3
    webscope report ./webscope-report             # re-render a report from its directory

Ctrl-C stops the run under way; the report of what was measured is written, marked
interrupted, and the lab exits 130 (as shells expect of SIGINT).
Exit codes: 0 a report with valid runs; 1 an error, a failed run or no valid run (the report
is written when there is one); 2 a command line that does not parse; 4 a capacity search that
ended without a capacity because the machine stayed disturbed (other processes on the server's
or the generator's CPU, steal, CPU or I/O pressure: the report names the figures; run it again
on a quiet machine); 130 interrupted.";

/// Run the experiments on a server and write a report: by default webscope's own server on
/// loopback, a cached SPECweb96 file set, the clients sweep, server and load generator pinned
/// to separate CPUs.
#[derive(clap::Args, Debug)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// A short run (about a minute): fewer client counts, 3 s each, a small file set.
    #[arg(long)]
    quick: bool,
    /// Where the report goes (index.html, report.json, CSV, and the runs' data).
    #[arg(long, value_name = "DIR", default_value = "webscope-report")]
    out: PathBuf,
    /// Where file sets are made and kept between runs [default: ~/.cache/webscope].
    #[arg(long, value_name = "DIR")]
    work: Option<PathBuf>,
    /// Use this file set (made by webscope fileset) instead of the cached SPECweb96 set.
    #[arg(long, value_name = "DIR")]
    fileset: Option<PathBuf>,
    /// Measure this HTTP/1.1 server instead of the embedded one (it must serve the file set).
    #[arg(long, value_name = "URL")]
    target: Option<String>,
    /// The --target server's process: it and all its descendants are measured (nginx's
    /// master and workers, Apache's children). Without it, a server on this machine is found
    /// by the processes holding its listening socket.
    #[arg(
        long,
        value_name = "PID",
        requires = "target",
        conflicts_with = "no_server_pid"
    )]
    server_pid: Option<u32>,
    /// Do not look for the --target server's processes (no server CPU figures).
    #[arg(long, requires = "target")]
    no_server_pid: bool,
    /// The server host's Prometheus node_exporter (e.g. http://10.0.0.5:9100/metrics),
    /// repeatable for several hosts: their CPU, TCP, socket and disk figures are scraped once
    /// a second beside each run and stand for the server's machine in the tables, charts and
    /// verdicts (the busiest host where there are several).
    #[arg(long = "server-metrics", value_name = "URL", requires = "target")]
    server_metrics: Vec<String>,
    /// Statuses that count as success; goodput counts only these (e.g. 200, 2xx, 200-204).
    #[arg(long, value_name = "LIST", default_value = webscope_record::health::DEFAULT_EXPECT)]
    expect_status: String,
    /// A run with a larger share of failed requests (errors and unexpected statuses), in per
    /// cent, is invalid: marked, and left out of knees, fits and models.
    #[arg(long, value_name = "PCT", default_value_t = webscope_record::health::DEFAULT_MAX_ERROR_PCT)]
    max_error_pct: f64,
    /// Skip the preflight (a sample of the file set fetched and compared with the manifest
    /// before the sweep).
    #[arg(long)]
    no_preflight: bool,
    /// A stored lab report to compare with: the report gets a section with each figure's
    /// change and its significance (as webscope compare gives them).
    #[arg(long, value_name = "DIR")]
    baseline: Option<PathBuf>,
    /// No progress bar and no summary table: only the report's path (and errors).
    #[arg(short = 'q', long)]
    quiet: bool,
    /// An https --target: trust only the CA certificates in this PEM file (a server
    /// certificate that is itself in it is trusted as given, as curl does).
    #[arg(
        long,
        value_name = "FILE",
        requires = "target",
        conflicts_with = "insecure"
    )]
    cacert: Option<PathBuf>,
    /// An https --target: accept any certificate (a test server's self-signed one).
    #[arg(short = 'k', long, requires = "target")]
    insecure: bool,
    /// Serve a live page on ADDR during the sweep (PORT or HOST:PORT; loopback when only a
    /// port is given): the current run's intervals (throughput, latency, errors, the server's
    /// and the machine's CPU, TCP states), the step and the time left, the runs done.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = webscope_live::DEFAULT_ADDR)]
    live: Option<String>,
    /// How long the live page stays up after the lab, so that open browsers get its end
    /// (Ctrl-C ends it sooner).
    #[arg(long, value_name = "DURATION", default_value = "3s", value_parser = crate::cmd::duration, requires = "live")]
    live_linger: Duration,
    /// Experiments to run (repeatable): clients (the sweep of Yates and Mughal), filesize
    /// (WebStone A/4 .. A*4), techniques (Hu's cumulative ablation), saturation (Chiarini's
    /// doubling, histograms, density map), model (D = U/X, MVA for 1/2/4 CPUs, USL),
    /// degradation (light/middle/heavy services under each policy), protocols (HTTP/1.1,
    /// HTTPS and HTTP/2 side by side, keep-alive and close), capacity (the largest open-loop
    /// rate that meets --slo: grow, bisect, repeat at the boundary), replay (the --workload
    /// log on its own timing at 1×, 2×, 4× ... until it fails --slo, each beside Poisson
    /// arrivals at the same rate), users (the most closed-loop users, each going through
    /// sessions of page views, whose page loads meet --slo, with MVA's prediction beside it;
    /// the --workload log's sessions, or SURGE's shapes at 1/100 of its times).
    #[arg(long = "experiment", value_name = "NAME", default_value = "clients")]
    experiments: Vec<String>,
    /// Client counts of the clients sweep, e.g. 1,2,5,10,20.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    clients: Option<Vec<usize>>,
    /// Length of each run [default: 15s, 3s with --quick; degradation: 5s, 1s with --quick].
    #[arg(long, value_name = "DURATION", value_parser = super::positive_duration, allow_hyphen_values = true)]
    duration: Option<Duration>,
    /// Keep connections alive (default: a connection per request, as WebStone's clients).
    #[arg(long)]
    keep_alive: bool,
    /// Serve the embedded server over HTTPS (its own self-signed certificate, trusted by the
    /// runs): the clients, filesize, model, capacity and replay experiments then measure TLS.
    #[arg(long)]
    tls: bool,
    /// Speak HTTP/2 (over TLS to the embedded server, which --http2 then serves HTTPS): each
    /// client is one connection with one stream, kept alive; a capacity probe opens 4
    /// connections of 100 streams.
    #[arg(long, conflicts_with = "http3")]
    http2: bool,
    /// Speak HTTP/3 over QUIC (to the embedded server, which --http3 then serves over HTTPS
    /// and, on the same port over UDP, HTTP/3; to an https --target, on its UDP port): each
    /// client is one QUIC connection with one stream, kept alive; a capacity probe opens 4
    /// connections of 100 streams, as over --http2. The clients, filesize, model, protocols
    /// and capacity experiments. The preflight then fetches its sample over HTTP/3 too.
    #[arg(long)]
    http3: bool,
    /// The protocols experiment's loss comparison: a page of 20 objects loaded over HTTP/2
    /// and over HTTP/3 at each of these random loss rates (per cent, e.g. 1%,3%), across a
    /// link with --rtt's round trip that a user-space relay makes between two network
    /// namespaces (needs root). Instead of the protocols experiment's rows.
    #[arg(long, value_name = "RATES", value_parser = lab::loss::parse_rates)]
    loss: Option<lab::loss::Rates>,
    /// The loss comparison's round-trip time (half each way).
    #[arg(long, value_name = "DURATION", default_value = "20ms", value_parser = crate::cmd::duration, requires = "loss")]
    rtt: Duration,
    /// Runs of each point, taken round the whole sweep (not back to back): every page shows
    /// the median run of each point with the min-max spread as error bars (single runs on a
    /// small VM can move by 20 %). The saturation experiment, which stops where its rule
    /// says, runs once; the capacity search runs once and probes each of the bracket's two
    /// boundary rates N times at least instead (a rate is settled when its probes agree: 3 of
    /// 3, 4 of 4, 5 of 6; one whose 6 probes do not is unsettled, and the bracket spans it).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=20))]
    repeat: u16,
    /// No kernel profile in the filesize runs (by default perf records each one when it is
    /// there; its post-processing takes a core for a moment after each run).
    #[arg(long)]
    no_profile: bool,
    /// No kernel module in the runs' monitor. By default, where webscope is built with it
    /// (--features kernel) and it loads (root, a kernel with BTF), each run's sweep row gets
    /// its connections' wait in the server's accept queue (p50/p99), the verdicts weigh it
    /// and the clients sweep splits a request's time: listen queue, server, the rest.
    #[arg(long)]
    no_kernel: bool,
    /// The capacity experiment's objective: conditions on one probe, all of which must hold
    /// (p50 .. p99.99 or max latency, of the whole probe or of one size class as
    /// p99[0-1KB]<=5ms; errors, goodput, cpu, not_sent, late); goodput>=99% is added unless a
    /// goodput condition is given. Each is judged on its 95 % interval: a probe runs until it
    /// holds the requests its conditions need (2 000 for a p99, 3 838 for errors<=0.1 %; at
    /// most 60 s), and one whose interval straddles a limit is taken again, longer.
    /// The users experiment judges its steps on it too; its page loads are page_p95 (or
    /// any page_pNN) [default: p99<=10ms,errors<=0.1%; users: page_p95<=10ms,errors<=1%].
    #[arg(long, value_name = "SLO")]
    slo: Option<String>,
    /// The capacity search's first offered rate, req/s [default: 100].
    #[arg(long, value_name = "RATE")]
    from: Option<f64>,
    /// The capacity search stops when the bracket (fail − pass) / pass is within this share
    /// [default: 0.05].
    #[arg(long, value_name = "SHARE")]
    precision: Option<f64>,
    /// The capacity search decides each rate by the majority of its probes, settled by a
    /// sign test (3 of 3, 4 of 4, 5 of 6), and gives one capacity in one bracket spanning the
    /// rates that would not settle. By default a rate passes only when every probe there met
    /// the objective (at least --repeat of them, 2 or more), and the capacity is stated as
    /// the range it is: reliably up to L (every probe at L met it), tipping between L and U
    /// (passes and fails mixed), every probe failing from U; L is what compare and
    /// --baseline use. A miss below L is confirmed by a second fail at its rate; a lone fail
    /// that two passes there clear is named as the machine's stall.
    #[arg(long, conflicts_with = "every_probe")]
    majority: bool,
    /// The default since the range rule (kept so that older scripts run).
    #[arg(long, hide = true)]
    every_probe: bool,
    /// The capacity probes' arrivals: evenly spaced, or a Poisson process.
    #[arg(long, value_name = "KIND", default_value = "constant", value_parser = ["constant", "poisson"])]
    arrivals: String,
    /// Run each capacity probe as N `webscope load --segment I/N` processes started together
    /// and merged exactly (as N generators on N hosts would be), on every CPU but the
    /// embedded server's: for servers one generator thread cannot saturate. Each is given the
    /// probe's whole load config (webscope load --config), TLS and HTTP/2 included
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    segments: u16,
    /// Run each capacity probe's segments (--segments, default 1) as the pods of a Kubernetes
    /// Job with this image, as `webscope distribute --kubernetes N --apply` writes it: the lab
    /// applies it, waits for it, merges the pods' logs and deletes it (kubectl on PATH, its
    /// current context). Needs a --target the pods reach; the pods get the file set's paths
    /// in the config, but a --cacert file only if the image carries it
    #[arg(long, value_name = "IMAGE")]
    kubernetes: Option<String>,
    /// The site's access log (Common or Combined, plain or gzip; repeatable) that the replay
    /// experiment replays. The server must serve its paths: with the embedded server, give
    /// --fileset of `webscope fileset like LOG --keep-paths` (which is also how every other
    /// experiment runs the site's mix)
    #[arg(long, value_name = "LOG")]
    workload: Vec<std::path::PathBuf>,
    /// The users experiment on --workload's sessions: multiply their think times by this
    /// (1/100, 0.01), keeping their pages, objects and order, so that a site whose users
    /// think for seconds reaches its knee at users one machine holds; said beside every
    /// number of users
    #[arg(long, value_name = "FACTOR", value_parser = webscope_load::users::parse_think_scale, requires = "workload")]
    think_scale: Option<f64>,
    /// With --kubernetes: time from writing each probe's Job to its pods' common start
    /// (scheduling and the image's pull)
    #[arg(long, value_name = "DURATION", default_value = "20s", value_parser = crate::cmd::positive_duration)]
    start_margin: std::time::Duration,
    /// The ab experiment's B (A is --target): a server of yours, pinned to the same CPUs as A
    #[arg(long, value_name = "URL")]
    candidate: Option<String>,
    /// The ab experiment's B as a second embedded server started with these `serve` flags,
    /// e.g. '--no-sendfile' (A is the embedded server as it is; both pinned to one CPU)
    #[arg(long, value_name = "FLAGS", allow_hyphen_values = true)]
    candidate_serve_args: Option<String>,
    /// The ab experiment's limits on B's change against A, in per cent (metrics as compare's):
    /// exit 1 when one is crossed, 3 when one cannot be decided. capacity>-5% adds two capacity
    /// searches at --slo in lockstep (after the rounds; bounded by their probes, not --max-time),
    /// a crossing confirmed by paired probes at A's lower edge before it is said
    #[arg(long, value_name = "LIST", default_value = lab::ab::DEFAULT_THRESHOLDS)]
    threshold: String,
    /// The ab experiment's rounds stop here, decided or not
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = crate::cmd::positive_duration)]
    max_time: std::time::Duration,
    /// The ab experiment's trials run open loop at this rate (req/s, --arrivals) rather than
    /// closed loop with --clients: CPU per request and latency at a fixed load below both
    /// servers' capacity, where a closed loop measures them saturated. Goodput then says only
    /// whether B kept up: judge cpu_us, p50, p99
    #[arg(long, value_name = "REQ/S", value_parser = positive_rate)]
    rate: Option<f64>,
    /// The ab experiment loads A and B at once in each round, each with its own generator
    /// (duet benchmarking), rather than back to back: both meet the machine's state to the
    /// millisecond. Measured here, its interval on CPU per request was a tenth as wide in the
    /// same time; goodput then compares the two under contention for shared CPUs
    #[arg(long)]
    duet: bool,
}

/// A rate above 0 req/s.
fn positive_rate(text: &str) -> Result<f64, String> {
    text.parse::<f64>()
        .ok()
        .filter(|r| r.is_finite() && *r > 0.0)
        .ok_or_else(|| {
            format!("{text:?} is not a rate: give requests per second above 0, e.g. 2000")
        })
}

pub fn run(args: Args) -> anyhow::Result<()> {
    if let Some(clients) = &args.clients {
        anyhow::ensure!(
            !clients.is_empty() && clients.iter().all(|&c| c > 0),
            "--clients needs positive counts, e.g. --clients 1,2,5,10"
        );
    }
    let judge = webscope_record::health::Judge::new(args.expect_status, args.max_error_pct)?;
    let capacity = lab::capacity::Settings::new(
        args.slo.as_deref().unwrap_or(lab::capacity::DEFAULT_SLO),
        args.from,
        args.precision,
        if args.arrivals == "poisson" {
            webscope_load::Arrivals::Poisson
        } else {
            webscope_load::Arrivals::Constant
        },
    )
    .map_err(anyhow::Error::msg)?;
    let capacity = lab::capacity::Settings {
        segments: usize::from(args.segments),
        rule: if args.majority {
            lab::capacity::search::Rule::Settled
        } else {
            lab::capacity::search::Rule::Range
        },
        kubernetes: args
            .kubernetes
            .clone()
            .map(|image| lab::capacity::kubernetes::Pods {
                image,
                start_margin: args.start_margin,
            }),
        ..capacity
    };
    let interrupt = crate::signals::interrupt_flag()?;
    let live = match &args.live {
        Some(addr) => {
            let title = format!(
                "webscope lab: {}",
                args.target
                    .as_deref()
                    .unwrap_or("webscope serve (embedded)")
            );
            // Each run's intervals are a second long.
            let live = webscope_live::Live::start(addr, "lab", &title, Duration::from_secs(1))?;
            eprintln!("webscope lab: live page at {}", live.url());
            Some(live)
        }
        None => None,
    };
    let cpu_before = webscope_load::process_time();
    let options = Options {
        out: args.out,
        work: args.work.unwrap_or_else(lab::default_work_dir),
        quick: args.quick,
        fileset: args.fileset,
        target: args.target,
        server_pid: args.server_pid,
        no_server_pid: args.no_server_pid,
        server_metrics: args.server_metrics,
        judge,
        no_preflight: args.no_preflight,
        baseline: args.baseline,
        quiet: args.quiet,
        live,
        tls: webscope_load::TlsSettings {
            insecure: args.insecure,
            cacert: args.cacert,
            no_resume: false,
        },
        embedded_tls: args.tls,
        http2: args.http2,
        http3: args.http3,
        loss: args.loss.map(|rates| lab::loss::Settings {
            rates: rates.0,
            rtt: args.rtt,
        }),
        experiments: args.experiments,
        clients: args.clients,
        duration: args.duration,
        keep_alive: args.keep_alive,
        profile: !args.no_profile,
        no_kernel: args.no_kernel,
        repeat: usize::from(args.repeat),
        capacity,
        users: lab::users::Settings {
            slo: webscope_load::slo::Slo::parse(
                args.slo.as_deref().unwrap_or(lab::users::DEFAULT_SLO),
            )
            .map_err(|why| anyhow::anyhow!("--slo: {why}"))?,
            precision: args.precision.unwrap_or(lab::capacity::DEFAULT_PRECISION),
            think_scale: args.think_scale,
            ..lab::users::Settings::default()
        },
        workload: args.workload,
        ab: lab::ab::Settings {
            candidate: args.candidate,
            candidate_serve_args: args
                .candidate_serve_args
                .as_deref()
                .map(|a| a.split_whitespace().map(String::from).collect())
                .unwrap_or_default(),
            thresholds: args.threshold,
            max_time: args.max_time,
            rate: args.rate,
            duet: args.duet,
        },
        command: std::env::args().collect::<Vec<_>>().join(" "),
    };
    // What cannot work is refused before the first line says where the report goes.
    lab::setup::check(&options)?;
    if !options.quiet {
        eprintln!(
            "webscope lab: report to {} once the target passes its preflight (Ctrl-C stops and keeps what was measured)",
            options.out.display()
        );
    }
    let outcome =
        lab::run(&options, &interrupt).and_then(|()| webscope_pages::report::render(&options.out));
    if let Some(live) = &options.live {
        live.update(|state| {
            state.finished = true;
            state.interrupted = interrupt.load(std::sync::atomic::Ordering::Relaxed);
            state.time_left_s = Some(0.0);
            state.written_to = outcome.as_ref().ok().map(|o| o.index.display().to_string());
        });
    }
    let outcome = outcome?;
    if !options.quiet {
        print!("{}", outcome.summary);
    }
    println!("report: {}", outcome.index.display());
    if let Some(live) = options.live {
        let lab_cpu_s = (webscope_load::process_time() - cpu_before).as_secs_f64();
        let cost = live.linger(args.live_linger, &interrupt);
        // The lab's one process generates, monitors and writes the report.
        println!("{}", cost.line("this process's", lab_cpu_s));
    }
    if outcome.interrupted {
        // As shells expect of a command stopped by SIGINT (128 + 2); what was measured is kept.
        return Err(Exit {
            code: EXIT_INTERRUPTED,
            message: format!(
                "interrupted: the report of what was measured is at {}",
                outcome.index.display()
            ),
        }
        .into());
    }
    if let Some(failed) = outcome.failures.first() {
        anyhow::bail!(
            "a run failed ({failed}); the report of what was measured before it is at {}",
            outcome.index.display()
        );
    }
    // The capacity (or users) search's sentence when it ended without a capacity because the
    // machine stayed disturbed (its ending in the report.json beside the index).
    let searches = outcome.index.parent().map(lab::results::Searches::of_lab);
    if let Some(why) = searches.and_then(|s| s.ok()?.disturbed()) {
        return Err(Exit {
            code: EXIT_DISTURBED,
            message: format!("{why}; the report is at {}", outcome.index.display()),
        }
        .into());
    }
    if let Some(dir) = outcome.index.parent() {
        if let Some(ab) = lab::results::ab::AbEntry::of_lab(dir) {
            match ab.worst() {
                Some((lab::results::ab::Said::Crossed, why)) => {
                    anyhow::bail!("{why}; the report is at {}", outcome.index.display())
                }
                Some((_, why)) => {
                    return Err(Exit {
                        code: super::EXIT_UNDECIDED,
                        message: format!(
                            "{why} (exit {}, never a pass); the report is at {}",
                            super::EXIT_UNDECIDED,
                            outcome.index.display()
                        ),
                    }
                    .into())
                }
                None => {}
            }
        }
    }
    if outcome.nothing_valid() {
        anyhow::bail!(
            "no valid run ({} judged): {}; the report says more",
            outcome.judged,
            outcome.invalid.first().map_or("", String::as_str)
        );
    }
    Ok(())
}
