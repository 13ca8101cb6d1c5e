//! `webscope characterize` end to end: logs written by `webscope serve`, nginx and Apache
//! httpd during a known `webscope load --fileset` run characterize back to that file set —
//! its files, their sizes and its per-class mix — plain, gzip and split across files given
//! out of order; a log nothing parses in, or a missing one, is one line and exit 1.

mod lab_support;

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use lab_support::{tiny_fileset, webscope, Apache, Nginx, NginxConf, Served};
use serde_json::Value;

/// Connections the load starts with (open loop opens more when all are busy).
const CONNECTIONS: u64 = 8;

/// What the generator did: requests completed, and connections opened (the server may log
/// up to one request per connection more: those in flight when the generator stopped), and
/// requests it gave up on (a timeout or reset on a busy machine: the server may have logged
/// them too).
struct Sent {
    requests: u64,
    connects: u64,
    unanswered: u64,
}

impl Sent {
    /// Requests the server may have logged beyond those the generator completed.
    fn slack(&self) -> u64 {
        self.connects + self.unanswered
    }
}

/// A temporary directory every user can traverse: nginx's and Apache's workers read the set.
fn open_dir() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    tmp
}

fn json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// The set's mix, open loop with Poisson arrivals: 1500/s for 4 s (about 6000 requests, so
/// that every file of WebStone A/4 but perhaps a video is requested).
fn load(set: &Path, base: &str, dir: &Path) -> Sent {
    let out = dir.join("load.json");
    let run = webscope()
        .args([
            "load",
            "--base",
            base,
            "--rate",
            "1500",
            "--arrivals",
            "poisson",
        ])
        .args([
            "-d",
            "4s",
            "-c",
            &CONNECTIONS.to_string(),
            "-q",
            "--fileset",
        ])
        .arg(set)
        .arg("--json")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let report = json(&out);
    let requests = report["requests"].as_u64().unwrap();
    // Every response was the file asked for; requests with no response (a timeout, a reset)
    // are the machine's, counted as slack rather than failing the test.
    let errors = &report["errors"];
    for kind in ["bad_status", "short_body", "parse_error"] {
        assert_eq!(errors[kind], 0, "{errors}");
    }
    assert_eq!(report["status_codes"]["200"].as_u64(), Some(requests));
    Sent {
        requests,
        connects: report["connects"].as_u64().unwrap(),
        unanswered: errors["total"].as_u64().unwrap(),
    }
}

/// `webscope characterize LOGS --out OUT`, which must succeed; its report.json and stdout.
fn characterize(logs: &[PathBuf], out: &Path, extra: &[&str]) -> (Value, String) {
    let run = webscope()
        .arg("characterize")
        .args(logs)
        .arg("--out")
        .arg(out)
        .args(extra)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    for chart in [
        "Requests per",
        "Rank-frequency",
        "Lorenz curve",
        "Size CCDF",
        "Hill plot",
    ] {
        assert!(html.contains(chart), "the page lacks {chart}");
    }
    assert!(html.matches("<svg").count() >= 7);
    assert!(!html.contains("127.0.0.1"), "a client address on the page");
    (
        json(&out.join("report.json")),
        String::from_utf8_lossy(&run.stdout).into_owned(),
    )
}

/// The report describes the run of `sent` requests over the set: as many requests, all 200,
/// only the set's files, each with its size, in the set's per-class proportions.
fn matches_the_set(r: &Value, set: &Path, sent: &Sent) {
    let manifest = json(&set.join("manifest.json"));
    let requests = r["requests"].as_u64().unwrap();
    assert!(
        (sent.requests..=sent.requests + sent.slack()).contains(&requests),
        "the log has {requests} requests, the generator completed {} on {} connections ({} unanswered)",
        sent.requests,
        sent.connects,
        sent.unanswered
    );
    assert_eq!(r["bad_lines"], 0);
    assert!(
        r["mix"]["ok_share"].as_f64().unwrap() >= 0.999,
        "{}",
        r["mix"]
    );
    let files = manifest["files"].as_array().unwrap();
    let p = &r["popularity"];
    let distinct = p["distinct_urls"].as_u64().unwrap();
    assert!(
        (60..=files.len() as u64).contains(&distinct),
        "{distinct} distinct URLs"
    );
    // Every URL is a file of the set, logged with the file's size.
    let mut per_class = std::collections::BTreeMap::<String, u64>::new();
    let documents = p["documents"].as_array().unwrap();
    assert_eq!(documents.len() as u64, distinct);
    for d in documents {
        let path = d["path"].as_str().unwrap().trim_start_matches('/');
        let file = files
            .iter()
            .find(|f| f["path"] == path)
            .unwrap_or_else(|| panic!("{path} is not a file of the set"));
        assert_eq!(d["bytes"], file["size"], "{path}");
        *per_class
            .entry(file["class"].as_str().unwrap().into())
            .or_default() += d["references"].as_u64().unwrap();
    }
    // Each class's share of the requests within 3 points of its probability (about five
    // standard deviations of a binomial share over 6000 requests).
    let refs = p["references"].as_u64().unwrap() as f64;
    for class in manifest["classes"].as_array().unwrap() {
        let name = class["name"].as_str().unwrap();
        let want = class["probability"].as_f64().unwrap();
        let got = per_class.get(name).copied().unwrap_or(0) as f64 / refs;
        assert!(
            (got - want).abs() < 0.03,
            "{name}: {got:.3} of requests, set says {want:.3}"
        );
    }
    // The same seen by document type: .html, .gif, and sound + video as media.
    let types = &r["mix"]["types"];
    let share = |t: &str| types[t].as_u64().unwrap_or(0) as f64 / refs;
    assert!((share("html") - 0.192).abs() < 0.03, "{types}");
    assert!((share("image") - 0.754).abs() < 0.03, "{types}");
    assert!((share("media") - 0.054).abs() < 0.03, "{types}");
    // Every transfer is its file's size: the transfer figures add up from the documents'.
    let transfer = &r["sizes"]["transfer"];
    let count = transfer["count"].as_f64().unwrap();
    let bytes: f64 = documents
        .iter()
        .map(|d| d["references"].as_f64().unwrap() * d["bytes"].as_f64().unwrap())
        .sum();
    // The requests the generator cut when its run ended (at most one per connection) are
    // logged as a 200 with no body, and a bodiless response is not a transfer; every request
    // it completed was a 200 with its file's size.
    let cut = refs - count;
    assert!(
        count >= sent.requests as f64 && cut <= sent.slack() as f64,
        "{count} transfers of {refs} references; the generator completed {} on {} connections ({} unanswered)",
        sent.requests,
        sent.connects,
        sent.unanswered
    );
    let largest = files
        .iter()
        .map(|f| f["size"].as_f64().unwrap())
        .fold(0.0, f64::max);
    let mean = transfer["mean"].as_f64().unwrap();
    let missing = bytes - mean * count;
    assert!(
        missing > -1e-6 * bytes && missing < cut * largest + 1e-6 * bytes,
        "mean {mean} × {count} transfers against {bytes} bytes referenced ({cut} cut)"
    );
    let invariants = r["invariants"].as_array().unwrap();
    assert_eq!(invariants.len(), 10);
    let remote = invariants
        .iter()
        .find(|i| i["name"] == "Remote requests")
        .unwrap();
    assert_eq!(remote["verdict"], "cannot-tell");
    // No client address anywhere in the report.
    assert!(!r.to_string().contains("127.0.0.1"));
}

fn gzip(from: &Path, to: &Path, lines: std::ops::Range<usize>) {
    let text = std::fs::read_to_string(from).unwrap();
    let part: String = text
        .lines()
        .skip(lines.start)
        .take(lines.len())
        .map(|l| format!("{l}\n"))
        .collect();
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(part.as_bytes()).unwrap();
    std::fs::write(to, enc.finish().unwrap()).unwrap();
}

#[test]
fn a_webscope_serve_log_characterizes_back_to_its_file_set() {
    let tmp = tempfile::tempdir().unwrap();
    let set = tmp.path().join("set");
    tiny_fileset(&set);
    let log = tmp.path().join("access.log");
    let server = Served::start_with(&set, &["--access-log", log.to_str().unwrap()], None);
    let sent = load(&set, &server.base_url, tmp.path());
    server.stop();
    let (r, stdout) = characterize(std::slice::from_ref(&log), &tmp.path().join("plain"), &[]);
    matches_the_set(&r, &set, &sent);
    assert!(
        stdout.contains("Invariants (Arlitt & Williamson"),
        "{stdout}"
    );
    assert!(stdout.contains("Zipf s ="), "{stdout}");

    // The same log rotated: its second half gzipped and given first, the first half plain.
    let lines = std::fs::read_to_string(&log).unwrap().lines().count();
    let newer = tmp.path().join("access.log.1.gz");
    gzip(&log, &newer, lines / 2..lines);
    let older = tmp.path().join("access.log.2");
    let text = std::fs::read_to_string(&log).unwrap();
    let head: String = text
        .lines()
        .take(lines / 2)
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&older, head).unwrap();
    let (split, _) = characterize(
        &[newer, older],
        &tmp.path().join("split"),
        &["--format", "combined"],
    );
    for key in [
        "requests",
        "first_unix",
        "last_unix",
        "mix",
        "sizes",
        "per_minute",
        "clients",
    ] {
        assert_eq!(split[key], r[key], "{key}");
    }
    assert_eq!(
        split["popularity"]["documents"],
        r["popularity"]["documents"]
    );
}

#[test]
fn nginx_and_apache_logs_characterize_back_to_the_file_set() {
    let tmp = open_dir();
    let set = tmp.path().join("set");
    tiny_fileset(&set);
    // nginx writes Combined, this Apache config Common: both auto-detected.
    let nginx_dir = tmp.path().join("nginx");
    std::fs::create_dir(&nginx_dir).unwrap();
    let conf = NginxConf {
        workers: 1,
        cpu: None,
        access_log: true,
        user: None,
    };
    if let Some(nginx) = Nginx::start_conf(&set, &nginx_dir, &conf) {
        let sent = load(&set, &nginx.base_url, &nginx_dir);
        drop(nginx);
        let (r, _) = characterize(&[nginx_dir.join("access.log")], &nginx_dir.join("out"), &[]);
        matches_the_set(&r, &set, &sent);
    }
    let apache_dir = tmp.path().join("apache");
    std::fs::create_dir(&apache_dir).unwrap();
    std::fs::set_permissions(&apache_dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    if let Some(apache) = Apache::start(&set, &apache_dir) {
        let sent = load(&set, &apache.base_url, &apache_dir);
        drop(apache);
        let (r, _) = characterize(
            &[apache_dir.join("access.log")],
            &apache_dir.join("out"),
            &["--format", "common"],
        );
        matches_the_set(&r, &set, &sent);
    }
}

#[test]
fn a_log_nothing_parses_in_or_a_missing_one_is_one_line_and_exit_1() {
    let tmp = tempfile::tempdir().unwrap();
    let junk = tmp.path().join("app.json");
    std::fs::write(&junk, "{\"level\":\"info\"}\n{\"level\":\"warn\"}\n").unwrap();
    let missing = tmp.path().join("nope.log");
    for (logs, says) in [
        (vec![junk.clone()], "app.json"),
        (vec![junk.clone(), missing.clone()], "nope.log"),
    ] {
        let run = webscope().arg("characterize").args(&logs).output().unwrap();
        assert_eq!(run.status.code(), Some(1));
        let err = String::from_utf8_lossy(&run.stderr);
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(
            err.starts_with("webscope: error: ") && err.contains(says),
            "{err}"
        );
    }
    let run = webscope().arg("characterize").arg(&junk).output().unwrap();
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(
        err.contains("no line of") && err.contains("--format"),
        "{err}"
    );
    // An --out that cannot be made is said before the logs are read: nothing else printed.
    let good = tmp.path().join("good.log");
    std::fs::write(
        &good,
        "::1 - - [01/Jan/2024:00:00:00 +0000] \"GET / HTTP/1.1\" 200 5 \"-\" \"t\"\n",
    )
    .unwrap();
    let run = webscope()
        .arg("characterize")
        .arg(&good)
        .arg("--out")
        .arg(good.join("sub"))
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(1));
    assert!(
        run.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&run.stdout)
    );
    assert!(String::from_utf8_lossy(&run.stderr).contains("choose a writable --out"));
    // A format that does not exist is a usage error (2), naming the ones that do.
    let run = webscope()
        .args(["characterize", "--format", "w3c"])
        .arg(&junk)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&run.stderr).contains("nginx-timed"));
}
