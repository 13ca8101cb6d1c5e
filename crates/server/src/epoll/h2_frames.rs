//! The frame headers of an HTTP/2 byte stream, found as the bytes go by, however the reads
//! and writes split them: the transport under h2 walks what h2 writes (`h2_meter.rs`, to
//! count each stream's DATA) and what it reads (`h2_guard.rs`, to count control frames).
//! Only the 9-byte headers are looked at (RFC 9113 §4.1): length, type, flags, stream.
//! Parsing, HPACK and every rule of the protocol are h2's.

/// A frame header's length.
pub(crate) const FRAME_HEADER: usize = 9;

/// Frame types (RFC 9113 §6) and the flags looked at.
pub(crate) const DATA: u8 = 0;
pub(crate) const HEADERS: u8 = 1;
pub(crate) const PRIORITY: u8 = 2;
pub(crate) const RST_STREAM: u8 = 3;
pub(crate) const SETTINGS: u8 = 4;
pub(crate) const PUSH_PROMISE: u8 = 5;
pub(crate) const PING: u8 = 6;
pub(crate) const GOAWAY: u8 = 7;
pub(crate) const WINDOW_UPDATE: u8 = 8;
pub(crate) const CONTINUATION: u8 = 9;
pub(crate) const END_STREAM: u8 = 0x1;

/// One frame's header.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Head {
    pub length: usize,
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
}

/// What a walk finds, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Seen {
    /// A frame's header, whole.
    Head(Head),
    /// The next `n` bytes of the payload of the frame whose header this is.
    Payload(Head, usize),
}

/// Where a walk is: inside a header (its bytes so far) or inside a payload.
#[derive(Debug, Default)]
pub(crate) struct Walk {
    header: [u8; FRAME_HEADER],
    have: usize,
    current: Head,
    payload_left: usize,
}

impl Walk {
    /// Walks `bytes`, the next bytes of the stream, telling `seen` what they hold.
    pub(crate) fn feed(&mut self, mut bytes: &[u8], mut seen: impl FnMut(Seen)) {
        while !bytes.is_empty() {
            if self.payload_left == 0 {
                let take = (FRAME_HEADER - self.have).min(bytes.len());
                self.header[self.have..self.have + take].copy_from_slice(&bytes[..take]);
                self.have += take;
                bytes = &bytes[take..];
                if self.have == FRAME_HEADER {
                    self.have = 0;
                    let h = &self.header;
                    self.current = Head {
                        length: u32::from_be_bytes([0, h[0], h[1], h[2]]) as usize,
                        kind: h[3],
                        flags: h[4],
                        stream: u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff,
                    };
                    self.payload_left = self.current.length;
                    seen(Seen::Head(self.current));
                }
                continue;
            }
            let take = self.payload_left.min(bytes.len());
            self.payload_left -= take;
            bytes = &bytes[take..];
            seen(Seen::Payload(self.current, take));
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A frame with a payload of `payload` bytes (all 7).
    pub(crate) fn frame(kind: u8, flags: u8, stream: u32, payload: usize) -> Vec<u8> {
        let mut out = (payload as u32).to_be_bytes()[1..].to_vec();
        out.extend_from_slice(&[kind, flags]);
        out.extend_from_slice(&stream.to_be_bytes());
        out.resize(out.len() + payload, 7);
        out
    }

    #[test]
    fn headers_and_payloads_are_found_however_the_bytes_are_split() {
        let mut bytes = frame(SETTINGS, 0, 0, 6);
        bytes.extend(frame(HEADERS, 5, 1, 20));
        bytes.extend(frame(PING, 0, 0, 8));
        bytes.extend(frame(DATA, 0, 3, 0));
        bytes.extend(frame(DATA, 1, 3, 100));
        for step in [1, 5, 9, 10, 64, bytes.len()] {
            let mut walk = Walk::default();
            let (mut heads, mut payload) = (Vec::new(), 0);
            for chunk in bytes.chunks(step) {
                walk.feed(chunk, |seen| match seen {
                    Seen::Head(h) => heads.push((h.kind, h.flags, h.stream, h.length)),
                    Seen::Payload(_, n) => payload += n,
                });
            }
            assert_eq!(
                heads,
                [
                    (SETTINGS, 0, 0, 6),
                    (HEADERS, 5, 1, 20),
                    (PING, 0, 0, 8),
                    (DATA, 0, 3, 0),
                    (DATA, 1, 3, 100)
                ],
                "step {step}"
            );
            assert_eq!(payload, 134, "step {step}");
        }
    }
}
