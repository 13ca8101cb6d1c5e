//! The peers the lab's tests measure beside webscope, besides nginx: Apache httpd and
//! Prometheus node_exporter, each on a loopback port of its own.

use std::path::Path;
use std::process::{Command, Stdio};

use super::{am_root, count_lines, free_port, peer, stop};

/// Apache httpd (event MPM) serving `root` on 127.0.0.1 with a config of its own in `dir`,
/// in the foreground, an access log line per request; stopped on drop. None with a note
/// where apache2 is not installed.
pub struct Apache {
    child: std::process::Child,
    pub base_url: String,
    pub pid: u32,
    dir: std::path::PathBuf,
}

impl Apache {
    pub fn start(root: &Path, dir: &Path) -> Option<Apache> {
        Apache::start_with(root, dir, "")
    }

    /// With `extra` lines at the end of the server config (`{modules}` in them: the modules'
    /// directory).
    pub fn start_with(root: &Path, dir: &Path, extra: &str) -> Option<Apache> {
        let apache = peer(&["/usr/sbin/apache2"], "apache2")?;
        // A port free when asked may be taken by another test's server before Apache binds
        // it: Apache then exits, and the port that answers is not its. Taken again.
        for _ in 0..3 {
            let port = free_port();
            let path = dir.join("httpd.conf");
            std::fs::write(&path, httpd_conf(root, dir, port, extra)).unwrap();
            let mut cmd = Command::new(apache);
            cmd.arg("-f").arg(&path).arg("-DFOREGROUND");
            cmd.stdout(Stdio::null()).stderr(Stdio::null());
            let mut child = cmd.spawn().unwrap();
            if !listening(&mut child, port, &dir.join("error.log"), "apache2") {
                continue;
            }
            let pid = child.id();
            return Some(Apache {
                child,
                base_url: format!("http://127.0.0.1:{port}/"),
                pid,
                dir: dir.to_path_buf(),
            });
        }
        panic!(
            "apache2 exited on three ports in a row: {}",
            dir.join("error.log").display()
        );
    }

    /// Lines in the access log so far.
    pub fn access_log_lines(&self) -> usize {
        count_lines(&self.dir.join("access.log"))
    }
}

impl Drop for Apache {
    fn drop(&mut self) {
        // SIGWINCH is Apache's graceful stop; SIGTERM stops it at once, children included.
        stop(&mut self.child, libc::SIGTERM);
    }
}

/// Prometheus node_exporter on a loopback port, stopped on drop; None with a note where it is
/// not installed (CI installs it and sets WEBSCOPE_REQUIRE_NODE_EXPORTER).
pub struct NodeExporter {
    child: std::process::Child,
    pub url: String,
}

impl NodeExporter {
    pub fn start(dir: &Path) -> Option<NodeExporter> {
        let binary = ["/usr/bin/prometheus-node-exporter"]
            .into_iter()
            .find(|p| Path::new(p).exists());
        let Some(binary) = binary else {
            assert!(
                std::env::var_os("WEBSCOPE_REQUIRE_NODE_EXPORTER").is_none(),
                "WEBSCOPE_REQUIRE_NODE_EXPORTER is set but it is missing: apt-get install prometheus-node-exporter"
            );
            eprintln!("skipping: prometheus-node-exporter is not installed");
            return None;
        };
        let log = dir.join("node_exporter.log");
        // As Apache's: a port taken before node_exporter bound it is tried again.
        for _ in 0..3 {
            let port = free_port();
            let mut child = Command::new(binary)
                .arg(format!("--web.listen-address=127.0.0.1:{port}"))
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(&log).unwrap())
                .spawn()
                .unwrap();
            if listening(&mut child, port, &log, "node_exporter") {
                return Some(NodeExporter {
                    child,
                    url: format!("http://127.0.0.1:{port}/metrics"),
                });
            }
        }
        panic!(
            "node_exporter exited on three ports in a row: {}",
            log.display()
        );
    }
}

impl Drop for NodeExporter {
    fn drop(&mut self) {
        stop(&mut self.child, libc::SIGTERM);
    }
}

/// Apache's config: `extra` lines at the end (`{modules}` in them: the modules' directory).
fn httpd_conf(root: &Path, dir: &Path, port: u16, extra: &str) -> String {
    let modules = "/usr/lib/apache2/modules";
    // Apache refuses to run its children as root: they run as www-data, which must be able
    // to read the root (the tests make it world-readable).
    let user = if am_root() {
        "User www-data\nGroup www-data\n"
    } else {
        ""
    };
    format!(
        "ServerRoot {d}\nServerName 127.0.0.1\nListen 127.0.0.1:{port}\nPidFile {d}/httpd.pid\n\
         LoadModule mpm_event_module {modules}/mod_mpm_event.so\n\
         LoadModule authz_core_module {modules}/mod_authz_core.so\n\
         LoadModule mime_module {modules}/mod_mime.so\n\
         LoadModule dir_module {modules}/mod_dir.so\n\
         {user}ErrorLog {d}/error.log\nLogFormat \"%h %l %u %t \\\"%r\\\" %>s %b\" common\n\
         CustomLog {d}/access.log common\nTypesConfig /etc/mime.types\n\
         KeepAlive On\nMaxKeepAliveRequests 0\nDocumentRoot {root}\n\
         <Directory {root}>\n  Require all granted\n</Directory>\n{extra}",
        d = dir.display(),
        root = root.display(),
        extra = extra.replace("{modules}", modules),
    )
}

/// Waits until `child` (or one of its descendants) holds the listening socket of `port`:
/// true; false when it exits first (another process took the port before it bound it). A
/// connect alone would be answered by that other process.
fn listening(child: &mut std::process::Child, port: u16, log: &Path, what: &str) -> bool {
    use webscope_monitor::procs;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        if child.try_wait().ok().flatten().is_some() {
            return false;
        }
        let ours: Vec<u32> = procs::descendants(child.id())
            .map(|d| d.iter().map(|p| p.pid).collect())
            .unwrap_or_default();
        if procs::listeners(port).is_ok_and(|held| held.iter().any(|p| ours.contains(&p.pid))) {
            return true;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what} did not start: {}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
