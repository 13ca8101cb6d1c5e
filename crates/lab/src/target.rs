//! The server the lab measures: by default webscope's own, started as a child process on
//! 127.0.0.1 (pinned to a CPU when asked), with its admin endpoint; or any HTTP/1.1 server
//! given by URL. The server's processes are found, not guessed: `--server-pid` and all its
//! descendants (nginx's master and workers, Apache's children, a server under a shell), or,
//! for a server on this machine, every process holding the listening socket of the URL's port.

use std::collections::HashMap;
use std::io::{BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context};
use webscope_sys::{Line, LineReader, MAX_LINE};

use webscope_record::{PhaseFigures, ServerFigures, ServiceFigures};

/// A server under test.
pub struct Target {
    child: Option<Child>,
    /// Where requests go, e.g. `http://127.0.0.1:41234/`.
    pub base_url: String,
    /// The admin endpoint (embedded server only).
    pub admin: Option<SocketAddr>,
    /// The server's root processes (their descendants are measured with them); empty when
    /// unknown.
    pub pids: Vec<u32>,
    /// How the processes were found, for the report.
    pub found_by: String,
    /// The server hosts' node_exporters (`--server-metrics`), when they are other machines.
    pub server_metrics: Vec<String>,
    /// How an https target is spoken to (`--cacert`, `--insecure`).
    pub tls: webscope_load::TlsSettings,
    /// Runs speak HTTP/2 (`lab --http2`): each client a connection with one stream.
    pub http2: bool,
    /// Runs speak HTTP/3 over QUIC (the protocols experiment's HTTP/3 row).
    pub http3: bool,
}

/// The embedded server over TLS (`lab --tls`, `--http2`, the protocols experiment): the
/// lab's own certificate, and whether runs speak HTTP/2 to it.
#[derive(Debug, Clone)]
pub struct Secure {
    /// The lab's own certificate (PEM), which the runs trust.
    pub cert: PathBuf,
    /// Its private key (PEM), for the server.
    pub key: PathBuf,
    /// Runs speak HTTP/2 to it.
    pub http2: bool,
    /// The server serves HTTP/3 too (`serve --http3`), and runs speak it.
    pub http3: bool,
}

impl Secure {
    /// A self-signed certificate for 127.0.0.1 and localhost, made under `work` (each lab
    /// makes its own: a key pair takes a millisecond).
    pub fn make(work: &Path, http2: bool) -> anyhow::Result<Secure> {
        let dir = work.join("tls");
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let made = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into(), "localhost".into()])
            .context("cannot make the lab's TLS certificate")?;
        let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
        webscope_sys::write_file(&cert, made.cert.pem().as_bytes())
            .with_context(|| format!("cannot write {}", cert.display()))?;
        webscope_sys::write_file(&key, made.key_pair.serialize_pem().as_bytes())
            .with_context(|| format!("cannot write {}", key.display()))?;
        Ok(Secure {
            cert,
            key,
            http2,
            http3: false,
        })
    }
}

/// Counters read from the server before or after a run.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    metrics: HashMap<String, f64>,
    cpu_s: Option<f64>,
}

/// How to find the processes of a server given by URL.
pub enum Find {
    /// `--server-pid`: this process and its descendants.
    Pid(u32),
    /// By the listening socket of the URL's port, if the server is on this machine.
    Port,
    /// `--no-server-pid`: measure without.
    None,
}

impl Target {
    /// Starts `webscope serve` on `root`, on 127.0.0.1 with an admin endpoint, pinned to
    /// `cpu` if given; `extra` are more `serve` flags (techniques, services, policy).
    pub fn embedded(
        exe: &Path,
        root: &Path,
        workers: usize,
        cpu: Option<usize>,
        extra: &[String],
    ) -> anyhow::Result<Target> {
        Target::embedded_over(exe, root, workers, cpu, extra, None)
    }

    /// [`Target::embedded`], over TLS (and HTTP/2) when `secure` says.
    pub fn embedded_over(
        exe: &Path,
        root: &Path,
        workers: usize,
        cpu: Option<usize>,
        extra: &[String],
        secure: Option<&Secure>,
    ) -> anyhow::Result<Target> {
        Target::embedded_at("127.0.0.1", exe, root, workers, cpu, extra, secure)
    }

    /// [`Target::embedded_over`], listening (and its admin endpoint) on `ip` (the loss
    /// experiment's server, in a namespace of its own, on its link's address).
    pub fn embedded_at(
        ip: &str,
        exe: &Path,
        root: &Path,
        workers: usize,
        cpu: Option<usize>,
        extra: &[String],
        secure: Option<&Secure>,
    ) -> anyhow::Result<Target> {
        let mut cmd = Command::new(exe);
        cmd.arg("serve");
        if let Some(secure) = secure {
            cmd.arg("--tls-cert")
                .arg(&secure.cert)
                .arg("--tls-key")
                .arg(&secure.key);
            if secure.http3 {
                cmd.arg("--http3");
            }
        }
        if !extra.iter().any(|a| a == "--access-log") {
            // The access log is written (to /dev/null): its cost is part of what is measured,
            // without filling the disk over a long sweep.
            cmd.args(["--access-log", "/dev/null"]);
        }
        cmd.arg("--root")
            .arg(root)
            .arg("--listen")
            .arg(format!("{ip}:0"))
            .arg("--admin")
            .arg(format!("{ip}:0"))
            .args(["--workers", &workers.to_string()])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        use std::os::unix::process::CommandExt;
        // SAFETY: setpgid and sched_setaffinity only change the child itself before exec.
        unsafe {
            cmd.pre_exec(move || {
                // Its own process group: Ctrl-C reaches the lab, which stops the server after
                // the run in progress, instead of killing the server under it.
                if libc::setpgid(0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                match cpu {
                    // The one pinning rule (`load --cpu`'s), allocation-free after fork.
                    Some(cpu) => webscope_sys::cpus::set_affinity(&[cpu]),
                    None => Ok(()),
                }
            });
        }
        let mut child = cmd.spawn().context("cannot start webscope serve")?;
        let stdout = child
            .stdout
            .take()
            .context("no stdout from webscope serve")?;
        let mut lines = LineReader::new(BufReader::new(stdout), MAX_LINE);
        // The server may say more than its addresses (a set's URL map, say): a few other
        // lines before each address are passed over.
        let mut address = |prefix: &str| -> anyhow::Result<SocketAddr> {
            let mut passed = Vec::new();
            let rest = loop {
                let line = match lines.next_line()? {
                    Some(Line::Text(bytes)) => String::from_utf8_lossy(bytes).into_owned(),
                    Some(Line::TooLong { .. }) => bail!("webscope serve wrote a line over 64 KiB"),
                    None => bail!("webscope serve exited before saying where it listens"),
                };
                if let Some(rest) = line.split(prefix).nth(1) {
                    break rest.to_string();
                }
                passed.push(line);
                if passed.len() > 8 {
                    bail!(
                        "unexpected lines from webscope serve: {}",
                        passed.join(" | ")
                    );
                }
            };
            let addr = rest.split_whitespace().next().unwrap_or("");
            let addr = addr.trim_start_matches("s://").trim_start_matches("://");
            Ok(addr.parse()?)
        };
        // A server that does not say where it listens is stopped here: nothing else would.
        let addrs =
            address("listening on http").and_then(|a| Ok((a, address("admin on http://")?)));
        let (addr, admin) = match addrs {
            Ok(both) => both,
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(e);
            }
        };
        let pid = child.id();
        Ok(Target {
            child: Some(child),
            base_url: match secure {
                Some(_) => format!("https://{addr}/"),
                None => format!("http://{addr}/"),
            },
            admin: Some(admin),
            pids: vec![pid],
            found_by: "the embedded server".into(),
            server_metrics: Vec::new(),
            tls: webscope_load::TlsSettings {
                cacert: secure.map(|s| s.cert.clone()),
                ..Default::default()
            },
            http2: secure.is_some_and(|s| s.http2),
            http3: secure.is_some_and(|s| s.http3),
        })
    }

    /// Another server, by URL (its base: files are requested under it); its processes found
    /// as `find` says. Errors say how to fix the flags.
    pub fn external(url: &str, find: Find, server_metrics: Vec<String>) -> anyhow::Result<Target> {
        let base_url = if url.ends_with('/') {
            url.to_string()
        } else {
            format!("{url}/")
        };
        let mut target = Target {
            child: None,
            base_url,
            admin: None,
            pids: Vec::new(),
            found_by: String::new(),
            server_metrics,
            tls: Default::default(),
            http2: false,
            http3: false,
        };
        match find {
            Find::Pid(pid) => {
                webscope_monitor::procs::descendants(pid).map_err(|err| {
                    anyhow::anyhow!("--server-pid {pid}: no such process ({err}); give the server's PID (e.g. $(cat /run/nginx.pid)) or leave it out to find the server by its port")
                })?;
                target.pids = vec![pid];
                target.found_by = format!("--server-pid {pid} and its descendants");
            }
            Find::None => target.found_by = "not measured (--no-server-pid)".into(),
            Find::Port if !target.is_local() => {
                target.found_by = if !target.server_metrics.is_empty() {
                    "a remote host: its processes cannot be seen; its host's figures come from node_exporter".into()
                } else {
                    "a remote host: its processes cannot be seen (give --server-metrics URL of its node_exporter)".into()
                };
            }
            Find::Port => {
                let port = target.port().context("the target URL has no port")?;
                match webscope_monitor::procs::listeners(port) {
                    Ok(found) if !found.is_empty() => {
                        // Roots only: a child of another listener is measured as its descendant.
                        target.pids = webscope_monitor::procs::roots(&found);
                        target.found_by = format!("the processes listening on port {port}");
                    }
                    Ok(_) => {
                        target.found_by =
                            format!("not found: no process listens on port {port} here")
                    }
                    Err(why) => target.found_by = format!("not found: {why}"),
                }
            }
        }
        Ok(target)
    }

    /// Whether the URL's host is this machine (a loopback address, or one of its own: an
    /// address a socket can bind to is local).
    pub fn is_local(&self) -> bool {
        let Some(rest) = self.base_url.split("://").nth(1) else {
            return false;
        };
        let authority = rest.split('/').next().unwrap_or("");
        let host = match authority.rsplit_once(':') {
            Some((h, p)) if p.parse::<u16>().is_ok() => h,
            _ => authority,
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        use std::net::ToSocketAddrs;
        let Ok(addrs) = (host, 0u16).to_socket_addrs() else {
            return false;
        };
        addrs
            .into_iter()
            .any(|a| a.ip().is_loopback() || std::net::UdpSocket::bind((a.ip(), 0)).is_ok())
    }

    /// The server's processes now: the roots and all their descendants.
    pub fn processes(&self) -> Vec<webscope_monitor::procs::ProcessInfo> {
        if self.pids.is_empty() {
            return Vec::new();
        }
        webscope_monitor::procs::tree(&self.pids)
    }

    /// CPUs the processes may run on: the union of their affinity masks.
    pub fn server_cpus(&self, processes: &[webscope_monitor::procs::ProcessInfo]) -> Option<f64> {
        let mut union: Option<libc::cpu_set_t> = None;
        for p in processes {
            // SAFETY: a zeroed cpu_set_t filled by sched_getaffinity for its own size.
            unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                if libc::sched_getaffinity(
                    p.pid as i32,
                    std::mem::size_of::<libc::cpu_set_t>(),
                    &mut set,
                ) != 0
                {
                    continue;
                }
                let all = union.get_or_insert_with(|| std::mem::zeroed());
                for cpu in 0..libc::CPU_SETSIZE as usize {
                    if libc::CPU_ISSET(cpu, &set) {
                        libc::CPU_SET(cpu, all);
                    }
                }
            }
        }
        // SAFETY: counting the bits of an initialised set.
        union.map(|set| unsafe { libc::CPU_COUNT(&set) } as f64)
    }

    /// The server's port, from its base URL.
    pub fn port(&self) -> Option<u16> {
        let (rest, default) = match self.base_url.strip_prefix("https://") {
            Some(rest) => (rest, 443),
            None => (self.base_url.strip_prefix("http://")?, 80),
        };
        let authority = rest.split('/').next()?;
        match authority.rsplit_once(':') {
            Some((_, port)) if !authority.ends_with(']') => port.parse().ok(),
            _ => Some(default),
        }
    }

    /// Reads the server's counters (admin endpoint and /proc), whatever is available.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            metrics: self.admin.and_then(|a| scrape(a).ok()).unwrap_or_default(),
            cpu_s: if self.pids.is_empty() {
                None
            } else {
                webscope_monitor::procs::tree_cpu_s(&self.pids)
            },
        }
    }

    /// Kills the embedded server at once: for a server whose run is over and whose
    /// draining (service jobs still running) would only cost time.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stops the embedded server (SIGTERM, then SIGKILL after 10 s).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            for _ in 0..1000 {
                if matches!(child.try_wait(), Ok(Some(_))) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        self.stop();
    }
}

/// GET /metrics from the admin endpoint, as `name{labels}` → value.
fn scrape(admin: SocketAddr) -> anyhow::Result<HashMap<String, f64>> {
    let mut stream = TcpStream::connect_timeout(&admin, Duration::from_secs(2))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.write_all(b"GET /metrics HTTP/1.1\r\nHost: lab\r\nConnection: close\r\n\r\n")?;
    let mut text = String::new();
    stream.read_to_string(&mut text)?;
    let Some((_, body)) = text.split_once("\r\n\r\n") else {
        bail!("malformed response from the admin endpoint");
    };
    Ok(body
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.rsplit_once(' '))
        .filter_map(|(k, v)| v.parse().ok().map(|v| (k.to_string(), v)))
        .collect())
}

impl Snapshot {
    fn get(&self, key: &str) -> f64 {
        self.metrics.get(key).copied().unwrap_or(0.0)
    }

    fn sum_prefix(&self, prefix: &str) -> f64 {
        self.metrics
            .iter()
            .filter(|(k, _)| k.starts_with(prefix))
            .map(|(_, v)| v)
            .sum()
    }

    /// The server's figures over a run: this snapshot (after) minus `before`.
    pub fn since(&self, before: &Snapshot, duration_s: f64) -> Option<ServerFigures> {
        if self.metrics.is_empty() && self.cpu_s.is_none() {
            return None;
        }
        let delta = |key: &str| self.get(key) - before.get(key);
        let requests = self.sum_prefix("webscope_requests_total{")
            - before.sum_prefix("webscope_requests_total{");
        let (mut sum, mut count) = (0.0, 0.0);
        for class in 1..=5 {
            let labels = format!("{{status_class=\"{class}xx\"}}");
            sum += delta(&format!("webscope_request_duration_seconds_sum{labels}"));
            count += delta(&format!("webscope_request_duration_seconds_count{labels}"));
        }
        let phases = webscope_server::CLASSES
            .iter()
            .map(|class| {
                let mean = |phase: &str| {
                    let labels = format!("{{phase=\"{phase}\",size_class=\"{class}\"}}");
                    let n = delta(&format!("webscope_request_phase_seconds_count{labels}"));
                    let s = delta(&format!("webscope_request_phase_seconds_sum{labels}"));
                    (n, if n > 0.0 { s / n * 1e6 } else { 0.0 })
                };
                let (n, parse_us) = mean("parse");
                PhaseFigures {
                    class: class.to_string(),
                    requests: n,
                    parse_us,
                    process_us: mean("process").1,
                    log_us: mean("log").1,
                }
            })
            .collect();
        let cpu_s = match (self.cpu_s, before.cpu_s) {
            (Some(a), Some(b)) => a - b,
            _ => 0.0,
        };
        let services = webscope_server::services::SERVICES
            .iter()
            .map(|name| {
                let labels = format!("{{service=\"{name}\"}}");
                let mean_ms = |metric: &str| {
                    let n = delta(&format!("{metric}_count{labels}"));
                    let s = delta(&format!("{metric}_sum{labels}"));
                    if n > 0.0 {
                        s / n * 1e3
                    } else {
                        0.0
                    }
                };
                ServiceFigures {
                    service: name.to_string(),
                    completed: delta(&format!("webscope_service_requests_total{labels}")),
                    refused: delta(&format!("webscope_service_refused_total{labels}")),
                    cpu_s: delta(&format!("webscope_service_cpu_seconds_total{labels}")),
                    wait_ms: mean_ms("webscope_service_wait_seconds"),
                    running_ms: mean_ms("webscope_service_running_seconds"),
                    slices: {
                        let done = delta(&format!("webscope_service_requests_total{labels}"));
                        let slices = delta(&format!("webscope_service_slices_total{labels}"));
                        if done > 0.0 {
                            slices / done
                        } else {
                            0.0
                        }
                    },
                }
            })
            .filter(|s| s.completed + s.refused > 0.0)
            .collect();
        Some(ServerFigures {
            requests,
            response_us: if count > 0.0 { sum / count * 1e6 } else { 0.0 },
            phases_us: phases,
            cpu_s,
            busy_cores: if duration_s > 0.0 {
                cpu_s / duration_s
            } else {
                0.0
            },
            services,
        })
    }
}
