//! Every experiment's page, rendered for a server that is not webscope's own (any
//! `--target`: nginx, Apache, `webscope serve` as a target), draws no chart without data and
//! writes no sentence about a figure that was not measured (#27).
//!
//! The runs are the stored lab's (`data/stored-lab.tar.gz`, every experiment), with what a
//! `--target` server gives in place of the embedded server's own figures: no requests, no
//! time per request, no phases (its CPU, found by its pid, stays). `webscope report`
//! renders them as it would a target's lab.

mod lab_support;

use lab_support::webscope;
use std::path::Path;
use std::process::Command;

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
    let archive = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/stored-lab.tar.gz");
    let status = Command::new("tar")
        .arg("xzf")
        .arg(&archive)
        .arg("-C")
        .arg(tmp.path())
        .status()
        .expect("tar runs");
    assert!(status.success(), "cannot unpack {}", archive.display());
    let lab = tmp.path().join("stored-lab");
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
