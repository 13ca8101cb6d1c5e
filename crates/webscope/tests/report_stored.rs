//! A lab stored on disk re-renders to the same bytes: `webscope report` on the runs of a lab
//! recorded by an earlier build gives back its index.html, report.json and CSV tables exactly.
//! The guard for refactors of the lab and its pages, which must not change what a user reads.
//!
//! The archive `data/stored-lab.tar.gz` is the output of
//! `webscope lab --quick --experiment clients --experiment filesize --experiment techniques
//! --experiment saturation --experiment model --experiment degradation --experiment protocols
//! --clients 1,2 --duration 1s --no-profile` on a 2-CPU VM, every experiment in one report.
//! A change that is meant to alter the page re-renders the archive's lab and stores it again
//! (`tar xzf`, `webscope report stored-lab`, `tar czf`), saying why in its commit.
//!
//! The same runs, rewritten as a `--target` server's (nginx, Apache, `webscope serve` as a
//! target: no requests, time or phases of the server's own; its CPU, found by its pid,
//! stays), render every experiment's page with no chart without data and no sentence about
//! a figure that was not measured (#27).
//!
//! And the re-rendered page, laid out by headless Chromium in a 1 300-px window, is no wider
//! than the window (a wide table scrolls in its own box) and every chart's marks lie inside
//! its plot area, with no axis running a whole tick step beyond its data (#27 §5).

mod lab_support;

use lab_support::{chromium, webscope};
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What `webscope report` writes (everything else in the directory is the runs' data).
fn rendered_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n == "index.html" || n == "report.json" || n.ends_with(".csv"))
        .collect();
    names.sort();
    names
}

/// Unpacks the stored lab into `dir`: its directory.
fn unpack(dir: &Path) -> PathBuf {
    let archive = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/stored-lab.tar.gz");
    let status = Command::new("tar")
        .arg("xzf")
        .arg(&archive)
        .arg("-C")
        .arg(dir)
        .status()
        .expect("tar runs");
    assert!(status.success(), "cannot unpack {}", archive.display());
    dir.join("stored-lab")
}

#[test]
fn a_stored_lab_re_renders_to_the_same_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let stored = unpack(tmp.path());
    let names = rendered_files(&stored);
    // Every experiment's table and the page itself are checked.
    for expected in [
        "clients.csv",
        "degradation.csv",
        "filesize.csv",
        "index.html",
        "model.csv",
        "protocols.csv",
        "report.json",
        "saturation.csv",
        "techniques.csv",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} missing in the archive"
        );
    }
    let before: Vec<Vec<u8>> = names
        .iter()
        .map(|n| std::fs::read(stored.join(n)).unwrap())
        .collect();
    for name in &names {
        std::fs::remove_file(stored.join(name)).unwrap();
    }
    let out = webscope().arg("report").arg(&stored).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(rendered_files(&stored), names, "the same files are written");
    for (name, old) in names.iter().zip(&before) {
        let new = std::fs::read(stored.join(name)).unwrap();
        if &new != old {
            let first = old
                .iter()
                .zip(&new)
                .position(|(a, b)| a != b)
                .unwrap_or(old.len().min(new.len()));
            let from = first.saturating_sub(120);
            panic!(
                "{name} differs from the stored lab's at byte {first}:\nstored:  {}\nrendered: {}",
                String::from_utf8_lossy(&old[from..(first + 120).min(old.len())]),
                String::from_utf8_lossy(&new[from..(first + 120).min(new.len())]),
            );
        }
    }
}

/// Rewrites each run's server figures as a `--target` server's: its CPU only.
fn as_external_target(lab: &Path) {
    for exp in std::fs::read_dir(lab).unwrap() {
        let exp = exp.unwrap().path();
        let Ok(runs) = std::fs::read_dir(&exp) else {
            continue;
        };
        for run in runs {
            let path = run.unwrap().path().join("run.json");
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let mut run: serde_json::Value = serde_json::from_str(&text).unwrap();
            if let Some(server) = run.get_mut("server").and_then(|s| s.as_object_mut()) {
                server.insert("requests".into(), 0.0.into());
                server.insert("response_us".into(), 0.0.into());
                for class in server["phases_us"].as_array_mut().unwrap() {
                    for key in ["requests", "parse_us", "process_us", "log_us"] {
                        class[key] = 0.0.into();
                    }
                }
            }
            std::fs::write(&path, serde_json::to_string(&run).unwrap()).unwrap();
        }
    }
}

/// The figures of the page: each `<figure>`'s SVG and its caption.
fn figures(html: &str) -> Vec<(String, String)> {
    html.split("<figure>")
        .skip(1)
        .filter_map(|f| {
            let svg = f.split("</svg>").next()?.to_string();
            let caption = f
                .split("<figcaption>")
                .nth(1)?
                .split("</figcaption>")
                .next()?;
            Some((svg, caption.to_string()))
        })
        .collect()
}

#[test]
fn an_external_targets_pages_have_no_empty_chart_and_no_sentence_on_a_missing_figure() {
    let tmp = tempfile::tempdir().unwrap();
    let lab = unpack(tmp.path());
    as_external_target(&lab);
    let out = webscope().arg("report").arg(&lab).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(lab.join("index.html")).unwrap();
    let figures = figures(&html);
    assert!(figures.len() > 20, "every experiment's charts are drawn");
    for (svg, caption) in &figures {
        // A chart with data has a line, a point or a bar (a bar has its value as a title).
        assert!(
            ["<polyline", "<circle", "<title>", "<path"]
                .iter()
                .any(|mark| svg.contains(mark)),
            "an empty chart, captioned {caption:?}"
        );
    }
    // The server's own time and phases were not measured: no sentence may cite them.
    let text = html
        .split("<svg")
        .map(|s| s.split("</svg>").last().unwrap_or(""))
        .collect::<String>();
    for missing in [
        "server's own time",
        "server's own work",
        "Server time per request",
        "WebMonitor's phases",
        "parsing and logging",
    ] {
        assert!(
            !text.contains(missing),
            "the page cites a figure the target did not give: {missing:?} in …{}…",
            text.split(missing)
                .next()
                .unwrap_or("")
                .chars()
                .rev()
                .take(200)
                .collect::<String>()
                .chars()
                .rev()
                .collect::<String>()
        );
    }
    // And the tables say so: the server's time per request is "-" in every row.
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(lab.join("report.json")).unwrap()).unwrap();
    for run in report["clients"]["runs"].as_array().unwrap() {
        assert!(run["server_ms"].is_null(), "{run}");
    }
}

/// Loads `page` in headless Chromium in a 1 300 × 900 px window and returns the DOM as the
/// page's scripts left it. Chromium runs in a process group of its own, ended when its DOM
/// is read or after 120 s (a hung browser fails the test instead of holding it).
fn dump_dom(browser: &Path, profile: &Path, page: &Path) -> String {
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--window-size=1300,900",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("Chromium starts");
    let pid = child.id() as libc::pid_t;
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut dom = String::new();
        let _ = stdout.read_to_string(&mut dom);
        dom
    });
    let deadline = Instant::now() + Duration::from_secs(120);
    let exited = loop {
        // Exited, but not reaped (WNOWAIT): its pid, and so its group's, is still ours to kill.
        // SAFETY: a zeroed siginfo_t is valid for waitid to fill.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let flags = libc::WEXITED | libc::WNOWAIT | libc::WNOHANG;
        // SAFETY: waits on our own child with a valid siginfo_t.
        let done = unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, flags) } == 0
            && unsafe { info.si_pid() } == pid;
        if done || Instant::now() > deadline {
            break done;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // Chromium and whatever helpers it left: the whole group it leads.
    // SAFETY: signals the process group of a child we started, not yet reaped.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    let status = child.wait().unwrap();
    assert!(exited, "Chromium did not finish within 120 s");
    assert!(status.success(), "Chromium failed: {status}");
    reader.join().unwrap()
}

/// The JSON the probe wrote into the page (`data/page_probe.js`).
fn probe_result(dom: &str) -> serde_json::Value {
    let start = dom
        .rfind("<pre id=\"probe\">")
        .expect("the probe ran and wrote its result");
    let text = &dom[start + "<pre id=\"probe\">".len()..];
    let text = &text[..text.find("</pre>").unwrap()];
    let text = text
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&nbsp;", "\u{a0}")
        .replace("&amp;", "&");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[test]
fn the_page_fits_a_1300_px_window_and_every_chart_fits_its_data() {
    let Some(browser) = chromium() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let lab = unpack(tmp.path());
    // The page as this build renders it, not as it was stored.
    std::fs::remove_file(lab.join("index.html")).unwrap();
    let out = webscope().arg("report").arg(&lab).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(lab.join("index.html")).unwrap();
    let probe = include_str!("data/page_probe.js");
    let page = lab.join("probe.html");
    std::fs::write(
        &page,
        html.replace("</body>", &format!("<script>{probe}</script></body>")),
    )
    .unwrap();
    let found = probe_result(&dump_dom(&browser, &tmp.path().join("profile"), &page));
    let (inner, scroll) = (
        found["inner"].as_f64().unwrap(),
        found["scroll"].as_f64().unwrap(),
    );
    assert_eq!(inner, 1300.0, "the window is 1300 px wide");
    assert!(
        scroll <= inner,
        "the page is {scroll} px wide in a {inner}-px window; beyond it: {}",
        found["wide"]
    );
    assert_eq!(
        found["wide"].as_array().unwrap().len(),
        0,
        "elements beyond the window's right edge: {}",
        found["wide"]
    );
    assert_eq!(
        found["unwrapped"], 0,
        "tables not in a box that scrolls sideways"
    );
    let charts = found["charts"].as_array().unwrap();
    assert_eq!(
        charts.len(),
        html.matches("<svg").count(),
        "every chart was measured"
    );
    assert!(charts.len() > 20, "every experiment's charts are there");
    let bad: Vec<String> = charts
        .iter()
        .filter(|c| c["marks"] == 0 || !c["problems"].as_array().unwrap().is_empty())
        .map(|c| format!("{}: {} marks, {}", c["title"], c["marks"], c["problems"]))
        .collect();
    assert!(
        bad.is_empty(),
        "charts that do not fit their data:\n{}",
        bad.join("\n")
    );
}
