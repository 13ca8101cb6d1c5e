//! `webscope serve` never serves anything outside --root, and only regular files.

mod serve_support;

use std::io::Write;

use serve_support::*;

#[test]
fn traversal_attempts_are_refused_in_every_spelling() {
    let site = Site::new();
    let server = Server::start(site.root(), &[]);
    for target in [
        "/../etc/passwd",
        "/docs/../../etc/passwd",
        "/%2e%2e/etc/passwd",
        "/%2E%2E/etc/passwd",
        "/.%2e/etc/passwd",
        "/docs/%2e%2e/%2e%2e/etc/passwd",
        "/%2e%2e%2fetc%2fpasswd",
        "/docs%2f%2e%2e%2f%2e%2e%2fetc%2fpasswd",
        "http://t/../etc/passwd",
    ] {
        let resp = exchange(
            &server,
            format!("GET {target} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").as_bytes(),
        );
        assert_eq!(resp.status, 400, "{target}");
        assert!(
            !String::from_utf8_lossy(&resp.body).contains("root:"),
            "{target}"
        );
    }
    // Dot segments that stay inside the root are fine.
    assert_eq!(get(&server, "/docs/../1k.bin").status, 200);
    assert_eq!(get(&server, "/docs/./index.html").status, 200);
}

#[test]
fn a_symlink_out_of_the_root_is_refused_unless_allowed() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), b"secret").unwrap();
    let site = Site::new();
    std::os::unix::fs::symlink(
        outside.path().join("secret.txt"),
        site.root().join("leak.txt"),
    )
    .unwrap();
    std::os::unix::fs::symlink(outside.path(), site.root().join("leakdir")).unwrap();
    std::os::unix::fs::symlink("1k.bin", site.root().join("inside.bin")).unwrap();

    let server = Server::start(site.root(), &[]);
    assert_eq!(get(&server, "/leak.txt").status, 403);
    assert_eq!(get(&server, "/leakdir/secret.txt").status, 403);
    let inside = get(&server, "/inside.bin");
    assert_eq!(
        (inside.status, inside.body.len()),
        (200, 1024),
        "a symlink inside the root is fine"
    );
    drop(server);

    let server = Server::start(site.root(), &["--follow-symlinks"]);
    assert_eq!(get(&server, "/leak.txt").body, b"secret");
    assert_eq!(get(&server, "/leakdir/secret.txt").body, b"secret");
}

#[test]
fn only_regular_files_are_served() {
    let site = Site::new();
    let fifo = site.root().join("pipe");
    let path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o644) }, 0);
    let socket_path = site.root().join("sock");
    let _listener = std::os::unix::net::UnixListener::bind(&socket_path).unwrap();
    let server = Server::start(site.root(), &[]);
    // A FIFO must neither block the worker nor be read.
    assert_eq!(get(&server, "/pipe").status, 403);
    assert_eq!(get(&server, "/sock").status, 403);
    assert_eq!(get(&server, "/1k.bin").status, 200);
}

#[test]
fn the_document_root_itself_cannot_be_escaped_through_the_host_field() {
    let site = Site::new();
    let server = Server::start(site.root(), &[]);
    let mut stream = server.connect();
    stream
        .write_all(b"GET /1k.bin HTTP/1.1\r\nHost: ../../etc\r\nConnection: close\r\n\r\n")
        .unwrap();
    let resp = read_responses(&mut stream, 1, false).remove(0);
    assert_eq!(resp.status, 400);
}
