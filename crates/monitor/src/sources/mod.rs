//! One module per data source, each reading one part of `/proc` (or netlink) and turning two
//! readings into rows of rates and levels. A source keeps its previous reading; the first
//! call only sets that baseline.

pub(crate) mod cpu;
pub(crate) mod disk;
pub(crate) mod memory;
pub(crate) mod net;
pub(crate) mod ports;
pub(crate) mod process;
pub(crate) mod snmp;
pub(crate) mod sockstat;

use crate::notes::Notes;
use crate::table::GroupRows;

/// What a source knows about the instant it samples.
pub(crate) struct Ctx<'a> {
    /// Seconds since the monitor started.
    pub t: f64,
    /// Seconds since the previous sample (0 at the baseline).
    pub dt: f64,
    /// Where problems that do not stop sampling are written down.
    pub notes: &'a mut Notes,
}

/// A data source.
pub(crate) trait Source: Send {
    /// Its name in notes and in the cost table.
    fn name(&self) -> &'static str;
    /// Reads the OS and appends rows (none at the baseline, when `ctx.dt` is 0, for rates).
    fn sample(&mut self, ctx: &mut Ctx<'_>, out: &mut Vec<GroupRows>) -> Result<(), String>;
}

/// A `/proc` file kept open and read again from its start at every sample.
///
/// Opening a `/proc` file costs about as much as reading it (path walk, allocation of the
/// seq_file); at ten samples a second over a dozen files and a few threads that is a good
/// part of the monitor's cost, so each file is opened once and re-read with `pread`, which
/// makes the kernel generate it afresh. The buffer is reused too.
pub(crate) struct ProcFile {
    path: String,
    file: Option<std::fs::File>,
    buf: Vec<u8>,
}

impl ProcFile {
    pub fn new(path: impl Into<String>) -> ProcFile {
        ProcFile {
            path: path.into(),
            file: None,
            buf: Vec::with_capacity(4096),
        }
    }

    /// The file's whole current content.
    pub fn read(&mut self) -> Result<&str, String> {
        if let Err(err) = self.read_raw() {
            return Err(format!("cannot read {}: {err}", self.path));
        }
        std::str::from_utf8(&self.buf).map_err(|_| format!("{} is not text", self.path))
    }

    /// Like [`ProcFile::read`], keeping the OS error (to tell a vanished process apart).
    pub fn read_raw(&mut self) -> std::io::Result<&[u8]> {
        use std::os::unix::fs::FileExt;
        if self.file.is_none() {
            self.file = Some(std::fs::File::open(&self.path)?);
        }
        let file = self.file.as_ref().expect("opened above");
        self.buf.clear();
        loop {
            if self.buf.len() == self.buf.capacity() {
                self.buf.reserve(self.buf.capacity().max(4096));
            }
            let len = self.buf.len();
            let spare = self.buf.capacity() - len;
            self.buf.resize(len + spare, 0);
            let result = file.read_at(&mut self.buf[len..], len as u64);
            match result {
                Ok(0) => {
                    self.buf.truncate(len);
                    return Ok(&self.buf);
                }
                Ok(n) => self.buf.truncate(len + n),
                Err(err) => {
                    self.buf.clear();
                    // A file of a process that is gone stays broken: reopen next time.
                    self.file = None;
                    return Err(err);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_file_is_read_afresh_each_time() {
        let mut file = ProcFile::new("/proc/thread-self/schedstat");
        let first: u64 = file
            .read()
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap();
        // schedstat's run time moves at scheduler ticks (up to 10 ms apart) and context
        // switches, not continuously: spin across several ticks.
        let began = std::time::Instant::now();
        let mut x = 0u64;
        while began.elapsed() < std::time::Duration::from_millis(50) {
            x = x.wrapping_add(std::hint::black_box(x | 1));
        }
        assert!(x > 0);
        let second: u64 = file
            .read()
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(second > first, "run time grew: {first} -> {second}");
        // Larger than the first buffer: read whole, twice.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big");
        let big: String = (0..3000).map(|i| format!("{i}\n")).collect();
        std::fs::write(&path, &big).unwrap();
        let mut file = ProcFile::new(path.to_str().unwrap());
        assert_eq!(file.read().unwrap(), big);
        assert_eq!(file.read().unwrap(), big);
        assert!(ProcFile::new("/proc/no-such-file")
            .read()
            .unwrap_err()
            .contains("/proc/no-such-file"));
    }
}
