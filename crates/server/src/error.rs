//! Errors the operator sees when the server cannot start. Each says what is wrong and how to
//! fix it, in one line.

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The document root cannot be used.
    #[error("cannot serve {path}: {source} (give an existing, readable directory with --root)")]
    Root {
        /// The root as given.
        path: PathBuf,
        /// What the OS said.
        source: io::Error,
    },
    /// The root is not a directory.
    #[error("cannot serve {0}: not a directory (give a directory with --root)")]
    RootNotDirectory(PathBuf),
    /// The listen address cannot be bound.
    #[error("cannot listen on {addr}: {source}{hint}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// What the OS said.
        source: io::Error,
        /// How to fix it.
        hint: &'static str,
    },
    /// The access log cannot be opened.
    #[error(
        "cannot open access log {path}: {source} (give a writable file, - for stdout, or off)"
    )]
    AccessLog {
        /// The path given.
        path: PathBuf,
        /// What the OS said.
        source: io::Error,
    },
    /// A setting is out of range.
    #[error("{0}")]
    Config(String),
    /// The TLS certificate or key cannot be used.
    #[error("{0}")]
    Tls(String),
    /// Something else the OS refused while starting (threads, runtimes).
    #[error("cannot start the server: {0}")]
    Start(io::Error),
}

impl Error {
    pub(crate) fn bind(addr: SocketAddr, source: io::Error) -> Error {
        let hint = match source.kind() {
            io::ErrorKind::AddrInUse => " (another process uses this port: stop it or choose another with --listen)",
            io::ErrorKind::PermissionDenied => " (ports below 1024 need privileges: choose a port above 1024 with --listen)",
            io::ErrorKind::AddrNotAvailable => " (this machine has no such address: use 127.0.0.1 or an address of one of its interfaces)",
            _ => "",
        };
        Error::Bind { addr, source, hint }
    }
}
