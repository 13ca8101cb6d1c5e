//! Int socket options, and busy polling built on them: set once per socket or listener, at
//! start, never per request.

use std::io;
use std::os::fd::RawFd;

/// Sets the int option `name` at `level` (`SOL_SOCKET`, `IPPROTO_TCP`, ...) on `fd`.
pub fn setsockopt_int(
    fd: RawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    // SAFETY: an int option on a descriptor the caller owns, with its size.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
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

/// SO_BUSY_POLL (`usecs`), then SO_PREFER_BUSY_POLL, on `fd`: a wait for data spins on the
/// NIC's queue for up to `usecs` before sleeping. It helps only where packets come through a
/// NAPI device (not loopback), and the kernel refuses values above net.core.busy_read without
/// CAP_NET_ADMIN (EPERM).
pub fn set_busy_poll(fd: RawFd, usecs: u32) -> io::Result<()> {
    setsockopt_int(
        fd,
        libc::SOL_SOCKET,
        libc::SO_BUSY_POLL,
        usecs as libc::c_int,
    )?;
    setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_PREFER_BUSY_POLL, 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::os::fd::AsRawFd;

    fn getsockopt_int(fd: RawFd, level: libc::c_int, name: libc::c_int) -> libc::c_int {
        let mut value: libc::c_int = -1;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: reads one int option into a value we own, with its size.
        let rc = unsafe {
            libc::getsockopt(
                fd,
                level,
                name,
                (&mut value as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        assert_eq!(rc, 0, "{}", io::Error::last_os_error());
        value
    }

    #[test]
    fn an_int_option_is_set_at_its_level() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind on loopback");
        let fd = listener.as_raw_fd();
        setsockopt_int(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, 1).expect("TCP_NODELAY");
        assert_eq!(getsockopt_int(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY), 1);
        setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_KEEPALIVE, 1).expect("SO_KEEPALIVE");
        assert_eq!(getsockopt_int(fd, libc::SOL_SOCKET, libc::SO_KEEPALIVE), 1);
    }

    #[test]
    fn busy_polling_sets_both_options_or_says_why_not() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind on loopback");
        let fd = listener.as_raw_fd();
        // Zero never exceeds net.core.busy_read, so no capability is needed.
        set_busy_poll(fd, 0).expect("SO_BUSY_POLL 0");
        assert_eq!(getsockopt_int(fd, libc::SOL_SOCKET, libc::SO_BUSY_POLL), 0);
        assert_eq!(
            getsockopt_int(fd, libc::SOL_SOCKET, libc::SO_PREFER_BUSY_POLL),
            1
        );
        // A descriptor that is not a socket: the kernel's error, not a panic.
        assert!(set_busy_poll(-1, 0).is_err());
    }
}
