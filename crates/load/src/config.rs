//! What a run does: the target, how many connections and threads, for how long, how requests
//! are paced (closed or open loop) and whether connections are kept alive.
//!
//! A `Config` is serialisable (serde, JSON with [`Config::to_json`] and [`Config::from_json`]):
//! the lab's segments and `webscope distribute`'s pods are given the config itself
//! (`webscope load --config`), so every field reaches them without a flag of its own.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::target::Target;
use crate::Error;

/// Whether a connection carries many requests or one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// HTTP/1.1 persistent connections, reused until the server closes them.
    KeepAlive,
    /// A new TCP connection per request (`Connection: close`), as WebStone's HTTP/1.0
    /// clients did: what fills the server's TIME_WAIT table.
    Close,
}

/// How request send times are chosen in open loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrivals {
    /// Evenly spaced sends.
    Constant,
    /// A Poisson process: exponential gaps with the same mean.
    Poisson,
}

/// How requests are paced.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Pacing {
    /// Each connection sends its next request when the last response ends (after an
    /// optional think time), like WebStone's clients and wrk.
    Closed {
        /// Pause between a response and the next request on a connection.
        think: Duration,
    },
    /// Requests are sent on a clock, whatever the responses do (wrk2's model); latency is
    /// measured from the intended send time when a request had to wait.
    Open {
        /// Requests per second across all threads.
        rate: f64,
        /// Constant or Poisson spacing.
        arrivals: Arrivals,
        /// Connections may grow to this many when all are busy (at least `connections`).
        max_connections: usize,
    },
}

/// Everything a run needs.
///
/// Serialised whole but for what belongs to one process, which each is given on its own
/// (`webscope load`'s flags on top of `--config`): its output files (`hlog`, `samples`: every
/// segment writes its own), its `segment` and `start_at`. Unknown and missing fields are
/// errors when read back, so that a reader older or newer than the writer cannot drop one;
/// the one exception is `expect` (#47), which a config written before it lacks and which
/// reads as the default those runs counted by.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// What to request, from where.
    pub target: Target,
    /// Connections opened at the start (spread over threads).
    pub connections: usize,
    /// Worker threads, each with its own single-threaded runtime.
    pub threads: usize,
    /// How long to run.
    pub duration: Duration,
    /// After `duration`, how long the answers to requests still in flight are waited for
    /// (nothing new is sent; the run ends as soon as none is in flight). Zero: the run ends
    /// at `duration` and what is in flight counts as unfinished, as in wrk. A replay of a
    /// whole log waits for its last requests' answers (k6 calls this a graceful stop).
    pub drain: Duration,
    /// Closed or open loop.
    pub pacing: Pacing,
    /// Keep-alive or a connection per request.
    pub mode: Mode,
    /// Longest time a request may take (connect included) before it counts as a timeout.
    pub timeout: Duration,
    /// Length of the reporting intervals (live line, interval log, per-interval figures).
    pub interval: Duration,
    /// Where to write the HdrHistogram interval log, if anywhere.
    #[serde(skip)]
    pub hlog: Option<PathBuf>,
    /// Extra request header lines (`Name: value`).
    pub headers: Vec<String>,
    /// Seed of the request choice (which file each request asks for).
    pub seed: u64,
    /// Where to write one CSV line per completed request (`end_us,latency_us,class`: its
    /// completion time since the run's start, its latency, its class index), for density
    /// maps; at most [`MAX_SAMPLES`] lines.
    #[serde(skip)]
    pub samples: Option<PathBuf>,
    /// Closed loop: after a 503 the connection waits this long before its next request, as
    /// a client honouring the server's `Retry-After` would (zero: at once, as wrk does).
    pub backoff_503: Duration,
    /// Execution segment `(index, count)`: this process runs the `index`-th of `count` disjoint
    /// shares of the run (k6's execution segments), so that `count` generators on as many
    /// hosts add up to the run one host would make. `None`: the whole run.
    #[serde(skip)]
    pub segment: Option<(usize, usize)>,
    /// Start on this wall-clock instant (every segment of a run given the same one starts
    /// together and aligns its intervals to it); `None`: at once.
    #[serde(skip)]
    pub start_at: Option<std::time::SystemTime>,
    /// How an https target is spoken to (ignored for http).
    pub tls: crate::TlsSettings,
    /// The requests' method (`-m`), unless a request list says otherwise.
    pub method: String,
    /// The requests' body (`--body`), sent with a Content-Length.
    pub body: Vec<u8>,
    /// HTTP/2 with this many concurrent streams per connection (h2load's -m): over TLS with
    /// ALPN h2 for https, with prior knowledge (h2c) for http. None: HTTP/1.1. With `users`,
    /// each user has one connection and up to its `Users::connections` streams at once
    /// (the number here is unused).
    pub http2: Option<usize>,
    /// HTTP/3 over QUIC with this many concurrent streams per connection (`--http3`, `-M`);
    /// https URLs only. None: not HTTP/3.
    pub http3: Option<usize>,
    /// HTTP/3: a resumed connection's first requests go as 0-RTT early data (`--0rtt`).
    pub zero_rtt: bool,
    /// Busy-poll each connection's socket for up to this many microseconds before sleeping
    /// (SO_BUSY_POLL, SO_PREFER_BUSY_POLL); None: off.
    pub busy_poll: Option<u32>,
    /// The HTTP/1.1 engine's kernel interface.
    pub io: Io,
    /// Replay an access log (`--replay`): open-loop slots at the log's instants, each with
    /// its own request, instead of a rate and a mix. The pacing must be open loop; its rate
    /// is the replay's mean (reported, not used for timing).
    #[serde(with = "shared_replay")]
    pub replay: Option<std::sync::Arc<crate::replay::Replay>>,
    /// Run users instead of connections (`--users`): each of them goes through sessions of
    /// page views on connections of its own (HTTP/2: a connection of its own, its streams);
    /// `connections` is then unused. Closed loop.
    #[serde(with = "shared_users")]
    pub users: Option<std::sync::Arc<crate::users::Users>>,
    /// The statuses that are not errors (`--expect-status`; a replay's logged status is
    /// expected too): the engine counts each class's and each interval's errors by it, as
    /// every judge does ([`crate::Outcomes`]). Missing in a stored config: the default.
    #[serde(default)]
    pub expect: crate::Expect,
}

/// How the HTTP/1.1 engine talks to the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Io {
    /// Non-blocking sockets, an epoll set per thread, a send and a recv per request.
    #[default]
    Epoll,
    /// One io_uring per thread: connects, sends and receives submitted as operations, all
    /// of a wake-up's in one `io_uring_enter` that also waits for the next completions.
    Uring,
}

/// The most requests `Config::samples` records (about 20 MB of CSV): enough for a density
/// map, bounded whatever the rate.
pub const MAX_SAMPLES: usize = 1_000_000;

/// The replay behind its `Arc` (shared by the run's threads), as the replay itself: serde's
/// own `Arc` support is a feature the workspace leaves off.
mod shared_replay {
    use std::sync::Arc;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::replay::Replay;

    pub fn serialize<S: Serializer>(replay: &Option<Arc<Replay>>, s: S) -> Result<S::Ok, S::Error> {
        replay.as_deref().serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Arc<Replay>>, D::Error> {
        Ok(Option::<Replay>::deserialize(d)?.map(Arc::new))
    }
}

/// The users behind their `Arc`, as for the replay.
mod shared_users {
    use std::sync::Arc;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::users::Users;

    pub fn serialize<S: Serializer>(users: &Option<Arc<Users>>, s: S) -> Result<S::Ok, S::Error> {
        users.as_deref().serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Arc<Users>>, D::Error> {
        Ok(Option::<Users>::deserialize(d)?.map(Arc::new))
    }
}

impl Config {
    /// The config as JSON (what `webscope load --config` reads): all but the fields of one
    /// process (see [`Config`]). One field a line, so that a reader's error, which gives a line
    /// and column, points at the field.
    pub fn to_json(&self) -> Result<String, Error> {
        serde_json::to_string_pretty(self)
            .map_err(|e| Error::Config(format!("cannot write the config as JSON: {e}")))
    }

    /// A config read back from [`Config::to_json`]'s JSON, its per-process fields unset and
    /// its server's address as the writer resolved it ([`Target::resolve_again`] looks it up
    /// here). The error is serde's one line (what is wrong, at which line and column).
    pub fn from_json(text: &str) -> Result<Config, Error> {
        serde_json::from_str(text).map_err(|e| Error::Config(e.to_string()))
    }

    /// A closed-loop keep-alive run of 10 connections for 10 s on one thread.
    pub fn new(target: Target) -> Config {
        Config {
            target,
            connections: 10,
            threads: 1,
            duration: Duration::from_secs(10),
            drain: Duration::ZERO,
            pacing: Pacing::Closed {
                think: Duration::ZERO,
            },
            mode: Mode::KeepAlive,
            timeout: Duration::from_secs(5),
            interval: Duration::from_secs(1),
            hlog: None,
            headers: Vec::new(),
            seed: 1,
            samples: None,
            backoff_503: Duration::ZERO,
            segment: None,
            start_at: None,
            tls: crate::TlsSettings::default(),
            method: "GET".to_string(),
            body: Vec::new(),
            http2: None,
            http3: None,
            zero_rtt: false,
            busy_poll: None,
            io: Io::Epoll,
            replay: None,
            users: None,
            expect: crate::Expect::default(),
        }
    }

    /// This segment's index and the number of segments (`(0, 1)` for a whole run).
    pub fn segment_or_whole(&self) -> (usize, usize) {
        self.segment.unwrap_or((0, 1))
    }

    /// This process's thread `index` as one of the whole run's threads (all segments'): this
    /// segment's threads are every `segments`-th, from `segment` on.
    pub fn global_thread(&self, index: usize) -> usize {
        let (segment, segments) = self.segment_or_whole();
        segment + index * segments
    }

    /// Thread `index`'s share of `n` (connections, say) when the whole run's threads share it
    /// as one process with that many threads would.
    pub fn thread_share(&self, index: usize, n: usize) -> usize {
        let all_threads = self
            .threads
            .saturating_mul(self.segment_or_whole().1)
            .max(1);
        let global = self.global_thread(index);
        n / all_threads + usize::from(global < n % all_threads)
    }

    /// The connections this process opens (a segment's share of `connections`).
    pub fn connections_here(&self) -> usize {
        (0..self.threads)
            .map(|i| self.thread_share(i, self.connections))
            .sum()
    }

    /// Checks `--users` against the rest.
    fn check_users(&self) -> Result<(), Error> {
        let Some(users) = &self.users else {
            return Ok(());
        };
        let bad = |m: &str| Err(Error::Config(m.to_string()));
        if users.count == 0 {
            return bad("--users must be at least 1");
        }
        if users.connections == 0 {
            return bad("--user-connections must be at least 1");
        }
        if matches!(self.pacing, Pacing::Open { .. }) {
            return bad("--users is a closed population (each user waits for its pages and thinks): drop --rate");
        }
        if self.replay.is_some() {
            return bad("--users and --replay are two ways to use a log: give --sessions LOG with --users, or --replay alone");
        }
        if !self.target.groups.is_empty() {
            return bad("--users with --group: give one or the other");
        }
        let threads = self.threads.saturating_mul(self.segment_or_whole().1);
        if users.count < threads {
            return Err(Error::Config(format!(
                "--users {} over {threads} threads: each thread needs a user; give -t {} or fewer",
                users.count, users.count
            )));
        }
        Ok(())
    }

    /// Checks `--http3` and `--0rtt` against the rest.
    fn check_http3(&self) -> Result<(), Error> {
        let bad = |m: &str| Err(Error::Config(m.to_string()));
        let Some(streams) = self.http3 else {
            if self.zero_rtt {
                return bad("--0rtt is HTTP/3's early data: give it with --http3");
            }
            return Ok(());
        };
        if streams == 0 {
            return bad("-M/--max-streams must be at least 1");
        }
        if self.http2.is_some() {
            return bad("--http2 and --http3: give one of them");
        }
        if self.target.tls_name.is_none() {
            return bad("--http3 runs over QUIC, which is always encrypted: give an https:// URL (its port is the server's UDP port)");
        }
        if self.io == Io::Uring {
            return bad("--io uring is for the HTTP/1.1 engine: leave it out with --http3");
        }
        if self.replay.is_some() {
            return bad("--replay speaks HTTP/1.1 only so far: leave --http3 out");
        }
        if !self.target.groups.is_empty() {
            return bad("--group with HTTP/3 is not supported yet");
        }
        Ok(())
    }

    /// Checks the settings against each other; the message says which flag to change.
    pub fn check(&self) -> Result<(), Error> {
        let bad = |m: &str| Err(Error::Config(m.to_string()));
        self.check_lengths()?;
        self.check_threads()?;
        self.check_users()?;
        if self.users.is_some() {
            // Users bring their own connections; -c is not read.
        } else if self.connections == 0 {
            return bad("-c/--connections must be at least 1");
        }
        if self.threads == 0 {
            return bad("-t/--threads must be at least 1");
        }
        let (index, count) = self.segment_or_whole();
        if count == 0 || index >= count {
            return Err(Error::Config(format!(
                "--segment {index}/{count}: give I/N with 0 <= I < N, e.g. --segment 0/3"
            )));
        }
        if self.users.is_none() && self.threads.saturating_mul(count) > self.connections {
            return Err(Error::Config(if count == 1 {
                "-t/--threads must not exceed -c/--connections (each thread needs a connection)"
                    .to_string()
            } else {
                format!(
                    "-c {} over {count} segments of {} threads each: each thread needs a connection, so -c must be at least {}",
                    self.connections,
                    self.threads,
                    self.threads.saturating_mul(count)
                )
            }));
        }
        if self.duration.is_zero() {
            return bad("-d/--duration must be longer than 0");
        }
        if self.io == Io::Uring {
            if self.target.tls_name.is_some() {
                return bad("--io uring speaks plain HTTP/1.1 only so far: leave it out for https");
            }
            if self.http2.is_some() {
                return bad("--io uring is for the HTTP/1.1 engine: leave it out with --http2");
            }
            if matches!(self.pacing, Pacing::Open { .. }) {
                return bad("--io uring runs closed loop only so far: leave it out with --rate");
            }
        }
        if self.timeout.is_zero() {
            return bad("--timeout must be longer than 0");
        }
        if self.interval < Duration::from_millis(10) {
            return bad("--interval must be at least 10ms");
        }
        if let Pacing::Open {
            rate,
            max_connections,
            ..
        } = self.pacing
        {
            if !(rate.is_finite() && rate > 0.0) {
                return bad("--rate must be a positive number of requests per second");
            }
            if rate > 10_000_000.0 {
                return bad("--rate must be at most 10000000 requests per second");
            }
            if max_connections < self.connections {
                return bad("--max-connections must be at least -c/--connections");
            }
        }
        if self.replay.is_some() {
            if !matches!(self.pacing, Pacing::Open { .. }) {
                return bad("--replay is open loop: its pacing must be open (internal)");
            }
            if self.http2.is_some() {
                return bad("--replay speaks HTTP/1.1 only so far: leave --http2 out");
            }
        }
        if !self.target.groups.is_empty() {
            if matches!(self.pacing, Pacing::Open { .. }) {
                return bad("--group runs closed-loop client groups: drop --rate");
            }
            let sum: usize = self.target.groups.iter().sum();
            if self.connections != sum {
                return Err(Error::Config(format!(
                    "the groups have {sum} connections in all but -c/--connections says {}: leave -c out with --group",
                    self.connections
                )));
            }
        }
        if self.method.is_empty() || !self.method.bytes().all(|b| b.is_ascii_uppercase()) {
            return Err(Error::Config(format!(
                "-m {:?} is not a method: give GET, POST, PUT, HEAD ... in capitals",
                self.method
            )));
        }
        if let Some(streams) = self.http2 {
            if streams == 0 {
                return bad("-M/--max-streams must be at least 1");
            }
            if self.mode == Mode::Close {
                return bad("--close with HTTP/2: a connection per request would be HTTP/1.0's pattern; leave --close out");
            }
            if !self.target.groups.is_empty() {
                return bad("--group with HTTP/2 is not supported yet");
            }
        }
        self.check_http3()?;
        // Only the HTTP/1.1 engine's closed loop pauses a connection after a 503; a flag the
        // other engines would take and ignore is refused instead.
        if !self.backoff_503.is_zero() {
            if self.http2.is_some() || self.http3.is_some() {
                return bad("--backoff-503 pauses an HTTP/1.1 connection after a 503; the HTTP/2 and HTTP/3 engines do not yet: leave it out with --http2 or --http3");
            }
            if self.users.is_some() {
                return bad("--backoff-503 with --users: a user's pause after an answer is its think time; leave --backoff-503 out");
            }
        }
        for header in &self.headers {
            let ok = header.split_once(':').is_some_and(|(name, value)| {
                !name.is_empty()
                    && name.bytes().all(|b| b.is_ascii_graphic() && b != b':')
                    && !value.bytes().any(|b| b == b'\r' || b == b'\n')
            });
            if !ok {
                return Err(Error::Config(format!(
                    "-H {header:?} is not a header line (write it as \"Name: value\")"
                )));
            }
        }
        // Last: what this machine allows, once the settings agree with each other.
        self.check_resources()
    }
}
