//! #51 §2: HTTP/1.1 clients that ask for a large file and never read are cut at the send
//! timeout with a reset, on every engine (io_uring, epoll, epoll under TLS in user space and
//! under kTLS), so that no socket keeps its queue once the server has let it go. Before, the
//! server closed them at 3-4 s with `--send-timeout 3s`, but each close queued its FIN
//! behind the bytes the kernel still held: 20 sockets stayed in FIN-WAIT-1 with 3.9 MB of
//! Send-Q each past 60 s (53 MiB of kernel memory `--max-connections` does not count), and
//! the clients saw their connections ESTABLISHED all along.

mod hostile_support;
mod serve_support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use hostile_support::*;
use serve_support::{Server, Site};
use tokio::io::AsyncWriteExt;

const CLIENTS: usize = 20;
/// The clients' receive buffer: their window stays this small.
const RCVBUF: i32 = 4096;
const FILE: u64 = 50 << 20;
const SEND_TIMEOUT: Duration = Duration::from_secs(3);
/// When the queues are looked at, after the requests, and what a socket may keep then.
const LOOK_AFTER: Duration = Duration::from_secs(12);
const KEPT_AT_MOST: u64 = 64 << 10;
const TCP_ESTABLISHED: u8 = 1;
const REQUEST: &[u8] = b"GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\n";

/// A client that asked and reads nothing: its socket, and the TLS session over it if any.
enum Silent {
    Plain(std::net::TcpStream),
    Tls(Box<Tls>),
}

impl Silent {
    fn state(&self) -> u8 {
        match self {
            Silent::Plain(s) => tcp_state(s),
            Silent::Tls(t) => tcp_state(t.get_ref().0),
        }
    }
}

async fn silent(addr: SocketAddr, tls: Option<&Client>) -> Silent {
    let socket = connect_small(addr, RCVBUF);
    match tls {
        None => {
            let mut socket = socket;
            std::io::Write::write_all(&mut socket, REQUEST).unwrap();
            Silent::Plain(socket)
        }
        Some(client) => {
            socket.set_nonblocking(true).unwrap();
            let tcp = tokio::net::TcpStream::from_std(socket).unwrap();
            let mut tls = client.over(tcp).await.unwrap();
            tls.write_all(REQUEST).await.unwrap();
            tls.flush().await.unwrap();
            Silent::Tls(Box::new(tls))
        }
    }
}

/// What one engine came to: per server socket, the most it held queued before the send
/// timeout and what was left at LOOK_AFTER; how many clients were still ESTABLISHED then.
struct Seen {
    queued_before: Vec<u64>,
    left_after: Vec<(u8, u64)>,
    clients_established: usize,
}

fn watch(engine: &[&str], cert: &Cert, tls: bool) -> Seen {
    let site = Site::new();
    std::fs::File::create(site.root().join("big.bin"))
        .unwrap()
        .set_len(FILE)
        .unwrap();
    let mut args = vec!["--send-timeout", "3s"];
    args.extend(engine);
    if tls {
        args.extend(cert.flags());
    }
    let server = Server::start(site.root(), &args);
    let port = server.addr.port();
    let client = cert.client(b"http/1.1");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut clients = Vec::new();
        for _ in 0..CLIENTS {
            clients.push(silent(server.addr, tls.then_some(&client)).await);
        }
        let asked = Instant::now();
        // Before the timeout: the most each server socket held.
        let mut most = std::collections::HashMap::new();
        while asked.elapsed() < SEND_TIMEOUT - Duration::from_millis(500) {
            for s in server_sockets(port) {
                let seen = most.entry(s.remote_port).or_insert(0);
                *seen = (*seen).max(s.send_q);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        tokio::time::sleep(LOOK_AFTER.saturating_sub(asked.elapsed())).await;
        let left_after = server_sockets(port)
            .iter()
            .map(|s| (s.state, s.send_q))
            .collect();
        let clients_established = clients
            .iter()
            .filter(|c| c.state() == TCP_ESTABLISHED)
            .count();
        Seen {
            queued_before: most.into_values().collect(),
            left_after,
            clients_established,
        }
    })
}

#[test]
fn clients_cut_at_the_send_timeout_leave_no_queue_behind_on_every_engine() {
    let dir = tempfile::tempdir().unwrap();
    let cert = Cert::new(dir.path());
    let engines: [(&str, &[&str], bool); 4] = [
        ("io_uring", &["--io", "uring"], false),
        ("epoll", &["--io", "epoll"], false),
        (
            "epoll, TLS in user space",
            &["--io", "epoll", "--disable", "ktls"],
            true,
        ),
        (
            "epoll, kTLS where the kernel has it",
            &["--io", "epoll"],
            true,
        ),
    ];
    let mut results = Vec::new();
    for (name, engine, tls) in engines {
        let seen = watch(engine, &cert, tls);
        let held: u64 = seen.left_after.iter().map(|&(_, q)| q).sum();
        eprintln!(
            "{name}: {} server sockets held at most {:?} KiB each before the timeout; {:?} s \
             after the requests, {} sockets held {} KiB in all (most {:?} KiB; states {:?}), \
             {} clients still ESTABLISHED",
            seen.queued_before.len(),
            seen.queued_before.iter().max().map(|q| q >> 10),
            LOOK_AFTER.as_secs(),
            seen.left_after.len(),
            held >> 10,
            seen.left_after.iter().map(|&(_, q)| q >> 10).max(),
            seen.left_after.iter().map(|&(s, _)| s).collect::<Vec<_>>(),
            seen.clients_established,
        );
        results.push((name, seen));
    }
    for (name, seen) in results {
        // The premise: the clients read nothing, so the server's kernel held their bytes.
        let filled = seen
            .queued_before
            .iter()
            .filter(|&&q| q > KEPT_AT_MOST)
            .count();
        assert_eq!(
            filled, CLIENTS,
            "{name}: not every client left a queue before the timeout: {:?}",
            seen.queued_before
        );
        let kept: Vec<_> = seen
            .left_after
            .iter()
            .filter(|&&(_, q)| q > KEPT_AT_MOST)
            .collect();
        assert!(
            kept.is_empty(),
            "{name}: {} sockets still hold more than 64 KiB (state, bytes): {kept:?}",
            kept.len()
        );
        assert_eq!(
            seen.clients_established, 0,
            "{name}: clients still see their connections open"
        );
    }
}
