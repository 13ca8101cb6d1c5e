//! What bounds a run's throughput, named from measurements of the whole machine and quoted
//! with the figure it rests on.
//!
//! The rules are tried in order of evidence: the server at its CPU limit, which is the least
//! of its busy threads and the CPUs it may use, judged in sum and for its busiest thread (one
//! thread never uses more than one core, so nginx with one worker on two CPUs saturates at
//! one); the generator at its CPU limit, or short of its open-loop rate by more than
//! [`webscope_load::NOT_SENT_LIMIT`] (then the run measures the generator); the server
//! refusing load (429 and 503 answers, connections reset or refused, most of the run's
//! errors: a rate or connection limit turns the excess away before any resource fills, and
//! the server's own answer is more direct evidence than a busy machine); the machine's CPUs
//! busy, softirq included (loopback TCP is kernel work that neither process is charged for);
//! a network interface or disk at capacity; ephemeral ports or TIME_WAIT near
//! their limit, counting the sockets the run's own connections left (never the host's
//! leftover from an earlier run); the accept queue overflowing, or its connections waiting in
//! it a large share of the response time (the kernel module's figure); otherwise latency, by
//! Little's law. The first rule whose figure passes its threshold is the verdict; the
//! thresholds are constants here, so a verdict can always be traced to the number and the
//! limit it was compared with.
//! The rules are in `rules.rs`, one function each; the tests, one or more per rule, in
//! `tests.rs`. The machine's figures they read from a run's record ([`os_figures`]: CPU
//! shares, the server's host, queue waits, connection lifetimes) are the pages' too.
//!
//! Not for: running anything (the lab measures, and stores each run's verdict) nor drawing
//! it (`webscope-pages`). Out of the lab (#47) so that the pages and the lab read one judge.

#![deny(missing_docs)]

use serde::{Deserialize, Serialize};
use webscope_report::human::pct_brief;

/// A CPU is "at its limit" from this share of its capacity (sampling and the last partial
/// interval keep a saturated CPU a little under 100 %).
pub const CPU_LIMIT: f64 = 0.90;
/// The machine's CPUs are "all busy" from this share: below the per-process limit, because
/// an idle instant on any CPU is counted and softirq work moves between CPUs.
pub const MACHINE_LIMIT: f64 = 0.85;
/// A disk or network interface is at capacity from this utilisation.
pub const DEVICE_LIMIT: f64 = 0.90;
/// TIME_WAIT is near the port limit from this share of the ephemeral range: Linux's
/// connect() takes even ports first (since 4.6), so half the range is where every new
/// connection starts searching for a port and reusing TIME_WAIT slots.
pub const PORTS_LIMIT: f64 = 0.45;
/// Share of `tcp_max_tw_buckets` at which the kernel is about to destroy TIME_WAIT sockets.
pub const TW_BUCKETS_LIMIT: f64 = 0.90;

/// A server thread that never sleeps is the server's limit only when it also runs this share
/// of the run: one that waits for a CPU much of its time is held back by what shares that CPU
/// (the generator's or the machine's verdict says so), not by being one thread.
pub const THREAD_RUN_LIMIT: f64 = 0.75;

/// The latency verdict's conclusion: what a run alone says. A sweep that measured more
/// clients knows better, and leaves it out where they did not raise throughput.
pub const MORE_CLIENTS: &str = ", so more clients would raise it";

/// How long a closed connection lingers in TIME_WAIT on Linux (`TCP_TIMEWAIT_LEN`), seconds.
pub const TIME_WAIT_S: f64 = 60.0;
/// A server thread counts towards the server's parallelism from this share of the run spent
/// running or waiting for a CPU: below it, it is an idle helper (a master process, an admin
/// endpoint).
pub const ACTIVE_THREAD: f64 = 0.05;

/// Share of the offered rate answered from which an open-loop run kept up with it.
pub const KEPT_UP: f64 = 0.97;

/// Refusals bound a run from this share of its requests: the default objective's error
/// ceiling (`errors<=0.1%`), so that a probe failed by refusals is said to be refused.
pub const REFUSED_LIMIT: f64 = 0.001;

/// The statuses a server refuses load with: 429 Too Many Requests (a rate limit) and 503
/// Service Unavailable (nginx's `limit_req` and `limit_conn`, a proxy's full queue, a
/// shedder).
pub const REFUSAL_STATUSES: [u16; 2] = [429, 503];

/// Accept-queue overflows per second (mean over the run) from which the queue binds: a
/// single overflow in a run is a blip, one a second is clients waiting a SYN retransmit.
pub const OVERFLOWS_LIMIT: f64 = 1.0;

/// The accept queue binds, without overflowing, when its connections' waits spread over the
/// requests make at least this share of the mean response time ...
pub const ACCEPT_WAIT_SHARE: f64 = 0.25;
/// ... and the p99 connection waited at least this long, milliseconds: below it a queue wait
/// is the server's scheduling on a busy machine, not an accept loop that falls behind.
pub const ACCEPT_WAIT_MS: f64 = 1.0;

/// What bounds a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bound {
    /// The server's processes use all the CPU they may.
    ServerCpu,
    /// The load generator's busiest thread uses all of its CPU.
    Generator,
    /// The machine's CPUs are busy, kernel work (softirq) included.
    MachineCpu,
    /// A network interface is at its line rate.
    Network,
    /// A disk is busy all the time.
    Disk,
    /// Ephemeral ports or TIME_WAIT slots are nearly used up.
    Ports,
    /// Connections are dropped from a full accept queue, or wait long in it (the kernel
    /// module's accept-queue wait).
    AcceptQueue,
    /// The server refuses the load beyond a limit: 429/503 answers or connections reset or
    /// refused make most of the run's errors.
    Refused,
    /// No resource is at its limit: the clients' round trips bound throughput (closed loop),
    /// or the server answered less than an open loop offered while waiting on something the
    /// lab does not measure.
    Latency,
    /// Open loop: no resource is at its limit and the server answered what was offered; the
    /// offered rate is all that bounds the run.
    Offered,
}

impl Bound {
    /// Every bound, in the order verdicts weigh them.
    pub const ALL: [Bound; 10] = [
        Bound::ServerCpu,
        Bound::Generator,
        Bound::MachineCpu,
        Bound::Network,
        Bound::Disk,
        Bound::Ports,
        Bound::AcceptQueue,
        Bound::Refused,
        Bound::Latency,
        Bound::Offered,
    ];

    /// The bound whose [`Bound::label`] is `label`.
    pub fn from_label(label: &str) -> Option<Bound> {
        Bound::ALL.into_iter().find(|b| b.label() == label)
    }

    /// A short name for table cells.
    pub fn label(self) -> &'static str {
        match self {
            Bound::ServerCpu => "server CPU",
            Bound::Generator => "generator",
            Bound::MachineCpu => "machine CPU",
            Bound::Network => "network",
            Bound::Disk => "disk",
            Bound::Ports => "ports/TIME_WAIT",
            Bound::AcceptQueue => "accept queue",
            Bound::Refused => "refuses load",
            Bound::Latency => "latency",
            Bound::Offered => "offered rate",
        }
    }
}

/// CPU shares of a machine over a run, per cent of all its CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct CpuShares {
    /// 100 − idle − iowait.
    pub busy: f64,
    /// User time.
    pub user: f64,
    /// System time.
    pub system: f64,
    /// Softirq time (network receive and transmit processing, mostly).
    pub softirq: f64,
}

/// The measurements a verdict is drawn from; `None` where the lab could not measure.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Evidence {
    /// Closed-loop clients (connections) of the run.
    pub clients: f64,
    /// Open loop: the rate offered, requests per second (None for a closed loop, where the
    /// clients' round trips pace the requests).
    pub offered_rps: Option<f64>,
    /// Goodput, requests per second.
    pub goodput_rps: f64,
    /// Mean response time, milliseconds.
    pub mean_ms: f64,
    /// Cores the server's processes kept busy (CPU seconds / run seconds), all of them.
    pub server_busy_cores: Option<f64>,
    /// Cores the server's processes may run on (their affinity, or the machine).
    pub server_cpus: Option<f64>,
    /// How many processes the server figures cover, and how they were found.
    pub server_processes: Option<String>,
    /// The generator's busiest thread, fraction of one core.
    pub generator_busy: f64,
    /// The generator thread that slept least: running or waiting for a CPU, fraction of the
    /// run (0 where not measured).
    pub generator_busy_or_waiting: f64,
    /// Server threads that ran or waited for a CPU at least [`ACTIVE_THREAD`] of the run:
    /// the server cannot keep more cores busy than this.
    pub server_threads: Option<f64>,
    /// The server's busiest thread: its name, and the shares of the run it was running and
    /// waiting for a CPU.
    pub server_busiest_thread: Option<(String, f64, f64)>,
    /// The server's machine (the same as the generator's for a local target).
    pub server_host: Option<CpuShares>,
    /// Where the server's machine figures came from ("procfs", "node_exporter URL").
    pub server_host_source: Option<String>,
    /// The generator's machine when it is another one (a remote target).
    pub generator_host: Option<CpuShares>,
    /// The busiest disk's utilisation, per cent.
    pub disk_util_pct: Option<f64>,
    /// The busiest interface with a known speed: name and utilisation, per cent.
    pub net_util_pct: Option<(String, f64)>,
    /// Sockets in TIME_WAIT that this run's own connections left (see
    /// [`own_time_wait`]), not the host's leftover from earlier runs.
    pub time_wait: Option<f64>,
    /// Connections the run opened.
    pub connects: f64,
    /// The run's length, seconds.
    pub duration_s: f64,
    /// Size of the ephemeral port range (`net.ipv4.ip_local_port_range`).
    pub port_range: Option<f64>,
    /// `net.ipv4.tcp_max_tw_buckets`.
    pub tw_buckets: Option<f64>,
    /// ListenOverflows per second (mean over the run).
    pub listen_overflows_per_s: Option<f64>,
    /// The connections' accept-queue wait at p99, milliseconds (the monitor's kernel module).
    pub accept_wait_p99_ms: Option<f64>,
    /// The accept-queue waits summed over the requests answered: a request's mean share of
    /// them, milliseconds.
    pub accept_wait_per_request_ms: Option<f64>,
    /// Open loop: how the run fell short of its rate, when it did (load's own rule).
    pub missed_rate: Option<webscope_load::MissedRate>,
    /// The requests the server refused ([`Refused::of`] the run's health).
    pub refused: Option<Refused>,
}

/// The requests a server refused: answered 429 or 503 ([`REFUSAL_STATUSES`], when not
/// expected), or whose connection was reset or refused while the server answered others.
#[derive(Debug, Clone, PartialEq)]
pub struct Refused {
    /// The largest kind of refusal, as a reading quotes it: "503 Service Unavailable",
    /// "connections reset or closed before a response".
    pub largest: String,
    /// Its share of the requests that ended, 0..1.
    pub largest_share: f64,
    /// Every refusal over the requests that ended.
    pub share: f64,
    /// Every error over the requests that ended (refusals and the rest).
    pub error_share: f64,
}

impl Refused {
    /// The refusals in a run's `health`; None when there were none, or when the server
    /// answered nothing well (a server that is down refuses every connection: that is no
    /// limit on load, and its run is invalid anyway).
    pub fn of(health: &webscope_record::health::Health) -> Option<Refused> {
        use webscope_load::Failure;
        if health.attempts == 0 || health.good == 0 {
            return None;
        }
        let statuses = health
            .unexpected
            .iter()
            .filter(|(code, _)| REFUSAL_STATUSES.contains(code))
            .map(|&(code, n)| {
                (
                    format!("{code} {}", webscope_record::health::reason(code)),
                    n,
                )
            });
        let failures = health
            .failures
            .iter()
            .filter(|(kind, _)| matches!(kind, Failure::Reset | Failure::ConnectRefused))
            .map(|&(kind, n)| (kind.what().to_string(), n));
        let kinds: Vec<(String, u64)> = statuses.chain(failures).collect();
        let total: u64 = kinds.iter().map(|k| k.1).sum();
        let (largest, most) = kinds.into_iter().max_by_key(|k| k.1)?;
        let attempts = health.attempts as f64;
        (total > 0).then(|| Refused {
            largest,
            largest_share: most as f64 / attempts,
            share: total as f64 / attempts,
            error_share: health.error_share,
        })
    }

    /// Whether refusals are most of the errors and at least [`REFUSED_LIMIT`] of the
    /// requests: then they, not a resource, bound the run.
    pub fn binds(&self) -> bool {
        self.share >= REFUSED_LIMIT && self.share >= 0.5 * self.error_share
    }

    /// "503 Service Unavailable on 37 % of requests", with all refusals beside it when there
    /// were other kinds too.
    pub fn quoted(&self) -> String {
        let mut said = format!(
            "{} on {} of requests",
            self.largest,
            pct_brief(self.largest_share)
        );
        if self.share > self.largest_share * 1.0001 {
            said += &format!(" (refusals of every kind {})", pct_brief(self.share));
        }
        said
    }
}

/// A verdict: what bounds the run and the sentence that says so, with its figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// The rule that fired.
    pub bound: Bound,
    /// One sentence quoting the figure and the limit it was compared with.
    pub reading: String,
}

/// The TIME_WAIT sockets a run's own connections can have left: a socket lingers
/// [`TIME_WAIT_S`], so at most the connections of the last [`TIME_WAIT_S`] of the run, and
/// never more than were counted (`measured`, the port's or the host's count at its most,
/// which also holds what earlier runs left). None when nothing was counted.
pub fn own_time_wait(measured: Option<f64>, connects: f64, duration_s: f64) -> Option<f64> {
    let measured = measured?;
    let lingering = if duration_s > TIME_WAIT_S {
        connects * TIME_WAIT_S / duration_s
    } else {
        connects
    };
    Some(measured.min(lingering.max(0.0)))
}

/// Names what bounds the run described by `e`: the first rule, in order of evidence, whose
/// figure passes its limit; when none does, latency or (open loop) the offered rate.
pub fn judge(e: &Evidence) -> Verdict {
    const RULES: [fn(&Evidence) -> Option<Verdict>; 7] = [
        rules::server_cpu,
        rules::generator,
        rules::refused,
        rules::machine_cpu,
        rules::devices,
        rules::ports,
        rules::accept_queue,
    ];
    RULES
        .iter()
        .find_map(|rule| rule(e))
        .unwrap_or_else(|| rules::unbound(e))
}

pub mod evidence;
pub mod os_figures;
mod rules;
#[cfg(test)]
mod tests;

/// A [`Bound`] kept as its label ("machine CPU"), as probe.json and step.json always kept it:
/// `#[serde(with = "crate::as_label")]`.
pub mod as_label {
    use serde::{Deserialize, Deserializer, Serializer};

    use super::Bound;

    /// Writes the bound's label.
    pub fn serialize<S: Serializer>(bound: &Bound, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(bound.label())
    }

    /// Reads a label back; one webscope never wrote is an error that quotes it.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Bound, D::Error> {
        let label = String::deserialize(d)?;
        Bound::from_label(&label).ok_or_else(|| {
            serde::de::Error::custom(format!("{label:?} is no bound webscope names"))
        })
    }
}
