//! The serve tests again, every one with `webscope serve --io epoll` (the support module
//! adds the flag in this test binary): the probe battery, slowloris, the connection limit,
//! descriptor exhaustion, shutdown, HTTP semantics, the admin endpoint's figures, security,
//! the services and stress, on the epoll engine, which the other binaries no longer run by
//! default (io_uring is the default; TLS and HTTP/2 run on epoll anyway). The techniques'
//! syscalls on epoll are `serve_epoll_techniques.rs`'s; the io_uring engine's own proofs
//! (which syscalls it makes) are in `serve_uring_syscalls.rs`.
// Each included file declares the support module for itself, as it does when it is its own
// test binary.
#![allow(clippy::duplicate_mod)]

#[path = "serve_errors.rs"]
mod errors;
#[path = "serve_http.rs"]
mod http;
#[path = "serve_lifecycle.rs"]
mod lifecycle;
#[path = "serve_metrics.rs"]
mod metrics;
#[path = "serve_security.rs"]
mod security;
#[path = "serve_services.rs"]
mod services;
#[path = "serve_stress.rs"]
mod stress;
