//! Netlink sock_diag: the kernel's binary socket table, filtered before it is copied out.
//!
//! Requests are built by hand rather than with `netlink-packet-sock-diag`: that crate has no
//! bytecode filters and no legacy (`TCPDIAG_GETSOCK`) request, and its parser allocates per
//! socket, while this is the monitor's one hot path (30 000 sockets ten times a second). The
//! tests check the v2 request against the crate's encoding.
//!
//! Each per-port count is one dump: the legacy request type asks for both address families at
//! once (one walk of the kernel's established-socket hash table instead of two), and a
//! bytecode program keeps only the sockets whose source or destination port is one of ours.
//! Kernels without the legacy type get one v2 dump per family.

use std::io;

use netlink_sys::{protocols::NETLINK_SOCK_DIAG, Socket, SocketAddr};

use super::{ListenQueue, PortCounts, SocketSeen, Tally, TcpState};

const NLMSG_HDRLEN: usize = 16;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLM_F_REQUEST: u16 = 0x01;
const NLM_F_DUMP: u16 = 0x300;
/// The legacy request: `struct inet_diag_req`, family left unspecified (both v4 and v6).
const TCPDIAG_GETSOCK: u16 = 18;
const SOCK_DIAG_BY_FAMILY: u16 = 20;
const INET_DIAG_REQ_BYTECODE: u16 = 1;
const INET_DIAG_BC_S_GE: u8 = 2;
const INET_DIAG_BC_S_LE: u8 = 3;
const INET_DIAG_BC_D_GE: u8 = 4;
const INET_DIAG_BC_D_LE: u8 = 5;
const INET_DIAG_BC_JMP: u8 = 1;
/// The reply attribute with the socket's memory counters, drops among them.
const INET_DIAG_SKMEMINFO: u16 = 7;
/// The request's extension bit asking for it (`1 << (INET_DIAG_SKMEMINFO - 1)`).
const SKMEMINFO_EXT: u8 = 1 << (INET_DIAG_SKMEMINFO - 1);
/// `struct inet_diag_msg`: 4 bytes of family/state/timer/retrans, the 48-byte socket id, then
/// expires, rqueue, wqueue, uid, inode.
const DIAG_MSG_LEN: usize = 72;
/// Every state bit (1 << state for states 1..=11); the kernel adds request sockets itself.
pub(crate) const ALL_STATES: u32 = 0xffe;
const LISTEN_ONLY: u32 = 1 << 10;

/// A netlink sock_diag socket and its receive buffer, reused for every dump.
pub struct SockDiag {
    socket: Socket,
    buf: Vec<u8>,
    seq: u32,
    /// Whether the kernel takes the legacy one-walk request (probed once).
    legacy: bool,
}

impl SockDiag {
    /// Opens the netlink socket (no privilege needed).
    pub fn open() -> io::Result<SockDiag> {
        let socket = connect()?;
        Ok(SockDiag {
            socket,
            // Dump replies come in skbs of at most 32 KiB; twice that never truncates.
            buf: vec![0; 64 * 1024],
            seq: 0,
            legacy: true,
        })
    }

    /// Checks that the kernel answers, and whether it takes the legacy request.
    pub fn probe(&mut self) -> io::Result<()> {
        let request = legacy_request(LISTEN_ONLY, &[], self.next_seq());
        if self.dump(&request, |_| {}).is_err() {
            self.legacy = false;
            for family in [libc::AF_INET, libc::AF_INET6] {
                let request = v2_request(family as u8, LISTEN_ONLY, &[], self.next_seq());
                self.dump(&request, |_| {})?;
            }
        }
        Ok(())
    }

    /// Counts the sockets of `ports` by state, both sides, and their listen queues.
    pub fn port_states(
        &mut self,
        ports: &[u16],
    ) -> io::Result<(Vec<PortCounts>, Vec<ListenQueue>)> {
        let mut tally = Tally::new(ports);
        self.each(ALL_STATES, ports, |socket| tally.add(socket))?;
        Ok((tally.ports, tally.listen))
    }

    /// The inodes of the listening sockets of `port` (IPv4 and IPv6): only the kernel's small
    /// listen table is walked.
    pub fn listener_inodes(&mut self, port: u16) -> io::Result<Vec<u64>> {
        let mut inodes = Vec::new();
        self.each(LISTEN_ONLY, &[port], |socket| {
            if socket.local_port == port && socket.state == TcpState::Listen {
                inodes.push(socket.inode);
            }
        })?;
        Ok(inodes)
    }

    /// The listen queues of `ports`: only the kernel's small listen table is walked.
    pub fn listen_queues(&mut self, ports: &[u16]) -> io::Result<Vec<ListenQueue>> {
        let mut tally = Tally::new(ports);
        self.each(LISTEN_ONLY, ports, |socket| tally.add(socket))?;
        Ok(tally.listen)
    }

    /// Every socket in `states` with a source or destination port in `ports`.
    pub(crate) fn each(
        &mut self,
        states: u32,
        ports: &[u16],
        mut visit: impl FnMut(SocketSeen),
    ) -> io::Result<()> {
        let filter = port_filter(ports);
        if self.legacy {
            let request = legacy_request(states, &filter, self.next_seq());
            return self.dump(&request, &mut visit);
        }
        for family in [libc::AF_INET, libc::AF_INET6] {
            let request = v2_request(family as u8, states, &filter, self.next_seq());
            self.dump(&request, &mut visit)?;
        }
        Ok(())
    }

    fn next_seq(&mut self) -> u32 {
        self.seq = self.seq.wrapping_add(1);
        self.seq
    }

    /// Sends one dump request and reads replies until the kernel says it is done.
    fn dump(&mut self, request: &[u8], mut visit: impl FnMut(SocketSeen)) -> io::Result<()> {
        self.dump_raw(request, &mut |msg| {
            if let Some(socket) = parse_diag_msg(msg) {
                visit(socket);
            }
        })
    }

    /// [`SockDiag::dump`] handing each reply's whole `inet_diag_msg`, attributes included.
    fn dump_raw(&mut self, request: &[u8], visit: &mut impl FnMut(&[u8])) -> io::Result<()> {
        self.socket.send(request, 0)?;
        let seq = self.seq;
        loop {
            let len = {
                let mut window: &mut [u8] = &mut self.buf[..];
                self.socket.recv(&mut window, 0)?
            };
            if len > self.buf.len() {
                return Err(io::Error::other("sock_diag reply larger than the buffer"));
            }
            match walk_raw(&self.buf[..len], seq, visit) {
                Walk::More => continue,
                Walk::Done => return Ok(()),
                Walk::Failed(err) => {
                    // Replies of an aborted dump may still be queued: start afresh.
                    self.reopen()?;
                    return Err(err);
                }
            }
        }
    }

    /// Each port's listen sockets' drop counters summed (`sk_drops`, as `ss -m` shows it
    /// as `d`): `None` for a port nothing listens on. A listener counts every SYN it refuses
    /// and every handshake it drops (an overflow at the last ACK counts twice: once where the
    /// kernel counts ListenDrops, once where it discards the packet).
    pub fn listen_drops(&mut self, ports: &[u16]) -> io::Result<Vec<Option<u64>>> {
        let filter = port_filter(ports);
        let mut drops: Vec<Option<u64>> = vec![None; ports.len()];
        let mut visit = |msg: &[u8]| {
            let Some(socket) = parse_diag_msg(msg) else {
                return;
            };
            if socket.state != TcpState::Listen {
                return;
            }
            let Some(d) = meminfo_drops(msg) else {
                return;
            };
            if let Some(i) = ports.iter().position(|p| *p == socket.local_port) {
                drops[i] = Some(drops[i].unwrap_or(0) + u64::from(d));
            }
        };
        if self.legacy {
            let mut request = legacy_request(LISTEN_ONLY, &filter, self.next_seq());
            request[NLMSG_HDRLEN + 3] = SKMEMINFO_EXT;
            self.dump_raw(&request, &mut visit)?;
        } else {
            for family in [libc::AF_INET, libc::AF_INET6] {
                let mut request = v2_request(family as u8, LISTEN_ONLY, &filter, self.next_seq());
                request[NLMSG_HDRLEN + 2] = SKMEMINFO_EXT;
                self.dump_raw(&request, &mut visit)?;
            }
        }
        Ok(drops)
    }

    fn reopen(&mut self) -> io::Result<()> {
        self.socket = connect()?;
        Ok(())
    }
}

fn connect() -> io::Result<Socket> {
    let mut socket = Socket::new(NETLINK_SOCK_DIAG)?;
    socket.bind_auto()?;
    socket.connect(&SocketAddr::new(0, 0))?;
    Ok(socket)
}

/// What one datagram of replies said.
#[derive(Debug)]
pub(crate) enum Walk {
    /// More datagrams follow.
    More,
    /// The dump is complete.
    Done,
    /// The kernel refused the request, or the reply is malformed.
    Failed(io::Error),
}

/// Visits the sockets in one datagram of dump replies (several netlink messages).
#[cfg(test)]
pub(crate) fn walk_replies(data: &[u8], seq: u32, visit: &mut impl FnMut(SocketSeen)) -> Walk {
    walk_raw(data, seq, &mut |msg: &[u8]| {
        if let Some(socket) = parse_diag_msg(msg) {
            visit(socket);
        }
    })
}

/// [`walk_replies`] handing each socket's whole message.
fn walk_raw(mut data: &[u8], seq: u32, visit: &mut impl FnMut(&[u8])) -> Walk {
    while data.len() >= NLMSG_HDRLEN {
        let len = u32_ne(data, 0) as usize;
        let kind = u16::from_ne_bytes([data[4], data[5]]);
        if len < NLMSG_HDRLEN || len > data.len() {
            return Walk::Failed(io::Error::other("malformed sock_diag reply"));
        }
        let payload = &data[NLMSG_HDRLEN..len];
        if u32_ne(data, 8) == seq {
            match kind {
                NLMSG_DONE => {
                    // A dump that failed part-way says so in its DONE message.
                    return match payload
                        .get(..4)
                        .map(|b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
                    {
                        Some(errno) if errno < 0 => {
                            Walk::Failed(io::Error::from_raw_os_error(-errno))
                        }
                        _ => Walk::Done,
                    };
                }
                NLMSG_ERROR => {
                    let errno = payload
                        .get(..4)
                        .map_or(0, |b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]));
                    return Walk::Failed(if errno < 0 {
                        io::Error::from_raw_os_error(-errno)
                    } else {
                        io::Error::other("sock_diag acknowledged a dump without replying")
                    });
                }
                _ => visit(payload),
            }
        }
        let aligned = (len + 3) & !3;
        data = data.get(aligned..).unwrap_or(&[]);
    }
    Walk::More
}

/// The fields we count from one `struct inet_diag_msg`.
pub(crate) fn parse_diag_msg(msg: &[u8]) -> Option<SocketSeen> {
    if msg.len() < DIAG_MSG_LEN {
        return None;
    }
    Some(SocketSeen {
        state: TcpState::from_kernel(msg[1])?,
        // Ports are in network byte order.
        local_port: u16::from_be_bytes([msg[4], msg[5]]),
        remote_port: u16::from_be_bytes([msg[6], msg[7]]),
        rqueue: u32_ne(msg, 56),
        wqueue: Some(u32_ne(msg, 60)),
        inode: u64::from(u32_ne(msg, 68)),
    })
}

/// `sk_drops` from a reply's `INET_DIAG_SKMEMINFO` attribute (`SK_MEMINFO_DROPS`, the 9th
/// u32), if the reply has one.
fn meminfo_drops(msg: &[u8]) -> Option<u32> {
    let mut at = DIAG_MSG_LEN;
    while at + 4 <= msg.len() {
        let len = usize::from(u16::from_ne_bytes([msg[at], msg[at + 1]]));
        let kind = u16::from_ne_bytes([msg[at + 2], msg[at + 3]]);
        if len < 4 || at + len > msg.len() {
            return None;
        }
        if kind == INET_DIAG_SKMEMINFO && len >= 4 + 9 * 4 {
            return Some(u32_ne(msg, at + 4 + 8 * 4));
        }
        at += (len + 3) & !3;
    }
    None
}

fn u32_ne(data: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]])
}

/// A bytecode program accepting sockets whose source or destination port is in `ports`
/// (none: every socket). Each term is `X >= p`, `X <= p`, then a jump to the end (accept);
/// a failed comparison falls through to the next term, and past the last term rejects.
pub(crate) fn port_filter(ports: &[u16]) -> Vec<u8> {
    const TERM: usize = 20;
    let terms: Vec<(u8, u8, u16)> = ports
        .iter()
        .flat_map(|&p| {
            [
                (INET_DIAG_BC_S_GE, INET_DIAG_BC_S_LE, p),
                (INET_DIAG_BC_D_GE, INET_DIAG_BC_D_LE, p),
            ]
        })
        .collect();
    let total = terms.len() * TERM;
    let mut code = Vec::with_capacity(total);
    for (i, (ge, le, port)) in terms.iter().enumerate() {
        let start = i * TERM;
        let next_term = |at: usize| -> u16 {
            // From offset `at`, the next term; past the last one, 4 bytes beyond the end
            // (which the kernel reads as "reject").
            let target = start + TERM;
            let extra = if target == total { 4 } else { 0 };
            (target - at + extra) as u16
        };
        push_op(&mut code, *ge, 8, next_term(start));
        push_op(&mut code, 0, 0, *port);
        push_op(&mut code, *le, 8, next_term(start + 8));
        push_op(&mut code, 0, 0, *port);
        push_op(
            &mut code,
            INET_DIAG_BC_JMP,
            4,
            (total - (start + 16)) as u16,
        );
    }
    code
}

fn push_op(code: &mut Vec<u8>, op: u8, yes: u8, no: u16) {
    code.push(op);
    code.push(yes);
    code.extend_from_slice(&no.to_ne_bytes());
}

fn header(buf: &mut Vec<u8>, kind: u16, seq: u32) {
    buf.extend_from_slice(&0u32.to_ne_bytes()); // length, patched at the end
    buf.extend_from_slice(&kind.to_ne_bytes());
    buf.extend_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
    buf.extend_from_slice(&seq.to_ne_bytes());
    buf.extend_from_slice(&0u32.to_ne_bytes());
}

fn socket_id(buf: &mut Vec<u8>) {
    // Ports, addresses, interface: zero matches anything; the cookie's "none" is all ones.
    buf.extend_from_slice(&[0; 40]);
    buf.extend_from_slice(&[0xff; 8]);
}

fn finish(mut buf: Vec<u8>, bytecode: &[u8]) -> Vec<u8> {
    if !bytecode.is_empty() {
        let attr_len = 4 + bytecode.len();
        buf.extend_from_slice(&(attr_len as u16).to_ne_bytes());
        buf.extend_from_slice(&INET_DIAG_REQ_BYTECODE.to_ne_bytes());
        buf.extend_from_slice(bytecode);
    }
    let len = buf.len() as u32;
    buf[..4].copy_from_slice(&len.to_ne_bytes());
    buf
}

/// `struct inet_diag_req_v2` for one address family.
pub(crate) fn v2_request(family: u8, states: u32, bytecode: &[u8], seq: u32) -> Vec<u8> {
    let mut buf = Vec::with_capacity(NLMSG_HDRLEN + 56 + 4 + bytecode.len());
    header(&mut buf, SOCK_DIAG_BY_FAMILY, seq);
    buf.extend_from_slice(&[family, libc::IPPROTO_TCP as u8, 0, 0]);
    buf.extend_from_slice(&states.to_ne_bytes());
    socket_id(&mut buf);
    finish(buf, bytecode)
}

/// The legacy `struct inet_diag_req` (family unspecified): both families in one walk.
pub(crate) fn legacy_request(states: u32, bytecode: &[u8], seq: u32) -> Vec<u8> {
    let mut buf = Vec::with_capacity(NLMSG_HDRLEN + 60 + 4 + bytecode.len());
    header(&mut buf, TCPDIAG_GETSOCK, seq);
    buf.extend_from_slice(&[0, 0, 0, 0]); // family, src_len, dst_len, ext
    socket_id(&mut buf);
    buf.extend_from_slice(&states.to_ne_bytes());
    buf.extend_from_slice(&0u32.to_ne_bytes()); // dbs
    finish(buf, bytecode)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a bytecode program the way the kernel's `inet_diag_bc_run` does.
    fn run_filter(code: &[u8], sport: u16, dport: u16) -> bool {
        let mut at = 0usize;
        let mut len = code.len() as i64;
        while len > 0 {
            let op = code[at];
            let yes_step = code[at + 1] as usize;
            let no_step = u16::from_ne_bytes([code[at + 2], code[at + 3]]) as usize;
            let operand = || u16::from_ne_bytes([code[at + 6], code[at + 7]]);
            let yes = match op {
                INET_DIAG_BC_JMP => false,
                INET_DIAG_BC_S_GE => sport >= operand(),
                INET_DIAG_BC_S_LE => sport <= operand(),
                INET_DIAG_BC_D_GE => dport >= operand(),
                INET_DIAG_BC_D_LE => dport <= operand(),
                other => panic!("unexpected op {other}"),
            };
            let step = if yes { yes_step } else { no_step };
            at += step;
            len -= step as i64;
        }
        len == 0
    }

    /// The kernel's `inet_diag_bc_audit`: every jump lands on an op reachable by `yes` steps.
    fn audit(code: &[u8]) -> bool {
        let reachable: Vec<usize> = {
            let mut v = vec![0];
            let mut at = 0;
            while at < code.len() {
                at += code[at + 1] as usize;
                v.push(at);
            }
            v
        };
        let mut at = 0;
        while at < code.len() {
            let len = code.len() - at;
            let yes = code[at + 1] as usize;
            let no = u16::from_ne_bytes([code[at + 2], code[at + 3]]) as usize;
            let min = if code[at] == INET_DIAG_BC_JMP { 4 } else { 8 };
            if no < min || no > len + 4 || no % 4 != 0 || yes < min || yes > len + 4 || yes % 4 != 0
            {
                return false;
            }
            if no < len && !reachable.contains(&(at + no)) {
                return false;
            }
            at += yes;
        }
        at == code.len()
    }

    #[test]
    fn port_filter_accepts_either_side_of_listed_ports_only() {
        let code = port_filter(&[80, 8080]);
        assert!(audit(&code), "the kernel would refuse this bytecode");
        assert!(run_filter(&code, 80, 51000));
        assert!(run_filter(&code, 51000, 80));
        assert!(run_filter(&code, 8080, 0));
        assert!(run_filter(&code, 40000, 8080));
        assert!(!run_filter(&code, 81, 79));
        assert!(!run_filter(&code, 8081, 443));
        assert!(port_filter(&[]).is_empty());
    }

    #[test]
    fn v2_request_matches_the_netlink_crate_encoding() {
        use netlink_packet_core::{NetlinkHeader, NetlinkMessage, NetlinkPayload};
        use netlink_packet_sock_diag::{
            constants::*,
            inet::{ExtensionFlags, InetRequest, SocketId, StateFlags},
            SockDiagMessage,
        };
        let mut header = NetlinkHeader::default();
        header.flags = NLM_F_REQUEST | NLM_F_DUMP;
        header.sequence_number = 7;
        let mut message = NetlinkMessage::new(
            header,
            NetlinkPayload::from(SockDiagMessage::InetRequest(InetRequest {
                family: AF_INET,
                protocol: IPPROTO_TCP,
                extensions: ExtensionFlags::empty(),
                states: StateFlags::from_bits_truncate(ALL_STATES),
                socket_id: SocketId::new_v4(),
            })),
        );
        message.finalize();
        let mut theirs = vec![0; message.buffer_len()];
        message.serialize(&mut theirs);
        let mut ours = v2_request(libc::AF_INET as u8, ALL_STATES, &[], 7);
        // The crate leaves the cookie zero where `ss` sends "no cookie" (all ones); the kernel
        // ignores the cookie in dumps.
        ours[NLMSG_HDRLEN + 8 + 40..NLMSG_HDRLEN + 8 + 48].fill(0);
        assert_eq!(ours, theirs);
    }

    #[test]
    fn replies_are_parsed_and_errors_reported() {
        let mut msg = [0u8; DIAG_MSG_LEN];
        msg[0] = libc::AF_INET as u8;
        msg[1] = 6; // TIME_WAIT
        msg[4..6].copy_from_slice(&8080u16.to_be_bytes());
        msg[6..8].copy_from_slice(&40000u16.to_be_bytes());
        let mut data = Vec::new();
        for (kind, payload) in [
            (SOCK_DIAG_BY_FAMILY, &msg[..]),
            (SOCK_DIAG_BY_FAMILY, &msg[..]),
        ] {
            data.extend_from_slice(&((NLMSG_HDRLEN + payload.len()) as u32).to_ne_bytes());
            data.extend_from_slice(&kind.to_ne_bytes());
            data.extend_from_slice(&[0, 0]);
            data.extend_from_slice(&5u32.to_ne_bytes());
            data.extend_from_slice(&[0; 4]);
            data.extend_from_slice(payload);
        }
        let mut seen = Vec::new();
        assert!(matches!(
            walk_replies(&data, 5, &mut |s| seen.push(s)),
            Walk::More
        ));
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[0].state, TcpState::TimeWait);
        assert_eq!((seen[0].local_port, seen[0].remote_port), (8080, 40000));
        // Another request's replies are skipped.
        seen.clear();
        assert!(matches!(
            walk_replies(&data, 6, &mut |s| seen.push(s)),
            Walk::More
        ));
        assert!(seen.is_empty());

        let mut error = Vec::new();
        error.extend_from_slice(&20u32.to_ne_bytes());
        error.extend_from_slice(&NLMSG_ERROR.to_ne_bytes());
        error.extend_from_slice(&[0, 0]);
        error.extend_from_slice(&5u32.to_ne_bytes());
        error.extend_from_slice(&[0; 4]);
        error.extend_from_slice(&(-libc::EPERM).to_ne_bytes());
        match walk_replies(&error, 5, &mut |_| {}) {
            Walk::Failed(err) => assert_eq!(err.raw_os_error(), Some(libc::EPERM)),
            other => panic!("expected a failure, got {other:?}"),
        }
        let truncated = &data[..10 + NLMSG_HDRLEN];
        assert!(matches!(
            walk_replies(truncated, 5, &mut |_| {}),
            Walk::Failed(_)
        ));
        let mut bad = data.clone();
        bad[..4].copy_from_slice(&4u32.to_ne_bytes());
        assert!(matches!(
            walk_replies(&bad, 5, &mut |_| {}),
            Walk::Failed(_)
        ));
    }

    #[test]
    fn legacy_request_has_the_old_layout() {
        let code = port_filter(&[80]);
        let req = legacy_request(ALL_STATES, &code, 3);
        assert_eq!(req.len(), NLMSG_HDRLEN + 60 + 4 + code.len());
        assert_eq!(u32_ne(&req, 0) as usize, req.len());
        assert_eq!(u16::from_ne_bytes([req[4], req[5]]), TCPDIAG_GETSOCK);
        assert_eq!(u32_ne(&req, NLMSG_HDRLEN + 52), ALL_STATES);
    }
}
#[cfg(test)]
mod drops_tests {
    #[test]
    fn a_listeners_drops_are_read() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let mut d = super::SockDiag::open().unwrap();
        let got = d.listen_drops(&[port]);
        assert_eq!(got.unwrap(), vec![Some(0)]);
    }
}
