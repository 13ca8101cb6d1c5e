//! Loading the BPF program, attaching its hooks, and reading its global data.
//!
//! Everything the kernel holds for a run (programs, maps, links) belongs to file descriptors
//! of this process and to nothing else: nothing is pinned in bpffs. Dropping the [`Probe`]
//! closes them, and so does the kernel when the process dies, however it dies, so a crash
//! or two monitors at once leave nothing behind (`bpftool prog` shows no `on_state` after).

use std::mem::MaybeUninit;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::ptr::{addr_of, addr_of_mut};
use std::sync::{Arc, Mutex};

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{Link, OpenObject, PrintLevel, RingBuffer, RingBufferBuilder};

use super::layout::{BUCKETS, COUNTERS, MAX_PORTS, MAX_TGIDS};
use super::skel::{types, WebscopeSkel, WebscopeSkelBuilder};

/// One port's figures as read: counters and histograms, cumulative since the load.
#[derive(Debug, Clone, PartialEq)]
pub struct PortReading {
    /// `port_stats.counters`, by [`super::layout::Counter`].
    pub counters: [u64; COUNTERS],
    /// Transitions by the state entered (the kernel's TCP state numbers).
    pub states: [u64; 16],
    /// Accept-queue wait, nanoseconds, by bucket.
    pub accept_wait: Vec<u64>,
    /// Lifetime, nanoseconds, by bucket.
    pub lifetime: Vec<u64>,
    /// Lifetime from the SYN (its SYN-ACK), nanoseconds, by bucket.
    pub lifetime_syn: Vec<u64>,
    /// Retransmits of each closed connection that had any, by bucket.
    pub retrans_per_conn: Vec<u64>,
    /// Time in TIME_WAIT, nanoseconds (whole milliseconds), by bucket.
    pub time_wait: Vec<u64>,
}

/// Everything the program has summed, cumulative since the load.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    /// One per watched port, in the order given.
    pub ports: Vec<PortReading>,
    /// Run-queue wait, nanoseconds, by bucket.
    pub runq: Vec<u64>,
    /// `runq_counters`.
    pub runq_counters: [u64; 4],
}

/// A connection that retransmitted, as it closed (`struct retransmitter`).
#[derive(Debug, Clone, PartialEq)]
pub struct Retransmitter {
    /// The watched port's slot (its index in the ports given).
    pub slot: usize,
    /// The server's side.
    pub local: SocketAddr,
    /// The peer's.
    pub peer: SocketAddr,
    /// Segments it sent again (its `total_retrans`, SYN-ACKs included).
    pub retrans: u32,
}

/// `struct retransmitter`'s size and fields' offsets (see the C program).
const RETRANSMITTER_LEN: usize = 48;
const AF_INET6: u16 = 10;

impl Retransmitter {
    /// Decodes one ring record; None if it is not one.
    fn decode(b: &[u8]) -> Option<Retransmitter> {
        if b.len() < RETRANSMITTER_LEN {
            return None;
        }
        let u16_at = |i: usize| u16::from_ne_bytes([b[i], b[i + 1]]);
        let ip = |at: usize, v6: bool| -> IpAddr {
            if v6 {
                let mut a = [0u8; 16];
                a.copy_from_slice(&b[at..at + 16]);
                IpAddr::V6(Ipv6Addr::from(a))
            } else {
                IpAddr::V4(Ipv4Addr::new(b[at], b[at + 1], b[at + 2], b[at + 3]))
            }
        };
        let v6 = u16_at(40) == AF_INET6;
        Some(Retransmitter {
            slot: usize::from(b[42]),
            local: SocketAddr::new(ip(0, v6), u16_at(36)),
            peer: SocketAddr::new(ip(16, v6), u16_at(38)),
            retrans: u32::from_ne_bytes([b[32], b[33], b[34], b[35]]),
        })
    }
}

/// The loaded, attached program.
pub struct Probe {
    // Declared first: unmapped and detached before the object they belong to.
    ring: Option<RingBuffer<'static>>,
    retransmitters: Arc<Mutex<Vec<Retransmitter>>>,
    links: Vec<(&'static str, Link)>,
    _skel: WebscopeSkel<'static>,
    bss: *mut types::bss,
    ports: usize,
    /// Hooks that would not attach, with why (the others still run).
    pub unattached: Vec<String>,
}

// SAFETY: the skeleton's object and the mapping of its global data are plain kernel
// resources (file descriptors and a shared mapping), not tied to the thread that made them;
// the Probe is used by one thread at a time (the monitor's), never shared.
unsafe impl Send for Probe {}

/// libbpf's last warnings, to say in one line why a load failed (libbpf would otherwise
/// print its whole verifier log to stderr).
static LIBBPF_LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn keep_libbpf_message(_level: PrintLevel, message: String) {
    // WEBSCOPE_BPF_LOG=1 shows libbpf's messages (the verifier's log on a failed load).
    if std::env::var_os("WEBSCOPE_BPF_LOG").is_some() {
        eprint!("{message}");
    }
    if let Ok(mut log) = LIBBPF_LOG.lock() {
        if log.len() >= 64 {
            log.remove(0);
        }
        log.push(message.trim_end().to_string());
    }
}

fn libbpf_says() -> String {
    let log = LIBBPF_LOG.lock().map(|mut l| std::mem::take(&mut *l));
    let lines = log.unwrap_or_default();
    // The most telling line is usually the last "libbpf:" one.
    lines
        .iter()
        .rev()
        .find(|l| l.starts_with("libbpf:"))
        .map(|l| l.trim_start_matches("libbpf: ").to_string())
        .unwrap_or_default()
}

/// Why the program cannot load here, found before trying, in one line.
pub fn precheck() -> Result<(), String> {
    if !std::path::Path::new("/sys/kernel/btf/vmlinux").exists() {
        return Err(
            "the kernel has no BTF (/sys/kernel/btf/vmlinux; CONFIG_DEBUG_INFO_BTF is off)".into(),
        );
    }
    if let Ok(lockdown) = std::fs::read_to_string("/sys/kernel/security/lockdown") {
        if lockdown.contains("[confidentiality]") {
            return Err(
                "the kernel is locked down (confidentiality): BPF may not read kernel memory"
                    .into(),
            );
        }
    }
    Ok(())
}

fn explain(what: &str, err: &libbpf_rs::Error) -> String {
    let detail = libbpf_says();
    let errno = err.kind();
    let hint = match errno {
        libbpf_rs::ErrorKind::PermissionDenied => {
            " (not permitted: needs root, or CAP_BPF and CAP_PERFMON)"
        }
        _ => "",
    };
    if detail.is_empty() {
        format!("{what}: {err}{hint}")
    } else {
        format!("{what}: {err}{hint}; libbpf: {detail}")
    }
}

impl Probe {
    /// Loads the program for `ports` (at most [`MAX_PORTS`]) and attaches every hook. An
    /// error is one line saying why.
    pub fn load(ports: &[u16]) -> Result<Probe, String> {
        precheck()?;
        if ports.len() > MAX_PORTS {
            return Err(format!(
                "watches at most {MAX_PORTS} ports, {} given",
                ports.len()
            ));
        }
        libbpf_rs::set_print(Some((PrintLevel::Warn, keep_libbpf_message)));
        // The skeleton borrows its object's storage for its whole life; the monitor keeps the
        // probe until it stops, so the storage (one pointer) is leaked rather than made
        // self-referential.
        let storage: &'static mut MaybeUninit<OpenObject> =
            Box::leak(Box::new(MaybeUninit::uninit()));
        let open = WebscopeSkelBuilder::default()
            .open(storage)
            .map_err(|e| explain("cannot open the BPF program", &e))?;
        let mut skel = open
            .load()
            .map_err(|e| explain("cannot load the BPF program", &e))?;
        let bss: *mut types::bss = match skel.maps.bss_data.as_deref_mut() {
            Some(bss) => bss,
            None => return Err("the BPF program's global data is not mapped".into()),
        };
        let tw_timer_fn = kernel_symbol(TW_TIMER_HANDLER);
        // SAFETY: `bss` points into the mapping the skeleton keeps for its life; the program
        // reads these fields, nothing else writes them.
        unsafe {
            for (i, port) in ports.iter().enumerate() {
                (*bss).port_slot[usize::from(*port)] = (i + 1) as u8;
            }
            (*bss).tw_timer_fn = tw_timer_fn.as_ref().map_or(0, |a| *a);
        }
        let progs = &skel.progs;
        let hooks = [
            ("inet_sock_set_state", &progs.on_state),
            ("sys_exit", &progs.on_sys_exit),
            ("sock_recv_length", &progs.on_recv),
            ("kfree_skb", &progs.on_drop),
            ("tcp_retransmit_skb", &progs.on_retransmit),
            ("tcp_cong_state_set", &progs.on_ca_state),
            ("tcp_retransmit_synack", &progs.on_synack),
            ("sched_switch", &progs.on_switch),
            ("timer_expire_entry", &progs.on_timer_fire),
        ];
        let mut links = Vec::new();
        let mut unattached = Vec::new();
        for (name, prog) in hooks {
            if name.starts_with("timer_") {
                if let Err(why) = &tw_timer_fn {
                    unattached.push(format!("{name}: {why}: no time in TIME_WAIT"));
                    continue;
                }
            }
            match prog.attach() {
                Ok(link) => links.push((name, link)),
                Err(e) => unattached.push(explain(name, &e)),
            }
        }
        if links.is_empty() {
            return Err(format!(
                "no hook would attach: {}",
                unattached.first().map_or("", String::as_str)
            ));
        }
        let retransmitters = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&retransmitters);
        let mut builder = RingBufferBuilder::new();
        let added = builder
            .add(&skel.maps.retransmitters, move |record: &[u8]| {
                if let (Some(r), Ok(mut sink)) = (Retransmitter::decode(record), sink.lock()) {
                    sink.push(r);
                }
                0
            })
            .map(|_| ());
        let ring = match added.and_then(|()| builder.build()) {
            Ok(ring) => Some(ring),
            Err(e) => {
                unattached.push(explain("the retransmitting connections' ring", &e));
                None
            }
        };
        Ok(Probe {
            ring,
            retransmitters,
            links,
            _skel: skel,
            bss,
            ports: ports.len(),
            unattached,
        })
    }

    /// Sets the processes whose threads' run-queue waits are timed (at most [`MAX_TGIDS`];
    /// none turns the timing off).
    pub fn set_tgids(&mut self, tgids: &[u32]) {
        let n = tgids.len().min(MAX_TGIDS);
        // SAFETY: as in `load`; the program reads `ntgids` entries, so the count is written
        // after them (a hook may see the old count with new entries, never past them).
        unsafe {
            let bss = self.bss;
            for (i, t) in tgids.iter().take(n).enumerate() {
                std::ptr::write_volatile(addr_of_mut!((*bss).tgids[i]), *t);
            }
            std::ptr::write_volatile(addr_of_mut!((*bss).ntgids), n as u32);
        }
    }

    /// Reads everything the program has summed so far.
    pub fn read(&self) -> Reading {
        let bss = self.bss;
        // SAFETY: the mapping lives as long as the skeleton, which `self` holds; the kernel
        // updates these u64s in place (aligned, so never torn), hence volatile reads.
        unsafe {
            let ports = (0..self.ports)
                .map(|i| {
                    let p = addr_of!((*bss).ports[i]);
                    PortReading {
                        counters: read_array(addr_of!((*p).counters)),
                        states: read_array(addr_of!((*p).states)),
                        accept_wait: read_vec(addr_of!((*p).accept_wait).cast(), BUCKETS),
                        lifetime: read_vec(addr_of!((*p).lifetime).cast(), BUCKETS),
                        lifetime_syn: read_vec(addr_of!((*p).lifetime_syn).cast(), BUCKETS),
                        retrans_per_conn: read_vec(addr_of!((*p).retrans_per_conn).cast(), BUCKETS),
                        time_wait: read_vec(addr_of!((*p).time_wait).cast(), BUCKETS),
                    }
                })
                .collect();
            Reading {
                ports,
                runq: read_vec(addr_of!((*bss).runq).cast(), BUCKETS),
                runq_counters: read_array(addr_of!((*bss).runq_counters)),
            }
        }
    }

    /// The connections that closed having retransmitted since the last call (at most what
    /// the ring holds between calls: 64 KiB, 1 365 of them).
    pub fn retransmitters(&mut self) -> Vec<Retransmitter> {
        if let Some(ring) = &self.ring {
            // Never blocks; a failure leaves the records for the next call.
            let _ = ring.consume();
        }
        self.retransmitters
            .lock()
            .map(|mut v| std::mem::take(&mut *v))
            .unwrap_or_default()
    }

    /// How many hooks are attached.
    pub fn attached(&self) -> usize {
        self.links.len()
    }

    /// Detaches the hook on tracepoint `name`; false if it was not attached.
    pub fn detach(&mut self, name: &str) -> bool {
        let before = self.links.len();
        self.links.retain(|(hook, _)| *hook != name);
        self.links.len() < before
    }
}

/// The function TIME_WAIT sockets' timers run: the timer hooks know them by it.
const TW_TIMER_HANDLER: &str = "tw_timer_handler";

/// A kernel function's address from `/proc/kallsyms` (read by line: 120 000 of them, some
/// 50 ms); Err: one line saying why not (absent, or hidden as 0 by kptr_restrict).
fn kernel_symbol(name: &str) -> Result<u64, String> {
    use std::io::BufRead;
    let file = std::fs::File::open("/proc/kallsyms")
        .map_err(|e| format!("cannot read /proc/kallsyms: {e}"))?;
    for line in std::io::BufReader::with_capacity(1 << 16, file).lines() {
        let line = line.map_err(|e| format!("cannot read /proc/kallsyms: {e}"))?;
        let mut fields = line.split_ascii_whitespace();
        let (Some(addr), Some(_kind), Some(sym)) = (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        if sym != name {
            continue;
        }
        return match u64::from_str_radix(addr, 16) {
            Ok(0) => Err(format!("{name}'s address is hidden (kernel.kptr_restrict)")),
            Ok(a) => Ok(a),
            Err(_) => Err(format!("{name}'s address in /proc/kallsyms is not hex")),
        };
    }
    Err(format!("{name} is not in /proc/kallsyms"))
}

/// # Safety
/// `src` must point to `N` readable, aligned u64s.
unsafe fn read_array<const N: usize>(src: *const [u64; N]) -> [u64; N] {
    let mut out = [0u64; N];
    let first = src.cast::<u64>();
    for (i, v) in out.iter_mut().enumerate() {
        *v = std::ptr::read_volatile(first.add(i));
    }
    out
}

/// # Safety
/// `src` must point to `n` readable, aligned u64s.
unsafe fn read_vec(src: *const u64, n: usize) -> Vec<u64> {
    (0..n)
        .map(|i| std::ptr::read_volatile(src.add(i)))
        .collect()
}
