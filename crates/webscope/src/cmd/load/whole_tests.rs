//! The config a segment runs with is the probe's, field by field (issue #38: flags rebuilt
//! from a config dropped every field they did not name, e.g. a probe's HTTP/2).

use std::time::{Duration, UNIX_EPOCH};

use clap::{CommandFactory, Parser};
use serde_json::Value;
use webscope_lab::capacity::segments;
use webscope_load::{Arrivals, Config, Io, Mode, Pacing, Target, TlsSettings};

use super::super::Cli;

/// Configs that between them set every serialised field away from `Config::new`'s (no one
/// config can: uring is closed loop only, a replay open loop and HTTP/1.1 only, ...).
fn away_from_defaults() -> Vec<Config> {
    let mut h2 = Config::new(Target::url("https://127.0.0.1:8443/a?b").unwrap());
    h2.connections = 7;
    h2.threads = 2;
    h2.duration = Duration::from_millis(2500);
    h2.pacing = Pacing::Open {
        rate: 1234.5,
        arrivals: Arrivals::Poisson,
        max_connections: 77,
    };
    h2.timeout = Duration::from_millis(750);
    h2.interval = Duration::from_millis(250);
    h2.headers = vec!["X-Probe: $(JOB_COMPLETION_INDEX) $$".into()];
    h2.seed = 42;
    h2.tls = TlsSettings {
        insecure: true,
        cacert: Some("/etc/ca.pem".into()),
        no_resume: true,
    };
    h2.method = "PUT".into();
    h2.body = b"{\"a\": 1}\n".to_vec();
    h2.http2 = Some(8);
    h2.busy_poll = Some(50);
    let mut uring = Config::new(Target::url("http://127.0.0.1:8080/").unwrap());
    uring.pacing = Pacing::Closed {
        think: Duration::from_millis(3),
    };
    uring.mode = Mode::Close;
    uring.backoff_503 = Duration::from_millis(20);
    uring.io = Io::Uring;
    uring.expect = webscope_load::Expect::parse("200,404").unwrap();
    let logged: Vec<_> = (0..3)
        .map(|i| webscope_load::replay::LoggedRequest {
            time: UNIX_EPOCH + Duration::from_secs(1_700_000_000 + i),
            method: "GET".into(),
            target: format!("/f{i}"),
            status: if i == 1 { 404 } else { 200 },
            bytes: 10,
            client: "10.0.0.1".into(),
        })
        .collect();
    let replay = webscope_load::replay::Replay::new(&logged, 2.0, true).unwrap();
    let mut replayed = Config::new(Target::replay("http://127.0.0.1:8080/", &replay).unwrap());
    replayed.pacing = Pacing::Open {
        rate: replay.mean_rate(),
        arrivals: Arrivals::Constant,
        max_connections: 1000,
    };
    replayed.replay = Some(std::sync::Arc::new(replay));
    replayed.drain = Duration::from_secs(4);
    let mut users = Config::new(Target::url("http://127.0.0.1:8080/").unwrap());
    users.users = Some(std::sync::Arc::new(webscope_load::users::Users {
        count: 9,
        connections: 4,
        sessions: webscope_load::users::Sessions::Model(webscope_load::users::SessionModel::surge()),
        ramp_up: Duration::from_millis(700),
    }));
    let mut h3 = Config::new(Target::url("https://127.0.0.1:8443/").unwrap());
    h3.http3 = Some(16);
    h3.zero_rtt = true;
    vec![h2, uring, replayed, users, h3]
}

/// The config `webscope load ARGS` would run with.
fn config_of(args: &[std::ffi::OsString]) -> (Config, super::super::Output) {
    let cli = Cli::try_parse_from(args).unwrap_or_else(|e| panic!("{e}"));
    cli.args.flags.config().unwrap_or_else(|e| panic!("{e:#}"))
}

#[test]
fn every_config_field_reaches_a_segment() {
    let configs = away_from_defaults();
    // The configs set every field away from its default, so that a field the segments drop
    // shows below: a field added to Config must be set here too.
    let default = serde_json::to_value(Config::new(configs[0].target.clone())).unwrap();
    let set: Vec<Value> = configs
        .iter()
        .map(|c| serde_json::to_value(c).unwrap())
        .collect();
    for (field, value) in default.as_object().unwrap() {
        if field != "target" {
            assert!(
                set.iter().any(|c| c[field] != *value),
                "no test config sets {field} away from its default"
            );
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    let start = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let (json, hlog) = (tmp.path().join("s.json"), tmp.path().join("s.hlog"));
    for config in &configs {
        let file = segments::write_config(config, 3, tmp.path()).unwrap();
        let args = segments::args(&file, (1, 3), start, (&json, &hlog)).unwrap();
        let (got, output) = config_of(&args);
        let want = segments::for_segments(config, 3);
        let (got_json, want_json) = (serde_json::to_value(&got), serde_json::to_value(&want));
        let (got_json, want_json) = (got_json.unwrap(), want_json.unwrap());
        for (field, value) in want_json.as_object().unwrap() {
            assert_eq!(got_json[field], *value, "the segment's {field}");
        }
        assert!(
            want.connections >= 3 * want.threads,
            "each thread a connection"
        );
        // What is the segment's own comes from its flags.
        assert_eq!(got.segment, Some((1, 3)));
        assert_eq!(got.start_at, Some(start));
        assert_eq!(got.hlog.as_deref(), Some(hlog.as_path()));
        assert_eq!(output.json.as_deref(), Some(json.as_path()));
        assert!(!output.live_line);
    }
}

#[test]
fn every_flag_either_shapes_the_load_or_is_the_process_own() {
    // The process's own: the fields of `Own`, each set on top of a config; and `--cpu`,
    // which `run` takes before the config is made (its threads' count follows the pinning).
    const OWN: [&str; 11] = [
        "cpu",
        "threshold",
        "json",
        "hlog",
        "samples",
        "segment",
        "start_at",
        "emit",
        "quiet",
        "live",
        "live_linger",
    ];
    let command = Cli::command();
    for arg in command.get_arguments() {
        let id = arg.get_id().as_str();
        if id == "config" || OWN.contains(&id) {
            continue;
        }
        assert!(
            super::SHAPING.contains(&id),
            "--{id} is neither a setting of the config (SHAPING) nor the process's own (Own)"
        );
        // Refused beside --config, whatever value it is given.
        let flag = match arg.get_long() {
            Some(long) => vec![format!("--{long}")],
            None => vec![],
        };
        let takes_value = arg.get_action().takes_values();
        let candidates = [
            "1",
            "1s",
            "200",
            "constant",
            "epoll",
            "common",
            "a=1:/x",
            "http://h/",
            "const(1)",
        ];
        let refused = candidates.iter().any(|value| {
            let mut argv = vec!["load".to_string(), "--config".into(), "c.json".into()];
            argv.extend(flag.iter().cloned());
            if takes_value || flag.is_empty() {
                argv.push(value.to_string());
            }
            Cli::try_parse_from(&argv)
                .is_err_and(|e| e.kind() == clap::error::ErrorKind::ArgumentConflict)
        });
        assert!(refused, "--{id} is not refused beside --config");
    }
}

#[test]
fn a_config_that_is_not_one_is_one_line_naming_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = |text: &str| {
        let path = tmp.path().join("c.json");
        std::fs::write(&path, text).unwrap();
        let argv = ["load".as_ref(), "--config".as_ref(), path.as_os_str()];
        let err = Cli::try_parse_from(argv).unwrap().args.flags.config().err();
        let said = format!("{:#}", err.expect("refused"));
        assert!(!said.contains('\n'), "{said}");
        assert!(said.contains(&path.display().to_string()), "{said}");
        said
    };
    let mut json: Value =
        serde_json::from_str(&away_from_defaults()[1].to_json().unwrap()).unwrap();
    json["connections"] = Value::from(-3);
    let text = serde_json::to_string_pretty(&json).unwrap();
    let line = 1 + text
        .lines()
        .position(|l| l.contains("\"connections\""))
        .unwrap();
    assert!(bad(&text).contains(&format!("expected usize at line {line}")));
    json["connections"] = Value::from(3);
    json["future_field"] = Value::from(true);
    assert!(bad(&json.to_string()).contains("unknown field `future_field`"));
    json.as_object_mut().unwrap().remove("future_field");
    json.as_object_mut().unwrap().remove("seed");
    assert!(bad(&json.to_string()).contains("missing field `seed`"));
    assert!(bad("not json").contains("is not a webscope load config"));
    let missing = tmp.path().join("none.json");
    let argv = ["load".as_ref(), "--config".as_ref(), missing.as_os_str()];
    let err = Cli::try_parse_from(argv).unwrap().args.flags.config().err();
    let said = format!("{:#}", err.expect("refused"));
    assert!(said.contains("none.json: cannot read it"), "{said}");
}

#[test]
fn a_config_for_pods_keeps_its_dollars_from_kubernetes() {
    let config = &away_from_defaults()[0];
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("c.json");
    std::fs::write(&file, config.to_json().unwrap()).unwrap();
    let load = [
        "-q".to_string(),
        format!("--config={}", file.display()),
        "--threshold".into(),
        "p99<1s".into(),
    ];
    let pods = super::check_for_pods(&load).unwrap();
    assert_eq!(pods.load[0], "-q");
    assert_eq!(pods.load[1], "--config");
    assert_eq!(&pods.load[3..], ["--threshold", "p99<1s"]);
    assert!(pods.load[2].contains("$$(JOB_COMPLETION_INDEX) $$$$"));
    // Kubernetes reads `$$` as `$`: the pod gets the config's own JSON.
    let expanded = pods.load[2].replace("$$", "$");
    assert_eq!(expanded, serde_json::to_string(config).unwrap());
    assert!(pods.local.iter().any(|l| l.contains("/etc/ca.pem")));
}
