//! The HTTP/2 engine (`--http2`, `--h2c`): the `h2` crate's client on the worker thread's
//! runtime, `-m` streams per connection in closed loop, as h2load runs them. In open loop
//! (`--rate`) the same `-c × -m` streams take the schedule's slots as they fall due: a free
//! stream claims the next slot and sends it at its time; a slot that falls due while every
//! stream is busy waits for one, its latency counted from its due time (the
//! coordinated-omission correction, as the HTTP/1.1 engine counts it), and slots no stream
//! claimed before the run's end are counted as not sent. Streams are HTTP/2's connections:
//! `-M` is the limit an open loop grows to, where HTTP/1.1 opens more connections.
//!
//! Why the h2 crate and not hand-written framing: HTTP/2's framing, HPACK and flow control are
//! a protocol's worth of state, and the crate is the one hyper uses; a stream is a task on the
//! thread's `LocalSet` (the thread's recorder is shared without locks, as in the HTTP/1.1
//! engine). Nothing here touches the HTTP/1.1 engine; the recorder, the intervals and the
//! report are the same, so histograms per class, interval logs and JSON work unchanged.
//! Flow-control windows are opened wide (a stream 4 MiB, the connection 16 MiB) so that large
//! bodies are not throttled by the client, and each DATA frame's capacity is released as soon
//! as it is counted.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use h2::client::SendRequest;
use tokio::net::TcpStream;
use webscope_workload::Rng;

use super::conn::{self, count_failure, count_handshake, count_response, Response};
use crate::recorder::{record, Failure};
use crate::shared::{Intervals, Shared};

/// A stream's receive window, and the connection's.
const STREAM_WINDOW: u32 = 4 << 20;
const CONNECTION_WINDOW: u32 = 16 << 20;

/// After a failed connection, wait this long before the next (a server that is down is not
/// hammered).
const BACKOFF: Duration = Duration::from_millis(10);

/// How often the interval task looks at the stop flag.
const STOP_POLL: Duration = Duration::from_millis(5);

/// The thread's requests in flight, so that those still unanswered when the run ends are
/// counted with their ages: a slot per stream loop (connection `c`'s stream `s` is slot
/// `c × streams + s`) holding when its request began and its class. A connection still
/// opening (connect, TLS, the HTTP/2 preface) holds its first stream's slot under the first
/// class, where its handshake is counted: its first request is waiting on it.
pub(crate) type InFlight = Rc<RefCell<Vec<Option<(Instant, usize)>>>>;

/// Runs `connections` HTTP/2 connections of `streams` streams each until the run ends or is
/// stopped, handing the figures over at each interval boundary (users run in `h2_users.rs`).
pub(crate) async fn run(
    shared: Rc<Shared>,
    mut intervals: Intervals,
    connections: usize,
    streams: usize,
    seed: u64,
) {
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async move {
            intervals.begin();
            let in_flight: InFlight = Rc::new(RefCell::new(vec![None; connections * streams]));
            for c in 0..connections {
                let rng = Rng::new(seed ^ (c as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
                let slots = (Rc::clone(&in_flight), c * streams);
                tokio::task::spawn_local(connection(Rc::clone(&shared), streams, rng, slots));
            }
            keep_time(&shared, &mut intervals, &in_flight).await;
        })
        .await;
    // The LocalSet is dropped here: streams still in flight are cancelled, counted above as
    // unfinished.
}

/// The interval clock of a multiplexing engine's thread (HTTP/2, HTTP/3), while its
/// connections run as tasks beside it: snapshots at each boundary, the requests in flight at
/// the end counted as unfinished; returns when the run ends or is stopped.
pub(super) async fn keep_time(shared: &Shared, intervals: &mut Intervals, in_flight: &InFlight) {
    loop {
        let now = Instant::now();
        if intervals.stop_requested() {
            count_unfinished(shared, in_flight, now);
            intervals.snapshot(shared, now, true);
            return;
        }
        let boundary = intervals.boundary();
        if now >= boundary {
            let last = intervals.is_last(boundary);
            if last {
                count_unfinished(shared, in_flight, boundary);
            }
            if !intervals.snapshot(shared, boundary, last) {
                return;
            }
            continue;
        }
        // Past the last send with nothing in flight: a drain has nothing to wait for.
        if now >= shared.end && in_flight.borrow().iter().all(Option::is_none) {
            intervals.snapshot(shared, now, true);
            return;
        }
        tokio::time::sleep_until(boundary.min(now + STOP_POLL).into()).await;
    }
}

/// Counts the requests in flight at `at`, the run's end, with their ages.
fn count_unfinished(shared: &Shared, in_flight: &InFlight, at: Instant) {
    let mut recorder = shared.recorder.borrow_mut();
    for &(began, class) in in_flight.borrow().iter().flatten() {
        record(
            &mut recorder.classes[class].unfinished,
            conn::nanos(at, began),
        );
    }
}

/// One connection: connect (and TLS), the HTTP/2 handshake, `streams` request loops; again
/// after a failure, until the run's end.
async fn connection(
    shared: Rc<Shared>,
    streams: usize,
    mut rng: Rng,
    (in_flight, base): (InFlight, usize),
) {
    while Instant::now() < shared.end {
        shared.recorder.borrow_mut().connections += 1;
        in_flight.borrow_mut()[base] = Some((Instant::now(), 0));
        let opened = open(&shared).await;
        in_flight.borrow_mut()[base] = None;
        let (sender, connect) = match opened {
            Ok(opened) => opened,
            Err(failure) => {
                count_failure(&mut shared.recorder.borrow_mut(), 0, failure);
                tokio::time::sleep(BACKOFF).await;
                continue;
            }
        };
        let mut tasks = Vec::with_capacity(streams);
        for s in 0..streams {
            let stream_rng = Rng::new(rng.next_u64());
            let first = (s == 0).then_some(connect);
            tasks.push(tokio::task::spawn_local(stream_loop(
                Rc::clone(&shared),
                sender.clone(),
                stream_rng,
                first,
                (Rc::clone(&in_flight), base + s),
            )));
        }
        let mut graceful = true;
        for task in tasks {
            graceful &= task.await.unwrap_or(false);
        }
        // A server that closed the connection gracefully (GOAWAY NO_ERROR, as nginx does
        // after keepalive_requests) is reconnected to at once, as HTTP/1.1 keep-alive is.
        if !graceful && Instant::now() < shared.end {
            tokio::time::sleep(BACKOFF).await;
        }
    }
}

/// Connects, makes the TLS handshake (ALPN h2) for https, and the HTTP/2 handshake; the
/// connection's driver runs as a task of its own. Returns the sender and the TCP connect
/// time; the TLS handshake's time and kind are recorded here (under the first class: a
/// connection serves every class).
pub(super) async fn open(shared: &Shared) -> Result<(SendRequest<Bytes>, Duration), Failure> {
    let deadline = shared.timeout;
    let began = Instant::now();
    let tcp = match tokio::time::timeout(deadline, TcpStream::connect(shared.addr)).await {
        Ok(Ok(tcp)) => tcp,
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            return Err(Failure::ConnectRefused)
        }
        Ok(Err(_)) => return Err(Failure::Connect),
        Err(_) => return Err(Failure::Timeout),
    };
    let _ = tcp.set_nodelay(true);
    if let Some(usecs) = shared.busy_poll {
        use std::os::fd::AsRawFd;
        let _ = crate::busy_poll::set(tcp.as_raw_fd(), usecs);
    }
    let connect = began.elapsed();
    let mut builder = h2::client::Builder::new();
    builder
        .initial_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW);
    match &shared.tls {
        Some((config, name)) => {
            let mut config = (**config).clone();
            config.alpn_protocols = vec![b"h2".to_vec()];
            let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config));
            let handshake_began = Instant::now();
            let tls =
                match tokio::time::timeout(deadline, connector.connect(name.clone(), tcp)).await {
                    Ok(Ok(tls)) => tls,
                    Ok(Err(e)) => {
                        note_tls(shared, &e);
                        return Err(Failure::Tls);
                    }
                    Err(_) => return Err(Failure::Timeout),
                };
            let resumed = tls.get_ref().1.handshake_kind() == Some(rustls::HandshakeKind::Resumed);
            count_handshake(
                &mut shared.recorder.borrow_mut(),
                0,
                handshake_began.elapsed(),
                resumed,
            );
            if tls.get_ref().1.alpn_protocol() != Some(b"h2") {
                note(shared, "the server did not agree to HTTP/2 in the TLS handshake (ALPN): it speaks HTTP/1.1 only; leave --http2 out");
                return Err(Failure::Tls);
            }
            Ok((handshake(shared, builder, tls).await?, connect))
        }
        None => Ok((handshake(shared, builder, tcp).await?, connect)),
    }
}

async fn handshake<T>(
    shared: &Shared,
    builder: h2::client::Builder,
    io: T,
) -> Result<SendRequest<Bytes>, Failure>
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + 'static,
{
    let (sender, driver) = builder
        .handshake(io)
        .await
        .map_err(|e| failure(shared, &e))?;
    tokio::task::spawn_local(async move {
        let _ = driver.await;
    });
    Ok(sender)
}

/// One stream's closed loop: a request, its whole response, the next request. Returns
/// whether it ended because the server closed the connection gracefully (or the run ended).
async fn stream_loop(
    shared: Rc<Shared>,
    sender: SendRequest<Bytes>,
    mut rng: Rng,
    mut connect: Option<Duration>,
    (in_flight, slot): (InFlight, usize),
) -> bool {
    while Instant::now() < shared.end {
        let Some(waited) = next_slot(&shared).await else {
            break;
        };
        let index = shared.requests.pick_index(&mut rng);
        let asked = Asked {
            index,
            waited,
            connect: connect.take(),
            logged: None,
        };
        match ask(&shared, &sender, asked, (&in_flight, slot)).await {
            Ok(_) => {}
            // The server closed the connection before taking this request: not a failure
            // of the request (it was never processed), the end of the connection.
            Err(None) => return true,
            // A stream reset leaves the connection usable; anything else ends it.
            Err(Some(failure)) if failure != Failure::StreamReset => return false,
            Err(Some(_)) => {}
        }
    }
    true
}

/// A request to ask on a stream.
pub(crate) struct Asked {
    /// Its index among the target's requests.
    pub index: usize,
    /// Open loop: its slot's due time, when it waited for a stream (its latency counts from
    /// it).
    pub waited: Option<Instant>,
    /// The connection's TCP connect time, counted with its first request.
    pub connect: Option<Duration>,
    /// The status a log gave it: another one is counted as a mismatch.
    pub logged: Option<u16>,
}

/// Sends `asked` on a new stream of `sender`, holding the in-flight slot `slot` meanwhile,
/// and counts what came: Ok(the status) when a response came, Err(Some(failure)) when it
/// failed (counted), Err(None) when the server refused the stream without processing it,
/// closing gracefully (not counted: the request was never processed).
pub(super) async fn ask(
    shared: &Shared,
    sender: &SendRequest<Bytes>,
    asked: Asked,
    slot: (&InFlight, usize),
) -> Result<u16, Option<Failure>> {
    let scheme = if shared.tls.is_some() {
        "https"
    } else {
        "http"
    };
    let index = asked.index;
    ask_with(
        shared,
        asked,
        slot,
        exchange(shared, sender.clone(), scheme, index),
    )
    .await
}

/// What an exchange on a stream yields: (status, bytes of the body, when the response's
/// head came), or Err(None) when the server refused the stream unprocessed.
pub(super) type Exchanged = Result<(u16, u64, Instant), Option<Failure>>;

/// The counting of [`ask`], whatever carries the request (HTTP/2 here, HTTP/3 in `h3.rs`):
/// holds the in-flight slot while `exchange` runs (bounded by the run's timeout), then
/// counts its response or failure under the request's class.
pub(super) async fn ask_with(
    shared: &Shared,
    asked: Asked,
    (in_flight, slot): (&InFlight, usize),
    exchange: impl std::future::Future<Output = Exchanged>,
) -> Result<u16, Option<Failure>> {
    let class = shared.requests.entry(asked.index).class as usize;
    let sent = Instant::now();
    let from = asked.waited.unwrap_or(sent);
    in_flight.borrow_mut()[slot] = Some((from, class));
    let result = tokio::time::timeout(shared.timeout, exchange)
        .await
        .unwrap_or(Err(Some(Failure::Timeout)));
    in_flight.borrow_mut()[slot] = None;
    let now = Instant::now();
    let mut recorder = shared.recorder.borrow_mut();
    if let Some(connect) = asked.connect {
        record(
            &mut recorder.classes[class].connect,
            connect.as_nanos() as u64,
        );
    }
    match result {
        Ok((status, bytes, first)) => {
            count_response(
                &mut recorder,
                &shared.expect,
                Response {
                    class,
                    status,
                    logged: asked.logged,
                    bytes,
                    latency: (now - from).as_nanos() as u64,
                    ttfb: (first - sent).as_nanos() as u64,
                },
            );
            if shared.schedule.is_some() {
                record(
                    &mut recorder.classes[class].uncorrected,
                    (now - sent).as_nanos() as u64,
                );
            }
            Ok(status)
        }
        Err(None) => Err(None),
        Err(Some(failure)) => {
            count_failure(&mut recorder, class, failure);
            Err(Some(failure))
        }
    }
}

/// Open loop: waits for the next slot of the schedule and returns Some(its due time) if the
/// stream was still busy when it fell due (the request waited: its latency counts from the
/// due time), Some(None) if it is sent on time; None when no slot is left before the end.
/// Closed loop: Some(None) at once.
pub(super) async fn next_slot(shared: &Shared) -> Option<Option<Instant>> {
    let Some(schedule) = &shared.schedule else {
        return Some(None);
    };
    if schedule.peek() >= shared.end {
        return None;
    }
    let free_at = Instant::now();
    let (intended, _) = schedule.claim();
    if intended > free_at {
        tokio::time::sleep_until(intended.into()).await;
    }
    let mut recorder = shared.recorder.borrow_mut();
    recorder.sent_after(Instant::now(), intended);
    Some((free_at > intended).then_some(intended))
}

/// Sends request `index` on a new stream and reads its response whole: (status, bytes of the
/// body, when the response's head came). `Err(None)`: the server refused the stream without
/// processing it, closing gracefully (GOAWAY NO_ERROR or REFUSED_STREAM, RFC 9113 §8.7).
async fn exchange(
    shared: &Shared,
    sender: SendRequest<Bytes>,
    scheme: &str,
    index: usize,
) -> Exchanged {
    let entry = shared.requests.entry(index);
    let uri = format!("{scheme}://{}{}", shared.requests.authority(), entry.path);
    let mut request = http::Request::builder()
        .method(entry.method.as_str())
        .uri(uri);
    for (name, value) in &entry.fields {
        request = request.header(name.as_str(), value.as_str());
    }
    let request = request.body(()).map_err(|_| Some(Failure::Parse))?;
    let mut sender = sender.ready().await.map_err(|e| unprocessed(shared, &e))?;
    let (response, mut body_out) = sender
        .send_request(request, entry.body.is_empty())
        .map_err(|e| unprocessed(shared, &e))?;
    if !entry.body.is_empty() {
        body_out
            .send_data(entry.body.clone(), true)
            .map_err(|e| unprocessed(shared, &e))?;
    }
    let response = response.await.map_err(|e| unprocessed(shared, &e))?;
    let first = Instant::now();
    let status = response.status().as_u16();
    let mut body = response.into_body();
    let mut bytes = 0u64;
    while let Some(chunk) = body.data().await {
        let chunk = chunk.map_err(|e| Some(failure(shared, &e)))?;
        bytes += chunk.len() as u64;
        let _ = body.flow_control().release_capacity(chunk.len());
    }
    Ok((status, bytes, first))
}

/// None when the server gracefully refused a stream it did not process, else the failure.
fn unprocessed(shared: &Shared, e: &h2::Error) -> Option<Failure> {
    let graceful = match e.reason() {
        Some(h2::Reason::NO_ERROR) => e.is_go_away() && e.is_remote(),
        Some(h2::Reason::REFUSED_STREAM) => e.is_remote(),
        _ => false,
    };
    (!graceful).then(|| failure(shared, e))
}

/// The failure kind of an h2 error, named by its cause: a GOAWAY or RST_STREAM only when the
/// server sent one; one the client's library sent because the server's frames broke the
/// protocol (no SETTINGS first, a frame that does not parse) is a protocol (parse) error. The
/// first GOAWAY's code or protocol error is kept for the report's warnings.
fn failure(shared: &Shared, e: &h2::Error) -> Failure {
    let failure = if e.is_remote() && e.is_go_away() {
        Failure::GoAway
    } else if e.is_remote() && e.is_reset() {
        Failure::StreamReset
    } else if e.is_io() {
        Failure::Reset
    } else {
        Failure::Parse
    };
    let reason = e.reason().unwrap_or(h2::Reason::NO_ERROR);
    let why = match failure {
        Failure::GoAway => format!("the server sent GOAWAY {reason:?} ({e})"),
        Failure::Parse => format!(
            "the server's bytes broke the protocol, so the client ended the {} with {reason:?} ({e}): {}",
            if e.is_reset() { "stream" } else { "connection" },
            if shared.tls.is_some() {
                "is it an HTTP/2 server?"
            } else {
                "does it speak HTTP/2 in cleartext (prior knowledge, h2c)? If not, leave --http2 out"
            }
        ),
        _ => return failure,
    };
    let mut recorder = shared.recorder.borrow_mut();
    if recorder.h2_error.is_none() {
        recorder.h2_error = Some(why);
    }
    failure
}

fn note(shared: &Shared, why: &str) {
    conn::note_tls_error(&mut shared.recorder.borrow_mut(), || why.to_string());
}

fn note_tls(shared: &Shared, e: &std::io::Error) {
    let why = crate::tls::io_cause(e).unwrap_or_else(|| format!("TLS failed: {e}"));
    note(shared, &why);
}
