//! What bounds a run's throughput, named from measurements of the whole machine and quoted
//! with the figure it rests on.
//!
//! The rules are tried in order of evidence: the server at its CPU limit, which is the least
//! of its busy threads and the CPUs it may use, judged in sum and for its busiest thread (one
//! thread never uses more than one core, so nginx with one worker on two CPUs saturates at
//! one); the generator at its CPU limit, or short of its open-loop rate by more than
//! [`webscope_load::NOT_SENT_LIMIT`] (then the run measures the generator); the
//! machine's CPUs busy, softirq included (loopback TCP is kernel work that neither process is
//! charged for); a network interface or disk at capacity; ephemeral ports or TIME_WAIT near
//! their limit, counting the sockets the run's own connections left (never the host's
//! leftover from an earlier run); the accept queue overflowing; otherwise latency, by
//! Little's law. The first rule whose figure passes its threshold is the verdict; the
//! thresholds are constants here, so a verdict can always be traced to the number and the
//! limit it was compared with.
//! (About 600 lines: half are the tests, one per rule, beside the thresholds they check.)

use serde::{Deserialize, Serialize};

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

/// Accept-queue overflows per second (mean over the run) from which the queue binds: a
/// single overflow in a run is a blip, one a second is clients waiting a SYN retransmit.
pub const OVERFLOWS_LIMIT: f64 = 1.0;

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
    /// Connections are dropped from a full accept queue.
    AcceptQueue,
    /// No resource is at its limit: the clients' round trips bound throughput (closed loop),
    /// or the server answered less than an open loop offered while waiting on something the
    /// lab does not measure.
    Latency,
    /// Open loop: no resource is at its limit and the server answered what was offered; the
    /// offered rate is all that bounds the run.
    Offered,
}

impl Bound {
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
    /// Open loop: how the run fell short of its rate, when it did (load's own rule).
    pub missed_rate: Option<webscope_load::MissedRate>,
}

/// A verdict: what bounds the run and the sentence that says so, with its figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// The rule that fired.
    pub bound: Bound,
    /// One sentence quoting the figure and the limit it was compared with.
    pub reading: String,
}

fn plural(n: f64) -> &'static str {
    if (n - 1.0).abs() < 1e-9 {
        ""
    } else {
        "s"
    }
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

/// The server's CPU limit: the least of its active threads and the CPUs it may use.
fn server_limit(e: &Evidence) -> Option<f64> {
    let cpus = e.server_cpus.filter(|c| *c > 0.0)?;
    Some(
        e.server_threads
            .filter(|t| *t >= 1.0)
            .map_or(cpus, |t| t.min(cpus)),
    )
}

/// The server-CPU rule: in sum against [`server_limit`], then its busiest thread, which never
/// sleeps when it is the limit.
fn server_cpu(e: &Evidence) -> Option<String> {
    let processes = e.server_processes.as_deref().unwrap_or("its processes");
    if let (Some(busy), Some(cpus), Some(limit)) =
        (e.server_busy_cores, e.server_cpus, server_limit(e))
    {
        if busy >= CPU_LIMIT * limit {
            let threads = if limit < cpus {
                format!(
                    " (its {limit:.0} busy thread{} on {cpus:.0} CPU{})",
                    plural(limit),
                    plural(cpus)
                )
            } else {
                String::new()
            };
            return Some(format!(
                "the server's processes are CPU-bound: {busy:.2} of the {limit:.0} core{} they may use{threads} ({processes}; limit {:.0} %)",
                plural(limit),
                100.0 * CPU_LIMIT
            ));
        }
    }
    let (name, run, wait) = e.server_busiest_thread.as_ref()?;
    // Said as the sum rule says it (cores of the limit, the processes), then the thread.
    let used = match (e.server_busy_cores, server_limit(e)) {
        (Some(busy), Some(limit)) => format!(
            "{busy:.2} of the {limit:.0} core{} they may use, and ",
            plural(limit)
        ),
        _ => String::new(),
    };
    (run + wait >= CPU_LIMIT && *run >= THREAD_RUN_LIMIT).then(|| {
        format!(
            "the server's processes are CPU-bound: {used}their busiest thread ({name}) never sleeps: it ran {:.0} % of the run and waited for a CPU {:.0} %, and one thread uses at most one core ({processes}; limit {:.0} % together)",
            100.0 * run,
            100.0 * wait,
            100.0 * CPU_LIMIT
        )
    })
}

/// Names what bounds the run described by `e`.
pub fn judge(e: &Evidence) -> Verdict {
    let verdict = |bound, reading: String| Verdict { bound, reading };
    if let Some(reading) = server_cpu(e) {
        return verdict(Bound::ServerCpu, reading);
    }
    if e.generator_busy >= CPU_LIMIT {
        return verdict(
            Bound::Generator,
            format!(
                "the load generator's busiest thread is {:.0} % busy (limit {:.0} %): this run measures the generator, not the server",
                100.0 * e.generator_busy,
                100.0 * CPU_LIMIT
            ),
        );
    }
    if e.generator_busy_or_waiting >= CPU_LIMIT {
        return verdict(
            Bound::Generator,
            format!(
                "the load generator's thread never waited for the server: it ran {:.0} % of the run and waited for a CPU {:.0} % (limit {:.0} % together); another process takes part of its CPU, so this run measures the generator, not the server",
                100.0 * e.generator_busy,
                100.0 * (e.generator_busy_or_waiting - e.generator_busy).max(0.0),
                100.0 * CPU_LIMIT
            ),
        );
    }
    if let Some(m) = &e.missed_rate {
        return verdict(
            Bound::Generator,
            format!(
                "the load generator did not keep its open-loop rate: {:.0} req/s asked, {:.0} sent; {:.1} % of the requests due were never sent, no connection being free in time (limit {:.0} %): this run measures the generator's connections, not the server at the rate asked",
                m.asked,
                m.sent,
                100.0 * m.not_sent_share,
                100.0 * webscope_load::NOT_SENT_LIMIT
            ),
        );
    }
    for (host, shares) in [
        ("server's", e.server_host),
        ("generator's", e.generator_host),
    ] {
        let Some(c) = shares else { continue };
        if c.busy >= 100.0 * MACHINE_LIMIT {
            let host = if e.generator_host.is_none() { "" } else { host };
            return verdict(
                Bound::MachineCpu,
                format!(
                    "the {host}{}machine's CPUs are {:.0} % busy (user {:.0}, system {:.0}, softirq {:.0}; limit {:.0} %): {}",
                    if host.is_empty() { "" } else { " " },
                    c.busy,
                    c.user,
                    c.system,
                    c.softirq,
                    100.0 * MACHINE_LIMIT,
                    // The cause the shares show: kernel work, or user time (other processes
                    // on a shared machine, or the two processes' own code).
                    if c.system + c.softirq >= c.user {
                        "kernel work that neither process is charged for (loopback TCP runs in softirq) takes what the processes leave"
                    } else {
                        "user time takes most of them (other processes on the machine, or the server's and the generator's own code), so the run shares its CPUs"
                    }
                ),
            );
        }
    }
    if let Some((name, util)) = &e.net_util_pct {
        if *util >= 100.0 * DEVICE_LIMIT {
            return verdict(
                Bound::Network,
                format!(
                    "interface {name} runs at {util:.0} % of its line rate (limit {:.0} %)",
                    100.0 * DEVICE_LIMIT
                ),
            );
        }
    }
    if let Some(util) = e.disk_util_pct {
        if util >= 100.0 * DEVICE_LIMIT {
            return verdict(
                Bound::Disk,
                format!("the busiest disk is {util:.0} % utilised (limit {:.0} %): the file set does not fit in the page cache, or the access log waits", 100.0 * DEVICE_LIMIT),
            );
        }
    }
    if let Some(tw) = e.time_wait {
        if let Some(range) = e.port_range.filter(|r| *r > 0.0 && tw >= PORTS_LIMIT * r) {
            return verdict(
                Bound::Ports,
                format!(
                    "this run's {:.0} connections in {:.0} s left {tw:.0} sockets in TIME_WAIT against {range:.0} ephemeral ports ({:.0} %, limit {:.0} %: connect() takes even ports first, so past half the range every connection searches for a port); keep-alive, a wider net.ipv4.ip_local_port_range or more client addresses would lift it",
                    e.connects,
                    e.duration_s,
                    100.0 * tw / range,
                    100.0 * PORTS_LIMIT
                ),
            );
        }
        if let Some(buckets) = e
            .tw_buckets
            .filter(|b| *b > 0.0 && tw >= TW_BUCKETS_LIMIT * b)
        {
            return verdict(
                Bound::Ports,
                format!(
                    "this run's connections left {tw:.0} sockets in TIME_WAIT against net.ipv4.tcp_max_tw_buckets = {buckets:.0} ({:.0} %): the kernel is destroying TIME_WAIT sockets early",
                    100.0 * tw / buckets
                ),
            );
        }
    }
    if let Some(overflows) = e.listen_overflows_per_s.filter(|o| *o >= OVERFLOWS_LIMIT) {
        return verdict(
            Bound::AcceptQueue,
            format!(
                "the accept queue overflowed {overflows:.0} times a second (ListenOverflows): the server accepts too slowly, or its backlog is too small"
            ),
        );
    }
    let server = match (e.server_busy_cores, server_limit(e)) {
        (Some(b), Some(c)) => format!(
            "server {:.0} % of its {c:.0} core{}",
            100.0 * b / c,
            plural(c)
        ),
        _ => "server CPU not measured".into(),
    };
    let machine = e
        .server_host
        .map_or(String::new(), |c| format!(", CPUs {:.0} % busy", c.busy));
    if let Some(offered) = e.offered_rps {
        return open_loop(e, offered, &server, &machine);
    }
    // Little's law for a closed loop without think time: X = N / R.
    let little = if e.mean_ms > 0.0 {
        format!(
            "; Little's law: {:.0} client{} / {:.2} ms = {:.0} requests/s (measured {:.0})",
            e.clients,
            plural(e.clients),
            e.mean_ms,
            1000.0 * e.clients / e.mean_ms,
            e.goodput_rps
        )
    } else {
        String::new()
    };
    verdict(
        Bound::Latency,
        format!(
            "no resource is at its limit ({server}, generator {:.0} %{machine}): the clients' round trips bound throughput{little}{MORE_CLIENTS}",
            100.0 * e.generator_busy
        ),
    )
}

/// Share of the offered rate answered from which an open-loop run kept up with it.
pub const KEPT_UP: f64 = 0.97;

/// No resource at its limit in an open loop: the offered rate bounds the run when the server
/// answered it; otherwise the server waits on something the lab does not measure (the
/// clients cannot be, as they do not wait for answers before sending).
fn open_loop(e: &Evidence, offered: f64, server: &str, machine: &str) -> Verdict {
    let resources = format!(
        "{server}, generator {:.0} %{machine}",
        100.0 * e.generator_busy
    );
    if e.goodput_rps >= KEPT_UP * offered {
        return Verdict {
            bound: Bound::Offered,
            reading:
            format!(
                "no resource is at its limit ({resources}): the offered rate bounds throughput (the server answered {:.0} of the {offered:.0} req/s asked, at a mean of {:.2} ms)",
                e.goodput_rps, e.mean_ms
            ),
        };
    }
    Verdict {
        bound: Bound::Latency,
        reading: format!(
            "no resource the lab measures is at its limit ({resources}), yet the server answered {:.0} of the {offered:.0} req/s offered, at a mean of {:.1} ms: it waits on something the lab does not measure (too few threads or connections, a lock, a backend, a rate limit)",
            e.goodput_rps, e.mean_ms
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The embedded quick lab of the issue: server 45 % of its core, generator 71 %, the
    /// machine's CPUs 87 % busy, 14 000 sockets in TIME_WAIT of a 28 232-port range.
    fn issue_run() -> Evidence {
        Evidence {
            clients: 5.0,
            goodput_rps: 16824.0,
            mean_ms: 0.29,
            server_busy_cores: Some(0.45),
            server_cpus: Some(1.0),
            server_processes: Some("1 process: webscope".into()),
            generator_busy: 0.71,
            server_host: Some(CpuShares {
                busy: 87.0,
                user: 9.0,
                system: 48.0,
                softirq: 30.0,
            }),
            time_wait: Some(14_000.0),
            connects: 50_472.0,
            duration_s: 3.0,
            port_range: Some(28_232.0),
            tw_buckets: Some(131_072.0),
            ..Evidence::default()
        }
    }

    #[test]
    fn the_issues_run_is_bound_by_the_machine_not_latency() {
        let v = judge(&issue_run());
        assert_eq!(v.bound, Bound::MachineCpu, "{}", v.reading);
        assert!(
            v.reading.contains("87 % busy") && v.reading.contains("softirq 30"),
            "{}",
            v.reading
        );
    }

    #[test]
    fn each_rule_fires_in_order_and_quotes_its_figure() {
        let mut e = issue_run();
        e.server_busy_cores = Some(0.97);
        let v = judge(&e);
        assert_eq!(v.bound, Bound::ServerCpu);
        assert!(v.reading.contains("0.97 of the 1 core"), "{}", v.reading);

        let mut e = issue_run();
        e.generator_busy = 0.96;
        let v = judge(&e);
        assert_eq!(v.bound, Bound::Generator);
        assert!(v.reading.contains("96 % busy") && v.reading.contains("measures the generator"));

        let mut e = issue_run();
        e.generator_busy_or_waiting = 0.93;
        let v = judge(&e);
        assert_eq!(v.bound, Bound::Generator, "{}", v.reading);
        assert!(
            v.reading.contains("ran 71 %") && v.reading.contains("waited for a CPU 22 %"),
            "{}",
            v.reading
        );

        let mut e = issue_run();
        e.server_host = Some(CpuShares {
            busy: 60.0,
            ..CpuShares::default()
        });
        e.net_util_pct = Some(("eth0".into(), 95.0));
        assert_eq!(judge(&e).bound, Bound::Network);
        // A machine busy in user space is not said to be busy with kernel work.
        let mut busy = issue_run();
        busy.server_host = Some(CpuShares {
            busy: 98.0,
            user: 87.0,
            system: 9.0,
            softirq: 2.0,
        });
        let v = judge(&busy);
        assert_eq!(v.bound, Bound::MachineCpu);
        assert!(
            v.reading.contains("user time takes most") && !v.reading.contains("kernel work"),
            "{}",
            v.reading
        );
        e.net_util_pct = Some(("eth0".into(), 40.0));
        e.disk_util_pct = Some(97.0);
        let v = judge(&e);
        assert_eq!(v.bound, Bound::Disk);
        assert!(v.reading.contains("97 %"));

        e.disk_util_pct = Some(3.0);
        let v = judge(&e);
        assert_eq!(
            v.bound,
            Bound::Ports,
            "14 000 of 28 232 is past half the range"
        );
        assert!(
            v.reading.contains("14000 sockets") && v.reading.contains("28232"),
            "{}",
            v.reading
        );

        e.time_wait = Some(120_000.0);
        e.port_range = None;
        let v = judge(&e);
        assert_eq!(v.bound, Bound::Ports);
        assert!(
            v.reading.contains("tcp_max_tw_buckets = 131072"),
            "{}",
            v.reading
        );

        e.time_wait = Some(100.0);
        e.listen_overflows_per_s = Some(250.0);
        let v = judge(&e);
        assert_eq!(v.bound, Bound::AcceptQueue);
        assert!(v.reading.contains("250 times a second"));

        e.listen_overflows_per_s = Some(0.5);
        let v = judge(&e);
        assert_eq!(v.bound, Bound::Latency);
        assert!(
            v.reading.contains("server 45 % of its 1 core")
                && v.reading.contains("5 clients / 0.29 ms = 17241"),
            "{}",
            v.reading
        );
    }

    /// #27: nginx with worker_processes 1, unpinned on 2 CPUs, over TLS: the worker ran
    /// 87.6 % and waited 5.1 %. In sum the server used 0.88 of 2 cores, but one thread is
    /// its limit.
    #[test]
    fn one_busy_thread_is_the_servers_limit_whatever_the_cpus() {
        let e = Evidence {
            clients: 4.0,
            goodput_rps: 9000.0,
            mean_ms: 0.44,
            server_busy_cores: Some(0.88),
            server_cpus: Some(2.0),
            server_processes: Some("2 processes: nginx".into()),
            server_threads: Some(1.0),
            server_busiest_thread: Some(("nginx".into(), 0.876, 0.051)),
            generator_busy: 0.6,
            ..Evidence::default()
        };
        let expect = |e: &Evidence, bound: Bound, says: &[&str]| {
            let v = judge(e);
            assert_eq!(v.bound, bound, "{}", v.reading);
            assert!(says.iter().all(|s| v.reading.contains(s)), "{}", v.reading);
        };
        expect(&e, Bound::ServerCpu, &["ran 88 %", "waited for a CPU 5 %"]);
        // The sum alone is judged against the one thread, not the two CPUs.
        let e = Evidence {
            server_busy_cores: Some(0.93),
            server_busiest_thread: Some(("nginx".into(), 0.85, 0.0)),
            ..e
        };
        expect(&e, Bound::ServerCpu, &["0.93 of the 1 core"]);
        // A thread that sleeps half the run is no limit.
        let idle = Evidence {
            server_busy_cores: Some(0.5),
            server_busiest_thread: Some(("nginx".into(), 0.5, 0.0)),
            ..e
        };
        expect(&idle, Bound::Latency, &["server 50 % of its 1 core"]);
        // A thread held back by another on its CPU (runs 45 %, waits 48 %) is not the limit.
        let shared = Evidence {
            server_busiest_thread: Some(("webscope-w0".into(), 0.45, 0.48)),
            ..idle
        };
        expect(&shared, Bound::Latency, &["server 50 % of its 1 core"]);
    }

    /// #27: a keep-alive run's 88 connects leave at most 88 sockets in TIME_WAIT, whatever
    /// the port held from an earlier lab.
    #[test]
    fn a_run_owns_no_more_time_wait_than_its_connections() {
        assert_eq!(own_time_wait(Some(16_424.0), 88.0, 2.0), Some(88.0));
        assert_eq!(own_time_wait(Some(9_000.0), 26_538.0, 3.0), Some(9_000.0));
        // Past a minute only the last minute's connections still linger.
        assert_eq!(
            own_time_wait(Some(50_000.0), 120_000.0, 120.0),
            Some(50_000.0)
        );
        assert_eq!(
            own_time_wait(Some(80_000.0), 120_000.0, 120.0),
            Some(60_000.0)
        );
        assert_eq!(own_time_wait(None, 88.0, 2.0), None);
    }

    #[test]
    fn a_remote_generator_host_is_named_and_unknowns_do_not_fire() {
        let e = Evidence {
            clients: 10.0,
            goodput_rps: 1000.0,
            mean_ms: 10.0,
            generator_busy: 0.5,
            server_host: Some(CpuShares {
                busy: 20.0,
                ..CpuShares::default()
            }),
            generator_host: Some(CpuShares {
                busy: 92.0,
                ..CpuShares::default()
            }),
            ..Evidence::default()
        };
        let v = judge(&e);
        assert_eq!(v.bound, Bound::MachineCpu);
        assert!(v.reading.contains("generator's machine"), "{}", v.reading);
        let unknown = Evidence {
            clients: 1.0,
            goodput_rps: 100.0,
            mean_ms: 10.0,
            ..Evidence::default()
        };
        let v = judge(&unknown);
        assert_eq!(v.bound, Bound::Latency);
        assert!(
            v.reading.contains("server CPU not measured"),
            "{}",
            v.reading
        );
    }

    #[test]
    fn an_open_loop_with_nothing_at_its_limit_is_bound_by_its_rate_or_by_what_it_waits_on() {
        let quiet = |goodput_rps: f64| Evidence {
            clients: 3.0,
            offered_rps: Some(100.0),
            goodput_rps,
            mean_ms: 40.0,
            server_busy_cores: Some(0.03),
            server_cpus: Some(1.0),
            generator_busy: 0.03,
            ..Evidence::default()
        };
        // It answered what was offered: the rate is the bound, and no clients are spoken of.
        let v = judge(&quiet(99.0));
        assert_eq!(v.bound, Bound::Offered, "{}", v.reading);
        assert!(
            v.reading.contains("99 of the 100 req/s asked"),
            "{}",
            v.reading
        );
        assert!(!v.reading.contains("client"), "{}", v.reading);
        // It answered less, with every measured resource idle: something unmeasured.
        let v = judge(&quiet(80.0));
        assert_eq!(v.bound, Bound::Latency, "{}", v.reading);
        assert!(
            v.reading.contains("80 of the 100 req/s offered"),
            "{}",
            v.reading
        );
        assert!(!v.reading.contains("Little"), "{}", v.reading);
        // The same run in a closed loop keeps Little's law.
        let closed = Evidence {
            offered_rps: None,
            ..quiet(80.0)
        };
        assert!(judge(&closed).reading.contains("Little's law"));
    }
}
