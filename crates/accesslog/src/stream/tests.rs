use std::ops::ControlFlow;
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use super::*;

/// A Combined line at `secs` past 2024-01-01T00:00:00Z.
fn line(secs: u32, path: &str) -> String {
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    format!("10.0.0.1 - - [01/Jan/2024:{h:02}:{m:02}:{s:02} +0000] \"GET {path} HTTP/1.1\" 200 10 \"-\" \"t\"\n")
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn stream(paths: &[PathBuf], look_back_s: u64) -> (Vec<Entry>, ReadSummary) {
    let options = ReadOptions {
        look_back: Duration::from_secs(look_back_s),
        ..ReadOptions::default()
    };
    let mut out = Vec::new();
    let summary = stream_logs(paths, &options, &mut |e| out.push(e), &mut |_| {}).unwrap();
    (out, summary)
}

fn paths_of(entries: &[Entry]) -> Vec<&str> {
    entries.iter().map(|e| e.path.as_str()).collect()
}

#[test]
fn files_given_newest_first_are_merged_in_time_order() {
    let dir = tempfile::tempdir().unwrap();
    let new = write(
        dir.path(),
        "access.log",
        &(line(100, "/c") + &line(101, "/d")),
    );
    let old = write(
        dir.path(),
        "access.log.1",
        &(line(1, "/a") + &line(2, "/b")),
    );
    let (entries, summary) = stream(&[new, old], 60);
    assert_eq!(paths_of(&entries), ["/a", "/b", "/c", "/d"]);
    assert_eq!((summary.entries, summary.out_of_order), (4, 0));
}

#[test]
fn disorder_within_the_look_back_is_put_right_and_ties_keep_file_then_line_order() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(
        dir.path(),
        "a",
        &(line(10, "/a10") + &line(5, "/a5") + &line(10, "/a10b")),
    );
    let b = write(dir.path(), "b", &(line(10, "/b10") + &line(4, "/b4")));
    let (entries, summary) = stream(&[a, b], 60);
    assert_eq!(paths_of(&entries), ["/b4", "/a5", "/a10", "/a10b", "/b10"]);
    assert_eq!(summary.out_of_order, 0);
}

#[test]
fn an_entry_later_than_the_look_back_is_delivered_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    // /late comes 300 s after /c, a later line: with a 60 s look-back /b has gone out by
    // then, so /late follows it, out of order.
    let text = line(0, "/a") + &line(300, "/b") + &line(400, "/c") + &line(100, "/late");
    let log = write(dir.path(), "log", &(text + &line(401, "/d")));
    let (entries, summary) = stream(std::slice::from_ref(&log), 60);
    assert_eq!(paths_of(&entries), ["/a", "/b", "/late", "/c", "/d"]);
    assert_eq!(summary.out_of_order, 1);
    // With a look-back of 300 s it is put in place.
    let (entries, summary) = stream(&[log], 300);
    assert_eq!(paths_of(&entries), ["/a", "/late", "/b", "/c", "/d"]);
    assert_eq!(summary.out_of_order, 0);
}

#[test]
fn the_buffer_holds_about_one_look_back_not_the_log() {
    // 20 000 entries, one a second, read through a sink that records how many were still
    // unread in the file when each came out: with a 60 s look-back none waits longer.
    let dir = tempfile::tempdir().unwrap();
    let text: String = (0..20_000).map(|s| line(s, "/x")).collect();
    let log = write(dir.path(), "log", &text);
    let options = ReadOptions {
        look_back: Duration::from_secs(60),
        ..ReadOptions::default()
    };
    let mut delivered = 0u64;
    let mut last = UNIX_EPOCH;
    stream_logs(
        &[log],
        &options,
        &mut |e| {
            delivered += 1;
            assert!(e.time >= last);
            last = e.time;
        },
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(delivered, 20_000);
    let mut merge = Merge::new(1, Duration::from_secs(60));
    let mut held = 0usize;
    for s in 0..1000u32 {
        let entry = crate::parse_line(&line(s, "/x"), None).unwrap();
        merge.push(0, entry, &mut |_| ControlFlow::Continue(()));
        held = held.max(merge.buffered);
    }
    assert!(held <= 62, "held {held} entries");
}

#[test]
fn bad_lines_of_several_files_are_counted_and_the_first_examples_kept_in_file_order() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a", &(line(1, "/a") + "junk a\n"));
    let b = write(
        dir.path(),
        "b",
        &("junk b\n".to_string() + &line(2, "/b") + "\n"),
    );
    let (entries, summary) = stream(&[a, b], 60);
    assert_eq!(entries.len(), 2);
    assert_eq!(
        (summary.lines, summary.bad_lines, summary.blank_lines),
        (5, 2, 1)
    );
    let examples: Vec<_> = summary
        .bad_examples
        .iter()
        .map(|b| (b.file, b.line))
        .collect();
    assert_eq!(examples, [(0, 2), (1, 1)]);
}

fn gzip(text: &str) -> Vec<u8> {
    use std::io::Write;
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(text.as_bytes()).unwrap();
    enc.finish().unwrap()
}

/// Three files, one gzip, each with bad, blank, long and disordered lines, over many batches.
fn awkward_logs(dir: &Path) -> Vec<PathBuf> {
    let mut texts = [String::new(), String::new(), String::new()];
    for i in 0..30_000u32 {
        let file = (i % 3) as usize;
        // Jitter of a few seconds within each file, and a late line now and then.
        let secs = i / 3 + (i * 7919 % 5);
        let secs = if i % 4999 == 0 {
            secs.saturating_sub(500)
        } else {
            secs
        };
        texts[file] += &line(secs, &format!("/p{}", i % 97));
        match i % 1000 {
            1 => texts[file] += "not a log line\n",
            2 => texts[file] += "\n",
            3 => texts[file] += &format!("{}\n", "x".repeat(70_000)),
            _ => {}
        }
    }
    let gz = dir.join("c.gz");
    std::fs::write(&gz, gzip(&texts[2])).unwrap();
    vec![write(dir, "a", &texts[0]), write(dir, "b", &texts[1]), gz]
}

#[test]
fn every_thread_count_gives_the_same_entries_and_summary_as_one_thread() {
    let dir = tempfile::tempdir().unwrap();
    let paths = awkward_logs(dir.path());
    let run = |threads| {
        let options = ReadOptions {
            threads,
            ..ReadOptions::default()
        };
        let mut entries = Vec::new();
        let mut progress = Vec::new();
        let summary = stream_logs(&paths, &options, &mut |e| entries.push(e), &mut |lines| {
            progress.push(lines)
        })
        .unwrap();
        (entries, summary, progress.len())
    };
    let (one, one_summary, _) = run(1);
    assert_eq!(one.len(), 30_000);
    assert!(one_summary.out_of_order > 0, "the late lines are counted");
    assert_eq!(
        (
            one_summary.bad_lines,
            one_summary.long_lines,
            one_summary.blank_lines
        ),
        (60, 30, 30)
    );
    for threads in [2, 3, 8] {
        let (many, summary, progress) = run(threads);
        assert!(many == one, "{threads} threads: entries differ");
        assert_eq!(summary, one_summary, "{threads} threads");
        assert!(progress <= 1, "30 000 lines report no progress or once");
    }
}

/// Issue 51, item 12: a gzip file cut short ends the stream's reading of it after its lines
/// before the cut, on any number of threads alike, and the summary says where; an error of
/// the file itself (here, a directory) is still an error.
#[test]
fn a_gzip_cut_short_ends_the_file_after_its_lines_before_the_cut() {
    let dir = tempfile::tempdir().unwrap();
    let text: String = (0..10_000).map(|s| line(s, "/x")).collect();
    let mut bytes = gzip(&text);
    bytes.truncate(bytes.len() * 3 / 4);
    let gz = dir.path().join("cut.gz");
    std::fs::write(&gz, bytes).unwrap();
    let mut first = None;
    for threads in [1, 2] {
        let options = ReadOptions {
            threads,
            ..ReadOptions::default()
        };
        let mut seen = 0;
        let summary = stream_logs(
            std::slice::from_ref(&gz),
            &options,
            &mut |_| seen += 1,
            &mut |_| {},
        )
        .unwrap();
        assert!(
            seen > 2000,
            "{threads} threads: {seen} entries before the cut"
        );
        assert_eq!(summary.cut_short.len(), 1, "{summary:?}");
        assert_eq!(summary.cut_short[0].line, seen, "{threads} threads");
        let note = summary.cut_note(std::slice::from_ref(&gz)).unwrap();
        assert!(
            note.contains(&format!(
                "cut.gz was read up to line {seen} only: the file ends inside"
            )),
            "{note}"
        );
        assert_eq!(*first.get_or_insert(seen), seen, "{threads} threads");
    }
    let result = stream_logs(
        &[dir.path().to_path_buf()],
        &ReadOptions::default(),
        &mut |_| {},
        &mut |_| {},
    );
    assert!(matches!(result, Err(Error::Read { .. })), "{result:?}");
}

#[test]
fn a_sink_that_has_enough_stops_the_reading_and_its_threads() {
    let dir = tempfile::tempdir().unwrap();
    let text: String = (0..50_000).map(|s| line(s, "/x")).collect();
    let log = write(dir.path(), "log", &text);
    for threads in [1, 2] {
        let options = ReadOptions {
            threads,
            ..ReadOptions::default()
        };
        let mut seen = 0u64;
        let mut sink = |_| {
            seen += 1;
            if seen == 1000 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        };
        let summary =
            stream_logs_while(std::slice::from_ref(&log), &options, &mut sink, &mut |_| {})
                .unwrap();
        assert_eq!((seen, summary.entries, summary.stopped), (1000, 1000, true));
        assert!(
            summary.lines < 50_000,
            "{threads} threads read {} lines",
            summary.lines
        );
    }
}

#[test]
fn a_stop_raised_from_outside_ends_the_reading_with_what_was_read() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let dir = tempfile::tempdir().unwrap();
    let text: String = (0..20_000).map(|i| line(i, "/a")).collect();
    let log = write(dir.path(), "access.log", &text);
    for threads in [1, 4] {
        let options = ReadOptions {
            threads,
            ..ReadOptions::default()
        };
        // Raised by the sink at the 100th entry, as a signal handler would raise it.
        let stop = AtomicBool::new(false);
        let mut seen = 0u64;
        let summary = stream_logs_until(
            std::slice::from_ref(&log),
            &options,
            &stop,
            &mut |_| {
                seen += 1;
                if seen == 100 {
                    stop.store(true, Ordering::Relaxed);
                }
            },
            &mut |_| {},
        )
        .unwrap();
        assert!(summary.stopped);
        assert_eq!(summary.entries, seen);
        assert!((100..20_000).contains(&seen), "{seen}");
        // Every line read reached the sink: none was left in the reorder buffer or in a
        // batch parsed but not yet taken.
        assert_eq!(summary.lines, seen, "{summary:?}");
    }
    // A log of lines that do not parse stops as well, before it is read to its end; stopped
    // before any entry, that is a summary, not the "nothing parses" error.
    let garbage = write(dir.path(), "garbage", &"not a log line\n".repeat(100_000));
    let stop = AtomicBool::new(true);
    let summary = stream_logs_until(
        &[garbage],
        &ReadOptions::default(),
        &stop,
        &mut |_| panic!("no entry"),
        &mut |_| {},
    )
    .unwrap();
    assert!(summary.stopped && summary.entries == 0, "{summary:?}");
    assert!(summary.lines < 100_000, "{summary:?}");
}

#[test]
fn an_input_without_line_ends_is_refused_not_read_for_ever() {
    // #51: `characterize /dev/zero` never ended. 40 MiB of NULs, no line end.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("zeros.log");
    std::fs::write(&path, vec![0u8; 40 << 20]).unwrap();
    let err = stream_logs(&[path], &ReadOptions::default(), &mut |_| {}, &mut |_| {})
        .expect_err("refused");
    let said = err.to_string();
    assert!(said.contains("no line end in the first 16 MiB"), "{said}");
    assert!(said.contains("zeros.log after line 0"), "{said}");
}
