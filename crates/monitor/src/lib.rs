//! `webscope-monitor`: cheap sampling of the operating system while a web server is measured,
//! as WebMonitor's kernel module did for Yates, Almeida & Almeida, with today's interfaces.
//!
//! What it is for: watching the machine, the server's processes and threads, and the TCP
//! connections of the server's port at a fine interval (100 ms by default) without
//! disturbing what is measured, and, on request, a breakdown of kernel time by what the
//! kernel was doing. Every interval it reads:
//!
//! - CPU time shares per core and in total, context switches, interrupts, softirqs, forks,
//!   the run queue (`/proc/stat`, `/proc/loadavg`);
//! - memory levels and paging (`/proc/meminfo`, `/proc/vmstat`); disk I/O per device
//!   (`/proc/diskstats`); traffic per interface (`/proc/net/dev`);
//! - TCP counters: opens, resets, retransmits, listen overflows and drops, SYN cookies,
//!   timeouts (`/proc/net/snmp`, `/proc/net/netstat`) and the host's socket totals, TIME_WAIT
//!   included (`/proc/net/sockstat`);
//! - for each `--port`, the sockets in each TCP state on both ends of its connections, and
//!   the listen sockets' accept queues, through netlink sock_diag ([`tcp`]);
//! - for each `--pid` and each of its threads: CPU, RSS, descriptors, context switches, and
//!   the time running on a CPU against the time waiting for one (`schedstat`); with
//!   `children`, their descendants too as they come and go, summed in an `all/all` row.
//!
//! With `kernel`, [`kernel`] loads an eBPF program that follows each connection of the
//! ports inside the kernel: how long it waited in the accept queue, how long it lived, its
//! state changes and retransmits, the listen drops, and how long the watched threads waited
//! for a CPU at each wake-up, summed in the kernel and read at each sample (root and a kernel
//! with BTF; elsewhere one line says why and the rest runs as before).
//!
//! [`procs`] finds a server's processes: a PID and all its descendants, or every process
//! holding the listening socket of a port (sock_diag for the listener's inode, `/proc/*/fd`
//! for its holders), and the CPU time of such a set, reaped children included.
//!
//! [`disturbance`] names a disturbed machine: over one probe, the share of each CPU that
//! processes other than the server and the generator took, steal, the run-queue wait of the
//! watched threads and CPU and I/O pressure, judged against stated limits.
//!
//! [`mod@reference`] reads the machine's own speed: a fixed loop timed in its thread's CPU time on
//! the server's CPU, which runs slower when the host's other tenants take the core's sibling,
//! its cache or its memory bandwidth (nothing in /proc shows that).
//!
//! With `profile`, `perf record -a -g` runs beside it and its samples are classified into
//! Yates et al.'s categories (low- and high-level networking and file system, timers,
//! scheduler, other kernel, user time, idle) by a table of rules ([`profile::rules`]).
//!
//! What it is not: a tracer (no per-request events; the server's own timing does that), a
//! metrics daemon (it runs for one measurement and writes files), or a general `/proc`
//! library (the `procfs` crate is that; this crate reads only what a web-server run needs).
//!
//! The main types: [`Config`] says what to watch; [`Monitor`] samples ([`Monitor::start`],
//! [`Monitor::sample`], [`Monitor::stop`]) and [`run`] loops it; [`spawn`] runs it on its own
//! thread and [`Running::stop`] ends it. Each [`Sample`] holds [`GroupRows`] of
//! [`Row`]s (one group per CSV file: `cpu`, `system`, `memory`, `disk`, `net`, `tcp`,
//! `sockets`, `ports`, `listen`, `process`, `threads`; with `kernel` also `kernel`,
//! `kernel_states`, `runq`); [`Results`] hold the [`Summary`]
//! written as `monitor.json` (mean, min, max, last of every value; the profile; notes; the
//! monitor's own cost).
//!
//! ```no_run
//! use std::time::Duration;
//! use webscope_monitor::{spawn, Config};
//! let config = Config {
//!     ports: vec![8080],
//!     pids: vec![4242],
//!     duration: Some(Duration::from_secs(10)),
//!     out: Some("run/monitor".into()),
//!     ..Config::default()
//! };
//! let running = spawn(config)?;
//! // ... drive the server ...
//! let results = running.stop()?;
//! let tw = results.summary.stat("ports", "8080/local", "time_wait").map(|s| s.mean);
//! println!("TIME_WAIT on :8080, mean {tw:?}");
//! # Ok::<(), webscope_monitor::Error>(())
//! ```
//!
//! Why this design: Yates et al. found `/proc` too expensive to read while the server was
//! busy, and wrote system calls instead. Today most of `/proc` is cheap (a few microseconds
//! a file); what is not is listing sockets: `/proc/net/tcp` formats every socket of the host
//! as text. sock_diag hands out binary records filtered by port in the kernel, both address
//! families in one walk, yet any per-port count still walks the kernel's whole socket hash
//! table, so those walks are spaced out to a CPU budget while the host totals
//! (`/proc/net/sockstat`) and accept queues (listen table only) are read every interval. The
//! monitor measures its own CPU time per source and reports it, so its cost is a figure, not
//! a claim. Sources are one module each, a table of columns each; rows are plain `f64`s
//! with NaN for "could not be read", which the CSV writes as an empty cell: a vanished process
//! or a missing file is a note, and sampling goes on.
#![deny(missing_docs)]

mod config;
mod cost;
mod csv;
pub mod disturbance;
mod error;
pub mod kernel;
mod live;
mod monitor;
mod node_exporter;
mod notes;
pub mod procs;
pub mod profile;
pub mod reference;
mod sources;
mod summary;
mod table;
pub mod tcp;
mod text;

pub use config::{Config, INTERVAL, NODE_EXPORTER_INTERVAL, NODE_EXPORTER_MIN_INTERVAL};
pub use cost::{Cost, SourceCost};
pub use error::Error;
pub use monitor::{drive, run, spawn, Monitor, Results, Running, GROUPS};
pub use notes::Note;
pub use sources::cpu::machine_ticks;
pub use sources::ports::WalkStats;
pub use summary::{GroupSummary, Host, Stat, Summary};
pub use table::{Group, GroupRows, Row, Sample};
