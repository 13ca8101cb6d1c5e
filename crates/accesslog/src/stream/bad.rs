//! Lines that did not parse, and the error when none did.

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

pub(crate) fn nothing_parsed(
    paths: &[PathBuf],
    format: Option<Format>,
    lines: u64,
    first_bad: Option<&BadLine>,
) -> Error {
    let files = paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
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
