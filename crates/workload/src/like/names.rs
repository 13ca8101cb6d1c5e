//! File names of a set like a site: rank names, and which logged paths can be kept.

use crate::manifest::{BESIDE, MANIFEST, MARKER};

/// Files a directory holds before the next one begins (rank names).
const PER_DIR: usize = 1000;

/// The longest part of a kept path: NAME_MAX of Linux's file systems.
pub const MAX_NAME: usize = 255;

/// The longest kept path, in bytes: half of PATH_MAX (4096), so that the set's files can be
/// opened under any `--out` of up to 2 KiB (and its `copyNN/` and hidden partial names).
pub const MAX_PATH: usize = 2048;

/// The name of the file of popularity `rank` (0: most requested), keeping a plain extension.
pub(crate) fn rank_name(rank: usize, path: &str) -> String {
    let last = path.rsplit('/').next().unwrap_or("");
    let extension = last
        .rsplit_once('.')
        .map(|(_, e)| e)
        .filter(|e| !e.is_empty() && e.len() <= 5 && e.bytes().all(|b| b.is_ascii_alphanumeric()))
        .map(|e| format!(".{}", e.to_ascii_lowercase()))
        .unwrap_or_default();
    format!("d{:04}/{:07}{extension}", rank / PER_DIR, rank + 1)
}

/// A safe relative file name (letters, digits, `-_./`; no empty, `.` or `..` part), not
/// under a rank directory's name.
pub(crate) fn plain(p: &str) -> bool {
    !p.is_empty()
        && !p.ends_with('/')
        && p.split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..")
        && p.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./".contains(&b))
        && !is_rank(p)
}

/// Under a rank directory's name (`d0000/...`).
pub(crate) fn is_rank(p: &str) -> bool {
    p.len() > 5 && p.starts_with('d') && p[1..5].bytes().all(|b| b.is_ascii_digit())
}

/// Named like a file the set writes itself at its root, or under one as if a directory.
pub(crate) fn reserved(p: &str) -> bool {
    p.split('/')
        .next()
        .is_some_and(|first| [MANIFEST, MARKER].contains(&first) || BESIDE.contains(&first))
}
