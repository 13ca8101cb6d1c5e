//! `--max-connections` across all workers: one count of open connections that every
//! worker's accept takes a slot from and every close gives back.
//!
//! Why one shared count and not a share per worker: SO_REUSEPORT hashes connections over the
//! workers' listeners unevenly, so with a share each, one worker's backlog held clients while
//! the total was below the limit (the 17th of 20 with 2 workers). The cost is one atomic
//! read-modify-write per accept and one per close on a shared cache line, none per request.
//!
//! A worker takes a slot only once a connection is waiting for it (epoll: the listener is
//! readable; io_uring: the accept completed, and one accepted past the limit waits unserved
//! until a slot frees), so an idle worker never holds a slot another worker's client needs.
//! A worker at the limit learns of a slot freed elsewhere by [`Slots::freed`] (epoll) or at
//! its next tick (io_uring, 100 ms).
//!
//! Not here: the accept loops themselves (`epoll/mod.rs`, `uring/mod.rs`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

/// The open connections of all workers, and the limit on them.
pub(crate) struct Slots {
    open: AtomicUsize,
    max: usize,
    freed: Notify,
}

impl Slots {
    pub(crate) fn new(max: usize) -> Slots {
        Slots {
            open: AtomicUsize::new(0),
            max: max.max(1),
            freed: Notify::new(),
        }
    }

    /// Takes a slot if one is free.
    pub(crate) fn try_take(&self) -> bool {
        self.open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |open| {
                (open < self.max).then_some(open + 1)
            })
            .is_ok()
    }

    /// Whether a slot is free now (it may be gone by the time it is taken).
    pub(crate) fn has_room(&self) -> bool {
        self.open.load(Ordering::Acquire) < self.max
    }

    /// Gives a slot back; workers waiting at the limit are woken.
    pub(crate) fn release(&self) {
        let before = self.open.fetch_sub(1, Ordering::AcqRel);
        if before >= self.max {
            self.freed.notify_waiters();
        }
    }

    /// A slot held until the guard drops, if one is free now (a QUIC connection is refused
    /// rather than kept waiting: its client retries on its own schedule).
    pub(crate) fn try_slot(self: &Arc<Self>) -> Option<Slot> {
        self.try_take().then(|| Slot(Arc::clone(self)))
    }

    /// A slot, held until the guard drops; waits for one to free when all are taken.
    pub(crate) async fn take(self: &Arc<Self>) -> Slot {
        loop {
            let freed = self.freed.notified();
            tokio::pin!(freed);
            // Registered before looking, so a release between the look and the wait is seen.
            freed.as_mut().enable();
            if self.try_take() {
                return Slot(Arc::clone(self));
            }
            freed.await;
        }
    }
}

/// One taken slot, given back when dropped.
pub(crate) struct Slot(Arc<Slots>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_taken_up_to_the_limit_and_given_back() {
        let slots = Slots::new(2);
        assert!(slots.try_take() && slots.try_take());
        assert!(!slots.try_take() && !slots.has_room());
        slots.release();
        assert!(slots.has_room() && slots.try_take());
    }
}
