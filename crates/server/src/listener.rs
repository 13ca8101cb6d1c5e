//! Binding the listeners: one socket per worker on the same address with SO_REUSEPORT, so the
//! kernel spreads connections over workers and no accept lock is needed.

use std::net::{SocketAddr, TcpListener};

use socket2::{Domain, Protocol, Socket, Type};

use crate::error::Error;

/// The listen backlog asked for (the kernel caps it at net.core.somaxconn).
const BACKLOG: i32 = 4096;

/// Binds `count` listeners on `addr`. With port 0 the first picks a free port and the others
/// join it.
///
/// `defer_accept` (seconds, 0 for off) sets TCP_DEFER_ACCEPT: the kernel hands a connection to
/// accept() only once its first data has arrived (or the period has passed), so the first
/// recv finds the request and a short exchange needs no epoll registration. Apache httpd does
/// this by default on Linux; nginx with `listen ... deferred`.
pub(crate) fn bind(
    addr: SocketAddr,
    count: usize,
    defer_accept: u32,
) -> Result<Vec<TcpListener>, Error> {
    let first = bind_one(addr, defer_accept)?;
    let actual = first.local_addr().map_err(|e| Error::bind(addr, e))?;
    let mut listeners = vec![first];
    for _ in 1..count {
        listeners.push(bind_one(actual, defer_accept)?);
    }
    Ok(listeners)
}

fn bind_one(addr: SocketAddr, defer_accept: u32) -> Result<TcpListener, Error> {
    let fail = |e| Error::bind(addr, e);
    let socket =
        Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP)).map_err(fail)?;
    socket.set_reuse_address(true).map_err(fail)?;
    socket.set_reuse_port(true).map_err(fail)?;
    socket.set_nonblocking(true).map_err(fail)?;
    // TCP_NODELAY, inherited by every accepted socket (Linux copies the listener's options
    // to the child), so it costs no syscall per connection. Without it, the last partial
    // segment of a response that spans several (a 100 KiB file: the head with MSG_MORE, then
    // sendfile) waits under Nagle for the ACK of the one before, which a keep-alive client
    // delays by 40 ms: p99 41 ms against nginx's 0.4 ms. nginx sets tcp_nodelay too.
    socket.set_nodelay(true).map_err(fail)?;
    socket.bind(&addr.into()).map_err(fail)?;
    socket.listen(BACKLOG).map_err(fail)?;
    if defer_accept > 0 {
        set_defer_accept(&socket, defer_accept).map_err(fail)?;
    }
    Ok(socket.into())
}

/// SO_BUSY_POLL (`usecs`) and SO_PREFER_BUSY_POLL on a listener: accepted sockets inherit
/// both (the kernel copies socket options to the child), so busy polling costs two syscalls
/// per listener at start, none per connection. The kernel refuses values above
/// net.core.busy_read without CAP_NET_ADMIN (EPERM).
pub(crate) fn set_busy_poll(listener: &TcpListener, usecs: u32) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    webscope_sys::set_busy_poll(listener.as_raw_fd(), usecs)
}

fn set_defer_accept(socket: &Socket, seconds: u32) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    webscope_sys::setsockopt_int(
        socket.as_raw_fd(),
        libc::IPPROTO_TCP,
        libc::TCP_DEFER_ACCEPT,
        seconds as libc::c_int,
    )
}
