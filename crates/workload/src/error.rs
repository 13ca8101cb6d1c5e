//! What can go wrong when a file set is planned, written or read back. Each message says
//! what is wrong and how to fix it, in one line.

use std::io;
use std::path::PathBuf;

/// Why a file set could not be planned, written or loaded.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A parameter is out of range.
    #[error("{0}")]
    Invalid(String),
    /// The output directory exists and holds something.
    #[error("{} exists and is not empty (choose a new directory, or pass --force to replace a file set written by webscope)", .0.display())]
    OutExists(PathBuf),
    /// `--force` was given but the directory is not a file set webscope wrote, so it is left
    /// alone.
    #[error("{} is not a file set webscope wrote ({reason}), so --force will not delete it: choose another --out, or remove it yourself", .path.display())]
    NotAFileSet {
        /// The directory left alone.
        path: PathBuf,
        /// What shows it is not webscope's.
        reason: String,
    },
    /// The file system has too little free space.
    #[error("not enough space under {}: the set needs {needed}, the file system has {available} free (choose a smaller set or another --out)", .path.display())]
    NoSpace {
        /// Where the set was to be written.
        path: PathBuf,
        /// What the set needs, formatted.
        needed: String,
        /// What is free, formatted.
        available: String,
    },
    /// The set cannot be created where asked.
    #[error("cannot write under {}: {source} (choose a writable directory with --out)", .path.display())]
    Unwritable {
        /// The directory that could not be created or written.
        path: PathBuf,
        /// What the OS said.
        source: io::Error,
    },
    /// A file or directory could not be created, written or read.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The path involved.
        path: PathBuf,
        /// What the OS said.
        source: io::Error,
    },
    /// The manifest is not what webscope writes.
    #[error("{}: {reason} (regenerate it with `webscope fileset`)", .path.display())]
    BadManifest {
        /// The manifest's path.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// Writing was interrupted (Ctrl-C); the partial set was removed.
    #[error("interrupted: the partial file set was removed")]
    Interrupted,
}

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: io::Error) -> Error {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}
