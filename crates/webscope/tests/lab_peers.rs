//! The lab on the servers people run: nginx and Apache httpd from Debian's packages, started
//! by the tests on loopback with configs they write (CI installs them and sets
//! WEBSCOPE_REQUIRE_PEERS, so there these tests cannot be skipped).

mod lab_support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use lab_support::{tiny_fileset, webscope, Apache, Nginx, NginxConf};

/// A temporary directory every user can traverse, with the file set readable by all: the
/// servers' workers run as other users.
fn open_dir() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    tmp
}

fn lab(target: &str, fileset: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    lab_for("1s", target, fileset, out, extra)
}

fn lab_for(
    duration: &str,
    target: &str,
    fileset: &Path,
    out: &Path,
    extra: &[&str],
) -> std::process::Output {
    webscope()
        .args([
            "lab",
            "--clients",
            "1,2",
            "--duration",
            duration,
            "--target",
            target,
        ])
        .arg("--fileset")
        .arg(fileset)
        .arg("--out")
        .arg(out)
        .args(extra)
        .output()
        .unwrap()
}

fn report(out: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap()
}

/// Requests the lab's runs completed, all runs of the clients experiment.
fn requests(out: &Path) -> (u64, u64) {
    let mut total = 0;
    let mut clients = 0;
    for name in ["clients-001", "clients-002"] {
        let run: serde_json::Value = serde_json::from_slice(
            &std::fs::read(out.join("clients").join(name).join("run.json")).unwrap(),
        )
        .unwrap();
        total += run["load"]["requests"].as_u64().unwrap();
        clients += run["load"]["connections"].as_u64().unwrap();
    }
    (total, clients)
}

/// The preflight's sample: two files of each class of the set.
fn preflight_requests(fileset: &Path) -> u64 {
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fileset.join("manifest.json")).unwrap()).unwrap();
    2 * manifest["classes"].as_array().unwrap().len() as u64
}

/// The server's log has a line for every request the lab counted, the preflight's, and at
/// most one per client cut off when each run's time was up.
fn log_matches(lines: usize, out: &Path, fileset: &Path) {
    let (counted, clients) = requests(out);
    let expected = counted + preflight_requests(fileset);
    let lines = lines as u64;
    assert!(
        (expected..=expected + clients).contains(&lines),
        "{lines} access-log lines for {counted} counted requests (+ preflight, + up to {clients} cut off)"
    );
}

#[test]
fn nginx_gives_valid_runs_that_its_access_log_confirms() {
    let tmp = open_dir();
    let set = tmp.path().join("set");
    tiny_fileset(&set);
    let conf = NginxConf {
        workers: 2,
        cpu: None,
        access_log: true,
        user: None,
    };
    let Some(nginx) = Nginx::start_conf(&set, tmp.path(), &conf) else {
        return;
    };
    let out = tmp.path().join("r");
    let run = lab(&nginx.base_url, &set, &out, &[]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let r = report(&out);
    assert!(
        r["validity"]["invalid"].as_array().unwrap().is_empty(),
        "{}",
        r["validity"]
    );
    for p in r["clients"]["runs"].as_array().unwrap() {
        assert_eq!(p["valid"], true, "{p}");
        assert!(p["goodput_per_s"].as_f64().unwrap() > 0.0);
        assert!(p["bound"].is_string(), "a verdict for every valid run: {p}");
    }
    log_matches(nginx.access_log_lines(), &out, &set);
    // Found by its port: the master and both workers.
    let lab: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("lab.json")).unwrap()).unwrap();
    let found = lab["server_processes"].as_str().unwrap();
    assert_eq!(found.matches(" nginx").count(), 3, "{found}");
    assert!(
        found.contains(&nginx.pid.to_string()) && found.contains("listening on port"),
        "{found}"
    );
}

#[test]
fn apache_gives_valid_runs_and_its_children_are_measured() {
    let tmp = open_dir();
    let set = tmp.path().join("set");
    tiny_fileset(&set);
    let Some(apache) = Apache::start(&set, tmp.path()) else {
        return;
    };
    let out = tmp.path().join("r");
    let pid = apache.pid.to_string();
    let run = lab(&apache.base_url, &set, &out, &["--server-pid", &pid]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let r = report(&out);
    for p in r["clients"]["runs"].as_array().unwrap() {
        assert_eq!(p["valid"], true, "{p}");
    }
    log_matches(apache.access_log_lines(), &out, &set);
    let lab: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("lab.json")).unwrap()).unwrap();
    let found = lab["server_processes"].as_str().unwrap();
    assert!(
        found.matches(" apache2").count() >= 2,
        "the parent and its children: {found}"
    );
    assert!(
        found.contains(&format!("--server-pid {pid} and its descendants")),
        "{found}"
    );
    // The children do the work: the server's CPU is theirs, not the idle parent's zero.
    let run: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("clients/clients-002/run.json")).unwrap())
            .unwrap();
    assert!(
        run["server"]["cpu_s"].as_f64().unwrap() > 0.05,
        "{}",
        run["server"]
    );
}

#[test]
fn nginx_that_cannot_read_its_root_is_refused_then_bannered() {
    // nginx's workers as `nobody` cannot enter a directory only root may read: every file is
    // a 403, as in the issue that asked for this.
    let tmp = tempfile::tempdir().unwrap();
    let is_root = unsafe { libc::geteuid() } == 0;
    if !is_root {
        eprintln!("skipping: only root can make a root the workers cannot read");
        return;
    }
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let set = tmp.path().join("set");
    tiny_fileset(&set);
    let conf = NginxConf {
        workers: 1,
        cpu: None,
        access_log: false,
        user: Some("nobody nogroup"),
    };
    let Some(nginx) = Nginx::start_conf(&set, tmp.path(), &conf) else {
        return;
    };
    let out = tmp.path().join("r");
    let run = lab(&nginx.base_url, &set, &out, &[]);
    assert_eq!(run.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("403 Forbidden on") && stderr.contains("cannot read the file set"),
        "{stderr}"
    );
    assert!(!out.exists(), "the preflight writes nothing");
    let run = lab(&nginx.base_url, &set, &out, &["--no-preflight"]);
    assert_eq!(run.status.code(), Some(1), "no valid run is a failure");
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("class=\"banner\""));
    assert!(html.contains(
        "403 Forbidden on 100 % of requests: the server cannot read the file set; check its root and permissions"
    ));
    let r = report(&out);
    assert!(r["clients"]["knee_clients"].is_null());
    for p in r["clients"]["runs"].as_array().unwrap() {
        assert_eq!(p["goodput_per_s"], 0.0, "403s are not throughput: {p}");
    }
}

#[test]
fn the_servers_machine_through_node_exporter_agrees_with_procfs() {
    let tmp = open_dir();
    let set = tmp.path().join("set");
    tiny_fileset(&set);
    let Some(exporter) = lab_support::NodeExporter::start(tmp.path()) else {
        return;
    };
    let server = lab_support::Served::start(&set);
    let out = tmp.path().join("r");
    let pid = server.pid.to_string();
    // node_exporter is scraped once a second: runs of 4 s give it whole intervals inside each
    // run, as the local monitor's 100-ms samples have.
    let run = lab_for(
        "4s",
        &server.base_url,
        &set,
        &out,
        &["--server-pid", &pid, "--server-metrics", &exporter.url],
    );
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains(&format!("seen through node_exporter at {}", exporter.url)));
    assert!(html.contains(&format!(
        "(the server's machine, through node_exporter {})",
        exporter.url
    )));
    // The same machine, seen both ways over the same run: the CPU figures agree.
    for name in ["clients-001", "clients-002"] {
        let record: serde_json::Value = serde_json::from_slice(
            &std::fs::read(out.join("clients").join(name).join("run.json")).unwrap(),
        )
        .unwrap();
        let busy = |os: &serde_json::Value| {
            os["groups"]["cpu"]["rows"]["all"]["busy_pct"]["mean"]
                .as_f64()
                .unwrap()
        };
        let (local, remote) = (busy(&record["os"]), busy(&record["server_os"][0]));
        assert_eq!(
            record["server_os"][0]["source"],
            format!("node_exporter {}", exporter.url)
        );
        assert!(
            (local - remote).abs() < 15.0,
            "{name}: procfs {local:.1} %, node_exporter {remote:.1} %"
        );
    }
    let r = report(&out);
    assert!(r["clients"]["runs"][1]["bound"].is_string());
}

#[test]
fn nginx_killed_mid_sweep_leaves_the_partial_report_naming_the_failed_run() {
    let tmp = open_dir();
    let set = tmp.path().join("set");
    tiny_fileset(&set);
    let conf = NginxConf {
        workers: 1,
        cpu: None,
        access_log: false,
        user: None,
    };
    let Some(nginx) = Nginx::start_conf(&set, tmp.path(), &conf) else {
        return;
    };
    let out = tmp.path().join("r");
    let mut lab = webscope()
        .args([
            "lab",
            "--clients",
            "1,2,5",
            "--duration",
            "2s",
            "--target",
            &nginx.base_url,
        ])
        .arg("--fileset")
        .arg(&set)
        .arg("--out")
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let first = out.join("clients/clients-001/run.json");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !first.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the first run never finished"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    drop(nginx);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while lab.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = lab.kill();
            panic!("the lab did not end after nginx died");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let run = lab.wait_with_output().unwrap();
    assert_eq!(run.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("a run failed (clients: ") && stderr.contains("no response at all"),
        "{stderr}"
    );
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(
        html.contains("A run failed: "),
        "the failed run is named on the page"
    );
    let r = report(&out);
    assert_eq!(
        r["clients"]["runs"][0]["valid"], true,
        "what was measured before is kept"
    );
}
