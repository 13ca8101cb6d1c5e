//! Bard-Schweitzer approximate MVA: one fixed point per population instead of a recursion
//! over every smaller population, so its cost does not grow with N.
//!
//! The exact recursion needs Q_k(N − e_r), the queue a class-r job finds on arrival.
//! Schweitzer estimates it from the queue at N itself, assuming one class-r job less
//! shortens class r's share in proportion: Q_k(N − e_r) ≈ Σ_s Q_ks(N) − Q_kr(N)/N_r.
//!
//! Multi-server stations need the marginal probabilities p_k(j | N − e_r), j < m, too.
//! They are estimated the same way: the busy servers an arriving class-r job sees,
//! u = Σ_s D_ks X_s − D_kr X_r / N_r, and the marginals of an M/M/m station with that load
//! (p(j) ∝ u^j / j! below m, normalised so that the mean idle servers are m − u). This is
//! exact for one job (it finds all servers idle) and tends to R = D/m (1 + Q) when the
//! station saturates; the tests measure it against exact MVA.

use super::{Method, Solution};
use crate::network::StationKind;
use crate::{Error, Network};

/// Solves the network at its populations; `tolerance` bounds the largest relative change
/// of a queue length between the last two iterations.
pub(super) fn solve(
    network: &Network,
    populations: &[u32],
    tolerance: f64,
    max_iterations: usize,
) -> Result<Solution, Error> {
    let rc = network.classes().len();
    let stations = network.stations();
    let kc = stations.len();
    let n: Vec<f64> = populations.iter().map(|&p| f64::from(p)).collect();
    let think: Vec<f64> = network.classes().iter().map(|c| c.think_time).collect();
    // q[k * rc + r]: class r's mean jobs at station k. Start spread evenly.
    let mut q: Vec<f64> = (0..kc * rc).map(|i| n[i % rc] / kc as f64).collect();
    let mut x = vec![0.0; rc];
    let mut res = vec![0.0; kc * rc];
    let mut iterations = 0;
    loop {
        iterations += 1;
        for r in 0..rc {
            let mut cycle = think[r];
            for (k, st) in stations.iter().enumerate() {
                let d = st.demands[r];
                let row = &q[k * rc..(k + 1) * rc];
                let seen = row.iter().sum::<f64>() - row[r] / n[r];
                res[k * rc + r] = match st.kind {
                    StationKind::Delay => d,
                    StationKind::Queue { servers: 1, .. } => d * (1.0 + seen),
                    StationKind::Queue { servers, .. } => {
                        let busy: f64 =
                            (0..rc).map(|s| st.demands[s] * x[s]).sum::<f64>() - d * x[r] / n[r];
                        let m = servers as usize;
                        d / m as f64 * (1.0 + seen + idle_term(busy, m))
                    }
                };
                cycle += res[k * rc + r];
            }
            x[r] = n[r] / cycle;
        }
        let mut change: f64 = 0.0;
        for k in 0..kc {
            for r in 0..rc {
                let new = x[r] * res[k * rc + r];
                let old = q[k * rc + r];
                let scale = old.abs().max(new.abs());
                if scale > 0.0 {
                    change = change.max((new - old).abs() / scale);
                }
                q[k * rc + r] = new;
            }
        }
        if change < tolerance {
            break;
        }
        if iterations >= max_iterations || !change.is_finite() {
            return Err(Error::NotConverged { iterations, change });
        }
    }
    Ok(Solution::assemble(
        Method::Schweitzer,
        iterations,
        network,
        populations,
        &x,
        &res,
    ))
}

/// Σ_{j=0}^{m−2} (m−1−j) p(j) for an M/M/m station with `busy` mean busy servers.
pub(crate) fn idle_term(busy: f64, m: usize) -> f64 {
    let u = busy.clamp(0.0, m as f64);
    // Unnormalised p(j) = u^j / j!, j < m.
    let mut weights = Vec::with_capacity(m);
    let mut w = 1.0;
    for j in 0..m {
        if j > 0 {
            w *= u / j as f64;
        }
        weights.push(w);
    }
    // p(0) (1 + (1/m) Σ_{j=1}^{m−1} (m−j) u^j/j!) = 1 − u/m.
    let spread: f64 = (1..m).map(|j| (m - j) as f64 * weights[j]).sum();
    let p0 = (1.0 - u / m as f64) / (1.0 + spread / m as f64);
    (0..m - 1)
        .map(|j| (m - 1 - j) as f64 * p0 * weights[j])
        .sum()
}

#[cfg(test)]
mod tests {
    use super::idle_term;

    #[test]
    fn idle_term_is_all_idle_servers_when_empty_and_nothing_when_saturated() {
        for m in 2..6 {
            // An arriving job that finds nobody waits for nothing: D/m (1 + (m − 1)) = D.
            assert!((idle_term(0.0, m) - (m - 1) as f64).abs() < 1e-12);
            assert!(idle_term(m as f64, m).abs() < 1e-12);
        }
        // M/M/2 with u = 1: p(0) = 1/3, so the term is p(0) = 1/3.
        assert!((idle_term(1.0, 2) - 1.0 / 3.0).abs() < 1e-12);
    }
}
