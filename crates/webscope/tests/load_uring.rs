//! `webscope load --io uring`: the same results as the epoll engine (no errors, whole bodies,
//! keep-alive and close), and proof from the syscalls (strace -c) that it is on when asked:
//! no send, recv or connect syscalls, and fewer I/O syscalls per request than the epoll
//! engine's in the same case; and off by default.

mod lab_support;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use lab_support::Served;
use serde_json::Value;

/// Runs `webscope load` under `strace -f -c`; returns its JSON report and syscall counts.
fn traced_load(args: &[&str], dir: &Path) -> (Value, HashMap<String, u64>) {
    let (json, counts) = (dir.join("r.json"), dir.join("strace"));
    let out = Command::new("strace")
        .args(["-f", "-c", "-o"])
        .arg(&counts)
        .arg(env!("CARGO_BIN_EXE_webscope"))
        .arg("load")
        .args(args)
        .args(["-t", "1", "-d", "700ms", "--json"])
        .arg(&json)
        .output()
        .expect("strace is needed for this test (apt-get install strace)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut calls = HashMap::new();
    for line in std::fs::read_to_string(&counts).unwrap().lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() >= 5 && fields[0].parse::<f64>().is_ok() {
            if let Ok(n) = fields[3].parse::<u64>() {
                calls.insert(fields.last().unwrap().to_string(), n);
            }
        }
    }
    let report = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    (report, calls)
}

fn calls(counts: &HashMap<String, u64>, name: &str) -> u64 {
    counts.get(name).copied().unwrap_or(0)
}

#[test]
fn uring_serves_keep_alive_and_close_without_a_syscall_per_send_or_recv() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("1k.bin"), vec![b'a'; 1024]).unwrap();
    std::fs::write(root.path().join("100k.bin"), vec![b'b'; 100 * 1024]).unwrap();
    let served = Served::start(root.path());
    let dir = tempfile::tempdir().unwrap();
    for (file, size) in [("1k.bin", 1024u64), ("100k.bin", 100 * 1024)] {
        let url = format!("{}{file}", served.base_url);
        for close in [false, true] {
            let mut per_request = Vec::new();
            for io in ["epoll", "uring"] {
                let mut args = vec![url.as_str(), "-c", "4", "--io", io];
                if close {
                    args.push("--close");
                }
                let (r, counts) = traced_load(&args, dir.path());
                let requests = r["requests"].as_u64().unwrap();
                assert!(requests > 50, "{args:?}: {r}");
                assert_eq!(r["errors"]["total"], 0, "{args:?}: {}", r["errors"]);
                assert_eq!(r["status_codes"]["200"], requests, "{args:?}");
                assert!(r["bytes"].as_u64().unwrap() >= requests * size, "{args:?}");
                let io_calls: u64 = [
                    "sendto",
                    "recvfrom",
                    "connect",
                    "epoll_wait",
                    "io_uring_enter",
                ]
                .iter()
                .map(|name| calls(&counts, name))
                .sum();
                per_request.push(io_calls as f64 / requests as f64);
                if io == "uring" {
                    // Sends, receives and connects go through the ring.
                    for name in ["sendto", "recvfrom", "connect"] {
                        assert_eq!(calls(&counts, name), 0, "{args:?}: {name} {counts:?}");
                    }
                    assert!(calls(&counts, "io_uring_enter") > 0, "{args:?}: {counts:?}");
                } else {
                    assert_eq!(calls(&counts, "io_uring_enter"), 0, "{args:?}: {counts:?}");
                    assert!(calls(&counts, "sendto") >= requests, "{args:?}: {counts:?}");
                }
            }
            // Batched: fewer I/O syscalls per request than a send and a receive each.
            assert!(
                per_request[1] < per_request[0],
                "{file} close={close}: I/O syscalls per request epoll {:.2}, uring {:.2}",
                per_request[0],
                per_request[1]
            );
        }
    }
    served.stop();
}

#[test]
fn uring_is_refused_where_it_does_not_run_yet() {
    for (args, says) in [
        (
            &["https://127.0.0.1:1/", "--io", "uring"][..],
            "leave it out for https",
        ),
        (
            &["http://127.0.0.1:1/", "--io", "uring", "--rate", "100"],
            "closed loop only",
        ),
        (
            &["http://127.0.0.1:1/", "--io", "uring", "--http2"],
            "leave it out with --http2",
        ),
        (
            &["http://127.0.0.1:1/", "--io", "kqueue"],
            "give epoll or uring",
        ),
    ] {
        let out = lab_support::webscope()
            .arg("load")
            .args(args)
            .args(["-d", "1s"])
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
}
