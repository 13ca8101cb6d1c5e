//! Exact MVA against the product form itself (every state enumerated), and the laws every
//! solution must obey, on random networks.

// Tables are indexed [class][station], as the books print them.
#![allow(clippy::needless_range_loop)]

mod common;

use common::{dem, net, solve, St};
use proptest::prelude::*;
use webscope_model::mva::{self, Method, Options};
use webscope_model::{Network, StationKind};

/// Mean queue lengths and throughputs from the product-form distribution, by enumerating
/// every placement of every job (BCMP: delays, and queues whose m servers are shared by
/// processor sharing, so per-class demands may differ).
fn brute_force(network: &Network) -> (Vec<Vec<f64>>, Vec<f64>) {
    let classes = network.classes();
    let stations = network.stations();
    let (rc, kc) = (classes.len(), stations.len());
    // Places: stations 0..kc, then the terminals at kc.
    let mut placements: Vec<Vec<Vec<u32>>> = vec![vec![]];
    for class in classes {
        let mut next = Vec::new();
        for partial in &placements {
            for split in compositions(class.population, kc + 1) {
                let mut p = partial.clone();
                p.push(split);
                next.push(p);
            }
        }
        placements = next;
    }
    let mut total = 0.0;
    let mut q = vec![vec![0.0; rc]; kc];
    let mut x = vec![0.0; rc];
    for state in &placements {
        // state[r][k]: class-r jobs at place k.
        let mut weight = 1.0;
        for (k, s) in stations.iter().enumerate() {
            let n: u32 = (0..rc).map(|r| state[r][k]).sum();
            match s.kind {
                StationKind::Delay => {
                    for r in 0..rc {
                        weight *= s.demands[r].powi(state[r][k] as i32) / fact(state[r][k]);
                    }
                }
                StationKind::Queue { servers, .. } => {
                    weight *= fact(n);
                    for r in 0..rc {
                        weight *= s.demands[r].powi(state[r][k] as i32) / fact(state[r][k]);
                    }
                    for i in 1..=n {
                        weight /= f64::from(i.min(servers));
                    }
                }
            }
        }
        for (r, c) in classes.iter().enumerate() {
            weight *= c.think_time.powi(state[r][kc] as i32) / fact(state[r][kc]);
        }
        total += weight;
        for k in 0..kc {
            for r in 0..rc {
                q[k][r] += weight * f64::from(state[r][k]);
            }
        }
        // Class r's completion rate: at the first station it visits, jobs of class r leave
        // at (n_r / n) · min(n, m) / D_r per second.
        for r in 0..rc {
            let k = (0..kc).find(|&k| stations[k].demands[r] > 0.0).unwrap();
            let n: u32 = (0..rc).map(|s| state[s][k]).sum();
            if state[r][k] == 0 {
                continue;
            }
            let rate = match stations[k].kind {
                StationKind::Delay => f64::from(state[r][k]),
                StationKind::Queue { servers, .. } => {
                    f64::from(state[r][k]) / f64::from(n) * f64::from(n.min(servers))
                }
            };
            x[r] += weight * rate / stations[k].demands[r];
        }
    }
    for row in &mut q {
        row.iter_mut().for_each(|v| *v /= total);
    }
    x.iter_mut().for_each(|v| *v /= total);
    (q, x)
}

fn compositions(n: u32, parts: usize) -> Vec<Vec<u32>> {
    if parts == 1 {
        return vec![vec![n]];
    }
    let mut out = Vec::new();
    for first in 0..=n {
        for mut rest in compositions(n - first, parts - 1) {
            rest.insert(0, first);
            out.push(rest);
        }
    }
    out
}

fn fact(n: u32) -> f64 {
    (1..=n).map(f64::from).product()
}

/// A random small network: 1-2 classes of 1-3 jobs, 1-3 stations (PS queues with 1-3
/// servers, or delays), demands in (0.05, 2), think times 0-2.
fn small_network() -> impl Strategy<Value = Network> {
    (1usize..=2, 1usize..=3).prop_flat_map(|(rc, kc)| {
        (
            prop::collection::vec((1u32..=3, 0.0f64..2.0), rc),
            prop::collection::vec((0u32..=3, prop::collection::vec(0.05f64..2.0, rc)), kc),
        )
            .prop_map(|(classes, stations)| {
                let names: Vec<String> = (0..classes.len()).map(|i| format!("c{i}")).collect();
                let snames: Vec<String> = (0..stations.len()).map(|i| format!("s{i}")).collect();
                let cl: Vec<(&str, u32, f64)> = classes
                    .iter()
                    .zip(&names)
                    .map(|(&(n, z), name)| (name.as_str(), n, z))
                    .collect();
                let st: Vec<St> = stations
                    .iter()
                    .zip(&snames)
                    .map(|((m, d), name)| {
                        let mut s = dem(name, *m, d);
                        s.ps = true;
                        s
                    })
                    .collect();
                net(&cl, st)
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Exact MVA is exact: it agrees with the enumerated product form to 1e-9.
    #[test]
    fn exact_mva_matches_the_product_form(network in small_network()) {
        let s = solve(&network, Method::Exact);
        let (q, x) = brute_force(&network);
        for (r, c) in s.classes.iter().enumerate() {
            prop_assert!((c.throughput - x[r]).abs() <= 1e-9 * x[r], "X{}: {} vs {}", r, c.throughput, x[r]);
        }
        for (k, st) in s.stations.iter().enumerate() {
            for r in 0..s.classes.len() {
                prop_assert!((st.queue_length[r] - q[k][r]).abs() <= 1e-9 * (1.0 + q[k][r]),
                    "Q{}{}: {} vs {}", k, r, st.queue_length[r], q[k][r]);
            }
        }
    }

    /// Little's law for every class and the utilisation and asymptotic bounds, for both
    /// solvers.
    #[test]
    fn solutions_obey_the_operational_laws(network in small_network(), schweitzer in any::<bool>()) {
        let method = if schweitzer { Method::Schweitzer } else { Method::Exact };
        let s = solve(&network, method);
        for (r, c) in s.classes.iter().enumerate() {
            let n = f64::from(c.population);
            // N = X (R + Z), and the jobs at the stations are X R.
            prop_assert!((c.throughput * (c.response_time + c.think_time) - n).abs() <= 1e-9 * n);
            let queued: f64 = s.stations.iter().map(|st| st.queue_length[r]).sum();
            prop_assert!((queued - c.throughput * c.response_time).abs() <= 1e-9 * n);
            let d = network.total_demand(r);
            prop_assert!(c.throughput <= n / (d + c.think_time) * (1.0 + 1e-9));
            prop_assert!(c.response_time >= d * (1.0 - 1e-9));
        }
        for (k, st) in network.stations().iter().enumerate() {
            if let StationKind::Queue { servers, .. } = st.kind {
                prop_assert!(s.station_utilization(k) <= f64::from(servers) * (1.0 + 1e-9));
            }
        }
    }

    /// One class: X(N) never falls as N grows and stays under the bottleneck's capacity
    /// min_k m_k / D_k; both solvers.
    #[test]
    fn throughput_grows_with_population_and_respects_the_bottleneck(
        demands in prop::collection::vec((0.01f64..1.0, 0u32..=4), 1..=4),
        think in 0.0f64..5.0,
        schweitzer in any::<bool>(),
    ) {
        let st: Vec<St> = demands.iter().enumerate()
            .map(|(i, &(d, m))| { let mut s = dem(["a", "b", "c", "d"][i], m, &[d]); s.ps = true; s })
            .collect();
        let network = net(&[("users", 1, think)], st);
        let targets = mva::populations_for(&network, &(1..=60).collect::<Vec<_>>());
        let method = if schweitzer { Method::Schweitzer } else { Method::Exact };
        let solved = mva::sweep(&network, &targets, &Options { method, ..Options::default() }).unwrap();
        let capacity = demands.iter().filter(|(_, m)| *m > 0)
            .map(|&(d, m)| f64::from(m) / d).fold(f64::INFINITY, f64::min);
        let mut last = 0.0;
        for s in &solved.solutions {
            let x = s.classes[0].throughput;
            prop_assert!(x >= last * (1.0 - 1e-9), "X fell from {} to {}", last, x);
            prop_assert!(x <= capacity * (1.0 + 1e-9));
            last = x;
        }
    }
}

/// A queue with at least as many servers as jobs never makes anyone wait: it is a delay.
#[test]
fn enough_servers_make_a_queue_a_delay() {
    let mut cpu = dem("cpu", 8, &[0.3, 0.7]);
    cpu.ps = true;
    let queue = net(
        &[("a", 5, 1.0), ("b", 3, 0.5)],
        vec![cpu, dem("disk", 1, &[0.2, 0.1])],
    );
    let delay = net(
        &[("a", 5, 1.0), ("b", 3, 0.5)],
        vec![dem("cpu", 0, &[0.3, 0.7]), dem("disk", 1, &[0.2, 0.1])],
    );
    let (q, d) = (solve(&queue, Method::Exact), solve(&delay, Method::Exact));
    for r in 0..2 {
        common::near(q.classes[r].throughput, d.classes[r].throughput, 1e-12);
        common::near(
            q.stations[0].residence_time[r],
            network_demand(&queue, 0, r),
            1e-12,
        );
    }
}

fn network_demand(n: &Network, k: usize, r: usize) -> f64 {
    n.stations()[k].demands[r]
}

/// The exact recursion stays sane at the paper's scale: 4 CPUs, 200 clients of each of two
/// classes, saturated. Throughput reaches the capacity m / D and the marginals do not go
/// astray (Little's law and U ≤ m hold to 1e-9).
#[test]
fn exact_is_stable_when_saturated() {
    let network = net(
        &[("pdf", 200, 0.0), ("zip", 200, 0.0)],
        vec![
            {
                let mut s = dem("cpu", 4, &[0.583052311, 0.610083972]);
                s.ps = true;
                s
            },
            dem("disk", 1, &[0.032254983, 0.021106645]),
        ],
    );
    let s = solve(&network, Method::Exact);
    let busy = s.station_utilization(0);
    assert!(
        busy <= 4.0 + 1e-9 && busy > 4.0 - 1e-6,
        "cpu busy servers {busy}"
    );
    for c in &s.classes {
        let n = f64::from(c.population);
        assert!((c.throughput * c.response_time - n).abs() < 1e-9 * n);
    }
}
