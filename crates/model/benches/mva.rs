//! How long exact MVA takes at the sizes the issue names (a few hundred jobs per class, two
//! or three classes, multi-server stations), and Schweitzer beside it. Prints figures; it
//! asserts nothing. Run: `cargo bench -p webscope-model --bench mva`.

use std::time::Instant;

use webscope_model::mva::{self, Method, Options};
use webscope_model::{Class, Discipline, Network, Station, StationKind};

fn network(classes: usize, population: u32) -> Network {
    let cl = (0..classes)
        .map(|r| Class {
            name: format!("c{r}"),
            population,
            think_time: 1.0 + r as f64,
        })
        .collect();
    let demands = |base: f64| {
        (0..classes)
            .map(|r| base * (1.0 + 0.3 * r as f64))
            .collect()
    };
    let stations = vec![
        Station::new(
            "cpu",
            StationKind::Queue {
                servers: 4,
                discipline: Discipline::Ps,
            },
            demands(0.02),
        ),
        Station::new("disk", StationKind::QUEUE, demands(0.008)),
        Station::new("net", StationKind::Delay, demands(0.005)),
    ];
    Network::new(cl, stations).expect("valid benchmark network")
}

fn time(network: &Network, method: Method) -> (f64, f64) {
    let options = Options {
        method,
        ..Options::default()
    };
    // Best of three: the machine is shared.
    let mut best = f64::INFINITY;
    let mut x = 0.0;
    for _ in 0..3 {
        let start = Instant::now();
        let solved = mva::solve(network, &options).expect("solves");
        best = best.min(start.elapsed().as_secs_f64());
        x = solved.solutions[0].total_throughput();
    }
    (best, x)
}

fn main() {
    println!("classes  jobs/class  vectors      exact (s)  schweitzer (s)  X exact  X schweitzer");
    for (classes, n) in [(1, 1000), (2, 300), (2, 500), (3, 100), (3, 200), (3, 300)] {
        let net = network(classes, n);
        let vectors = f64::from(n + 1).powi(classes as i32);
        let (te, xe) = time(&net, Method::Exact);
        let (ts, xs) = time(&net, Method::Schweitzer);
        println!("{classes:7}  {n:10}  {vectors:11.3e}  {te:9.4}  {ts:14.5}  {xe:7.2}  {xs:12.2}");
    }
}
