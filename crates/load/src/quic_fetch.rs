//! A few GETs over one HTTP/3 connection, whole, for a caller that checks what a server
//! answers before it measures it (the lab's preflight with `--http3`, against a target that
//! may serve HTTP/3 alone: a check over HTTPS/TCP would test a listener the runs never use).
//!
//! Not for load: no histograms, no schedule, one connection, one request at a time. It is
//! spoken as the HTTP/3 engine speaks (`quic.rs`'s client: the same trust settings, ALPN
//! `h3`, the same one-line causes of a failed handshake), so that a target the preflight
//! passes is one the engine can reach.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::{Buf, Bytes};

use crate::quic::{self, Client};
use crate::TlsSettings;

/// One fetched response: its status and whole body.
pub type Fetched = (u16, Vec<u8>);

/// GETs each of `paths` in turn on one QUIC connection to `addr` (TLS name `name`, the
/// `:authority` `authority`), each within `timeout`, bodies of at most `limit` bytes.
/// An error is one line that says what failed and, where it helps, what to do (nothing on
/// the UDP port, no ALPN h3, a refused certificate).
pub fn fetch_h3(
    addr: SocketAddr,
    (name, authority): (&str, &str),
    paths: &[String],
    tls: &TlsSettings,
    (timeout, limit): (Duration, usize),
) -> Result<Vec<Fetched>, String> {
    let client = Client::new(tls, name, false, timeout).map_err(|e| e.to_string())?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the HTTP/3 client's runtime: {e}"))?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async {
        let bind: SocketAddr = if addr.is_ipv6() {
            (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
        } else {
            (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
        };
        let endpoint = crate::engine::h3::endpoint(bind, None)
            .map_err(|e| format!("cannot open a UDP socket: {e}"))?;
        let (config, verified) = client.connection();
        let connecting = endpoint
            .connect_with(config, addr, name)
            .map_err(|e| format!("cannot start a QUIC connection: {e}"))?;
        let connection = match tokio::time::timeout(timeout, connecting).await {
            Ok(Ok(connection)) => connection,
            Ok(Err(e)) => return Err(quic::cause(&e, &verified, addr.port())),
            Err(_) => return Err(quic::silent(addr.port())),
        };
        let (mut driver, mut sender) =
            h3::client::new(h3_quinn::Connection::new(connection.clone()))
                .await
                .map_err(|e| format!("HTTP/3's set-up failed: {e}"))?;
        // h3's connection future reads the server's control stream (SETTINGS, GOAWAY): it
        // must be polled while the requests run.
        let driving = tokio::task::spawn_local(async move { driver.wait_idle().await });
        let mut fetched = Vec::with_capacity(paths.len());
        for path in paths {
            let got = tokio::time::timeout(timeout, get(&mut sender, authority, path, limit))
                .await
                .map_err(|_| {
                    format!(
                        "no answer to GET {path} over HTTP/3 within {} s",
                        timeout.as_secs_f64()
                    )
                })??;
            fetched.push(got);
        }
        drop(sender);
        // H3_NO_ERROR: the server frees the connection at once (RFC 9114 §8.1).
        connection.close(0x100u32.into(), b"");
        driving.abort();
        // The close goes out on the endpoint's driver: waited for a little, or the runtime's
        // end would drop it and leave the server holding the connection to its idle timeout.
        let _ = tokio::time::timeout(CLOSE_WAIT, endpoint.wait_idle()).await;
        Ok(fetched)
    })
}

/// How long the close is given to leave (a round trip on any network the lab measures).
const CLOSE_WAIT: Duration = Duration::from_millis(200);

type SendRequest = h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>;

/// One GET on a new stream, its response read whole (at most `limit` bytes of body).
async fn get(
    sender: &mut SendRequest,
    authority: &str,
    path: &str,
    limit: usize,
) -> Result<Fetched, String> {
    let failed = |e: h3::error::StreamError| format!("GET {path} over HTTP/3 failed: {e}");
    let request = http::Request::builder()
        .method("GET")
        .uri(format!("https://{authority}{path}"))
        .header("user-agent", "webscope-preflight")
        .body(())
        .map_err(|e| format!("{path:?} cannot be requested: {e}"))?;
    let mut stream = sender.send_request(request).await.map_err(failed)?;
    stream.finish().await.map_err(failed)?;
    let response = stream.recv_response().await.map_err(failed)?;
    let mut body = Vec::new();
    while let Some(mut chunk) = stream.recv_data().await.map_err(failed)? {
        if body.len() + chunk.remaining() > limit {
            return Err(format!(
                "GET {path} over HTTP/3: the body is larger than {limit} bytes"
            ));
        }
        while chunk.has_remaining() {
            let part = chunk.chunk();
            body.extend_from_slice(part);
            let n = part.len();
            chunk.advance(n);
        }
    }
    Ok((response.status().as_u16(), body))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nothing serves QUIC on the port: one line that names the UDP port, within the timeout.
    #[test]
    fn a_silent_udp_port_is_said_in_one_line() {
        let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = socket.local_addr().unwrap();
        let settings = TlsSettings {
            insecure: true,
            ..TlsSettings::default()
        };
        let err = fetch_h3(
            addr,
            ("localhost", "localhost"),
            &["/".into()],
            &settings,
            (Duration::from_millis(300), 1 << 20),
        )
        .unwrap_err();
        assert!(
            err.contains(&format!("UDP port {}", addr.port())) && !err.contains('\n'),
            "{err}"
        );
    }
}
