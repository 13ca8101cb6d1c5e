//! The lab over TLS, HTTP/2 and HTTP/3 on its embedded server (`--tls`, `--http2`, `--http3`), and the protocols
//! experiment that puts HTTP/1.1, HTTPS and HTTP/2 side by side.

mod lab_support;

use std::path::Path;

use lab_support::{tiny_fileset, webscope};
use serde_json::Value;

fn lab(dir: &Path, args: &[&str]) -> std::process::Output {
    let fileset = dir.join("set");
    if !fileset.exists() {
        tiny_fileset(&fileset);
    }
    webscope()
        .arg("lab")
        .args(args)
        .arg("--out")
        .arg(dir.join("report"))
        .arg("--fileset")
        .arg(&fileset)
        .arg("--work")
        .arg(dir.join("work"))
        .output()
        .unwrap()
}

fn report(dir: &Path, run: &std::process::Output) -> Value {
    assert!(
        run.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    serde_json::from_slice(&std::fs::read(dir.join("report/report.json")).unwrap()).unwrap()
}

/// The load JSON of each run of an experiment.
fn loads(dir: &Path, experiment: &str) -> Vec<Value> {
    let mut runs: Vec<_> = std::fs::read_dir(dir.join("report").join(experiment))
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("run.json").exists())
        .map(|e| e.path())
        .collect();
    runs.sort();
    runs.iter()
        .map(|p| {
            let run: Value =
                serde_json::from_slice(&std::fs::read(p.join("run.json")).unwrap()).unwrap();
            run["load"].clone()
        })
        .collect()
}

#[test]
fn the_clients_sweep_runs_over_https_and_over_http2() {
    for (flag, close) in [("--tls", true), ("--http2", false)] {
        let tmp = tempfile::tempdir().unwrap();
        let run = lab(
            tmp.path(),
            &[flag, "--clients", "1,4", "--duration", "700ms"],
        );
        let report = report(tmp.path(), &run);
        let lab: Value =
            serde_json::from_slice(&std::fs::read(tmp.path().join("report/lab.json")).unwrap())
                .unwrap();
        let target = lab["target"].as_str().unwrap();
        assert!(target.contains("https://"), "{flag}: {target}");
        let invalid = report["validity"]["invalid"].as_array().unwrap();
        assert!(invalid.is_empty(), "{flag}: {report}");
        let runs = loads(tmp.path(), "clients");
        assert_eq!(runs.len(), 2);
        for load in runs {
            assert!(load["requests"].as_u64().unwrap() > 10, "{flag}: {load}");
            assert_eq!(load["errors"]["total"], 0, "{flag}");
            let (full, resumed) = (
                load["tls"]["full"].as_u64().unwrap(),
                load["tls"]["resumed"].as_u64().unwrap(),
            );
            let connections = load["connections"].as_u64().unwrap();
            if close {
                // A connection per request, sessions resumed after the first.
                assert!(resumed > full, "{flag}: {full} full, {resumed} resumed");
            } else {
                assert!(full + resumed <= connections + 4, "{flag}: {load}");
            }
        }
    }
}

/// `lab --http3`: the clients sweep against the embedded server serving HTTP/3 (`serve
/// --http3`), every run over QUIC, each client one connection of one stream.
#[test]
fn the_clients_sweep_runs_over_http3() {
    let tmp = tempfile::tempdir().unwrap();
    // 1.5 s runs: a debug build's QUIC handshakes on a busy machine take up to 600 ms.
    let run = lab(
        tmp.path(),
        &["--http3", "--clients", "1,4", "--duration", "1500ms"],
    );
    let report = report(tmp.path(), &run);
    let lab: Value =
        serde_json::from_slice(&std::fs::read(tmp.path().join("report/lab.json")).unwrap())
            .unwrap();
    let target = lab["target"].as_str().unwrap();
    assert!(target.contains("HTTP/3 over QUIC"), "{target}");
    let invalid = report["validity"]["invalid"].as_array().unwrap();
    assert!(invalid.is_empty(), "{report}");
    let runs = loads(tmp.path(), "clients");
    assert_eq!(runs.len(), 2);
    for (load, clients) in runs.iter().zip([1, 4]) {
        assert_eq!(
            load["protocol"], "HTTP/3 (1 stream per connection)",
            "{load}"
        );
        assert!(load["requests"].as_u64().unwrap() > 10, "{load}");
        assert_eq!(load["errors"]["total"], 0, "{load}");
        // Kept connections: one QUIC handshake per client, none per request.
        let handshakes =
            load["tls"]["full"].as_u64().unwrap() + load["tls"]["resumed"].as_u64().unwrap();
        assert_eq!(handshakes, clients, "{load}");
    }
}

#[test]
fn the_protocols_experiment_sets_http1_https_http2_and_http3_side_by_side() {
    let tmp = tempfile::tempdir().unwrap();
    let run = lab(
        tmp.path(),
        &["--experiment", "protocols", "--duration", "1500ms"],
    );
    let report = report(tmp.path(), &run);
    let rows = report["protocols"]["rows"].as_array().unwrap();
    let names: Vec<&str> = rows
        .iter()
        .map(|r| r["protocol"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "HTTP/1.1",
            "HTTP/1.1 close",
            "HTTPS",
            "HTTPS close",
            "HTTP/2",
            "HTTP/3"
        ]
    );
    for r in rows {
        assert!(r["requests_per_s"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["cpu_us_per_request"].as_f64().unwrap() > 0.0, "{r}");
        let tls = r["protocol"] != "HTTP/1.1" && r["protocol"] != "HTTP/1.1 close";
        assert_eq!(r["handshakes"].is_object(), tls, "{r}");
    }
    // A connection per request over TLS makes a handshake per request, mostly resumed; kept
    // connections make one each.
    let close = &rows[3];
    let (full, resumed) = (
        close["handshakes"]["full"].as_u64().unwrap(),
        close["handshakes"]["resumed"].as_u64().unwrap(),
    );
    assert!(resumed > full, "{close}");
    assert!(
        close["handshake_share_pct"].as_f64().unwrap()
            > rows[2]["handshake_share_pct"].as_f64().unwrap(),
        "{rows:?}"
    );
    let reading = report["protocols"]["reading"].as_str().unwrap();
    assert!(
        reading.contains("Over TLS a keep-alive request costs")
            && reading.contains("HTTP/2 costs")
            && reading.contains("HTTP/3 costs"),
        "{reading}"
    );
    // The HTTP/2 row's requests went over HTTP/2, one stream per connection.
    let h2 = &loads(tmp.path(), "protocols")[4];
    assert!(
        h2["config"].to_string().contains("http2") || h2.to_string().contains("HTTP/2"),
        "{h2}"
    );
    // The HTTP/3 row's over QUIC: the server's UDP port, one stream per connection.
    let h3 = &loads(tmp.path(), "protocols")[5];
    assert_eq!(h3["protocol"], "HTTP/3 (1 stream per connection)", "{h3}");
    assert_eq!(h3["errors"]["total"], 0, "{h3}");
}

#[test]
fn tls_http2_and_http3_are_refused_where_they_do_not_apply() {
    let tmp = tempfile::tempdir().unwrap();
    for (args, says) in [
        (
            &["--tls", "--experiment", "techniques"][..],
            "techniques runs plain",
        ),
        (
            &["--http2", "--experiment", "degradation"][..],
            "degradation runs plain",
        ),
        (
            &["--tls", "--target", "https://127.0.0.1:1/"][..],
            "--tls is for the embedded server",
        ),
        (
            &["--experiment", "clients", "--segments", "2"][..],
            "clients runs one generator",
        ),
        (
            &["--experiment", "capacity", "--kubernetes", "webscope:1"][..],
            "pods, which cannot reach the embedded server",
        ),
        (
            &["--http3", "--experiment", "degradation"][..],
            "degradation does not run over HTTP/3",
        ),
        (
            &["--http3", "--target", "http://127.0.0.1:1/"][..],
            "give an https:// --target",
        ),
    ] {
        let run = lab(tmp.path(), args);
        assert_eq!(run.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&run.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(
            !tmp.path().join("report").exists(),
            "{args:?}: nothing written"
        );
    }
    // One protocol at a time (clap's usage error).
    let run = lab(tmp.path(), &["--http3", "--http2"]);
    assert!(!run.status.success());
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(err.contains("cannot be used with"), "{err}");
}

/// The capacity search over HTTPS and over HTTP/2: every probe an open loop of TLS
/// connections (one handshake each, a connection per request) or of HTTP/2 streams, judged
/// as over plain HTTP.
#[test]
fn the_capacity_search_runs_over_https_and_http2() {
    for flag in ["--tls", "--http2"] {
        capacity_over(flag, &[]);
    }
}

/// The capacity search over HTTP/3 (#50): every probe an open loop of 4 QUIC connections of
/// 100 streams, as over HTTP/2, and the preflight's sample fetched over HTTP/3 (the runs'
/// own listener, not the server's TCP one).
#[test]
fn the_capacity_search_runs_over_http3_with_its_preflight_over_quic() {
    // From 800 req/s: the probes that climb from 100 would check nothing more, and each
    // costs about 2 s (30 s when the machine is disturbed and the search waits for it).
    let tmp = capacity_over("--http3", &["--from", "800"]);
    let lab: Value =
        serde_json::from_slice(&std::fs::read(tmp.path().join("report/lab.json")).unwrap())
            .unwrap();
    let preflight = lab["preflight"].as_str().unwrap();
    assert!(
        preflight.contains("fetched over HTTP/3") && preflight.contains("compared byte for byte"),
        "{preflight}"
    );
}

/// `--http3` against a target that serves HTTPS over TCP but nothing on its UDP port: the
/// preflight, over QUIC, refuses it in one line naming the UDP port, before any probe (a
/// preflight over TCP would have passed it, and every probe failed). The capacity search
/// and the users search alike (users runs over HTTP/3 too: issue 50).
#[test]
fn an_http3_lab_refuses_a_target_with_nothing_on_its_udp_port_in_its_preflight() {
    let tmp = tempfile::tempdir().unwrap();
    let set = tmp.path().join("set");
    tiny_fileset(&set);
    let (cert, key) = lab_support::tls::certificate(tmp.path());
    let served = lab_support::Served::start_with(
        &set,
        &[
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ],
        None,
    );
    let port = served
        .base_url
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches('/');
    for experiment in ["capacity", "users"] {
        let run = lab(
            tmp.path(),
            &[
                "--http3",
                "--target",
                &served.base_url,
                "--insecure",
                "--experiment",
                experiment,
            ],
        );
        assert_eq!(run.status.code(), Some(1));
        let err = String::from_utf8_lossy(&run.stderr);
        // One line says it all: what failed, the UDP port, what to do.
        let said = err
            .lines()
            .find(|l| l.contains("does not answer over HTTP/3"))
            .unwrap_or_else(|| panic!("{experiment}: {err}"));
        assert!(
            said.contains(&format!("no QUIC answer from the server's UDP port {port}"))
                && said.contains("leave --http3 out"),
            "{experiment}: {err}"
        );
        assert!(!tmp.path().join("report").join(experiment).exists());
    }
    served.stop();
}

/// Segmented probes speak as the probe does: each segment process is given the probe's
/// config, its TLS trust and HTTP/2 streams included (issue #38: flags rebuilt from the
/// config had neither, so the lab refused TLS and HTTP/2 with --segments).
#[test]
fn segmented_capacity_probes_run_http2_over_tls_in_every_segment() {
    let tmp = capacity_over("--http2", &["--segments", "2"]);
    let probes = std::fs::read_dir(tmp.path().join("report/capacity")).unwrap();
    let mut segments = 0;
    for probe in probes
        .flatten()
        .filter(|e| e.path().join("run.json").exists())
    {
        for i in 0..2 {
            let part: Value = serde_json::from_slice(
                &std::fs::read(probe.path().join(format!("segment-{i}.json"))).unwrap(),
            )
            .unwrap();
            assert_eq!(part["segment"], format!("{i}/2"), "{part}");
            assert_eq!(part["protocol"], "HTTP/2 (100 streams per connection)");
            assert!(part["tls"]["full"].as_u64().unwrap() > 0, "{part}");
            segments += 1;
        }
    }
    assert!(segments >= 2);
}

fn capacity_over(flag: &str, extra: &[&str]) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let mut args = vec![
        flag,
        "--experiment",
        "capacity",
        "--duration",
        "700ms",
        "--precision",
        "0.5",
        // What is checked is the protocol each probe spoke, not the capacity: an objective
        // that 700-ms probes decide (a p99 would need 2 000 requests a probe).
        "--slo",
        "p50<=500ms,errors<=50%,goodput>=50%",
    ];
    args.extend_from_slice(extra);
    if !extra.contains(&"--from") {
        args.extend(["--from", "100"]);
    }
    let run = lab(tmp.path(), &args);
    // A search on a machine the other tests keep busy may end "no capacity: the machine was
    // disturbed" (exit 4, CI saw it with this binary's other tests on both CPUs): its probes
    // still spoke the protocol, which is what is checked here.
    let disturbed = run.status.code() == Some(4)
        && String::from_utf8_lossy(&run.stderr).contains("the machine was disturbed");
    let report = if disturbed {
        serde_json::from_slice(&std::fs::read(tmp.path().join("report/report.json")).unwrap())
            .unwrap()
    } else {
        report(tmp.path(), &run)
    };
    let probes = report["capacity"]["probes"].as_array().unwrap();
    assert!(!probes.is_empty(), "{report}");
    for load in loads(tmp.path(), "capacity") {
        assert_eq!(load["pacing"], "open", "{flag}: {load}");
        assert!(load["target"].as_str().unwrap().starts_with("https://"));
        assert!(load["tls"]["full"].as_u64().unwrap() > 0, "{flag}: {load}");
        // Over HTTP/2 and HTTP/3, the probe's concurrency is its streams: 100 on each
        // connection.
        let protocol = load["protocol"].as_str().unwrap();
        let expected = match flag {
            "--http2" => "HTTP/2 (100 streams per connection)",
            "--http3" => "HTTP/3 (100 streams per connection)",
            _ => "HTTP/1.1",
        };
        assert_eq!(protocol, expected, "{flag}: {load}");
    }
    tmp
}

/// Issue 50: `--experiment protocols --loss R --rtt D` loads a page and 20 objects over HTTP/2
/// and over HTTP/3 across the relay's link (two network namespaces, TCP's congestion control
/// set to quinn's), and its page gives HTTP/3's page loads over HTTP/2's beside the literature. Needs root and namespaces: without them,
/// one line and exit 1 (and the claim is unchecked here).
#[test]
fn the_loss_comparison_loads_pages_over_http2_and_http3_across_a_delayed_link() {
    let tmp = tempfile::tempdir().unwrap();
    let args = [
        "--experiment",
        "protocols",
        "--loss",
        "2%",
        "--rtt",
        "10ms",
        "--duration",
        "1500ms",
    ];
    let run = lab(tmp.path(), &args);
    let stderr = String::from_utf8_lossy(&run.stderr).to_string();
    if !run.status.success() && stderr.contains("network namespace") {
        assert_eq!(run.status.code(), Some(1), "{stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        lab_support::unchecked(&format!("no network namespaces here: {}", stderr.trim()));
        return;
    }
    let report = report(tmp.path(), &run);
    let invalid = report["validity"]["invalid"].as_array().unwrap();
    assert!(invalid.is_empty(), "{report}");
    let runs = loads(tmp.path(), "protocols");
    let protocols: Vec<&str> = runs
        .iter()
        .map(|l| l["protocol"].as_str().unwrap())
        .collect();
    assert_eq!(
        protocols,
        [
            "HTTP/2 (a connection per user)",
            "HTTP/3 (a connection per user)"
        ]
    );
    for load in &runs {
        let users = &load["users"];
        assert!(users["page_views"].as_u64().unwrap() > 0, "{load}");
        assert_eq!(load["errors"]["total"], 0, "{load}");
        // A page view is the page, then its objects: two round trips of 10 ms at least, a
        // bound the relay's delay makes (on loopback it would be well under a millisecond).
        let p50 = users["page_load_us"]["p50"].as_f64().unwrap();
        assert!(p50 >= 20_000.0, "page load p50 {p50} us: {load}");
        // Each user's one connection, and a handshake each (4 users).
        assert_eq!(load["tls"]["full"], 4, "{load}");
    }
    let page = std::fs::read_to_string(tmp.path().join("report/index.html")).unwrap();
    assert!(page.contains("Protocols under loss"), "no loss page");
    assert!(page.contains("HTTP/3&#x27;s page load is") || page.contains("HTTP/3's page load is"));
    // One round: the ratio without an interval, and the way to get one.
    assert!(
        page.contains("--repeat 3 or more gives an interval"),
        "no ratio's note"
    );
    // Each run's link says what it dropped, each way, and it dropped some of both
    // protocols' packets (2 % of a few thousand).
    for row in ["row-6", "row-7"] {
        let link = tmp.path().join(format!("report/protocols/{row}/link.txt"));
        let text = std::fs::read_to_string(&link).unwrap();
        assert!(
            text.starts_with("up: ") && text.contains("; down: "),
            "{text}"
        );
        assert!(!text.contains("down: 0 of"), "nothing dropped: {text}");
    }
    assert!(page.contains("Kakhki et al."));
    // Each row says its users' handshakes (TLS over TCP, QUIC's), as the protocols page does:
    // 4 full, one a user, each at least the link's round trip of 10 ms.
    assert!(
        page.contains("handshakes full/resumed"),
        "no handshakes' column"
    );
    let rows = report["protocols"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{rows:?}");
    for row in rows {
        assert_eq!(row["handshakes"]["full"], 4, "{row}");
        let mean = row["handshakes"]["mean_ms"].as_f64().unwrap();
        assert!(mean >= 10.0, "a handshake under the RTT: {row}");
    }
}

#[test]
fn loss_is_the_protocols_experiments_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let run = lab(tmp.path(), &["--experiment", "clients", "--loss", "1%"]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("--loss is the protocols experiment's loss comparison"),
        "{stderr}"
    );
    let run = lab(tmp.path(), &["--experiment", "protocols", "--loss", "70%"]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("under 50%"), "{stderr}");
}
