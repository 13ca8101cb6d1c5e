//! Hostile clients the tests build themselves (#51), and what the server process holds while
//! they run. HTTP/2 is served only under TLS (ALPN h2), so its clients are raw frames written
//! over rustls: no HTTP/2 library would send a header block that never ends or a million
//! PINGs. What the server holds is read from the kernel: its resident set
//! (`/proc/PID/status`) and the unsent bytes of each of its sockets (`/proc/net/tcp`'s
//! tx_queue, what `ss` shows as Send-Q: for a connected socket, the bytes written and not yet
//! acknowledged).
#![allow(dead_code)]

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub type Tls = tokio_rustls::client::TlsStream<TcpStream>;

/// The client connection preface (RFC 9113 §3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// Frame types (RFC 9113 §6).
pub const DATA: u8 = 0;
pub const HEADERS: u8 = 1;
pub const PRIORITY: u8 = 2;
pub const SETTINGS: u8 = 4;
pub const PING: u8 = 6;
pub const GOAWAY: u8 = 7;
pub const WINDOW_UPDATE: u8 = 8;
pub const CONTINUATION: u8 = 9;
/// Flags.
pub const END_STREAM: u8 = 0x1;
pub const ACK: u8 = 0x1;
pub const END_HEADERS: u8 = 0x4;
/// GOAWAY's error code for a peer that behaves in a way that may be abuse (RFC 9113 §7).
pub const ENHANCE_YOUR_CALM: u32 = 0xb;

/// A self-signed certificate for localhost, written as PEM files in `dir`.
pub struct Cert {
    pub cert: PathBuf,
    pub key: PathBuf,
    der: CertificateDer<'static>,
}

impl Cert {
    pub fn new(dir: &Path) -> Cert {
        let made = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
        std::fs::write(&cert, made.cert.pem()).unwrap();
        std::fs::write(&key, made.key_pair.serialize_pem()).unwrap();
        Cert {
            cert,
            key,
            der: made.cert.der().clone(),
        }
    }

    /// `webscope serve`'s flags for this certificate.
    pub fn flags(&self) -> [&str; 4] {
        [
            "--tls-cert",
            self.cert.to_str().unwrap(),
            "--tls-key",
            self.key.to_str().unwrap(),
        ]
    }

    /// A client that trusts this certificate and offers `alpn`.
    pub fn client(&self, alpn: &[u8]) -> Client {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(self.der.clone()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![alpn.to_vec()];
        Client(tokio_rustls::TlsConnector::from(Arc::new(config)))
    }
}

/// A TLS client configuration.
#[derive(Clone)]
pub struct Client(tokio_rustls::TlsConnector);

impl Client {
    pub async fn connect(&self, addr: SocketAddr) -> io::Result<Tls> {
        self.over(TcpStream::connect(addr).await?).await
    }

    /// The handshake over an already connected socket.
    pub async fn over(&self, tcp: TcpStream) -> io::Result<Tls> {
        let name = ServerName::try_from("localhost").unwrap();
        self.0.connect(name, tcp).await
    }
}

/// One frame: header fields and payload.
pub fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = (payload.len() as u32).to_be_bytes()[1..].to_vec();
    out.extend_from_slice(&[kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// The preface and an empty SETTINGS frame, then the ack of the server's.
pub fn opening() -> Vec<u8> {
    let mut out = PREFACE.to_vec();
    out.extend(frame(SETTINGS, 0, 0, &[]));
    out.extend(frame(SETTINGS, ACK, 0, &[]));
    out
}

/// The HPACK block of `GET https://localhost{path}` (static-table method and scheme; path
/// and authority as literals without indexing, so the block means the same on any
/// connection).
pub fn get_block(path: &str) -> Vec<u8> {
    assert!(path.len() < 127);
    let mut block = vec![0x82, 0x87, 0x04, path.len() as u8];
    block.extend_from_slice(path.as_bytes());
    block.extend_from_slice(&[0x01, 9]);
    block.extend_from_slice(b"localhost");
    block
}

/// The wire size of one of [`flood_fields`]'s fields (128 fill a 16 000-byte frame exactly),
/// and its size in the decoded list (RFC 9113 §6.5.2 counts 32 more per field).
pub const FIELD_BYTES: usize = 125;
pub const FIELD_DECODED: usize = 7 + 115 + 32;

/// `n` header fields `x-flood: aaa…` (115 bytes of value) as HPACK literals without
/// indexing.
pub fn flood_fields(n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(n * FIELD_BYTES);
    for _ in 0..n {
        out.extend_from_slice(&[0x00, 7]);
        out.extend_from_slice(b"x-flood");
        out.push(115);
        out.extend_from_slice(&[b'a'; 115]);
    }
    out
}

/// A frame read back.
#[derive(Debug)]
pub struct Frame {
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
    pub payload: Vec<u8>,
}

impl Frame {
    /// A GOAWAY's error code.
    pub fn goaway_code(&self) -> Option<u32> {
        (self.kind == GOAWAY && self.payload.len() >= 8)
            .then(|| u32::from_be_bytes(self.payload[4..8].try_into().unwrap()))
    }
}

/// Reads the next frame; `None` at the end of the stream (or a reset: the server is gone
/// either way).
pub async fn read_frame<R: AsyncRead + Unpin>(io: &mut R) -> Option<Frame> {
    let mut head = [0u8; 9];
    io.read_exact(&mut head).await.ok()?;
    let length = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
    let mut payload = vec![0; length];
    io.read_exact(&mut payload).await.ok()?;
    Some(Frame {
        kind: head[3],
        flags: head[4],
        stream: u32::from_be_bytes(head[5..9].try_into().unwrap()) & 0x7fff_ffff,
        payload,
    })
}

/// The status at the head of a response header block from h2's encoder: an indexed
/// `:status` (RFC 7541 Appendix A, entries 8-14) or a literal with the indexed name 8, its
/// value plain or Huffman-coded.
pub fn status_of(block: &[u8]) -> Option<u16> {
    const INDEXED: [u16; 7] = [200, 204, 206, 304, 400, 404, 500];
    let first = *block.first()?;
    if first & 0x80 != 0 {
        return INDEXED
            .get(usize::from(first & 0x7f).checked_sub(8)?)
            .copied();
    }
    // 01xxxxxx (incremental indexing, 6-bit name index) or 0000xxxx / 0001xxxx (4-bit).
    let name = if first & 0x40 != 0 {
        first & 0x3f
    } else {
        first & 0x0f
    };
    let length = *block.get(1)?;
    let value = block.get(2..2 + usize::from(length & 0x7f))?;
    if name != 8 {
        return None;
    }
    if length & 0x80 == 0 {
        return std::str::from_utf8(value).ok()?.parse().ok();
    }
    huffman_digits(value)
}

/// Decodes a Huffman-coded string of digits (RFC 7541 Appendix B: '0'-'2' are the 5-bit
/// codes 0-2, '3'-'9' the 6-bit codes 25-31); the padding is the end-of-string code's
/// leading ones.
fn huffman_digits(bytes: &[u8]) -> Option<u16> {
    let bits: Vec<u8> = bytes
        .iter()
        .flat_map(|b| (0..8).rev().map(move |i| (b >> i) & 1))
        .collect();
    let (mut at, mut n) = (0, 0u16);
    while bits[at..].contains(&0) {
        if bits.len() - at < 5 {
            return None;
        }
        let code = |len: usize| {
            let end = (at + len).min(bits.len());
            bits[at..end].iter().fold(0u8, |c, &b| c << 1 | b)
        };
        let (digit, len) = match (code(5), code(6)) {
            (c @ 0..=2, _) => (c, 5),
            (_, c @ 25..=31) if bits.len() - at >= 6 => (c - 22, 6),
            _ => return None,
        };
        n = n * 10 + u16::from(digit);
        at += len;
    }
    Some(n)
}

/// Reads frames until stream `stream`'s response has ended: its status, or `None` if the
/// connection ended first (a GOAWAY, or closed).
pub async fn response_status<R: AsyncRead + Unpin>(io: &mut R, stream: u32) -> Option<u16> {
    let mut status = None;
    loop {
        let frame = read_frame(io).await?;
        if frame.kind == GOAWAY {
            return None;
        }
        if frame.stream != stream {
            continue;
        }
        if frame.kind == HEADERS && status.is_none() {
            status = status_of(&frame.payload);
        }
        if matches!(frame.kind, HEADERS | DATA) && frame.flags & END_STREAM != 0 {
            return status;
        }
    }
}

/// GET `path` on a new HTTP/2 connection: the status.
pub async fn h2_get(client: &Client, addr: SocketAddr, path: &str) -> Option<u16> {
    let mut tls = client.connect(addr).await.ok()?;
    let mut out = opening();
    out.extend(frame(
        HEADERS,
        END_STREAM | END_HEADERS,
        1,
        &get_block(path),
    ));
    tls.write_all(&out).await.ok()?;
    response_status(&mut tls, 1).await
}

/// A process's resident set now and at its peak, in KiB (VmRSS, VmHWM).
pub fn rss_kib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in /proc/{pid}/status"))
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// A TCP socket as `/proc/net/tcp` lists it.
#[derive(Debug, Clone, Copy)]
pub struct Queued {
    /// The kernel's TCP state number (1 ESTABLISHED, 4 FIN-WAIT-1, 7 CLOSE).
    pub state: u8,
    pub remote_port: u16,
    /// Bytes written and not acknowledged (Send-Q).
    pub send_q: u64,
}

/// Every IPv4 TCP socket whose local port is `port` and that is not listening (the
/// server's side of its connections, orphans in FIN-WAIT-1 included), with its Send-Q.
pub fn server_sockets(port: u16) -> Vec<Queued> {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap();
    let hex_port = |addr: &str| u16::from_str_radix(addr.rsplit(':').next()?, 16).ok();
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let state = u8::from_str_radix(f.get(3)?, 16).ok()?;
            let (tx, _) = f.get(4)?.split_once(':')?;
            (hex_port(f.get(1)?)? == port && state != 10).then_some(Queued {
                state,
                remote_port: hex_port(f.get(2)?)?,
                send_q: u64::from_str_radix(tx, 16).ok()?,
            })
        })
        .collect()
}

/// A blocking socket connected to `addr` whose receive buffer was set to `rcvbuf` bytes
/// before the handshake (so that the window it advertises stays that small).
pub fn connect_small(addr: SocketAddr, rcvbuf: i32) -> std::net::TcpStream {
    let SocketAddr::V4(v4) = addr else {
        panic!("the tests listen on 127.0.0.1");
    };
    // SAFETY: plain socket calls on a descriptor this function owns until it is wrapped;
    // the option and the address are valid for their calls.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0, "socket: {}", io::Error::last_os_error());
        let stream = std::net::TcpStream::from_raw_fd(fd);
        let rc = libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&rcvbuf as *const i32).cast(),
            std::mem::size_of::<i32>() as libc::socklen_t,
        );
        assert_eq!(rc, 0, "SO_RCVBUF: {}", io::Error::last_os_error());
        let sin = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: v4.port().to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from_ne_bytes(v4.ip().octets()),
            },
            sin_zero: [0; 8],
        };
        let rc = libc::connect(
            fd,
            (&sin as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        );
        assert_eq!(rc, 0, "connect: {}", io::Error::last_os_error());
        stream
    }
}

/// A client socket's TCP state (TCP_INFO; 1 is ESTABLISHED, 7 CLOSE after a reset).
pub fn tcp_state(socket: &impl AsRawFd) -> u8 {
    // SAFETY: a zeroed tcp_info is valid; getsockopt fills at most `len` bytes of it.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: the descriptor is the caller's open socket; info and len are valid.
    let rc = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::SOL_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    assert_eq!(rc, 0, "TCP_INFO: {}", io::Error::last_os_error());
    info.tcpi_state
}

/// Writes `bytes`; false once the server has closed or reset the connection.
pub async fn send<W: tokio::io::AsyncWrite + Unpin>(io: &mut W, bytes: &[u8]) -> bool {
    io.write_all(bytes).await.is_ok() && io.flush().await.is_ok()
}
