//! The live page's HTTP: an accept thread, a short-lived thread per connection, one request per
//! connection, three routes.
//!
//! Hand-written on std sockets rather than on the embedded server or a web framework: it
//! answers one poll a second, must not share a thread or a runtime with the generator, and
//! blocking sockets with short timeouts are all that needs. A connection gets its own thread so
//! that a browser's idle preconnected socket, or one that stalls or disconnects, delays no
//! other poll; at most [`MAX_CLIENTS`] at once.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::{thread_cpu_ns, Shared};

/// The page: HTML, CSS and script in one file, nothing fetched from elsewhere.
const PAGE: &str = include_str!("page.html");

/// A request head larger than this is refused (the page's polls are a few hundred bytes).
const MAX_HEAD: usize = 8 * 1024;

/// A client gets this long to send its request and to take the answer.
const SOCKET_TIMEOUT: Duration = Duration::from_secs(2);

/// Connections served at once; more are closed at once (a page needs one).
const MAX_CLIENTS: usize = 16;

/// Accepts until `shared.stop` is raised (and [`wake`] makes `accept` return): a blocking
/// accept costs nothing between polls, where a polled one would wake 20 times a second.
pub(super) fn serve(listener: TcpListener, shared: &Arc<Shared>) {
    let began = thread_cpu_ns();
    let in_flight = Arc::new(AtomicUsize::new(0));
    loop {
        let accepted = listener.accept();
        if shared.stop.load(Ordering::Relaxed) {
            break;
        }
        let Ok((stream, _)) = accepted else {
            // Out of descriptors, a connection reset before accept: pause, keep serving.
            std::thread::sleep(Duration::from_millis(50));
            continue;
        };
        if in_flight.fetch_add(1, Ordering::AcqRel) >= MAX_CLIENTS {
            in_flight.fetch_sub(1, Ordering::AcqRel);
            continue;
        }
        let (shared, mine) = (Arc::clone(shared), Arc::clone(&in_flight));
        let spawned = std::thread::Builder::new()
            .name("webscope-live-conn".into())
            .spawn(move || {
                let began = thread_cpu_ns();
                if answer(stream, &shared).is_ok() {
                    shared.served.fetch_add(1, Ordering::Relaxed);
                }
                shared
                    .cpu_ns
                    .fetch_add(thread_cpu_ns().saturating_sub(began), Ordering::Relaxed);
                mine.fetch_sub(1, Ordering::AcqRel);
            });
        if spawned.is_err() {
            in_flight.fetch_sub(1, Ordering::AcqRel);
        }
    }
    shared
        .cpu_ns
        .fetch_add(thread_cpu_ns().saturating_sub(began), Ordering::Relaxed);
}

/// Makes a blocked `accept` on `addr` return, so that the loop sees the stop flag.
pub(super) fn wake(addr: SocketAddr) {
    let ip = match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    let _ = TcpStream::connect_timeout(&SocketAddr::new(ip, addr.port()), SOCKET_TIMEOUT);
}

/// Reads one request head and answers it; any socket error drops the connection.
fn answer(mut stream: TcpStream, shared: &Shared) -> std::io::Result<()> {
    stream.set_read_timeout(Some(SOCKET_TIMEOUT))?;
    stream.set_write_timeout(Some(SOCKET_TIMEOUT))?;
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    let (method, path) = loop {
        let n = stream.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        head.extend_from_slice(&buf[..n]);
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut request = httparse::Request::new(&mut headers);
        match request.parse(&head) {
            Ok(httparse::Status::Complete(_)) => {
                break (
                    request.method.unwrap_or("").to_string(),
                    request.path.unwrap_or("/").to_string(),
                );
            }
            Ok(httparse::Status::Partial) if head.len() < MAX_HEAD => continue,
            Ok(httparse::Status::Partial) => {
                return reply(
                    &mut stream,
                    "431 Request Header Fields Too Large",
                    "text/plain",
                    b"request head too large\n",
                    false,
                );
            }
            Err(_) => {
                return reply(
                    &mut stream,
                    "400 Bad Request",
                    "text/plain",
                    b"not an HTTP request\n",
                    false,
                );
            }
        }
    };
    let head_only = method == "HEAD";
    if method != "GET" && !head_only {
        return reply(
            &mut stream,
            "405 Method Not Allowed",
            "text/plain",
            b"GET only\n",
            false,
        );
    }
    let route = path.split('?').next().unwrap_or("/");
    match route {
        "/" | "/index.html" => reply(
            &mut stream,
            "200 OK",
            "text/html; charset=utf-8",
            PAGE.as_bytes(),
            head_only,
        ),
        "/state.json" => {
            let body = match shared.state.lock() {
                Ok(state) => serde_json::to_vec(&*state).unwrap_or_default(),
                Err(_) => b"{}".to_vec(),
            };
            reply(&mut stream, "200 OK", "application/json", &body, head_only)
        }
        _ => reply(
            &mut stream,
            "404 Not Found",
            "text/plain",
            b"the live page is at /\n",
            head_only,
        ),
    }
}

fn reply(
    stream: &mut TcpStream,
    status: &str,
    content_type: &str,
    body: &[u8],
    head_only: bool,
) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    if !head_only {
        stream.write_all(body)?;
    }
    stream.flush()
}
