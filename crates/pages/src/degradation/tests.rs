//! The degradation page's tests: the table's rows, pooling and the targets, on made-up runs.

use super::rows::degradations;
use super::runs::{pool, Run, Service};
use super::targets::targets;

fn svc(name: &str, ok: f64, refused: f64, p99: f64, cpu: f64) -> Service {
    Service {
        name: name.into(),
        ok_per_s: ok,
        refused_per_s: refused,
        p99_ms: p99,
        cpu_s: Some(cpu),
        wait_ms: Some(1.0),
        running_ms: Some(1.0),
        slices: Some(1.0),
    }
}

fn run(policy: &str, heavy: usize, services: Vec<Service>) -> Run {
    Run {
        set: "set1".into(),
        policy: policy.into(),
        heavy,
        services,
        runqueue_wait_pct: None,
        repeats: 1,
    }
}

/// Set 1 under three policies, with no heavy clients and with 40.
fn runs() -> Vec<Run> {
    // Policy, heavy clients, and per service: name, ok/s, refused/s, p99 ms, CPU s.
    type Services = &'static [(&'static str, f64, f64, f64, f64)];
    let measured: [(&str, usize, Services); 6] = [
        ("threads", 0, &[("light", 1000.0, 0.0, 10.0, 4.0)]),
        (
            "threads",
            40,
            &[
                ("light", 30.0, 0.0, 900.0, 0.1),
                ("heavy", 2.0, 0.0, 9000.0, 3.9),
            ],
        ),
        ("fair", 0, &[("light", 980.0, 0.0, 10.0, 4.0)]),
        (
            "fair",
            40,
            &[
                ("light", 850.0, 0.0, 12.0, 3.5),
                ("heavy", 1.0, 0.0, 9000.0, 0.5),
            ],
        ),
        ("admission", 0, &[("light", 1000.0, 0.0, 10.0, 4.0)]),
        (
            "admission",
            40,
            &[
                ("light", 900.0, 0.0, 20.0, 3.5),
                ("heavy", 1.0, 30.0, 900.0, 0.5),
            ],
        ),
    ];
    measured
        .iter()
        .map(|(policy, heavy, services)| {
            let services = services
                .iter()
                .map(|&(name, ok, refused, p99, cpu)| svc(name, ok, refused, p99, cpu))
                .collect();
            run(policy, *heavy, services)
        })
        .collect()
}

#[test]
fn degradation_is_the_last_throughput_over_the_first() {
    let rows = degradations(&runs());
    let light = |p: &str| {
        rows.iter()
            .find(|d| d.policy == p && d.service == "light")
            .unwrap()
    };
    assert_eq!(light("threads").kept_pct, Some(3.0));
    assert_eq!(light("fair").heavy_max, 40);
    let heavy = rows
        .iter()
        .find(|d| d.policy == "fair" && d.service == "heavy")
        .unwrap();
    assert_eq!(heavy.kept_pct, None);
    assert_eq!(heavy.cpu_share_pct, Some(12.5));
}

#[test]
fn repetitions_pool_into_medians() {
    let pooled = pool(vec![
        run("fair", 0, vec![svc("light", 900.0, 0.0, 10.0, 4.0)]),
        run("fair", 40, vec![svc("light", 800.0, 0.0, 12.0, 3.5)]),
        run("fair", 0, vec![svc("light", 1000.0, 0.0, 30.0, 4.0)]),
        run("fair", 0, vec![svc("light", 980.0, 0.0, 20.0, 4.0)]),
    ]);
    assert_eq!(pooled.len(), 2);
    assert_eq!((pooled[0].heavy, pooled[0].repeats), (0, 3));
    let light = pooled[0].service("light").unwrap();
    assert_eq!((light.ok_per_s, light.p99_ms), (980.0, 20.0));
    assert_eq!((pooled[1].heavy, pooled[1].repeats), (40, 1));
}

#[test]
fn targets_are_judged_from_the_figures() {
    let runs = runs();
    let checks = targets(&runs, &degradations(&runs));
    let verdict = |start: &str| {
        checks
            .iter()
            .find(|(s, _)| s.starts_with(start))
            .map(|(_, met)| *met)
            .unwrap()
    };
    // 850 / 980 = 87 %: met; the split 87.5 % vs 88.9 %: met; heavy progresses.
    assert!(verdict("fair, set 1: light keeps 87 %"));
    assert!(verdict("fair, set 1: light has 88 %"));
    assert!(verdict("fair, set 1: heavy completes 1.0"));
    // Light's p99 20 ms against 10 + 5 ms: missed, though heavy is refused.
    assert!(!verdict("admission, set 1: light p99 20.0 ms"));
    // 980 / 1000 = 0.98: met.
    assert!(verdict("no contention: light alone does 980"));
}

#[test]
fn the_runs_csv_has_a_heading_for_every_cell() {
    let csv = super::runs::runs_csv(&runs());
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert!(header.contains(&"slices"), "{header:?}");
    for line in lines {
        assert_eq!(line.split(',').count(), header.len(), "{line}");
    }
}
