//! `webscope monitor` from the command line: the files it writes, bad input (one line,
//! exit 1, nothing written), Ctrl-C keeping what was sampled, and `--profile` with perf
//! missing (one line, the rest runs) or present (a breakdown that adds up), and a node_exporter
//! at the default interval. Sockets stay on
//! 127.0.0.1; every process started here is stopped.

mod lab_support;

use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn webscope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_webscope"))
        .args(args)
        .output()
        .expect("run webscope")
}

fn summary(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("monitor.json")).expect("monitor.json")).unwrap()
}

fn csv(dir: &Path, group: &str) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(dir.join(format!("{group}.csv"))).unwrap();
    text.lines()
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

fn assert_one_line_error(out: &Output, needle: &str) {
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.contains(needle), "{stderr}");
}

#[test]
fn a_run_writes_a_csv_per_group_and_a_summary() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("mon");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let _clients: Vec<TcpStream> = (0..4)
        .map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap())
        .collect();
    let me = std::process::id().to_string();
    let port_arg = port.to_string();
    let run = webscope(&[
        "monitor",
        "-d",
        "1s",
        "--interval",
        "100ms",
        "--port",
        &port_arg,
        "--pid",
        &me,
        "--tcp-budget",
        "100",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(run.status.success(), "{run:?}");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(stdout.contains("samples over"), "{stdout}");
    assert!(stdout.contains(&format!(":{port}")), "{stdout}");

    let json = summary(&out);
    let samples = json["samples"].as_u64().unwrap();
    assert!(
        (8..=11).contains(&samples),
        "about 10 samples in 1 s: {samples}"
    );
    assert_eq!(json["interval_s"], 0.1);
    // Four clients, not accepted: both ends ESTABLISHED, all four waiting in the accept queue.
    let local = &json["groups"]["ports"]["rows"][format!("{port}/local")];
    assert_eq!(local["established"]["max"], 4.0);
    assert_eq!(
        json["groups"]["ports"]["rows"][format!("{port}/remote")]["established"]["min"],
        4.0
    );
    assert_eq!(
        json["groups"]["listen"]["rows"][port.to_string()]["accept_queue"]["last"],
        4.0
    );
    let cost = json["cost"]["pct_of_one_core"].as_f64().unwrap();
    assert!(cost > 0.0 && cost < 100.0, "{cost}");

    let cpu = csv(&out, "cpu");
    assert_eq!(cpu[0][..3], ["time_s", "unix_time", "cpu"]);
    let cores = std::thread::available_parallelism().unwrap().get();
    assert_eq!(
        cpu.len() - 1,
        samples as usize * (1 + cores),
        "a row per core and sample"
    );
    let threads = csv(&out, "threads");
    assert!(
        threads.iter().skip(1).all(|r| r[2] == me),
        "only the watched process's threads"
    );
    for group in [
        "system", "memory", "net", "tcp", "sockets", "ports", "listen", "process",
    ] {
        let rows = csv(&out, group);
        assert!(rows.len() > 1, "{group} has rows");
        assert!(
            rows.iter().all(|r| r.len() == rows[0].len()),
            "{group}: ragged rows"
        );
    }
}

#[test]
fn bad_input_is_one_line_and_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("never");
    let out_arg = out.to_str().unwrap();
    assert_one_line_error(
        &webscope(&["monitor", "--interval", "1ms", "--out", out_arg]),
        "--interval 100ms",
    );
    // PIDs stop below 2^22 on Linux.
    assert_one_line_error(
        &webscope(&["monitor", "--pid", "4194400", "-d", "1s", "--out", out_arg]),
        "no process 4194400",
    );
    assert_one_line_error(
        &webscope(&["monitor", "--port", "0", "--out", out_arg]),
        "port 0",
    );
    assert_one_line_error(
        &webscope(&["monitor", "--tcp-budget", "0", "--out", out_arg]),
        "--tcp-budget",
    );
    assert!(!out.exists(), "no directory for a refused run");
    let usage = webscope(&["monitor", "--interval", "soon"]);
    assert_eq!(usage.status.code(), Some(2), "clap's usage error");
}

#[test]
fn ctrl_c_stops_cleanly_and_keeps_what_was_sampled() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_webscope"))
        .args(["monitor", "--out", dir.path().to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(800));
    // SAFETY: signalling the child we started and have not reaped.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("monitor did not stop on SIGINT");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
    let json = summary(dir.path());
    let samples = json["samples"].as_u64().unwrap();
    assert!(samples >= 3, "{samples}");
    assert_eq!(
        csv(dir.path(), "memory").len() as u64,
        samples + 1,
        "every sample is in the CSV"
    );
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut stdout).unwrap();
    assert!(
        stdout.contains("samples over"),
        "the summary is printed: {stdout}"
    );
}

#[test]
fn profile_without_perf_says_so_once_and_samples_anyway() {
    let dir = tempfile::tempdir().unwrap();
    let run = webscope(&[
        "monitor",
        "--profile",
        "--perf",
        "/nonexistent/perf",
        "-d",
        "300ms",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert!(run.status.success(), "{run:?}");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("apt-get install linux-perf"), "{stderr}");
    let json = summary(dir.path());
    assert!(json["profile"].is_null());
    assert!(json["profile_error"]
        .as_str()
        .unwrap()
        .contains("not found"));
    assert!(json["samples"].as_u64().unwrap() >= 2);
    assert!(!dir.path().join("perf.data").exists() && !dir.path().join("profile.csv").exists());
}

/// Whether perf can sample every CPU here (it needs the linux-perf package and root, or
/// kernel.perf_event_paranoid <= 0).
fn perf_works() -> bool {
    let dir = tempfile::tempdir().unwrap();
    Command::new("perf")
        .args(["record", "-e", "cpu-clock", "-a", "-q", "-o"])
        .arg(dir.path().join("probe.data"))
        .args(["--", "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn profile_breaks_kernel_time_down_when_perf_is_there() {
    let dir = tempfile::tempdir().unwrap();
    let run = webscope(&[
        "monitor",
        "--profile",
        "--profile-hz",
        "199",
        "-d",
        "1s",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert!(run.status.success(), "{run:?}");
    let json = summary(dir.path());
    if !perf_works() {
        // Then the one line says why, and the rest ran.
        let why = json["profile_error"].as_str().expect("an explanation");
        assert!(
            why.starts_with("--profile:") && !why.contains('\n'),
            "{why}"
        );
        assert!(json["samples"].as_u64().unwrap() >= 5);
        return;
    }
    let profile = &json["profile"];
    let categories = profile["categories"].as_array().unwrap();
    assert_eq!(categories.len(), 10);
    let total: f64 = categories.iter().map(|c| c["pct"].as_f64().unwrap()).sum();
    assert!((total - 100.0).abs() < 1e-6, "{total}");
    assert!(
        profile["samples"].as_u64().unwrap() > 100,
        "1 s at 199 Hz on every CPU"
    );
    let kernel: f64 = categories
        .iter()
        .filter_map(|c| c["kernel_pct"].as_f64())
        .sum();
    assert!(
        (kernel - 100.0).abs() < 1e-6,
        "kernel categories split kernel time: {kernel}"
    );
    let rows = std::fs::read_to_string(dir.path().join("profile.csv")).unwrap();
    assert!(
        rows.starts_with("category,symbol,samples,pct,kernel_pct"),
        "{rows}"
    );
    assert!(dir.path().join("perf.data").exists());
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(stdout.contains("profile "), "{stdout}");
}

#[test]
fn help_has_examples() {
    let help = webscope(&["monitor", "--help"]);
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(
        text.contains("EXAMPLES:") && text.contains("webscope monitor --port 8080"),
        "{text}"
    );
}

/// `--node-exporter` without `--interval` scrapes every second, which node_exporter keeps up
/// with, and says so; no figure it lacks is printed as NaN.
#[test]
fn node_exporter_works_at_the_default_interval() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exporter) = lab_support::NodeExporter::start(dir.path()) else {
        return;
    };
    let out_dir = dir.path().join("out");
    let out = webscope(&[
        "monitor",
        "--node-exporter",
        &exporter.url,
        "-d",
        "3s",
        "-q",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("every 1s, for 3s"), "{stdout}");
    assert!(stdout.contains("(every 1000 ms)"), "{stdout}");
    assert!(!stdout.contains("NaN"), "{stdout}");
    let s = summary(&out_dir);
    assert_eq!(s["interval_s"], 1.0);
    assert!(s["samples"].as_u64().unwrap() >= 2, "{}", s["samples"]);
    assert!(
        s["groups"]["cpu"]["rows"]["all"]["busy_pct"]["n"]
            .as_u64()
            .unwrap()
            >= 2
    );
    // An interval asked for that a scrape cannot keep is refused in one line, naming the way out.
    let refused = webscope(&[
        "monitor",
        "--node-exporter",
        &exporter.url,
        "--interval",
        "100ms",
        "-d",
        "1s",
    ]);
    assert_one_line_error(&refused, "leave --interval out (1s)");
}
