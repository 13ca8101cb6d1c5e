//! The serve tests again, every one with `webscope serve --io uring` (the support module
//! adds the flag in this test binary): the probe battery, slowloris, the connection limit,
//! descriptor exhaustion, shutdown, HTTP semantics, security and stress, on the io_uring
//! engine. Its own proofs (which syscalls it makes) are in `serve_uring_syscalls.rs`.
// Each included file declares the support module for itself, as it does when it is its own
// test binary.
#![allow(clippy::duplicate_mod)]

#[path = "serve_errors.rs"]
mod errors;
#[path = "serve_http.rs"]
mod http;
#[path = "serve_lifecycle.rs"]
mod lifecycle;
#[path = "serve_security.rs"]
mod security;
#[path = "serve_stress.rs"]
mod stress;
