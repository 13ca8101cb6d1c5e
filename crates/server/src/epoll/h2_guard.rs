//! Floods of HTTP/2 control frames (#51 §3): a client may send SETTINGS, PING,
//! WINDOW_UPDATE, PRIORITY and RST_STREAM frames as fast as it can, and each costs the server
//! a frame to parse and often one to send back (an ACK), while none carries a request. h2
//! answers them all and ends nothing: a client sent 1.47 M SETTINGS frames in 10 s, or 3.6 M
//! PINGs, and kept its connection.
//!
//! The rule, stated once: a connection may send at most
//!
//! > ALLOWANCE + PER_REQUEST × its requests + PER_DATA_SENT × the DATA frames sent to it
//!
//! control frames; one more and it is ended with GOAWAY ENHANCE_YOUR_CALM (`h2.rs`). Control
//! frames are SETTINGS, PING, WINDOW_UPDATE, PRIORITY, RST_STREAM, GOAWAY, PUSH_PROMISE,
//! frames of unknown types, and empty DATA frames that do not end their stream (the "empty
//! frames" flood); a request is a HEADERS frame. As nginx does for PRIORITY (each new stream
//! raises the limit by the streams allowed at once) and Envoy for WINDOW_UPDATE (a few per
//! DATA frame sent), the allowance grows with what the connection is for: a browser sends a
//! handful of control frames per page; a client that releases every DATA frame at once, two
//! WINDOW_UPDATEs per frame (stream and connection). A flood is cut after about a thousand
//! frames, milliseconds of it.
//!
//! The frames are counted as they are read, under h2 (the transport is wrapped by
//! `h2_meter.rs`), from their 9-byte headers: h2 offers no count of the frames it handles.
//! CONTINUATION frames are not counted here: since a header block is capped at `--max-head`,
//! h2 ends a connection whose block runs on.

use super::h2_frames::{self, Head, Seen, Walk};

/// Control frames any connection may send, before any request.
pub(crate) const ALLOWANCE: u64 = 1_000;
/// More for each request (a HEADERS frame).
pub(crate) const PER_REQUEST: u64 = 100;
/// More for each DATA frame sent to the client (its WINDOW_UPDATEs).
pub(crate) const PER_DATA_SENT: u64 = 4;
/// The client connection preface: 24 bytes before the first frame (RFC 9113 §3.4).
const PREFACE: usize = 24;

/// A connection's count of control frames against what it asked for.
#[derive(Debug)]
pub(crate) struct Guard {
    /// Bytes of the preface still to come.
    preface_left: usize,
    walk: Walk,
    control: u64,
    requests: u64,
    data_sent: u64,
    tripped: bool,
}

impl Default for Guard {
    fn default() -> Guard {
        Guard {
            preface_left: PREFACE,
            walk: Walk::default(),
            control: 0,
            requests: 0,
            data_sent: 0,
            tripped: false,
        }
    }
}

impl Guard {
    /// Counts the frames in `bytes`, the next the client sent; true when they take the
    /// connection over its allowance (once: from then on it is ended).
    pub(crate) fn read(&mut self, bytes: &[u8]) -> bool {
        let skip = self.preface_left.min(bytes.len());
        self.preface_left -= skip;
        let (control, requests) = (&mut self.control, &mut self.requests);
        self.walk.feed(&bytes[skip..], |seen| {
            if let Seen::Head(head) = seen {
                match classify(head) {
                    Kind::Control => *control += 1,
                    Kind::Request => *requests += 1,
                    Kind::Other => {}
                }
            }
        });
        if self.tripped || self.control <= self.allowed() {
            return false;
        }
        self.tripped = true;
        true
    }

    /// `frames` DATA frames were written to the client.
    pub(crate) fn sent_data(&mut self, frames: u64) {
        self.data_sent += frames;
    }

    /// The connection has been found flooding.
    pub(crate) fn tripped(&self) -> bool {
        self.tripped
    }

    /// Control frames received so far.
    #[cfg(test)]
    fn control(&self) -> u64 {
        self.control
    }

    fn allowed(&self) -> u64 {
        ALLOWANCE
            .saturating_add(self.requests.saturating_mul(PER_REQUEST))
            .saturating_add(self.data_sent.saturating_mul(PER_DATA_SENT))
    }
}

enum Kind {
    Control,
    Request,
    Other,
}

fn classify(head: Head) -> Kind {
    match head.kind {
        h2_frames::HEADERS => Kind::Request,
        h2_frames::DATA if head.length == 0 && head.flags & h2_frames::END_STREAM == 0 => {
            Kind::Control
        }
        h2_frames::DATA | h2_frames::CONTINUATION => Kind::Other,
        h2_frames::PRIORITY
        | h2_frames::RST_STREAM
        | h2_frames::SETTINGS
        | h2_frames::PUSH_PROMISE
        | h2_frames::PING
        | h2_frames::GOAWAY
        | h2_frames::WINDOW_UPDATE => Kind::Control,
        // Unknown types must be ignored (RFC 9113 §4.1): a flood of them costs all the same.
        _ => Kind::Control,
    }
}

#[cfg(test)]
mod tests {
    use super::super::h2_frames::tests::frame;
    use super::super::h2_frames::{DATA, END_STREAM, HEADERS, PING, SETTINGS, WINDOW_UPDATE};
    use super::*;

    fn preface() -> Vec<u8> {
        let mut out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        out.extend(frame(SETTINGS, 0, 0, 6));
        out
    }

    /// Feeds `frames` copies of `one` a frame at a time: the number at which the guard
    /// trips, if it does.
    fn trips_at(guard: &mut Guard, one: &[u8], frames: u64) -> Option<u64> {
        (1..=frames).find(|_| guard.read(one))
    }

    #[test]
    fn a_flood_without_requests_trips_just_past_the_allowance() {
        for one in [
            frame(PING, 0, 0, 8),
            frame(SETTINGS, 0, 0, 0),
            frame(WINDOW_UPDATE, 0, 0, 4),
            frame(DATA, 0, 1, 0),
            frame(0x42, 0, 0, 3),
        ] {
            let mut guard = Guard::default();
            assert!(!guard.read(&preface()));
            // The opening SETTINGS counted: one fewer to go.
            assert_eq!(trips_at(&mut guard, &one, 2 * ALLOWANCE), Some(ALLOWANCE));
            assert!(guard.tripped());
            // Once only.
            assert!(!guard.read(&one));
        }
    }

    #[test]
    fn requests_and_data_sent_raise_the_allowance_and_data_frames_cost_nothing() {
        let mut guard = Guard::default();
        assert!(!guard.read(&preface()));
        for _ in 0..10 {
            assert!(!guard.read(&frame(HEADERS, 5, 1, 30)));
        }
        guard.sent_data(500);
        // Frames that carry something are free.
        let data = frame(DATA, 0, 1, 100);
        assert_eq!(trips_at(&mut guard, &data, 100_000), None);
        assert!(!guard.read(&frame(DATA, END_STREAM, 1, 0)));
        let allowed = ALLOWANCE + 10 * PER_REQUEST + 500 * PER_DATA_SENT;
        let update = frame(WINDOW_UPDATE, 0, 0, 4);
        assert_eq!(trips_at(&mut guard, &update, 2 * allowed), Some(allowed));
    }

    #[test]
    fn frames_split_across_reads_count_once() {
        let mut bytes = preface();
        for _ in 0..ALLOWANCE {
            bytes.extend(frame(PING, 0, 0, 8));
        }
        let mut guard = Guard::default();
        let tripped = bytes.chunks(7).filter(|c| guard.read(c)).count();
        assert_eq!((tripped, guard.control()), (1, ALLOWANCE + 1));
    }
}
