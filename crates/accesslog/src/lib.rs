//! Apache and nginx access logs: a tolerant parser, and the workload characterization of a
//! log (the figures of Arlitt & Williamson's "search for invariants").
//!
//! What it is for: reading the logs a real site's server wrote — Common and Combined Log
//! Format, optionally with nginx's `$request_time` or Apache's `%D` appended, plain or gzip,
//! many files given in any order — as a stream of [`Entry`] values in time order
//! ([`stream_logs`]), so that webscope can describe the site's traffic (`webscope
//! characterize`, its sessions and page views included), build a file set like it
//! (`webscope fileset like`), replay it (`webscope load --replay`) and have virtual users
//! play its sessions ([`session_scripts`]: `load --users --sessions`, the lab's users experiment), in
//! memory that follows what is distinct in the log, not its length.
//!
//! What it is not for: a log analyser of the GoAccess kind (sessions only by address and
//! user agent, never by cookie; no geography, no bots), a general log-format language (only
//! the formats [`Format`] names), or a live tail of a log being written. It never writes a
//! log: `webscope serve` does that itself.
//!
//! ```
//! use webscope_accesslog::parse_line;
//! let e = parse_line(
//!     r#"::1 - - [10/Oct/2000:13:55:36 -0700] "GET /a.gif?x=1 HTTP/1.0" 200 2326 "-" "curl/8""#,
//!     None,
//! )
//! .unwrap();
//! assert_eq!((e.path.as_str(), e.query.as_deref(), e.bytes), ("/a.gif", Some("x=1"), 2326));
//! ```
//!
//! Why this design: a log is evidence about a site, so a line that does not parse is counted
//! and shown ([`Parsed::bad_lines`], [`Parsed::bad_examples`]), never fatal, and never
//! silently dropped. A line over 64 KiB (read without being held) and a line dated before
//! 1990 or more than a day ahead of the clock ([`implausible_time`]) are bad lines too, so
//! that no input asks for memory by its length or its span. Only a log of which no line
//! parses is an error, because then the format is wrong. The entries are not sorted as a
//! whole: real logs are in time order only to within a second or so (each worker writes its
//! own buffer), so each file passes through a reorder buffer of one look-back and the files
//! are merged by time ([`stream_logs`]); sorting every entry would hold the whole log.
#![deny(missing_docs)]

pub mod characterize;
mod clf_time;
mod error;
mod format;
pub mod like;
mod line;
mod plausible;
mod printable;
mod read;
mod stream;

pub use characterize::scripts::{
    session_scripts, Script, ScriptCollector, ScriptRequest, ScriptView, Scripts, REQUEST_BYTES,
    SCRIPT_BUDGET,
};
pub use compact_str::CompactString;
pub use error::Error;
pub use format::{Format, TimeUnit};
pub use line::{parse_line, replayed, Entry};
pub use plausible::{implausible_time, AHEAD, EARLIEST_UNIX};
pub use printable::printable;
pub use read::{read_logs, read_logs_with_progress, Parsed};
pub use stream::{
    stream_logs, stream_logs_until, stream_logs_while, BadLine, CutShort, ReadOptions, ReadSummary,
    MAX_BUFFERED,
};
