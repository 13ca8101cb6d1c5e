//! One run from several generators: `load --segment I/N --start-at T` processes against
//! `webscope serve`, merged exactly by `webscope merge` from their JSON files or from their
//! framed output (`--emit`, as pods' logs carry it), checked against the server's access log;
//! and the same across network namespaces made by the test (a server host and three generator
//! hosts on a bridge), where root allows.

mod lab_support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

use lab_support::{webscope, Served};
use serde_json::Value;

fn json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn lines(path: &Path) -> u64 {
    std::fs::read_to_string(path).unwrap().lines().count() as u64
}

/// `webscope merge OUT RESULTS...`, which must succeed; its summary.
fn merge(out: &Path, results: &[String]) -> String {
    let merge = webscope()
        .arg("merge")
        .arg(out)
        .args(results)
        .output()
        .unwrap();
    assert!(
        merge.status.success(),
        "{}",
        String::from_utf8_lossy(&merge.stderr)
    );
    String::from_utf8_lossy(&merge.stdout).into_owned()
}

/// The three segments of `-c 7 -d 2s` on `url`, started together 1.5 s from now.
fn three_segments(url: &str, dir: &Path, extra: &[&str]) -> Vec<Child> {
    let start = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        + 1.5;
    (0..3)
        .map(|i| {
            webscope()
                .args(["load", url, "-c", "7", "-t", "1", "-d", "2s", "-q"])
                .args([
                    "--segment",
                    &format!("{i}/3"),
                    "--start-at",
                    &format!("{start:.3}"),
                ])
                .arg("--json")
                .arg(dir.join(format!("s{i}.json")))
                .arg("--hlog")
                .arg(dir.join(format!("s{i}.hlog")))
                .args(extra)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect()
}

#[test]
fn three_generators_merge_to_what_the_server_served() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("index.html"), "segments\n").unwrap();
    let log = tmp.path().join("access.log");
    let server = Served::start_with(&root, &["--access-log", log.to_str().unwrap()], None);
    let url = format!("{}index.html", server.base_url);
    let children = three_segments(&url, tmp.path(), &["--emit"]);
    // The pods' logs, as `kubectl logs --prefix` would concatenate them.
    let mut pods = String::new();
    for (i, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            pods.push_str(&format!("[pod/webscope-load-{i}/load] {line}\n"));
        }
    }
    server.stop();
    let parts: Vec<Value> = (0..3)
        .map(|i| json(&tmp.path().join(format!("s{i}.json"))))
        .collect();
    let shares: Vec<u64> = parts
        .iter()
        .map(|p| p["connections"].as_u64().unwrap())
        .collect();
    assert_eq!(shares, [3, 2, 2]);
    for p in &parts {
        assert!(
            p["start_late_s"].as_f64().unwrap() < 0.05,
            "{}",
            p["start_late_s"]
        );
        assert_eq!(p["started_unix_s"], parts[0]["started_unix_s"]);
    }

    let out = tmp.path().join("merged");
    let files: Vec<String> = (0..3)
        .map(|i| tmp.path().join(format!("s{i}.json")).display().to_string())
        .collect();
    let summary = merge(&out, &files);
    assert!(
        summary.contains("Generators:") && summary.contains("2/3"),
        "{summary}"
    );
    let merged = json(&out.join("load.json"));
    let sum: u64 = parts.iter().map(|p| p["requests"].as_u64().unwrap()).sum();
    assert_eq!(merged["requests"].as_u64().unwrap(), sum);
    assert_eq!(merged["connections"], 7);
    assert_eq!(merged["generators"].as_array().unwrap().len(), 3);
    // The server logged every response the generators counted, and at most the requests in
    // flight when they stopped (one per connection) more.
    let served = lines(&log);
    assert!(
        (sum..=sum + 7).contains(&served),
        "the server logged {served} responses, the merge counts {sum}"
    );

    // The same result from the framed pods' logs.
    let framed = tmp.path().join("pods.log");
    std::fs::write(&framed, pods).unwrap();
    let out2 = tmp.path().join("merged2");
    merge(&out2, &[framed.display().to_string()]);
    let again = json(&out2.join("load.json"));
    for key in [
        "requests",
        "errors",
        "latency_us",
        "connects",
        "status_codes",
    ] {
        assert_eq!(again[key], merged[key], "{key}");
    }
}

#[test]
fn merge_refuses_what_is_not_one_whole_run() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("x"), "x").unwrap();
    let server = Served::start(&root);
    let url = format!("{}x", server.base_url);
    for child in three_segments(&url, tmp.path(), &[]) {
        assert!(child.wait_with_output().unwrap().status.success());
    }
    let merge = |files: &[&str]| {
        let out = webscope()
            .arg("merge")
            .arg(tmp.path().join("m"))
            .args(files.iter().map(|f| tmp.path().join(f)))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(err.lines().count(), 1, "{err}");
        // A merge that failed leaves no folder to be taken for a result.
        assert!(!tmp.path().join("m").exists(), "{err}");
        err
    };
    assert!(merge(&["s0.json", "s1.json"]).contains("segment 2/3 missing"));
    assert!(merge(&["s0.json", "s0.json", "s1.json"]).contains("given twice"));
    std::fs::remove_file(tmp.path().join("s2.hlog")).unwrap();
    assert!(merge(&["s0.json", "s1.json", "s2.json"]).contains("no interval log beside it"));
    std::fs::write(tmp.path().join("junk.log"), "nothing framed here\n").unwrap();
    assert!(merge(&["junk.log"]).contains("holds no result"));
    let bad = webscope()
        .args(["load", &url, "--segment", "3/3"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("0 <= I < N"));
}

/// Three generator hosts and a server host: network namespaces on a bridge, each generator a
/// real `webscope load --segment` in its own namespace. Needs root and `ip`; skipped with a
/// note elsewhere unless WEBSCOPE_REQUIRE_NETNS is set (CI sets it).
#[test]
fn three_hosts_in_namespaces_add_up() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("index.html"), vec![b'n'; 1024]).unwrap();
    let id = std::process::id();
    let script = format!(
        r#"
        S=wss{id}
        server=
        ip netns add $S 2>/dev/null || exit 99
        cleanup() {{ [ -n "$server" ] && kill $server 2>/dev/null || true; for n in $S wsg0{id} wsg1{id} wsg2{id}; do ip netns del $n 2>/dev/null || true; done; }}
        trap cleanup EXIT
        ip -n $S link set lo up
        ip -n $S link add br0 type bridge
        ip -n $S addr add 10.200.0.1/24 dev br0
        ip -n $S link set br0 up
        for i in 0 1 2; do
            G=wsg${{i}}{id}
            ip netns add $G
            ip link add v$i-s netns $S type veth peer name v$i-g netns $G
            ip -n $S link set v$i-s master br0 up
            ip -n $G addr add 10.200.0.1$i/24 dev v$i-g
            ip -n $G link set v$i-g up
            ip -n $G link set lo up
        done
        ip netns exec $S {exe} serve --root {root} --listen 10.200.0.1:18080 --workers 1 --access-log {dir}/access.log >/dev/null 2>&1 &
        server=$!
        for i in $(seq 100); do ip netns exec wsg0{id} bash -c 'exec 3<>/dev/tcp/10.200.0.1/18080' 2>/dev/null && break; sleep 0.05; done
        start=$(( $(date +%s) + 2 ))
        loads=
        for i in 0 1 2; do
            ip netns exec wsg${{i}}{id} {exe} load http://10.200.0.1:18080/index.html -c 6 -t 1 -d 2s -q \
                --segment $i/3 --start-at $start --json {dir}/n$i.json --hlog {dir}/n$i.hlog > {dir}/n$i.out 2>&1 &
            loads="$loads $!"
        done
        for p in $loads; do wait $p || {{ cat {dir}/n*.out >&2; exit 1; }}; done
        kill -TERM $server; wait $server || true
        {exe} merge {dir}/merged {dir}/n0.json {dir}/n1.json {dir}/n2.json
        "#,
        exe = env!("CARGO_BIN_EXE_webscope"),
        root = root.display(),
        dir = tmp.path().display(),
    );
    let out = Command::new("bash")
        .args(["-euc", &script])
        .output()
        .unwrap();
    if out.status.code() == Some(99) {
        assert!(
            std::env::var_os("WEBSCOPE_REQUIRE_NETNS").is_none(),
            "WEBSCOPE_REQUIRE_NETNS is set but `ip netns add` failed"
        );
        eprintln!("skipping: no network namespaces here (needs root and ip)");
        return;
    }
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let merged = json(&tmp.path().join("merged/load.json"));
    let parts: Vec<Value> = (0..3)
        .map(|i| json(&tmp.path().join(format!("n{i}.json"))))
        .collect();
    let sum: u64 = parts.iter().map(|p| p["requests"].as_u64().unwrap()).sum();
    assert!(sum > 100, "{merged}");
    assert_eq!(merged["requests"].as_u64().unwrap(), sum);
    assert_eq!(merged["errors"]["total"], 0);
    let served = lines(&tmp.path().join("access.log"));
    assert!(
        (sum..=sum + 6).contains(&served),
        "served {served}, merged {sum}"
    );
    // Each generator's requests came from its own address.
    let log = std::fs::read_to_string(tmp.path().join("access.log")).unwrap();
    for (i, part) in parts.iter().enumerate() {
        let from = log
            .lines()
            .filter(|l| l.starts_with(&format!("10.200.0.1{i} ")))
            .count() as u64;
        let counted = part["requests"].as_u64().unwrap();
        assert!(
            (counted..=counted + 2).contains(&from),
            "generator {i}: {from} in the log, {counted} counted"
        );
    }
}
