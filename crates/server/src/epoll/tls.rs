//! One TLS connection from accept to its end: the handshake (rustls through tokio-rustls,
//! bounded by the header timeout, from accept), then HTTP/2 (`h2.rs`) if ALPN chose it, else
//! the HTTP/1.1 loop (`conn.rs`), over user-space TLS or kTLS (`transport.rs`).
//!
//! A client that sends nothing, trickles its ClientHello or sends garbage holds a connection
//! no longer than a slow request head would; a failed handshake closes the connection and is
//! counted, not logged. Not here: loading the certificate and probing kTLS (`crate::tls`).

use std::net::SocketAddr;
use std::rc::Rc;

use super::transport::Transport;
use crate::io::Socket;
use crate::worker::Worker;

/// A TLS connection from accept to its end: the handshake (bounded by the header timeout),
/// then HTTP/2 if the client chose h2, else HTTP/1.1, over user-space TLS or kTLS.
pub(crate) async fn serve(socket: Socket, peer: SocketAddr, worker: Rc<Worker>) {
    let Some(tls) = worker.tls.clone() else {
        return;
    };
    let timing = &worker.timing;
    let accepted = timing.start_connection();
    let Ok(tcp) = socket.into_tokio() else {
        timing.end_connection(accepted, 0);
        return;
    };
    // rustls writes a flight or a response's records in more than one write; Nagle would
    // hold the last one back for the client's delayed ACK (40 ms): the socket has
    // TCP_NODELAY from its listener (listener.rs), as every connection has.
    let limit = worker.config.header_timeout;
    let outcome = if tls.ktls {
        let tcp = ktls::CorkStream::new(tcp);
        match tokio::time::timeout(limit, tls.acceptor.accept(tcp)).await {
            Ok(Ok(stream)) => {
                let (h2, resumed) = negotiated(stream.get_ref().1);
                let handshake = timing.nanos(accepted, timing.now());
                worker.timing.handshake(Some(resumed));
                match ktls::config_ktls_server(stream).await {
                    Ok(stream) => Ok((Transport::Ktls(Box::new(stream)), h2, handshake)),
                    Err(err) => Err(format!("kTLS set-up failed: {err}")),
                }
            }
            Ok(Err(err)) => Err(err.to_string()),
            Err(_) => Err("handshake timed out".into()),
        }
    } else {
        match tokio::time::timeout(limit, tls.acceptor.accept(tcp)).await {
            Ok(Ok(stream)) => {
                let (h2, resumed) = negotiated(stream.get_ref().1);
                worker.timing.handshake(Some(resumed));
                let handshake = timing.nanos(accepted, timing.now());
                Ok((Transport::Tls(Box::new(stream)), h2, handshake))
            }
            Ok(Err(err)) => Err(err.to_string()),
            Err(_) => Err("handshake timed out".into()),
        }
    };
    match outcome {
        Ok((transport, true, handshake)) => {
            super::h2::serve(transport, peer, worker, accepted, handshake).await
        }
        Ok((transport, false, handshake)) => {
            super::conn::serve_over(transport, peer, worker, accepted, handshake).await
        }
        Err(_why) => {
            // The connection is dropped (closed); a bad client costs one counter, not a log
            // line each: a scanner must not be able to fill the log.
            worker.timing.handshake(None);
            worker.timing.end_connection(accepted, 0);
        }
    }
}

/// (ALPN chose h2, the session was resumed).
fn negotiated(conn: &rustls::ServerConnection) -> (bool, bool) {
    let h2 = conn.alpn_protocol() == Some(b"h2");
    let resumed = matches!(conn.handshake_kind(), Some(rustls::HandshakeKind::Resumed));
    (h2, resumed)
}
