//! Why a load run could not start. Each message says what is wrong and how to fix it.

use std::io;
use std::path::PathBuf;

/// Why a run could not be set up (failures of single requests are counted, never fatal).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The URL cannot be used.
    #[error("bad URL {url:?}: {reason}")]
    Url {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The host name does not resolve.
    #[error("cannot resolve {host}: {source} (check the URL's host name)")]
    Resolve {
        /// The host name.
        host: String,
        /// What the resolver said.
        source: io::Error,
    },
    /// The file set cannot be used.
    #[error("{0}")]
    Fileset(#[from] webscope_workload::Error),
    /// A setting is out of range.
    #[error("{0}")]
    Config(String),
    /// An interval log cannot be read, or holds what no interval log may.
    #[error("cannot read the interval log {}: {why} (give the .hlog that `webscope load --hlog` wrote)", .path.display())]
    HlogRead {
        /// Its path.
        path: PathBuf,
        /// What is wrong, with the line.
        why: String,
    },
    /// The interval log cannot be written.
    #[error("cannot write the interval log {}: {source} (give a writable path with --hlog)", .path.display())]
    Hlog {
        /// Its path.
        path: PathBuf,
        /// What the OS said.
        source: io::Error,
    },
    /// The JSON report cannot be written.
    #[error("cannot write {}: {source} (give a writable path with --json)", .path.display())]
    Json {
        /// Its path.
        path: PathBuf,
        /// What the OS said.
        source: io::Error,
    },
    /// The per-request samples cannot be written.
    #[error("cannot write the samples {}: {source} (give a writable path with --samples)", .path.display())]
    Output {
        /// Its path.
        path: PathBuf,
        /// What the OS said.
        source: io::Error,
    },
    /// A thread or runtime could not be started.
    #[error("cannot start the load generator: {0}")]
    Start(io::Error),
}
