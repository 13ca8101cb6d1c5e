//! The seven server techniques of Hu, Nanda & Yang (IPCCC 1999, Table 4), plus the
//! asynchronous access log, each switchable so that their effect can be measured one by one
//! (`--disable LIST`, `--baseline`).
//!
//! With everything off the server takes the naive per-request path the paper started from:
//! stat, open, read into a buffer, write, close; the Date header and the log time formatted
//! afresh for each request; an unbuffered `write()` of each log line; a reverse-DNS lookup per
//! request when host-name logging is on.

use std::fmt;

/// Which techniques are on. `Techniques::default()` has them all on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Techniques {
    /// `mmap`: large files are mapped and written from the mapping instead of read into a
    /// buffer (matters when sendfile is off).
    pub mmap: bool,
    /// `file-cache`: small files' bytes (and large files' open descriptors) kept in memory,
    /// bounded in bytes; a response from it is one write.
    pub file_cache: bool,
    /// `stat-cache`: file metadata (size, mtime, type, ETag) cached, so a hit costs no stat().
    pub stat_cache: bool,
    /// `dns-cache`: with host-name logging, reverse lookups cached (bounded) and done off the
    /// request path.
    pub dns_cache: bool,
    /// `string-cache`: the Date header and the log timestamp formatted once per second, status
    /// lines once per process.
    pub string_cache: bool,
    /// `uri-cache`: the URI → file translation (decoding, normalisation, checks, lookup) cached,
    /// keyed by Host and path.
    pub uri_cache: bool,
    /// `sendfile`: zero-copy send for files above the threshold.
    pub sendfile: bool,
    /// `async-log`: the access log buffered and written by its own thread.
    pub async_log: bool,
    /// `ktls` (not one of the paper's; only with TLS): after the handshake the session keys
    /// go to the kernel, so records are encrypted there and sendfile works under TLS. Used
    /// only where the kernel has the `tls` ULP; the server says which way it ran.
    pub ktls: bool,
    /// `gso` (not one of the paper's; only with `--http3`): UDP segmentation offload, the
    /// QUIC form of sendfile's point (fewer trips through the stack per byte): quinn hands the
    /// kernel one buffer of up to 10 of a connection's datagrams per sendmsg and the kernel
    /// (or the NIC) cuts it into packets; and its receiving twin GRO, the kernel coalescing a
    /// flow's datagrams into one buffer per recvmsg. Off, one datagram per system call each
    /// way. Used where the kernel has them (quinn probes UDP_SEGMENT and UDP_GRO).
    pub gso: bool,
}

/// Techniques beyond the paper's, switchable the same way (`--disable ktls`, `--disable gso`).
pub const EXTRA: [&str; 2] = ["ktls", "gso"];

/// The paper's techniques' names, in the order of its cumulative ablation (Figure 10).
pub const NAMES: [&str; 8] = [
    "dns-cache",
    "string-cache",
    "mmap",
    "stat-cache",
    "file-cache",
    "uri-cache",
    "sendfile",
    "async-log",
];

impl Default for Techniques {
    fn default() -> Self {
        Techniques {
            mmap: true,
            file_cache: true,
            stat_cache: true,
            dns_cache: true,
            string_cache: true,
            uri_cache: true,
            sendfile: true,
            async_log: true,
            ktls: true,
            gso: true,
        }
    }
}

/// A technique name that does not exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownTechnique(pub String);

impl fmt::Display for UnknownTechnique {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown technique {:?} (known: {}, {})",
            self.0,
            NAMES.join(", "),
            EXTRA.join(", ")
        )
    }
}

impl std::error::Error for UnknownTechnique {}

impl Techniques {
    /// Everything off: the paper's baseline.
    pub fn baseline() -> Techniques {
        Techniques {
            mmap: false,
            file_cache: false,
            stat_cache: false,
            dns_cache: false,
            string_cache: false,
            uri_cache: false,
            sendfile: false,
            async_log: false,
            ktls: false,
            gso: false,
        }
    }

    fn slot(&mut self, name: &str) -> Result<&mut bool, UnknownTechnique> {
        Ok(match name {
            "mmap" => &mut self.mmap,
            "file-cache" => &mut self.file_cache,
            "stat-cache" => &mut self.stat_cache,
            "dns-cache" => &mut self.dns_cache,
            "string-cache" => &mut self.string_cache,
            "uri-cache" => &mut self.uri_cache,
            "sendfile" => &mut self.sendfile,
            "async-log" => &mut self.async_log,
            "ktls" => &mut self.ktls,
            "gso" => &mut self.gso,
            _ => return Err(UnknownTechnique(name.to_string())),
        })
    }

    /// Turns one technique on or off by its command-line name.
    pub fn set(&mut self, name: &str, on: bool) -> Result<(), UnknownTechnique> {
        *self.slot(name.trim())? = on;
        Ok(())
    }

    /// Whether a technique is on.
    pub fn get(&self, name: &str) -> Result<bool, UnknownTechnique> {
        let mut copy = *self;
        copy.slot(name).map(|on| *on)
    }

    /// Turns off each technique of a comma-separated list.
    pub fn disable_list(&mut self, list: &str) -> Result<(), UnknownTechnique> {
        for name in list.split(',').filter(|n| !n.trim().is_empty()) {
            self.set(name, false)?;
        }
        Ok(())
    }

    /// The names of the techniques that are on, comma-separated ("none" if none).
    pub fn describe(&self) -> String {
        let on: Vec<&str> = NAMES
            .iter()
            .chain(&EXTRA)
            .copied()
            .filter(|n| self.get(n).unwrap_or(false))
            .collect();
        if on.is_empty() {
            "none".into()
        } else {
            on.join(",")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        let mut t = Techniques::baseline();
        for name in NAMES.iter().chain(&EXTRA) {
            assert!(!t.get(name).unwrap());
            t.set(name, true).unwrap();
            assert!(t.get(name).unwrap());
        }
        assert_eq!(t, Techniques::default());
        assert_eq!(Techniques::baseline().describe(), "none");
    }

    #[test]
    fn disable_list_and_unknown_names() {
        let mut t = Techniques::default();
        t.disable_list("mmap, sendfile").unwrap();
        assert!(!t.mmap && !t.sendfile && t.file_cache);
        let err = t.disable_list("mmap,warp-drive").unwrap_err();
        assert!(err.to_string().contains("warp-drive") && err.to_string().contains("uri-cache"));
    }
}
