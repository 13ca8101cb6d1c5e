//! The remote source against the real `prometheus-node-exporter` from Debian's packages,
//! started here on a loopback port: over the same seconds, the figures it gives for this
//! machine agree with the local /proc sources' (CI installs the exporter and sets
//! WEBSCOPE_REQUIRE_NODE_EXPORTER, so there this test cannot be skipped).

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use webscope_monitor::{spawn, Config, Summary};

struct Exporter {
    child: Child,
    url: String,
}

impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn exporter() -> Option<Exporter> {
    let binary = [
        "/usr/bin/prometheus-node-exporter",
        "/usr/local/bin/node_exporter",
    ]
    .into_iter()
    .find(|p| std::path::Path::new(p).exists());
    let Some(binary) = binary else {
        assert!(
            std::env::var_os("WEBSCOPE_REQUIRE_NODE_EXPORTER").is_none(),
            "WEBSCOPE_REQUIRE_NODE_EXPORTER is set but node_exporter is missing: apt-get install prometheus-node-exporter"
        );
        eprintln!("skipping: prometheus-node-exporter is not installed");
        return None;
    };
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(binary)
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let exporter = Exporter {
        child,
        url: format!("http://127.0.0.1:{port}/metrics"),
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "node_exporter did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    Some(exporter)
}

fn mean(s: &Summary, group: &str, row: &str, column: &str) -> f64 {
    s.stat(group, row, column)
        .unwrap_or_else(|| panic!("no {group}/{row}/{column} in {}", s.source))
        .mean
}

#[test]
fn node_exporters_figures_agree_with_the_local_ones() {
    let Some(exporter) = exporter() else {
        return;
    };
    let local = spawn(Config {
        interval: Duration::from_secs(1),
        ..Config::default()
    })
    .unwrap();
    let remote = spawn(Config {
        interval: Duration::from_secs(1),
        node_exporter: Some(exporter.url.clone()),
        ..Config::default()
    })
    .unwrap();
    // One core busy, and loopback connections opened and closed, for four seconds.
    let stop = Instant::now() + Duration::from_millis(4200);
    let spinner = std::thread::spawn(move || {
        let mut x = 0u64;
        while Instant::now() < stop {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        x
    });
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let mut opened = 0;
    while Instant::now() < stop {
        let c = TcpStream::connect(addr).unwrap();
        let (s, _) = listener.accept().unwrap();
        drop(c);
        drop(s);
        opened += 1;
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(spinner.join().unwrap() > 0);
    let local = local.stop().unwrap().summary;
    let remote = remote.stop().unwrap().summary;
    assert_eq!(local.source, "procfs");
    assert_eq!(remote.source, format!("node_exporter {}", exporter.url));
    let (l, r) = (
        mean(&local, "cpu", "all", "busy_pct"),
        mean(&remote, "cpu", "all", "busy_pct"),
    );
    println!("busy: local {l:.1} %, node_exporter {r:.1} %");
    // Both read /proc/stat of this machine, a scrape apart: 10 points cover the offset.
    assert!(
        l > 30.0 && (l - r).abs() < 10.0,
        "busy: local {l:.1} %, node_exporter {r:.1} %"
    );
    let (l, r) = (
        mean(&local, "tcp", "all", "active_opens_per_s"),
        mean(&remote, "tcp", "all", "active_opens_per_s"),
    );
    println!("active opens: local {l:.0}/s, node_exporter {r:.0}/s ({opened} made)");
    assert!(
        l > 50.0 && (l - r).abs() <= 0.25 * l,
        "active opens: local {l:.0}/s, node_exporter {r:.0}/s"
    );
    let (l, r) = (
        local.stat("sockets", "all", "tcp_tw").unwrap().max,
        remote.stat("sockets", "all", "tcp_tw").unwrap().max,
    );
    println!("TIME_WAIT max: local {l:.0}, node_exporter {r:.0}");
    assert!(
        l > 0.0 && (l - r).abs() <= 0.25 * l + 20.0,
        "TIME_WAIT: local {l:.0}, node_exporter {r:.0}"
    );
    assert!(remote
        .notes
        .iter()
        .any(|n| n.message.contains("host's CPU stands in")));
}

#[test]
fn a_dead_or_wrong_exporter_is_one_line_at_start() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = Config {
        interval: Duration::from_secs(1),
        node_exporter: Some(format!("http://127.0.0.1:{port}/metrics")),
        ..Config::default()
    };
    let err = spawn(config).err().expect("a refused scrape").to_string();
    assert!(
        err.contains("cannot scrape node_exporter")
            && err.contains("is prometheus-node-exporter running"),
        "{err}"
    );
    let too_fast = Config {
        node_exporter: Some("http://127.0.0.1:9100/metrics".into()),
        ..Config::default()
    };
    assert!(too_fast
        .check()
        .unwrap_err()
        .to_string()
        .contains("500ms or more"));
    let mixed = Config {
        interval: Duration::from_secs(1),
        node_exporter: Some("http://127.0.0.1:9100/metrics".into()),
        ports: vec![80],
        ..Config::default()
    };
    assert!(mixed
        .check()
        .unwrap_err()
        .to_string()
        .contains("run a second monitor"));
}
