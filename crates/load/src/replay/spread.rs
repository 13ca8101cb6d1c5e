//! From logged requests in time order to slots: the distinct requests numbered once
//! ([`Interner`]), each logged second's requests spread evenly within it ([`Spreader`]), and
//! the client key that `--segment` splits by ([`client_key`]). Shared by the plan made in
//! memory, the first pass over a whole log and the run's feed, so that the three number
//! requests and time slots alike.

use std::collections::HashMap;

use super::{ReplayRequest, Slot};

/// A client's key: FNV-1a of its logged address. Stable across processes and builds (a
/// segment of a distributed replay computes the same keys as every other), unlike std's
/// hasher, whose algorithm is not promised.
pub fn client_key(client: &str) -> u32 {
    client.bytes().fold(0x811c_9dc5, |hash: u32, byte| {
        (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193)
    })
}

/// The distinct requests, each numbered at its first sight.
#[derive(Debug, Default)]
pub(crate) struct Interner {
    index: HashMap<ReplayRequest, u32>,
    requests: Vec<ReplayRequest>,
}

impl Interner {
    /// The numbering of a plan's requests, to find them again as the log is read anew.
    pub(crate) fn of(requests: &[ReplayRequest]) -> Interner {
        let index = requests
            .iter()
            .enumerate()
            .map(|(i, r)| (r.clone(), i as u32))
            .collect();
        Interner {
            index,
            requests: Vec::new(),
        }
    }

    /// The number of `request`, new or seen.
    pub(crate) fn intern(&mut self, request: ReplayRequest) -> u32 {
        if let Some(&i) = self.index.get(&request) {
            return i;
        }
        let i = self.requests.len() as u32;
        self.requests.push(request.clone());
        self.index.insert(request, i);
        i
    }

    /// The number of a request seen before (the feed's: the first pass numbered them all).
    pub(crate) fn find(&self, request: &ReplayRequest) -> Option<u32> {
        self.index.get(request).copied()
    }

    pub(crate) fn into_requests(self) -> Vec<ReplayRequest> {
        self.requests
    }
}

/// One logged second's requests, held until the second is over (its count sets the spacing).
#[derive(Debug)]
pub(crate) struct Spreader {
    origin_s: u64,
    speed: f64,
    second: Option<u64>,
    held: Vec<(u32, u16, u32)>,
    /// Requests logged in an earlier second than one already seen (a log out of order
    /// beyond the reader's look-back): sent with the second being read.
    pub(crate) out_of_order: u64,
}

impl Spreader {
    /// Slots offset from second `origin_s` (earlier requests are sent at it), at `speed`.
    pub(crate) fn new(origin_s: u64, speed: f64) -> Spreader {
        Spreader {
            origin_s,
            speed,
            second: None,
            held: Vec::new(),
            out_of_order: 0,
        }
    }

    /// Takes one request logged in `second`; hands out the slots of a second that is over.
    pub(crate) fn push(
        &mut self,
        second: u64,
        request: u32,
        status: u16,
        client: u32,
        out: &mut dyn FnMut(Slot),
    ) {
        match self.second {
            Some(held) if second > held => {
                self.finish(out);
                self.second = Some(second);
            }
            Some(held) if second < held => self.out_of_order += 1,
            Some(_) => {}
            None => self.second = Some(second),
        }
        self.held.push((request, status, client));
    }

    /// Hands out the slots of the second held.
    pub(crate) fn finish(&mut self, out: &mut dyn FnMut(Slot)) {
        let Some(second) = self.second else {
            return;
        };
        let n = self.held.len() as f64;
        let from = second.saturating_sub(self.origin_s) as f64;
        for (j, (request, status, client)) in self.held.drain(..).enumerate() {
            let logged_s = from + j as f64 / n;
            out(Slot {
                at_ns: (logged_s * 1e9 / self.speed) as u64,
                request,
                status,
                client,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_late_request_goes_with_the_second_being_read_and_is_counted() {
        let mut slots = Vec::new();
        let mut s = Spreader::new(100, 2.0);
        for (second, request) in [(100, 0), (101, 1), (101, 2), (100, 3), (103, 4)] {
            s.push(second, request, 200, 7, &mut |slot| slots.push(slot));
        }
        s.finish(&mut |slot| slots.push(slot));
        let at: Vec<(u32, u64)> = slots.iter().map(|s| (s.request, s.at_ns)).collect();
        // Second 101 holds three at 2x: 0.5 s, 0.5 + 1/6 s, 0.5 + 2/6 s.
        assert_eq!(
            at,
            [
                (0, 0),
                (1, 500_000_000),
                (2, 666_666_666),
                (3, 833_333_333),
                (4, 1_500_000_000)
            ]
        );
        assert_eq!(s.out_of_order, 1);
    }

    #[test]
    fn client_keys_are_fnv1a() {
        // FNV-1a's published vectors: "" and "a".
        assert_eq!(client_key(""), 0x811c_9dc5);
        assert_eq!(client_key("a"), 0xe40c_292c);
    }
}
