//! Consecutive gzip members (RFC 1952) inflated from an offset on: the one member reader of
//! both the sequential reader and each of the parallel reader's threads, so that the two
//! give the same bytes before a damaged member and stop at the same place (issue 51, item
//! 12: they named lines 222 580 and 224 992 for one truncated file).
//!
//! Why its own, on flate2's `Decompress`, rather than flate2's `GzDecoder`: the decoder drops
//! what it inflated in the call that met the damage, and how much that is depends on the
//! caller's buffer sizes, which differ between the two readers. Here a member is inflated in
//! steps that depend on the member's bytes only: the deflate data is handed over in slices
//! that end at every [`ALIGN`] bytes from its start, into a fresh [`OUT`]-byte buffer each
//! time, and everything inflated before the damage is kept, as `zcat` keeps it. The header's
//! fields and the trailer's CRC-32 and length are checked as `GzDecoder` checks them.
//!
//! A damaged member (cut short, corrupt, failing its CRC, or bytes after the last member that
//! are no member) is a [`GzStop`] error after the bytes before it: the reader of lines ends
//! the file there and says where. An error of the file itself (EIO) stays an I/O error.

use std::fmt;
use std::io::{self, Read};

use flate2::{Crc, Decompress, FlushDecompress, Status};

/// Compressed bytes held at a time.
const INPUT_BUF: usize = 64 * 1024;
/// The deflate data is handed to the inflater in slices ending at multiples of this many
/// bytes from its start (or at the file's end).
const ALIGN: usize = 32 * 1024;
/// Inflated bytes per step: at least miniz's 32 KiB window, so that all it has inflated
/// before meeting damage is handed out in that step.
const OUT: usize = 64 * 1024;

const FHCRC: u8 = 0x02;
const FEXTRA: u8 = 0x04;
const FNAME: u8 = 0x08;
const FCOMMENT: u8 = 0x10;

/// Where and why a gzip file's data stops being readable: what `zcat` would complain of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GzStop(pub String);

impl fmt::Display for GzStop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for GzStop {}

/// The [`GzStop`] inside an I/O error, if it is one.
pub(crate) fn stop_of(e: &io::Error) -> Option<&GzStop> {
    e.get_ref()?.downcast_ref::<GzStop>()
}

fn stop(kind: io::ErrorKind, why: String) -> io::Error {
    io::Error::new(kind, GzStop(why))
}

enum State {
    /// At a member's start.
    Header,
    /// In a member's deflate data.
    Deflate {
        inflater: Decompress,
        crc: Crc,
        /// Where its deflate data starts.
        data_at: u64,
    },
    /// After its deflate data.
    Trailer { crc: Crc },
    /// The last member ended here.
    Ended(u64),
}

/// Members of one input, from a member's start on.
pub(super) struct Members<R> {
    input: R,
    buf: Box<[u8]>,
    /// The unread input: `buf[start..end]`, which starts at file offset `pos`.
    start: usize,
    end: usize,
    pos: u64,
    eof: bool,
    /// Where the member being read starts.
    member_at: u64,
    /// After the member that ends at or past this offset, no other is begun.
    stop_at: u64,
    state: State,
    out: Vec<u8>,
}

impl<R: Read> Members<R> {
    /// The members of `input`, whose first byte is at file offset `at`; none is begun at or
    /// past `stop_at` (`u64::MAX`: read to the end).
    pub(super) fn new(input: R, at: u64, stop_at: u64) -> Members<R> {
        Members {
            input,
            buf: vec![0u8; INPUT_BUF].into_boxed_slice(),
            start: 0,
            end: 0,
            pos: at,
            eof: false,
            member_at: at,
            stop_at,
            state: State::Header,
            out: Vec::with_capacity(OUT),
        }
    }

    /// Appends inflated bytes to `block` until it holds at least `size`, or the last member
    /// ended (its end is then returned). At an error, what was inflated before it is in
    /// `block`.
    pub(super) fn fill(&mut self, block: &mut Vec<u8>, size: usize) -> io::Result<Option<u64>> {
        while block.len() < size {
            match &mut self.state {
                State::Ended(end) => return Ok(Some(*end)),
                State::Header => self.header()?,
                State::Deflate { .. } => self.inflate(block)?,
                State::Trailer { .. } => self.trailer()?,
            }
        }
        Ok(match self.state {
            State::Ended(end) => Some(end),
            _ => None,
        })
    }

    fn window(&self) -> usize {
        self.end - self.start
    }

    fn advance(&mut self, n: usize) {
        self.start += n;
        self.pos += n as u64;
    }

    /// Reads until `n` bytes are unread (at most the buffer) or the input ends; whether
    /// there are `n`.
    fn ensure(&mut self, n: usize) -> io::Result<bool> {
        let n = n.min(INPUT_BUF);
        while self.window() < n && !self.eof {
            if self.end == INPUT_BUF || (self.start > 0 && self.window() == 0) {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            match self.input.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(read) => self.end += read,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(self.window() >= n)
    }

    fn truncated(&self, part: &str) -> io::Error {
        stop(
            io::ErrorKind::UnexpectedEof,
            format!(
                "the file ends inside the {part} of the gzip member at byte {}",
                self.member_at
            ),
        )
    }

    /// Reads a member's header (RFC 1952 §2.3), or ends at the input's end.
    fn header(&mut self) -> io::Result<()> {
        self.member_at = self.pos;
        if !self.ensure(1)? {
            self.state = State::Ended(self.pos);
            return Ok(());
        }
        let whole = self.ensure(10)?;
        let seen = &self.buf[self.start..self.start + self.window().min(10)];
        let magic = [0x1f, 0x8b, 0x08];
        let n = seen.len().min(3);
        if seen[..n] != magic[..n] || (seen.len() > 3 && seen[3] & 0xe0 != 0) {
            return Err(stop(
                io::ErrorKind::InvalidData,
                format!(
                    "the bytes from byte {} on are not a gzip member",
                    self.member_at
                ),
            ));
        }
        if !whole {
            return Err(self.truncated("header"));
        }
        let head = &self.buf[self.start..self.start + 10];
        let flags = head[3];
        let mut header_crc = Crc::new();
        header_crc.update(head);
        self.advance(10);
        if flags & FEXTRA != 0 {
            if !self.ensure(2)? {
                return Err(self.truncated("header"));
            }
            let xlen = &self.buf[self.start..self.start + 2];
            header_crc.update(xlen);
            let mut left = usize::from(u16::from_le_bytes([xlen[0], xlen[1]]));
            self.advance(2);
            while left > 0 {
                if !self.ensure(1)? {
                    return Err(self.truncated("header"));
                }
                let n = left.min(self.window());
                header_crc.update(&self.buf[self.start..self.start + n]);
                self.advance(n);
                left -= n;
            }
        }
        for field in [FNAME, FCOMMENT] {
            if flags & field == 0 {
                continue;
            }
            // A string ended by a zero byte, skipped as it is read: never held.
            loop {
                if !self.ensure(1)? {
                    return Err(self.truncated("header"));
                }
                let seen = &self.buf[self.start..self.end];
                let (n, ended) = match memchr::memchr(0, seen) {
                    Some(zero) => (zero + 1, true),
                    None => (seen.len(), false),
                };
                header_crc.update(&seen[..n]);
                self.advance(n);
                if ended {
                    break;
                }
            }
        }
        if flags & FHCRC != 0 {
            if !self.ensure(2)? {
                return Err(self.truncated("header"));
            }
            let want = u16::from_le_bytes([self.buf[self.start], self.buf[self.start + 1]]);
            if want != header_crc.sum() as u16 {
                return Err(stop(
                    io::ErrorKind::InvalidData,
                    format!(
                        "the gzip member at byte {} fails its header's CRC check",
                        self.member_at
                    ),
                ));
            }
            self.advance(2);
        }
        self.state = State::Deflate {
            inflater: Decompress::new(false),
            crc: Crc::new(),
            data_at: self.pos,
        };
        Ok(())
    }

    /// One step of inflating: the deflate data up to the next [`ALIGN`] boundary, into a
    /// fresh [`OUT`] bytes, appended to `block`.
    fn inflate(&mut self, block: &mut Vec<u8>) -> io::Result<()> {
        let State::Deflate { data_at, .. } = self.state else {
            return Ok(());
        };
        let to_boundary = ALIGN - ((self.pos - data_at) % ALIGN as u64) as usize;
        self.ensure(to_boundary)?;
        let take = to_boundary.min(self.window());
        let State::Deflate { inflater, crc, .. } = &mut self.state else {
            return Ok(());
        };
        self.out.clear();
        let before = inflater.total_in();
        let status = inflater.decompress_vec(
            &self.buf[self.start..self.start + take],
            &mut self.out,
            FlushDecompress::None,
        );
        let used = (inflater.total_in() - before) as usize;
        crc.update(&self.out);
        block.extend_from_slice(&self.out);
        let made = self.out.len();
        self.advance(used);
        match status {
            Ok(Status::StreamEnd) => {
                if let State::Deflate { crc, .. } = std::mem::replace(&mut self.state, State::Header)
                {
                    self.state = State::Trailer { crc };
                }
            }
            Ok(_) if used > 0 || made > 0 => {}
            Ok(_) if take == 0 && self.eof => return Err(self.truncated("deflate data")),
            Ok(_) | Err(_) => {
                return Err(stop(
                    io::ErrorKind::InvalidData,
                    format!(
                        "the gzip member at byte {} is corrupt (its deflate data does not decode at byte {})",
                        self.member_at, self.pos
                    ),
                ))
            }
        }
        Ok(())
    }

    /// Checks a member's trailer (CRC-32 and length of what it inflated), then ends the
    /// thread's members when the member ended at or past `stop_at`.
    fn trailer(&mut self) -> io::Result<()> {
        let State::Trailer { crc } = &self.state else {
            return Ok(());
        };
        let (sum, amount) = (crc.sum(), crc.amount());
        if !self.ensure(8)? {
            return Err(self.truncated("trailer"));
        }
        let t = &self.buf[self.start..self.start + 8];
        let want_crc = u32::from_le_bytes([t[0], t[1], t[2], t[3]]);
        let want_len = u32::from_le_bytes([t[4], t[5], t[6], t[7]]);
        if want_crc != sum || want_len != amount {
            return Err(stop(
                io::ErrorKind::InvalidData,
                format!(
                    "the gzip member at byte {} fails its CRC check (its data is corrupt)",
                    self.member_at
                ),
            ));
        }
        self.advance(8);
        self.state = if self.pos >= self.stop_at {
            State::Ended(self.pos)
        } else {
            State::Header
        };
        Ok(())
    }
}
