//! Axis ranges and ticks: from the data's range to a round bound just beyond it.
//!
//! A linear axis ends at the first tick at or beyond its data, with the tick step (1, 2 or 5
//! times a power of ten) chosen among those giving 3 to 10 intervals as the one that wastes
//! the least of the plot: a stack of CPU shares summing to 100 % (give or take a rounding
//! error of 1e-14) ends at 100, not at the 150 a fixed "about five ticks" rule gave. A log
//! axis ends at the decades around its data. Not for: drawing (the charts do).

/// A scale from data to pixels.
#[derive(Debug, Clone, Copy)]
pub(super) struct Scale {
    pub(super) lo: f64,
    pub(super) hi: f64,
    /// The tick step (linear axes; a log axis ticks every decade).
    step: f64,
    pub(super) log: bool,
    px_lo: f64,
    px_hi: f64,
}

/// Values this close to a tick (relative to the step) are on it: sums of shares that are
/// 100 % up to floating-point rounding must not start another interval.
const ON_TICK: f64 = 1e-9;

impl Scale {
    pub(super) fn new(
        values: impl Iterator<Item = f64>,
        axis: &super::Axis,
        px_lo: f64,
        px_hi: f64,
    ) -> Scale {
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for v in values.filter(|v| v.is_finite() && (!axis.log || *v > 0.0)) {
            lo = lo.min(v);
            hi = hi.max(v);
        }
        if !lo.is_finite() {
            (lo, hi) = if axis.log { (1.0, 10.0) } else { (0.0, 1.0) };
        }
        let step;
        if axis.log {
            lo = 10f64.powf((lo.log10() + ON_TICK).floor());
            hi = 10f64.powf((hi.log10() - ON_TICK).ceil());
            if hi <= lo {
                hi = lo * 10.0;
            }
            step = 10.0;
        } else {
            if axis.zero {
                lo = lo.min(0.0);
                hi = hi.max(0.0);
            }
            if hi - lo < 1e-12 {
                hi = lo + 1.0;
            }
            (lo, hi, step) = linear_bounds(lo, hi);
        }
        Scale {
            lo,
            hi,
            step,
            log: axis.log,
            px_lo,
            px_hi,
        }
    }

    pub(super) fn px(&self, v: f64) -> f64 {
        let t = if self.log {
            (v.max(f64::MIN_POSITIVE).log10() - self.lo.log10())
                / (self.hi.log10() - self.lo.log10())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        self.px_lo + t * (self.px_hi - self.px_lo)
    }

    /// The distance between two ticks in pixels, for a linear axis.
    pub(super) fn step_px(&self) -> Option<f64> {
        (!self.log).then(|| (self.px(self.lo + self.step) - self.px_lo).abs())
    }

    pub(super) fn ticks(&self) -> Vec<f64> {
        if self.log {
            let mut out = Vec::new();
            let mut v = self.lo;
            while v <= self.hi * 1.0001 {
                out.push(v);
                v *= 10.0;
            }
            return out;
        }
        let first = (self.lo / self.step).round() as i64;
        let last = (self.hi / self.step).round() as i64;
        (first..=last).map(|i| i as f64 * self.step).collect()
    }

    pub(super) fn contains(&self, v: f64) -> bool {
        v.is_finite() && (!self.log || v > 0.0)
    }
}

/// The axis bounds and tick step for data from `lo` to `hi` (`lo < hi`): the 1-2-5 step with
/// 3 to 10 intervals that leaves the least empty room beyond the data, on a tie the one
/// closest to 5 intervals.
pub(super) fn linear_bounds(lo: f64, hi: f64) -> (f64, f64, f64) {
    let span = hi - lo;
    let mut best: Option<(f64, f64, f64, f64, f64)> = None; // (waste, distance to 5, lo, hi, step)
    let mut step = nice_step(span / 10.0);
    for _ in 0..5 {
        let a = (lo / step + ON_TICK).floor() * step;
        let b = (hi / step - ON_TICK).ceil() * step;
        let intervals = ((b - a) / step).round();
        if (3.0..=10.0).contains(&intervals) {
            let candidate = (b - a - span, (intervals - 5.0).abs(), a, b, step);
            let better = match best {
                None => true,
                Some(old) => {
                    candidate.0 < old.0 - step * ON_TICK
                        || (candidate.0 <= old.0 + step * ON_TICK && candidate.1 < old.1)
                }
            };
            if better {
                best = Some(candidate);
            }
        }
        step = nice_step(step * 1.5);
    }
    match best {
        Some((_, _, a, b, step)) => (a, b, step),
        // Unreachable for finite data (a step that many times the span gives 1 interval);
        // kept so that no input can panic a report.
        None => {
            let step = nice_step(span / 5.0);
            ((lo / step).floor() * step, (hi / step).ceil() * step, step)
        }
    }
}

/// 1, 2 or 5 times a power of ten, at least `raw`.
pub(super) fn nice_step(raw: f64) -> f64 {
    if raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let power = 10f64.powf(raw.log10().floor());
    let f = raw / power;
    let nice = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * power
}
