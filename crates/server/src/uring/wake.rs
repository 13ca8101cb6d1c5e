//! Wake-ups from other threads, for the `/svc/` services: a job ends on the services'
//! executor, whose oneshot sender wakes the connection's [`Waker`]; that waker notes which
//! connection it was and writes the worker's eventfd, on which the ring keeps one READ armed.
//! Only a worker with services has one, so a file server's syscalls stay as they are.
//!
//! Not here: what the connection does once woken (`conn.rs`).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::{Arc, Mutex};
use std::task::{Wake, Waker};

use io_uring::{opcode, squeue, types};

/// The worker's end of its wake-ups.
pub(super) struct Wakeups {
    shared: Arc<Shared>,
    /// Where the armed READ puts the eventfd's count. Leaked on purpose: the kernel may write
    /// into it until the ring is gone, which can be after the worker's state is dropped.
    count: *mut u64,
}

/// What the wakers share with the worker.
struct Shared {
    eventfd: OwnedFd,
    /// The keys (user data) of the connections woken since the worker last looked.
    woken: Mutex<Vec<u64>>,
}

/// Wakes one connection's job.
struct JobWaker {
    shared: Arc<Shared>,
    key: u64,
}

impl Wake for JobWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if let Ok(mut woken) = self.shared.woken.lock() {
            woken.push(self.key);
        }
        let one = 1u64;
        // SAFETY: an 8-byte write from a live u64 to the eventfd this waker keeps open.
        unsafe {
            libc::write(
                self.shared.eventfd.as_raw_fd(),
                (&one as *const u64).cast(),
                8,
            )
        };
    }
}

impl Wakeups {
    pub(super) fn new() -> io::Result<Wakeups> {
        // Blocking: io_uring answers a READ on an O_NONBLOCK file with EAGAIN instead of
        // waiting for it; a write to an eventfd blocks only at a count near 2^64.
        // SAFETY: eventfd takes no pointers; the descriptor is checked before it is owned.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor owned by nobody else.
        let eventfd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Wakeups {
            shared: Arc::new(Shared {
                eventfd,
                woken: Mutex::new(Vec::new()),
            }),
            count: Box::into_raw(Box::new(0u64)),
        })
    }

    /// The READ to keep armed on the eventfd (its user data is the caller's to set).
    pub(super) fn read(&self) -> squeue::Entry {
        let fd = types::Fd(self.shared.eventfd.as_raw_fd());
        opcode::Read::new(fd, self.count.cast(), 8).build()
    }

    /// A waker that reports `key` when it is woken.
    pub(super) fn waker(&self, key: u64) -> Waker {
        Waker::from(Arc::new(JobWaker {
            shared: Arc::clone(&self.shared),
            key,
        }))
    }

    /// Moves the keys woken since the last call into `into`.
    pub(super) fn drain(&self, into: &mut Vec<u64>) {
        if let Ok(mut woken) = self.shared.woken.lock() {
            into.append(&mut woken);
        }
    }
}
