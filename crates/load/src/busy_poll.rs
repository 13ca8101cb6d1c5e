//! `--busy-poll USECS`: SO_BUSY_POLL and SO_PREFER_BUSY_POLL on every connection, so that a
//! wait for a response spins on the NIC's queue for up to USECS before sleeping. It helps only
//! where packets come through a NAPI device (not loopback), and the kernel refuses values
//! above net.core.busy_read without CAP_NET_ADMIN: a probe at start finds out, and a refused
//! run goes on without, saying why.

use std::io;
use std::os::fd::{AsRawFd, RawFd};

/// Sets both options on `fd`.
pub(crate) fn set(fd: RawFd, usecs: u32) -> io::Result<()> {
    int(fd, libc::SO_BUSY_POLL, usecs as libc::c_int)?;
    int(fd, libc::SO_PREFER_BUSY_POLL, 1)
}

/// Whether the kernel takes `usecs` from this process (tried on a socket of its own): Ok(usecs)
/// or why not.
pub fn probe(usecs: u32) -> Result<u32, String> {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
        .map_err(|e| format!("cannot make a socket to try SO_BUSY_POLL: {e}"))?;
    set(socket.as_raw_fd(), usecs)
        .map(|()| usecs)
        .map_err(|e| format!("the kernel refused SO_BUSY_POLL/SO_PREFER_BUSY_POLL ({e})"))
}

fn int(fd: RawFd, name: libc::c_int, value: libc::c_int) -> io::Result<()> {
    // SAFETY: an int socket option on a descriptor the caller owns, with its size.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
