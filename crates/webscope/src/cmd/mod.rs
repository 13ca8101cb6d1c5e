//! One module per subcommand: its flags (`Args`) and the `run` function that turns them into
//! a library call.

pub mod characterize;
pub mod compare;
pub mod distribute;
pub mod fileset;
pub mod lab;
pub mod load;
pub mod merge;
pub mod model;
pub mod monitor;
pub mod reading;
pub mod report;
pub mod serve;

/// An ending that is not an error but leaves with a code of its own: a threshold crossed, or
/// one that could not be decided. `main` prints the message as it is and exits with `code`.
#[derive(Debug)]
pub struct Exit {
    pub code: i32,
    pub message: String,
}

/// The exit codes (README, "Exit codes"): a threshold crossed (k6's code), or not decidable.
pub const EXIT_THRESHOLD_CROSSED: i32 = 99;
pub const EXIT_UNDECIDED: i32 = 3;
/// A capacity search that ended without a capacity because the machine stayed disturbed.
pub const EXIT_DISTURBED: i32 = 4;
/// A lab stopped by Ctrl-C (128 + SIGINT, as shells report it), its partial report written.
pub const EXIT_INTERRUPTED: i32 = 130;

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Exit {}

/// A length flag's value, longer than zero, in the one grammar of lengths
/// (`webscope_sys::duration`: 10s, 500ms, 1m30s, a bare number as seconds, at most a year).
/// Given with `allow_hyphen_values`, so that `-d -3s` reaches here and is refused as negative
/// in one line instead of clap taking `-3s` for a flag.
pub fn positive_duration(text: &str) -> Result<std::time::Duration, String> {
    webscope_sys::duration::parse_positive(text).map_err(|e| e.to_string())
}

/// A length flag's value that may be zero, in the same grammar.
pub fn duration(text: &str) -> Result<std::time::Duration, String> {
    webscope_sys::duration::parse(text).map_err(|e| e.to_string())
}
