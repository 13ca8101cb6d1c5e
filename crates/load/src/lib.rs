//! webscope's HTTP/1.1, HTTP/2 and HTTP/3 load generator: closed and open loop, keep-alive and
//! close, with HdrHistograms per class and per interval.
//!
//! What it is for: driving a web server the way the papers' tools did (WebStone's closed-loop
//! clients, SPECweb96's mix of file classes, ab's fixed URL), and the way wrk2 taught us to
//! (an open-loop clock with latency measured from the intended send time, so a stalled server
//! cannot hide behind the load generator's politeness), as cheaply per request as possible so
//! that the figures measure the server, not the generator.
//!
//! What it is not: a browser or a general HTTP client. It sends requests from a fixed table
//! (one URL, a file set's manifest with its access probabilities, a request list with methods
//! and bodies, or an access log's replay, [`replay`]: each logged request at its logged
//! time), reads the responses' framing (Content-Length or chunked) and counts their bytes,
//! over plain TCP or TLS (rustls, for https URLs: handshakes timed apart, full and resumed
//! counted), in HTTP/1.1 or HTTP/2 (the `h2` crate, `-M` streams per connection); no
//! redirects, no cookies.
//!
//! The main types: [`Config`] says what to run ([`Target`] what to request, [`Pacing`]
//! closed or open loop, [`Mode`] keep-alive or close); [`run()`] runs it and returns a
//! [`Report`] (requests, errors by kind, latency percentiles in total, per class and per
//! interval, the generator's own CPU time), which serialises to JSON and prints as a wrk-like
//! summary; `--hlog` intervals are written in the HdrHistogram log format as they complete.
//!
//! ```no_run
//! use std::sync::atomic::AtomicBool;
//! use webscope_load::{run, Config, Target};
//! let mut config = Config::new(Target::url("http://127.0.0.1:8080/index.html")?);
//! config.connections = 50;
//! config.threads = 2;
//! let report = run(&config, &AtomicBool::new(false), &mut |_interval| {})?;
//! println!("{}", report.summary());
//! # Ok::<(), webscope_load::Error>(())
//! ```
//!
//! Why this design: thread-per-core. Each worker thread runs a current-thread tokio runtime
//! whose one future is the thread's engine (the private `engine` folder): an epoll loop
//! over the thread's connections with its own timers, like wrk's but with fewer system calls
//! (no `epoll_ctl` per request, a request is one `send` and usually one `recv`), no locks, no
//! work stealing, no shared counters. A task per connection was tried first and measured:
//! its wakers and polls cost more than the rest of the generator's user-space work. The
//! engine records into the thread's own recorder (a histogram increment per request) and
//! hands it whole to the coordinator at each interval boundary. Requests are prebuilt byte
//! strings and responses are parsed in place from a reused per-connection buffer: nothing is
//! allocated per request in keep-alive mode. Memory is a few histograms per class and
//! thread, whatever the number of requests.
#![deny(missing_docs)]

mod anchor;
mod busy_poll;
mod config;
mod cpu;
mod engine;
mod error;
pub mod frame;
mod hdr_text;
mod hlog;
pub mod limits;
mod merge;
pub mod outcome;
mod pace;
mod quic;
mod quic_fetch;
mod recorder;
pub mod replay;
pub mod replay_log;
mod report;
mod requests;
mod run;
mod samples;
mod schedule;
mod shared;
pub mod slo;
mod target;
mod tls;
pub mod users;
mod worker;

pub use busy_poll::probe as busy_poll_probe;
pub use config::{Arrivals, Config, Io, Mode, Pacing, MAX_SAMPLES};
pub use cpu::{process_time, thread_time};
pub use error::Error;
pub use hlog::{
    parse_intervals, read_bins, read_intervals, tag_of, Hlog, Intervals, LoggedInterval,
};
pub use merge::{merge, Part};
pub use outcome::{Expect, Outcomes, DEFAULT_EXPECT};
pub use pace::{missed_rate, not_sent_limit, MissedRate, NOT_SENT_ALLOWANCE_S, NOT_SENT_LIMIT};
pub use quic_fetch::{fetch_h3, Fetched};
pub use recorder::LATE_SEND;
pub use recorder::{Failure, FAILURES};
pub use report::histograms::ClassHistograms;
pub use report::text::{format_us, thousands};
pub use report::users::{IntervalUsers, UsersReport};
pub use report::{
    ClassReport, Errors, Figures, Generator, IntervalReport, Latency, Report, RunCounts, TlsReport,
};
pub use run::run;
pub use target::{Group, RequestSpec, Target};
pub use tls::{
    cause as tls_cause, client_config as tls_client_config, io_cause as tls_io_cause, TlsSettings,
};
