//! A log is lines: an input with no line end in [`MAX_RUN`] bytes is not one. The line reader
//! reads an over-long line in bounded memory ([`webscope_sys::LineReader`]) but to its end,
//! so `/dev/zero`, or a gzip of zeros, was read for ever; here the reading stops at the
//! first run of [`MAX_RUN`] bytes without a `\n`, with an error that says so.
//!
//! A wrapper of the file's `BufRead` (plain or inflated alike) rather than a change of the
//! line reader, which other inputs share: it watches the bytes the line reader consumes, at
//! no copy, and answers `fill_buf` with the error once a run is too long.

use std::io::{self, BufRead, Read};

/// The longest run of bytes without a line end read before the input is refused: 16 MiB,
/// 256 times the longest line kept ([`webscope_sys::MAX_LINE`]), so that a log with a few
/// bad lines (a crash leaves blocks of NULs) is still read, and `/dev/zero` is refused in
/// a few milliseconds.
pub(crate) const MAX_RUN: u64 = 16 << 20;

/// Why an input was refused: carried in the `io::Error` the line reader passes on.
#[derive(Debug)]
pub(crate) struct NoLineEnd;

impl std::fmt::Display for NoLineEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "no line end in {} MiB: not an access log (its lines are a few hundred bytes)",
            MAX_RUN >> 20
        )
    }
}

impl std::error::Error for NoLineEnd {}

/// A `BufRead` that fails once [`MAX_RUN`] bytes were consumed without a `\n`.
pub(crate) struct LineEnds<R> {
    inner: R,
    /// Bytes consumed since the last `\n`.
    run: u64,
    /// In the chunk `fill_buf` last gave (less what was consumed of it since): where its
    /// first and last `\n` lie, so that `consume` knows what it passed without a second look.
    first: Option<usize>,
    last: Option<usize>,
}

impl<R: BufRead> LineEnds<R> {
    pub fn new(inner: R) -> LineEnds<R> {
        LineEnds {
            inner,
            run: 0,
            first: None,
            last: None,
        }
    }
}

impl<R: BufRead> Read for LineEnds<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let chunk = self.fill_buf()?;
        let n = chunk.len().min(buf.len());
        buf[..n].copy_from_slice(&chunk[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for LineEnds<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.run > MAX_RUN {
            return Err(io::Error::new(io::ErrorKind::InvalidData, NoLineEnd));
        }
        let chunk = self.inner.fill_buf()?;
        self.first = memchr::memchr(b'\n', chunk);
        self.last = memchr::memrchr(b'\n', chunk);
        Ok(chunk)
    }

    fn consume(&mut self, amount: usize) {
        self.run = match (self.first, self.last) {
            // Past the last line end of the chunk: the run starts after it.
            (_, Some(last)) if last < amount => (amount - last - 1) as u64,
            // Past the first but not the last: the run is at most what follows the first
            // (the line reader consumes up to a line end exactly, so it is exact there).
            (Some(first), _) if first < amount => (amount - first - 1) as u64,
            _ => self.run + amount as u64,
        };
        let shift = |at: Option<usize>| at.and_then(|a| a.checked_sub(amount));
        self.first = shift(self.first);
        self.last = shift(self.last);
        if self.first.is_none() {
            // The first line end was consumed: the next one is unknown until `fill_buf`,
            // which the line reader calls before it consumes again.
            self.last = None;
        }
        self.inner.consume(amount);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use webscope_sys::{Line, LineReader, MAX_LINE};

    fn lines(input: impl Read) -> (u64, io::Result<()>) {
        let mut r = LineReader::new(
            LineEnds::new(io::BufReader::with_capacity(4096, input)),
            MAX_LINE,
        );
        loop {
            match r.next_line() {
                Ok(Some(Line::Text(_) | Line::TooLong { .. })) => {}
                Ok(None) => return (r.line_number(), Ok(())),
                Err(e) => return (r.line_number(), Err(e)),
            }
        }
    }

    #[test]
    fn endless_zeros_are_refused_after_the_run() {
        // An endless input: the reading ends, with the error, having read little past the run.
        let (read, result) = lines(io::repeat(0));
        let err = result.expect_err("an endless line is refused");
        assert!(err.get_ref().is_some_and(|e| e.is::<NoLineEnd>()), "{err}");
        assert_eq!(read, 0);
        // Good lines first: they are read, then the run stops it.
        let input = io::Read::chain(&b"a\nb\n"[..], io::repeat(b'x'));
        let (read, result) = lines(input);
        assert!(result.is_err());
        assert_eq!(read, 2);
    }

    #[test]
    fn long_lines_under_the_run_and_many_short_lines_are_read() {
        // Lines of 1 MiB (over MAX_LINE: bad lines, yet read) and 100 000 short ones.
        let mut text = Vec::new();
        for _ in 0..20 {
            text.extend(std::iter::repeat_n(b'y', 1 << 20));
            text.push(b'\n');
        }
        for _ in 0..100_000 {
            text.extend_from_slice(b"short line\n");
        }
        let (read, result) = lines(&text[..]);
        result.expect("read to the end");
        assert_eq!(read, 100_020);
        // Exactly the run without a line end, then one: still a log's (bad) line.
        let mut text = vec![b'z'; MAX_RUN as usize];
        text.extend_from_slice(b"\nok\n");
        let (read, result) = lines(&text[..]);
        result.expect("a run of exactly MAX_RUN is allowed");
        assert_eq!(read, 2);
    }
}
