//! HTTPS and HTTP/3 for the tests (`load_http3.rs`, `serve_http3_hostile.rs`, `load_tls.rs`,
//! `lab_protocols.rs`): a certificate made here, `webscope serve` with it on 127.0.0.1 port 0
//! (with `--http3`, TCP and the same UDP port), [`Http3`] (a site, its certificate and
//! `serve --http3` in a temporary directory, and `load --http3 --cacert` against it), Caddy
//! serving HTTP/3 with its own local CA, and `webscope load` runs read back as JSON.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::webscope;

/// Byte i is i mod 251, so that a body's bytes are checkable.
pub fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

/// A document root with `1k.bin`, `100k.bin` and `1m.bin`.
pub fn site(dir: &Path) -> PathBuf {
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    for (name, len) in [
        ("1k.bin", 1024),
        ("100k.bin", 100 * 1024),
        ("1m.bin", 1 << 20),
    ] {
        std::fs::write(root.join(name), pattern(len)).unwrap();
    }
    root
}

/// A self-signed leaf certificate for 127.0.0.1 and localhost (no basicConstraints, so not a
/// CA: rustls refuses a CA as an end entity): (cert.pem, key.pem).
pub fn certificate(dir: &Path) -> (PathBuf, PathBuf) {
    let made =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".into(), "localhost".into()]).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, made.cert.pem()).unwrap();
    std::fs::write(&key, made.key_pair.serialize_pem()).unwrap();
    (cert, key)
}

/// A running `webscope serve` with TLS (and `--http3` unless told otherwise), killed on drop.
pub struct Serve {
    child: Child,
    pub addr: SocketAddr,
    pub admin: SocketAddr,
    pub access_log: PathBuf,
}

impl Serve {
    /// On 127.0.0.1 port 0, 2 workers, an access log in `dir`, the admin endpoint; `extra`
    /// flags after (e.g. `--http3`).
    pub fn start(root: &Path, dir: &Path, cert_key: (&Path, &Path), extra: &[&str]) -> Serve {
        Serve::start_env(root, dir, cert_key, extra, &[])
    }

    /// As [`Serve::start`], with variables set in the server's environment.
    pub fn start_env(
        root: &Path,
        dir: &Path,
        (cert, key): (&Path, &Path),
        extra: &[&str],
        env: &[(&str, &Path)],
    ) -> Serve {
        let access_log = dir.join("access.log");
        let mut child = webscope()
            .args(["serve", "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0"])
            .args(["--workers", "2", "--root"])
            .arg(root)
            .arg("--tls-cert")
            .arg(cert)
            .arg("--tls-key")
            .arg(key)
            .arg("--access-log")
            .arg(&access_log)
            .args(extra)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut addr = None;
        let mut admin = None;
        // The first lines: where it listens, then the admin address.
        while admin.is_none() {
            let Some(Ok(line)) = lines.next() else {
                let _ = child.kill();
                panic!("webscope serve stopped before printing its addresses");
            };
            if let Some(rest) = line.strip_prefix("webscope serve: listening on https://") {
                addr = rest.split_whitespace().next().map(|a| a.parse().unwrap());
            }
            if let Some(rest) = line.strip_prefix("webscope serve: admin on http://") {
                admin = rest.split_whitespace().next().map(|a| a.parse().unwrap());
            }
        }
        // The rest of its output is drained so that it never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines.map_while(Result::ok) {});
        Serve {
            child,
            addr: addr.expect("an https address"),
            admin: admin.unwrap(),
            access_log,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("https://{}{path}", self.addr)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The server's /metrics text.
    pub fn metrics(&self) -> String {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(self.admin).unwrap();
        stream
            .write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).unwrap();
        text
    }

    /// A counter of /metrics (the sum of its series), 0 when absent.
    pub fn counter(&self, name: &str) -> f64 {
        self.metrics()
            .lines()
            .filter(|l| l.starts_with(name) && !l.starts_with('#'))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    }

    /// The access log's lines, once the async log has written them (at least once a second).
    pub fn log_lines(&self, at_least: usize) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let text = std::fs::read_to_string(&self.access_log).unwrap_or_default();
            let lines: Vec<String> = text.lines().map(str::to_string).collect();
            if lines.len() >= at_least || Instant::now() > deadline {
                return lines;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The server's resident memory, KiB.
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap()
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `webscope load ARGS -t 1 --json FILE`, which must exit with `code`: the report and the
/// summary (stdout and stderr).
pub fn load(args: &[&str], json: &Path, code: i32) -> (Value, String) {
    let out = webscope()
        .arg("load")
        .args(args)
        .args(["-t", "1", "--json"])
        .arg(json)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(code), "{text}");
    let report = serde_json::from_slice(&std::fs::read(json).unwrap()).unwrap();
    (report, text)
}

/// `webscope serve --http3` on a site of its own (`1k.bin`, `100k.bin`, `1m.bin`) in a
/// temporary directory, with a certificate made for it: what an HTTP/3 test starts from.
pub struct Http3 {
    pub serve: Serve,
    pub cert: PathBuf,
    pub key: PathBuf,
    pub root: PathBuf,
    /// Dropped last: the server is stopped before its files go.
    pub tmp: tempfile::TempDir,
}

impl Http3 {
    /// `serve --http3` and `extra` flags (2 workers, an access log, the admin endpoint).
    pub fn start(extra: &[&str]) -> Http3 {
        Http3::start_env(extra, &[])
    }

    /// As [`Http3::start`], with variables set in the server's environment.
    pub fn start_env(extra: &[&str], env: &[(&str, &Path)]) -> Http3 {
        let tmp = tempfile::tempdir().unwrap();
        let root = site(tmp.path());
        let (cert, key) = certificate(tmp.path());
        let flags: Vec<&str> = ["--http3"].iter().chain(extra).copied().collect();
        let serve = Serve::start_env(&root, tmp.path(), (&cert, &key), &flags, env);
        Http3 {
            serve,
            cert,
            key,
            root,
            tmp,
        }
    }

    /// The certificate, for `--cacert`.
    pub fn cacert(&self) -> &str {
        self.cert.to_str().unwrap()
    }

    /// `webscope load URL --http3 --cacert CERT ARGS` for `path` on the server, which must
    /// exit with `code`: the report and the summary.
    pub fn load(&self, path: &str, args: &[&str], code: i32) -> (Value, String) {
        let url = self.serve.url(path);
        let flags: Vec<&str> = [url.as_str(), "--http3", "--cacert", self.cacert()]
            .iter()
            .chain(args)
            .copied()
            .collect();
        load(&flags, &self.tmp.path().join("r.json"), code)
    }
}

/// Caddy serving `root` over HTTP/1.1, HTTP/2 and HTTP/3 with its own local CA, killed on
/// drop; None with a note where it is not installed (a panic under WEBSCOPE_REQUIRE_PEERS,
/// which CI sets: it installs Debian's caddy).
pub struct Caddy {
    child: Child,
    pub port: u16,
    /// Caddy's local root CA, for --cacert.
    pub ca: PathBuf,
}

impl Caddy {
    pub fn start(root: &Path, dir: &Path) -> Option<Caddy> {
        let Some(caddy) = ["/usr/bin/caddy", "/usr/local/bin/caddy"]
            .into_iter()
            .find(|p| Path::new(p).exists())
        else {
            assert!(
                std::env::var_os("WEBSCOPE_REQUIRE_PEERS").is_none(),
                "WEBSCOPE_REQUIRE_PEERS is set but caddy is missing: apt-get install caddy"
            );
            eprintln!("skipping: caddy is not installed (apt-get install caddy)");
            return None;
        };
        // A port free on TCP and UDP now (Caddy binds both).
        let port = loop {
            let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let port = tcp.local_addr().unwrap().port();
            if std::net::UdpSocket::bind(("0.0.0.0", port)).is_ok() {
                break port;
            }
        };
        let storage = dir.join("caddy");
        let config = dir.join("Caddyfile");
        std::fs::write(
            &config,
            format!(
                "{{\n\tadmin off\n\tauto_https disable_redirects\n\tskip_install_trust\n\tstorage file_system {}\n\tservers {{\n\t\tprotocols h1 h2 h3\n\t}}\n}}\nhttps://localhost:{port} {{\n\ttls internal\n\troot * {}\n\tfile_server\n}}\n",
                storage.display(),
                root.display()
            ),
        )
        .unwrap();
        let child = Command::new(caddy)
            .args(["run", "--adapter", "caddyfile", "--config"])
            .arg(&config)
            .env("HOME", dir)
            .env("XDG_DATA_HOME", dir.join("xdg"))
            .env("XDG_CONFIG_HOME", dir.join("xdg"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut caddy = Caddy {
            child,
            port,
            ca: storage.join("pki/authorities/local/root.crt"),
        };
        // Ready once it has made its CA and listens.
        let deadline = Instant::now() + Duration::from_secs(20);
        while !(caddy.ca.exists() && std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()) {
            if let Ok(Some(status)) = caddy.child.try_wait() {
                panic!("caddy exited at start: {status}");
            }
            assert!(Instant::now() < deadline, "caddy did not start within 20 s");
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(caddy)
    }
}

impl Drop for Caddy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
