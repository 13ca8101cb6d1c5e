//! Shared by the `lab_*` tests: the binary, and a tiny file set to run labs on.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Stdio};

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
        .args(["--access-log", "/dev/null"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
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
        let addr = line
            .split("listening on http://")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("webscope serve said {line:?}"))
            .to_string();
        let pid = child.id();
        Served {
            child,
            base_url: format!("http://{addr}/"),
            pid,
        }
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

/// nginx serving `root` on 127.0.0.1 (a config of its own in
/// `dir`), stopped on drop; None with a note where nginx is not installed (CI installs it and
/// sets WEBSCOPE_REQUIRE_PEERS).
pub struct Nginx {
    child: std::process::Child,
    pub base_url: String,
}

impl Nginx {
    /// `workers` worker processes, pinned to `cpu` if given.
    pub fn start_with(
        root: &Path,
        dir: &Path,
        cpu: Option<usize>,
        workers: usize,
    ) -> Option<Nginx> {
        use std::os::unix::process::CommandExt;
        let nginx = ["/usr/sbin/nginx", "/usr/bin/nginx"]
            .into_iter()
            .find(|p| Path::new(p).exists());
        let Some(nginx) = nginx else {
            assert!(
                std::env::var_os("WEBSCOPE_REQUIRE_PEERS").is_none(),
                "WEBSCOPE_REQUIRE_PEERS is set but nginx is missing: apt-get install nginx-light"
            );
            eprintln!("skipping: nginx is not installed (apt-get install nginx-light)");
            return None;
        };
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        // As root, workers would switch to `nobody`; `user root` keeps them able to read a
        // root under a private temporary directory.
        let user = if unsafe { libc::geteuid() } == 0 {
            "user root;"
        } else {
            ""
        };
        let conf = dir.join("nginx.conf");
        std::fs::write(
            &conf,
            format!(
                "daemon off; master_process on; worker_processes {workers}; {user}\n\
                 pid {d}/nginx.pid; error_log {d}/error.log;\n\
                 events {{ worker_connections 1024; }}\n\
                 http {{ access_log off; sendfile on; keepalive_requests 1000000;\n\
                 server {{ listen 127.0.0.1:{port}; root {root}; }} }}\n",
                d = dir.display(),
                root = root.display()
            ),
        )
        .unwrap();
        let mut cmd = Command::new(nginx);
        cmd.arg("-c").arg(&conf).arg("-p").arg(dir);
        cmd.stdout(Stdio::null()).stderr(Stdio::null());
        // SAFETY: sched_setaffinity on the child itself before exec; nginx's workers inherit it.
        if let Some(cpu) = cpu {
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
        let child = cmd.spawn().unwrap();
        let nginx = Nginx {
            child,
            base_url: format!("http://127.0.0.1:{port}/"),
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "nginx did not start: {}",
                std::fs::read_to_string(dir.join("error.log")).unwrap_or_default()
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        Some(nginx)
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SIGTERM: nginx's fast shutdown, master and workers.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while self.child.try_wait().ok().flatten().is_none() {
            if std::time::Instant::now() > deadline {
                let _ = self.child.kill();
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let _ = self.child.wait();
    }
}
