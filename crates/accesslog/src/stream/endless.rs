//! A log is lines: an input whose first [`MAX_FIRST`] bytes hold no line end is not one, nor
//! is one with a run of [`MAX_RUN`] bytes without a line end later on. The line reader reads
//! an over-long line in bounded memory ([`webscope_sys::LineReader`]) but to its end, so
//! `/dev/zero`, or a gzip of zeros, was read for ever; here the reading stops, with an error
//! that says so.
//!
//! Two bounds, because a corrupt log is still a log: a line of 100 MB among good ones (a
//! crash leaves blocks of NULs in a file being written) is one bad line, counted and shown,
//! while an input that begins with 16 MiB and no line end has shown nothing of a log at all.
//! Past the first line, only an input that goes on for ever is refused, at 1 GiB.
//!
//! A wrapper of the file's `BufRead` (plain or inflated alike) rather than a change of the
//! line reader, which other inputs share: it watches the bytes the line reader consumes, at
//! no copy, and answers `fill_buf` with the error once a run is too long.

use std::io::{self, BufRead, Read};

/// The most bytes read before the first line end: 16 MiB, 256 times the longest line kept
/// ([`webscope_sys::MAX_LINE`]); `/dev/zero` is refused in a few milliseconds.
pub(crate) const MAX_FIRST: u64 = 16 << 20;

/// The longest run of bytes without a line end after the first line end: 1 GiB, ten times
/// the 100 MB line that a log with a corrupt stretch was seen to hold.
pub(crate) const MAX_RUN: u64 = 1 << 30;

/// Why an input was refused: carried in the `io::Error` the line reader passes on.
#[derive(Debug)]
pub(crate) struct NoLineEnd {
    /// Whether no line end was seen at all.
    first: bool,
    /// The bound passed, bytes.
    limit: u64,
}

impl std::fmt::Display for NoLineEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let size = webscope_report::human::bytes(self.limit as f64);
        match self.first {
            true => write!(
                f,
                "no line end in the first {size}: not an access log (its lines are a few hundred bytes)"
            ),
            false => write!(
                f,
                "no line end in {size}: the input goes on without lines (is it a device or a stream of zeros?)"
            ),
        }
    }
}

impl std::error::Error for NoLineEnd {}

/// A `BufRead` that fails once [`MAX_FIRST`] bytes were consumed before the first `\n`, or
/// [`MAX_RUN`] without one later.
pub(crate) struct LineEnds<R> {
    inner: R,
    /// [`MAX_FIRST`] and [`MAX_RUN`] (smaller in tests).
    max_first: u64,
    max_run: u64,
    /// Whether a `\n` was consumed yet.
    seen_end: bool,
    /// Bytes consumed since the last `\n`.
    run: u64,
    /// In the chunk `fill_buf` last gave (less what was consumed of it since): where its
    /// first and last `\n` lie, so that `consume` knows what it passed without a second look.
    first: Option<usize>,
    last: Option<usize>,
}

impl<R: BufRead> LineEnds<R> {
    pub fn new(inner: R) -> LineEnds<R> {
        LineEnds::with_bounds(inner, MAX_FIRST, MAX_RUN)
    }

    fn with_bounds(inner: R, max_first: u64, max_run: u64) -> LineEnds<R> {
        LineEnds {
            inner,
            max_first,
            max_run,
            seen_end: false,
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
        let limit = if self.seen_end {
            self.max_run
        } else {
            self.max_first
        };
        if self.run > limit {
            let why = NoLineEnd {
                first: !self.seen_end,
                limit,
            };
            return Err(io::Error::new(io::ErrorKind::InvalidData, why));
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
        self.seen_end |= self.first.is_some_and(|first| first < amount);
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

    /// The lines of `input` read through bounds of 1 MiB first and 4 MiB later (the real
    /// ones, 16 MiB and 1 GiB, would take a debug build half a minute).
    fn lines(input: impl Read) -> (u64, io::Result<()>) {
        let ends =
            LineEnds::with_bounds(io::BufReader::with_capacity(4096, input), 1 << 20, 4 << 20);
        let mut r = LineReader::new(ends, MAX_LINE);
        loop {
            match r.next_line() {
                Ok(Some(Line::Text(_) | Line::TooLong { .. })) => {}
                Ok(None) => return (r.line_number(), Ok(())),
                Err(e) => return (r.line_number(), Err(e)),
            }
        }
    }

    #[test]
    fn endless_zeros_are_refused_at_the_start_and_after_good_lines() {
        // An endless input: the reading ends, with the error, having read little past the
        // first bound.
        let (read, result) = lines(io::repeat(0));
        let err = result.expect_err("an endless line is refused");
        assert!(err.get_ref().is_some_and(|e| e.is::<NoLineEnd>()), "{err}");
        assert!(err.to_string().contains("in the first 1 MiB"), "{err}");
        assert_eq!(read, 0);
        // Good lines first: they are read, then the longer run stops it.
        let input = io::Read::chain(&b"a\nb\n"[..], io::repeat(b'x'));
        let (read, result) = lines(input);
        let err = result.expect_err("an endless line is refused");
        assert!(err.to_string().contains("no line end in 4 MiB"), "{err}");
        assert_eq!(read, 2);
    }

    #[test]
    fn long_lines_under_the_run_and_many_short_lines_are_read() {
        // Lines of 1 MiB (over MAX_LINE: bad lines, yet read) and 100 000 short ones.
        let mut text = b"first\n".to_vec();
        for _ in 0..20 {
            text.extend(std::iter::repeat_n(b'y', 1 << 20));
            text.push(b'\n');
        }
        for _ in 0..100_000 {
            text.extend_from_slice(b"short line\n");
        }
        let (read, result) = lines(&text[..]);
        result.expect("read to the end");
        assert_eq!(read, 100_021);
        // Exactly the first bound without a line end, then one: still a log's (bad) line.
        let mut text = vec![b'z'; 1 << 20];
        text.extend_from_slice(b"\nok\n");
        let (read, result) = lines(&text[..]);
        result.expect("a first line of exactly the bound is allowed");
        assert_eq!(read, 2);
        // After a line end, a run over the first bound (a corrupt stretch) is a line like
        // another.
        let input = (&b"ok\n"[..])
            .chain(io::Read::take(io::repeat(0), 3 << 20))
            .chain(&b"\nok\n"[..]);
        let (read, result) = lines(input);
        result.expect("a long line after good ones is read");
        assert_eq!(read, 3);
    }
}
