//! The open-loop clock: the intended send time of every request, handed out in order to
//! whichever connection is free, as wrk2 does, so a slow server cannot slow the sender.
//!
//! A connection claims the next slot; if the slot's time is still ahead it waits for it (the
//! request is on time, latency counts from the send), and if it has already passed the
//! request was held up by busy connections (latency counts from the slot's time: this is the
//! coordinated-omission correction). Slots nobody claimed before the run ended were never
//! sent and are counted. The state is one cursor; nothing grows with the run.

use std::cell::{Cell, RefCell};
use std::time::{Duration, Instant};

use webscope_workload::Rng;

use crate::config::Arrivals;
use crate::replay::{Next, ReplaySchedule, Slot, NEVER_NS};

/// When a replay's next slot has not been handed over, the engine looks again this soon.
const PENDING: Duration = Duration::from_millis(1);

/// One thread's share of the open-loop schedule.
pub(crate) struct Schedule {
    origin: Instant,
    /// Mean gap between slots, in nanoseconds.
    gap: f64,
    arrivals: Arrivals,
    rng: RefCell<Rng>,
    /// Slots handed out so far.
    claimed: Cell<u64>,
    /// Offset of the next slot from `origin`, in nanoseconds.
    next: Cell<f64>,
    /// A replay: the slots are the log's, each with its own request, handed over by the
    /// replay's feed (`gap` and `arrivals` unused).
    replay: Option<RefCell<ReplaySchedule>>,
}

impl Schedule {
    /// A schedule of `rate` slots per second starting at `origin` (plus `phase` ns, so that
    /// threads' constant schedules interleave instead of coinciding).
    pub(crate) fn new(
        origin: Instant,
        rate: f64,
        phase: f64,
        arrivals: Arrivals,
        seed: u64,
    ) -> Schedule {
        let gap = 1e9 / rate;
        let mut rng = Rng::new(seed);
        let first = match arrivals {
            Arrivals::Constant => phase,
            Arrivals::Poisson => gap * rng.exponential(),
        };
        Schedule {
            origin,
            gap,
            arrivals,
            rng: RefCell::new(rng),
            claimed: Cell::new(0),
            next: Cell::new(first),
            replay: None,
        }
    }

    /// The slots of a replay, this thread's share, from `origin`.
    pub(crate) fn replay(origin: Instant, replay: ReplaySchedule) -> Schedule {
        let mut schedule = Schedule::new(origin, 1.0, 0.0, Arrivals::Constant, 0);
        schedule.replay = Some(RefCell::new(replay));
        schedule
    }

    /// The intended time of the next unclaimed slot. A replay's slot the feed has not handed
    /// over yet is looked for again in a millisecond (it is in the future: the feed reads
    /// ahead of the schedule).
    pub(crate) fn peek(&self) -> Instant {
        let ns = match &self.replay {
            Some(replay) => match replay.borrow_mut().peek() {
                Next::Due(ns, _) => ns,
                Next::Pending => return Instant::now() + PENDING,
                Next::End => NEVER_NS,
            },
            None => self.next.get() as u64,
        };
        self.origin + Duration::from_nanos(ns)
    }

    /// Takes the next slot and returns its intended time (and, in a replay, its request).
    pub(crate) fn claim(&self) -> (Instant, Option<Slot>) {
        let at = self.peek();
        let slot = self
            .replay
            .as_ref()
            .and_then(|r| match r.borrow_mut().peek() {
                Next::Due(_, slot) => Some(slot),
                Next::Pending | Next::End => None,
            });
        self.advance();
        self.claimed.set(self.claimed.get() + 1);
        (at, slot)
    }

    fn advance(&self) {
        if let Some(replay) = &self.replay {
            replay.borrow_mut().advance();
            return;
        }
        let step = match self.arrivals {
            Arrivals::Constant => self.gap,
            Arrivals::Poisson => self.gap * self.rng.borrow_mut().exponential(),
        };
        self.next.set(self.next.get() + step);
    }

    /// How many slots before `stop` were never claimed (consumes them).
    pub(crate) fn unclaimed_before(&self, stop: Instant) -> u64 {
        let mut count = 0;
        while self.peek() < stop {
            self.advance();
            count += 1;
        }
        count
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_slots_are_evenly_spaced_from_the_phase() {
        let origin = Instant::now();
        let s = Schedule::new(origin, 1000.0, 250_000.0, Arrivals::Constant, 1);
        let times: Vec<Duration> = (0..4).map(|_| s.claim().0 - origin).collect();
        assert_eq!(times[0], Duration::from_micros(250));
        assert_eq!(times[3], Duration::from_micros(3250));
        // Slots before 10 ms not yet claimed: 4.25 .. 9.25 ms, six of them.
        assert_eq!(s.unclaimed_before(origin + Duration::from_millis(10)), 6);
    }

    #[test]
    fn poisson_slots_have_the_asked_rate() {
        let origin = Instant::now();
        let s = Schedule::new(origin, 10_000.0, 0.0, Arrivals::Poisson, 3);
        let n = s.unclaimed_before(origin + Duration::from_secs(10));
        assert!((99_000..101_000).contains(&n), "{n}");
    }
}
