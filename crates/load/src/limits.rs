//! What one generator process may ask of its machine, each bounded by a stated limit and
//! refused in one line before anything is allocated (issue 51, items 5, 6 and 8):
//!
//! - **threads**: at most [`THREADS_PER_CORE`] per core this process may run on, and never
//!   fewer than [`THREADS_FLOOR`] allowed. A thread is an event loop meant to have a core of
//!   its own; more only take turns, and each holds its own histograms (a few MiB per class).
//!   `-t 1000000` grew to 24 GB before the kernel killed it.
//! - **sockets**: the connections this process opens at once (its segment's share of `-c`, or
//!   its users times `--user-connections`) fit the open-files limit, less [`FILES_RESERVED`]
//!   and [`FILES_PER_THREAD`] for the process's own files, and their buffers
//!   ([`CONNECTION_BYTES`] each, allocated when the run starts) fit the memory the machine has
//!   available. An open loop's `--max-connections` is a ceiling on growth, not a demand: past
//!   the limit it is cut to it, and the report says so (the lab's open loops ask for 1 000 on
//!   machines whose limit may be 1 024); `webscope load` refuses one given as a flag. The soft limit is first raised to the hard one,
//!   as Go's runtime does at start and nginx's `worker_rlimit_nofile` does: `ulimit -n` shows
//!   the soft one, which is often 1024 where the hard one allows far more. `-c 20000000`
//!   aborted on a 7.7 GB allocation, and `--users 1000000 --user-connections 10000` on one
//!   of 1.9 TB.
//! - **HTTP/2 streams**: at most [`MAX_STREAMS`] per connection and [`MAX_STREAMS_IN_FLIGHT`]
//!   in all (each is a task and a slot): `"http2": 2^64-1` overflowed an allocation.
//! - **lengths of time**: every duration of the config at most `webscope_sys::duration::MAX`
//!   (a year), the grammar's own bound, whether it came from a flag or from `--config`'s
//!   `{"secs": N}`: a clock plus 500 billion years panicked in a worker. A replay of a whole
//!   log lasts its span divided by `--speed`, which its reader bounds by the schedule's own
//!   limit (`MAX_REPLAY`, 50 years) rather than by the grammar's.
//!
//! Not here: what the settings mean together (`Config::check`), nor the grammar of lengths
//! (`webscope_sys::duration`).

use std::time::Duration;

use webscope_report::human::bytes;

use crate::config::{Config, Pacing};
use crate::Error;

/// Threads allowed per core this process may run on.
pub const THREADS_PER_CORE: usize = 4;
/// Threads allowed whatever the cores: a small machine may still run a config made for a
/// larger one of up to this many.
pub const THREADS_FLOOR: usize = 16;
/// Open files kept for the process's own use (standard streams, the interval log, the
/// samples, the live page, a replayed log and its gzip threads).
pub const FILES_RESERVED: u64 = 64;
/// Open files kept per generator thread (its runtime's epoll and eventfd, the engine's epoll
/// or ring).
pub const FILES_PER_THREAD: u64 = 8;
/// Memory a connection holds from the run's start: its 32 KiB receive buffer and its state.
pub const CONNECTION_BYTES: u64 = 33 << 10;
/// HTTP/2 streams allowed per connection (h2load's `-m`); servers allow 100 to 256 at once
/// (nginx's `http2_max_concurrent_streams` is 128).
pub const MAX_STREAMS: usize = 1000;
/// HTTP/2 streams allowed in all of this process's connections: each is a task.
pub const MAX_STREAMS_IN_FLIGHT: usize = 100_000;

/// The threads this machine allows (see the module's doc).
pub fn max_threads() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (cores * THREADS_PER_CORE).max(THREADS_FLOOR)
}

/// This process's open-files limit, raised first to the hard limit when the soft one is
/// lower (see the module's doc); `None` when it cannot be read.
pub fn open_files() -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit with a valid resource and a pointer to an rlimit.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return None;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: limit.rlim_max,
                rlim_max: limit.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                limit = raised;
            }
        }
    }
    Some(limit.rlim_cur)
}

/// The sockets a run of `threads` threads may open at once in this process: the open-files
/// limit less the files kept for the process itself; `usize::MAX` when it cannot be read.
pub fn socket_budget(threads: usize) -> usize {
    match open_files() {
        Some(files) => {
            let kept = FILES_RESERVED + FILES_PER_THREAD * threads as u64;
            usize::try_from(files.saturating_sub(kept)).unwrap_or(usize::MAX)
        }
        None => usize::MAX,
    }
}

/// Where the socket budget comes from, for a message.
pub fn files_said(threads: usize) -> String {
    format!(
        "ulimit -n {}, less {} files for its own",
        open_files().unwrap_or(0),
        FILES_RESERVED + FILES_PER_THREAD * threads as u64
    )
}

/// The machine's available memory (`MemAvailable` of /proc/meminfo), bytes.
fn memory_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

impl Config {
    /// The sockets this process opens at once whatever happens: its share of the connections
    /// (an open loop's may grow past them, up to `Config::growth_ceiling`), or its users'
    /// connections.
    pub fn sockets_here(&self) -> usize {
        if let Some(users) = &self.users {
            return self
                .share_here(users.count)
                .saturating_mul(users.connections.max(1));
        }
        self.share_here(self.connections)
    }

    /// This process's share of `n` over its threads.
    fn share_here(&self, n: usize) -> usize {
        (0..self.threads)
            .map(|i| self.thread_share(i, n))
            .fold(0usize, usize::saturating_add)
    }

    /// Open loop: the connections a thread may grow to, at most its share of the sockets this
    /// process may open; and, when that cut `--max-connections`, the sentence that says so.
    /// Past the open-files limit a connect fails (EMFILE) and would be counted against the
    /// server; within it, a request that finds every connection busy waits and is counted
    /// late, as with any ceiling.
    pub(crate) fn growth_ceiling(&self, index: usize) -> (usize, Option<String>) {
        let Pacing::Open {
            max_connections, ..
        } = self.pacing
        else {
            return (0, None);
        };
        let wanted = self.thread_share(index, max_connections);
        let budget = socket_budget(self.threads);
        let here = self.share_here(max_connections);
        if here <= budget {
            return (wanted, None);
        }
        let per_thread = budget / self.threads.max(1);
        let ceiling = wanted
            .min(per_thread)
            .max(self.thread_share(index, self.connections));
        let said = format!(
            "--max-connections {max_connections}: this process may open {budget} connections ({}), so its open loop grew to at most {} of them",
            files_said(self.threads),
            per_thread * self.threads
        );
        (ceiling, Some(said))
    }

    /// Every length of time of the config, at most the grammar's maximum; a replay's length
    /// (the log's span divided by the speed-up) at most the replay's own,
    /// [`crate::replay::MAX_REPLAY`], which its schedule's offsets allow.
    pub(crate) fn check_lengths(&self) -> Result<(), Error> {
        if self.replay.is_some() {
            if self.duration > crate::replay::MAX_REPLAY {
                return Err(Error::Config(format!(
                    "-d/--duration (a replay's: the log's span divided by --speed) is {} s, longer than a replay may last ({} s): give a larger --speed or a shorter -d",
                    self.duration.as_secs(),
                    crate::replay::MAX_REPLAY.as_secs()
                )));
            }
        } else {
            webscope_sys::duration::check("-d/--duration", self.duration)
                .map_err(|e| Error::Config(e.to_string()))?;
        }
        let think = match self.pacing {
            Pacing::Closed { think } => think,
            Pacing::Open { .. } => Duration::ZERO,
        };
        let ramp_up = self.users.as_ref().map_or(Duration::ZERO, |u| u.ramp_up);
        for (what, length) in [
            ("the drain after the run", self.drain),
            ("--timeout", self.timeout),
            ("--interval", self.interval),
            ("--think-time", think),
            ("--backoff-503", self.backoff_503),
            ("--ramp-up", ramp_up),
        ] {
            webscope_sys::duration::check(what, length)
                .map_err(|e| Error::Config(e.to_string()))?;
        }
        Ok(())
    }

    /// Threads against what this machine allows (see the module's doc): checked first, as
    /// the other checks count over them.
    pub(crate) fn check_threads(&self) -> Result<(), Error> {
        let most = max_threads();
        if self.threads > most {
            return Err(Error::Config(format!(
                "-t {}: at most {most} threads here ({THREADS_PER_CORE} per core, at least {THREADS_FLOOR}): a thread is an event loop that wants a core of its own, and more only take turns",
                self.threads
            )));
        }
        Ok(())
    }

    /// Sockets and streams against what this machine allows (see the module's doc).
    pub(crate) fn check_resources(&self) -> Result<(), Error> {
        if let Some(streams) = self.http2 {
            if streams > MAX_STREAMS {
                return Err(Error::Config(format!(
                    "-M {streams}: at most {MAX_STREAMS} streams per connection (servers allow 100 to 256 at once)"
                )));
            }
            let in_flight = self.sockets_here().saturating_mul(streams);
            if in_flight > MAX_STREAMS_IN_FLIGHT {
                return Err(Error::Config(format!(
                    "-c × -M is {in_flight} streams here: at most {MAX_STREAMS_IN_FLIGHT} in all; give fewer connections or streams"
                )));
            }
        }
        let sockets = self.sockets_here();
        let what = self.sockets_named();
        let budget = socket_budget(self.threads);
        if sockets > budget {
            return Err(Error::Config(format!(
                "{what}: {sockets} connections here, but this process may open {budget} ({}): give fewer, or raise the limit (ulimit -n, or LimitNOFILE)",
                files_said(self.threads)
            )));
        }
        let needed = (sockets as u64).saturating_mul(CONNECTION_BYTES);
        if let Some(available) = memory_available().filter(|&a| needed > a) {
            return Err(Error::Config(format!(
                "{what}: {sockets} connections here, whose buffers need {} ({} each), but the machine has {} available: give fewer",
                bytes(needed as f64),
                bytes(CONNECTION_BYTES as f64),
                bytes(available as f64)
            )));
        }
        Ok(())
    }

    /// The flags behind [`Config::sockets_here`], for a message.
    fn sockets_named(&self) -> String {
        if let Some(users) = &self.users {
            return format!(
                "--users {} × --user-connections {}",
                users.count, users.connections
            );
        }
        format!("-c {}", self.connections)
    }
}
