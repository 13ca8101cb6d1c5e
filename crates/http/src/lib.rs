//! The HTTP/1.1 wire format that webscope's server and load generator share.
//!
//! What is here: request-head parsing with the limits and RFC 9112 / 9110 checks a hardened
//! server needs ([`request`]), the request target turned into a safe path under a document
//! root ([`path`]), status lines ([`status`]), HTTP and log dates formatted once per second
//! ([`date`]), response-head writing ([`head`]) and response-head parsing for the load
//! generator ([`response`]).
//!
//! What is not here: sockets, files, bodies, timeouts. Those belong to the server and the
//! load generator, whose syscall patterns are what webscope studies; this crate only turns
//! bytes into meaning and back, without allocating on the hot path.
//!
//! Parsing is built on [`httparse`] (fuzzed, SIMD-accelerated); everything here works on
//! borrowed byte slices so a request costs no allocation.
//!
//! ```
//! use webscope_http::request::{parse, Limits, Method};
//! let raw = b"GET /index.html HTTP/1.1\r\nHost: example\r\n\r\n";
//! let req = parse(raw, &Limits::default()).unwrap().unwrap();
//! assert_eq!(req.method, Method::Get);
//! assert!(req.keep_alive());
//! ```
#![deny(missing_docs)]

pub mod date;
pub mod head;
pub mod path;
pub mod request;
pub mod response;
pub mod status;
