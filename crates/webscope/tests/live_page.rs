//! The live page (`--live`) during real runs: `load` against `webscope serve`, watched in
//! headless Chromium (its numbers advance, and at the end they are the run's JSON), and `lab`,
//! whose page follows the sweep and ends with the runs the report holds.

mod lab_support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use lab_support::{chromium, tiny_fileset, webscope, Served};
use serde_json::Value;

/// A webscope command with a live page, killed on drop; `url` is the page's address as the
/// command printed it.
struct Watched {
    child: Child,
    url: String,
}

impl Watched {
    fn start(cmd: &mut Command) -> Watched {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(url) = line.split("live page at ").nth(1) {
                    let _ = tx.send(url.trim().to_string());
                }
            }
        });
        let url = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the command never said where its live page is");
        Watched { child, url }
    }

    fn addr(&self) -> String {
        self.url
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_string()
    }

    /// `/state.json`, as the page polls it.
    fn state(&self) -> Value {
        let mut stream = TcpStream::connect(self.addr()).unwrap();
        write!(stream, "GET /state.json HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).unwrap();
        let body = text.split_once("\r\n\r\n").unwrap().1;
        serde_json::from_str(body).unwrap()
    }

    /// Polls the state until `ready` holds (at most `limit`).
    fn wait_for(&self, limit: Duration, ready: impl Fn(&Value) -> bool) -> Value {
        let began = Instant::now();
        loop {
            let state = self.state();
            if ready(&state) {
                return state;
            }
            assert!(
                began.elapsed() < limit,
                "the live page did not get there in {limit:?}: {state}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Ends the linger with Ctrl-C and returns the command's stdout.
    fn interrupt_and_wait(mut self) -> String {
        // SAFETY: kill(2) on our own child's PID.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        let began = Instant::now();
        while self.child.try_wait().unwrap().is_none() {
            assert!(
                began.elapsed() < Duration::from_secs(20),
                "the command did not stop after Ctrl-C"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let status = self.child.wait().unwrap();
        let mut out = String::new();
        self.child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        assert!(status.success(), "{out}");
        out
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The page's DOM once the browser has run its script (and its first polls).
fn dom(browser: &Path, profile: &Path, url: &str) -> String {
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            // Virtual time stops while a poll is in flight, so the dump comes after the
            // page has rendered what the server sent.
            "--virtual-time-budget=800",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(url)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The `data-value` of the element `id` in a dumped DOM (the number the page shows, unrounded).
fn value(dom: &str, id: &str) -> f64 {
    let at = dom
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no #{id} in the page"));
    let tag_end = at + dom[at..].find('>').unwrap();
    let tag = &dom[at..tag_end];
    let start = tag
        .find("data-value=\"")
        .unwrap_or_else(|| panic!("#{id} shows no value yet: {tag}"))
        + "data-value=\"".len();
    let end = start + tag[start..].find('"').unwrap();
    tag[start..end].parse().unwrap()
}

fn text(dom: &str, id: &str) -> String {
    let at = dom.find(&format!("id=\"{id}\"")).unwrap();
    let start = at + dom[at..].find('>').unwrap() + 1;
    let end = start + dom[start..].find('<').unwrap();
    dom[start..end].to_string()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

#[test]
fn the_load_page_advances_during_the_run_and_ends_on_the_runs_json() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("index.html"), "hello, live page\n").unwrap();
    let server = Served::start(tmp.path());
    let json = tmp.path().join("run.json");
    let watched = Watched::start(
        webscope()
            .args(["load", &format!("{}index.html", server.base_url)])
            .args(["-c", "2", "-t", "1", "-d", "5s", "--live", "127.0.0.1:0"])
            .args(["--live-linger", "60s", "--json"])
            .arg(&json),
    );
    let browser = chromium();

    // During the run: the page's counts move between two looks.
    let first = watched.wait_for(Duration::from_secs(10), |s| {
        s["points"].as_array().is_some_and(|p| !p.is_empty())
    });
    assert_eq!(first["finished"], false);
    let early = browser
        .as_ref()
        .map(|b| dom(b, &tmp.path().join("profile1"), &watched.url));
    let seen = first["points"].as_array().unwrap().len();
    let later = watched.wait_for(Duration::from_secs(10), |s| {
        s["points"].as_array().unwrap().len() >= seen + 2
    });
    assert!(later["requests"].as_u64() > first["requests"].as_u64());
    assert!(later["elapsed_s"].as_f64() > first["elapsed_s"].as_f64());
    let point = &later["points"][0];
    assert!(point["requests_per_s"].as_f64().unwrap() > 0.0, "{point}");
    assert!(point["p99_us"].as_f64().unwrap() > 0.0, "{point}");
    // The server is on this machine: its CPU and the machine's are there.
    assert!(point["server_cpu_pct"].as_f64().is_some(), "{point}");
    assert!(point["machine_cpu_pct"].as_f64().is_some(), "{point}");
    if let (Some(browser), Some(early)) = (&browser, &early) {
        let now = dom(browser, &tmp.path().join("profile2"), &watched.url);
        assert_eq!(text(&now, "status"), "running");
        assert!(
            value(&now, "intervals") > value(early, "intervals"),
            "{now}"
        );
        assert!(value(&now, "requests") > value(early, "requests"));
        assert!(value(&now, "rps") > 0.0);
        assert!(value(&now, "p99") > 0.0);
    }

    // At the end: the page's final figures are the run's JSON.
    let last = watched.wait_for(Duration::from_secs(20), |s| s["finished"] == true);
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let done = &last["done"];
    assert_eq!(done["requests"], report["requests"]);
    // Errors as the default expectation counts them: failures and statuses of 400 and above.
    let non_2xx_3xx: u64 = report["status_codes"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(code, _)| !(code.starts_with('2') || code.starts_with('3')))
        .map(|(_, n)| n.as_u64().unwrap())
        .sum();
    assert_eq!(
        done["errors"].as_u64().unwrap(),
        report["errors"]["total"].as_u64().unwrap() + non_2xx_3xx
    );
    for (page, json) in [
        ("requests_per_s", &report["requests_per_s"]),
        ("p50_us", &report["latency_us"]["p50"]),
        ("p99_us", &report["latency_us"]["p99"]),
        ("p999_us", &report["latency_us"]["p999"]),
    ] {
        assert!(
            close(done[page].as_f64().unwrap(), json.as_f64().unwrap()),
            "{page}: page {} vs JSON {json}",
            done[page]
        );
    }
    // The intervals add up to the run.
    let summed: u64 = report["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["requests"].as_u64().unwrap())
        .sum();
    assert_eq!(last["requests"].as_u64().unwrap(), summed);
    if let Some(browser) = &browser {
        let end = dom(browser, &tmp.path().join("profile3"), &watched.url);
        assert_eq!(text(&end, "status"), "done");
        assert_eq!(
            value(&end, "final-requests"),
            report["requests"].as_f64().unwrap()
        );
        for (id, json) in [
            ("final-rps", &report["requests_per_s"]),
            ("final-p50", &report["latency_us"]["p50"]),
            ("final-p99", &report["latency_us"]["p99"]),
            ("final-p999", &report["latency_us"]["p999"]),
        ] {
            assert!(close(value(&end, id), json.as_f64().unwrap()), "{id}");
        }
    }

    let out = watched.interrupt_and_wait();
    assert!(out.contains("live page:"), "{out}");
    assert!(out.contains("of the generator's"), "{out}");
}

#[test]
fn the_lab_page_follows_the_sweep_and_ends_with_the_reports_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let set = tmp.path().join("set");
    tiny_fileset(&set);
    let out = tmp.path().join("report");
    let watched = Watched::start(
        webscope()
            .args(["lab", "--clients", "1,2", "--duration", "2s", "-q"])
            .args(["--live", "127.0.0.1:0", "--live-linger", "60s"])
            .arg("--fileset")
            .arg(&set)
            .arg("--out")
            .arg(&out),
    );
    let during = watched.wait_for(Duration::from_secs(60), |s| !s["step"].is_null());
    assert_eq!(during["kind"], "lab");
    assert_eq!(during["step"]["experiment"], "clients");
    assert_eq!(during["step"]["total"], 2);
    let last = watched.wait_for(Duration::from_secs(60), |s| s["finished"] == true);
    assert_eq!(last["interrupted"], false);
    assert!(last["written_to"]
        .as_str()
        .is_some_and(|w| w.ends_with("index.html")));
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    let runs = last["runs"].as_array().unwrap();
    let reported = report["clients"]["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "{last}");
    assert_eq!(reported.len(), 2);
    for (page, run) in runs.iter().zip(reported) {
        assert_eq!(page["experiment"], "clients");
        assert!(
            close(
                page["goodput_per_s"].as_f64().unwrap(),
                run["goodput_per_s"].as_f64().unwrap()
            ),
            "page {page} vs report {run}"
        );
    }
    let stdout = watched.interrupt_and_wait();
    assert!(stdout.contains("live page:"), "{stdout}");
}
