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

/// An open interval log.
pub(crate) struct Hlog {
    path: PathBuf,
    file: BufWriter<File>,
    serializer: V2DeflateSerializer,
}

impl Hlog {
    /// Creates the log and writes its header; `start` is the run's start (the base time).
    pub(crate) fn create(path: &Path, start: SystemTime, what: &str) -> Result<Hlog, Error> {
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
        let header = format!(
            "#webscope load interval log: {what}\n\
             #Latency in nanoseconds; untagged lines hold all requests, Tag=<class> lines one class\n\
             #[StartTime: {epoch:.3} (seconds since epoch)]\n\
             #[BaseTime: {epoch:.3} (seconds since epoch)]\n\
             \"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n"
        );
        log.file.write_all(header.as_bytes()).map_err(fail)?;
        log.file.flush().map_err(fail)?;
        Ok(log)
    }

    /// Writes one interval histogram, `offset` after the base time, with an optional tag.
    pub(crate) fn write(
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
    pub(crate) fn flush(&mut self) -> Result<(), Error> {
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
    let text = std::fs::read(path).map_err(|source| Error::Hlog {
        path: path.to_path_buf(),
        source,
    })?;
    parse_intervals(&text, tag).map_err(|why| Error::Hlog {
        path: path.to_path_buf(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, why),
    })
}

/// [`read_intervals`] on a log's text already in memory (a result framed in a pod's log).
pub fn parse_intervals(text: &[u8], tag: Option<&str>) -> Result<Vec<LoggedInterval>, String> {
    use base64::Engine;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    use hdrhistogram::serialization::Deserializer;
    let mut deserializer = Deserializer::new();
    let mut out = Vec::new();
    for entry in IntervalLogIterator::new(text) {
        let LogEntry::Interval(interval) = entry.map_err(|e| format!("{e:?}"))? else {
            continue;
        };
        if interval.tag().map(|t| t.as_str()) != tag {
            continue;
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(interval.encoded_histogram())
            .map_err(|e| e.to_string())?;
        let histogram: Histogram<u64> = deserializer
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| format!("{e:?}"))?;
        out.push(LoggedInterval {
            start_s: interval.start_timestamp().as_secs_f64(),
            length_s: interval.duration().as_secs_f64(),
            histogram,
        });
    }
    Ok(out)
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
        // Both auto-resize: adding cannot fail.
        let _ = total.add(&interval.histogram);
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
