//! Issue 51, item 9: `load --users N --sessions LOG` held every URL of the sessions it
//! sampled, so its memory followed the log's lines (a 1.8 GB log of 3 000 sessions with
//! 60 KB URLs took 5.3 GB), and it dropped bad lines without a word (200 future-dated lines
//! of 400). Here a gzip log of 200 sessions of 10 requests with 60 KB URLs (120 MB of
//! text; 372 MiB of peak memory before, 107 MiB now in a debug build) and 200 lines
//! dated 2099: the scripts stay within their budget, and the line before the run says what
//! was left out and that the sample was made smaller.

mod lab_support;
mod rss_support;

use std::io::Write;
use std::time::Duration;

use lab_support::{webscope, Served};

/// Peak memory allowed, MiB: the scripts' 32 MiB budget, what is made of them (the distinct
/// requests prebuilt), and the process itself.
const LIMIT_MIB: f64 = 192.0;

#[test]
fn a_log_of_long_urls_is_sampled_within_the_budget_and_its_bad_lines_are_said() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("a.html"), "a\n").unwrap();
    let served = Served::start(&root);
    let log = tmp.path().join("sessions.log.gz");
    let mut gz = flate2::write::GzEncoder::new(
        std::fs::File::create(&log).unwrap(),
        flate2::Compression::new(6),
    );
    let pad = "u".repeat(60_000);
    for k in 0..10 {
        for c in 0..200 {
            writeln!(
                gz,
                "10.2.{}.{} - - [25/Nov/2025:10:{k:02}:{:02} +0000] \"GET /c{c}/r{k}/{pad} HTTP/1.1\" 200 100 \"-\" \"ua\"",
                c / 250,
                c % 250,
                c % 60
            )
            .unwrap();
        }
    }
    for i in 0..200 {
        writeln!(
            gz,
            "10.3.0.1 - - [25/Nov/2099:10:00:00 +0000] \"GET /future{i} HTTP/1.1\" 200 100 \"-\" \"ua\""
        )
        .unwrap();
    }
    gz.finish().unwrap();
    let mut cmd = webscope();
    cmd.args([
        "load",
        "--users",
        "2",
        "-t",
        "1",
        "-d",
        "1s",
        "-q",
        "--sessions",
    ])
    .arg(&log)
    .args(["--base", &served.base_url]);
    let done = rss_support::run(&mut cmd, None, |_, _| {}, Duration::from_secs(300));
    served.stop();
    // The server refuses 60 KB heads: "no request succeeded" is the run's honest end.
    assert!(
        matches!(done.code, Some(0 | 1)) && done.signal.is_none(),
        "{done:?}"
    );
    assert!(
        done.max_rss_mib < LIMIT_MIB,
        "peak {:.0} MiB",
        done.max_rss_mib
    );
    let said = done
        .stdout
        .lines()
        .find(|l| l.contains("sessions sampled from"))
        .unwrap_or_else(|| panic!("{}", done.stdout));
    assert!(
        said.contains("of its 200 sessions")
            && said.contains("200 lines of 2200 unreadable, left out (first: ")
            && said.contains("more than a day ahead")
            && said.contains("the sample was made smaller to keep its scripts within 32 MiB"),
        "{said}"
    );
}
