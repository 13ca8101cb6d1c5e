//! Shared by the `load_*` tests: tiny HTTP/1.1 servers with known behaviour (fast, slow at a
//! known delay, stalling, resetting, short bodies, bad statuses, garbage) that count what
//! they did, and helpers to run `webscope load` bounded in time.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What a test server does with each request.
#[derive(Debug, Clone, Copy)]
pub enum Behavior {
    /// 200 with a body of this many bytes, keep-alive unless asked to close.
    Ok { body: usize },
    /// Like `Ok`, after waiting this long.
    Delay { body: usize, delay: Duration },
    /// Like `Ok`, but every response waits while the clock is inside a window that starts
    /// `after` the first request and lasts `length` (the server stalls once).
    StallOnce {
        body: usize,
        after: Duration,
        length: Duration,
    },
    /// Reads requests and never answers.
    Stall,
    /// Answers each connection's first request (200, this many bytes), never the next.
    AnswerFirst { body: usize },
    /// HTTP/2 (h2c): after the client's preface, a SETTINGS frame and a GOAWAY with this
    /// error code; then reads until the client closes.
    GoAway(u32),
    /// Reads a request and resets the connection (RST, SO_LINGER 0).
    Reset,
    /// Announces 1000 bytes, sends 10, closes.
    ShortBody,
    /// Answers with this status and an empty body.
    Status(u16),
    /// Answers with bytes that are not HTTP.
    Garbage,
}

/// A running test server on 127.0.0.1; stops on drop.
pub struct TestServer {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    pub connections: Arc<AtomicU64>,
    pub responses: Arc<AtomicU64>,
    accept: Option<JoinHandle<()>>,
}

impl TestServer {
    pub fn start(behavior: Behavior) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let connections = Arc::new(AtomicU64::new(0));
        let responses = Arc::new(AtomicU64::new(0));
        let first_request: Arc<Mutex<Option<Instant>>> = Arc::new(Mutex::new(None));
        let (s, c, r) = (
            Arc::clone(&stop),
            Arc::clone(&connections),
            Arc::clone(&responses),
        );
        let accept = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        c.fetch_add(1, Ordering::Relaxed);
                        let (s, r, first) =
                            (Arc::clone(&s), Arc::clone(&r), Arc::clone(&first_request));
                        std::thread::spawn(move || serve(stream, behavior, &s, &r, &first));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(2)),
                }
            }
        });
        TestServer {
            addr,
            stop,
            connections,
            responses,
            accept: Some(accept),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(handle) = self.accept.take() {
            let _ = handle.join();
        }
    }
}

fn serve(
    mut stream: TcpStream,
    behavior: Behavior,
    stop: &AtomicBool,
    responses: &AtomicU64,
    first: &Mutex<Option<Instant>>,
) {
    stream.set_nonblocking(false).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    let _ = stream.set_nodelay(true);
    let mut pending = Vec::new();
    let mut buf = [0u8; 8192];
    let mut answered = 0;
    while !stop.load(Ordering::Relaxed) {
        match stream.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => pending.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                continue
            }
            Err(_) => return,
        }
        while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&pending[..end]).to_ascii_lowercase();
            pending.drain(..end + 4);
            let close = head.contains("connection: close");
            let started = *first.lock().unwrap().get_or_insert_with(Instant::now);
            let reply: Vec<u8> = match behavior {
                Behavior::Ok { body } => ok(body, close),
                Behavior::Delay { body, delay } => {
                    std::thread::sleep(delay);
                    ok(body, close)
                }
                Behavior::StallOnce {
                    body,
                    after,
                    length,
                } => {
                    let (from, to) = (started + after, started + after + length);
                    let now = Instant::now();
                    if now >= from && now < to {
                        std::thread::sleep(to - now);
                    }
                    ok(body, close)
                }
                Behavior::Stall => return hold(stop),
                Behavior::AnswerFirst { .. } if answered > 0 => return hold(stop),
                Behavior::AnswerFirst { body } => ok(body, close),
                Behavior::GoAway(code) => {
                    // SETTINGS (empty), then GOAWAY: last stream 0, the code, no debug data.
                    let mut frames = vec![0, 0, 0, 4, 0, 0, 0, 0, 0];
                    frames.extend_from_slice(&[0, 0, 8, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
                    frames.extend_from_slice(&code.to_be_bytes());
                    let _ = stream.write_all(&frames);
                    while !stop.load(Ordering::Relaxed) {
                        match stream.read(&mut buf) {
                            Ok(0) => return,
                            Ok(_) => {}
                            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
                            Err(_) => return,
                        }
                    }
                    return;
                }
                Behavior::Reset => {
                    reset_on_close(&stream);
                    return;
                }
                Behavior::ShortBody => {
                    let _ = stream
                        .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n0123456789");
                    return;
                }
                Behavior::Status(code) => {
                    format!("HTTP/1.1 {code} Whatever\r\nContent-Length: 0\r\n\r\n").into_bytes()
                }
                Behavior::Garbage => b"SSH-2.0-OpenSSH_9.2\r\n\r\n".to_vec(),
            };
            if stream.write_all(&reply).is_err() {
                return;
            }
            responses.fetch_add(1, Ordering::Relaxed);
            answered += 1;
            if close || matches!(behavior, Behavior::Garbage) {
                return;
            }
        }
    }
}

/// Holds a connection open, unanswered, until the server stops.
fn hold(stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// SO_LINGER 0: closing sends RST instead of FIN.
fn reset_on_close(stream: &TcpStream) {
    use std::os::fd::AsRawFd;
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: setsockopt on a socket we own with a correctly sized linger struct.
    unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
}

fn ok(body: usize, close: bool) -> Vec<u8> {
    let mut reply = format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {body}\r\n{}\r\n",
        if close { "Connection: close\r\n" } else { "" }
    )
    .into_bytes();
    reply.resize(reply.len() + body, b'x');
    reply
}

/// A port on 127.0.0.1 where nothing listens.
pub fn closed_port() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

pub fn webscope() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_webscope"));
    cmd.stdin(Stdio::null());
    cmd
}

/// Runs `webscope load ARGS`, killing it if it outlives `limit`.
pub fn load(args: &[&str], limit: Duration) -> Output {
    let child = webscope()
        .arg("load")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn webscope load");
    wait_bounded(child, limit)
}

/// Waits for a child at most `limit`, then kills it (and fails the test).
pub fn wait_bounded(mut child: Child, limit: Duration) -> Output {
    let deadline = Instant::now() + limit;
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("webscope did not finish within {limit:?}: {out:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Runs a load with `--json` into a temporary file and returns the report.
pub fn load_json(args: &[&str], limit: Duration) -> (serde_json::Value, Output) {
    let (report, out) = load_json_exiting(args, limit);
    assert!(out.status.success(), "webscope load failed: {out:?}");
    (report, out)
}

/// A run in which no request succeeds: its report is written all the same, and it exits 1
/// saying so.
pub fn load_json_failing(args: &[&str], limit: Duration) -> (serde_json::Value, Output) {
    let (report, out) = load_json_exiting(args, limit);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("webscope: error: no request succeeded") && stderr.lines().count() == 1,
        "{stderr}"
    );
    (report, out)
}

/// `webscope load ... --json` whatever its exit code: the report and the output.
pub fn load_json_exiting(args: &[&str], limit: Duration) -> (serde_json::Value, Output) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("report.json");
    let mut all: Vec<&str> = args.to_vec();
    let json_arg = json.to_str().unwrap().to_string();
    all.extend_from_slice(&["--json", &json_arg, "--quiet"]);
    let out = load(&all, limit);
    let report = serde_json::from_slice(&std::fs::read(&json).expect("the JSON report")).unwrap();
    (report, out)
}

pub fn u(v: &serde_json::Value, key: &str) -> u64 {
    v[key].as_u64().unwrap_or_else(|| panic!("no {key} in {v}"))
}

pub fn f(v: &serde_json::Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or_else(|| panic!("no {key} in {v}"))
}

/// A running `webscope serve` on 127.0.0.1 port 0; stopped (SIGTERM, then kill) on drop.
pub struct Serve {
    child: Child,
    pub addr: SocketAddr,
    https: bool,
}

impl Serve {
    pub fn start(root: &std::path::Path) -> Serve {
        Serve::start_with(root, &[])
    }

    /// With more flags (`--tls-cert C --tls-key K`: then `base` is https).
    pub fn start_with(root: &std::path::Path, extra: &[&str]) -> Serve {
        use std::io::BufRead;
        let mut child = webscope()
            .args([
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--workers",
                "1",
                "--root",
            ])
            .arg(root)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn webscope serve");
        let stdout = child.stdout.take().unwrap();
        let mut first = String::new();
        std::io::BufReader::new(stdout)
            .read_line(&mut first)
            .unwrap();
        let https = first.contains("https://");
        let addr = first
            .split(if https { "https://" } else { "http://" })
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("no address in {first:?}"))
            .parse()
            .unwrap();
        Serve { child, addr, https }
    }

    pub fn base(&self) -> String {
        let scheme = if self.https { "https" } else { "http" };
        format!("{scheme}://{}/", self.addr)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Writes a file set with `webscope fileset ARGS --out DIR`.
pub fn fileset(dir: &std::path::Path, args: &[&str]) {
    let out = webscope()
        .arg("fileset")
        .args(args)
        .arg("--out")
        .arg(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
}
