//! `--busy-poll USECS`: SO_BUSY_POLL and SO_PREFER_BUSY_POLL on every connection, so that a
//! wait for a response spins on the NIC's queue for up to USECS before sleeping. It helps only
//! where packets come through a NAPI device (not loopback), and the kernel refuses values
//! above net.core.busy_read without CAP_NET_ADMIN: a probe at start finds out, and a refused
//! run goes on without, saying why. The two options are set by webscope-sys, as the server
//! sets them on its listeners.

use std::os::fd::AsRawFd;

/// Sets both options on a descriptor.
pub(crate) use webscope_sys::set_busy_poll as set;

/// Whether the kernel takes `usecs` from this process (tried on a socket of its own): Ok(usecs)
/// or why not.
pub fn probe(usecs: u32) -> Result<u32, String> {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
        .map_err(|e| format!("cannot make a socket to try SO_BUSY_POLL: {e}"))?;
    set(socket.as_raw_fd(), usecs)
        .map(|()| usecs)
        .map_err(|e| format!("the kernel refused SO_BUSY_POLL/SO_PREFER_BUSY_POLL ({e})"))
}
