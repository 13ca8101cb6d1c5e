//! A user-space link between two network namespaces that delays and drops packets: what
//! netem does in the kernel, for kernels without it (this machine's 6.18 has neither netem
//! nor fq, so no qdisc can add delay). The lab's loss experiment (`lab --experiment protocols
//! --loss 1%,3% --rtt 20ms`) runs its server on one side and its load generator on the other.
//!
//! What it is for: a fixed one-way delay and independent random loss per packet, both ways,
//! counted per direction ([`Counts`]), between a client namespace ([`CLIENT_ADDR`]) and a
//! server namespace ([`SERVER_ADDR`]) that live as long as the [`Link`]. What it is not for: a
//! bandwidth limit, a queue (and so no queueing delay or tail drop), reordering, jitter,
//! bursty (Gilbert-Elliott) loss, or speed: every packet crosses user space twice, which is
//! fine for a few Mbit/s of page loads and not for a throughput test. A namespace inherits the
//! host's TCP congestion control (net.ipv4.tcp_congestion_control) and may make only an
//! allowed one its default: a comparison with QUIC sets TCP's controller on its sockets.
//!
//! Each namespace gets a TUN device (layer 3, no packet information header, no offloads: a
//! packet read is one IP packet with its checksums, as on a wire, so that a drop loses one TCP
//! segment or one QUIC datagram; the kernel segments a GSO send before the device). The
//! namespaces are made by `unshare` on threads of this process, never named: they go away with
//! the last thread or process in them (no cleanup to forget). A packet read from one device is
//! dropped with the loss rate's chance, else written to the other device after the one-way
//! delay. Per direction a reader thread stamps each packet with its due time and a writer
//! thread sleeps until it: a fixed delay keeps the order, so a FIFO is the whole schedule.
//!
//! Why by hand: opening a TUN device is one `ioctl` (TUNSETIFF) on `/dev/net/tun`; the crates
//! that wrap it (`tun`, `tun-rs`) bring async runtimes and address configuration we do with
//! `ip`, and none of them opens a device in another network namespace, which is the part that
//! matters here (a thread's `unshare` then the open: the device belongs to the namespace of
//! the thread that opened it). The relay itself is a read, a coin and a timed write.
#![deny(missing_docs)]

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use webscope_workload::Rng;

/// The client's side's address (in its own namespace).
pub const CLIENT_ADDR: &str = "10.77.0.1";
/// The server's side's address (in its own namespace).
pub const SERVER_ADDR: &str = "10.77.0.2";

/// How often a reader looks at the stop flag while no packet comes.
const POLL_MS: i32 = 50;

/// A network namespace this process made: a thread parked in it (so that it lives) and a
/// handle to enter it from other threads.
pub struct Netns {
    file: File,
}

impl Netns {
    /// A new, empty network namespace (its loopback brought up).
    fn new() -> anyhow::Result<Netns> {
        // On a thread of its own: unshare changes the calling thread's namespace, and the
        // caller's must stay as it is.
        let file = std::thread::spawn(|| -> anyhow::Result<File> {
            // SAFETY: unshare with CLONE_NEWNET only changes this thread's namespace.
            if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
                let e = std::io::Error::last_os_error();
                bail!("cannot make a network namespace (unshare: {e}): the loss experiment needs root (CAP_SYS_ADMIN) and network namespaces");
            }
            File::open("/proc/thread-self/ns/net").context("cannot open the new namespace")
        })
        .join()
        .map_err(|_| anyhow::anyhow!("the namespace thread panicked"))??;
        let ns = Netns { file };
        ns.run(|| {
            // No IPv6 on the link: its router and multicast chatter would be relayed (and
            // dropped) beside the measured traffic. The file is this namespace's (a net
            // sysctl is the opening thread's namespace's); a kernel without IPv6 has none.
            let _ = std::fs::write("/proc/sys/net/ipv6/conf/default/disable_ipv6", "1");
            ip(&["link", "set", "lo", "up"])
        })?;
        Ok(ns)
    }

    /// Runs `f` on a thread that entered the namespace: what it opens, connects or spawns
    /// (a child process) is there.
    pub fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> anyhow::Result<T> + Send + 'static,
    ) -> anyhow::Result<T> {
        let fd = self.file.try_clone()?;
        std::thread::spawn(move || {
            enter(&fd)?;
            f()
        })
        .join()
        .map_err(|_| anyhow::anyhow!("a thread in the namespace panicked"))?
    }

    /// Enters the namespace on the calling thread (for good: give it a thread of its own).
    pub fn enter_here(&self) -> anyhow::Result<()> {
        enter(&self.file)
    }
}

fn enter(ns: &File) -> anyhow::Result<()> {
    // SAFETY: setns on a namespace file we hold; it changes only the calling thread.
    if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        bail!(
            "cannot enter the network namespace: {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}

/// Runs `ip ARGS` (iproute2), failing with its message.
fn ip(args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .context("cannot run ip (Debian: iproute2)")?;
    if !out.status.success() {
        bail!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// Opens a TUN device named `name` in the calling thread's network namespace.
fn open_tun(name: &str) -> anyhow::Result<File> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/net/tun")
        .context("cannot open /dev/net/tun (is the tun module there?)")?;
    // SAFETY: an ifreq is plain data; all zeros is a valid one.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (slot, byte) in req.ifr_name.iter_mut().zip(name.bytes()) {
        *slot = byte as libc::c_char;
    }
    req.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short;
    // SAFETY: TUNSETIFF reads and writes the ifreq we own, on the fd we opened.
    if unsafe { libc::ioctl(file.as_raw_fd(), libc::TUNSETIFF, &mut req) } != 0 {
        bail!(
            "cannot make TUN device {name}: {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(file)
}

/// Whether this machine can make a link (root, network namespaces, TUN, `ip`): Err(why, in
/// one line) when not.
pub fn check() -> anyhow::Result<()> {
    let faults = Faults {
        delay: Duration::ZERO,
        loss: 0.0,
    };
    Link::new(faults, 0).map(drop)
}

/// The link's faults: the one-way delay (each direction) and the chance of a packet lost.
#[derive(Clone, Copy, Debug)]
pub struct Faults {
    /// The one-way delay, added to every packet in each direction.
    pub delay: Duration,
    /// The chance that a packet is dropped, 0..1, each packet drawn on its own.
    pub loss: f64,
}

/// What the relay did in one direction.
#[derive(Default, Debug)]
pub struct Direction {
    /// Packets written to the other side.
    pub relayed: AtomicU64,
    /// Packets dropped by the loss's draw.
    pub dropped: AtomicU64,
    /// Bytes (whole IP packets) written to the other side.
    pub relayed_bytes: AtomicU64,
    /// Bytes (whole IP packets) dropped.
    pub dropped_bytes: AtomicU64,
}

/// What the relay did, per direction: a check that each protocol met the same loss, per
/// packet whatever its size.
#[derive(Default, Debug)]
pub struct Counts {
    /// Client to server.
    pub up: Direction,
    /// Server to client.
    pub down: Direction,
}

impl Counts {
    /// Packets dropped, both directions.
    pub fn dropped(&self) -> u64 {
        self.up.dropped.load(Ordering::Relaxed) + self.down.dropped.load(Ordering::Relaxed)
    }

    /// Packets relayed, both directions.
    pub fn relayed(&self) -> u64 {
        self.up.relayed.load(Ordering::Relaxed) + self.down.relayed.load(Ordering::Relaxed)
    }

    /// One line: packets and bytes relayed and dropped each way, and the share dropped.
    pub fn summary(&self) -> String {
        let side = |name: &str, d: &Direction| {
            let (r, x) = (
                d.relayed.load(Ordering::Relaxed),
                d.dropped.load(Ordering::Relaxed),
            );
            let share = if r + x == 0 {
                0.0
            } else {
                x as f64 / (r + x) as f64 * 100.0
            };
            format!(
                "{name}: {x} of {} packets dropped ({share:.2} %), {} of {} bytes",
                r + x,
                d.dropped_bytes.load(Ordering::Relaxed),
                d.relayed_bytes.load(Ordering::Relaxed) + d.dropped_bytes.load(Ordering::Relaxed)
            )
        };
        format!("{}; {}", side("up", &self.up), side("down", &self.down))
    }
}

/// The client's namespace and the server's, joined by the relay until dropped.
pub struct Link {
    /// The client's namespace ([`CLIENT_ADDR`]): the load generator's threads enter it.
    pub client: Netns,
    /// The server's namespace ([`SERVER_ADDR`]): the server under test is started in it.
    pub server: Netns,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    /// What the relay did so far (the tests check the loss against it).
    pub counts: Arc<Counts>,
}

impl Link {
    /// Makes the two namespaces, a TUN device in each ([`CLIENT_ADDR`] and [`SERVER_ADDR`],
    /// point to point, MTU 1500) and starts relaying with `faults`.
    pub fn new(faults: Faults, seed: u64) -> anyhow::Result<Link> {
        let (client, server) = (Netns::new()?, Netns::new()?);
        let near = client.run(|| device("wsc0", CLIENT_ADDR, SERVER_ADDR))?;
        let far = server.run(|| device("wss0", SERVER_ADDR, CLIENT_ADDR))?;
        let stop = Arc::new(AtomicBool::new(false));
        let counts = Arc::new(Counts::default());
        let mut threads = Vec::new();
        for (k, (from, to)) in [(near.try_clone()?, far.try_clone()?), (far, near)]
            .into_iter()
            .enumerate()
        {
            let (tx, rx) = mpsc::channel::<(Instant, Vec<u8>)>();
            let rng = Rng::for_stream(seed, if k == 0 { "up" } else { "down" });
            let (stop, counts) = (Arc::clone(&stop), Arc::clone(&counts));
            threads.push(std::thread::spawn(move || {
                let direction = if k == 0 { &counts.up } else { &counts.down };
                read_side(from, tx, faults, rng, &stop, direction)
            }));
            threads.push(std::thread::spawn(move || write_side(to, rx)));
        }
        Ok(Link {
            client,
            server,
            stop,
            threads,
            counts,
        })
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// A TUN device `name` in the calling thread's namespace, `addr` with `peer` beyond it.
fn device(name: &str, addr: &str, peer: &str) -> anyhow::Result<File> {
    let tun = open_tun(name)?;
    ip(&["addr", "add", addr, "peer", peer, "dev", name])?;
    ip(&["link", "set", name, "up", "mtu", "1500"])?;
    Ok(tun)
}

/// Reads packets from `from`, drops each with the loss's chance, and hands the others to
/// the writer with their due time; ends at the stop flag.
fn read_side(
    mut from: File,
    tx: mpsc::Sender<(Instant, Vec<u8>)>,
    faults: Faults,
    mut rng: Rng,
    stop: &AtomicBool,
    counts: &Direction,
) {
    let mut buf = vec![0u8; 65536];
    while !stop.load(Ordering::Relaxed) {
        let mut pfd = libc::pollfd {
            fd: from.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one pollfd we own.
        let ready = unsafe { libc::poll(&mut pfd, 1, POLL_MS) };
        if ready <= 0 {
            continue;
        }
        let n = match from.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return,
        };
        let now = Instant::now();
        if rng.next_f64() < faults.loss {
            counts.dropped.fetch_add(1, Ordering::Relaxed);
            counts.dropped_bytes.fetch_add(n as u64, Ordering::Relaxed);
            continue;
        }
        counts.relayed.fetch_add(1, Ordering::Relaxed);
        counts.relayed_bytes.fetch_add(n as u64, Ordering::Relaxed);
        if tx.send((now + faults.delay, buf[..n].to_vec())).is_err() {
            return;
        }
    }
}

/// Writes each packet to `to` at its due time, in order; ends when the reader does.
fn write_side(mut to: File, rx: mpsc::Receiver<(Instant, Vec<u8>)>) {
    for (due, packet) in rx {
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        }
        // A packet the other side's kernel refuses (its device going down at the end) is
        // lost, as on a wire.
        let _ = to.write(&packet);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;

    /// A link, or None with a note where this machine cannot make one (not root, no
    /// namespaces, no TUN); under WEBSCOPE_REQUIRE_NETNS (CI sets it: it runs as root) a
    /// failure.
    fn link(faults: Faults) -> Option<Link> {
        match Link::new(faults, 7) {
            Ok(link) => Some(link),
            Err(e) if std::env::var_os("WEBSCOPE_REQUIRE_NETNS").is_some() => {
                panic!("WEBSCOPE_REQUIRE_NETNS is set and no link could be made: {e:#}")
            }
            Err(e) => {
                eprintln!("note: the relay's claim is unchecked here: {e:#}");
                None
            }
        }
    }

    /// The server's side echoes UDP datagrams on port 9 until told to stop.
    fn echo(link: &Link) -> UdpSocket {
        let socket = link
            .server
            .run(|| Ok(UdpSocket::bind((SERVER_ADDR, 9))?))
            .unwrap();
        socket
            .set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        socket
    }

    #[test]
    fn a_round_trip_through_the_relay_takes_at_least_twice_the_delay() {
        let faults = Faults {
            delay: Duration::from_millis(10),
            loss: 0.0,
        };
        let Some(link) = link(faults) else { return };
        let server = echo(&link);
        let echoing = std::thread::spawn(move || {
            let mut buf = [0u8; 64];
            for _ in 0..5 {
                let Ok((n, from)) = server.recv_from(&mut buf) else {
                    continue;
                };
                server.send_to(&buf[..n], from).unwrap();
            }
        });
        let client = link
            .client
            .run(|| Ok(UdpSocket::bind((CLIENT_ADDR, 0))?))
            .unwrap();
        client
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        for k in 0..3u8 {
            let began = Instant::now();
            client.send_to(&[k], (SERVER_ADDR, 9)).unwrap();
            let mut buf = [0u8; 64];
            let n = client.recv(&mut buf).expect("the echo came back");
            assert_eq!(&buf[..n], &[k]);
            // A lower bound only: a busy machine makes it longer, never shorter.
            assert!(began.elapsed() >= 2 * faults.delay, "{:?}", began.elapsed());
        }
        echoing.join().unwrap();
        assert_eq!(link.counts.dropped(), 0);
    }

    #[test]
    fn the_relay_drops_packets_at_its_loss_rate() {
        let faults = Faults {
            delay: Duration::from_millis(1),
            loss: 0.3,
        };
        let Some(link) = link(faults) else { return };
        let server = echo(&link);
        let client = link
            .client
            .run(|| Ok(UdpSocket::bind((CLIENT_ADDR, 0))?))
            .unwrap();
        // Read as they come: a socket's default buffer holds some 300 small datagrams.
        let reading = std::thread::spawn(move || {
            let (mut got, mut buf) = (0u32, [0u8; 64]);
            while server.recv_from(&mut buf).is_ok() {
                got += 1;
            }
            got
        });
        let sent = 1000u32;
        for k in 0..sent {
            client.send_to(&k.to_be_bytes(), (SERVER_ADDR, 9)).unwrap();
            if k % 50 == 0 {
                // Paced a little, so that no buffer on the way overflows.
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        let got = reading.join().unwrap();
        // 1000 coins of 0.3: 700 expected, sd 14.5; six of them either way.
        assert!((613..=787).contains(&got), "{got} of {sent} came");
        let dropped = link.counts.up.dropped.load(Ordering::Relaxed);
        // Every datagram that did not come was the relay's drop, none lost elsewhere.
        assert!(
            u64::from(got) + dropped >= u64::from(sent),
            "{dropped} dropped"
        );
    }
}
