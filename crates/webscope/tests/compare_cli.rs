//! `webscope compare` on real runs: two runs of one server are not told apart; the naive
//! server of Hu et al.'s baseline (`serve --baseline --hostname-lookups`: open, read, close, a
//! reverse lookup and a log write per request) is flagged as slower, and a crossed threshold
//! fails the command.

mod lab_support;

use std::path::Path;

use lab_support::{tiny_fileset, webscope, Served};

const LAB: &[&str] = &[
    "lab",
    "--clients",
    "1",
    "--keep-alive",
    "--duration",
    "2s",
    "--repeat",
    "4",
];

/// The timed tests take turns: two labs at once would each measure the other's load.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// `webscope serve` on `set` as it is, and the naive server of Hu et al.'s baseline, its
/// access log in `dir`; both on CPU 0.
fn fast_and_naive(set: &Path, dir: &Path) -> (Served, Served) {
    let log = dir.join("access.log");
    let naive = [
        "--baseline",
        "--hostname-lookups",
        "--access-log",
        log.to_str().unwrap_or("access.log"),
    ];
    (
        Served::start_with(set, &[], Some(0)),
        Served::start_with(set, &naive, Some(0)),
    )
}

/// One keep-alive client, four runs of 2 s taken round (an interval over repeats, which a
/// single run's few intervals cannot stand in for): latency is the server's time per request
/// plus loopback.
fn one_run(server: &Served, set: &Path, out: &Path) {
    let run = webscope()
        .args(LAB)
        .arg("--target")
        .arg(&server.base_url)
        .arg("--fileset")
        .arg(set)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
}

#[test]
fn a_slower_server_is_flagged_and_the_same_one_is_not() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let set = tmp.path().join("set");
    tiny_fileset(&set);
    let (fast, slow) = fast_and_naive(&set, tmp.path());
    let (a, b, c) = (
        tmp.path().join("a"),
        tmp.path().join("b"),
        tmp.path().join("c"),
    );
    // The two labs of one server back to back, as a user compares two labs: each lab's four
    // runs follow one another, so the pair is judged unpaired (a rank test over 4 and 4
    // runs), with the machine's drift between the labs inside its interval. Comparisons taken
    // interleaved, which #48 asks for, are load_runs_of_one_server_pass_and_of_the_naive_one_fail's
    // (run i of each side paired by start) and `lab --experiment ab`'s (lab_ab).
    one_run(&fast, &set, &a);
    one_run(&fast, &set, &b);
    one_run(&slow, &set, &c);
    let compare = |x: &Path, y: &Path, json: &Path| {
        webscope()
            .arg("compare")
            .arg(x)
            .arg(y)
            // Server CPU per request: the figure that survives this machine's noise (latency
            // of one client moves by tens of per cent between minutes, with the host's wake-ups).
            .args(["--threshold", "cpu_us<+30%"])
            .arg("--json")
            .arg(json)
            .arg("--html")
            .arg(json.with_extension("html"))
            .output()
            .unwrap()
    };
    // Two labs of one server: within, or (a busy machine widening the interval) cannot be
    // decided; never a regression.
    let same = compare(&a, &b, &tmp.path().join("same.json"));
    assert!(
        matches!(same.status.code(), Some(0 | 3)),
        "two runs of one server: {}{}",
        String::from_utf8_lossy(&same.stdout),
        String::from_utf8_lossy(&same.stderr)
    );
    // ... and said to be what it is: not interleaved pairs.
    let same_json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(tmp.path().join("same.json")).unwrap()).unwrap();
    let same_cpu = same_json[0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == "cpu_us")
        .unwrap();
    assert_eq!(same_cpu["paired"], false, "{same_cpu}");
    let test = same_cpu["test"].as_str().unwrap();
    assert!(
        test.contains(" runs") && !test.contains("interleaved"),
        "{same_cpu}"
    );
    let slower = compare(&a, &c, &tmp.path().join("slower.json"));
    let stdout = String::from_utf8_lossy(&slower.stdout);
    // A busy machine can widen the interval over 4 runs a side past the threshold (CI, with
    // steal: cpu_us +44.0 %, 95 % interval −0.6 .. +108.6 %): "cannot be decided" is then
    // compare's right answer, and this test could not check its claim. Never a naive server
    // measured the cheaper of the two.
    if slower.status.code() == Some(3) {
        let line = stdout
            .lines()
            .find(|l| l.trim_start().starts_with("cpu_us +") && l.contains("CANNOT BE DECIDED"));
        assert!(
            line.is_some(),
            "undecided, but not a costlier naive server: {stdout}"
        );
        lab_support::unchecked(&format!(
            "the naive server's cost could not be decided on this machine: {}",
            line.unwrap_or_default().trim()
        ));
        return;
    }
    assert_eq!(slower.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("CROSSED"), "{stdout}");
    // The one line on stderr names the crossed limit after the change it measured (since the
    // verdicts rest on intervals: "1 client: cpu_us +105.2 % (95 % interval ...): CROSSED
    // cpu_us<+30%"). That change is the naive server's own cost, about twice the fast one's
    // CPU per request: the +105 % once read as the same server measured twice.
    let stderr = String::from_utf8_lossy(&slower.stderr);
    assert!(
        stderr.contains("1 threshold crossed: 1 client: cpu_us +")
            && stderr.contains(", 4 and 4 runs): CROSSED cpu_us<+30%"),
        "{stderr}"
    );
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(tmp.path().join("slower.json")).unwrap()).unwrap();
    let cpu = json[0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == "cpu_us")
        .unwrap();
    assert_eq!(cpu["significant"], true, "{cpu}");
    assert_eq!(cpu["worse"], true, "{cpu}");
    assert_eq!(cpu["test"], "4 and 4 runs", "{cpu}");
    assert!(cpu["interval_pct"][0].as_f64().unwrap() > 30.0, "{cpu}");
    // The page: the table, both distributions overlaid, and their difference.
    let html = std::fs::read_to_string(tmp.path().join("slower.html")).unwrap();
    for part in [
        "Response-time histograms, 1 client",
        "Response-time histograms, 1 client, log frequency",
        "Candidate minus baseline, per bin, 1 client",
        "Density maps, candidate minus baseline, 1 client",
        "yes, worse",
    ] {
        assert!(html.contains(part), "{part}");
    }
}

#[test]
fn bad_inputs_are_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let out = webscope()
        .arg("compare")
        .arg(tmp.path())
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains(
        "not a lab report, a lab run directory, a load --json file or a directory of them"
    ));
    let out = webscope()
        .args(["compare", "a", "b", "--threshold", "p99=5%"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("e.g. p99<+5%"));
}

#[test]
fn a_lab_against_its_baseline_says_what_got_worse() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let set = tmp.path().join("set");
    tiny_fileset(&set);
    let (fast, slow) = fast_and_naive(&set, tmp.path());
    let before = tmp.path().join("before");
    one_run(&fast, &set, &before);
    let after = tmp.path().join("after");
    let run = webscope()
        .args(LAB)
        .arg("--target")
        .arg(&slow.base_url)
        .arg("--fileset")
        .arg(&set)
        .arg("--out")
        .arg(&after)
        .arg("--baseline")
        .arg(&before)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let html = std::fs::read_to_string(after.join("index.html")).unwrap();
    assert!(html.contains("Against the baseline ("), "no section");
    assert!(
        html.contains("Worse than the baseline, the whole 95 % interval of the change: "),
        "the slower server is not flagged"
    );
    assert!(html.contains("Response-time histograms, baseline and this lab at 1 client"));
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(after.join("report.json")).unwrap()).unwrap();
    let rows = report["baseline"]["comparisons"][0]["rows"]
        .as_array()
        .unwrap();
    let cpu = rows.iter().find(|r| r["metric"] == "cpu_us").unwrap();
    assert_eq!(
        (cpu["significant"].as_bool(), cpu["worse"].as_bool()),
        (Some(true), Some(true)),
        "{cpu}"
    );
    // A baseline that is not a report is one line before anything runs.
    let bad = webscope()
        .args(["lab", "--baseline"])
        .arg(tmp.path().join("nowhere"))
        .arg("--out")
        .arg(tmp.path().join("x"))
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("is not a lab report"));
    assert!(!tmp.path().join("x").exists());
}

/// A `webscope load --json` result (no `.hlog` beside it) of `intervals` one-second
/// intervals at about `rate` responses a second, each response taking about `us`.
fn load_json(path: &Path, intervals: usize, rate: f64, us: f64) {
    let per: Vec<serde_json::Value> = (0..intervals)
        .map(|i| {
            // A spread of ±2 % between intervals, as a steady server shows.
            let n = (rate * (1.0 + 0.01 * ((i * 7 % 5) as f64 - 2.0))).round() as u64;
            let lat = serde_json::json!({
                "p50": us, "p90": 2.0 * us, "p99": 4.0 * us, "p999": 8.0 * us,
                "max": 9.0 * us, "mean": 1.2 * us, "min": 0.5 * us, "count": n,
            });
            serde_json::json!({
                "start_s": i as f64, "duration_s": 1.0, "requests": n, "errors": 0,
                "requests_per_s": n, "bytes_per_s": 1000 * n, "latency_us": lat,
                "generator_busy": 0.5, "connections": 4,
            })
        })
        .collect();
    let n = (rate * intervals as f64).round() as u64;
    let report = serde_json::json!({
        "target": "http://127.0.0.1:1/", "mode": "keep-alive", "duration_s": intervals as f64,
        "requests": n, "requests_per_s": rate, "status_codes": { "200": n }, "errors": {},
        "latency_us": { "p50": us, "p90": 2.0 * us, "p99": 4.0 * us, "p999": 8.0 * us },
        "intervals": per,
    });
    std::fs::write(path, serde_json::to_vec_pretty(&report).unwrap()).unwrap();
}

/// #27 §3: two load results, the candidate 56.7 % slower. One run a side decides nothing
/// (runs of one server differ by more than a run's intervals do), and the threshold is not
/// passed: it exits 3 and says why. Four runs a side (a directory of load results each) are
/// tested, and the threshold fails; the same runs against themselves pass, judged.
#[test]
fn load_results_are_judged_over_repeats_and_never_passed_untested() {
    let tmp = tempfile::tempdir().unwrap();
    let path = |name: &str| tmp.path().join(name);
    let compare = |a: &Path, b: &Path, threshold: &str| {
        webscope()
            .arg("compare")
            .arg(a)
            .arg(b)
            .args(["--threshold", threshold])
            .output()
            .unwrap()
    };
    load_json(&path("fast.json"), 8, 10_000.0, 200.0);
    load_json(&path("slow.json"), 8, 4_330.0, 460.0);
    let out = compare(&path("fast.json"), &path("slow.json"), "rps>-10%");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(3), "{stdout}{stderr}");
    assert!(
        stdout.contains(
            "rps −56.7 % (cannot be decided: one run a side): CANNOT BE DECIDED against rps>-10%"
        ),
        "{stdout}"
    );
    assert!(!stdout.contains("within"), "{stdout}");
    assert!(stdout.contains("one run a side decides nothing: runs of one server differ"));
    assert!(
        stderr.contains("1 threshold cannot be decided (exit 3, never a pass): run: rps −56.7 %"),
        "{stderr}"
    );
    // Latencies with their units; the table says which rows no test could judge.
    assert!(
        stdout.contains("200.0 µs") && stdout.contains("1.84 ms"),
        "{stdout}"
    );
    assert!(stdout.contains("cannot be decided"), "{stdout}");
    // A figure a load result does not carry (server CPU) is not passed either.
    let out = compare(&path("fast.json"), &path("slow.json"), "cpu_us<+50%");
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stdout)
        .contains("cpu_us<+50%: not measured on both sides: CANNOT BE DECIDED"));

    for (dir, rate, us) in [("fast", 10_000.0, 200.0), ("slow", 4_330.0, 460.0)] {
        std::fs::create_dir(path(dir)).unwrap();
        for run in 0..4 {
            let jitter = 1.0 + 0.01 * run as f64;
            let file = path(dir).join(format!("{run}.json"));
            load_json(&file, 8, rate * jitter, us / jitter);
        }
    }
    let out = compare(&path("fast"), &path("slow"), "rps>-10%");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(
            "rps −56.7 % (95 % interval −57.6 .. −55.7 %, 4 and 4 runs): CROSSED rps>-10%"
        ),
        "{stdout}"
    );
    // The exit's one line names the change before the limit it crossed: the line the live
    // tests' assertions read (a_slower_server_is_flagged_and_the_same_one_is_not once matched
    // the line's older form, and its failure, the naive server's +105 %, was taken for the
    // same server measured twice).
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim_end(),
        "webscope: error: 1 threshold crossed: run: rps −56.7 % (95 % interval −57.6 .. −55.7 %, 4 and 4 runs): CROSSED rps>-10%"
    );
    let out = compare(&path("fast"), &path("fast"), "rps>-10%,p99<+5%");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("rps +0.0 % (95 % interval "), "{stdout}");
    assert!(
        stdout.contains("4 and 4 runs): within rps>-10%"),
        "{stdout}"
    );
}

/// Live: four `load --json` runs of one server against four more pass a loose threshold, and
/// four of the naive server (about twice the median latency) fail it; the runs taken in turn
/// (fast, fast, naive, ...), so that the machine's drift falls on all three alike.
#[test]
fn load_runs_of_one_server_pass_and_of_the_naive_one_fail() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let set = tmp.path().join("set");
    tiny_fileset(&set);
    let (fast, slow) = fast_and_naive(&set, tmp.path());
    let dirs = ["a", "b", "c"].map(|d| tmp.path().join(d));
    for d in &dirs {
        std::fs::create_dir(d).unwrap();
    }
    for run in 0..4 {
        for (dir, server) in dirs.iter().zip([&fast, &fast, &slow]) {
            let out = webscope()
                .args(["load", "-c", "2", "-t", "1", "-d", "1s", "-q", "--fileset"])
                .arg(&set)
                .arg("--base")
                .arg(&server.base_url)
                .arg("--json")
                .arg(dir.join(format!("{run}.json")))
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    let compare = |x: &Path, y: &Path| {
        webscope()
            .arg("compare")
            .arg(x)
            .arg(y)
            .args(["--threshold", "p50<+50%"])
            .output()
            .unwrap()
    };
    // Within, or (a busy machine widening the interval) cannot be decided; never crossed.
    let same = compare(&dirs[0], &dirs[1]);
    let stdout = String::from_utf8_lossy(&same.stdout);
    assert!(matches!(same.status.code(), Some(0 | 3)), "{stdout}");
    // Taken in turn, the runs pair by their start times.
    assert!(stdout.contains("4 interleaved pairs"), "{stdout}");
    let slower = compare(&dirs[0], &dirs[2]);
    let stdout = String::from_utf8_lossy(&slower.stdout);
    assert_eq!(slower.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("4 interleaved pairs of 20+ requests (10 beyond p50)): CROSSED p50<+50%"),
        "{stdout}"
    );
}

/// `rps>10` is refused in one line, not read as +10 %.
#[test]
fn a_limit_without_its_per_cent_sign_is_refused() {
    let out = webscope()
        .args(["compare", "a.json", "b.json", "--threshold", "rps>10"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains(
            "\"10\" is not a change in per cent (write it with its %, e.g. rps>+10% or rps>-10%)"
        ),
        "{stderr}"
    );
}

/// Two capacity searches (`lab --experiment capacity`) compare by their brackets, as an
/// interval of the changes they allow: `capacity>-5%` fails (1) when even the candidate's
/// best reading is below the limit, passes when even its worst is above, and cannot be
/// decided (3) otherwise, never a pass.
#[test]
fn capacity_results_compare_by_their_brackets() {
    let tmp = tempfile::tempdir().unwrap();
    let lab = |name: &str, ending: serde_json::Value| {
        let dir = tmp.path().join(name);
        std::fs::create_dir(&dir).unwrap();
        let report = serde_json::json!({ "capacity": { "ending": ending } });
        std::fs::write(dir.join("report.json"), report.to_string()).unwrap();
        dir
    };
    let found =
        |c: f64, f: f64| serde_json::json!({"kind": "found", "capacity_rps": c, "fails_at_rps": f});
    let base = lab("base", found(41_800.0, 44_000.0));
    let drop = lab("drop", found(37_100.0, 38_900.0));
    let same = lab("same", found(42_000.0, 44_100.0));
    let above = lab(
        "above",
        serde_json::json!({"kind": "generator", "above_rps": 40_000.0, "at_rps": 42_000.0}),
    );
    let compare = |cand: &std::path::Path, threshold: &str| {
        let out = webscope()
            .arg("compare")
            .arg(&base)
            .arg(cand)
            .args(["--threshold", threshold])
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let (code, said) = compare(&drop, "capacity>-5%");
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("capacity 41800 → 37100 req/s (−11.2 %; the brackets allow −15.7 .. −6.9 %)"),
        "{said}"
    );
    let (code, said) = compare(&same, "capacity>-5%");
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("the brackets allow −4.5 .. +5.5 %"), "{said}");
    let (code, said) = compare(&above, "capacity>-5%");
    assert_eq!(code, Some(3), "{said}");
    assert!(said.contains("above 40000"), "{said}");
    // Apart, 39 000..41 000 against 41 800..44 000: a drop of 1.9 % to 11.4 %, either side
    // of the limit.
    let between = lab("between", found(39_000.0, 41_000.0));
    let (code, said) = compare(&between, "capacity>-5%");
    assert_eq!(code, Some(3), "{said}");
    assert!(
        said.contains(
            "CANNOT BE DECIDED (the brackets allow −11.4 .. −1.9 %: either side of −5.0 %)"
        ),
        "{said}"
    );
    // #53: brackets that touch (one search passed 44 000, the other failed it) allow a
    // drop of 9.5 % one way round: that cannot be decided, while the other way is within.
    let touching = lab("touching", found(44_000.0, 46_200.0));
    for (a, b, code) in [(&base, &touching, 0), (&touching, &base, 3)] {
        let out = webscope()
            .arg("compare")
            .arg(a)
            .arg(b)
            .args(["--threshold", "capacity>-5%"])
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(code), "{said}");
    }
    // #52: a candidate whose search found no capacity cannot be decided (3), and the
    // sentence names the candidate and how its search ended, not the baseline.
    let disturbed = lab(
        "disturbed",
        serde_json::json!({"kind": "disturbed", "at_rps": 8000.0, "why": "the machine stayed busy"}),
    );
    let (code, said) = compare(&disturbed, "capacity>-5%");
    assert_eq!(code, Some(3), "{said}");
    assert!(
        said.contains("capacity>-5%: CANNOT BE DECIDED (the candidate found no capacity (disturbed: the machine stayed busy))"),
        "{said}"
    );
    // Compared with itself it is no regression either: 3 with a threshold, 0 without.
    for (threshold, code) in [("capacity>-5%", 3), ("", 0)] {
        let out = webscope()
            .arg("compare")
            .arg(&disturbed)
            .arg(&disturbed)
            .args(["--threshold", threshold])
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(code), "{said}");
        assert!(said.contains("the baseline found no capacity"), "{said}");
    }
    // #52: what a disturbed search had passed is a floor, an open bracket: never "−100 %".
    let floor = lab(
        "floor",
        serde_json::json!({"kind": "disturbed", "at_rps": 16000.0, "why": "busy",
                           "passed_rps": 8000.0, "passes": [2, 2]}),
    );
    let (code, said) = compare(&floor, "capacity>-5%");
    assert_eq!(code, Some(3), "{said}");
    assert!(
        said.contains("capacity 41800 → above 8000 req/s (the brackets allow −81.8 % .. any rise)"),
        "{said}"
    );
    // #51: a tampered report is refused, naming the file and the field.
    let tampered = lab(
        "tampered",
        serde_json::json!({"kind": "found", "capacity_rps": 16500.0, "fails_at_rps": 10.0}),
    );
    let out = webscope()
        .arg("compare")
        .arg(&base)
        .arg(&tampered)
        .args(["--threshold", "capacity>-5%"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("tampered/report.json: capacity.ending.capacity_rps (16500) is above ending.fails_at_rps (10): a bracket upside down"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    let out = webscope()
        .arg("compare")
        .arg(&base)
        .arg(&drop)
        .args(["--threshold", "capacity<5%"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("capacity is a floor"));
}

/// Two users searches (`lab --experiment users`) compare as two capacity searches do, in
/// users: `users>-5%` crosses when the brackets are apart by more, passes when even the
/// worst change they allow is above it, cannot be decided when they straddle the limit; a lab with both searches
/// is judged on each by its own threshold.
#[test]
fn users_results_compare_by_their_brackets_in_users() {
    let tmp = tempfile::tempdir().unwrap();
    let lab = |name: &str, users: (f64, f64)| {
        let dir = tmp.path().join(name);
        std::fs::create_dir(&dir).unwrap();
        let ending = serde_json::json!({"kind": "found", "capacity_users": users.0, "fails_at_users": users.1});
        // Both searches: the capacity the same on both sides, the users as given.
        let capacity =
            serde_json::json!({"kind": "found", "capacity_rps": 1000.0, "fails_at_rps": 1050.0});
        let report = serde_json::json!({
            "capacity": { "ending": capacity },
            "users": { "ending": ending },
        });
        std::fs::write(dir.join("report.json"), report.to_string()).unwrap();
        dir
    };
    let base = lab("base", (120.0, 128.0));
    let compare = |cand: &std::path::Path, threshold: &str| {
        let out = webscope()
            .arg("compare")
            .arg(&base)
            .arg(cand)
            .args(["--threshold", threshold])
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let (code, said) = compare(&lab("drop", (96.0, 104.0)), "users>-5%,capacity>-5%");
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("users 120 → 96 users (−20.0 %; the brackets allow −25.0 .. −13.3 %)"),
        "{said}"
    );
    assert!(said.contains("users>-5%: CROSSED"), "{said}");
    assert!(said.contains("capacity>-5%: within"), "{said}");
    let (code, said) = compare(&lab("same", (124.0, 130.0)), "users>-5%");
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("users>-5%: within ("), "{said}");
    // 112..118 against 120..128: a drop of 1.7 % to 12.5 %, either side of 5 %.
    let (code, said) = compare(&lab("between", (112.0, 118.0)), "users>-5%");
    assert_eq!(code, Some(3), "{said}");
    assert!(said.contains("users>-5%: CANNOT BE DECIDED"), "{said}");
}
