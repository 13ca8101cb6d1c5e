//! Shared by the `serve_*` integration tests: start the real `webscope serve` binary on
//! 127.0.0.1 port 0, talk raw TCP to it, parse what it answers, stop it.
#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A document root with known files.
pub struct Site {
    pub dir: tempfile::TempDir,
}

impl Site {
    pub fn new() -> Site {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        std::fs::write(root.join("index.html"), b"<h1>home</h1>\n").unwrap();
        std::fs::write(root.join("1k.bin"), pattern(1024)).unwrap();
        std::fs::write(root.join("100k.bin"), pattern(100 * 1024)).unwrap();
        std::fs::write(root.join("empty.txt"), b"").unwrap();
        std::fs::create_dir(root.join("docs")).unwrap();
        std::fs::write(root.join("docs/index.html"), b"<p>docs</p>\n").unwrap();
        std::fs::create_dir(root.join("noindex")).unwrap();
        std::fs::write(root.join("noindex/a.txt"), b"a\n").unwrap();
        Site { dir }
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn write(&self, rel: &str, bytes: &[u8]) -> PathBuf {
        let path = self.root().join(rel);
        std::fs::write(&path, bytes).unwrap();
        path
    }
}

/// Deterministic file content: byte i is i mod 251 (a prime, so offsets are checkable).
pub fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

/// The engine the tests run the server on: the default (io_uring where the kernel allows it)
/// everywhere but in `serve_epoll*.rs`, which include the serve tests again, and whose test
/// binaries (named after them) run every one with `--io epoll`.
pub fn io_engine() -> Option<&'static str> {
    let exe = std::env::current_exe().ok()?;
    let name = exe.file_name()?.to_str()?;
    name.starts_with("serve_epoll").then_some("epoll")
}

/// A running `webscope serve`, killed on drop if not stopped.
pub struct Server {
    child: Option<Child>,
    pub addr: SocketAddr,
    stdout: Arc<Mutex<Vec<String>>>,
    stderr: Arc<Mutex<String>>,
    readers: Vec<JoinHandle<()>>,
}

impl Server {
    pub fn start(root: &Path, extra: &[&str]) -> Server {
        Server::start_with(root, extra, |_| {})
    }

    pub fn start_with(root: &Path, extra: &[&str], tweak: impl FnOnce(&mut Command)) -> Server {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_webscope"));
        cmd.arg("serve")
            .arg("--root")
            .arg(root)
            .args(["--listen", "127.0.0.1:0"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if !extra.contains(&"--workers") {
            cmd.args(["--workers", "1"]);
        }
        if let Some(io) = io_engine().filter(|_| !extra.contains(&"--io")) {
            cmd.args(["--io", io]);
        }
        tweak(&mut cmd);
        let mut child = cmd.spawn().expect("spawn webscope serve");
        let stdout = child.stdout.take().unwrap();
        let stderr = child.stderr.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let Some(Ok(first)) = lines.next() else {
            let mut err = String::new();
            let _ = BufReader::new(stderr).read_to_string(&mut err);
            let _ = child.kill();
            panic!("webscope serve printed no address; stderr: {err}");
        };
        // http:// or, with --tls-cert, https://.
        let addr = first
            .split("://")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("no address in {first:?}"))
            .parse()
            .expect("address");
        let out = Arc::new(Mutex::new(Vec::new()));
        let err = Arc::new(Mutex::new(String::new()));
        let out2 = Arc::clone(&out);
        let err2 = Arc::clone(&err);
        let readers = vec![
            std::thread::spawn(move || {
                for line in lines.map_while(Result::ok) {
                    out2.lock().unwrap().push(line);
                }
            }),
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    let mut err = err2.lock().unwrap();
                    err.push_str(&line);
                    err.push('\n');
                }
            }),
        ];
        Server {
            child: Some(child),
            addr,
            stdout: out,
            stderr: err,
            readers,
        }
    }

    pub fn connect(&self) -> TcpStream {
        let stream = TcpStream::connect(self.addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        stream
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, |c| c.id())
    }

    /// Whether the process is still running.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.as_mut().map(|c| c.try_wait()), Some(Ok(None)))
    }

    /// Sends SIGTERM and waits (at most `limit`) for the exit; returns the status, stdout
    /// lines after the first, and stderr.
    pub fn stop(mut self, limit: Duration) -> (ExitStatus, Vec<String>, String) {
        let mut child = self.child.take().unwrap();
        // SAFETY: sending a signal to our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + limit;
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("webscope serve did not stop within {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        for reader in self.readers.drain(..) {
            let _ = reader.join();
        }
        let out = self.stdout.lock().unwrap().clone();
        let err = self.stderr.lock().unwrap().clone();
        (status, out, err)
    }

    /// The admin endpoint's address, from the line `webscope serve` prints after the first.
    pub fn admin_addr(&self) -> SocketAddr {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let found = self.stdout.lock().unwrap().iter().find_map(|line| {
                line.strip_prefix("webscope serve: admin on http://")
                    .and_then(|rest| rest.split_whitespace().next())
                    .and_then(|a| a.parse().ok())
            });
            if let Some(addr) = found {
                return addr;
            }
            assert!(Instant::now() < deadline, "no admin address printed");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// One parsed response.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Parses one response from the front of `buf`; `head_only` for responses to HEAD (and 304,
/// which never has a body). Returns the response and the bytes it used, or None if `buf` does
/// not hold a whole one.
pub fn parse_response(buf: &[u8], head_only: bool) -> Option<(Response, usize)> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut resp = httparse::Response::new(&mut headers);
    let head_len = match resp.parse(buf).expect("malformed response from server") {
        httparse::Status::Complete(n) => n,
        httparse::Status::Partial => return None,
    };
    let status = resp.code.unwrap();
    let headers: Vec<(String, String)> = resp
        .headers
        .iter()
        .map(|h| {
            (
                h.name.to_string(),
                String::from_utf8_lossy(h.value).into_owned(),
            )
        })
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .map(|(_, v)| v.parse().expect("content-length"))
        .unwrap_or(0);
    let body_len = if head_only || status == 304 {
        0
    } else {
        length
    };
    if buf.len() < head_len + body_len {
        return None;
    }
    let body = buf[head_len..head_len + body_len].to_vec();
    Some((
        Response {
            status,
            headers,
            body,
        },
        head_len + body_len,
    ))
}

/// Reads until `count` responses are complete (or the connection ends / times out).
pub fn read_responses(stream: &mut TcpStream, count: usize, head_only: bool) -> Vec<Response> {
    let mut buf = Vec::new();
    let mut out = Vec::new();
    let mut chunk = [0u8; 65536];
    loop {
        while let Some((resp, used)) = parse_response(&buf, head_only) {
            buf.drain(..used);
            out.push(resp);
            if out.len() == count {
                return out;
            }
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return out,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// Sends `request` on a new connection and reads one response.
pub fn exchange(server: &Server, request: &[u8]) -> Response {
    let mut stream = server.connect();
    stream.write_all(request).unwrap();
    let head_only = request.starts_with(b"HEAD ");
    let mut responses = read_responses(&mut stream, 1, head_only);
    assert_eq!(
        responses.len(),
        1,
        "no response to {:?}",
        String::from_utf8_lossy(request)
    );
    responses.remove(0)
}

/// GET `path` (HTTP/1.1, Connection: close) and return the response.
pub fn get(server: &Server, path: &str) -> Response {
    exchange(
        server,
        format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").as_bytes(),
    )
}

/// Whether the server closed `stream` (EOF or reset) within `limit`, after whatever it sent.
pub fn closed_within(stream: &mut TcpStream, limit: Duration) -> bool {
    stream.set_read_timeout(Some(limit)).unwrap();
    let mut buf = [0u8; 65536];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return false
            }
            Err(_) => return true,
        }
    }
}

/// Half-closes our side, so a server waiting for more of a head sees the end.
pub fn finish_sending(stream: &TcpStream) {
    let _ = stream.shutdown(Shutdown::Write);
}

/// Runs `count` requests on one keep-alive connection while strace counts the server's syscalls.
pub fn syscalls(server: &Server, request: &[u8], count: u64) -> HashMap<String, u64> {
    strace_during(server.pid(), || {
        let mut stream = server.connect();
        for _ in 0..count {
            stream.write_all(request).unwrap();
            assert_eq!(read_responses(&mut stream, 1, false).len(), 1);
        }
    })
}

/// Counts the syscalls of process `pid` (all its threads) while `work` runs, with `strace -c`.
pub fn strace_during(pid: u32, work: impl FnOnce()) -> HashMap<String, u64> {
    let out = tempfile::NamedTempFile::new().unwrap();
    let mut strace = Command::new("strace")
        .args(["-f", "-c", "-o"])
        .arg(out.path())
        .args(["-p", &pid.to_string()])
        .stderr(Stdio::piped())
        .spawn()
        .expect("strace is needed for this test (apt-get install strace)");
    // strace says "attached" once per thread; give it time to attach to all of them.
    std::thread::sleep(Duration::from_millis(500));
    work();
    std::thread::sleep(Duration::from_millis(100));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(strace.id() as i32, libc::SIGINT) };
    let deadline = Instant::now() + Duration::from_secs(10);
    while strace.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "strace did not stop");
        std::thread::sleep(Duration::from_millis(20));
    }
    let text = std::fs::read_to_string(out.path()).unwrap();
    let mut counts = HashMap::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() >= 5 && fields[0].parse::<f64>().is_ok() {
            if let Ok(calls) = fields[3].parse::<u64>() {
                counts.insert(fields[fields.len() - 1].to_string(), calls);
            }
        }
    }
    // Either engine's way of moving the bytes: proof that strace saw the exchange.
    assert!(
        counts.contains_key("sendto") || counts.contains_key("io_uring_enter"),
        "strace saw no traffic:\n{text}"
    );
    counts
}

pub fn count(counts: &HashMap<String, u64>, name: &str) -> u64 {
    counts.get(name).copied().unwrap_or(0)
}
