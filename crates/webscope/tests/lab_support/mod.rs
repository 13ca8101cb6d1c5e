//! Shared by the `lab_*` tests: the binary, and a tiny file set to run labs on.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Stdio};

mod peers;
// Not every test binary that includes this module starts a peer.
#[allow(unused_imports)]
pub use peers::{Apache, NodeExporter};

pub mod tls;

mod unchecked;
#[allow(unused_imports)]
pub use unchecked::unchecked;

pub fn webscope() -> Command {
    Command::new(env!("CARGO_BIN_EXE_webscope"))
}

/// Writes WebStone A/4 (77 small files) to `dir`.
pub fn tiny_fileset(dir: &Path) {
    let status = webscope()
        .args(["fileset", "webstone-a", "--scale", "0.25", "--out"])
        .arg(dir)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
}

/// `webscope serve` on `root`, on 127.0.0.1 with one worker, killed on drop: a server the
/// lab did not start, as `--target` sees one.
pub struct Served {
    child: std::process::Child,
    pub base_url: String,
    pub pid: u32,
}

impl Served {
    pub fn start(root: &Path) -> Served {
        Served::start_with(root, &[], None)
    }

    /// With more `serve` flags, pinned to `cpu` if given.
    pub fn start_with(root: &Path, extra: &[&str], cpu: Option<usize>) -> Served {
        use std::io::BufRead;
        use std::os::unix::process::CommandExt;
        let mut cmd = webscope();
        cmd.args([
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
        .stderr(Stdio::null());
        if !extra.contains(&"--access-log") {
            cmd.args(["--access-log", "/dev/null"]);
        }
        if let Some(cpu) = cpu {
            // SAFETY: sched_setaffinity on the child itself, before exec.
            unsafe {
                cmd.pre_exec(move || {
                    let mut set: libc::cpu_set_t = std::mem::zeroed();
                    libc::CPU_SET(cpu, &mut set);
                    if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0
                    {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let mut child = cmd.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut line = String::new();
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .unwrap();
        // http://ADDR, or https://ADDR with --tls-cert.
        let url = line
            .split("listening on ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .filter(|url| url.starts_with("http"))
            .unwrap_or_else(|| panic!("webscope serve said {line:?}"))
            .to_string();
        let pid = child.id();
        Served {
            child,
            base_url: format!("{url}/"),
            pid,
        }
    }
}

impl Served {
    /// Stops the server as an operator would (SIGTERM: in-flight responses finish, the access
    /// log is flushed) and waits for it.
    pub fn stop(mut self) {
        // SAFETY: kill(2) on our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Writes WebStone A/4 with another seed: the same names and sizes, other bytes.
pub fn tiny_fileset_seed(dir: &Path, seed: u64) {
    let status = webscope()
        .args(["fileset", "webstone-a", "--scale", "0.25", "--seed"])
        .arg(seed.to_string())
        .arg("--out")
        .arg(dir)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
}

/// How a test's nginx runs.
pub struct NginxConf {
    pub workers: usize,
    /// Pin master and workers to this CPU.
    pub cpu: Option<usize>,
    /// Write an access log (`access.log` in the directory) or none.
    pub access_log: bool,
    /// The workers' user; None: `root` when the test runs as root (so a root under a private
    /// temporary directory stays readable), else nginx's default.
    pub user: Option<&'static str>,
}

/// nginx serving `root` on 127.0.0.1 (a config of its own in `dir`), stopped on drop; None
/// with a note where nginx is not installed (CI installs it and sets WEBSCOPE_REQUIRE_PEERS).
pub struct Nginx {
    child: std::process::Child,
    pub base_url: String,
    pub pid: u32,
    dir: std::path::PathBuf,
}

/// The first of `paths` that exists; None with a note (or a panic under
/// WEBSCOPE_REQUIRE_PEERS) naming the package to install.
fn peer(paths: &[&'static str], package: &str) -> Option<&'static str> {
    let found = paths.iter().copied().find(|p| Path::new(p).exists());
    if found.is_none() {
        assert!(
            std::env::var_os("WEBSCOPE_REQUIRE_PEERS").is_none(),
            "WEBSCOPE_REQUIRE_PEERS is set but {package} is missing: apt-get install {package}"
        );
        eprintln!("skipping: {package} is not installed");
    }
    found
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn pin(cmd: &mut Command, cpu: Option<usize>) {
    use std::os::unix::process::CommandExt;
    let Some(cpu) = cpu else { return };
    // SAFETY: sched_setaffinity on the child itself before exec; its children inherit it.
    unsafe {
        cmd.pre_exec(move || {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

fn wait_for(port: u16, log: &Path, what: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "{what} did not start: {}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

fn stop(child: &mut std::process::Child, signal: i32) {
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, signal) };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while child.try_wait().ok().flatten().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = child.wait();
}

fn am_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

impl Nginx {
    /// `workers` worker processes, pinned to `cpu` if given, no access log.
    pub fn start_with(
        root: &Path,
        dir: &Path,
        cpu: Option<usize>,
        workers: usize,
    ) -> Option<Nginx> {
        Nginx::start_conf(
            root,
            dir,
            &NginxConf {
                workers,
                cpu,
                access_log: false,
                user: None,
            },
        )
    }

    pub fn start_conf(root: &Path, dir: &Path, conf: &NginxConf) -> Option<Nginx> {
        Nginx::start_inner(root, dir, conf, None, false, None)
    }

    /// One worker whose requests beyond `rate` a second (with a burst of `burst`) are
    /// answered 503 (`limit_req`): a server whose capacity is known by construction.
    pub fn start_limited(root: &Path, dir: &Path, rate: u32, burst: u32) -> Option<Nginx> {
        let conf = NginxConf {
            workers: 1,
            cpu: None,
            access_log: false,
            user: None,
        };
        Nginx::start_inner(root, dir, &conf, None, false, Some((rate, burst)))
    }

    /// nginx over TLS with `cert` and `key` (PEM), a shared session cache (and tickets, its
    /// default), one worker, no access log.
    pub fn start_tls(root: &Path, dir: &Path, cert: &Path, key: &Path) -> Option<Nginx> {
        let conf = NginxConf {
            workers: 1,
            cpu: None,
            access_log: false,
            user: None,
        };
        Nginx::start_inner(root, dir, &conf, Some((cert, key)), false, None)
    }

    /// nginx speaking HTTP/2 only: over TLS (ALPN h2) with `tls`'s certificate and key, or
    /// with prior knowledge (h2c) without.
    pub fn start_h2(root: &Path, dir: &Path, tls: Option<(&Path, &Path)>) -> Option<Nginx> {
        let conf = NginxConf {
            workers: 1,
            cpu: None,
            access_log: false,
            user: None,
        };
        Nginx::start_inner(root, dir, &conf, tls, true, None)
    }

    fn start_inner(
        root: &Path,
        dir: &Path,
        conf: &NginxConf,
        tls: Option<(&Path, &Path)>,
        http2: bool,
        limit: Option<(u32, u32)>,
    ) -> Option<Nginx> {
        let nginx = peer(&["/usr/sbin/nginx", "/usr/bin/nginx"], "nginx-light")?;
        // A port free when asked may be taken before nginx binds it (another test's server):
        // then ours exits, and the port that answers is not ours. Taken again on a new port.
        'port: for _ in 0..3 {
            let port = free_port();
            let user = match (conf.user, am_root()) {
                (Some(user), _) => format!("user {user};"),
                (None, true) => "user root;".into(),
                (None, false) => String::new(),
            };
            let log = if conf.access_log {
                format!("access_log {}/access.log;", dir.display())
            } else {
                "access_log off;".into()
            };
            let path = dir.join("nginx.conf");
            std::fs::write(
                &path,
                format!(
                    "daemon off; master_process on; worker_processes {w}; {user}\n\
                     pid {d}/nginx.pid; error_log {d}/error.log;\n\
                     events {{ worker_connections 4096; }}\n\
                     http {{ {log} sendfile on; keepalive_requests 1000000; {zone}\n\
                     server {{ listen 127.0.0.1:{port}{ssl}; root {root}; {certs} {limit} }} }}\n",
                    w = conf.workers,
                    d = dir.display(),
                    zone = limit.map_or(String::new(), |(rate, _)| format!(
                        "limit_req_zone $binary_remote_addr zone=one:1m rate={rate}r/s;"
                    )),
                    limit = limit.map_or(String::new(), |(_, burst)| format!(
                        "limit_req zone=one burst={burst} nodelay;"
                    )),
                    root = root.display(),
                    ssl = match (tls.is_some(), http2) {
                        (true, true) => " ssl http2",
                        (true, false) => " ssl",
                        (false, true) => " http2",
                        (false, false) => "",
                    },
                    certs = match tls {
                        Some((cert, key)) => format!(
                            "ssl_certificate {}; ssl_certificate_key {}; ssl_session_cache shared:SSL:1m;",
                            cert.display(),
                            key.display()
                        ),
                        None => String::new(),
                    },
                ),
            )
            .unwrap();
            let mut cmd = Command::new(nginx);
            cmd.arg("-c").arg(&path).arg("-p").arg(dir);
            cmd.stdout(Stdio::null()).stderr(Stdio::null());
            pin(&mut cmd, conf.cpu);
            let _ = std::fs::remove_file(dir.join("nginx.pid"));
            let mut child = cmd.spawn().unwrap();
            let pid = child.id();
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            let ours = || {
                std::fs::read_to_string(dir.join("nginx.pid"))
                    .is_ok_and(|text| text.trim() == pid.to_string())
            };
            while !ours() {
                // Exited and reaped (not an Nginx, whose drop would signal a pid now free): the
                // port was taken.
                if child.try_wait().ok().flatten().is_some() {
                    continue 'port;
                }
                if std::time::Instant::now() > deadline {
                    stop(&mut child, libc::SIGTERM);
                    panic!(
                        "nginx did not start: {}",
                        std::fs::read_to_string(dir.join("error.log")).unwrap_or_default()
                    );
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            let nginx = Nginx {
                child,
                base_url: format!(
                    "{}://127.0.0.1:{port}/",
                    if tls.is_some() { "https" } else { "http" }
                ),
                pid,
                dir: dir.to_path_buf(),
            };
            wait_for(port, &dir.join("error.log"), "nginx");
            return Some(nginx);
        }
        panic!(
            "nginx did not start on three ports: {}",
            std::fs::read_to_string(dir.join("error.log")).unwrap_or_default()
        );
    }

    /// Lines in the access log so far.
    pub fn access_log_lines(&self) -> usize {
        count_lines(&self.dir.join("access.log"))
    }
}

fn count_lines(path: &Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |t| t.lines().count())
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SIGTERM: nginx's fast shutdown, master and workers.
        stop(&mut self.child, libc::SIGTERM);
    }
}

/// Checks an experiment's "the paper found" panel: on the page with its source and the
/// paper's words, and in report.json with both series, their ratio and a reading.
pub fn assert_paper_panel(dir: &Path, experiment: &str, cite: &str) {
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    assert!(html.contains("The paper found"), "{experiment}: no panel");
    assert!(html.contains(cite), "{experiment}: {cite} not cited");
    assert!(
        html.contains("As published: "),
        "{experiment}: the paper's words are missing"
    );
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("report.json")).unwrap()).unwrap();
    let panel = report[format!("{experiment}_paper")]
        .as_array()
        .unwrap_or_else(|| panic!("no {experiment}_paper in report.json"));
    assert!(!panel.is_empty());
    let measured =
        |c: &serde_json::Value| c["ours"].as_array().unwrap().iter().any(|v| v.is_number());
    // A comparison without a figure of ours (a sweep that never saturated has no saturation
    // point) puts no ratio beside the paper's and its reading says there is nothing to compare;
    // a ratio is given exactly where both figures were measured.
    let says_none = |c: &serde_json::Value| {
        let reading = c["reading"].as_str().unwrap_or("").to_lowercase();
        ["no ", "never", "cannot", "needed", "not "]
            .iter()
            .any(|word| reading.contains(word))
    };
    for c in panel {
        if !measured(c) {
            assert!(
                says_none(c),
                "no figure of ours and no reading saying so: {c}"
            );
        }
        let (ours, paper, ratio) = (
            c["ours"].as_array().unwrap(),
            c["paper"].as_array().unwrap(),
            c["ratio"].as_array().unwrap(),
        );
        for ((o, p), r) in ours.iter().zip(paper).zip(ratio) {
            assert_eq!(
                r.is_number(),
                o.is_number() && p.is_number(),
                "a ratio exactly where both figures exist: {c}"
            );
        }
    }
    for c in panel {
        let n = c["paper"].as_array().unwrap().len();
        assert!(n > 0, "{c}");
        assert_eq!(c["ours"].as_array().unwrap().len(), n, "{c}");
        assert_eq!(c["ratio"].as_array().unwrap().len(), n, "{c}");
        assert!(!c["reading"].as_str().unwrap().is_empty());
    }
}

/// Headless Chromium, if this machine has it (CI installs it and sets WEBSCOPE_REQUIRE_CHROMIUM,
/// so there the browser tests cannot be skipped).
pub fn chromium() -> Option<std::path::PathBuf> {
    let found = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(std::path::PathBuf::from)
        .find(|p| p.exists());
    if found.is_none() {
        assert!(
            std::env::var_os("WEBSCOPE_REQUIRE_CHROMIUM").is_none(),
            "WEBSCOPE_REQUIRE_CHROMIUM is set but Chromium is not installed (apt-get install chromium)"
        );
        eprintln!("note: Chromium is not installed; a browser test did not run");
    }
    found
}

/// A thread that spins on `cpu` until dropped: a noisy neighbour for whatever else runs there.
pub struct Spinner {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Spinner {
    pub fn on(cpu: usize) -> Spinner {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            // SAFETY: pins the calling thread with a set of its own.
            unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(cpu, &mut set);
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
            }
            let mut x = 0u64;
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                x = x.wrapping_add(std::hint::black_box(1));
            }
            std::hint::black_box(x);
        });
        Spinner {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Runs `webscope lab --target TARGET --fileset FILESET --out OUT EXTRA...`, asserts that it
/// succeeded, and returns its report.json.
pub fn lab_on(target: &str, fileset: &Path, out: &Path, extra: &[&str]) -> serde_json::Value {
    let run = webscope()
        .args(["lab", "--target", target, "--fileset"])
        .arg(fileset)
        .arg("--out")
        .arg(out)
        .args(extra)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap()
}
