//! Each technique's switch changes the syscall pattern of `webscope serve` the way it should,
//! counted with `strace -c` on the running server (strace is installed by CI), on the default
//! engine here and on epoll in `serve_epoll_techniques.rs`.
//!
//! `string-cache` and `uri-cache` change no syscall (the clock is read through the vDSO);
//! their effect is tested in the server crate's unit tests and measured by the ablation
//! benchmark.

mod serve_support;

use std::collections::HashMap;
use std::time::Duration;

use serve_support::*;

const N: u64 = 100;

/// Starts a server with `flags` and counts syscalls over N requests for `path`.
fn measure(site: &Site, flags: &[&str], path: &str) -> HashMap<String, u64> {
    let log_dir = tempfile::tempdir().unwrap();
    let log = log_dir.path().join("access.log");
    let mut args = vec!["--access-log", log.to_str().unwrap()];
    args.extend_from_slice(flags);
    let server = Server::start(site.root(), &args);
    let request = format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n");
    // Warm the caches first: what is measured is the steady state.
    let _ = exchange(&server, request.as_bytes());
    let counts = syscalls(&server, request.as_bytes(), N);
    let _ = server.stop(Duration::from_secs(10));
    counts
}

fn about(n: u64) -> std::ops::RangeInclusive<u64> {
    n..=n + 3
}

#[test]
fn file_and_stat_caches_remove_the_file_syscalls() {
    let site = Site::new();
    let all = measure(&site, &[], "/1k.bin");
    for name in ["openat2", "statx", "newfstatat", "pread64", "close"] {
        assert!(count(&all, name) <= 2, "all on: {name} {:?}", all);
    }
    let no_stat = measure(&site, &["--disable", "stat-cache"], "/1k.bin");
    assert!(
        about(N).contains(&count(&no_stat, "newfstatat")),
        "stat-cache off: {no_stat:?}"
    );
    assert!(count(&no_stat, "openat2") <= 2, "{no_stat:?}");
    let no_file = measure(&site, &["--disable", "file-cache"], "/1k.bin");
    assert!(
        about(N).contains(&count(&no_file, "openat2")),
        "file-cache off: {no_file:?}"
    );
    assert!(
        about(N).contains(&count(&no_file, "pread64")),
        "{no_file:?}"
    );
    assert!(
        count(&no_file, "statx") <= 2,
        "the stat-cache still answers: {no_file:?}"
    );
    let baseline = measure(&site, &["--baseline"], "/1k.bin");
    for name in ["openat2", "statx", "pread64"] {
        assert!(
            about(N).contains(&count(&baseline, name)),
            "baseline {name}: {baseline:?}"
        );
    }
}

#[test]
fn async_log_moves_log_writes_off_the_request_path() {
    let site = Site::new();
    let async_log = measure(&site, &[], "/1k.bin");
    assert!(count(&async_log, "write") <= 3, "async: {async_log:?}");
    let direct = measure(&site, &["--disable", "async-log"], "/1k.bin");
    assert!(
        about(N).contains(&count(&direct, "write")),
        "one write per line: {direct:?}"
    );
}

#[test]
fn sendfile_mmap_and_read_are_the_three_ways_to_send_a_large_file() {
    let site = Site::new();
    let sendfile = measure(&site, &[], "/100k.bin");
    assert!(count(&sendfile, "sendfile") >= N, "{sendfile:?}");
    let mapped = measure(&site, &["--disable", "sendfile,file-cache"], "/100k.bin");
    assert_eq!(count(&mapped, "sendfile"), 0);
    assert!(
        about(N).contains(&count(&mapped, "mmap")),
        "mmap per request: {mapped:?}"
    );
    assert!(about(N).contains(&count(&mapped, "munmap")), "{mapped:?}");
    let cached_map = measure(&site, &["--disable", "sendfile"], "/100k.bin");
    assert!(
        count(&cached_map, "mmap") <= 2,
        "the file-cache keeps the mapping: {cached_map:?}"
    );
    let read = measure(&site, &["--disable", "sendfile,mmap"], "/100k.bin");
    assert_eq!(
        count(&read, "sendfile") + count(&read, "mmap"),
        0,
        "{read:?}"
    );
    if io_engine() == Some("epoll") {
        // 100 KiB in 64 KiB chunks: two reads per request.
        assert!(count(&read, "pread64") >= 2 * N, "{read:?}");
    } else {
        // On io_uring (the default) the chunks are READs in the ring, no syscall of their own
        // (serve_uring_syscalls.rs proves the ring does them).
        assert_eq!(
            count(&read, "pread64") + count(&read, "sendto"),
            0,
            "{read:?}"
        );
        assert!(count(&read, "io_uring_enter") > 0, "{read:?}");
    }
}

#[test]
fn the_dns_cache_takes_reverse_lookups_off_the_request_path() {
    let site = Site::new();
    // getnameinfo reads /etc/hosts (or asks a resolver) on every call it makes.
    let uncached = measure(
        &site,
        &["--hostname-lookups", "--disable", "dns-cache"],
        "/1k.bin",
    );
    let cached = measure(&site, &["--hostname-lookups"], "/1k.bin");
    let lookups = |c: &HashMap<String, u64>| count(c, "openat") + count(c, "socket");
    assert!(
        lookups(&uncached) >= N,
        "a lookup per request: {uncached:?}"
    );
    assert!(lookups(&cached) <= 3, "cached: {cached:?}");
}
