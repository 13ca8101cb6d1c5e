//! The paper's own model (Mughal, §3; shared/seeds/003), from the example file the README
//! tour uses: our solution against the paper's printed tables.

// Tables are indexed [class][station], as the books print them.
#![allow(clippy::needless_range_loop)]

mod common;

use common::{dem, net, published};
use webscope_model::mva::{self, Method, Options};
use webscope_model::Network;

const MODEL: &str = include_str!("../examples/mughal-web-server.toml");

fn sweep(network: &Network, ns: &[u32]) -> Vec<webscope_model::mva::Solution> {
    let targets = mva::populations_for(network, ns);
    let options = Options {
        method: Method::Exact,
        ..Options::default()
    };
    mva::sweep(network, &targets, &options).unwrap().solutions
}

/// One CPU: the paper's first table (X to two decimals, R to three).
#[test]
fn one_cpu_matches_the_paper() {
    let network = Network::from_toml_str(MODEL).unwrap();
    let rows = [
        (20, "0.86", "0.82", "23.329", "24.397"),
        (100, "0.86", "0.82", "116.616", "122.010"),
        (200, "0.86", "0.82", "233.227", "244.027"),
    ];
    let ns: Vec<u32> = rows.iter().map(|r| r.0).collect();
    for (s, (_, xp, xz, rp, rz)) in sweep(&network, &ns).iter().zip(rows) {
        published(s.classes[0].throughput, xp);
        published(s.classes[1].throughput, xz);
        published(s.classes[0].response_time, rp);
        published(s.classes[1].response_time, rz);
    }
}

/// The paper's 2- and 4-CPU models: the CPU as a queue with D/m and a delay with
/// D(m−1)/m, with the demands it prints. Solved exactly, they give its tables.
#[test]
fn the_papers_seidmann_models_match_its_tables() {
    let disk = [0.032254983, 0.021106645];
    let classes = [("pdf", 1, 0.0), ("zip", 1, 0.0)];
    let two = net(
        &classes,
        vec![
            dem("cpu", 1, &[0.29153, 0.30504]),
            dem("delay", 0, &[0.29153, 0.30504]),
            dem("disk", 1, &disk),
        ],
    );
    let four = net(
        &classes,
        vec![
            dem("cpu", 1, &[0.14576, 0.15252]),
            dem("delay", 0, &[0.43729, 0.45756]),
            dem("disk", 1, &disk),
        ],
    );
    let s2 = sweep(&two, &[20, 200]);
    published(s2[0].classes[0].throughput, "1.71");
    published(s2[0].classes[1].throughput, "1.64");
    published(s2[0].classes[0].response_time, "11.668");
    published(s2[0].classes[1].response_time, "12.195");
    published(s2[1].classes[0].response_time, "116.617");
    published(s2[1].classes[1].response_time, "122.00");
    let s4 = sweep(&four, &[20, 200]);
    published(s4[0].classes[0].throughput, "3.43");
    published(s4[0].classes[1].throughput, "3.28");
    published(s4[0].classes[0].response_time, "5.8388");
    published(s4[0].classes[1].response_time, "6.093");
    published(s4[1].classes[0].response_time, "58.3126");
    published(s4[1].classes[1].response_time, "61.000");
}

/// Our what-if (`--servers cpu=m`: a real m-server station) against the paper's
/// approximation: the same capacity (m / D), and response times within 1 % at 20 clients
/// of each type and beyond, where the CPUs are saturated either way.
#[test]
fn exact_multi_server_what_if_agrees_with_the_paper_where_saturated() {
    let network = Network::from_toml_str(MODEL).unwrap();
    for (m, r20) in [(2, [11.668, 12.195]), (4, [5.8388, 6.093])] {
        let s = &sweep(&network.with_servers("cpu", m).unwrap(), &[20])[0];
        assert!(s.station_utilization(0) > f64::from(m) * 0.999);
        for c in 0..2 {
            let rel = (s.classes[c].response_time - r20[c]).abs() / r20[c];
            assert!(
                rel < 0.01,
                "m={m} class {c}: {} vs {}",
                s.classes[c].response_time,
                r20[c]
            );
        }
    }
}
