//! Counts over time and by kind: the request rate per minute and per hour, methods, statuses
//! and document types.

use std::collections::BTreeMap;

use super::bins::Bins;
use crate::line::Entry;

/// Counts in fixed clock bins.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Series {
    /// Bin length, seconds.
    pub bin_s: u64,
    /// Start of the first bin (Unix seconds, a whole bin of the clock: the first and last bins
    /// may be partly outside the log).
    pub start_unix: i64,
    /// Requests in each bin.
    pub counts: Vec<u64>,
    /// Bins wholly inside the log (from its first second to its last): only they are compared,
    /// since a bin the log covers in part would read as a lull.
    pub whole_bins: usize,
    /// Mean requests per whole bin.
    pub mean: Option<f64>,
    /// Most requests in a whole bin.
    pub peak: Option<u64>,
    /// peak / mean over the whole bins: how much capacity above the average the busiest bin
    /// needed. `None` with fewer than two whole bins.
    pub peak_to_mean: Option<f64>,
}

/// Most bins a series holds. A log that would need more gets bins a whole multiple of the
/// length asked, so that its memory is bounded whatever its span (100 000 minutes is 69
/// days; 100 000 hours, 11 years).
pub const MAX_SERIES_BINS: u64 = 100_000;

impl Series {
    /// Counts `times` (Unix seconds, sorted) into bins of `bin_s` seconds, or of the least
    /// multiple of it that needs at most [`MAX_SERIES_BINS`] bins.
    pub fn new(times: &[i64], bin_s: u64) -> Series {
        let mut bins = Bins::new(bin_s, 4 * MAX_SERIES_BINS as usize);
        times.iter().for_each(|&t| bins.add(t));
        let (first, last) = (times.first().copied(), times.last().copied());
        Series::from_bins(&bins, bin_s, first.zip(last))
    }

    /// The series of `bins` (of a width dividing `bin_s` while they were not widened) over
    /// the log's first and last seconds, in bins of the least multiple of `bin_s` that needs
    /// at most [`MAX_SERIES_BINS`] bins (and of the bins' width, when they were widened).
    pub(crate) fn from_bins(bins: &Bins, bin_s: u64, span: Option<(i64, i64)>) -> Series {
        let Some((first, last)) = span else {
            return Series {
                bin_s,
                start_unix: 0,
                counts: Vec::new(),
                whole_bins: 0,
                mean: None,
                peak: None,
                peak_to_mean: None,
            };
        };
        let asked = widened(bin_s.max(1), last.abs_diff(first) + 1);
        let (bin_s, start, counts) = bins.regrouped(asked, first, last);
        let bin = bin_s as i64;
        let whole: Vec<u64> = counts
            .iter()
            .enumerate()
            .filter(|(i, _)| {
                let lo = start + *i as i64 * bin;
                lo >= first && lo + bin - 1 <= last
            })
            .map(|(_, &c)| c)
            .collect();
        let mean =
            (!whole.is_empty()).then(|| whole.iter().sum::<u64>() as f64 / whole.len() as f64);
        let peak = whole.iter().copied().max();
        let peak_to_mean = match (mean, peak) {
            (Some(m), Some(p)) if whole.len() >= 2 && m > 0.0 => Some(p as f64 / m),
            _ => None,
        };
        Series {
            bin_s,
            start_unix: start,
            counts,
            whole_bins: whole.len(),
            mean,
            peak,
            peak_to_mean,
        }
    }
}

/// The least multiple of `bin_s` that covers `span_s` seconds in at most [`MAX_SERIES_BINS`]
/// bins. The first bin starts on the clock's boundary before the first line, so the bins
/// cover up to `span_s + bin - 2` seconds: at most `span_s / bin + 2` of them.
fn widened(bin_s: u64, span_s: u64) -> u64 {
    bin_s * span_s.div_ceil(bin_s * (MAX_SERIES_BINS - 2)).max(1)
}

impl Series {
    /// Whether the bins are longer than asked: the log spans more than
    /// [`MAX_SERIES_BINS`] bins of `asked_s`.
    pub fn widened_from(&self, asked_s: u64) -> bool {
        self.bin_s != asked_s
    }

    /// The bin's length in words: `minute`, `hour`, `day`, or `15-minute bin`, `3-hour bin`.
    pub fn bin_name(&self) -> String {
        let s = self.bin_s;
        match s {
            60 => "minute".into(),
            3600 => "hour".into(),
            86_400 => "day".into(),
            _ if s % 86_400 == 0 => format!("{}-day bin", s / 86_400),
            _ if s % 3600 == 0 => format!("{}-hour bin", s / 3600),
            _ if s % 60 == 0 => format!("{}-minute bin", s / 60),
            _ => format!("{s}-second bin"),
        }
    }
}

/// What kind of document a path names, by its extension, as Arlitt & Williamson classed them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DocType {
    /// `.html`, `.htm`, `.shtml`, `.php`-less directory paths ending in `/`.
    Html,
    /// `.gif`, `.jpg`, `.png`, `.webp`, `.svg`, `.ico` ...
    Image,
    /// Style sheets and scripts.
    Code,
    /// Sound and video.
    Media,
    /// Any other extension.
    Other,
    /// No extension: the type cannot be told from the path.
    Unknown,
}

impl DocType {
    /// The type of a path (without query).
    pub fn of(path: &str) -> DocType {
        if path.ends_with('/') {
            return DocType::Html;
        }
        let name = path.rsplit('/').next().unwrap_or(path);
        let Some((_, ext)) = name.rsplit_once('.') else {
            return DocType::Unknown;
        };
        // Lower-cased on the stack: this runs once per reference, and an extension longer
        // than any below is Other whatever its case.
        let mut lower = [0u8; 8];
        let Some(ext) = lower.get_mut(..ext.len()).map(|l| {
            l.copy_from_slice(ext.as_bytes());
            l.make_ascii_lowercase();
            &*l
        }) else {
            return DocType::Other;
        };
        match ext {
            b"html" | b"htm" | b"shtml" | b"xhtml" => DocType::Html,
            b"gif" | b"jpg" | b"jpeg" | b"png" | b"webp" | b"svg" | b"ico" | b"bmp" | b"avif"
            | b"xbm" | b"tif" | b"tiff" => DocType::Image,
            b"css" | b"js" | b"mjs" | b"json" | b"map" | b"wasm" => DocType::Code,
            b"mp3" | b"mp4" | b"wav" | b"au" | b"ogg" | b"webm" | b"mov" | b"mpg" | b"mpeg"
            | b"avi" => DocType::Media,
            _ => DocType::Other,
        }
    }
}

/// Requests by method, status and document type.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Mix {
    /// Requests by method (`-` for requests the server could not read).
    pub methods: BTreeMap<String, u64>,
    /// Requests by status code.
    pub statuses: BTreeMap<u16, u64>,
    /// Share of responses with status 200.
    pub ok_share: f64,
    /// Share of 2xx responses.
    pub success_share: f64,
    /// Share of 304 Not Modified responses.
    pub not_modified_share: f64,
    /// Successful requests by document type (from the path's extension).
    pub types: BTreeMap<DocType, u64>,
}

/// The mix as entries stream by.
#[derive(Debug, Clone, Default)]
pub struct MixCounter {
    methods: BTreeMap<String, u64>,
    statuses: BTreeMap<u16, u64>,
    types: BTreeMap<DocType, u64>,
    requests: u64,
}

impl MixCounter {
    /// Counts one entry; `reference` says whether it names a document successfully.
    pub fn add(&mut self, e: &Entry, reference: bool) {
        self.requests += 1;
        match self.methods.get_mut(e.method.as_str()) {
            Some(c) => *c += 1,
            None => {
                self.methods.insert(e.method.to_string(), 1);
            }
        }
        *self.statuses.entry(e.status).or_insert(0) += 1;
        if reference {
            *self.types.entry(DocType::of(&e.path)).or_insert(0) += 1;
        }
    }

    /// The mix.
    pub fn mix(&self) -> Mix {
        let n = self.requests.max(1) as f64;
        let share = |f: &dyn Fn(u16) -> bool| {
            self.statuses
                .iter()
                .filter(|(s, _)| f(**s))
                .map(|(_, c)| *c)
                .sum::<u64>() as f64
                / n
        };
        Mix {
            ok_share: share(&|s| s == 200),
            success_share: share(&|s| (200..300).contains(&s)),
            not_modified_share: share(&|s| s == 304),
            methods: self.methods.clone(),
            statuses: self.statuses.clone(),
            types: self.types.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_and_peak_to_mean() {
        // From 0:00 to 3:59: four whole minutes of 3, 1, 0 and 4 requests.
        let s = Series::new(&[0, 30, 59, 61, 180, 190, 200, 239], 60);
        assert_eq!((s.start_unix, s.counts.clone()), (0, vec![3, 1, 0, 4]));
        assert_eq!((s.whole_bins, s.mean, s.peak), (4, Some(2.0), Some(4)));
        assert_eq!(s.peak_to_mean, Some(2.0));
        // From 0:59 to 2:10: only 1:00-1:59 is wholly inside; the partial minutes, though
        // charted, are not compared.
        let s = Series::new(&[59, 60, 61, 62, 130], 60);
        assert_eq!((s.counts.clone(), s.whole_bins), (vec![1, 3, 1], 1));
        assert_eq!((s.peak, s.peak_to_mean), (Some(3), None));
        assert!(Series::new(&[], 60).counts.is_empty());
    }

    #[test]
    fn a_span_of_decades_widens_the_bins_and_never_holds_more_than_the_cap() {
        // 1990 to 2026 in minutes would be 19 million bins.
        let times = [631_152_000, 631_152_030, 1_767_225_600];
        let s = Series::new(&times, 60);
        assert!(
            s.counts.len() as u64 <= MAX_SERIES_BINS,
            "{}",
            s.counts.len()
        );
        assert!(s.widened_from(60) && s.bin_s % 60 == 0, "{}", s.bin_s);
        assert_eq!(s.counts.iter().sum::<u64>(), 3);
        assert_eq!(s.bin_name(), format!("{}-minute bin", s.bin_s / 60));
        // A day of minutes is kept as asked.
        let day = Series::new(&[0, 86_399], 60);
        assert!(!day.widened_from(60));
        assert_eq!(
            (day.bin_name(), day.counts.len()),
            ("minute".to_string(), 1440)
        );
    }

    #[test]
    fn doc_types_by_extension() {
        assert_eq!(DocType::of("/"), DocType::Html);
        assert_eq!(DocType::of("/a/index.HTML"), DocType::Html);
        assert_eq!(DocType::of("/logo.png"), DocType::Image);
        assert_eq!(DocType::of("/app.js"), DocType::Code);
        assert_eq!(DocType::of("/a.tar.gz"), DocType::Other);
        assert_eq!(DocType::of("/dir00001/class2_3"), DocType::Unknown);
        assert_eq!(DocType::of("/v1.2/file"), DocType::Unknown);
        // Case is folded whatever the length; an extension longer than any known is Other.
        assert_eq!(DocType::of("/a/PHOTO.JPEG"), DocType::Image);
        assert_eq!(DocType::of("/a/movie.WebM"), DocType::Media);
        assert_eq!(DocType::of("/a/b.htmlhtmlhtml"), DocType::Other);
    }
}
