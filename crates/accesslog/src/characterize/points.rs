//! Choosing which points of a long series to keep for a chart or a report.

/// Up to `count` distinct integers from `lo` to `hi` (both included), evenly spaced on a log
/// scale: dense where a log-log chart is sparse.
pub fn log_spaced(lo: usize, hi: usize, count: usize) -> Vec<usize> {
    let lo = lo.max(1);
    if hi < lo || count == 0 {
        return Vec::new();
    }
    if count == 1 || hi == lo {
        return vec![lo];
    }
    let (a, b) = ((lo as f64).ln(), (hi as f64).ln());
    let mut out: Vec<usize> = (0..count)
        .map(|i| (a + (b - a) * i as f64 / (count - 1) as f64).exp().round() as usize)
        .map(|v| v.clamp(lo, hi))
        .collect();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_both_ends_without_repeats() {
        let v = log_spaced(1, 1000, 50);
        assert_eq!((v[0], *v.last().unwrap()), (1, 1000));
        assert!(v.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(log_spaced(5, 4, 10), Vec::<usize>::new());
        assert_eq!(log_spaced(3, 3, 10), vec![3]);
    }
}
