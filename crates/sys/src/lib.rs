//! `webscope-sys`: the few Linux calls that several webscope crates share, in one place so
//! that the server, the load generator and the monitor measure and configure the same way.
//!
//! What it is for:
//! - CPU clocks of the calling thread and of the whole process ([`thread_time`],
//!   [`process_time`]): the services' executor charges slices by them, the generator checks
//!   itself with them, the monitor prices its own sampling;
//! - the calling thread's wait in the run queue, from `/proc/thread-self/schedstat`
//!   ([`thread_wait`]);
//! - int socket options ([`setsockopt_int`]) and busy polling on a socket
//!   ([`set_busy_poll`]);
//! - writing a file into a directory others may write too ([`write_file`], [`create_file`]):
//!   a new file beside the target renamed over it, so that a symlink planted at the name is
//!   replaced, never followed. Every file webscope writes goes through one of the two;
//! - reading lines of input with a bound on a line's length ([`LineReader`]): an over-long
//!   line is a bad line, never a buffer that grows with it; and a whole text within a bound
//!   ([`read_text`]: a model file, a measured sweep);
//! - sets of CPUs and pinning the calling thread to them ([`cpus`]), for `load --cpu` and
//!   the lab's server and generator alike;
//! - the one grammar of lengths of time ([`duration`]): `10s`, `1m30s`, a bare number as
//!   seconds, at most a year, for every flag, config and objective.
//!
//! What it is not for: hot-path I/O. The server's and the generator's own syscall paths
//! (accept, recv, send, sendfile, epoll, io_uring) stay in their crates, because they are
//! what the project studies and each is tuned to its engine. Nothing here runs per request,
//! and this crate depends on no other webscope crate, so every crate may depend on it.
#![deny(missing_docs)]

mod clock;
pub mod cpus;
pub mod duration;
mod lines;
mod replace;
mod sockopt;

pub use clock::{process_time, thread_time, thread_wait};
pub use lines::{read_text, Line, LineReader, TextError, MAX_LINE};
pub use replace::{create_file, write_file};
pub use sockopt::{set_busy_poll, setsockopt_int};
