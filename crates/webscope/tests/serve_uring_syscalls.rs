//! `webscope serve --io uring` proved on and off by its syscalls (strace, installed by CI):
//! on (the default), the workers make no recv, send, accept or epoll call, only
//! `io_uring_enter` (at most two per request for one client waiting on each response, fewer
//! with many clients); off (`--io epoll`, `--baseline`), no io_uring at all.
//! Where io_uring cannot serve (the kernel refuses it, here by a seccomp filter on
//! `io_uring_setup`; --tls-cert), the server says so in one line and serves with epoll.

mod serve_support;

use std::time::Duration;

use serve_support::*;

const N: u64 = 200;

fn measure(site: &Site, flags: &[&str], request: &[u8]) -> std::collections::HashMap<String, u64> {
    let server = Server::start(site.root(), flags);
    // Warm the caches first: what is measured is the steady state.
    let _ = exchange(&server, request);
    let counts = syscalls(&server, request, N);
    let _ = server.stop(Duration::from_secs(10));
    counts
}

const KEEP_ALIVE_1K: &[u8] = b"GET /1k.bin HTTP/1.1\r\nHost: t\r\n\r\n";

#[test]
fn io_uring_replaces_the_per_request_syscalls_and_is_on_by_default() {
    let site = Site::new();
    let uring = measure(&site, &["--io", "uring"], KEEP_ALIVE_1K);
    for name in [
        "recvfrom",
        "sendto",
        "epoll_wait",
        "epoll_pwait",
        "accept4",
        "writev",
    ] {
        assert_eq!(count(&uring, name), 0, "{name} with --io uring: {uring:?}");
    }
    let enters = count(&uring, "io_uring_enter");
    // One client waiting for each response: an enter that submits the response (its SEND
    // completes at once and ends the wait) and one that waits for the next request; with
    // many connections a round of completions serves many requests.
    assert!(
        (1..=2 * N + N / 4).contains(&enters),
        "{enters} io_uring_enter for {N} requests: {uring:?}"
    );
    let epoll = measure(&site, &["--io", "epoll"], KEEP_ALIVE_1K);
    assert_eq!(count(&epoll, "io_uring_enter"), 0, "{epoll:?}");
    assert!(count(&epoll, "sendto") >= N, "{epoll:?}");
    let default = measure(&site, &[], KEEP_ALIVE_1K);
    assert!(count(&default, "io_uring_enter") > 0, "{default:?}");
    assert_eq!(count(&default, "sendto"), 0, "{default:?}");
    // The paper's naive server runs on the paper's engine.
    let baseline = measure(&site, &["--baseline"], KEEP_ALIVE_1K);
    assert_eq!(count(&baseline, "io_uring_enter"), 0, "{baseline:?}");
    assert!(count(&baseline, "sendto") >= N, "{baseline:?}");
}

#[test]
fn the_start_up_line_names_the_engine_and_why_it_is_epoll_when_it_is() {
    let site = Site::new();
    let engine_line = |flags: &[&str]| {
        let server = Server::start(site.root(), flags);
        assert_eq!(get(&server, "/1k.bin").status, 200);
        let (status, stdout, _) = server.stop(Duration::from_secs(10));
        assert!(status.success());
        let said: Vec<String> = stdout
            .into_iter()
            .filter(|l| l.contains("uring") || l.contains("epoll"))
            .collect();
        assert_eq!(said.len(), 1, "{flags:?}: {said:?}");
        said[0].clone()
    };
    assert!(engine_line(&[]).starts_with("webscope serve: io_uring ("));
    // The services run on io_uring too (TLS falls back: crates/server/tests/tls.rs).
    assert!(engine_line(&["--services"]).starts_with("webscope serve: io_uring ("));
    assert_eq!(
        engine_line(&["--io", "epoll"]),
        "webscope serve: epoll (--io epoll)"
    );
    assert!(engine_line(&["--baseline"]).contains("epoll (--baseline"));
}

#[test]
fn large_files_go_by_sendfile_or_through_the_ring_and_every_byte_arrives() {
    let site = Site::new();
    let request = b"GET /100k.bin HTTP/1.1\r\nHost: t\r\n\r\n";
    // sendfile(2) itself with sendfile on (io_uring has none; its SPLICE and SEND measured
    // dearer), SEND from the mapping (sendfile off), READ and SEND (both off): the last two are
    // no syscall of the worker's. No way takes a pipe (no SPLICE).
    for (flags, sendfile) in [
        (&["--io", "uring"][..], true),
        (&["--io", "uring", "--disable", "sendfile"], false),
        (&["--io", "uring", "--disable", "sendfile,mmap"], false),
    ] {
        let counts = measure(&site, flags, request);
        for name in ["pread64", "sendto", "splice", "pipe2"] {
            assert_eq!(count(&counts, name), 0, "{name} with {flags:?}: {counts:?}");
        }
        let calls = count(&counts, "sendfile");
        if sendfile {
            assert!(calls >= N, "{calls} sendfile for {N} responses: {counts:?}");
        } else {
            assert_eq!(calls, 0, "sendfile with {flags:?}: {counts:?}");
        }
        assert!(
            count(&counts, "io_uring_enter") > 0,
            "{flags:?}: {counts:?}"
        );
        let server = Server::start(site.root(), flags);
        let resp = get(&server, "/100k.bin");
        assert_eq!(resp.status, 200);
        assert_eq!(resp.body, pattern(100 * 1024), "{flags:?}");
        let _ = server.stop(Duration::from_secs(10));
    }
}

#[test]
fn a_new_connection_per_request_costs_no_accept_syscall() {
    let site = Site::new();
    let server = Server::start(site.root(), &["--io", "uring"]);
    let _ = get(&server, "/1k.bin");
    let pid = server.pid();
    let counts = strace_during(pid, || {
        for _ in 0..50 {
            let resp = exchange(
                &server,
                b"GET /1k.bin HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
            );
            assert_eq!(resp.status, 200);
        }
    });
    assert_eq!(count(&counts, "accept4"), 0, "multishot accept: {counts:?}");
    assert_eq!(count(&counts, "close"), 0, "closed by the ring: {counts:?}");
    assert!(count(&counts, "io_uring_enter") > 0, "{counts:?}");
    let _ = server.stop(Duration::from_secs(10));
}

#[test]
fn a_kernel_that_refuses_io_uring_gets_one_line_and_an_epoll_server() {
    let site = Site::new();
    let server = Server::start_with(site.root(), &["--io", "uring"], |cmd| {
        use std::os::unix::process::CommandExt;
        // SAFETY: prctl calls only, on the child between fork and exec.
        unsafe { cmd.pre_exec(refuse_io_uring_setup) };
    });
    assert_eq!(get(&server, "/1k.bin").status, 200);
    let (status, stdout, _) = server.stop(Duration::from_secs(10));
    assert!(status.success());
    let said: Vec<&String> = stdout.iter().filter(|l| l.contains("io_uring")).collect();
    assert_eq!(said.len(), 1, "{stdout:?}");
    assert!(
        said[0].contains("refused") && said[0].contains("serving with epoll"),
        "{said:?}"
    );
}

/// A seccomp filter on the calling process: `io_uring_setup` fails with EPERM (as under
/// Docker's default profile), every other syscall is allowed.
fn refuse_io_uring_setup() -> std::io::Result<()> {
    const LD_NR: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS: the syscall number
    const JEQ: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
    const RET: u16 = 0x06; // BPF_RET | BPF_K
    const ERRNO_EPERM: u32 = 0x0005_0000 | libc::EPERM as u32;
    const ALLOW: u32 = 0x7fff_0000;
    let filter = [
        libc::sock_filter {
            code: LD_NR,
            jt: 0,
            jf: 0,
            k: 0,
        },
        libc::sock_filter {
            code: JEQ,
            jt: 0,
            jf: 1,
            k: libc::SYS_io_uring_setup as u32,
        },
        libc::sock_filter {
            code: RET,
            jt: 0,
            jf: 0,
            k: ERRNO_EPERM,
        },
        libc::sock_filter {
            code: RET,
            jt: 0,
            jf: 0,
            k: ALLOW,
        },
    ];
    let program = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: plain prctl calls with a filter that lives across them.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
            || libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER,
                &program as *const libc::sock_fprog,
            ) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}
