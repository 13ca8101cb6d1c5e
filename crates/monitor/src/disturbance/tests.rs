//! The arithmetic and the wording, on constructed readings; the behaviour on a real machine
//! is in `tests/disturbance.rs`.

use std::cell::Cell;

use super::read::ProcessTime;
use super::*;

fn ticks(process: u64, interrupts: u64, steal: u64, all: u64) -> Ticks {
    Ticks {
        process,
        interrupts,
        steal,
        all,
    }
}

/// Two CPUs, 100 ticks each over one second, and the watched processes' CPU ticks.
fn readings(
    cpu0: Ticks,
    cpu1: Ticks,
    irq_since_boot: u64,
    processes: &[(u32, u64)],
) -> (Reading, Reading) {
    let at = Instant::now();
    let before = Reading {
        at,
        stat: Stat {
            total: Ticks::default(),
            cpus: vec![(0, Ticks::default()), (1, Ticks::default())],
            irq_since_boot,
        },
        processes: processes
            .iter()
            .map(|&(pid, _)| (pid, ProcessTime::default()))
            .collect(),
        cpu_pressure: Some(1_000),
        io_pressure: None,
    };
    let mut total = cpu0;
    total.add(cpu1);
    let after = Reading {
        at: at + Duration::from_secs(1),
        stat: Stat {
            total,
            cpus: vec![(0, cpu0), (1, cpu1)],
            irq_since_boot,
        },
        processes: processes
            .iter()
            .map(|&(pid, cpu_ticks)| {
                let waits = HashMap::from([(pid, 300_000_000), (pid + 1, 50_000_000)]);
                (pid, ProcessTime { cpu_ticks, waits })
            })
            .collect(),
        cpu_pressure: Some(251_000),
        io_pressure: None,
    };
    (before, after)
}

fn pinned(server: Option<Vec<usize>>, generator: Option<Vec<usize>>) -> Watched {
    Watched {
        server: vec![10],
        server_cpus: server,
        generator: vec![20],
        generator_cpus: generator,
    }
}

#[test]
fn the_watched_time_is_taken_from_the_cpus_they_are_pinned_to() {
    // CPU 0: 90 ticks busy, 50 of them the server's; CPU 1: 30 busy, all the generator's.
    let (b, a) = readings(
        ticks(85, 5, 0, 100),
        ticks(30, 0, 4, 100),
        0,
        &[(10, 50), (20, 30)],
    );
    let d = compute(&pinned(Some(vec![0]), Some(vec![1])), &b, &a, Vec::new());
    assert!(
        !d.interrupts_apart,
        "irq never moved: interrupts are in busy"
    );
    assert_eq!(d.regions.len(), 2);
    assert_eq!(d.regions[0].cpus, [0]);
    assert_eq!(d.regions[0].roles, [Role::Server]);
    assert!(
        (d.regions[0].others - 0.40).abs() < 1e-9,
        "{:?}",
        d.regions[0]
    );
    assert_eq!(d.regions[1].others, 0.0);
    assert!((d.regions[1].steal - 0.04).abs() < 1e-9);
    assert!(
        (d.steal - 0.02).abs() < 1e-9,
        "machine-wide: 4 of 200 ticks"
    );
    assert!((d.cpus[0].busy - 0.90).abs() < 1e-9);
    assert!(
        (d.cpu_pressure.unwrap() - 0.25).abs() < 1e-6,
        "250 ms of 1 s"
    );
    assert_eq!(d.io_pressure, None);
}

#[test]
fn interrupts_are_nobodys_when_the_kernel_accounts_them_apart() {
    let (b, a) = readings(
        ticks(85, 5, 0, 100),
        ticks(30, 0, 0, 100),
        7,
        &[(10, 50), (20, 30)],
    );
    let d = compute(&pinned(Some(vec![0]), Some(vec![1])), &b, &a, Vec::new());
    assert!(d.interrupts_apart);
    assert!((d.regions[0].others - 0.35).abs() < 1e-9);
    assert!((d.cpus[0].busy - 0.85).abs() < 1e-9);
    assert!((d.cpus[0].interrupts - 0.05).abs() < 1e-9);
}

#[test]
fn unknown_pinning_gives_one_machine_wide_region() {
    let (b, a) = readings(
        ticks(90, 0, 0, 100),
        ticks(30, 0, 0, 100),
        0,
        &[(10, 50), (20, 30)],
    );
    let d = compute(&pinned(Some(vec![0]), None), &b, &a, Vec::new());
    assert_eq!(d.regions.len(), 1);
    assert_eq!(d.regions[0].cpus, [0, 1]);
    assert_eq!(d.regions[0].roles, [Role::Server, Role::Generator]);
    assert!(
        (d.regions[0].others - 0.20).abs() < 1e-9,
        "(120 - 80) / 200"
    );
}

#[test]
fn cpus_nothing_watched_runs_on_are_regions_of_their_own() {
    let (b, a) = readings(ticks(50, 0, 0, 100), ticks(70, 0, 0, 100), 0, &[(10, 50)]);
    let watched = Watched {
        server: vec![10],
        server_cpus: Some(vec![0, 7]),
        ..Watched::default()
    };
    let d = compute(&watched, &b, &a, Vec::new());
    assert_eq!(d.regions[0].cpus, [0], "CPU 7 is not online: left out");
    assert!(d.notes.is_empty());
    let nowhere = Watched {
        server_cpus: Some(vec![7]),
        ..watched.clone()
    };
    let d7 = compute(&nowhere, &b, &a, Vec::new());
    assert_eq!(d7.regions.len(), 1, "taken as running anywhere");
    assert_eq!(d7.regions[0].cpus, [0, 1]);
    assert_eq!(
        d7.notes,
        ["the server's CPUs [7] are none of the online ones: taken as running on any"]
    );
    assert_eq!(d.regions[0].others, 0.0);
    assert_eq!(d.regions[1].cpus, [1]);
    assert!(d.regions[1].roles.is_empty());
    assert!((d.regions[1].others - 0.70).abs() < 1e-9);
    assert_eq!(d.generator_wait, None, "no generator watched");
    let limits = Limits {
        wait: 0.5,
        ..Limits::default()
    };
    assert_eq!(
        d.beyond(&limits),
        Some("CPU pressure 25 %".into()),
        "CPU 1 holds nothing watched: its others are not judged"
    );
}

#[test]
fn a_process_that_ended_leaves_its_time_to_others() {
    let (b, mut a) = readings(ticks(90, 0, 0, 100), ticks(0, 0, 0, 100), 0, &[(10, 80)]);
    a.processes.clear();
    let watched = Watched {
        server: vec![10],
        server_cpus: Some(vec![0]),
        ..Watched::default()
    };
    let d = compute(&watched, &b, &a, Vec::new());
    assert!((d.regions[0].others - 0.90).abs() < 1e-9);
    assert_eq!(d.server_wait.unwrap().threads, 0);
}

#[test]
fn waits_are_summed_and_the_longest_thread_is_named() {
    let (b, a) = readings(
        ticks(0, 0, 0, 100),
        ticks(0, 0, 0, 100),
        0,
        &[(10, 0), (20, 0)],
    );
    let d = compute(&pinned(None, None), &b, &a, Vec::new());
    let w = d.server_wait.unwrap();
    assert_eq!(w.threads, 2);
    assert!((w.total - 0.35).abs() < 1e-9);
    assert!((w.largest - 0.30).abs() < 1e-9);
    assert_eq!(
        (w.thread.as_ref().unwrap().pid, w.thread.unwrap().tid),
        (10, 10)
    );
}

fn disturbed() -> Disturbance {
    Disturbance {
        regions: vec![
            Region {
                cpus: vec![0],
                roles: vec![Role::Server],
                others: 0.38,
                steal: 0.06,
            },
            Region {
                cpus: vec![1],
                roles: vec![Role::Generator],
                others: 0.02,
                steal: 0.01,
            },
        ],
        server_wait: Some(Wait {
            threads: 3,
            total: 0.5,
            largest: 0.31,
            thread: Some(Thread {
                pid: 1234,
                tid: 1240,
                comm: "nginx".into(),
            }),
        }),
        generator_wait: Some(Wait {
            largest: 0.02,
            ..Wait::default()
        }),
        cpu_pressure: Some(0.10),
        io_pressure: Some(0.22),
        ..Disturbance::default()
    }
}

#[test]
fn beyond_names_every_figure_past_its_limit() {
    assert_eq!(
        disturbed().beyond(&Limits::default()).unwrap(),
        "other processes took 38 % of the server's CPU 0, steal 6.0 % of the server's CPU 0, \
         a server thread (1234/1240 nginx) waited for a CPU 31 % of the time, I/O pressure 22 %"
    );
    let loose = Limits {
        others: 0.5,
        steal: 0.1,
        wait: 0.5,
        cpu_pressure: 0.05,
        io_pressure: 0.5,
    };
    assert_eq!(disturbed().beyond(&loose).unwrap(), "CPU pressure 10 %");
}

#[test]
fn a_figure_at_its_limit_or_not_measured_is_quiet() {
    let limits = Limits {
        others: 0.38,
        steal: 0.06,
        wait: 0.31,
        cpu_pressure: 0.10,
        io_pressure: 0.22,
    };
    assert_eq!(disturbed().beyond(&limits), None);
    let unmeasured = Disturbance {
        cpu_pressure: None,
        io_pressure: None,
        ..Disturbance::default()
    };
    assert_eq!(unmeasured.beyond(&Limits::default()), None);
}

#[test]
fn several_cpus_and_machine_wide_steal_are_worded() {
    let mut d = Disturbance {
        regions: vec![Region {
            cpus: vec![0, 1, 2],
            roles: vec![Role::Server, Role::Generator],
            others: 0.12,
            steal: 0.0,
        }],
        ..Disturbance::default()
    };
    assert_eq!(
        d.beyond(&Limits::default()).unwrap(),
        "other processes took 12 % of CPUs 0-2 (server and generator)"
    );
    d.regions = vec![Region {
        cpus: vec![0, 2],
        roles: vec![Role::Generator],
        others: 0.2,
        steal: 0.0,
    }];
    assert_eq!(
        d.beyond(&Limits::default()).unwrap(),
        "other processes took 20 % of the generator's CPUs 0, 2"
    );
    d.regions.push(Region {
        cpus: vec![1],
        roles: vec![Role::Server],
        others: 0.4,
        steal: 0.0,
    });
    assert_eq!(
        d.beyond(&Limits::default()).unwrap(),
        "other processes took 20 % of the generator's CPUs 0, 2 and 40 % of the server's CPU 1"
    );
    d.regions.clear();
    d.steal = 0.08;
    assert_eq!(d.beyond(&Limits::default()).unwrap(), "steal 8.0 %");
}

#[test]
fn old_files_read_and_new_ones_round_trip() {
    let old: Disturbance = serde_json::from_str(r#"{"seconds": 2.5}"#).unwrap();
    assert_eq!(old.seconds, 2.5);
    assert!(old.regions.is_empty() && old.cpu_pressure.is_none());
    let d = disturbed();
    let back: Disturbance = serde_json::from_str(&serde_json::to_string(&d).unwrap()).unwrap();
    assert_eq!(back, d);
    let limits: Limits = serde_json::from_str(r#"{"others": 0.2}"#).unwrap();
    assert_eq!(limits.others, 0.2);
    assert_eq!(limits.steal, Limits::default().steal);
}

/// Figures that are beyond the default limits only when `disturbed`; `seconds` numbers the
/// window.
fn window(n: usize, disturbed: bool) -> Disturbance {
    Disturbance {
        seconds: n as f64,
        io_pressure: Some(if disturbed { 0.9 } else { 0.0 }),
        ..Disturbance::default()
    }
}

#[test]
fn waiting_stops_at_the_first_quiet_window() {
    let calls = Cell::new(0);
    let (quiet, last) = limits::wait_until(
        &Limits::default(),
        Duration::from_secs(600),
        Duration::from_millis(1),
        |_| {
            calls.set(calls.get() + 1);
            Ok(window(calls.get(), calls.get() < 4))
        },
    )
    .unwrap();
    assert!(quiet);
    assert_eq!(
        last.seconds, 4.0,
        "the fourth window was the first quiet one"
    );
}

#[test]
fn waiting_gives_up_after_most_with_the_last_window() {
    let calls = Cell::new(0);
    let (quiet, last) = limits::wait_until(
        &Limits::default(),
        Duration::from_millis(30),
        Duration::from_millis(10),
        |w| {
            std::thread::sleep(w);
            calls.set(calls.get() + 1);
            Ok(window(calls.get(), true))
        },
    )
    .unwrap();
    assert!(!quiet);
    assert!(calls.get() >= 2, "windows until most was spent");
    assert_eq!(
        last.seconds,
        calls.get() as f64,
        "the last window's figures"
    );
    assert!(last.beyond(&Limits::default()).is_some());
}

#[test]
fn waiting_measures_once_even_when_most_is_zero() {
    let calls = Cell::new(0);
    let (quiet, _) = limits::wait_until(&Limits::default(), Duration::ZERO, QUIET_WINDOW, |_| {
        calls.set(calls.get() + 1);
        Ok(window(1, true))
    })
    .unwrap();
    assert!(!quiet);
    assert_eq!(calls.get(), 1);
}

#[test]
fn a_short_real_interval_on_this_machine() {
    let watched = Watched {
        generator: vec![std::process::id()],
        ..Watched::default()
    };
    let sampler = Disturbance::start(&watched).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let d = sampler.stop().unwrap();
    assert!(d.seconds >= 0.05);
    assert!(!d.cpus.is_empty());
    assert_eq!(d.regions.len(), 1, "the generator may run anywhere");
    let wait = d.generator_wait.unwrap();
    assert!(wait.threads >= 1);
    assert!(!wait.thread.unwrap().comm.is_empty());
    let gone = Watched {
        server: vec![u32::MAX >> 1],
        ..Watched::default()
    };
    let err = Disturbance::start(&gone).unwrap_err().to_string();
    assert!(err.starts_with("no process"), "{err}");
}
