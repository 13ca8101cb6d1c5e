//! Binding the listeners: one socket per worker on the same address with SO_REUSEPORT, so the
//! kernel spreads connections over workers and no accept lock is needed.

use std::net::{SocketAddr, TcpListener};

use socket2::{Domain, Protocol, Socket, Type};

use crate::error::Error;

/// The listen backlog asked for (the kernel caps it at net.core.somaxconn).
const BACKLOG: i32 = 4096;

/// Binds `count` listeners on `addr`. With port 0 the first picks a free port and the others
/// join it.
pub(crate) fn bind(addr: SocketAddr, count: usize) -> Result<Vec<TcpListener>, Error> {
    let first = bind_one(addr)?;
    let actual = first.local_addr().map_err(|e| Error::bind(addr, e))?;
    let mut listeners = vec![first];
    for _ in 1..count {
        listeners.push(bind_one(actual)?);
    }
    Ok(listeners)
}

fn bind_one(addr: SocketAddr) -> Result<TcpListener, Error> {
    let fail = |e| Error::bind(addr, e);
    let socket =
        Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP)).map_err(fail)?;
    socket.set_reuse_address(true).map_err(fail)?;
    socket.set_reuse_port(true).map_err(fail)?;
    socket.set_nonblocking(true).map_err(fail)?;
    socket.bind(&addr.into()).map_err(fail)?;
    socket.listen(BACKLOG).map_err(fail)?;
    Ok(socket.into())
}
