//! `webscope load --requests FILE` and `-m/--body` against `webscope serve`: each request of the
//! list is a class with the server's answers to it; a bad list is one line and exit 1.

mod lab_support;

use lab_support::{webscope, Served};
use serde_json::Value;

#[test]
fn a_request_list_against_webscope_serve() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("a.html"), "aaaa\n").unwrap();
    let server = Served::start(&root);
    let base = server.base_url.trim_end_matches('/');
    let list = tmp.path().join("targets.txt");
    std::fs::write(
        &list,
        format!("GET {base}/a.html\n\nHEAD {base}/a.html\nX-Why: test\n\nPOST {base}/a.html\n@targets.txt\n"),
    )
    .unwrap();
    let json = tmp.path().join("r.json");
    let out = webscope()
        .args(["load", "--requests"])
        .arg(&list)
        .args(["-c", "2", "-t", "1", "-d", "1s", "-q", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let classes = r["classes"].as_array().unwrap();
    let names: Vec<&str> = classes
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["GET /a.html", "HEAD /a.html", "POST /a.html"]);
    // GET and HEAD are served; a static server refuses POST (405), counted as bad status.
    assert_eq!(classes[0]["errors"]["total"], 0);
    assert_eq!(classes[1]["errors"]["total"], 0);
    assert!(classes[1]["requests"].as_u64().unwrap() > 0);
    assert_eq!(classes[2]["errors"]["bad_status"], classes[2]["requests"]);
    assert!(r["status_codes"]["405"].as_u64().unwrap() > 0);

    // -m and --body on one URL.
    let out = webscope()
        .args([
            "load",
            &format!("{base}/a.html"),
            "-m",
            "HEAD",
            "-d",
            "1s",
            "-c",
            "1",
            "-q",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("Errors: none"));

    std::fs::write(&list, "GET /relative\n").unwrap();
    let out = webscope()
        .args(["load", "--requests"])
        .arg(&list)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.lines().count() == 1 && err.contains("http://"), "{err}");
}
