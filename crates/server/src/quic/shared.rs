//! What a QUIC connection's request streams share with it (`conn.rs` makes it, `stream.rs`
//! reads it): apart so that neither of the two imports the other.

use std::cell::Cell;

use tokio::sync::Notify;
use tokio::time::Instant;

/// What a connection's streams share: whether the handshake has ended (requests before it
/// came as 0-RTT early data) and its time for the first request after it, the streams open.
pub(crate) struct Shared {
    pub handshake_done: Cell<bool>,
    pub handshake_ns: Cell<u64>,
    pub open: Cell<usize>,
    pub idle_since: Cell<Instant>,
    pub went_idle: Notify,
}
