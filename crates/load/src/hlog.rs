//! The HdrHistogram interval log (`--hlog`): one line per interval for all requests and one
//! per class (tagged), in the standard format that HdrHistogram's HistogramLogProcessor and
//! the `hdrhistogram` crate read. Values are nanoseconds, as those tools assume by default.
//!
//! Lines are written and flushed as each interval completes, so an interrupted run keeps
//! everything up to its last interval.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::Histogram;

use crate::Error;

/// An open interval log. Public so that another writer of per-interval histograms (the
/// monitor's kernel module, `kernel.hlog`) writes the same format through the same code.
pub struct Hlog {
    path: PathBuf,
    file: BufWriter<File>,
    serializer: V2DeflateSerializer,
}

impl Hlog {
    /// Creates the log and writes its header; `start` is the run's start (the base time).
    pub(crate) fn create(path: &Path, start: SystemTime, what: &str) -> Result<Hlog, Error> {
        Hlog::with_header(
            path,
            start,
            &[
                &format!("webscope load interval log: {what}"),
                "Latency in nanoseconds; untagged lines hold all requests, Tag=<class> lines one class",
            ],
        )
    }

    /// Creates a log whose header's comment lines are `about` (each written after a `#`),
    /// then the start and base times (`start`) and the column names.
    pub fn with_header(path: &Path, start: SystemTime, about: &[&str]) -> Result<Hlog, Error> {
        let fail = |source| Error::Hlog {
            path: path.to_path_buf(),
            source,
        };
        let file = webscope_sys::create_file(path).map_err(fail)?;
        let mut log = Hlog {
            path: path.to_path_buf(),
            file: BufWriter::new(file),
            serializer: V2DeflateSerializer::new(),
        };
        let epoch = start
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs_f64();
        // A line break inside a comment would start a line no reader expects.
        let mut header: String = about
            .iter()
            .map(|line| format!("#{}\n", line.replace(['\r', '\n'], " ")))
            .collect();
        header.push_str(&format!(
            "#[StartTime: {epoch:.3} (seconds since epoch)]\n\
             #[BaseTime: {epoch:.3} (seconds since epoch)]\n\
             \"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n"
        ));
        log.file.write_all(header.as_bytes()).map_err(fail)?;
        log.file.flush().map_err(fail)?;
        Ok(log)
    }

    /// Writes one interval histogram, `offset` after the base time, with an optional tag.
    pub fn write(
        &mut self,
        histogram: &Histogram<u64>,
        offset: Duration,
        length: Duration,
        tag: Option<&str>,
    ) -> Result<(), Error> {
        let fail = |e: std::io::Error| Error::Hlog {
            path: self.path.clone(),
            source: e,
        };
        // Tags may not hold commas, spaces or line breaks: replace them.
        let clean: Option<String> = tag.map(tag_of);
        let mut writer = IntervalLogWriterBuilder::new()
            .begin_log_with(&mut self.file, &mut self.serializer)
            .map_err(fail)?;
        writer
            .write_histogram(
                histogram,
                offset,
                length,
                clean.as_deref().and_then(Tag::new),
            )
            .map_err(|e| fail(std::io::Error::other(e.to_string())))
    }

    /// Pushes what was written to the file (see [`read_bins`] for reading it back).
    pub fn flush(&mut self) -> Result<(), Error> {
        self.file.flush().map_err(|source| Error::Hlog {
            path: self.path.clone(),
            source,
        })
    }
}

/// One interval of a log read back: its start and length in seconds, and its histogram of
/// latencies in nanoseconds.
pub struct LoggedInterval {
    /// Start, seconds after the log's base time.
    pub start_s: f64,
    /// Length, seconds.
    pub length_s: f64,
    /// The interval's latencies, nanoseconds.
    pub histogram: Histogram<u64>,
}

/// Reads an interval log back, interval by interval: `tag` picks one class's lines (`None`:
/// the untagged lines, all requests).
pub fn read_intervals(path: &Path, tag: Option<&str>) -> Result<Vec<LoggedInterval>, Error> {
    let fail = |why: String| Error::HlogRead {
        path: path.to_path_buf(),
        why,
    };
    let text = std::fs::read(path).map_err(|e| fail(e.to_string()))?;
    parse_intervals(&text, tag).map_err(fail)
}

/// [`read_intervals`] on a log's text already in memory (a result framed in a pod's log). An
/// error names the line (`line 7: ...`); every histogram is checked before it is believed
/// (`hdr_text`).
pub fn parse_intervals(text: &[u8], tag: Option<&str>) -> Result<Vec<LoggedInterval>, String> {
    Intervals::new(text, tag).collect()
}

/// The intervals of one tag of a log's text, decoded one at a time: what holds a log's
/// intervals one by one rather than all at once (a histogram decoded is about 150 KB
/// whatever its few hundred bytes of text, so a merge of an hour of one-second intervals
/// held 530 MB a tag). Errors as [`parse_intervals`]'s; after one, nothing more comes.
pub struct Intervals<'a> {
    text: &'a [u8],
    tag: Option<&'a str>,
    entries: hdrhistogram::serialization::interval_log::IntervalLogIterator<'a>,
    lines: Lines<'a>,
    failed: bool,
}

impl<'a> Intervals<'a> {
    /// The intervals of `text` tagged `tag` (`None`: the untagged lines, all requests).
    pub fn new(text: &'a [u8], tag: Option<&'a str>) -> Intervals<'a> {
        Intervals {
            text,
            tag,
            entries: hdrhistogram::serialization::interval_log::IntervalLogIterator::new(text),
            lines: Lines::new(text),
            failed: false,
        }
    }
}

impl Iterator for Intervals<'_> {
    type Item = Result<LoggedInterval, String>;

    fn next(&mut self) -> Option<Self::Item> {
        use hdrhistogram::serialization::interval_log::{LogEntry, LogIteratorError};
        if self.failed {
            return None;
        }
        loop {
            let interval = match self.entries.next()? {
                Ok(LogEntry::Interval(interval)) => interval,
                Ok(_) => continue,
                Err(LogIteratorError::ParseError { offset }) => {
                    self.failed = true;
                    return Some(Err(format!(
                        "line {}: not a line of an HdrHistogram interval log",
                        self.lines.at(offset)
                    )));
                }
            };
            if interval.tag().map(|t| t.as_str()) != self.tag {
                continue;
            }
            let encoded = interval.encoded_histogram();
            let offset = (encoded.as_ptr() as usize).wrapping_sub(self.text.as_ptr() as usize);
            let histogram = match crate::hdr_text::decode(encoded) {
                Ok(histogram) => histogram,
                Err(why) => {
                    self.failed = true;
                    return Some(Err(format!("line {}: {why}", self.lines.at(offset))));
                }
            };
            return Some(Ok(LoggedInterval {
                start_s: interval.start_timestamp().as_secs_f64(),
                length_s: interval.duration().as_secs_f64(),
                histogram,
            }));
        }
    }
}

/// Line numbers of offsets into a text, counted forwards as the offsets grow.
struct Lines<'a> {
    text: &'a [u8],
    counted: usize,
    line: usize,
}

impl<'a> Lines<'a> {
    fn new(text: &'a [u8]) -> Lines<'a> {
        Lines {
            text,
            counted: 0,
            line: 1,
        }
    }

    /// The line (from 1) that holds byte `offset`.
    fn at(&mut self, offset: usize) -> usize {
        let offset = offset.min(self.text.len());
        if offset < self.counted {
            self.counted = 0;
            self.line = 1;
        }
        self.line += self.text[self.counted..offset]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        self.counted = offset;
        self.line
    }
}

/// A class name as the log writes it in a `Tag=` (commas, spaces and line breaks replaced).
pub fn tag_of(name: &str) -> String {
    name.chars()
        .map(|c| {
            if matches!(c, ',' | ' ' | '\r' | '\n') {
                '_'
            } else {
                c
            }
        })
        .collect()
}

/// Reads an interval log back and counts its latencies into bins: `edges_ns` are the bins'
/// bounds in nanoseconds (n + 1 edges make n bins, each `[lo, hi)`); `tag` picks one class's
/// lines (`None`: the untagged lines, all requests). Intervals are summed.
pub fn read_bins(path: &Path, tag: Option<&str>, edges_ns: &[u64]) -> Result<Vec<u64>, Error> {
    let mut total = crate::recorder::histogram();
    for interval in read_intervals(path, tag)? {
        crate::hdr_text::add(&mut total, &interval.histogram).map_err(|why| Error::HlogRead {
            path: path.to_path_buf(),
            why: format!("its intervals together: {why}"),
        })?;
    }
    Ok(edges_ns
        .windows(2)
        .map(|w| {
            if w[1] <= w[0] {
                0
            } else {
                total.count_between(w[0], w[1] - 1)
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::{histogram, record};
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    use hdrhistogram::serialization::Deserializer;

    #[test]
    fn the_hdrhistogram_crate_reads_it_back() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("run.hlog");
        let mut log = Hlog::create(&path, SystemTime::now(), "test").unwrap();
        let mut h = histogram();
        for v in [1_000u64, 2_000, 3_000] {
            record(&mut h, v);
        }
        log.write(&h, Duration::ZERO, Duration::from_secs(1), None)
            .unwrap();
        log.write(
            &h,
            Duration::from_secs(1),
            Duration::from_secs(1),
            Some("a class,1"),
        )
        .unwrap();
        log.flush().unwrap();
        let text = std::fs::read(&path).unwrap();
        let mut counts = Vec::new();
        let mut tags = Vec::new();
        for entry in IntervalLogIterator::new(&text) {
            if let LogEntry::Interval(interval) = entry.unwrap() {
                let bytes = base64_decode(interval.encoded_histogram());
                let back: Histogram<u64> = Deserializer::new()
                    .deserialize(&mut bytes.as_slice())
                    .unwrap();
                counts.push(back.len());
                tags.push(interval.tag().map(|t| t.as_str().to_string()));
            }
        }
        assert_eq!(counts, vec![3, 3]);
        assert_eq!(tags, vec![None, Some("a_class_1".to_string())]);
        // And our own reader bins them.
        let edges = [0, 1_500, 2_500, 10_000];
        assert_eq!(read_bins(&path, None, &edges).unwrap(), vec![1, 1, 1]);
        assert_eq!(
            read_bins(&path, Some("a_class_1"), &edges).unwrap(),
            vec![1, 1, 1]
        );
        assert_eq!(
            read_bins(&path, Some("other"), &edges).unwrap(),
            vec![0, 0, 0]
        );
        assert!(read_bins(&tmp.path().join("none"), None, &edges).is_err());
    }

    #[test]
    fn a_hostile_histogram_is_refused_with_its_line() {
        use crate::hdr_text::tests::{compressed, header, overflowing};
        use base64::Engine as _;
        let plain = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
        let mut bomb = header(16 << 20, 3, 1, 100_000_000);
        bomb.resize(bomb.len() + (16 << 20), 0);
        for (histogram, says) in [
            (
                plain(&header(i32::MAX as u32, 3, 1, 100_000_000)),
                "claims a payload",
            ),
            (compressed(&bomb), "claims a payload"),
            (plain(&overflowing(i64::MAX)), "add up past"),
        ] {
            let log = format!(
                "#[StartTime: 1.000 (seconds since epoch)]\n\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n\
                 Tag=other,0.000,1.000,0.000,{histogram}\n0.000,1.000,0.000,{histogram}\n"
            );
            let err = parse_intervals(log.as_bytes(), None).err().unwrap();
            assert!(err.starts_with("line 4: ") && err.contains(says), "{err}");
            // Another tag's lines are not decoded at all.
            let err = parse_intervals(log.as_bytes(), Some("other"))
                .err()
                .unwrap();
            assert!(err.starts_with("line 3: "), "{err}");
        }
        let err = parse_intervals(b"0.000,1.000,0.000,HISTFAAAAB\n!!\n", None)
            .err()
            .unwrap();
        assert!(err.starts_with("line 1: "), "{err}");
    }

    fn base64_decode(text: &str) -> Vec<u8> {
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = Vec::new();
        let mut acc = 0u32;
        let mut bits = 0;
        for c in text.bytes().filter(|&c| c != b'=') {
            let v = ALPHABET.iter().position(|&a| a == c).unwrap() as u32;
            acc = acc << 6 | v;
            bits += 6;
            if bits >= 8 {
                bits -= 8;
                out.push((acc >> bits) as u8);
            }
        }
        out
    }
}
