//! The HTTP/3 engine (`--http3`): QUIC connections from quinn, HTTP/3 on them from h3, on the
//! worker thread's runtime, in the HTTP/2 engine's shape (`h2.rs`): `-c` connections of `-M`
//! streams each, a request a stream, in closed loop or taking the open-loop schedule's slots
//! as they fall due (latency from the due time when every stream was busy). The thread's
//! connections share one UDP socket (one quinn endpoint per thread), as a browser's do.
//!
//! Why quinn and h3: QUIC is a transport's worth of state (loss recovery, congestion control,
//! flow control, stream and connection IDs, the TLS 1.3 handshake inside it), and HTTP/3 adds
//! QPACK and its own framing; quinn is the QUIC most used from Rust, on rustls (with ring
//! here, as the rest of the generator) and tokio, and h3 is the hyper project's HTTP/3 over
//! it (through h3-quinn). Tried here: both build with a C compiler alone, and fetched a
//! thousand files of a thousand from Caddy's HTTP/3. quiche (Cloudflare) would bring BoringSSL
//! and cmake; s2n-quic its own TLS stack.
//!
//! What is counted as for TLS: the handshake's time apart from the requests' (a QUIC
//! handshake is the transport's and TLS's at once, so there is no separate connect time),
//! full or resumed (`quic.rs` tells them apart), and with `--0rtt` the connections whose
//! first requests went as early data and were accepted: the handshakes whose round trip the
//! requests did not wait for. `--close`: each stream makes one request, then the connection
//! closes and the next one resumes.

use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes};
use webscope_workload::Rng;

use super::conn::{count_failure, count_handshake, note_tls_error};
use super::h2::{ask_with, keep_time, next_slot, Asked, Exchanged, InFlight};
use crate::config::Mode;
use crate::quic::{self, Client};
use crate::recorder::Failure;
use crate::shared::{Intervals, Shared};

/// After a failed connection, wait this long before the next (a server that is down is not
/// hammered).
const BACKOFF: Duration = Duration::from_millis(10);

/// `--close`: how long a connection waits for the server's session ticket before closing.
const TICKET_WAIT: Duration = Duration::from_millis(50);

pub(crate) type SendRequest = h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>;

/// Runs `connections` HTTP/3 connections of `streams` streams each until the run ends or is
/// stopped, handing the figures over at each interval boundary.
pub(crate) async fn run(
    shared: Rc<Shared>,
    mut intervals: Intervals,
    (connections, streams): (usize, usize),
    client: Arc<Client>,
    seed: u64,
) {
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async move {
            intervals.begin();
            let in_flight: InFlight =
                Rc::new(std::cell::RefCell::new(vec![None; connections * streams]));
            match endpoint(unspecified(shared.addr), shared.busy_poll) {
                Ok(endpoint) => {
                    for c in 0..connections {
                        let rng =
                            Rng::new(seed ^ (c as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
                        let slots = (Rc::clone(&in_flight), c * streams);
                        tokio::task::spawn_local(connection(
                            Rc::clone(&shared),
                            (endpoint.clone(), Arc::clone(&client)),
                            streams,
                            rng,
                            slots,
                        ));
                    }
                }
                Err(e) => no_socket(&shared, &e),
            }
            keep_time(&shared, &mut intervals, &in_flight).await;
        })
        .await;
    // The LocalSet is dropped here: streams still in flight are cancelled, counted as
    // unfinished; the endpoint goes with its last connection.
}

/// The thread's endpoint could not be made: one connection failure, the reason kept for the
/// report's warnings.
fn no_socket(shared: &Shared, e: &std::io::Error) {
    let mut recorder = shared.recorder.borrow_mut();
    note_tls_error(&mut recorder, || format!("cannot open a UDP socket: {e}"));
    count_failure(&mut recorder, 0, Failure::Connect);
}

/// The users' engine's thread without an endpoint: the failure counted, the intervals kept
/// to the run's end as an engine's would be.
pub(crate) async fn no_endpoint(shared: Rc<Shared>, mut intervals: Intervals, e: &std::io::Error) {
    intervals.begin();
    no_socket(&shared, e);
    let in_flight: InFlight = Rc::new(std::cell::RefCell::new(Vec::new()));
    keep_time(&shared, &mut intervals, &in_flight).await;
}

/// Any local address of `target`'s family, port chosen by the kernel.
pub(crate) fn unspecified(target: std::net::SocketAddr) -> std::net::SocketAddr {
    if target.is_ipv6() {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    } else {
        (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
    }
}

/// The thread's QUIC endpoint: quinn's client endpoint on a UDP socket of `bind` with the
/// large buffers QUIC needs (`webscope_quic::UDP_BUFFER`: with the default, responses were
/// lost to a full receive buffer on loopback), which `quinn::Endpoint::client` does not ask;
/// `--busy-poll` on it as on the TCP engines' connections (the thread's connections share
/// this one socket).
pub(crate) fn endpoint(
    bind: std::net::SocketAddr,
    busy_poll: Option<u32>,
) -> std::io::Result<quinn::Endpoint> {
    use socket2::{Domain, Protocol, Socket, Type};
    use std::os::fd::AsRawFd;
    let socket = Socket::new(Domain::for_address(bind), Type::DGRAM, Some(Protocol::UDP))?;
    socket.set_recv_buffer_size(webscope_quic::UDP_BUFFER)?;
    socket.set_send_buffer_size(webscope_quic::UDP_BUFFER)?;
    if let Some(usecs) = busy_poll {
        // Probed at the run's start (`busy_poll::probe`): a refusal here is the same one,
        // already said.
        let _ = crate::busy_poll::set(socket.as_raw_fd(), usecs);
    }
    socket.bind(&bind.into())?;
    quinn::Endpoint::new(
        quinn::EndpointConfig::default(),
        None,
        socket.into(),
        Arc::new(quinn::TokioRuntime),
    )
}

/// One connection: the QUIC handshake, HTTP/3's set-up, `streams` request loops; again after
/// a failure or (`--close`) after each stream's one request, until the run's end.
async fn connection(
    shared: Rc<Shared>,
    (endpoint, client): (quinn::Endpoint, Arc<Client>),
    streams: usize,
    mut rng: Rng,
    (in_flight, base): (InFlight, usize),
) {
    let mut first = true;
    while Instant::now() < shared.end {
        shared.recorder.borrow_mut().connections += 1;
        in_flight.borrow_mut()[base] = Some((Instant::now(), 0));
        let opened = open(&shared, &endpoint, &client).await;
        in_flight.borrow_mut()[base] = None;
        if std::mem::take(&mut first) {
            client.first.ended(opened.is_ok());
        }
        let (quic, sender, verified) = match opened {
            Ok(opened) => opened,
            Err(failure) => {
                count_failure(&mut shared.recorder.borrow_mut(), 0, failure);
                tokio::time::sleep(BACKOFF).await;
                continue;
            }
        };
        let mut tasks = Vec::with_capacity(streams);
        for s in 0..streams {
            tasks.push(tokio::task::spawn_local(stream_loop(
                Rc::clone(&shared),
                sender.clone(),
                Rng::new(rng.next_u64()),
                (Rc::clone(&in_flight), base + s),
            )));
        }
        // Held until the ticket wait below: h3 closes the connection (H3_NO_ERROR) as soon as
        // its last request sender is dropped, and a ticket that comes after that is lost.
        // Dropped here, with `--close` the connection closed with its response, before the
        // server's ticket (sent once it has read the client's Finished, after a 0-RTT
        // answer as like as not) came: the next connection waited TICKET_WAIT for nothing
        // and made a full handshake (29 connections a second where 700 resume).
        let keep_open = sender;
        let mut graceful = true;
        for task in tasks {
            graceful &= task.await.unwrap_or(false);
        }
        // A connection per request: the next one resumes with a ticket from this one, which
        // a server sends once its handshake has ended; a browser's connection stays open
        // long enough to get it. Waited for a little (a server may send none).
        if shared.mode == Mode::Close && graceful {
            let _ = tokio::time::timeout(TICKET_WAIT, verified.ticket()).await;
        }
        drop(keep_open);
        // Closed by us: the server frees the connection at once, rather than at its idle
        // timeout (H3_NO_ERROR, RFC 9114 §8.1).
        quic.close(0x100u32.into(), b"");
        // Open loop with no slot left before the end: nothing more to connect for.
        if shared
            .schedule
            .as_ref()
            .is_some_and(|s| s.peek() >= shared.end)
        {
            break;
        }
        if !graceful && Instant::now() < shared.end {
            tokio::time::sleep(BACKOFF).await;
        }
    }
}

/// Makes the QUIC handshake (sending the first requests as 0-RTT early data when `--0rtt`
/// and a ticket allow) and HTTP/3's set-up; the connection's driver runs as a task of its
/// own. The handshake's time and kind are recorded under the first class (a connection
/// serves every class).
pub(super) async fn open(
    shared: &Rc<Shared>,
    endpoint: &quinn::Endpoint,
    client: &Client,
) -> Result<(quinn::Connection, SendRequest, Arc<quic::Verified>), Failure> {
    let (config, verified) = client.connection();
    let began = Instant::now();
    let connecting = endpoint
        .connect_with(config, shared.addr, &client.name)
        .map_err(|e| {
            note(shared, format!("cannot start a QUIC connection: {e}"));
            Failure::Connect
        })?;
    let early = if client.zero_rtt {
        connecting.into_0rtt()
    } else {
        Err(connecting)
    };
    let quic = match early {
        Ok((quic, accepted)) => {
            // Usable at once; the handshake's end, and whether the server took the early
            // data, come later.
            let shared = Rc::clone(shared);
            tokio::task::spawn_local(async move {
                let accepted = accepted.await;
                let mut recorder = shared.recorder.borrow_mut();
                count_handshake(&mut recorder, 0, began.elapsed(), true);
                if accepted {
                    recorder.tls_early += 1;
                }
            });
            quic
        }
        Err(connecting) => {
            let done = tokio::time::timeout(shared.timeout, connecting).await;
            let quic = match done {
                Ok(Ok(quic)) => quic,
                Ok(Err(e)) => {
                    note(shared, quic::cause(&e, &verified, shared.addr.port()));
                    return Err(match e {
                        quinn::ConnectionError::TimedOut => Failure::Timeout,
                        _ => Failure::Tls,
                    });
                }
                Err(_) => {
                    note(shared, quic::silent(shared.addr.port()));
                    return Err(Failure::Timeout);
                }
            };
            let mut recorder = shared.recorder.borrow_mut();
            count_handshake(&mut recorder, 0, began.elapsed(), !verified.full());
            quic
        }
    };
    let (mut driver, sender) = h3::client::new(h3_quinn::Connection::new(quic.clone()))
        .await
        .map_err(|e| {
            note_h3(shared, format!("HTTP/3's set-up failed: {e}"));
            Failure::Parse
        })?;
    let watching = Rc::clone(shared);
    tokio::task::spawn_local(async move {
        let e = driver.wait_idle().await;
        if !e.is_h3_no_error() && !matches!(e, h3::error::ConnectionError::Local { .. }) {
            note_h3(&watching, format!("the connection ended: {e}"));
        }
    });
    Ok((quic, sender, verified))
}

/// One stream's closed loop: a request, its whole response, the next request (`--close`: one
/// request). Returns whether it ended for a reason other than a failure of the connection.
async fn stream_loop(
    shared: Rc<Shared>,
    sender: SendRequest,
    mut rng: Rng,
    (in_flight, slot): (InFlight, usize),
) -> bool {
    while Instant::now() < shared.end {
        let Some(waited) = next_slot(&shared).await else {
            break;
        };
        let asked = Asked {
            index: shared.requests.pick_index(&mut rng),
            waited,
            connect: None,
            logged: None,
        };
        match ask(&shared, &sender, asked, (&in_flight, slot)).await {
            Ok(_) if shared.mode == Mode::Close => return true,
            Ok(_) => {}
            // The server is closing the connection (GOAWAY) and did not take this request:
            // the end of the connection, not a failure of the request.
            Err(None) => return true,
            // A stream reset leaves the connection usable; anything else ends it.
            Err(Some(failure)) if failure != Failure::StreamReset => return false,
            Err(Some(_)) => {}
        }
    }
    true
}

/// [`h2::ask`](super::h2::ask) over HTTP/3: sends `asked` on a new stream of `sender` and
/// counts what came, as the HTTP/2 engine counts it.
pub(super) async fn ask(
    shared: &Shared,
    sender: &SendRequest,
    asked: Asked,
    slot: (&InFlight, usize),
) -> Result<u16, Option<Failure>> {
    let index = asked.index;
    let mut sender = sender.clone();
    ask_with(shared, asked, slot, exchange(shared, &mut sender, index)).await
}

/// Sends request `index` on a new stream and reads its response whole: (status, bytes of the
/// body, when the response's head came). `Err(None)`: the server is going away and refused
/// the request unprocessed (GOAWAY, RFC 9114 §5.2).
async fn exchange(shared: &Shared, sender: &mut SendRequest, index: usize) -> Exchanged {
    let entry = shared.requests.entry(index);
    let uri = format!("https://{}{}", shared.requests.authority(), entry.path);
    let mut request = http::Request::builder()
        .method(entry.method.as_str())
        .uri(uri);
    for (name, value) in &entry.fields {
        request = request.header(name.as_str(), value.as_str());
    }
    let request = request.body(()).map_err(|_| Some(Failure::Parse))?;
    let mut stream = sender
        .send_request(request)
        .await
        .map_err(|e| stream_failure(shared, e))?;
    if !entry.body.is_empty() {
        stream
            .send_data(entry.body.clone())
            .await
            .map_err(|e| stream_failure(shared, e))?;
    }
    stream
        .finish()
        .await
        .map_err(|e| stream_failure(shared, e))?;
    let response = stream
        .recv_response()
        .await
        .map_err(|e| stream_failure(shared, e))?;
    let first = Instant::now();
    let mut bytes = 0u64;
    while let Some(mut chunk) = stream
        .recv_data()
        .await
        .map_err(|e| stream_failure(shared, e))?
    {
        let n = chunk.remaining();
        bytes += n as u64;
        chunk.advance(n);
    }
    Ok((response.status().as_u16(), bytes, first))
}

/// The failure a stream error counts as (None: the server is going away and did not take the
/// request); a protocol error is kept for the report's warnings.
fn stream_failure(shared: &Shared, e: h3::error::StreamError) -> Option<Failure> {
    use h3::error::StreamError;
    // h3's error variants are non-exhaustive, their contents out of reach but through
    // Display: a connection's timeout or close is told by it.
    match &e {
        StreamError::RemoteClosing { .. } => None,
        // A request past the server's GOAWAY, rejected unprocessed (RFC 9114 §4.1.1, §5.2):
        // the connection's end, as HTTP/2's REFUSED_STREAM.
        StreamError::RemoteTerminate { code, .. }
            if *code == h3::error::Code::H3_REQUEST_REJECTED =>
        {
            None
        }
        StreamError::RemoteTerminate { .. } => Some(Failure::StreamReset),
        _ if e.is_h3_no_error() => None,
        StreamError::ConnectionError { .. } => {
            let text = e.to_string();
            if text.ends_with("Timeout") {
                note(shared, quic::silent(shared.addr.port()));
                Some(Failure::Timeout)
            } else if text.contains("ApplicationClose") {
                note_h3(shared, format!("the server closed the connection: {e}"));
                Some(Failure::GoAway)
            } else {
                note_h3(shared, format!("the connection failed: {e}"));
                Some(Failure::Reset)
            }
        }
        _ => {
            note_h3(shared, format!("a stream failed: {e}"));
            Some(Failure::Parse)
        }
    }
}

fn note(shared: &Shared, why: String) {
    note_tls_error(&mut shared.recorder.borrow_mut(), || why);
}

/// Keeps the first HTTP/3 protocol failure for the report's warnings (with HTTP/2's: a run
/// speaks one of them).
fn note_h3(shared: &Shared, why: String) {
    let mut recorder = shared.recorder.borrow_mut();
    if recorder.h2_error.is_none() {
        recorder.h2_error = Some(why);
    }
}
