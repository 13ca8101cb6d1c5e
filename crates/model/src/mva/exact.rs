//! Exact multi-class MVA with load-dependent (multi-server) stations.
//!
//! The recursion runs over every population vector n ≤ N, one total population ("level")
//! at a time, keeping only two levels in memory: the quantities at n depend only on those
//! at n − e_r. For a station k and a class r with n_r > 0 (arrival theorem):
//!
//! - delay:          R_kr(n) = D_kr
//! - one server:     R_kr(n) = D_kr (1 + Q_k(n − e_r))
//! - m servers:      R_kr(n) = D_kr/m (1 + Q_k(n − e_r) + Σ_{j=0}^{m−2} (m−1−j) p_k(j | n − e_r))
//!
//! then X_r(n) = n_r / (Z_r + Σ_k R_kr(n)) and Q_k(n) = Σ_r X_r(n) R_kr(n). A multi-server
//! station keeps the marginal probabilities of its first m − 1 occupancies:
//! p_k(j | n) = (1/j) Σ_r D_kr X_r(n) p_k(j−1 | n − e_r) for 1 ≤ j < m, and p_k(0 | n) from
//! the mean number of idle servers, Σ_{j<m} (m−j) p_k(j | n) = m − Σ_r D_kr X_r(n). Only
//! j < m is ever needed (Bolch et al., §8.2; Reiser & Lavenberg), so the cost per vector is
//! O(R·K·m), not O(R·K·|n|).
//!
//! This is exact for product-form networks (BCMP): delays, processor-sharing queues with
//! any servers and demands, and FCFS queues whose per-visit service time is the same for
//! every class. [`super::plan`] checks that before calling in here.

// The loops index several arrays by station k and class r, as the formulas do.
#![allow(clippy::needless_range_loop)]

use super::{Method, Solution};
use crate::network::StationKind;
use crate::Network;

/// How each station enters the recursion, and where its marginals live in a slot.
#[derive(Clone, Copy)]
enum Kind {
    Delay,
    Single,
    /// m servers; marginals p(0..m−1) start at `offset` within a vector's slot.
    Multi {
        m: usize,
        offset: usize,
    },
}

struct Prepared {
    classes: usize,
    stations: usize,
    /// demand[k * classes + r]
    demand: Vec<f64>,
    /// demand / servers, the factor of the multi-server residence time (divisions are the
    /// slow part of the step, so they are done once here).
    per_server: Vec<f64>,
    /// 1 / j for j = 0 .. widest station's servers (index 0 unused).
    inverse: Vec<f64>,
    /// j as a float, for the same range (int-to-float conversions showed in profiles).
    count: Vec<f64>,
    think: Vec<f64>,
    kinds: Vec<Kind>,
    /// Floats per population vector: Q_k for every station, then the marginals.
    slot: usize,
}

impl Prepared {
    fn new(network: &Network) -> Prepared {
        let classes = network.classes().len();
        let stations = network.stations().len();
        let mut demand = Vec::with_capacity(classes * stations);
        let mut kinds = Vec::with_capacity(stations);
        let mut slot = stations;
        for s in network.stations() {
            demand.extend_from_slice(&s.demands);
            kinds.push(match s.kind {
                StationKind::Delay => Kind::Delay,
                StationKind::Queue { servers: 1, .. } => Kind::Single,
                StationKind::Queue { servers, .. } => {
                    let m = servers as usize;
                    let kind = Kind::Multi { m, offset: slot };
                    // p(0..m−2) is all the recursion reads back at the next level.
                    slot += m - 1;
                    kind
                }
            });
        }
        let widest = network
            .stations()
            .iter()
            .filter_map(|s| s.kind.servers())
            .max()
            .unwrap_or(1) as usize;
        let per_server = network
            .stations()
            .iter()
            .flat_map(|s| {
                let m = f64::from(s.kind.servers().unwrap_or(1));
                s.demands.iter().map(move |d| d / m)
            })
            .collect();
        Prepared {
            classes,
            stations,
            demand,
            per_server,
            inverse: (0..=widest).map(|j| 1.0 / j.max(1) as f64).collect(),
            count: (0..=widest).map(|j| j as f64).collect(),
            think: network.classes().iter().map(|c| c.think_time).collect(),
            kinds,
            slot,
        }
    }
}

/// Mixed-radix indexing of a level: a vector n with Σn = L is stored at the index of its
/// first R − 1 coordinates (its last one is L minus their sum).
struct Levels {
    /// weight[r] for r < R − 1: index step of one more job of class r.
    weight: Vec<usize>,
    size: usize,
}

impl Levels {
    fn new(max: &[u32]) -> Levels {
        let mut weight = Vec::with_capacity(max.len());
        let mut size = 1usize;
        for &n in &max[..max.len() - 1] {
            weight.push(size);
            size *= n as usize + 1;
        }
        Levels { weight, size }
    }

    fn index(&self, n: &[u32]) -> usize {
        self.weight
            .iter()
            .zip(n)
            .map(|(w, &c)| w * c as usize)
            .sum()
    }
}

/// Scratch space for one population vector.
struct Scratch {
    /// residence[k * classes + r]
    residence: Vec<f64>,
    throughput: Vec<f64>,
    /// Where n − e_r's slot starts in the previous level, per class.
    back: Vec<usize>,
    /// Sums for the marginal probabilities of one station.
    acc: Vec<f64>,
}

/// Solves the network at every target population (each ≤ `max` componentwise, each with
/// every class ≥ 1), in the order given.
pub(super) fn solve(network: &Network, targets: &[Vec<u32>]) -> Vec<Solution> {
    let p = Prepared::new(network);
    let max = super::max_population(network, targets);
    let levels = Levels::new(&max);
    let total: u32 = max.iter().sum();
    let mut prev = vec![0.0; levels.size * p.slot];
    let mut cur = vec![0.0; levels.size * p.slot];
    // The empty network: no queues, every multi-server station idle (p(0 | 0) = 1).
    for kind in &p.kinds {
        if let Kind::Multi { offset, .. } = *kind {
            prev[offset] = 1.0;
        }
    }
    let mut scratch = Scratch {
        residence: vec![0.0; p.classes * p.stations],
        throughput: vec![0.0; p.classes],
        back: vec![0; p.classes],
        acc: vec![0.0; p.inverse.len()],
    };
    let mut results: Vec<Option<Solution>> = vec![None; targets.len()];
    let mut by_level: Vec<Vec<usize>> = vec![Vec::new(); total as usize + 1];
    for (t, target) in targets.iter().enumerate() {
        by_level[target.iter().sum::<u32>() as usize].push(t);
    }
    let mut n = vec![0u32; p.classes];
    let last = p.classes - 1;
    for level in 1..=total {
        // Odometer over the first R − 1 coordinates; the last is what is left of the level.
        n.iter_mut().for_each(|c| *c = 0);
        let mut head_sum = 0u32;
        for idx in 0..levels.size {
            if head_sum <= level && level - head_sum <= max[last] {
                n[last] = level - head_sum;
                step(&p, &levels, &n, idx, &prev, &mut cur, &mut scratch);
            }
            // Advance the odometer.
            for r in 0..last {
                if n[r] < max[r] {
                    n[r] += 1;
                    head_sum += 1;
                    break;
                }
                head_sum -= n[r];
                n[r] = 0;
            }
        }
        // The targets on this level, stepped again (the same arithmetic) to keep their
        // residence times and throughputs, which the sweep does not store.
        for &t in &by_level[level as usize] {
            let idx = levels.index(&targets[t]);
            step(&p, &levels, &targets[t], idx, &prev, &mut cur, &mut scratch);
            results[t] = Some(Solution::assemble(
                Method::Exact,
                0,
                network,
                &targets[t],
                &scratch.throughput,
                &scratch.residence,
            ));
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    results
        .into_iter()
        .map(|s| s.expect("every target is at most the maximum population"))
        .collect()
}

/// One MVA step at population vector `n` (stored at `idx`), reading level |n| − 1 from
/// `prev` and writing Q and the marginals of `n` into `cur`.
fn step(
    p: &Prepared,
    levels: &Levels,
    n: &[u32],
    idx: usize,
    prev: &[f64],
    cur: &mut [f64],
    s: &mut Scratch,
) {
    let rc = p.classes;
    let slot = p.slot;
    for r in 0..rc {
        if n[r] == 0 {
            s.throughput[r] = 0.0;
            for k in 0..p.stations {
                s.residence[k * rc + r] = 0.0;
            }
            continue;
        }
        let back = if r < rc - 1 {
            idx - levels.weight[r]
        } else {
            idx
        };
        s.back[r] = back * slot;
        let from = &prev[back * slot..(back + 1) * slot];
        let mut cycle = p.think[r];
        for k in 0..p.stations {
            let d = p.demand[k * rc + r];
            let res = match p.kinds[k] {
                Kind::Delay => d,
                Kind::Single => d * (1.0 + from[k]),
                Kind::Multi { m, offset } => {
                    let marg = &from[offset..offset + m - 1];
                    let mut idle = 0.0;
                    // Weights m−1, m−2, ..., 1 for p(0), p(1), ..., p(m−2).
                    for (w, pj) in p.count[1..m].iter().rev().zip(marg) {
                        idle += w * pj;
                    }
                    p.per_server[k * rc + r] * (1.0 + from[k] + idle)
                }
            };
            s.residence[k * rc + r] = res;
            cycle += res;
        }
        s.throughput[r] = f64::from(n[r]) / cycle;
    }
    let out = &mut cur[idx * slot..(idx + 1) * slot];
    for k in 0..p.stations {
        let row = &s.residence[k * rc..(k + 1) * rc];
        out[k] = s.throughput.iter().zip(row).map(|(x, r)| x * r).sum();
        if let Kind::Multi { m, offset } = p.kinds[k] {
            marginals(p, n, prev, out, s, k, m, offset);
        }
    }
}

/// p_k(j | n) for j = 1 .. m−1 from level |n| − 1, then p_k(0 | n) from the idle servers.
#[allow(clippy::too_many_arguments)]
fn marginals(
    p: &Prepared,
    n: &[u32],
    prev: &[f64],
    out: &mut [f64],
    s: &mut Scratch,
    k: usize,
    m: usize,
    offset: usize,
) {
    let rc = p.classes;
    // acc[j] = Σ_r D_kr X_r p(j | n − e_r), j = 0 .. m−2, so that p(j+1 | n) = acc[j] / (j+1).
    let acc = &mut s.acc[..m - 1];
    acc.iter_mut().for_each(|a| *a = 0.0);
    let mut busy = 0.0;
    for r in 0..rc {
        if n[r] == 0 {
            continue;
        }
        let coef = p.demand[k * rc + r] * s.throughput[r];
        busy += coef;
        let from = &prev[s.back[r] + offset..s.back[r] + offset + m - 1];
        for (a, pj) in acc.iter_mut().zip(from) {
            *a += coef * pj;
        }
    }
    // Σ_{j=1}^{m−1} (m − j) p(j); p(m−1) is not stored, only used here.
    let mut weighted = 0.0;
    for j in 1..m {
        let pj = acc[j - 1] * p.inverse[j];
        weighted += p.count[m - j] * pj;
        if j < m - 1 {
            out[offset + j] = pj;
        }
    }
    // Rounding can take p(0) a hair below zero when the station is saturated.
    out[offset] = (1.0 - (busy + weighted) * p.inverse[m]).max(0.0);
}

/// Floats the two level buffers need for these maxima (for the memory check).
pub(super) fn buffer_floats(network: &Network, max: &[u32]) -> f64 {
    let p = Prepared::new(network);
    let head: f64 = max[..max.len() - 1]
        .iter()
        .map(|&n| f64::from(n) + 1.0)
        .product();
    2.0 * head * p.slot as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_index_steps_by_one_job() {
        let l = Levels::new(&[3, 2, 5]);
        assert_eq!(l.size, 12);
        assert_eq!(l.index(&[0, 0, 5]), 0);
        assert_eq!(l.index(&[1, 0, 0]), 1);
        assert_eq!(l.index(&[3, 2, 0]), 11);
        assert_eq!(l.index(&[2, 1, 0]) - l.weight[1], l.index(&[2, 0, 0]));
    }
}
