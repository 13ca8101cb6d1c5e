//! CPU time of the generator itself: the self-check that tells whether a run measured the
//! server or the generator. The clocks are webscope-sys's, the same the server's executor and
//! the monitor read.

pub use webscope_sys::{process_time, thread_time};

/// Time the calling thread has waited in the run queue: a generator that never sleeps is
/// saturated even when another process takes part of its CPU.
pub(crate) use webscope_sys::thread_wait;
