use super::*;

/// The embedded quick lab of the issue: server 45 % of its core, generator 71 %, the
/// machine's CPUs 87 % busy, 14 000 sockets in TIME_WAIT of a 28 232-port range.
fn issue_run() -> Evidence {
    Evidence {
        clients: 5.0,
        goodput_rps: 16824.0,
        mean_ms: 0.29,
        server_busy_cores: Some(0.45),
        server_cpus: Some(1.0),
        server_processes: Some("1 process: webscope".into()),
        generator_busy: 0.71,
        server_host: Some(CpuShares {
            busy: 87.0,
            user: 9.0,
            system: 48.0,
            softirq: 30.0,
        }),
        time_wait: Some(14_000.0),
        connects: 50_472.0,
        duration_s: 3.0,
        port_range: Some(28_232.0),
        tw_buckets: Some(131_072.0),
        ..Evidence::default()
    }
}

#[test]
fn the_issues_run_is_bound_by_the_machine_not_latency() {
    let v = judge(&issue_run());
    assert_eq!(v.bound, Bound::MachineCpu, "{}", v.reading);
    assert!(
        v.reading.contains("87 % busy") && v.reading.contains("softirq 30"),
        "{}",
        v.reading
    );
}

#[test]
fn each_rule_fires_in_order_and_quotes_its_figure() {
    let mut e = issue_run();
    e.server_busy_cores = Some(0.97);
    let v = judge(&e);
    assert_eq!(v.bound, Bound::ServerCpu);
    assert!(v.reading.contains("0.97 of the 1 core"), "{}", v.reading);

    let mut e = issue_run();
    e.generator_busy = 0.96;
    let v = judge(&e);
    assert_eq!(v.bound, Bound::Generator);
    assert!(v.reading.contains("96 % busy") && v.reading.contains("measures the generator"));

    let mut e = issue_run();
    e.generator_busy_or_waiting = 0.93;
    let v = judge(&e);
    assert_eq!(v.bound, Bound::Generator, "{}", v.reading);
    assert!(
        v.reading.contains("ran 71 %") && v.reading.contains("waited for a CPU 22 %"),
        "{}",
        v.reading
    );

    let mut e = issue_run();
    e.server_host = Some(CpuShares {
        busy: 60.0,
        ..CpuShares::default()
    });
    e.net_util_pct = Some(("eth0".into(), 95.0));
    assert_eq!(judge(&e).bound, Bound::Network);
    // A machine busy in user space is not said to be busy with kernel work.
    let mut busy = issue_run();
    busy.server_host = Some(CpuShares {
        busy: 98.0,
        user: 87.0,
        system: 9.0,
        softirq: 2.0,
    });
    let v = judge(&busy);
    assert_eq!(v.bound, Bound::MachineCpu);
    assert!(
        v.reading.contains("user time takes most") && !v.reading.contains("kernel work"),
        "{}",
        v.reading
    );
    e.net_util_pct = Some(("eth0".into(), 40.0));
    e.disk_util_pct = Some(97.0);
    let v = judge(&e);
    assert_eq!(v.bound, Bound::Disk);
    assert!(v.reading.contains("97 %"));

    e.disk_util_pct = Some(3.0);
    let v = judge(&e);
    assert_eq!(
        v.bound,
        Bound::Ports,
        "14 000 of 28 232 is past half the range"
    );
    assert!(
        v.reading.contains("14000 sockets") && v.reading.contains("28232"),
        "{}",
        v.reading
    );

    e.time_wait = Some(120_000.0);
    e.port_range = None;
    let v = judge(&e);
    assert_eq!(v.bound, Bound::Ports);
    assert!(
        v.reading.contains("tcp_max_tw_buckets = 131072"),
        "{}",
        v.reading
    );

    e.time_wait = Some(100.0);
    e.listen_overflows_per_s = Some(250.0);
    let v = judge(&e);
    assert_eq!(v.bound, Bound::AcceptQueue);
    assert!(v.reading.contains("250 times a second"));

    e.listen_overflows_per_s = Some(0.5);
    let v = judge(&e);
    assert_eq!(v.bound, Bound::Latency);
    assert!(
        v.reading.contains("server 45 % of its 1 core")
            && v.reading.contains("5 clients / 0.29 ms = 17241"),
        "{}",
        v.reading
    );
}

/// #27: nginx with worker_processes 1, unpinned on 2 CPUs, over TLS: the worker ran
/// 87.6 % and waited 5.1 %. In sum the server used 0.88 of 2 cores, but one thread is
/// its limit.
#[test]
fn one_busy_thread_is_the_servers_limit_whatever_the_cpus() {
    let e = Evidence {
        clients: 4.0,
        goodput_rps: 9000.0,
        mean_ms: 0.44,
        server_busy_cores: Some(0.88),
        server_cpus: Some(2.0),
        server_processes: Some("2 processes: nginx".into()),
        server_threads: Some(1.0),
        server_busiest_thread: Some(("nginx".into(), 0.876, 0.051)),
        generator_busy: 0.6,
        ..Evidence::default()
    };
    let expect = |e: &Evidence, bound: Bound, says: &[&str]| {
        let v = judge(e);
        assert_eq!(v.bound, bound, "{}", v.reading);
        assert!(says.iter().all(|s| v.reading.contains(s)), "{}", v.reading);
    };
    expect(
        &e,
        Bound::ServerCpu,
        &["ran 88 %", "waited for a CPU 5.1 %"],
    );
    // The sum alone is judged against the one thread, not the two CPUs.
    let e = Evidence {
        server_busy_cores: Some(0.93),
        server_busiest_thread: Some(("nginx".into(), 0.85, 0.0)),
        ..e
    };
    expect(&e, Bound::ServerCpu, &["0.93 of the 1 core"]);
    // A thread that sleeps half the run is no limit.
    let idle = Evidence {
        server_busy_cores: Some(0.5),
        server_busiest_thread: Some(("nginx".into(), 0.5, 0.0)),
        ..e
    };
    expect(&idle, Bound::Latency, &["server 50 % of its 1 core"]);
    // A thread held back by another on its CPU (runs 45 %, waits 48 %) is not the limit.
    let shared = Evidence {
        server_busiest_thread: Some(("webscope-w0".into(), 0.45, 0.48)),
        ..idle
    };
    expect(&shared, Bound::Latency, &["server 50 % of its 1 core"]);
}

/// #27: a keep-alive run's 88 connects leave at most 88 sockets in TIME_WAIT, whatever
/// the port held from an earlier lab.
#[test]
fn a_run_owns_no_more_time_wait_than_its_connections() {
    assert_eq!(own_time_wait(Some(16_424.0), 88.0, 2.0), Some(88.0));
    assert_eq!(own_time_wait(Some(9_000.0), 26_538.0, 3.0), Some(9_000.0));
    // Past a minute only the last minute's connections still linger.
    assert_eq!(
        own_time_wait(Some(50_000.0), 120_000.0, 120.0),
        Some(50_000.0)
    );
    assert_eq!(
        own_time_wait(Some(80_000.0), 120_000.0, 120.0),
        Some(60_000.0)
    );
    assert_eq!(own_time_wait(None, 88.0, 2.0), None);
}

#[test]
fn a_remote_generator_host_is_named_and_unknowns_do_not_fire() {
    let e = Evidence {
        clients: 10.0,
        goodput_rps: 1000.0,
        mean_ms: 10.0,
        generator_busy: 0.5,
        server_host: Some(CpuShares {
            busy: 20.0,
            ..CpuShares::default()
        }),
        generator_host: Some(CpuShares {
            busy: 92.0,
            ..CpuShares::default()
        }),
        ..Evidence::default()
    };
    let v = judge(&e);
    assert_eq!(v.bound, Bound::MachineCpu);
    assert!(v.reading.contains("generator's machine"), "{}", v.reading);
    let unknown = Evidence {
        clients: 1.0,
        goodput_rps: 100.0,
        mean_ms: 10.0,
        ..Evidence::default()
    };
    let v = judge(&unknown);
    assert_eq!(v.bound, Bound::Latency);
    assert!(
        v.reading.contains("server CPU not measured"),
        "{}",
        v.reading
    );
}

#[test]
fn an_open_loop_with_nothing_at_its_limit_is_bound_by_its_rate_or_by_what_it_waits_on() {
    let quiet = |goodput_rps: f64| Evidence {
        clients: 3.0,
        offered_rps: Some(100.0),
        goodput_rps,
        mean_ms: 40.0,
        server_busy_cores: Some(0.03),
        server_cpus: Some(1.0),
        generator_busy: 0.03,
        ..Evidence::default()
    };
    // It answered what was offered: the rate is the bound, and no clients are spoken of.
    let v = judge(&quiet(99.0));
    assert_eq!(v.bound, Bound::Offered, "{}", v.reading);
    assert!(
        v.reading.contains("99 of the 100 req/s asked"),
        "{}",
        v.reading
    );
    assert!(!v.reading.contains("client"), "{}", v.reading);
    // It answered less, with every measured resource idle: something unmeasured.
    let v = judge(&quiet(80.0));
    assert_eq!(v.bound, Bound::Latency, "{}", v.reading);
    assert!(
        v.reading.contains("80 of the 100 req/s offered"),
        "{}",
        v.reading
    );
    assert!(!v.reading.contains("Little"), "{}", v.reading);
    // The same run in a closed loop keeps Little's law.
    let closed = Evidence {
        offered_rps: None,
        ..quiet(80.0)
    };
    assert!(judge(&closed).reading.contains("Little's law"));
}

/// The health of a 2-s run with these statuses and connection-level failures, judged on
/// 2xx.
fn health(codes: serde_json::Value, errors: serde_json::Value) -> webscope_record::health::Health {
    let load = webscope_record::load_json(
        serde_json::json!({ "duration_s": 2.0, "status_codes": codes, "errors": errors }),
    );
    webscope_record::health::Health::of(
        &load,
        &webscope_record::health::Expect::parse("2xx").unwrap(),
        1.0,
    )
}

/// An open-loop probe at 1 000 req/s of a server that answers 630 of them and refuses the
/// rest with `refusal` (or, when it is a failure's key, by closing connections), with the
/// server and the generator idle.
fn refusing(codes: serde_json::Value, errors: serde_json::Value) -> Evidence {
    let health = health(codes, errors);
    Evidence {
        clients: 4.0,
        offered_rps: Some(1_000.0),
        goodput_rps: health.goodput_rps,
        mean_ms: 0.4,
        server_busy_cores: Some(0.03),
        server_cpus: Some(1.0),
        generator_busy: 0.1,
        refused: Refused::of(&health),
        ..Evidence::default()
    }
}

/// #33: probes of nginx behind `limit_req` that fail on 503 were "bound by latency" while
/// their p99 passed.
#[test]
fn a_503_limited_servers_failing_probes_say_refuses_load() {
    let e = refusing(
        serde_json::json!({"200": 1260, "503": 740}),
        serde_json::json!({}),
    );
    let v = judge(&e);
    assert_eq!(v.bound, Bound::Refused, "{}", v.reading);
    assert_eq!(v.bound.label(), "refuses load");
    for said in [
        "refuses load beyond 630 req/s of the 1000 offered",
        "503 Service Unavailable on 37 % of requests",
        "a rate or connection limit",
        "3.0 % of its 1 core",
    ] {
        assert!(v.reading.contains(said), "{said:?} in {}", v.reading);
    }
    // 429s and connections reset count too; the largest kind is quoted with the sum.
    let e = refusing(
        serde_json::json!({"200": 1800, "429": 150}),
        serde_json::json!({"reset": 50}),
    );
    let v = judge(&e);
    assert_eq!(v.bound, Bound::Refused, "{}", v.reading);
    assert!(
        v.reading.contains("429 Too Many Requests on 7.5 %")
            && v.reading.contains("refusals of every kind 10 %"),
        "{}",
        v.reading
    );
    // A server at its CPU limit that sheds load is bound by its CPU; a generator that could
    // not offer the load measured itself.
    let mut cpu = refusing(
        serde_json::json!({"200": 1260, "503": 740}),
        serde_json::json!({}),
    );
    cpu.server_busy_cores = Some(0.97);
    assert_eq!(judge(&cpu).bound, Bound::ServerCpu);
    let mut generator = cpu.clone();
    generator.server_busy_cores = Some(0.03);
    generator.generator_busy = 0.95;
    assert_eq!(judge(&generator).bound, Bound::Generator);
    // Refusals come before a busy machine: the server's own answer says what bounds it.
    let mut busy = cpu;
    busy.server_busy_cores = Some(0.03);
    busy.server_host = Some(CpuShares {
        busy: 95.0,
        user: 80.0,
        system: 10.0,
        softirq: 5.0,
    });
    assert_eq!(judge(&busy).bound, Bound::Refused);
}

#[test]
fn refusals_bind_only_when_they_are_most_of_the_errors_and_past_their_limit() {
    // 404s are a misconfiguration, not a limit: the two 503s among them are not the bound.
    let e = refusing(
        serde_json::json!({"200": 1800, "404": 198, "503": 2}),
        serde_json::json!({}),
    );
    let r = e.refused.as_ref().expect("two refusals");
    assert!(!r.binds(), "{r:?}");
    assert_ne!(judge(&e).bound, Bound::Refused);
    // One refusal in 2 000 requests is under the 0.1 % limit.
    let e = refusing(
        serde_json::json!({"200": 1999, "503": 1}),
        serde_json::json!({}),
    );
    assert_ne!(judge(&e).bound, Bound::Refused);
    // A server that answered nothing is down, not limiting load.
    let down = health(
        serde_json::json!({}),
        serde_json::json!({"connect_refused": 500}),
    );
    assert_eq!(Refused::of(&down), None);
    // Expected statuses are no refusals.
    let load = webscope_record::load_json(
        serde_json::json!({"duration_s": 1.0, "status_codes": {"200": 50, "503": 50}}),
    );
    let expect = webscope_record::health::Expect::parse("2xx,503").unwrap();
    assert_eq!(
        Refused::of(&webscope_record::health::Health::of(&load, &expect, 1.0)),
        None
    );
}

/// #47: a bound is an enum in memory and its label on disk, as probe.json always kept it;
/// a label webscope never wrote is refused, not read as some bound.
#[test]
fn a_bound_is_kept_as_its_label() {
    #[derive(serde::Serialize, serde::Deserialize)]
    struct Kept {
        #[serde(with = "crate::as_label")]
        bound: Bound,
    }
    for b in Bound::ALL {
        let text = serde_json::to_string(&Kept { bound: b }).unwrap();
        assert_eq!(text, format!("{{\"bound\":\"{}\"}}", b.label()));
        assert_eq!(serde_json::from_str::<Kept>(&text).unwrap().bound, b);
    }
    assert!(serde_json::from_str::<Kept>(r#"{"bound":"machine-cpu"}"#).is_err());
}

/// The kernel module's accept-queue wait names the accept queue when its connections waited
/// a large share of the response time (#49), and not when the wait is small beside it or the
/// server's CPU explains it first.
#[test]
fn a_long_wait_in_the_listen_queue_names_the_accept_queue() {
    let mut e = Evidence {
        clients: 50.0,
        goodput_rps: 5000.0,
        mean_ms: 10.0,
        generator_busy: 0.3,
        server_busy_cores: Some(0.4),
        server_cpus: Some(1.0),
        accept_wait_p99_ms: Some(4.1),
        accept_wait_per_request_ms: Some(3.0),
        ..Evidence::default()
    };
    let v = judge(&e);
    assert_eq!(v.bound, Bound::AcceptQueue, "{}", v.reading);
    assert!(
        v.reading
            .contains("connections waited 4.10 ms in the listen queue at p99, 30 % of the mean")
            && v.reading.contains("the server accepts too slowly"),
        "{}",
        v.reading
    );
    // A quarter of the mean is the limit: a fifth is latency.
    e.accept_wait_per_request_ms = Some(2.0);
    assert_eq!(judge(&e).bound, Bound::Latency);
    // A p99 under a millisecond is no accept loop falling behind, whatever its share.
    e.accept_wait_per_request_ms = Some(3.0);
    e.accept_wait_p99_ms = Some(0.9);
    e.mean_ms = 1.0;
    assert_eq!(judge(&e).bound, Bound::Latency);
    // A server at its CPU limit is the cause of its queue.
    e.accept_wait_p99_ms = Some(4.1);
    e.mean_ms = 10.0;
    e.server_busy_cores = Some(0.98);
    assert_eq!(judge(&e).bound, Bound::ServerCpu);
}
