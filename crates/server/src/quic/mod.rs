//! HTTP/3 over QUIC (`serve --http3`): beside each epoll worker's TCP listener, a UDP socket
//! on the same address and port (SO_REUSEPORT, one per worker, as the listeners), driven by a
//! quinn endpoint on the worker's own runtime, its connections' requests answered by h3 and
//! `exchange.rs` from the worker's caches, with its access log and its timing. HTTP/3 needs
//! TLS, so the workers are epoll's (the server picks epoll for `--tls-cert`).
//!
//! Why quinn and h3 (the load generator's pair, `webscope-load`'s `engine/h3.rs`): QUIC's loss
//! recovery, congestion control, streams and the TLS 1.3 handshake inside it are a transport's
//! worth of state; quinn is the QUIC most used from Rust, on rustls with ring as our HTTPS, and
//! h3 is the hyper project's HTTP/3 on it.
//!
//! One file per part: `setup.rs` (the rustls and quinn configuration, once at start),
//! `conn.rs` (a connection: handshake, 0-RTT, GOAWAY, idle and request limits), `stream.rs`
//! (a request: to `exchange.rs`, the response back through `fields.rs`).
//!
//! What a hostile client meets: the amplification limit (quinn sends at most three times what
//! an unproven address sent); a Retry (proof of the address) for every new attempt while
//! [`RETRY_ABOVE`] handshakes are in progress on the worker, so a flood of Initials from
//! spoofed addresses holds a bounded number of handshakes; attempts quinn has not handed over
//! yet bounded in count and bytes (`setup.rs`); `--max-connections` shared with TCP (a QUIC
//! connection past it is refused: CONNECTION_REFUSED); at most 128 streams at once per
//! connection, each holding at most a 64 KiB chunk beyond quinn's 2 MiB send window, and
//! reset after `--send-timeout` without progress; a reset stream frees its task at once.
//! A flood of new connection IDs is quinn's to bound: it keeps at most its
//! active_connection_id_limit of a client's IDs (more is CONNECTION_ID_LIMIT_ERROR) and a
//! bounded queue of retirements to send (`serve_http3_hostile.rs` measures it).
//! Non-idempotent requests that arrive as 0-RTT early data (before the handshake ends) are
//! answered 425 Too Early (RFC 8470) and tickets resume once: a replayed one does nothing.

mod conn;
pub(crate) mod setup;
mod shared;
mod stream;

use std::cell::Cell;
use std::net::{SocketAddr, UdpSocket};
use std::rc::Rc;
use std::sync::Arc;

use socket2::{Domain, Protocol, Socket, Type};
use tokio::sync::Notify;

use setup::Setup;

use crate::error::Error;
use crate::slots::Slots;
use crate::worker::Worker;

/// Handshakes in progress on one worker from which a new attempt whose address is unproven is
/// answered with a Retry: below it, a connection costs no extra round trip; above it, an
/// attacker's spoofed Initials cost the server a stateless Retry each, not a handshake.
pub(crate) const RETRY_ABOVE: usize = 64;

/// Binds `n` UDP sockets on `addr` (the TCP listeners' address and port) with SO_REUSEPORT:
/// the kernel spreads clients over them by their addresses, so a connection's packets all
/// reach the worker that holds it (a client that migrates to another address may land on
/// another worker, which has no state for it and answers with a stateless reset).
pub(crate) fn bind(addr: SocketAddr, n: usize) -> Result<Vec<UdpSocket>, Error> {
    let bind_err = |e: std::io::Error| {
        Error::Config(format!(
            "--http3: cannot bind UDP {addr}: {e} (another program's QUIC on that port?)"
        ))
    };
    (0..n)
        .map(|_| {
            let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))
                .map_err(bind_err)?;
            socket.set_reuse_port(true).map_err(bind_err)?;
            socket
                .set_recv_buffer_size(webscope_quic::UDP_BUFFER)
                .map_err(bind_err)?;
            socket
                .set_send_buffer_size(webscope_quic::UDP_BUFFER)
                .map_err(bind_err)?;
            if addr.is_ipv6() {
                socket.set_only_v6(true).map_err(bind_err)?;
            }
            socket.bind(&addr.into()).map_err(bind_err)?;
            Ok(socket.into())
        })
        .collect()
}

/// What a worker's endpoint and its connections share: handshakes in progress (for the Retry
/// rule) and connections open (for the drain at shutdown).
#[derive(Default)]
struct Live {
    handshaking: Cell<usize>,
    connections: Cell<usize>,
    drained: Notify,
}

/// Runs the worker's HTTP/3 endpoint on `socket` until shutdown, then lets its connections
/// finish (the caller bounds the wait by the shutdown timeout).
pub(crate) async fn serve(
    socket: UdpSocket,
    worker: Rc<Worker>,
    setup: Arc<Setup>,
    slots: Arc<Slots>,
) {
    // quinn turns UDP_GRO on when it takes the socket: without the `gso` technique it is
    // turned off again through a second handle on the same socket.
    let gro_off = (!setup.offload).then(|| socket.try_clone());
    let endpoint = match quinn::Endpoint::new(
        quinn::EndpointConfig::default(),
        Some(setup.base()),
        socket,
        Arc::new(quinn::TokioRuntime),
    ) {
        Ok(endpoint) => endpoint,
        Err(e) => {
            eprintln!("webscope serve: HTTP/3 cannot start on this worker: {e}");
            return;
        }
    };
    if let Some(handle) = gro_off {
        if let Err(e) = handle.and_then(|h| no_gro(&h)) {
            eprintln!("webscope serve: HTTP/3 cannot turn GRO off on this worker: {e}");
        }
    }
    let live = Rc::new(Live::default());
    loop {
        let incoming = tokio::select! {
            biased;
            () = worker.shutdown_signal() => break,
            incoming = endpoint.accept() => incoming,
        };
        let Some(incoming) = incoming else {
            break;
        };
        if admit(incoming, &worker, &setup, &slots, &live) {
            // The handshake's first flight is computed (in `admit`) and queued with its
            // connection's driver, a task of the runtime: let it go out before the next
            // attempt's is computed. Without this, a burst of Initials read in one recvmmsg
            // was computed back to back and every client waited for the whole burst's (20
            // at once: 8.6 ms of handshakes before the first flight left, docs/architecture.md).
            tokio::task::yield_now().await;
        }
    }
    // No new connections; those open say GOAWAY themselves and end with their last stream.
    endpoint.set_server_config(None);
    while live.connections.get() > 0 {
        let drained = live.drained.notified();
        if live.connections.get() == 0 {
            break;
        }
        drained.await;
    }
    endpoint.close(0u32.into(), b"");
}

/// Turns UDP generic receive offload off on `socket` (Linux's UDP_GRO; by hand: socket2 has
/// no setter for it).
fn no_gro(socket: &UdpSocket) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let off: libc::c_int = 0;
    // SAFETY: setsockopt on a socket we own, with a c_int option value and its size.
    let done = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_UDP,
            libc::UDP_GRO,
            (&off as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if done == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Accepts, retries or refuses one connection attempt; true when its handshake began (its
/// first flight computed here, the rest of the connection a task of its own).
fn admit(
    incoming: quinn::Incoming,
    worker: &Rc<Worker>,
    setup: &Arc<Setup>,
    slots: &Arc<Slots>,
    live: &Rc<Live>,
) -> bool {
    if !incoming.remote_address_validated()
        && incoming.may_retry()
        && live.handshaking.get() >= RETRY_ABOVE
    {
        worker.timing.quic(true);
        // A Retry keeps no state: the client comes back with a token that proves its address.
        let _ = incoming.retry();
        return false;
    }
    let Some(slot) = slots.try_slot() else {
        incoming.refuse();
        return false;
    };
    live.connections.set(live.connections.get() + 1);
    let task = conn::Conn {
        worker: Rc::clone(worker),
        setup: Arc::clone(setup),
        live: Rc::clone(live),
    };
    // The connection is counted in `live` from here: dropping `task` uncounts it.
    let Some(accepted) = task.accept(incoming) else {
        return false;
    };
    tokio::task::spawn_local(async move {
        task.serve(accepted).await;
        drop(slot);
    });
    true
}
