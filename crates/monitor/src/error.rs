//! Why the monitor could not start or finish. Each message says what is wrong and how to fix
//! it; problems met while sampling are notes ([`crate::Note`]), not errors.

use std::io;
use std::path::PathBuf;

/// Why a monitor run could not start or write its results.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A setting is out of range.
    #[error("{0}")]
    Config(String),
    /// A `--pid` names no process.
    #[error(
        "no process {pid} ({reason}): give the PID of a running process (e.g. from `pgrep NAME`)"
    )]
    Pid {
        /// The PID as given.
        pid: u32,
        /// What /proc said.
        reason: String,
    },
    /// The output directory or a file in it cannot be written.
    #[error("cannot write {}: {source} (give a writable directory with --out)", .path.display())]
    Out {
        /// The file or directory.
        path: PathBuf,
        /// What the OS said.
        source: io::Error,
    },
    /// A `/proc` file a measurement needs cannot be read or parsed.
    #[error("{0}")]
    Proc(String),
    /// The node_exporter to sample does not answer (or is not one).
    #[error("{0}")]
    Scrape(String),
    /// The sampling thread could not be started.
    #[error("cannot start the monitor thread: {0}")]
    Thread(io::Error),
    /// The sampling thread panicked.
    #[error("the monitor thread stopped unexpectedly")]
    Panicked,
}
