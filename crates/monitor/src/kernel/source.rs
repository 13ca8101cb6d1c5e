//! The kernel module as a monitor source (with the `kernel` feature): at each sample, the
//! program's sums since the previous one become rows (`kernel`, `kernel_states`, `runq`), and
//! at the end the run's figures ([`KernelSummary`]).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use hdrhistogram::Histogram;

use super::groups::{listen_drops, KERNEL, KERNEL_STATES, RUNQ};
use super::hlog::{
    accept_wait_tag, lifetime_syn_tag, lifetime_tag, time_wait_tag, KernelLog, RUNQ_TAG,
};
use super::layout::{to_hdr, Counter, RUNQ_MISSED, RUNQ_WAITS};
use super::probe::{Probe, Reading};
use super::summary::{KernelSummary, Latency, PortFigures, Retransmitting, RunQueue};
use crate::sources::{Ctx, Source};
use crate::table::{GroupRows, Row};
use crate::tcp::{SockDiag, TcpState};

/// How often the set of processes whose threads are timed is looked up again (it follows
/// children and a server that restarts); a lookup reads every `/proc/PID/stat`.
const PIDS_EVERY: Duration = Duration::from_secs(1);

/// The kernel source: the loaded program and the previous reading.
pub struct Kernel {
    probe: Probe,
    ports: Vec<u16>,
    pids: Vec<u32>,
    children: bool,
    tgids: Vec<u32>,
    tgids_at: Instant,
    diag: Option<SockDiag>,
    first: Reading,
    last: Reading,
    drops_first: Vec<Option<u64>>,
    drops_last: Vec<Option<u64>>,
    /// The run's connections that retransmitted most, most first.
    worst: Vec<Retransmitting>,
    /// Hooks detached once the server showed which way it accepts, and why.
    detached: Vec<String>,
    /// The interval log (`kernel.hlog`), with an output directory; dropped after a failed
    /// write (said once in a note).
    log: Option<KernelLog>,
    /// When the log's base time was, and how long after it `last` was read.
    log_began: Instant,
    last_at: Duration,
}

/// Connections seen leaving the accept queue one way, none the other, before the hook of the
/// other way is detached (it costs every system call, or every receive, on the machine).
const ACCEPTS_TO_DECIDE: u64 = 20;

impl Kernel {
    /// Loads the program for `ports`, timing the run-queue waits of `pids` (and with
    /// `children` their descendants; with no pids, of the processes holding the ports'
    /// listeners). Err: one line saying why it cannot load here.
    pub fn start(ports: &[u16], pids: &[u32], children: bool) -> Result<Kernel, String> {
        let probe = Probe::load(ports)?;
        let first = probe.read();
        let mut diag = SockDiag::open().ok();
        let drops_first = drops(&mut diag, ports);
        let mut kernel = Kernel {
            probe,
            ports: ports.to_vec(),
            pids: pids.to_vec(),
            children,
            tgids: Vec::new(),
            tgids_at: Instant::now(),
            diag,
            last: first.clone(),
            first,
            drops_last: drops_first.clone(),
            drops_first,
            worst: Vec::new(),
            detached: Vec::new(),
            log: None,
            log_began: Instant::now(),
            last_at: Duration::ZERO,
        };
        kernel.refresh_tgids();
        Ok(kernel)
    }

    /// Writes each interval's histograms to the interval log at `path` from now on (see
    /// [`super::hlog`]). Err: one line saying why it cannot be created.
    pub fn log_to(&mut self, path: &Path) -> Result<(), String> {
        let log = KernelLog::create(path, SystemTime::now())?;
        // The log's intervals start from the reading the run's figures start from.
        self.log = Some(log);
        self.log_began = Instant::now();
        self.last_at = Duration::ZERO;
        Ok(())
    }

    /// The histograms of the interval from reading `a` to reading `b`, tagged for the log.
    fn interval_figures(&self, a: &Reading, b: &Reading) -> Vec<(String, Histogram<u64>)> {
        let mut figures = Vec::new();
        for (i, &port) in self.ports.iter().enumerate() {
            let (a, b) = (&a.ports[i], &b.ports[i]);
            figures.push((
                accept_wait_tag(port),
                to_hdr(&diff(&b.accept_wait, &a.accept_wait)),
            ));
            figures.push((lifetime_tag(port), to_hdr(&diff(&b.lifetime, &a.lifetime))));
            figures.push((
                lifetime_syn_tag(port),
                to_hdr(&diff(&b.lifetime_syn, &a.lifetime_syn)),
            ));
            figures.push((
                time_wait_tag(port),
                to_hdr(&diff(&b.time_wait, &a.time_wait)),
            ));
        }
        if !self.tgids.is_empty() {
            figures.push((RUNQ_TAG.to_string(), to_hdr(&diff(&b.runq, &a.runq))));
        }
        figures
    }

    /// Logs the interval from the last reading to now, its `figures`; `Err` (one line) once,
    /// when a write fails, after which the log is dropped.
    fn log_interval(&mut self, figures: Vec<(String, Histogram<u64>)>) -> Result<(), String> {
        let at = self.log_began.elapsed();
        let Some(log) = self.log.as_mut() else {
            return Ok(());
        };
        let result = log.write(self.last_at, at.saturating_sub(self.last_at), &figures);
        self.last_at = at;
        if let Err(why) = result {
            self.log = None;
            return Err(format!("kernel.hlog no longer written: {why}"));
        }
        Ok(())
    }

    /// Hooks that would not attach, each with why.
    pub fn unattached(&self) -> &[String] {
        &self.probe.unattached
    }

    /// Once one way of accepting has shown itself and the other not at all, detaches the
    /// other's hook: an io_uring server never returns from accept(), so the hook on every
    /// system call's return costs and finds nothing; a server that accepts by system call
    /// has no use for the hook on every receive.
    fn settle_accept_hooks(&mut self, now: &Reading) {
        if !self.detached.is_empty() {
            return;
        }
        let total = |which: Counter| -> u64 {
            now.ports
                .iter()
                .zip(&self.first.ports)
                .map(|(b, a)| b.counters[which as usize].wrapping_sub(a.counters[which as usize]))
                .sum()
        };
        let (by_syscall, by_read) = (
            total(Counter::AcceptedSyscall),
            total(Counter::AcceptedRead),
        );
        let (hook, why) = if by_syscall == 0 && by_read >= ACCEPTS_TO_DECIDE {
            ("sys_exit", format!("sys_exit (accept()'s return): the first {by_read} accepts were seen at first reads only (io_uring)"))
        } else if by_read == 0 && by_syscall >= ACCEPTS_TO_DECIDE {
            ("sock_recv_length", format!("sock_recv_length (first reads): the first {by_syscall} accepts were all seen at accept()'s return"))
        } else {
            return;
        };
        if self.probe.detach(hook) {
            self.detached.push(why);
        }
    }

    /// Takes the connections that closed having retransmitted since the last call into the
    /// run's worst.
    fn collect_retransmitters(&mut self) {
        let more = self.probe.retransmitters().into_iter().filter_map(|r| {
            // The slot is the program's; a watched port, so its own.
            self.ports.get(r.slot)?;
            Some(Retransmitting {
                local: r.local,
                peer: r.peer,
                retrans: u64::from(r.retrans),
            })
        });
        let more: Vec<Retransmitting> = more.collect();
        Retransmitting::keep_worst(&mut self.worst, more);
    }

    fn refresh_tgids(&mut self) {
        let mut tgids: Vec<u32> = if self.pids.is_empty() {
            self.ports
                .iter()
                .filter_map(|p| crate::procs::listeners(*p).ok())
                .flatten()
                .map(|p| p.pid)
                .collect()
        } else if self.children {
            crate::procs::tree(&self.pids)
                .into_iter()
                .map(|p| p.pid)
                .collect()
        } else {
            self.pids.clone()
        };
        tgids.sort_unstable();
        tgids.dedup();
        if tgids != self.tgids {
            self.probe.set_tgids(&tgids);
            self.tgids = tgids;
        }
        self.tgids_at = Instant::now();
    }

    /// The run's figures: everything summed since the start. What came after the last
    /// sample goes to the interval log first (when there is any), so that its intervals add
    /// up to these figures.
    pub fn summary(&mut self) -> KernelSummary {
        self.collect_retransmitters();
        let now = self.probe.read();
        let trailing = self.interval_figures(&self.last, &now);
        if self.log.is_some() && trailing.iter().any(|(_, h)| !h.is_empty()) {
            // A failure here has no sample left to note it in; the log says up to where.
            let _ = self.log_interval(trailing);
        }
        let drops_now = self.drops_last.clone();
        let ports = self
            .ports
            .iter()
            .enumerate()
            .map(|(i, &port)| {
                let (a, b) = (&self.first.ports[i], &now.ports[i]);
                let c = |which: Counter| {
                    b.counters[which as usize].wrapping_sub(a.counters[which as usize])
                };
                let transitions: BTreeMap<String, u64> = TcpState::ALL
                    .iter()
                    .map(|s| {
                        let n = if *s == TcpState::TimeWait {
                            c(Counter::TimeWait)
                        } else {
                            b.states[*s as usize].wrapping_sub(a.states[*s as usize])
                        };
                        (s.name().to_string(), n)
                    })
                    .collect();
                let retrans = to_hdr(&diff(&b.retrans_per_conn, &a.retrans_per_conn));
                PortFigures {
                    port,
                    established: c(Counter::Established),
                    accepted_syscall: c(Counter::AcceptedSyscall),
                    accepted_read: c(Counter::AcceptedRead),
                    closed: c(Counter::Closed),
                    closed_unseen: c(Counter::ClosedUnseen),
                    displaced: c(Counter::ConnDisplaced),
                    closed_waiting: c(Counter::ClosedWaiting),
                    time_wait: c(Counter::TimeWait),
                    time_wait_expired: c(Counter::TimeWaitExpired),
                    time_wait_cut: c(Counter::TimeWaitCut),
                    time_wait_reset: c(Counter::TimeWaitReset),
                    time_wait_fin_wait2: c(Counter::TimeWaitFinWait2),
                    time_in_time_wait: Latency::of(&to_hdr(&diff(&b.time_wait, &a.time_wait))),
                    retrans_segs: c(Counter::RetransSegs),
                    retransmissions: c(Counter::RetransEvents),
                    rtos: c(Counter::Rto),
                    synack_retrans: c(Counter::SynackRetrans),
                    overflows_ack: c(Counter::OverflowAck),
                    deferred_acks: c(Counter::DeferredAck),
                    listen_drops: listen_drops(
                        self.drops_first[i],
                        drops_now[i],
                        c(Counter::OverflowAck),
                        c(Counter::DeferredAck),
                    ),
                    conns_retransmitting: c(Counter::ConnsRetrans),
                    most_retrans_per_conn: if retrans.is_empty() { 0 } else { retrans.max() },
                    transitions,
                    accept_wait: Latency::of(&to_hdr(&diff(&b.accept_wait, &a.accept_wait))),
                    lifetime: Latency::of(&to_hdr(&diff(&b.lifetime, &a.lifetime))),
                    lifetime_from_syn: Latency::of(&to_hdr(&diff(
                        &b.lifetime_syn,
                        &a.lifetime_syn,
                    ))),
                }
            })
            .collect();
        let runq = to_hdr(&diff(&now.runq, &self.first.runq));
        let unlisted = now
            .ports
            .iter()
            .zip(&self.first.ports)
            .map(|(b, a)| {
                let i = Counter::RetransUnlisted as usize;
                b.counters[i].wrapping_sub(a.counters[i])
            })
            .sum();
        KernelSummary {
            most_retransmitting: self.worst.clone(),
            retransmitting_unlisted: unlisted,
            dequeue: "accept()/accept4() returning; for io_uring's accepts, the first receive"
                .into(),
            unattached: self.probe.unattached.clone(),
            detached: self.detached.clone(),
            ports,
            runq: RunQueue {
                pids: self.tgids.clone(),
                untimed: now.runq_counters[RUNQ_MISSED]
                    .wrapping_sub(self.first.runq_counters[RUNQ_MISSED]),
                wait: Latency::of(&runq),
            },
        }
    }
}

fn drops(diag: &mut Option<SockDiag>, ports: &[u16]) -> Vec<Option<u64>> {
    match diag.as_mut().map(|d| d.listen_drops(ports)) {
        Some(Ok(d)) => d,
        _ => vec![None; ports.len()],
    }
}

fn diff(b: &[u64], a: &[u64]) -> Vec<u64> {
    b.iter().zip(a).map(|(b, a)| b.wrapping_sub(*a)).collect()
}

fn ms(h: &Histogram<u64>, q: f64) -> f64 {
    if h.is_empty() {
        f64::NAN
    } else if q >= 1.0 {
        h.max() as f64 / 1e6
    } else {
        h.value_at_quantile(q) as f64 / 1e6
    }
}

impl Source for Kernel {
    fn name(&self) -> &'static str {
        "kernel"
    }

    fn sample(&mut self, ctx: &mut Ctx<'_>, out: &mut Vec<GroupRows>) -> Result<(), String> {
        if self.tgids_at.elapsed() >= PIDS_EVERY && (self.children || self.pids.is_empty()) {
            self.refresh_tgids();
        }
        self.collect_retransmitters();
        let now = self.probe.read();
        self.settle_accept_hooks(&now);
        let drops_now = drops(&mut self.diag, &self.ports);
        if ctx.dt <= 0.0 {
            // The baseline sample: `last` stays the first reading, which the run's figures
            // start from, so that the intervals add up to them.
            self.drops_last = drops_now;
            return Ok(());
        }
        let rate = |n: u64| n as f64 / ctx.dt;
        let mut kernel = Vec::new();
        let mut states = Vec::new();
        for (i, &port) in self.ports.iter().enumerate() {
            let (a, b) = (&self.last.ports[i], &now.ports[i]);
            let c = |which: Counter| {
                b.counters[which as usize].wrapping_sub(a.counters[which as usize])
            };
            let wait = to_hdr(&diff(&b.accept_wait, &a.accept_wait));
            let life = to_hdr(&diff(&b.lifetime, &a.lifetime));
            let life_syn = to_hdr(&diff(&b.lifetime_syn, &a.lifetime_syn));
            let tw = to_hdr(&diff(&b.time_wait, &a.time_wait));
            let dropped = listen_drops(
                self.drops_last[i],
                drops_now[i],
                c(Counter::OverflowAck),
                c(Counter::DeferredAck),
            );
            kernel.push(Row::new(
                [port.to_string()],
                vec![
                    rate(c(Counter::Established)),
                    rate(c(Counter::AcceptedSyscall) + c(Counter::AcceptedRead)),
                    ms(&wait, 0.5),
                    ms(&wait, 0.99),
                    ms(&wait, 1.0),
                    rate(c(Counter::Closed) + c(Counter::ClosedUnseen)),
                    ms(&life, 0.5),
                    ms(&life, 0.99),
                    ms(&life_syn, 0.5),
                    ms(&life_syn, 0.99),
                    rate(c(Counter::TimeWait)),
                    rate(
                        c(Counter::TimeWaitExpired)
                            + c(Counter::TimeWaitCut)
                            + c(Counter::TimeWaitReset),
                    ),
                    ms(&tw, 0.5),
                    ms(&tw, 1.0),
                    rate(c(Counter::ClosedWaiting)),
                    dropped.map_or(f64::NAN, rate),
                    rate(c(Counter::OverflowAck)),
                    rate(c(Counter::RetransSegs)),
                    rate(c(Counter::Rto)),
                    rate(c(Counter::SynackRetrans)),
                    rate(c(Counter::DeferredAck)),
                ],
            ));
            states.push(Row::new(
                [port.to_string()],
                TcpState::ALL
                    .iter()
                    .map(|s| {
                        rate(if *s == TcpState::TimeWait {
                            c(Counter::TimeWait)
                        } else {
                            b.states[*s as usize].wrapping_sub(a.states[*s as usize])
                        })
                    })
                    .collect(),
            ));
        }
        out.push(GroupRows {
            group: &KERNEL,
            rows: kernel,
        });
        out.push(GroupRows {
            group: &KERNEL_STATES,
            rows: states,
        });
        if !self.tgids.is_empty() {
            let runq = to_hdr(&diff(&now.runq, &self.last.runq));
            let waits =
                now.runq_counters[RUNQ_WAITS].wrapping_sub(self.last.runq_counters[RUNQ_WAITS]);
            out.push(GroupRows {
                group: &RUNQ,
                rows: vec![Row::new(
                    Vec::<String>::new(),
                    vec![rate(waits), ms(&runq, 0.5), ms(&runq, 0.99), ms(&runq, 1.0)],
                )],
            });
        }
        let logged = if self.log.is_some() {
            let figures = self.interval_figures(&self.last, &now);
            self.log_interval(figures)
        } else {
            Ok(())
        };
        self.last = now;
        // A listener that vanished keeps its last count, so the run's figure still spans it.
        for (last, now) in self.drops_last.iter_mut().zip(drops_now) {
            if now.is_some() {
                *last = now;
            }
        }
        logged
    }
}
