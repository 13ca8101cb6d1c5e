//! The HTTP/1.1 server that webscope measures by default (`webscope serve`).
//!
//! It serves regular files under a document root, correctly and defensively (RFC 9112 / 9110
//! framing, limits, timeouts, no escape from the root), with a hot path designed to be
//! measured: thread-per-core workers, each with its own SO_REUSEPORT listener and event loop;
//! requests parsed from a per-connection buffer without allocation; small files read into
//! memory and sent with their head in one write, large files sent with `sendfile(2)`;
//! pipelined responses batched into one write; dates formatted once per second; the access
//! log buffered per worker.
//!
//! The event loop is one io_uring per worker by default (multishot accept and receive,
//! provided buffers, SEND submitted in batches; large files by sendfile), measured cheaper
//! per request than epoll. The workers run on a current-thread tokio runtime over epoll
//! instead when asked (`Config::io = Some(Io::Epoll)`), when the configuration needs what
//! only that engine serves (TLS, and with it HTTP/2), or where the kernel refuses io_uring;
//! [`Server::engine`] says which and why. Both engines answer every request through the same
//! code (`exchange.rs`); they differ only in how bytes move.
//!
//! With a certificate (`Config::tls`) it serves HTTPS: rustls, ALPN choosing HTTP/2 (the `h2`
//! crate, static files and services from the same caches, log and timing) or HTTP/1.1 (the
//! same loop as plain HTTP), and kTLS where the kernel takes it.
//!
//! What it is not: a general web server. No HTTP/2 without TLS, no CGI, no directory
//! listings, no configuration files. It is the lab's embedded target and a peer for nginx in
//! benchmarks.
//!
//! The main types are [`Config`] (what the operator chose), [`Server`] (bound, not yet
//! running: its [`Server::local_addr`] gives the real port when port 0 was asked for) and
//! [`Running`] (stop it with [`Running::shutdown`], which drains connections and flushes the
//! access log).
//!
//! ```no_run
//! let mut config = webscope_server::Config::new("./public");
//! config.listen = "127.0.0.1:0".parse().unwrap();
//! let server = webscope_server::Server::bind(config)?;
//! println!("listening on http://{}", server.local_addr());
//! let running = server.start()?;
//! // ... later
//! running.shutdown();
//! # Ok::<(), webscope_server::Error>(())
//! ```
#![deny(missing_docs)]

mod access_log;
mod admin;
mod cache;
mod config;
mod dns;
mod epoll;
mod error;
mod exchange;
mod fields;
mod files;
mod http1;
mod io;
mod listener;
mod metrics;
mod quic;
mod range;
mod respond;
mod server;
pub mod services;
mod slots;
mod techniques;
mod timing;
mod tls;
mod uring;
mod url_map;
mod worker;

pub use cache::REVALIDATE;
pub use config::{AccessLog, Config, Engine, Io, TlsFiles};
pub use error::Error;
pub use metrics::{json as stats_json, prometheus, Info};
pub use server::{Running, Server};
pub use techniques::{Techniques, UnknownTechnique, NAMES as TECHNIQUES};
pub use timing::{size_class, Stats, CLASSES, PHASES};
pub use tls::KtlsState;
pub use uring::probe as uring_probe;
pub use url_map::UrlMap;
