//! Lines that did not parse, a gzip file whose data stopped being readable, and the error
//! when no line parsed.

use std::path::PathBuf;

use crate::error::Error;
use crate::format::Format;

/// A line that did not parse.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BadLine {
    /// Index of the file, into the paths given.
    pub file: usize,
    /// Line number, from 1.
    pub line: u64,
    /// The line (cut to 200 characters).
    pub text: String,
    /// Why it did not parse.
    pub why: &'static str,
}

/// A gzip file whose data stopped being readable (cut short, or corrupt): its lines up to
/// `line` were read, as `zcat` reads them, and nothing after (issue 51, item 12: the whole
/// file was refused).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CutShort {
    /// Index of the file, into the paths given.
    pub file: usize,
    /// The last line read whole.
    pub line: u64,
    /// Where and why the data stops (`the file ends inside the deflate data of the gzip
    /// member at byte 1234`).
    pub why: String,
}

pub(crate) fn nothing_parsed(
    paths: &[PathBuf],
    format: Option<Format>,
    lines: u64,
    first_bad: Option<&BadLine>,
    cut: Option<&CutShort>,
) -> Error {
    let files = paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    if let Some(cut) = cut {
        // The data stopped before a line could be read: that is why, not the format.
        return Error::Read {
            path: paths[cut.file].clone(),
            line: cut.line,
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, cut.why.clone()),
        };
    }
    let Some(bad) = first_bad else {
        return Error::NoLogLine { files, lines };
    };
    let (example_file, example_line, why) =
        (paths[bad.file].display().to_string(), bad.line, bad.why);
    Error::NothingParsed {
        files,
        lines,
        format: Format::describe(format),
        example_file,
        example_line,
        why,
    }
}
