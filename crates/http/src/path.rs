//! From a request target to a path under the document root: percent-decoding and dot-segment
//! removal (RFC 3986 §5.2.4), refusing anything that would climb above the root.
//!
//! Decoding comes first, so `%2e%2e` and `%2f` are seen for what they are: an encoded `..`
//! is a `..`, an encoded `/` separates segments (as nginx treats it). A target that, after
//! this, would leave the root is refused rather than clamped: a client that sends one is
//! probing, and a 400 says so in the log.

use std::fmt;

/// Why a target cannot name a path under the root (each answered with 400).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathError {
    /// Neither origin-form (`/p`) nor absolute-form (`http://h/p`).
    BadForm,
    /// A `%` not followed by two hex digits.
    BadEscape,
    /// A NUL byte, encoded or not.
    Nul,
    /// More `..` segments than there are directories above them.
    EscapesRoot,
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PathError::BadForm => "request target is not a path",
            PathError::BadEscape => "invalid percent-escape in the request target",
            PathError::Nul => "NUL in the request target",
            PathError::EscapesRoot => "request target leaves the document root",
        })
    }
}

impl std::error::Error for PathError {}

/// The path part of a request target: the target without scheme, authority, query and
/// fragment. Absolute-form (`http://host/p?q`) must be accepted by servers (RFC 9112 §3.2.2).
pub fn target_path(target: &str) -> Result<&str, PathError> {
    let path = if target.starts_with('/') {
        target
    } else if let Some(rest) = strip_scheme(target) {
        match rest.find('/') {
            Some(slash) => &rest[slash..],
            None => "/",
        }
    } else {
        return Err(PathError::BadForm);
    };
    let end = path.find(['?', '#']).unwrap_or(path.len());
    Ok(&path[..end])
}

fn strip_scheme(target: &str) -> Option<&str> {
    for scheme in ["http://", "https://"] {
        if target.len() >= scheme.len() && target[..scheme.len()].eq_ignore_ascii_case(scheme) {
            return Some(&target[scheme.len()..]);
        }
    }
    None
}

/// Decodes and normalises the path of `target` into `out`, which ends up as `/`-separated
/// segments without a leading `/` (ready for `openat` relative to the root); empty means the
/// root itself. Returns whether the path ends in `/` (it names a directory).
pub fn normalize(target: &str, out: &mut Vec<u8>) -> Result<bool, PathError> {
    let path = target_path(target)?;
    out.clear();
    decode(path.as_bytes(), out)?;
    let trailing_slash = decoded_trailing_slash(out);
    remove_dot_segments(out)?;
    Ok(trailing_slash || out.is_empty())
}

/// Percent-decodes `path` into `out`.
fn decode(path: &[u8], out: &mut Vec<u8>) -> Result<(), PathError> {
    let mut i = 0;
    while i < path.len() {
        let b = path[i];
        let byte = if b == b'%' {
            let hi = path.get(i + 1).and_then(|&h| hex(h));
            let lo = path.get(i + 2).and_then(|&l| hex(l));
            match (hi, lo) {
                (Some(hi), Some(lo)) => {
                    i += 2;
                    hi << 4 | lo
                }
                _ => return Err(PathError::BadEscape),
            }
        } else {
            b
        };
        if byte == 0 {
            return Err(PathError::Nul);
        }
        out.push(byte);
        i += 1;
    }
    Ok(())
}

fn decoded_trailing_slash(decoded: &[u8]) -> bool {
    let last = decoded.rsplit(|&b| b == b'/').next().unwrap_or(&[]);
    decoded.ends_with(b"/") || last == b"." || last == b".."
}

/// Rewrites `buf` (a decoded path) in place into its normal form: empty and `.` segments
/// dropped, `..` removing the segment before it, and an error when there is none.
///
/// In place because the output is never longer than the input: the write position trails the
/// read position by at least one byte whenever a separator is written.
fn remove_dot_segments(buf: &mut Vec<u8>) -> Result<(), PathError> {
    let mut write = 0;
    let mut read = 0;
    let len = buf.len();
    while read < len {
        let end = buf[read..]
            .iter()
            .position(|&b| b == b'/')
            .map_or(len, |p| read + p);
        match &buf[read..end] {
            b"" | b"." => {}
            b".." => {
                if write == 0 {
                    return Err(PathError::EscapesRoot);
                }
                write = buf[..write].iter().rposition(|&b| b == b'/').unwrap_or(0);
            }
            _ => {
                if write > 0 {
                    buf[write] = b'/';
                    write += 1;
                }
                buf.copy_within(read..end, write);
                write += end - read;
            }
        }
        read = end + 1;
    }
    buf.truncate(write);
    Ok(())
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(target: &str) -> Result<(String, bool), PathError> {
        let mut out = Vec::new();
        let dir = normalize(target, &mut out)?;
        Ok((String::from_utf8(out).unwrap(), dir))
    }

    #[test]
    fn plain_paths() {
        assert_eq!(norm("/"), Ok(("".into(), true)));
        assert_eq!(norm("/a/b.html"), Ok(("a/b.html".into(), false)));
        assert_eq!(norm("/a/b/"), Ok(("a/b".into(), true)));
        assert_eq!(norm("/a//b?x=1#f"), Ok(("a/b".into(), false)));
        assert_eq!(norm("http://h:1/a?q"), Ok(("a".into(), false)));
        assert_eq!(norm("HTTP://h"), Ok(("".into(), true)));
    }

    #[test]
    fn dot_segments() {
        assert_eq!(norm("/a/./b"), Ok(("a/b".into(), false)));
        assert_eq!(norm("/a/../b"), Ok(("b".into(), false)));
        assert_eq!(norm("/a/b/.."), Ok(("a".into(), true)));
        assert_eq!(norm("/a/%2e%2e/b"), Ok(("b".into(), false)));
        assert_eq!(norm("/a/..."), Ok(("a/...".into(), false)));
    }

    #[test]
    fn escapes_are_refused() {
        for target in [
            "/..",
            "/../etc/passwd",
            "/a/../../b",
            "/%2e%2e/x",
            "/%2E%2e%2fetc",
            "/a%2f..%2f..%2fb",
            "/./..",
        ] {
            assert_eq!(norm(target), Err(PathError::EscapesRoot), "{target}");
        }
    }

    #[test]
    fn bad_targets() {
        assert_eq!(norm("/a%00b"), Err(PathError::Nul));
        assert_eq!(norm("/a%zz"), Err(PathError::BadEscape));
        assert_eq!(norm("/a%2"), Err(PathError::BadEscape));
        assert_eq!(norm("*"), Err(PathError::BadForm));
        assert_eq!(norm("a/b"), Err(PathError::BadForm));
    }

    #[test]
    fn decoding() {
        assert_eq!(norm("/a%20b"), Ok(("a b".into(), false)));
        assert_eq!(norm("/a%2fb"), Ok(("a/b".into(), false)));
    }

    proptest::proptest! {
        #[test]
        fn result_never_contains_dot_dot_or_empty_segments(s in "[/a.%2eE]{0,24}") {
            let mut out = Vec::new();
            if normalize(&format!("/{s}"), &mut out).is_ok() {
                for seg in out.split(|&b| b == b'/') {
                    proptest::prop_assert!(seg != b".." && seg != b".");
                    proptest::prop_assert!(!seg.is_empty() || out.is_empty());
                }
            }
        }
    }
}
