//! The provided-buffer ring a worker's multishot receives draw from: the kernel picks a free
//! buffer when data arrives, so no buffer is tied up in a connection that is waiting, and
//! one armed receive serves a connection for its whole life.
//!
//! The ring of buffer descriptors is shared memory (one page-aligned mapping, registered with
//! IORING_REGISTER_PBUF_RING); the buffers are one allocation, buffer `i` at `i * size`. A
//! buffer goes back to the kernel by writing its descriptor at the tail and publishing the
//! tail with a release store.

use std::io;
use std::sync::atomic::{AtomicU16, Ordering};

use io_uring::types::BufRingEntry;
use io_uring::IoUring;

/// The buffer group id the receives name.
pub(super) const GROUP: u16 = 0;

pub(super) struct BufRing {
    entries: *mut BufRingEntry,
    map_len: usize,
    count: u16,
    size: usize,
    /// The buffers' memory: the kernel writes into it behind Rust's back, so it is held as a
    /// raw pointer (from a leaked boxed slice, freed in `drop`), never as a Rust reference
    /// while the kernel may write.
    buffers: *mut u8,
    tail: u16,
}

impl BufRing {
    /// Maps and registers `count` (a power of two) buffers of `size` bytes with `ring`.
    pub(super) fn new(ring: &IoUring, count: u16, size: usize) -> io::Result<BufRing> {
        debug_assert!(count.is_power_of_two());
        let map_len = usize::from(count) * std::mem::size_of::<BufRingEntry>();
        // SAFETY: an anonymous private mapping; checked for failure below.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_ANONYMOUS | libc::MAP_PRIVATE,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let mut bufs = BufRing {
            entries: ptr.cast(),
            map_len,
            count,
            size,
            buffers: Box::into_raw(vec![0u8; usize::from(count) * size].into_boxed_slice()).cast(),
            tail: 0,
        };
        // SAFETY: the mapping is page-aligned, `count` entries long, and outlives the
        // registration (the ring is dropped first: it is declared before the buffers wherever
        // both are held).
        unsafe {
            ring.submitter()
                .register_buf_ring_with_flags(ptr as u64, count, GROUP, 0)?;
        }
        for bid in 0..count {
            bufs.push(bid);
        }
        bufs.publish();
        Ok(bufs)
    }

    /// The first `len` bytes the kernel received into buffer `bid`.
    pub(super) fn get(&self, bid: u16, len: usize) -> &[u8] {
        let bid = bid & (self.count - 1);
        // SAFETY: buffer `bid` lies within the allocation; the kernel has finished writing it
        // (its completion was reaped) and will not again until it is recycled.
        unsafe {
            std::slice::from_raw_parts(
                self.buffers.add(usize::from(bid) * self.size),
                len.min(self.size),
            )
        }
    }

    /// Gives buffer `bid` back to the kernel.
    pub(super) fn recycle(&mut self, bid: u16) {
        self.push(bid);
        self.publish();
    }

    fn push(&mut self, bid: u16) {
        let slot = usize::from(self.tail & (self.count - 1));
        let addr = self.buffers as u64 + (usize::from(bid) * self.size) as u64;
        // SAFETY: `slot` is within the mapping; the kernel reads only entries before the
        // published tail, and this one is past it until `publish`.
        let entry = unsafe { &mut *self.entries.add(slot) };
        entry.set_addr(addr);
        entry.set_len(self.size as u32);
        entry.set_bid(bid);
        self.tail = self.tail.wrapping_add(1);
    }

    fn publish(&self) {
        // SAFETY: the tail lives in the first entry's reserved field, a properly aligned u16
        // the kernel reads with acquire ordering.
        let tail = unsafe { &*(BufRingEntry::tail(self.entries).cast::<AtomicU16>()) };
        tail.store(self.tail, Ordering::Release);
    }
}

impl Drop for BufRing {
    fn drop(&mut self) {
        let len = usize::from(self.count) * self.size;
        // SAFETY: the mapping and the allocation made in `new`, which nothing uses any more
        // (the ring that could write into them is gone).
        unsafe {
            libc::munmap(self.entries.cast(), self.map_len);
            drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                self.buffers,
                len,
            )));
        }
    }
}
