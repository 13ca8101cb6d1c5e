//! `webscope model`: read a model file or a measured sweep, call `webscope_model`, print a
//! table or JSON.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use webscope_model::laws::{self, Measured, Resource};
use webscope_model::mva::{self, Method, Options};
use webscope_model::{json, parse_populations, text, usl, Network};
use webscope_sys::TextError;

const EXAMPLES: &str = "\
EXAMPLES:
    webscope model mva crates/model/examples/mughal-web-server.toml                  # the paper's 1-CPU model
    webscope model mva crates/model/examples/mughal-web-server.toml --servers cpu=4  # what if 4 CPUs?
    webscope model mva crates/model/examples/mughal-web-server.toml --population 20..200:20 --json
    webscope model mva site.toml --population 1..500 --method schweitzer --tolerance 1e-6
    webscope model usl crates/model/examples/mughal-250mb-pdf.csv    # the paper's Table 2: peak near 10
    webscope model usl sweep.csv --json                 # columns concurrency,throughput
    webscope model laws --throughput 0.6689 --util cpu=38.99% --util disk=2.1575%
    webscope model laws --throughput 410 --util cpu=1.6 --servers cpu=2 --clients 50 --response-time 0.12
    webscope model laws --run webscope-report/clients/clients-010    # a lab run's measured figures";

/// Queueing models: solve a closed network by MVA, fit the Universal Scalability Law to a
/// measured sweep, or apply the operational laws to measured figures.
#[derive(clap::Args, Debug)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand, Debug)]
enum Command {
    Mva(MvaArgs),
    Usl(UslArgs),
    Laws(LawsArgs),
}

const MVA_EXAMPLES: &str = "\
MODEL FILE (TOML):
    [[class]]
    name = \"pdf\"
    population = 20        # jobs (clients) in the class
    think_time = 0.0       # seconds at the terminals (Z)

    [[station]]
    name = \"cpu\"
    kind = \"queue\"         # \"queue\" or \"delay\" (infinite servers)
    servers = 4            # default 1
    discipline = \"ps\"      # \"fcfs\" (default) or \"ps\" (a time-shared CPU)
    demand = { pdf = 0.583 }          # seconds per job: visits × service time
    # or: service_time = { pdf = 0.1 } and visits = { pdf = 5.83 }

EXAMPLES:
    webscope model mva crates/model/examples/mughal-web-server.toml
    webscope model mva crates/model/examples/mughal-web-server.toml --servers cpu=2 --population 20..200:20
    webscope model mva site.toml --population 1,10,100 --json";

/// Solve a closed queueing network by Mean Value Analysis.
///
/// Prints per class the throughput X and response time R, and per station and class the
/// utilisation U (busy servers, X·D), mean queue length Q and residence time; or, over a
/// --population sweep, one row per population. Exact MVA handles queues with several
/// servers exactly when they are processor-shared or every class has the same service time
/// per visit; otherwise, or when the populations are too large, `auto` uses Bard-Schweitzer
/// and says so.
#[derive(clap::Args, Debug)]
#[command(after_help = MVA_EXAMPLES)]
struct MvaArgs {
    /// The model file (TOML: `[[class]]` and `[[station]]` tables).
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// Solve at these populations instead of the file's: a list or range (20, 1,5,10,
    /// 1..200, 20..200:20). With several classes, every class gets N jobs.
    #[arg(long, value_name = "LIST")]
    population: Option<String>,
    /// Give a queue M identical servers (the "what if 2 or 4 CPUs?"); repeatable.
    #[arg(long, value_name = "STATION=M")]
    servers: Vec<String>,
    /// exact, schweitzer, or auto (exact when it is exact and small enough).
    #[arg(long, value_name = "METHOD", default_value = "auto")]
    method: String,
    /// Schweitzer stops when no queue length changes by more than this, relatively.
    #[arg(long, value_name = "T", default_value = "1e-10")]
    tolerance: f64,
    /// Print JSON instead of tables.
    #[arg(long)]
    json: bool,
}

/// Fit the Universal Scalability Law to a measured sweep, with Amdahl's law beside it.
///
/// X(N) = λN / (1 + σ(N−1) + κN(N−1)) with σ, κ ≥ 0; Amdahl's law is the same with κ = 0.
/// The CSV has the columns concurrency,throughput (a header naming them is optional; other
/// columns are ignored). Prints σ, κ, λ with standard errors, R², the peak N* = √((1−σ)/κ)
/// and X(N*), and measured against fitted throughput.
#[derive(clap::Args, Debug)]
struct UslArgs {
    /// The measurements (CSV; - for standard input).
    #[arg(value_name = "FILE.csv")]
    file: PathBuf,
    /// Print JSON (sigma, kappa, lambda, their *_stderr, r_squared, n_peak, x_peak, amdahl).
    #[arg(long)]
    json: bool,
}

/// Apply the operational laws to measured figures: demands, bottleneck, Little, bounds.
///
/// Service demands D = U / X, the bottleneck and the throughput limit, the knee
/// N* = (D + Z) / D_max, Little's law N = X (R + Z) with the deviation of the measurement,
/// and the asymptotic and balanced-job bounds.
#[derive(clap::Args, Debug)]
struct LawsArgs {
    /// A run directory written by `webscope lab`: its throughput, clients, mean response time
    /// and server CPU utilisation are the measured figures (flags given too override them).
    #[arg(long, value_name = "DIR")]
    run: Option<PathBuf>,
    /// Measured throughput (completions per second).
    #[arg(long, value_name = "X", required_unless_present = "run")]
    throughput: Option<f64>,
    /// A resource's utilisation: a percentage of the whole resource (cpu=39%) or busy
    /// servers (cpu=0.39, or 1.6 of a 2-server CPU); repeatable.
    #[arg(long = "util", value_name = "NAME=U", required_unless_present = "run")]
    utils: Vec<String>,
    /// A resource's identical servers (cores, spindles); default 1; repeatable.
    #[arg(long, value_name = "NAME=M")]
    servers: Vec<String>,
    /// Clients during the measurement (N), for Little's law and the bounds.
    #[arg(long, value_name = "N")]
    clients: Option<f64>,
    /// Mean response time measured (seconds), for Little's law.
    #[arg(long, value_name = "R")]
    response_time: Option<f64>,
    /// Think time per client (seconds).
    #[arg(long, value_name = "Z", default_value_t = 0.0)]
    think_time: f64,
    /// Populations to bound (default: the clients, or 1,2,5,10,20,50,100).
    #[arg(long, value_name = "LIST")]
    population: Option<String>,
    /// Print JSON instead of tables.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let out = match args.command {
        Command::Mva(a) => mva_command(a)?,
        Command::Usl(a) => usl_command(a)?,
        Command::Laws(a) => laws_command(a)?,
    };
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(out.as_bytes())?;
    stdout.flush()?;
    Ok(())
}

fn mva_command(a: MvaArgs) -> anyhow::Result<String> {
    let method: Method = a.method.parse()?;
    let text_in = read(&a.file)?;
    let mut network =
        Network::from_toml_str(&text_in).with_context(|| a.file.display().to_string())?;
    for spec in &a.servers {
        let (station, m) = name_value(spec, "--servers", "STATION=M")?;
        let m: u32 = m.parse().ok().filter(|m| *m >= 1).with_context(|| {
            format!("--servers {spec}: M must be a whole number of servers, 1 or more")
        })?;
        network = network.with_servers(station, m)?;
    }
    let options = Options {
        method,
        tolerance: a.tolerance,
        ..Options::default()
    };
    match &a.population {
        None => {
            let solved = mva::solve(&network, &options)?;
            Ok(if a.json {
                json::pretty(&json::single(&solved))
            } else {
                text::solution(&solved)
            })
        }
        Some(list) => {
            let ns = parse_populations(list).context("--population")?;
            let solved = mva::sweep(&network, &mva::populations_for(&network, &ns), &options)?;
            Ok(if a.json {
                json::pretty(&json::sweep(&solved))
            } else {
                text::sweep(&solved)
            })
        }
    }
}

fn usl_command(a: UslArgs) -> anyhow::Result<String> {
    let csv = read(&a.file)?;
    let name = a.file.display().to_string();
    let points = usl::parse_csv(&csv).with_context(|| name.clone())?;
    let fit = usl::fit(&points).with_context(|| name.clone())?;
    Ok(if a.json {
        json::pretty(&json::scalability(&fit))
    } else {
        text::scalability(&fit, &points)
    })
}

fn laws_command(mut a: LawsArgs) -> anyhow::Result<String> {
    if let Some(dir) = &a.run {
        let run = webscope_record::laws::LawsFigures::of_run(dir)
            .with_context(|| format!("--run {}", dir.display()))?;
        a.throughput = a.throughput.or(Some(run.throughput));
        a.clients = a.clients.or(Some(run.clients));
        a.response_time = a.response_time.or(Some(run.response_s));
        if a.utils.is_empty() {
            let busy = run.busy_cores.with_context(|| {
                format!(
                    "--run {}: the run has no server CPU figures (an external target without --server-pid): give --util",
                    dir.display()
                )
            })?;
            a.utils.push(format!("cpu={busy}"));
        }
    }
    anyhow::ensure!(
        a.response_time.is_none() || a.clients.is_some(),
        "--response-time needs --clients (Little's law relates the two)"
    );
    let throughput = a.throughput.context("--throughput is missing")?;
    let mut servers: Vec<(String, u32)> = Vec::new();
    for spec in &a.servers {
        let (name, m) = name_value(spec, "--servers", "NAME=M")?;
        let m: u32 = m.parse().ok().filter(|m| *m >= 1).with_context(|| {
            format!("--servers {spec}: M must be a whole number of servers, 1 or more")
        })?;
        servers.push((name.to_string(), m));
    }
    let mut resources = Vec::new();
    for spec in &a.utils {
        let (name, value) = name_value(spec, "--util", "NAME=U")?;
        let m = servers.iter().find(|(n, _)| n == name).map_or(1, |s| s.1);
        let utilization = match value.strip_suffix('%') {
            Some(pct) => parse_number(pct, spec)? / 100.0 * f64::from(m),
            None => parse_number(value, spec)?,
        };
        resources.push(Resource {
            name: name.to_string(),
            utilization,
            servers: m,
        });
    }
    if let Some((name, _)) = servers
        .iter()
        .find(|(n, _)| !resources.iter().any(|r| &r.name == n))
    {
        anyhow::bail!("--servers names '{name}', which has no --util: give its utilisation too");
    }
    let populations: Vec<f64> = match (&a.population, a.clients) {
        (Some(list), _) => parse_populations(list)
            .context("--population")?
            .into_iter()
            .map(f64::from)
            .collect(),
        (None, Some(_)) => Vec::new(),
        (None, None) => vec![1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0],
    };
    let measured = Measured {
        throughput,
        resources,
        clients: a.clients,
        response_time: a.response_time,
        think_time: a.think_time,
    };
    let result = laws::analyze(&measured, &populations)?;
    Ok(if a.json {
        json::pretty(&json::laws(throughput, &result))
    } else {
        text::laws(throughput, &result)
    })
}

/// A model file or a measured sweep: text of at most [`MAX_INPUT`] bytes in lines of at most
/// 64 KiB, so that `/dev/zero` or a wrong file is refused, not held.
fn read(path: &Path) -> anyhow::Result<String> {
    let name = path.display();
    webscope_sys::read_text(path, MAX_INPUT).map_err(|e| match e {
        TextError::Io(e) => anyhow::Error::new(e).context(format!("cannot read {name}")),
        TextError::LongLine => {
            anyhow::anyhow!("{name}: a line over 64 KiB: not a model file nor a measured sweep")
        }
        TextError::NotUtf8 => anyhow::anyhow!("{name}: not UTF-8 text: give a TOML or CSV file"),
        TextError::TooBig => {
            anyhow::anyhow!("{name}: over 16 MiB: not a model file nor a measured sweep")
        }
    })
}

/// The most a model file or a measured sweep may hold (a sweep of 100 000 rows is 5 MiB).
const MAX_INPUT: usize = 16 << 20;

fn name_value<'a>(spec: &'a str, flag: &str, shape: &str) -> anyhow::Result<(&'a str, &'a str)> {
    spec.split_once('=')
        .map(|(n, v)| (n.trim(), v.trim()))
        .filter(|(n, v)| !n.is_empty() && !v.is_empty())
        .with_context(|| format!("{flag} {spec}: write {shape}"))
}

fn parse_number(text: &str, spec: &str) -> anyhow::Result<f64> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .with_context(|| {
            format!("--util {spec}: '{text}' is not a utilisation (write e.g. cpu=39% or cpu=0.39)")
        })
}
