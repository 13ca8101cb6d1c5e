//! Issue 51, items 5 to 8: the generator's own inputs, as a careless user or a hostile config
//! gives them. Each was a crash, an abort or gigabytes before; each is one line and a
//! non-zero exit now, within a few tens of MiB of peak memory (wait4's `ru_maxrss`):
//!
//! - `-t 1000000 -c 1000000` (and `"threads": 1000000` in --config) grew to 24 GB before the
//!   kernel's OOM killer; `-c 20000000` aborted on a 7.7 GB allocation;
//! - `--users 1000000` aborted at 3.6 GB, with `--user-connections 10000` on a 1.9 TB
//!   allocation;
//! - `--config /dev/zero` read 4.1 GB before failing;
//! - `-d 500000000000years` (and --timeout, --think-time, --interval), `{"secs": 2^64-1}` and
//!   `"http2": 2^64-1` in --config panicked (exit 101), and the run then said "no request
//!   succeeded".
//!
//! And what must still work: `-d 3` is 3 seconds, as wrk reads it (issue 52, item 6).

mod load_support;
mod rss_support;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use load_support::{webscope, Behavior, TestServer};
use serde_json::Value;

/// The peak memory a refused run may reach, MiB (a refusal peaks near 20 MiB in a debug build).
const REFUSED_PEAK_MIB: f64 = 64.0;
/// Address space a refused run may have: an allocation of gigabytes fails under it rather
/// than taking the machine's memory, should a refusal ever regress.
const ADDRESS_SPACE: u64 = 4 << 30;

/// `webscope load ARGS` under an address-space limit and, when given, an open-files limit
/// (soft and hard, so that raising the soft one gains nothing); run to its end.
fn load_limited(args: &[&str], open_files: Option<u64>) -> rss_support::Finished {
    let mut cmd = webscope();
    cmd.arg("load").args(args);
    // SAFETY: setrlimit in the forked child before exec; no allocation, no lock.
    unsafe {
        cmd.pre_exec(move || {
            let space = libc::rlimit {
                rlim_cur: ADDRESS_SPACE,
                rlim_max: ADDRESS_SPACE,
            };
            libc::setrlimit(libc::RLIMIT_AS, &space);
            if let Some(files) = open_files {
                let limit = libc::rlimit {
                    rlim_cur: files,
                    rlim_max: files,
                };
                libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
            }
            Ok(())
        });
    }
    rss_support::run(&mut cmd, None, |_, _| {}, Duration::from_secs(60))
}

/// Asserts a refusal: exit 1 or 2 (clap's), no signal, one line saying `says`, little memory.
#[track_caller]
fn refused(done: &rss_support::Finished, says: &str) {
    assert!(
        matches!(done.code, Some(1 | 2)) && done.signal.is_none(),
        "{done:?}"
    );
    let error: Vec<&str> = done
        .stderr
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.contains("For more information"))
        .collect();
    assert_eq!(error.len(), 1, "one line: {}", done.stderr);
    assert!(error[0].contains(says), "{:?} lacks {says:?}", error[0]);
    assert!(!done.stderr.contains("panicked"), "{}", done.stderr);
    assert!(
        done.max_rss_mib < REFUSED_PEAK_MIB,
        "peak {:.0} MiB",
        done.max_rss_mib
    );
}

/// A config of a closed-loop run of one connection on `url`, as JSON to be edited.
fn config_json(url: &str) -> Value {
    let mut config = webscope_load::Config::new(webscope_load::Target::url(url).unwrap());
    config.connections = 1;
    config.threads = 1;
    config.duration = Duration::from_secs(1);
    serde_json::from_str(&config.to_json().unwrap()).unwrap()
}

#[test]
fn a_million_threads_or_twenty_million_connections_are_refused_in_one_line() {
    let url = "http://127.0.0.1:9/";
    let done = load_limited(&[url, "-t", "1000000", "-c", "1000000", "-d", "1s"], None);
    refused(&done, "-t 1000000: at most");
    let done = load_limited(&[url, "-t", "1", "-c", "20000000", "-d", "1s"], None);
    refused(&done, "-c 20000000: 20000000 connections here");
    // The same through a config, which clap never sees.
    let mut json = config_json(url);
    json["threads"] = 1_000_000.into();
    json["connections"] = 1_000_000.into();
    let done = load_limited(&["--config", &json.to_string(), "-q"], None);
    refused(&done, "-t 1000000: at most");
}

#[test]
fn connections_past_the_open_files_limit_are_refused_naming_it() {
    let url = "http://127.0.0.1:9/";
    let done = load_limited(&[url, "-t", "1", "-c", "1000", "-d", "1s"], Some(256));
    refused(&done, "ulimit -n 256");
    let done = load_limited(
        &[
            url,
            "-t",
            "1",
            "-c",
            "1",
            "--rate",
            "10",
            "--max-connections",
            "5000",
        ],
        Some(256),
    );
    refused(
        &done,
        "--max-connections 5000: more connections than this process may open",
    );
    let fileset = tempfile::tempdir().unwrap();
    load_support::fileset(fileset.path(), &["single", "--size", "100"]);
    let dir = fileset.path().to_str().unwrap();
    let base = ["--fileset", dir, "--base", url, "-d", "1s", "-t", "1"];
    for (users, connections, says) in [
        ("1000000", None, "--users 1000000 × --user-connections 6"),
        ("1000000", Some("10000"), "10000000000 connections here"),
        (
            "100",
            Some("10"),
            "--users 100 × --user-connections 10: 1000",
        ),
    ] {
        let mut args: Vec<&str> = base.to_vec();
        args.extend(["--users", users]);
        if let Some(c) = connections {
            args.extend(["--user-connections", c]);
        }
        let done = load_limited(&args, Some(256));
        refused(&done, says);
    }
}

#[test]
fn an_open_loop_ceiling_is_cut_to_a_small_open_files_limit_not_refused() {
    // The default --max-connections (1000) is cut to what 256 open files leave, not refused:
    // the lab's open loops ask for 1000 on machines whose limit may be 1024.
    let server = TestServer::start(Behavior::Ok { body: 10 });
    let url = server.url("/");
    let done = load_limited(
        &[&url, "-t", "1", "-c", "1", "--rate", "50", "-d", "1s", "-q"],
        Some(256),
    );
    assert_eq!(done.code, Some(0), "{done:?}");
    // A config's ceiling (the lab's, a pod's) is cut too, and the report says so.
    let mut json = config_json(&url);
    json["pacing"] = serde_json::json!({"open": {"rate": 50.0, "arrivals": "constant", "max_connections": 5000}});
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("run.json");
    let done = load_limited(
        &[
            "--config",
            &json.to_string(),
            "-q",
            "--json",
            report.to_str().unwrap(),
        ],
        Some(256),
    );
    assert_eq!(done.code, Some(0), "{done:?}");
    let report: Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let warnings = report["warnings"].to_string();
    assert!(
        warnings.contains(
            "--max-connections 5000: this process may open 184 connections (ulimit -n 256"
        ),
        "{warnings}"
    );
}

#[test]
fn durations_past_a_year_are_one_line_not_a_panic() {
    let url = "http://127.0.0.1:9/";
    for flag in ["-d", "--timeout", "--think-time", "--interval"] {
        let done = load_limited(&[url, "-c", "1", flag, "500000000000years"], None);
        refused(
            &done,
            "longer than the longest length webscope takes, 365 days",
        );
    }
    let done = load_limited(&[url, "--users", "1", "--think", "const(1e300)"], None);
    refused(&done, "the longest length webscope takes");
    for (field, says) in [
        ("duration", "-d/--duration is 18446744073709551615 s"),
        ("timeout", "--timeout is 18446744073709551615 s"),
        ("interval", "--interval is 18446744073709551615 s"),
    ] {
        let mut json = config_json(url);
        json[field] = serde_json::json!({"secs": u64::MAX, "nanos": 0});
        let done = load_limited(&["--config", &json.to_string(), "-q"], None);
        refused(&done, says);
    }
    let mut json = config_json("https://127.0.0.1:9/");
    json["http2"] = u64::MAX.into();
    let done = load_limited(&["--config", &json.to_string(), "-q"], None);
    refused(&done, "at most 1000 streams per connection");
}

#[test]
fn a_config_that_is_no_regular_file_or_too_big_is_refused_before_it_is_read() {
    let done = load_limited(&["--config", "/dev/zero"], None);
    refused(&done, "--config /dev/zero is not a regular file");
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.json");
    // Sparse: 1 GiB claimed, nothing written.
    std::fs::File::create(&big)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let done = load_limited(&["--config", big.to_str().unwrap()], None);
    refused(&done, "is larger than a config may be (64 MiB)");
    let fifo = dir.path().join("fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let done = load_limited(&["--config", fifo.to_str().unwrap()], None);
    refused(&done, "is not a regular file");
    assert!(Path::new(&fifo).exists());
}

/// Issue 52, item 6: wrk reads `-d 3` as three seconds; so does the one grammar of lengths.
#[test]
fn a_bare_number_is_seconds() {
    let server = TestServer::start(Behavior::Ok { body: 10 });
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let url = server.url("/");
    let done = load_limited(
        &[
            &url,
            "-c",
            "1",
            "-t",
            "1",
            "-d",
            "1",
            "--interval",
            "0.5",
            "-q",
            "--json",
            json.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(done.code, Some(0), "{done:?}");
    let report: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let seconds = report["duration_s"].as_f64().unwrap();
    assert!((0.9..1.6).contains(&seconds), "{seconds}");
    let intervals = report["intervals"].as_array().unwrap().len();
    assert!(
        (2..=3).contains(&intervals),
        "{intervals} intervals of 0.5 s"
    );
}

#[test]
fn a_backoff_the_engine_would_ignore_is_refused_naming_it() {
    let url = "https://127.0.0.1:9/";
    for (more, says) in [
        (&["--http2"][..], "leave it out with --http2 or --http3"),
        (&["--http3"], "leave it out with --http2 or --http3"),
        (&["--users", "2"], "leave --backoff-503 out"),
    ] {
        let mut args = vec![url, "--backoff-503", "100ms", "-d", "1s", "-k"];
        args.extend_from_slice(more);
        refused(&load_limited(&args, None), says);
    }
}
