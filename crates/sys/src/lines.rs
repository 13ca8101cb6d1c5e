//! Lines read with a bound on their length: the one line reader of every input webscope
//! reads line by line (access logs, request lists, measurement files).
//!
//! `BufRead::read_line` and `lines()` grow their buffer until they meet a newline, so a file
//! without one (`/dev/zero`, a gzip of zeros, a 100 MB line) takes memory in proportion to
//! its size and ends the process when the allocation fails. Here a line longer than the
//! limit is reported as [`Line::TooLong`] with its first `limit` bytes and its length, and
//! the rest of it is read and dropped chunk by chunk, never held: memory stays at the
//! limit plus the inner reader's own buffer, whatever the input.

use std::io::{self, BufRead};

/// The longest line an input of webscope may hold, 64 KiB: far above any access-log line or
/// request a real server accepts (nginx's `large_client_header_buffers` default is 8 KiB),
/// and small enough that a hostile line costs nothing.
pub const MAX_LINE: usize = 64 * 1024;

/// One line, without its `\n` (a `\r` before it is kept: the caller decides).
#[derive(Debug, PartialEq, Eq)]
pub enum Line<'a> {
    /// A line within the limit.
    Text(&'a [u8]),
    /// A line over the limit: its first `limit` bytes, and its whole length in bytes
    /// (without the `\n`).
    TooLong {
        /// The first `limit` bytes, to show where the line began.
        start: &'a [u8],
        /// The line's length.
        bytes: u64,
    },
}

/// Reads lines of at most `limit` bytes from a [`BufRead`].
#[derive(Debug)]
pub struct LineReader<R> {
    inner: R,
    limit: usize,
    buf: Vec<u8>,
    /// Lines returned so far: the number of the last one.
    line: u64,
}

impl<R: BufRead> LineReader<R> {
    /// A reader of lines of at most `limit` bytes ([`MAX_LINE`] unless a format says less).
    pub fn new(inner: R, limit: usize) -> LineReader<R> {
        LineReader {
            inner,
            limit,
            buf: Vec::new(),
            line: 0,
        }
    }

    /// The number of the line last returned, from 1 (0 before the first).
    pub fn line_number(&self) -> u64 {
        self.line
    }

    /// The next line, or `None` at the end of the input. A last line without a `\n` is a
    /// line; an empty input has none.
    pub fn next_line(&mut self) -> io::Result<Option<Line<'_>>> {
        self.buf.clear();
        let mut bytes = 0u64;
        let mut ended = false;
        loop {
            let chunk = match self.inner.fill_buf() {
                Ok(chunk) => chunk,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if chunk.is_empty() {
                break;
            }
            let (take, newline) = match memchr::memchr(b'\n', chunk) {
                Some(at) => (at, true),
                None => (chunk.len(), false),
            };
            let room = self.limit.saturating_sub(self.buf.len());
            self.buf.extend_from_slice(&chunk[..take.min(room)]);
            bytes += take as u64;
            self.inner.consume(take + usize::from(newline));
            if newline {
                ended = true;
                break;
            }
        }
        if !ended && bytes == 0 {
            return Ok(None);
        }
        self.line += 1;
        Ok(Some(if bytes > self.limit as u64 {
            Line::TooLong {
                start: &self.buf,
                bytes,
            }
        } else {
            Line::Text(&self.buf)
        }))
    }
}

/// Why [`read_text`] refused an input.
#[derive(Debug)]
pub enum TextError {
    /// The file could not be opened or read.
    Io(io::Error),
    /// A line over [`MAX_LINE`].
    LongLine,
    /// Bytes that are not UTF-8.
    NotUtf8,
    /// More than the bound given.
    TooBig,
}

/// A whole text input of at most `max` bytes, in lines of at most [`MAX_LINE`] (each ended
/// by `\n` in the text returned), from a file or, for `-`, standard input: so that
/// `/dev/zero` or a wrong file is refused by its first long line or its size, never held.
pub fn read_text(path: &std::path::Path, max: usize) -> Result<String, TextError> {
    let input: Box<dyn BufRead> = if path == std::path::Path::new("-") {
        Box::new(io::stdin().lock())
    } else {
        Box::new(io::BufReader::new(
            std::fs::File::open(path).map_err(TextError::Io)?,
        ))
    };
    let mut lines = LineReader::new(input, MAX_LINE);
    let mut text = String::new();
    while let Some(line) = lines.next_line().map_err(TextError::Io)? {
        let Line::Text(bytes) = line else {
            return Err(TextError::LongLine);
        };
        let line = std::str::from_utf8(bytes).map_err(|_| TextError::NotUtf8)?;
        if text.len() + line.len() > max {
            return Err(TextError::TooBig);
        }
        text.push_str(line);
        text.push('\n');
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(input: &[u8], limit: usize, capacity: usize) -> Vec<String> {
        let mut r = LineReader::new(io::BufReader::with_capacity(capacity, input), limit);
        let mut out = Vec::new();
        while let Some(line) = r.next_line().unwrap() {
            out.push(match line {
                Line::Text(t) => String::from_utf8_lossy(t).into_owned(),
                Line::TooLong { start, bytes } => {
                    format!("long {} {bytes}", String::from_utf8_lossy(start))
                }
            });
        }
        out
    }

    #[test]
    fn lines_blank_lines_and_a_last_line_without_newline() {
        assert_eq!(all(b"a\n\nbc\r\nd", 8, 3), ["a", "", "bc\r", "d"]);
        assert_eq!(all(b"a\n", 8, 3), ["a"]);
        assert!(all(b"", 8, 3).is_empty());
    }

    #[test]
    fn a_line_over_the_limit_keeps_its_start_and_length_and_the_next_line_follows() {
        // Chunks of 4 bytes: the long line spans several fills of the buffer.
        let got = all(b"ok\n0123456789abcdef\nnext\n12345", 5, 4);
        assert_eq!(got, ["ok", "long 01234 16", "next", "12345"]);
        // Exactly the limit is a line; one more byte is not.
        assert_eq!(all(b"12345\n123456\n", 5, 64), ["12345", "long 12345 6"]);
    }

    #[test]
    fn an_endless_line_is_read_in_bounded_memory() {
        // 64 MiB without a newline, from a reader that makes its bytes up as it goes.
        let zeros = io::Read::take(io::repeat(0), 64 << 20);
        let mut r = LineReader::new(io::BufReader::new(zeros), 1024);
        match r.next_line().unwrap() {
            Some(Line::TooLong { start, bytes }) => {
                assert_eq!((start.len(), bytes), (1024, 64 << 20))
            }
            other => panic!("{other:?}"),
        }
        assert!(r.buf.capacity() < 4096, "{}", r.buf.capacity());
        assert_eq!(r.next_line().unwrap(), None);
        assert_eq!(r.line_number(), 1);
    }

    #[test]
    fn a_text_is_read_whole_within_its_bounds_and_refused_past_them() {
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str, bytes: &[u8]| {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).unwrap();
            path
        };
        let ok = file("ok", b"a,b\r\n1,2");
        assert_eq!(read_text(&ok, 100).unwrap(), "a,b\r\n1,2\n");
        assert!(matches!(read_text(&ok, 5), Err(TextError::TooBig)));
        let long = file("long", &vec![b'x'; MAX_LINE + 1]);
        assert!(matches!(
            read_text(&long, usize::MAX),
            Err(TextError::LongLine)
        ));
        let binary = file("binary", b"\xff\xfe\n");
        assert!(matches!(read_text(&binary, 100), Err(TextError::NotUtf8)));
        let missing = dir.path().join("missing");
        assert!(matches!(read_text(&missing, 100), Err(TextError::Io(_))));
    }
}
