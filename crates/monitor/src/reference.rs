//! The machine's own speed, read with a reference loop: a fixed amount of work timed in the
//! CPU time of the thread that does it, on the CPU the server runs on. Issue #33 found that
//! a shared VM runs the same request 9-19 % slower in one search than in another while
//! nothing in /proc moves (no steal, no pressure, no run-queue wait): the host's other
//! tenants take the core's sibling thread, the shared cache and the memory bandwidth, and a
//! guest without hardware counters cannot see it. A fixed loop can: it takes longer.
//!
//! The work is what those tenants slow: random reads over a buffer half the size of a
//! server CPU's last-level cache (so a neighbour's traffic evicts it), and four independent
//! chains of multiplies (throughput, which a busy sibling thread halves). Measured here
//! against nginx's CPU per request at a fixed rate (45 rounds of 3 s, 2-vCPU KVM guest): a
//! single reading says little (correlation 0.2) but the mean of five rounds follows the
//! server (0.8-0.87), so a search's mean over all its probes is the figure to compare.
//!
//! Written by hand, not taken from a benchmark crate: it is the measurement itself, and it
//! must do the same work on every machine and every build (`black_box` keeps the compiler
//! from folding it away).
//!
//! Not for: judging a probe on its own (one reading is too noisy), nor ranking machines
//! against each other (the loop is not a server; it says only whether this machine ran
//! slower than at another time).

use std::hint::black_box;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use webscope_model::stats::Sorted;

/// Words in the buffer the loop reads at random: 16 MiB of `u32`.
const WORDS: usize = 4 << 20;
/// Random reads per sample (about 10 ms on the machine this was written on).
const READS: u64 = 1_500_000;
/// Rounds of the four multiply chains per sample (about 17 ms there).
const MULTIPLIES: u64 = 20_000_000;

/// The reference loop's buffer, filled once.
pub struct Loop {
    words: Vec<u32>,
}

impl Default for Loop {
    fn default() -> Loop {
        Loop::new()
    }
}

impl Loop {
    /// The buffer filled (16 MiB, a few ms).
    pub fn new() -> Loop {
        Loop {
            words: (0..WORDS as u32).collect(),
        }
    }

    /// One sample: the thread's CPU time for the fixed work, milliseconds. Waits for a CPU
    /// do not count; a slower core, cache or memory does.
    pub fn sample(&self) -> f64 {
        let start = thread_cpu_ms();
        let mut x: u64 = 1;
        let mut sum: u64 = 0;
        for _ in 0..READS {
            // A 64-bit LCG (Knuth's MMIX constants): cheap, and its high bits spread the
            // reads over the whole buffer so the prefetcher cannot follow.
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            sum = sum.wrapping_add(u64::from(self.words[(x >> 40) as usize % WORDS]));
        }
        let (mut a, mut b, mut c, mut d) = (1u64, 2u64, 3u64, 4u64);
        for k in 0..black_box(MULTIPLIES) {
            a = a.wrapping_mul(3).wrapping_add(k);
            b = b.wrapping_mul(5).wrapping_add(k);
            c = c.wrapping_mul(7).wrapping_add(k);
            d = d.wrapping_mul(9).wrapping_add(k);
        }
        black_box(sum.wrapping_add(a ^ b ^ c ^ d));
        thread_cpu_ms() - start
    }
}

/// `samples` readings of the loop on a thread of its own, pinned to `cpu` when given (the
/// server's CPU, between probes, when the server is idle), `gap` apart. Empty when the
/// thread could not be started or pinned: the caller says "not measured".
pub fn measure(cpu: Option<usize>, samples: usize, gap: Duration) -> Vec<f64> {
    let run = move || {
        if let Some(cpu) = cpu {
            if !pin(cpu) {
                return Vec::new();
            }
        }
        let work = Loop::new();
        (0..samples)
            .map(|i| {
                if i > 0 {
                    std::thread::sleep(gap);
                }
                work.sample()
            })
            .collect()
    };
    std::thread::Builder::new()
        .name("reference".into())
        .spawn(run)
        .ok()
        .and_then(|t| t.join().ok())
        .unwrap_or_default()
}

/// Readings summed up: how many, their mean, median and 10th and 90th percentiles. The mean is
/// the figure to compare: on the VM this was written on the readings fall in two modes
/// (about 28 and 38 ms, the slower one for seconds at a time), and a median jumps from one
/// mode to the other as the slow share crosses a half, where the mean follows that share.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Speed {
    /// Readings summed up.
    pub samples: usize,
    /// Their mean, ms of the loop's thread CPU time.
    pub mean_ms: f64,
    /// Their median (`webscope_model::stats::median`: the mean of the two middle readings
    /// for an even count).
    pub median_ms: f64,
    /// The 10th percentile (`webscope_model::stats`' nearest rank, a reading as read): the
    /// machine near its fastest.
    pub p10_ms: f64,
    /// The 90th percentile (nearest rank).
    pub p90_ms: f64,
}

impl Speed {
    /// None for no readings.
    pub fn of(readings: &[f64]) -> Option<Speed> {
        // The workspace's one rule for medians and quantiles (finite readings only).
        let sorted = Sorted::new(readings.iter().copied());
        let values = sorted.as_slice();
        Some(Speed {
            samples: sorted.len(),
            mean_ms: values.iter().sum::<f64>() / values.len() as f64,
            median_ms: sorted.median()?,
            p10_ms: sorted.quantile(0.1)?,
            p90_ms: sorted.quantile(0.9)?,
        })
    }

    /// How much slower `self` ran than `other`, as a fraction of `other` (0.12: 12 % slower;
    /// negative when faster).
    pub fn slower_than(&self, other: &Speed) -> f64 {
        self.mean_ms / other.mean_ms - 1.0
    }
}

fn thread_cpu_ms() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given; the thread clock always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 * 1e3 + t.tv_nsec as f64 / 1e6
}

/// Pins this thread to `cpu`; false when the kernel refuses (a CPU not in this process's
/// set).
fn pin(cpu: usize) -> bool {
    if cpu >= libc::CPU_SETSIZE as usize {
        return false;
    }
    // SAFETY: a zeroed cpu_set_t with one bit set within its size, for this thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_speed_is_the_readings_median_and_deciles_as_read() {
        let readings = [20.0, 18.0, 30.0, 19.0, 22.0, 21.0, 17.0, 25.0, 23.0, 24.0];
        let s = Speed::of(&readings).unwrap();
        assert_eq!(s.samples, 10);
        // Ten readings: the median is the mean of the two middle ones (21 and 22).
        assert_eq!((s.p10_ms, s.median_ms, s.p90_ms), (17.0, 21.5, 25.0));
        // Nine (without 24): the middle one, and p90 at rank ⌈8.1⌉ = 9, the largest.
        let odd = Speed::of(&readings[..9]).unwrap();
        assert_eq!((odd.p10_ms, odd.median_ms, odd.p90_ms), (17.0, 21.0, 30.0));
        assert!((s.mean_ms - 21.9).abs() < 1e-9);
        assert_eq!(Speed::of(&[]), None);
        assert_eq!(Speed::of(&[f64::NAN]), None);
        let slow = Speed {
            mean_ms: 21.9 * 1.1,
            ..s
        };
        assert!((slow.slower_than(&s) - 0.1).abs() < 1e-9);
        assert!((s.slower_than(&slow) + 0.0909).abs() < 1e-3);
    }

    #[test]
    fn the_loop_is_read_on_the_cpu_asked_or_not_at_all() {
        let readings = measure(Some(0), 2, Duration::from_millis(10));
        assert_eq!(readings.len(), 2);
        assert!(
            readings.iter().all(|r| r.is_finite() && *r > 0.0),
            "{readings:?}"
        );
        // A CPU this machine does not have: not measured, not a reading from elsewhere.
        assert!(measure(Some(libc::CPU_SETSIZE as usize - 1), 1, Duration::ZERO).is_empty());
    }
}
