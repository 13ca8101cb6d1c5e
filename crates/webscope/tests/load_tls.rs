//! `webscope load` over TLS against nginx started by the test with a certificate made here
//! (rcgen): keep-alive makes one handshake per connection, close mode resumes sessions (and
//! makes full ones with --no-tls-resume), and a certificate nobody vouches for is refused with
//! its cause in one line.

mod lab_support;

use std::path::Path;

use lab_support::tls::certificate;
use lab_support::{webscope, Nginx, Served};
use serde_json::Value;

fn load(args: &[&str], json: &Path) -> (Value, String) {
    load_exiting(args, json, 0)
}

/// A run whose exit code is `code` (1: no request succeeded), its report written all the same.
fn load_exiting(args: &[&str], json: &Path, code: i32) -> (Value, String) {
    let out = webscope()
        .arg("load")
        .args(args)
        .args(["-t", "1", "-d", "1s", "--json"])
        .arg(json)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(code),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    if code == 1 {
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("no request succeeded"), "{err}");
    }
    let report = serde_json::from_slice(&std::fs::read(json).unwrap()).unwrap();
    (report, String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn https_against_nginx_keep_alive_close_and_refusals() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("index.html"), vec![b'x'; 1024]).unwrap();
    let (cert, key) = certificate(tmp.path());
    let Some(nginx) = Nginx::start_tls(&root, tmp.path(), &cert, &key) else {
        return;
    };
    let url = format!("{}index.html", nginx.base_url);
    assert!(url.starts_with("https://"));
    let json = tmp.path().join("r.json");
    let ca = cert.to_str().unwrap();

    let (r, summary) = load(&[&url, "--cacert", ca, "-c", "4"], &json);
    assert!(r["requests"].as_u64().unwrap() > 100, "{summary}");
    assert_eq!(r["errors"]["total"], 0, "{summary}");
    assert_eq!(r["status_codes"]["200"], r["requests"]);
    assert_eq!(r["tls"]["full"], 4, "{summary}");
    assert!(summary.contains("TLS handshake") && summary.contains("4 full, 0 resumed"));

    let (r, summary) = load(&[&url, "--cacert", ca, "-c", "2", "--close"], &json);
    assert_eq!(r["errors"]["total"], 0, "{summary}");
    let (full, resumed) = (
        r["tls"]["full"].as_u64().unwrap(),
        r["tls"]["resumed"].as_u64().unwrap(),
    );
    assert!(resumed > full, "{full} full, {resumed} resumed");
    let (r, _) = load(
        &[
            &url,
            "--cacert",
            ca,
            "-c",
            "2",
            "--close",
            "--no-tls-resume",
        ],
        &json,
    );
    assert_eq!(r["tls"]["resumed"], 0);
    assert!(r["tls"]["full"].as_u64().unwrap() >= r["requests"].as_u64().unwrap());

    // The same server with nobody vouching for its certificate, then with --insecure.
    let (r, summary) = load_exiting(&[&url, "-c", "1"], &json, 1);
    assert_eq!(r["requests"], 0);
    assert!(r["errors"]["tls"].as_u64().unwrap() > 0);
    let warning = summary
        .lines()
        .find(|l| l.starts_with("warning: TLS:"))
        .unwrap_or_else(|| panic!("{summary}"));
    assert!(
        warning.contains("unknown CA") && warning.contains("--cacert"),
        "{warning}"
    );
    let (r, _) = load(&[&url, "-c", "1", "--insecure"], &json);
    assert_eq!(r["errors"]["total"], 0);

    // A bad --cacert is one line and exit 1.
    let out = webscope()
        .args(["load", &url, "-d", "1s", "--cacert"])
        .arg(tmp.path().join("nothing.pem"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--cacert") && err.lines().count() == 1,
        "{err}"
    );
}

#[test]
fn http2_against_nginx_over_tls_and_with_prior_knowledge() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("index.html"), vec![b'x'; 1024]).unwrap();
    std::fs::write(root.join("big.bin"), vec![b'y'; 300 * 1024]).unwrap();
    let (cert, key) = certificate(tmp.path());
    let json = tmp.path().join("r.json");
    let ca = cert.to_str().unwrap();
    let tls_dir = tmp.path().join("tls");
    std::fs::create_dir(&tls_dir).unwrap();
    let Some(h2) = Nginx::start_h2(&root, &tls_dir, Some((&cert, &key))) else {
        return;
    };
    let url = format!("{}index.html", h2.base_url);
    let (r, summary) = load(
        &[&url, "--http2", "-M", "8", "-c", "2", "--cacert", ca],
        &json,
    );
    assert!(r["requests"].as_u64().unwrap() > 100, "{summary}");
    assert_eq!(r["errors"]["total"], 0, "{summary}");
    assert_eq!(r["protocol"], "HTTP/2 (8 streams per connection)");
    assert_eq!(r["connects"], 2);
    assert_eq!(r["tls"]["full"], 2, "{summary}");
    assert_eq!(
        r["bytes"].as_u64().unwrap(),
        r["requests"].as_u64().unwrap() * 1024
    );
    // Bodies larger than the default 64 KiB window come whole.
    let big = format!("{}big.bin", h2.base_url);
    let (r, summary) = load(
        &[&big, "--http2", "-M", "4", "-c", "1", "--cacert", ca],
        &json,
    );
    assert_eq!(r["errors"]["total"], 0, "{summary}");
    assert_eq!(
        r["bytes"].as_u64().unwrap(),
        r["requests"].as_u64().unwrap() * 300 * 1024
    );

    let h2c_dir = tmp.path().join("h2c");
    std::fs::create_dir(&h2c_dir).unwrap();
    let Some(h2c) = Nginx::start_h2(&root, &h2c_dir, None) else {
        return;
    };
    let url = format!("{}index.html", h2c.base_url);
    let (r, summary) = load(&[&url, "--h2c", "-M", "4", "-c", "2"], &json);
    assert!(r["requests"].as_u64().unwrap() > 100, "{summary}");
    assert_eq!(r["errors"]["total"], 0, "{summary}");
    // Open loop over HTTP/2: the streams take the schedule's slots, the rate is kept, and the
    // latency is counted from each slot's time beside the uncorrected one.
    let (r, summary) = load(
        &[&url, "--h2c", "-M", "8", "-c", "1", "--rate", "400"],
        &json,
    );
    assert_eq!(r["pacing"], "open", "{summary}");
    let done = r["requests"].as_u64().unwrap() + r["not_sent"].as_u64().unwrap();
    assert!(
        (392..=408).contains(&done),
        "{done} slots in 1 s at 400/s: {summary}"
    );
    assert!(r["not_sent"].as_u64().unwrap() <= 4, "{summary}");
    assert!(
        r["uncorrected_latency_us"]["count"].as_u64().unwrap() > 0,
        "{summary}"
    );
    assert_eq!(r["errors"]["total"], 0, "{summary}");
    // HTTP/2 refuses what it cannot do, in one line.
    let out = webscope()
        .args(["load", &url, "--h2c", "--close", "-d", "1s"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--close with HTTP/2"));
}

/// The lab on a server behind HTTPS: nginx over TLS serving the file set; the preflight and
/// every run speak TLS with the certificate's CA, and without it the lab stops before it
/// starts, in one line that names the cause.
#[test]
fn the_lab_measures_nginx_behind_https() {
    let tmp = tempfile::tempdir().unwrap();
    let set = tmp.path().join("set");
    lab_support::tiny_fileset(&set);
    let (cert, key) = certificate(tmp.path());
    let Some(nginx) = Nginx::start_tls(&set, tmp.path(), &cert, &key) else {
        return;
    };
    let out = tmp.path().join("report");
    let run = |extra: &[&str]| {
        webscope()
            .args([
                "lab",
                "--target",
                &nginx.base_url,
                "--clients",
                "1,2",
                "--duration",
                "1s",
            ])
            .args(["--keep-alive", "-q", "--fileset"])
            .arg(&set)
            .arg("--out")
            .arg(&out)
            .args(extra)
            .output()
            .unwrap()
    };
    let refused = run(&[]);
    assert_eq!(refused.status.code(), Some(1));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("unknown CA") && err.lines().count() == 1,
        "{err}"
    );
    // What TLS said and how to fix it; the server answered, so whether it runs is not asked.
    assert!(
        err.contains("the TLS handshake with the target")
            && err.contains("--cacert")
            && !err.contains("is the server running"),
        "{err}"
    );
    assert!(
        !out.exists(),
        "nothing is written before the preflight passes"
    );

    let measured = run(&["--cacert", cert.to_str().unwrap()]);
    assert!(
        measured.status.success(),
        "{}",
        String::from_utf8_lossy(&measured.stderr)
    );
    let report: Value =
        serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
    let runs = report["clients"]["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for r in runs {
        assert_eq!(r["valid"], true, "{r}");
        assert!(r["goodput_per_s"].as_f64().unwrap() > 0.0);
    }
    let load: Value =
        serde_json::from_slice(&std::fs::read(out.join("clients/clients-002/run.json")).unwrap())
            .unwrap();
    assert_eq!(load["load"]["tls"]["full"], 2, "{}", load["load"]["tls"]);
}

#[test]
fn https_and_http2_against_webscope_serve() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("1k.bin"), vec![b'x'; 1024]).unwrap();
    std::fs::write(root.join("100k.bin"), vec![b'y'; 100 * 1024]).unwrap();
    let (cert, key) = certificate(tmp.path());
    let (c, k) = (cert.to_str().unwrap(), key.to_str().unwrap());
    let served = Served::start_with(&root, &["--tls-cert", c, "--tls-key", k], None);
    assert!(
        served.base_url.starts_with("https://"),
        "{}",
        served.base_url
    );
    let json = tmp.path().join("r.json");
    for (file, bytes) in [("1k.bin", 1024), ("100k.bin", 100 * 1024)] {
        let url = format!("{}{file}", served.base_url);
        for extra in [&[][..], &["--close"], &["--http2", "-M", "8"]] {
            let mut args = vec![url.as_str(), "--cacert", c, "-c", "2"];
            args.extend_from_slice(extra);
            let (r, summary) = load(&args, &json);
            let requests = r["requests"].as_u64().unwrap();
            assert!(requests > 20, "{extra:?}: {summary}");
            assert_eq!(r["errors"]["total"], 0, "{extra:?}: {summary}");
            assert_eq!(r["status_codes"]["200"], requests, "{extra:?}");
            assert!(
                r["bytes"].as_u64().unwrap() >= requests * bytes,
                "{extra:?}"
            );
            if extra == ["--close"] {
                assert!(r["tls"]["resumed"].as_u64().unwrap() > 0, "{summary}");
            }
        }
    }
    served.stop();
}

/// The usual `openssl req -x509` certificate: self-signed with basicConstraints CA:TRUE.
/// Given as its own --cacert it is the trust anchor, and curl accepts it: so does load.
#[test]
fn a_self_signed_ca_certificate_is_trusted_as_its_own_cacert() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("1k.bin"), vec![b'x'; 1024]).unwrap();
    let key_pair = rcgen::KeyPair::generate().unwrap();
    let mut params =
        rcgen::CertificateParams::new(vec!["127.0.0.1".into(), "localhost".into()]).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let made = params.self_signed(&key_pair).unwrap();
    let (cert, key) = (tmp.path().join("cert.pem"), tmp.path().join("key.pem"));
    std::fs::write(&cert, made.pem()).unwrap();
    std::fs::write(&key, key_pair.serialize_pem()).unwrap();
    let (c, k) = (cert.to_str().unwrap(), key.to_str().unwrap());
    let served = Served::start_with(&root, &["--tls-cert", c, "--tls-key", k], None);
    let url = format!("{}1k.bin", served.base_url);
    let json = tmp.path().join("r.json");
    let (r, summary) = load(&[&url, "--cacert", c, "-c", "2"], &json);
    assert!(r["requests"].as_u64().unwrap() > 0, "{summary}");
    assert_eq!(r["errors"]["total"], 0, "{summary}");
    // Without it, the refusal says how to trust it.
    let (_, summary) = load_exiting(&[&url, "-c", "1"], &json, 1);
    assert!(summary.contains("is a CA certificate"), "{summary}");
    served.stop();

    // The certificate exactly as `openssl req -x509 -newkey ... -nodes -subj /CN=127.0.0.1`
    // makes it: CA:TRUE and no subjectAltName, its CN the name (curl's rule).
    let (cert, key) = (
        tmp.path().join("openssl.pem"),
        tmp.path().join("openssl.key"),
    );
    let made = std::process::Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        ])
        .args(["-subj", "/CN=127.0.0.1", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stderr(std::process::Stdio::null())
        .status();
    if !made.is_ok_and(|s| s.success()) {
        assert!(
            std::env::var_os("WEBSCOPE_REQUIRE_PEERS").is_none(),
            "WEBSCOPE_REQUIRE_PEERS is set but openssl is missing: apt-get install openssl"
        );
        eprintln!("skipping the openssl certificate: no openssl command");
        return;
    }
    let (c, k) = (cert.to_str().unwrap(), key.to_str().unwrap());
    let served = Served::start_with(&root, &["--tls-cert", c, "--tls-key", k], None);
    let url = format!("{}1k.bin", served.base_url);
    let (r, summary) = load(&[&url, "--cacert", c, "-c", "2"], &json);
    assert!(r["requests"].as_u64().unwrap() > 0, "{summary}");
    assert_eq!(r["errors"]["total"], 0, "{summary}");
    // Its CN names 127.0.0.1, not localhost.
    let other = url.replace("127.0.0.1", "localhost");
    let (_, summary) = load_exiting(&[&other, "--cacert", c, "-c", "1"], &json, 1);
    assert!(
        summary.contains("not valid for the URL's host name"),
        "{summary}"
    );
    served.stop();
}
