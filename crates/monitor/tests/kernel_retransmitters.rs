//! The kernel module's list of the connections that retransmitted most, against known
//! truth: in a network namespace of its own, nftables drops 5 % of what the server sends on
//! one connection only (picked by the client's port), and the server's socket says how many
//! segments it sent again (TCP_INFO's total_retrans) before it closes.
//!
//! Needs root and a network namespace (CI sets WEBSCOPE_REQUIRE_KERNEL and
//! WEBSCOPE_REQUIRE_NETNS); elsewhere it says why it is skipped.
#![cfg(feature = "kernel")]

mod kernel_support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::time::Duration;

use kernel_support::{finish, in_netns, kernel_monitor, nft, serial, tool};

/// The segments `s` has sent again (TCP_INFO's tcpi_total_retrans).
fn total_retrans(s: &TcpStream) -> u64 {
    // SAFETY: tcp_info is plain data; the kernel fills at most `len` bytes of it.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    let rc = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    assert_eq!(rc, 0, "TCP_INFO: {}", std::io::Error::last_os_error());
    u64::from(info.tcpi_total_retrans)
}

const CLEAN: usize = 3;

#[test]
fn the_ipv4_connection_that_lost_packets_is_named_with_its_retransmits() {
    one_lossy_connection_among_clean_ones("127.0.0.1");
}

#[test]
fn the_ipv6_connection_that_lost_packets_is_named_with_its_retransmits() {
    one_lossy_connection_among_clean_ones("::1");
}

fn one_lossy_connection_among_clean_ones(ip: &'static str) {
    let _serial = serial();
    let result = in_netns(move || {
        // One segment per packet, as in kernel.rs's loss test: enough of them to lose.
        let link = tool("ip")
            .args(["link", "set", "lo", "mtu", "1500", "gso_max_segs", "1"])
            .status();
        assert!(
            matches!(&link, Ok(s) if s.success()),
            "ip link set lo: {link:?}"
        );
        let listener = TcpListener::bind((ip, 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        let monitor = kernel_monitor(&[port], &[])?;
        // The lossy connection's client port, fixed before it connects.
        let lossy_local = TcpListener::bind((ip, 0)).unwrap().local_addr().unwrap();
        nft(&format!(
            "table inet loss {{\n chain lose {{\n  type filter hook input priority 0;\n  \
             tcp sport {port} tcp dport {} numgen random mod 100 < 5 drop\n }}\n}}\n",
            lossy_local.port()
        ));
        let serving = std::thread::spawn(move || {
            let mut sent_again = Vec::new();
            for _ in 0..=CLEAN {
                let (mut s, peer) = listener.accept().unwrap();
                let chunk = vec![7u8; 64 * 1024];
                for _ in 0..4 {
                    s.write_all(&chunk).unwrap();
                }
                // The client's byte comes after it has everything: nothing is left to send
                // again, so the count is the one the socket closes with.
                let mut done = [0u8; 1];
                s.read_exact(&mut done).unwrap();
                sent_again.push((peer, total_retrans(&s)));
            }
            sent_again
        });
        let server: SocketAddr = (ip.parse::<std::net::IpAddr>().unwrap(), port).into();
        for i in 0..=CLEAN {
            let socket = socket2::Socket::new(
                socket2::Domain::for_address(server),
                socket2::Type::STREAM,
                None,
            )
            .unwrap();
            if i == 1 {
                socket.set_reuse_address(true).unwrap();
                socket.bind(&lossy_local.into()).unwrap();
            }
            socket.connect(&server.into()).unwrap();
            let mut c: TcpStream = socket.into();
            c.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
            let mut got = vec![0u8; 256 << 10];
            c.read_exact(&mut got).unwrap();
            c.write_all(b".").unwrap();
            let mut rest = Vec::new();
            c.read_to_end(&mut rest).unwrap();
        }
        let sent_again = serving.join().unwrap();
        std::thread::sleep(Duration::from_millis(100));
        Some((finish(monitor), server, lossy_local, sent_again))
    });
    let Some(Some((k, server, lossy, sent_again))) = result else {
        return;
    };
    eprintln!("retransmits by the server's sockets: {sent_again:?}");
    eprintln!("the kernel module's list: {:?}", k.most_retransmitting);
    let (_, truth) = *sent_again.iter().find(|(peer, _)| *peer == lossy).unwrap();
    assert!(truth > 0, "5 % loss made the lossy connection retransmit");
    let first = k
        .most_retransmitting
        .first()
        .expect("a retransmitting connection");
    assert_eq!(
        (first.local, first.peer),
        (server, lossy),
        "the lossy connection first"
    );
    // The count the socket closes with: the one read before the close, plus the server's
    // FIN sent again where the rule dropped it too (1 time in 20), after the count was read.
    assert!(
        (truth..=truth + 2).contains(&first.retrans),
        "the lossy connection's retransmits: {} listed, its socket counted {truth} before its FIN",
        first.retrans
    );
    // The others lost nothing; any of them that retransmitted (a spurious timeout) is
    // listed with its own count.
    for r in &k.most_retransmitting[1..] {
        let (_, n) = sent_again.iter().find(|(peer, _)| *peer == r.peer).unwrap();
        assert_eq!(r.retrans, *n, "{r:?}");
    }
    let p = k.ports.iter().find(|p| p.port == server.port()).unwrap();
    assert_eq!(
        p.conns_retransmitting,
        k.most_retransmitting.len() as u64,
        "{p:?}"
    );
    assert_eq!(k.retransmitting_unlisted, 0);
}
