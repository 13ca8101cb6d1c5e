//! The lab with the monitor's kernel module (#49): each run of the clients sweep gets its
//! connections' accept-queue wait, and the kernel times every connection the generator
//! opened, one wait each, and one lifetime each (known truth: the generator's own count of
//! connects, a connection per request). Where the
//! module is not built (the `kernel` feature) or cannot load (not root, no BTF), the lab runs
//! as before and the page says once why the column is absent; CI runs as root with the
//! feature and sets WEBSCOPE_REQUIRE_KERNEL, so there the figures must be there. A `--target`
//! nginx gets them too, its accepts seen at accept4()'s return.

mod lab_support;

use std::path::Path;

use lab_support::{tiny_fileset, webscope, Nginx, NginxConf};

const NOTE: &str = "No accept-queue wait in these runs";
const COLUMN: &str = "accept queue p50/p99 ms";
const LIFETIME: &str = "lifetime p50/p99 ms";

fn lab(out: &Path, fileset: &Path, extra: &[&str]) -> String {
    let run = webscope()
        .args(["lab", "--quiet", "--duration", "1s", "--out"])
        .arg(out)
        .arg("--fileset")
        .arg(fileset)
        .args(extra)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    std::fs::read_to_string(out.join("index.html")).unwrap()
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn every_connection_of_a_run_is_timed_in_the_accept_queue_or_the_page_says_once_why_not() {
    let tmp = tempfile::tempdir().unwrap();
    let fileset = tmp.path().join("set");
    tiny_fileset(&fileset);
    let out = tmp.path().join("report");
    let html = lab(&out, &fileset, &["--clients", "1,3"]);
    let run1 = json(&out.join("clients/clients-001/run.json"));
    if run1["os"]["kernel"].is_null() {
        // Not built, or it could not load here: the lab ran as before, and says why, once.
        let why = if cfg!(feature = "kernel") {
            run1["os"]["kernel_error"]
                .as_str()
                .unwrap_or("")
                .to_string()
        } else {
            run1["env"]["no_kernel"].as_str().unwrap_or("").to_string()
        };
        assert!(
            std::env::var_os("WEBSCOPE_REQUIRE_KERNEL").is_none(),
            "WEBSCOPE_REQUIRE_KERNEL is set but the lab's runs have no kernel figures: {why}"
        );
        assert!(!why.is_empty(), "no reason recorded: {run1}");
        if !cfg!(feature = "kernel") {
            assert!(why.contains("--features kernel"), "{why}");
        }
        assert_eq!(html.matches(NOTE).count(), 1, "the note, once");
        assert!(!html.contains(COLUMN) && !html.contains(LIFETIME));
        eprintln!("skipping the figures' check: {why}");
        return;
    }
    assert!(html.contains(COLUMN), "no accept-queue column");
    assert!(!html.contains(NOTE));
    assert!(
        html.contains("A request&#39;s time: listen queue")
            || html.contains("A request's time: listen queue"),
        "no time split"
    );
    let report = json(&out.join("report.json"));
    let runs = report["clients"]["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for (run, clients) in [("clients-001", 1u64), ("clients-003", 3)] {
        let record = json(&out.join("clients").join(run).join("run.json"));
        let connects = record["load"]["connects"].as_u64().unwrap();
        let port = &record["os"]["kernel"]["ports"][0];
        let timed = port["accept_wait"]["count"].as_u64().unwrap();
        // One wait per connection the generator opened (a connection per request): at most
        // one per client still in the queue when the run stopped may go untimed.
        assert!(
            timed <= connects && timed + clients >= connects && connects > 10,
            "{run}: {timed} waits timed for {connects} connects"
        );
        let row = runs
            .iter()
            .find(|r| r["clients"].as_f64() == Some(clients as f64))
            .unwrap();
        let (p50, p99) = (
            row["accept_wait_p50_ms"].as_f64().unwrap(),
            row["accept_wait_p99_ms"].as_f64().unwrap(),
        );
        assert!(p50 > 0.0 && p99 >= p50, "{run}: {row}");
        // N connections, N lifetimes: at most one per client may still be open when the
        // monitor stops.
        let lived = port["lifetime"]["count"].as_u64().unwrap();
        assert!(
            lived <= connects && lived + clients >= connects,
            "{run}: {lived} lifetimes for {connects} connects"
        );
        assert_eq!(row["lifetimes"].as_u64(), Some(lived), "{row}");
        // Each closed either from the server's side first, into TIME_WAIT, or from the
        // client's, through LAST_ACK; at most one per client was reset at the run's end.
        let entered = row["time_wait_entered"].as_u64().unwrap();
        let last_ack = port["transitions"]["last_ack"].as_u64().unwrap();
        assert!(
            entered > 0 && entered + last_ack <= lived && entered + last_ack + clients >= lived,
            "{run}: {entered} into TIME_WAIT and {last_ack} through LAST_ACK of {lived} closed"
        );
        let (p50, p99) = (
            row["lifetime_p50_ms"].as_f64().unwrap(),
            row["lifetime_p99_ms"].as_f64().unwrap(),
        );
        assert!(p50 > 0.0 && p99 >= p50, "{run}: {row}");
        // From the SYN: the same lives and the handshake before them (of those whose
        // SYN-ACK went once: all of them on loopback).
        let syn = row["lifetime_from_syn_p50_ms"].as_f64().unwrap();
        assert!(syn >= p50 * 0.96, "{run}: {row}");
        // How the TIME_WAITs ended, as the monitor counted them, and the segments sent again.
        for (key, figure) in [
            ("time_wait_expired", "time_wait_expired"),
            ("time_wait_cut", "time_wait_cut"),
            ("time_wait_reset", "time_wait_reset"),
            ("retrans_segs", "retrans_segs"),
        ] {
            assert_eq!(row[key], port[figure], "{run}: {key}: {row}");
        }
    }
    assert!(html.contains(LIFETIME), "no lifetime column");
    assert!(
        html.contains("from the SYN p50/p99 ms") && html.contains("time in TIME_WAIT p50/p99 s"),
        "no kernel table of the connections"
    );
    // Each run's interval log of the kernel's histograms is in its run directory.
    assert!(out.join("clients/clients-001/monitor/kernel.hlog").exists());
}

#[test]
fn a_target_nginx_gets_its_queue_wait_and_lifetimes_seen_at_accept() {
    let tmp = tempfile::tempdir().unwrap();
    // nginx's workers (root's, as the test runs as root) read the fileset under it.
    std::fs::set_permissions(
        tmp.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let fileset = tmp.path().join("set");
    tiny_fileset(&fileset);
    let conf = NginxConf {
        workers: 1,
        cpu: None,
        access_log: false,
        user: None,
    };
    let Some(nginx) = Nginx::start_conf(&fileset, tmp.path(), &conf) else {
        return;
    };
    let out = tmp.path().join("report");
    lab(
        &out,
        &fileset,
        &["--clients", "2", "--target", &nginx.base_url],
    );
    let run = json(&out.join("clients/clients-002/run.json"));
    if run["os"]["kernel"].is_null() {
        assert!(
            std::env::var_os("WEBSCOPE_REQUIRE_KERNEL").is_none(),
            "WEBSCOPE_REQUIRE_KERNEL is set but the run against nginx has no kernel figures: {}",
            run["os"]["kernel_error"]
        );
        eprintln!(
            "skipping: no kernel figures ({})",
            run["os"]["kernel_error"]
        );
        return;
    }
    let connects = run["load"]["connects"].as_u64().unwrap();
    let port = &run["os"]["kernel"]["ports"][0];
    let timed = port["accept_wait"]["count"].as_u64().unwrap();
    // nginx accepts by accept4(): every wait is seen at its return, none at a first read.
    assert_eq!(port["accepted_syscall"].as_u64(), Some(timed), "{port}");
    assert_eq!(port["accepted_read"].as_u64(), Some(0), "{port}");
    assert!(
        timed <= connects && timed + 2 >= connects && connects > 10,
        "{timed} waits timed for {connects} connects"
    );
    let lived = port["lifetime"]["count"].as_u64().unwrap();
    assert!(
        lived <= connects && lived + 2 >= connects,
        "{lived} lifetimes for {connects} connects"
    );
}

#[test]
fn no_kernel_leaves_the_column_out_and_says_so_once() {
    let tmp = tempfile::tempdir().unwrap();
    let fileset = tmp.path().join("set");
    tiny_fileset(&fileset);
    let out = tmp.path().join("report");
    let html = lab(&out, &fileset, &["--clients", "1", "--no-kernel"]);
    assert!(!html.contains(COLUMN) && !html.contains(LIFETIME));
    assert_eq!(html.matches(NOTE).count(), 1, "the note, once");
    assert!(html.contains("the lab ran with --no-kernel"));
    let run = json(&out.join("clients/clients-001/run.json"));
    assert!(run["os"]["kernel"].is_null(), "{}", run["os"]["kernel"]);
    assert_eq!(run["env"]["no_kernel"], "the lab ran with --no-kernel");
}
