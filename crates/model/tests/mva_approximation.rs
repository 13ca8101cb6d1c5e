//! How far Bard-Schweitzer (with its multi-server estimate) is from exact MVA, and how it
//! compares with Seidmann's decomposition, the usual way to put a multi-server station
//! into a single-server solver (a queue with D/m plus a delay with D(m−1)/m: the paper's
//! "delay resource" in its 2- and 4-CPU models). Run with --nocapture to see the table.

mod common;

use common::{dem, net, St};
use webscope_model::mva::{self, Method, Options};
use webscope_model::Network;

fn curve(network: &Network, method: Method, ns: &[u32]) -> Vec<f64> {
    let targets = mva::populations_for(network, ns);
    let options = Options {
        method,
        ..Options::default()
    };
    mva::sweep(network, &targets, &options)
        .unwrap()
        .solutions
        .iter()
        .map(|s| s.classes[0].throughput)
        .collect()
}

/// Worst relative error of `a` against `exact`, over all N and over N ≥ 20.
fn worst(a: &[f64], exact: &[f64]) -> (f64, f64) {
    let err = |(x, y): (&f64, &f64)| (x - y).abs() / y;
    let all = a.iter().zip(exact).map(err).fold(0.0, f64::max);
    let large = a[19..]
        .iter()
        .zip(&exact[19..])
        .map(err)
        .fold(0.0, f64::max);
    (all, large)
}

/// A CPU with m servers (or Seidmann's queue + delay for it), a disk and think time Z.
fn server(m: u32, z: f64, seidmann: bool) -> Network {
    let (cpu, disk) = (0.2, 0.05);
    let mut stations: Vec<St> = Vec::new();
    if seidmann {
        stations.push(dem("cpu", 1, &[cpu / f64::from(m)]));
        stations.push(dem(
            "cpu-delay",
            0,
            &[cpu * f64::from(m - 1) / f64::from(m)],
        ));
    } else {
        let mut s = dem("cpu", m, &[cpu]);
        s.ps = true;
        stations.push(s);
    }
    stations.push(dem("disk", 1, &[disk]));
    net(&[("users", 1, z)], stations)
}

#[test]
fn schweitzer_multi_server_estimate_beats_seidmann_and_stays_near_exact() {
    let ns: Vec<u32> = (1..=120).collect();
    let mut table =
        vec!["m  Z    ours: all N / N>=20    Seidmann in Schweitzer: all N / N>=20".to_string()];
    for m in [2, 4, 8] {
        for z in [0.0, 1.0, 5.0] {
            let exact = curve(&server(m, z, false), Method::Exact, &ns);
            let ours = worst(
                &curve(&server(m, z, false), Method::Schweitzer, &ns),
                &exact,
            );
            let seidmann = worst(&curve(&server(m, z, true), Method::Schweitzer, &ns), &exact);
            table.push(format!(
                "{m}  {z:<3}  {:5.2}% / {:5.2}%          {:5.2}% / {:5.2}%",
                ours.0 * 100.0,
                ours.1 * 100.0,
                seidmann.0 * 100.0,
                seidmann.1 * 100.0
            ));
            assert!(ours.0 <= seidmann.0 && ours.1 <= seidmann.1, "m={m} Z={z}");
            assert!(ours.0 < 0.10 && ours.1 < 0.05, "m={m} Z={z}: {ours:?}");
        }
    }
    println!(
        "worst relative throughput error against exact MVA, N = 1..120\n{}",
        table.join("\n")
    );
}

#[test]
fn schweitzer_is_close_to_exact_on_single_server_networks() {
    let network = net(
        &[("a", 1, 2.0)],
        vec![
            dem("cpu", 1, &[0.1]),
            dem("disk1", 1, &[0.08]),
            dem("disk2", 1, &[0.05]),
        ],
    );
    let ns: Vec<u32> = (1..=100).collect();
    let exact = curve(&network, Method::Exact, &ns);
    let (all, large) = worst(&curve(&network, Method::Schweitzer, &ns), &exact);
    println!(
        "single-server: worst throughput error {:.2}% (N >= 20: {:.2}%)",
        all * 100.0,
        large * 100.0
    );
    assert!(all < 0.05);
}
