//! The rules [`super::judge`] tries, one function each: a rule returns its verdict when its
//! figure passes its limit, and None when it does not (or was not measured). The last,
//! [`unbound`], is what is said when no rule fired.

use webscope_report::human::{pct_brief, sig3};

use super::{
    Bound, Evidence, Verdict, ACCEPT_WAIT_MS, ACCEPT_WAIT_SHARE, CPU_LIMIT, DEVICE_LIMIT, KEPT_UP,
    MACHINE_LIMIT, MORE_CLIENTS, OVERFLOWS_LIMIT, PORTS_LIMIT, REFUSED_LIMIT, THREAD_RUN_LIMIT,
    TW_BUCKETS_LIMIT,
};

fn verdict(bound: Bound, reading: String) -> Option<Verdict> {
    Some(Verdict { bound, reading })
}

fn plural(n: f64) -> &'static str {
    if (n - 1.0).abs() < 1e-9 {
        ""
    } else {
        "s"
    }
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

/// The server's processes in sum against [`server_limit`], then their busiest thread, which
/// never sleeps when it is the limit.
pub(super) fn server_cpu(e: &Evidence) -> Option<Verdict> {
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
            return verdict(Bound::ServerCpu, format!(
                "the server's processes are CPU-bound: {busy:.2} of the {limit:.0} core{} they may use{threads} ({processes}; limit {})",
                plural(limit),
                pct_brief(CPU_LIMIT)
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
    if run + wait < CPU_LIMIT || *run < THREAD_RUN_LIMIT {
        return None;
    }
    verdict(Bound::ServerCpu, format!(
        "the server's processes are CPU-bound: {used}their busiest thread ({name}) never sleeps: it ran {} of the run and waited for a CPU {}, and one thread uses at most one core ({processes}; limit {} together)",
        pct_brief(*run),
        pct_brief(*wait),
        pct_brief(CPU_LIMIT)
    ))
}

/// The generator's busiest thread at its CPU limit, or kept from it by another process, or
/// short of its open-loop rate: then the run measures the generator.
pub(super) fn generator(e: &Evidence) -> Option<Verdict> {
    if e.generator_busy >= CPU_LIMIT {
        return verdict(
            Bound::Generator,
            format!(
                "the load generator's busiest thread is {} busy (limit {}): this run measures the generator, not the server",
                pct_brief(e.generator_busy),
                pct_brief(CPU_LIMIT)
            ),
        );
    }
    if e.generator_busy_or_waiting >= CPU_LIMIT {
        return verdict(
            Bound::Generator,
            format!(
                "the load generator's thread never waited for the server: it ran {} of the run and waited for a CPU {} (limit {} together); another process takes part of its CPU, so this run measures the generator, not the server",
                pct_brief(e.generator_busy),
                pct_brief((e.generator_busy_or_waiting - e.generator_busy).max(0.0)),
                pct_brief(CPU_LIMIT)
            ),
        );
    }
    let m = e.missed_rate.as_ref()?;
    verdict(
        Bound::Generator,
        format!(
            "the load generator did not keep its open-loop rate: {:.0} req/s asked, {:.0} sent; {} of the requests due were never sent, no connection being free in time (limit {}): this run measures the generator's connections, not the server at the rate asked",
            m.asked,
            m.sent,
            pct_brief(m.not_sent_share),
            pct_brief(webscope_load::NOT_SENT_LIMIT)
        ),
    )
}

/// The server refusing load: refusals ([`super::Refused`]) most of the run's errors and at
/// least [`REFUSED_LIMIT`] of its requests. The reading quotes what refused and how often,
/// beside the server's CPU, which a limit leaves idle.
pub(super) fn refused(e: &Evidence) -> Option<Verdict> {
    let r = e.refused.as_ref().filter(|r| r.binds())?;
    let offered = e
        .offered_rps
        .map_or(String::new(), |o| format!(" of the {o:.0} offered"));
    let server = match (e.server_busy_cores, server_limit(e)) {
        (Some(b), Some(c)) => format!(
            "; the server's CPU was {} of its {c:.0} core{}",
            pct_brief(b / c),
            plural(c)
        ),
        _ => String::new(),
    };
    verdict(
        Bound::Refused,
        format!(
            "the server refuses load beyond {:.0} req/s{offered}: {} (limit {}; a rate or connection limit, or load shedding){server}",
            e.goodput_rps,
            r.quoted(),
            pct_brief(REFUSED_LIMIT)
        ),
    )
}

/// The server's machine, then the generator's when it is another one, busy past
/// [`MACHINE_LIMIT`], with the cause their CPU shares show.
pub(super) fn machine_cpu(e: &Evidence) -> Option<Verdict> {
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
                    "the {host}{}machine's CPUs are {} busy (user {:.0}, system {:.0}, softirq {:.0}; limit {}): {}",
                    if host.is_empty() { "" } else { " " },
                    pct_brief(c.busy / 100.0),
                    c.user,
                    c.system,
                    c.softirq,
                    pct_brief(MACHINE_LIMIT),
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
    None
}

/// A network interface at its line rate, then a disk busy all the time.
pub(super) fn devices(e: &Evidence) -> Option<Verdict> {
    if let Some((name, util)) = &e.net_util_pct {
        if *util >= 100.0 * DEVICE_LIMIT {
            return verdict(
                Bound::Network,
                format!(
                    "interface {name} runs at {} of its line rate (limit {})",
                    pct_brief(util / 100.0),
                    pct_brief(DEVICE_LIMIT)
                ),
            );
        }
    }
    let util = e.disk_util_pct.filter(|u| *u >= 100.0 * DEVICE_LIMIT)?;
    verdict(
        Bound::Disk,
        format!("the busiest disk is {} utilised (limit {}): the file set does not fit in the page cache, or the access log waits", pct_brief(util / 100.0), pct_brief(DEVICE_LIMIT)),
    )
}

/// The run's own TIME_WAIT sockets against the ephemeral port range, then against
/// `tcp_max_tw_buckets`.
pub(super) fn ports(e: &Evidence) -> Option<Verdict> {
    let tw = e.time_wait?;
    if let Some(range) = e.port_range.filter(|r| *r > 0.0 && tw >= PORTS_LIMIT * r) {
        return verdict(
            Bound::Ports,
            format!(
                "this run's {:.0} connections in {:.0} s left {tw:.0} sockets in TIME_WAIT against {range:.0} ephemeral ports ({}, limit {}: connect() takes even ports first, so past half the range every connection searches for a port); keep-alive, a wider net.ipv4.ip_local_port_range or more client addresses would lift it",
                e.connects,
                e.duration_s,
                pct_brief(tw / range),
                pct_brief(PORTS_LIMIT)
            ),
        );
    }
    let buckets = e
        .tw_buckets
        .filter(|b| *b > 0.0 && tw >= TW_BUCKETS_LIMIT * b)?;
    verdict(
        Bound::Ports,
        format!(
            "this run's connections left {tw:.0} sockets in TIME_WAIT against net.ipv4.tcp_max_tw_buckets = {buckets:.0} ({}): the kernel is destroying TIME_WAIT sockets early",
            pct_brief(tw / buckets)
        ),
    )
}

/// The accept queue overflowing at least [`OVERFLOWS_LIMIT`] times a second; else its
/// connections waiting in it (the kernel module's figure) at least [`ACCEPT_WAIT_SHARE`] of
/// the mean response time, the p99 connection at least [`ACCEPT_WAIT_MS`]: connections
/// queued for the server, not the generator or the network.
pub(super) fn accept_queue(e: &Evidence) -> Option<Verdict> {
    if let Some(overflows) = e.listen_overflows_per_s.filter(|o| *o >= OVERFLOWS_LIMIT) {
        return verdict(
            Bound::AcceptQueue,
            format!(
                "the accept queue overflowed {overflows:.0} times a second (ListenOverflows): the server accepts too slowly, or its backlog is too small"
            ),
        );
    }
    let p99 = e.accept_wait_p99_ms.filter(|w| *w >= ACCEPT_WAIT_MS)?;
    let per_request = e.accept_wait_per_request_ms?;
    if e.mean_ms <= 0.0 || per_request < ACCEPT_WAIT_SHARE * e.mean_ms {
        return None;
    }
    verdict(
        Bound::AcceptQueue,
        format!(
            "connections waited {} ms in the listen queue at p99, {} of the mean response time (limit {}): the server accepts too slowly",
            sig3(p99),
            pct_brief(per_request / e.mean_ms),
            pct_brief(ACCEPT_WAIT_SHARE)
        ),
    )
}

/// No resource at its limit: the clients' round trips bound a closed loop (Little's law says
/// by how much); an open loop is read by [`open_loop`].
pub(super) fn unbound(e: &Evidence) -> Verdict {
    let server = match (e.server_busy_cores, server_limit(e)) {
        (Some(b), Some(c)) => format!(
            "server {} of its {c:.0} core{}",
            pct_brief(b / c),
            plural(c)
        ),
        _ => "server CPU not measured".into(),
    };
    let machine = e.server_host.map_or(String::new(), |c| {
        format!(", CPUs {} busy", pct_brief(c.busy / 100.0))
    });
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
    Verdict {
        bound: Bound::Latency,
        reading: format!(
            "no resource is at its limit ({server}, generator {}{machine}): the clients' round trips bound throughput{little}{MORE_CLIENTS}",
            pct_brief(e.generator_busy)
        ),
    }
}

/// No resource at its limit in an open loop: the offered rate bounds the run when the server
/// answered it; otherwise the server waits on something the lab does not measure (the
/// clients cannot be, as they do not wait for answers before sending).
fn open_loop(e: &Evidence, offered: f64, server: &str, machine: &str) -> Verdict {
    let resources = format!(
        "{server}, generator {}{machine}",
        pct_brief(e.generator_busy)
    );
    if e.goodput_rps >= KEPT_UP * offered {
        return Verdict {
            bound: Bound::Offered,
            reading: format!(
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
