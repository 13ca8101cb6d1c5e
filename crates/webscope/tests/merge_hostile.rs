//! #34 §6: `webscope merge` does not believe what an interval log's line claims. Each hostile
//! .hlog is built here, beside a real segment's result: a histogram that claims a payload of
//! 2^31 - 1 bytes (merge allocated 2.1 GB before), a zlib bomb (it inflated all of it: 500 MB
//! in the issue, 128 MiB here) and counts
//! that add up past u64 (it merged to `count 18446744073709551615`, p50 0, exit 0). Each is
//! refused in one line naming the file and the line, within bounded memory: the merge runs
//! under an address-space limit of 1 GiB, and its peak RSS (wait4) must stay under 64 MiB (a refused merge peaks near 20 MiB).

mod lab_support;

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;

use base64::Engine as _;
use lab_support::{webscope, Served};

/// The address space a merge may have: a 2.1 GB allocation fails under it.
const ADDRESS_SPACE: u64 = 1 << 30;
/// The peak resident memory a refused merge may reach, KiB.
const PEAK_RSS_KIB: i64 = 64 << 10;

/// One segment's result (s0.json, s0.hlog) of a short run against `webscope serve`.
fn segment(dir: &Path) {
    let root = dir.join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("index.html"), "hostile\n").unwrap();
    let server = Served::start(&root);
    let status = webscope()
        .args(["load", &format!("{}index.html", server.base_url)])
        .args(["-c", "2", "-t", "1", "-d", "1s", "-q", "--segment", "0/1"])
        .arg("--json")
        .arg(dir.join("s0.json"))
        .arg("--hlog")
        .arg(dir.join("s0.hlog"))
        .stdout(Stdio::null())
        .status()
        .unwrap();
    server.stop();
    assert!(status.success());
}

/// The segment's log with the histogram of its first untagged interval line replaced by
/// `histogram`; and that line's number.
fn with_hostile_line(log: &str, histogram: &str) -> (String, usize) {
    let mut out = String::new();
    let mut at = None;
    for (i, line) in log.lines().enumerate() {
        let interval =
            !line.starts_with('#') && !line.starts_with('"') && !line.starts_with("Tag=");
        if interval && at.is_none() {
            let (fields, _) = line.rsplit_once(',').unwrap();
            out.push_str(&format!("{fields},{histogram}\n"));
            at = Some(i + 1);
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    (out, at.expect("the segment logged an interval"))
}

/// `webscope merge OUT s0.json` under the address-space limit: (exit code, stderr, peak RSS
/// in KiB).
// wait4 reaps the child (std's wait cannot give its rusage).
#[allow(clippy::zombie_processes)]
fn merge(dir: &Path) -> (i32, String, i64) {
    let mut cmd = webscope();
    cmd.arg("merge")
        .arg(dir.join("merged"))
        .arg(dir.join("s0.json"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: setrlimit on the child itself, before exec; it allocates nothing.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: ADDRESS_SPACE,
                rlim_max: ADDRESS_SPACE,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid value for wait4 to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: wait4 on our own child, with valid pointers; std never waits for it after.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32);
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    };
    (code, stderr, usage.ru_maxrss)
}

/// A V2 histogram (uncompressed) over 1 ns to 100 ms at 3 digits, with `payload` claimed
/// and the given payload bytes after its header.
fn v2(claimed: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = 0x1c84_9313u32.to_be_bytes().to_vec();
    out.extend_from_slice(&claimed.to_be_bytes());
    out.extend_from_slice(&0u32.to_be_bytes());
    out.extend_from_slice(&3u32.to_be_bytes());
    out.extend_from_slice(&1u64.to_be_bytes());
    out.extend_from_slice(&100_000_000u64.to_be_bytes());
    out.extend_from_slice(&1f64.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// `v2` zlib-compressed, as the V2 compressed format frames it.
fn deflated(v2: &[u8]) -> Vec<u8> {
    let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    zlib.write_all(v2).unwrap();
    let body = zlib.finish().unwrap();
    let mut out = 0x1c84_9314u32.to_be_bytes().to_vec();
    out.extend_from_slice(&(body.len() as u32).to_be_bytes());
    out.extend_from_slice(&body);
    out
}

/// Zig-zag LEB128 varints, as the V2 payload holds counts (and runs of zeros, negative).
fn varints(numbers: &[i64]) -> Vec<u8> {
    let mut out = Vec::new();
    for &n in numbers {
        let mut zz = ((n << 1) ^ (n >> 63)) as u64;
        while zz >= 0x80 {
            out.push((zz as u8) | 0x80);
            zz >>= 7;
        }
        out.push(zz as u8);
    }
    out
}

#[test]
fn hostile_interval_logs_are_refused_in_bounded_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    segment(dir);
    let log = std::fs::read_to_string(dir.join("s0.hlog")).unwrap();
    // Counts of 2^63 - 1 at 1 µs, 1.001 µs and 1.002 µs: 3 × (2^63 - 1) > 2^64.
    let overflow = varints(&[-1000, i64::MAX, i64::MAX, i64::MAX]);
    // 128 MiB of zeros, claimed as a payload: deflates to about 128 KiB.
    let mut bomb = v2(128 << 20, &[]);
    bomb.resize(bomb.len() + (128 << 20), 0);
    let cases = [
        (
            "2^31 - 1 bytes claimed",
            v2(i32::MAX as u32, &[]),
            "claims a payload",
        ),
        ("a zlib bomb", deflated(&bomb), "claims a payload"),
        (
            "counts past u64",
            v2(overflow.len() as u32, &overflow),
            "add up past",
        ),
    ];
    drop(bomb);
    for (what, histogram, says) in cases {
        let text = base64::engine::general_purpose::STANDARD.encode(&histogram);
        let (hostile, line) = with_hostile_line(&log, &text);
        std::fs::write(dir.join("s0.hlog"), hostile).unwrap();
        let (code, stderr, peak_kib) = merge(dir);
        let hlog = dir.join("s0.hlog").display().to_string();
        eprintln!(
            "{what}: exit {code}, peak RSS {peak_kib} KiB: {}",
            stderr.trim()
        );
        assert_eq!(code, 1, "{what}: exit {code}: {stderr}");
        assert!(
            stderr.trim().lines().count() == 1
                && stderr.contains(&hlog)
                && stderr.contains(&format!("line {line}:"))
                && stderr.contains(says),
            "{what}: {stderr}"
        );
        assert!(
            peak_kib < PEAK_RSS_KIB,
            "{what}: peak RSS {peak_kib} KiB, more than {PEAK_RSS_KIB}"
        );
        assert!(
            !dir.join("merged").exists(),
            "{what}: a merged result was left"
        );
    }
}

/// Issue 51, "left open": merge decoded every interval of a tag before adding them, about
/// 290 KB each with the sums, so an hour of one-second intervals of one segment peaked at
/// 1040 MiB (27 MiB now, an interval at a time). Twenty minutes here, to keep the debug
/// build's decoding short: about 350 MiB before.
#[test]
fn twenty_minutes_of_intervals_merge_in_bounded_memory() {
    const INTERVALS: usize = 1200;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    segment(dir);
    // The segment's first interval with requests, as if the run had lasted an hour.
    let mut report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("s0.json")).unwrap()).unwrap();
    let first = report["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["requests"].as_u64() > Some(0))
        .unwrap()
        .clone();
    report["intervals"] = (0..INTERVALS)
        .map(|i| {
            let mut interval = first.clone();
            interval["start_s"] = (i as f64).into();
            interval
        })
        .collect();
    std::fs::write(dir.join("s0.json"), report.to_string()).unwrap();
    let log = std::fs::read_to_string(dir.join("s0.hlog")).unwrap();
    let (head, line) = with_hostile_line(&log, "");
    let head: Vec<&str> = head.lines().take(line - 1).collect();
    let interval = log.lines().nth(line - 1).unwrap();
    let (_, rest) = interval.split_once(',').unwrap();
    let mut hour = head.join("\n");
    hour.push('\n');
    for i in 0..INTERVALS {
        hour.push_str(&format!("{i}.000,{rest}\n"));
    }
    std::fs::write(dir.join("s0.hlog"), hour).unwrap();
    let (code, stderr, peak_kib) = merge(dir);
    eprintln!("{INTERVALS} intervals: exit {code}, peak RSS {peak_kib} KiB");
    assert_eq!(code, 0, "{stderr}");
    assert!(
        peak_kib < PEAK_RSS_KIB * 2,
        "peak RSS {peak_kib} KiB for {INTERVALS} intervals"
    );
    let merged: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("merged/load.json")).unwrap()).unwrap();
    let intervals = merged["intervals"].as_array().unwrap();
    assert_eq!(intervals.len(), INTERVALS);
    let p50 = |i: &serde_json::Value| i["latency_us"]["p50"].as_f64().unwrap_or(0.0);
    assert!(
        intervals
            .iter()
            .all(|i| p50(i) > 0.0 && p50(i) == p50(&intervals[0])),
        "every interval's latency is the one logged"
    );
    let written = std::fs::read_to_string(dir.join("merged/load.hlog")).unwrap();
    let lines = written
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with('"'))
        .count();
    assert_eq!(lines, INTERVALS);
}
