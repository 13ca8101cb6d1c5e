//! `serve_techniques.rs` again with `webscope serve --io epoll` (the support module adds the
//! flag in this test binary): the techniques' syscall patterns on the epoll engine. A binary
//! of its own, not a module of `serve_epoll.rs`: strace attaches in time only when few tests
//! run beside it.

#[path = "serve_techniques.rs"]
mod techniques;
