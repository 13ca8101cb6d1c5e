//! `webscope model`: the CLI over the model crate, its JSON shapes and its one-line errors.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn webscope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_webscope"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("webscope runs")
}

fn example() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../model/examples/mughal-web-server.toml")
        .display()
        .to_string()
}

fn ok(args: &[&str]) -> String {
    let out = webscope(args);
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn json(args: &[&str]) -> Value {
    serde_json::from_str(&ok(args)).expect("valid JSON")
}

/// A failure: exit status 1, nothing on stdout, one line on stderr; returns that line.
fn fails(args: &[&str]) -> String {
    let out = webscope(args);
    assert_eq!(out.status.code(), Some(1), "{args:?} should fail");
    assert!(
        out.stdout.is_empty(),
        "{args:?} printed {:?}",
        String::from_utf8_lossy(&out.stdout)
    );
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        err.lines().count(),
        1,
        "{args:?}: more than one line: {err}"
    );
    assert!(err.starts_with("webscope: error: "), "{err}");
    err
}

fn file(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::File::create(&path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .unwrap();
    path
}

fn f(v: &Value) -> f64 {
    v.as_f64().expect("a number")
}

#[test]
fn mva_json_has_the_issue_shape_and_the_papers_numbers() {
    let v = json(&["model", "mva", &example(), "--json"]);
    assert_eq!(v["method"], "exact");
    let classes = v["classes"].as_array().unwrap();
    assert_eq!(classes.len(), 2);
    let pdf = &classes[0];
    assert_eq!(pdf["name"], "pdf");
    assert_eq!(pdf["population"], 20);
    // The paper: R_pdf = 23.329 s at 20 + 20 clients on one CPU.
    assert!((f(&pdf["response_time"]) - 23.329).abs() < 0.01);
    for c in classes {
        // Little's law, N = X (R + Z), in what the CLI printed.
        let n = f(&c["population"]);
        let implied = f(&c["throughput"]) * (f(&c["response_time"]) + f(&c["think_time"]));
        assert!((implied - n).abs() < 1e-6 * n);
    }
    let cpu = &v["stations"][0];
    assert_eq!(cpu["name"], "cpu");
    for key in ["utilization", "queue_length", "residence_time"] {
        assert!(
            cpu[key]["pdf"].is_number() && cpu[key]["zip"].is_number(),
            "{key}"
        );
    }
    let busy = f(&cpu["utilization"]["pdf"]) + f(&cpu["utilization"]["zip"]);
    assert!(busy <= 1.0 + 1e-9 && busy > 0.999);
}

#[test]
fn the_papers_what_if_four_cpus_over_a_sweep() {
    let v = json(&[
        "model",
        "mva",
        &example(),
        "--servers",
        "cpu=4",
        "--population",
        "20..200:20",
        "--json",
    ]);
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 10);
    assert_eq!(v["method"], "exact");
    let last = &results[9];
    assert_eq!(last["classes"][0]["population"], 200);
    // The paper's 4-CPU table: R_pdf 58.3126 s, R_zip 61.000 s at 200 clients each.
    assert!((f(&last["classes"][0]["response_time"]) - 58.3126).abs() / 58.3126 < 0.01);
    assert!((f(&last["classes"][1]["response_time"]) - 61.0).abs() / 61.0 < 0.01);
    assert_eq!(last["stations"][0]["servers"], 4);
    // And as a table: one row per population.
    let table = ok(&[
        "model",
        "mva",
        &example(),
        "--servers",
        "cpu=4",
        "--population",
        "20,200",
    ]);
    assert!(table.starts_with("method: exact"));
    assert!(
        table.lines().any(|l| l.trim_start().starts_with("200 ")),
        "{table}"
    );
}

#[test]
fn auto_says_when_it_approximates_and_exact_refuses_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    // A two-server FCFS disk array whose classes need different times per visit.
    let model = file(
        &dir,
        "fcfs.toml",
        "[[class]]\nname = \"a\"\npopulation = 5\n[[class]]\nname = \"b\"\npopulation = 3\n\
         [[station]]\nname = \"disks\"\nservers = 2\ndemand = { a = 0.1, b = 0.3 }\n",
    );
    let model = model.to_str().unwrap();
    let v = json(&["model", "mva", model, "--json"]);
    assert_eq!(v["method"], "schweitzer");
    assert!(v["note"].as_str().unwrap().contains("no exact solution"));
    assert!(v["iterations"].as_u64().unwrap() > 0);
    let err = fails(&["model", "mva", model, "--method", "exact"]);
    assert!(
        err.contains("'disks'") && err.contains("--method schweitzer"),
        "{err}"
    );
}

#[test]
fn mva_input_errors_are_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad_toml = file(
        &dir,
        "bad.toml",
        "[[class]]\nname = \"a\"\npopulation = 1\nthink = 2\n",
    );
    let err = fails(&["model", "mva", bad_toml.to_str().unwrap()]);
    assert!(
        err.contains("bad.toml: line 4, column 1") && err.contains("unknown field `think`"),
        "{err}"
    );
    let unknown = file(
        &dir,
        "unknown.toml",
        "[[class]]\nname = \"a\"\npopulation = 1\n[[station]]\nname = \"cpu\"\ndemand = { b = 1 }\n",
    );
    assert!(fails(&["model", "mva", unknown.to_str().unwrap()]).contains("names class 'b'"));
    let negative = file(
        &dir,
        "negative.toml",
        "[[class]]\nname = \"a\"\npopulation = 1\n[[station]]\nname = \"cpu\"\ndemand = { a = -0.5 }\n",
    );
    assert!(fails(&["model", "mva", negative.to_str().unwrap()])
        .contains("demand of class 'a' is -0.5"));
    assert!(fails(&["model", "mva", "/nonexistent/model.toml"])
        .contains("cannot read /nonexistent/model.toml"));
    let e = example();
    assert!(fails(&["model", "mva", &e, "--servers", "gpu=2"]).contains("station 'gpu'"));
    assert!(fails(&["model", "mva", &e, "--servers", "cpu=0"]).contains("1 or more"));
    assert!(fails(&["model", "mva", &e, "--servers", "cpu"]).contains("STATION=M"));
    assert!(fails(&["model", "mva", &e, "--population", "0..10"]).contains("population 0"));
    assert!(fails(&["model", "mva", &e, "--method", "fast"]).contains("unknown method 'fast'"));
}

#[test]
fn usl_fits_a_csv_and_reports_the_peak() {
    let dir = tempfile::tempdir().unwrap();
    // R usl's specsdm91 data set.
    let csv = file(
        &dir,
        "spec.csv",
        "concurrency,throughput\n1,64.9\n18,995.9\n36,1652.4\n72,1853.2\n108,1828.9\n144,1775.0\n216,1702.2\n",
    );
    let v = json(&["model", "usl", csv.to_str().unwrap(), "--json"]);
    for key in [
        "sigma",
        "kappa",
        "lambda",
        "sigma_stderr",
        "kappa_stderr",
        "lambda_stderr",
        "r_squared",
        "n_peak",
        "x_peak",
    ] {
        assert!(v[key].is_number(), "{key} missing in {v}");
    }
    assert!((f(&v["sigma"]) - 0.02773).abs() / 0.02773 < 1e-3);
    assert!((f(&v["n_peak"]) - 96.52).abs() < 0.01);
    assert_eq!(v["amdahl"]["kappa"], 0.0);
    assert!(v["amdahl"]["kappa_stderr"].is_null());
    let table = ok(&["model", "usl", csv.to_str().unwrap()]);
    assert!(table.contains("N* = √((1−σ)/κ) = 96.52"), "{table}");
    let few = file(&dir, "few.csv", "1,10\n2,19\n4,30\n");
    assert!(fails(&["model", "usl", few.to_str().unwrap()]).contains("3 distinct concurrencies"));
    let flat = file(&dir, "flat.csv", "1,100\n2,100.5\n4,99.7\n8,100.1\n");
    assert!(fails(&["model", "usl", flat.to_str().unwrap()]).contains("flat"));
    let high = file(&dir, "high.csv", "10,100\n20,180\n40,300\n80,320\n");
    assert!(fails(&["model", "usl", high.to_str().unwrap()]).contains("near N = 1"));
    let garbage = file(&dir, "garbage.csv", "1,10\n2,abc\n");
    assert!(
        fails(&["model", "usl", garbage.to_str().unwrap()]).contains("line 2: throughput 'abc'")
    );
}

#[test]
fn laws_give_the_papers_demands_and_check_little() {
    let v = json(&[
        "model",
        "laws",
        "--throughput",
        "0.6689",
        "--util",
        "cpu=38.99%",
        "--util",
        "disk=2.1575%",
        "--json",
    ]);
    let cpu = &v["demands"][0];
    assert_eq!(cpu["name"], "cpu");
    assert!((f(&cpu["demand"]) - 0.3899 / 0.6689).abs() < 1e-9);
    assert_eq!(v["bottleneck"], "cpu");
    assert!(v["little"].is_null());
    assert!(v["bounds"].as_array().unwrap().len() >= 2);
    let v = json(&[
        "model",
        "laws",
        "--throughput",
        "400",
        "--util",
        "cpu=1.6",
        "--servers",
        "cpu=2",
        "--clients",
        "50",
        "--response-time",
        "0.1",
        "--think-time",
        "0.025",
        "--json",
    ]);
    assert!((f(&v["little"]["implied"]) - 50.0).abs() < 1e-9);
    assert!(f(&v["little"]["deviation"]).abs() < 1e-12);
    // Two servers: the limit is 2 / D, and balanced-job bounds do not apply.
    assert!((f(&v["throughput_limit"]) - 500.0).abs() < 1e-9);
    assert!(v["bounds"][0]["balanced"].is_null());
    let text = ok(&[
        "model",
        "laws",
        "--throughput",
        "0.6689",
        "--util",
        "cpu=38.99%",
        "--util",
        "disk=2.1575%",
    ]);
    assert!(
        text.contains("bottleneck") && text.contains("knee"),
        "{text}"
    );
    assert!(
        fails(&["model", "laws", "--throughput", "10", "--util", "cpu=1.5"])
            .contains("cannot exceed")
    );
    assert!(
        fails(&["model", "laws", "--throughput", "10", "--util", "cpu=lots"]).contains("'lots'")
    );
    assert!(
        fails(&["model", "laws", "--throughput", "0", "--util", "cpu=0.5"]).contains("throughput")
    );
}

#[test]
fn help_shows_examples() {
    let help = ok(&["model", "--help"]);
    assert!(help.contains("EXAMPLES:") && help.contains("webscope model mva"));
    let mva = ok(&["model", "mva", "--help"]);
    assert!(mva.contains("[[station]]") && mva.contains("--servers"));
}
