use std::io::Write;
use std::path::Path;

use super::*;

fn line(second: u32, path: &str) -> String {
    format!("10.0.0.1 - - [01/Jan/2024:00:00:{second:02} +0000] \"GET {path} HTTP/1.1\" 200 10 \"-\" \"t\"\n")
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn gzip(text: &str) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(text.as_bytes()).unwrap();
    enc.finish().unwrap()
}

#[test]
fn unsorted_lines_across_two_files_come_out_sorted_and_stable() {
    let dir = tempfile::tempdir().unwrap();
    // Given newest file first; lines out of order within each file.
    let a = write(
        dir.path(),
        "access.log",
        format!("{}{}{}", line(5, "/a5"), line(3, "/a3"), line(5, "/a5b")).as_bytes(),
    );
    let b = write(
        dir.path(),
        "access.log.1",
        format!("{}{}", line(5, "/b5"), line(1, "/b1")).as_bytes(),
    );
    let parsed = read_logs(&[a, b], None).unwrap();
    let order: Vec<_> = parsed.entries.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(order, ["/b1", "/a3", "/a5", "/a5b", "/b5"]);
    let a5b = &parsed.entries[3];
    assert_eq!((a5b.file, a5b.line), (0, 3));
    assert_eq!((parsed.lines, parsed.bad_lines), (5, 0));
}

#[test]
fn gzip_is_read_by_its_magic_not_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!("{}{}", line(1, "/x"), line(2, "/y"));
    // A concatenation of two gzip members, as `cat a.gz b.gz` makes: both are read.
    let mut both = gzip(&text);
    both.extend(gzip(&line(3, "/z")));
    let gz = write(dir.path(), "log-without-suffix", &both);
    let plain = write(dir.path(), "plain.gz", text.as_bytes());
    let parsed = read_logs(&[gz, plain], None).unwrap();
    let order: Vec<_> = parsed.entries.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(order, ["/x", "/x", "/y", "/y", "/z"]);
}

#[test]
fn junk_lines_are_counted_and_the_first_five_kept() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = line(1, "/ok");
    for i in 0..7 {
        text.push_str(&format!("junk {i}\n"));
    }
    text.push_str("\n\r\n");
    text.push_str(&line(2, "/ok2"));
    let p = write(dir.path(), "mixed.log", text.as_bytes());
    let parsed = read_logs(&[p], None).unwrap();
    assert_eq!(parsed.entries.len(), 2);
    assert_eq!(parsed.bad_lines, 7);
    assert_eq!(parsed.bad_examples.len(), 5);
    assert_eq!(parsed.bad_examples[0].line, 2);
    assert_eq!(parsed.bad_examples[0].text, "junk 0");
    assert_eq!(parsed.lines, 11);
}

#[test]
fn nothing_parseable_is_one_line_naming_files_and_format() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.log", b"{\"json\": 1}\n");
    let b = write(dir.path(), "b.log", b"");
    let err = read_logs(&[a, b], Some(Format::Combined))
        .unwrap_err()
        .to_string();
    assert!(!err.contains('\n'), "{err}");
    assert!(err.contains("a.log") && err.contains("b.log"), "{err}");
    assert!(err.contains("--format combined"), "{err}");
    assert!(err.contains("line 1 of"), "{err}");
}

#[test]
fn a_missing_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let ok = write(dir.path(), "ok.log", line(1, "/").as_bytes());
    let missing = dir.path().join("nope.log");
    let err = read_logs(&[ok, missing], None).unwrap_err().to_string();
    assert!(
        err.starts_with("cannot open access log") && err.contains("nope.log"),
        "{err}"
    );
    assert!(read_logs(&[], None).is_err());
}

/// Issue 51, item 12: a gzip file cut short was refused whole; its lines before the cut are
/// read now, as zcat reads them, and the summary says where it stopped.
#[test]
fn a_truncated_gzip_keeps_its_lines_before_the_cut_and_says_where() {
    let dir = tempfile::tempdir().unwrap();
    let text: String = (0..2000).map(|i| line(i % 60, &format!("/f{i}"))).collect();
    let gz = gzip(&text);
    let p = write(dir.path(), "cut.gz", &gz[..gz.len() / 2]);
    let parsed = read_logs(std::slice::from_ref(&p), None).unwrap();
    assert!(
        parsed.entries.len() > 500 && parsed.entries.len() < 2000,
        "{} entries",
        parsed.entries.len()
    );
    let cut = &parsed.cut_short;
    assert_eq!(cut.len(), 1, "{cut:?}");
    assert_eq!(cut[0].line, parsed.lines);
    assert_eq!(parsed.lines, parsed.entries.len() as u64);
    assert!(
        cut[0]
            .why
            .contains("ends inside the deflate data of the gzip member at byte 0"),
        "{cut:?}"
    );
    // Cut before a line could be read: that is the error, not the format.
    let p = write(dir.path(), "stub.gz", &gz[..30]);
    let err = read_logs(&[p], None).unwrap_err().to_string();
    assert!(
        err.starts_with("cannot read access log")
            && err.contains("stub.gz after line 0: the file ends inside"),
        "{err}"
    );
}

#[test]
fn a_line_over_64_kib_is_a_bad_line_and_the_next_line_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = line(1, "/ok").into_bytes();
    text.extend(std::iter::repeat_n(b'x', 200_000));
    text.push(b'\n');
    text.extend(line(2, "/after").into_bytes());
    let p = write(dir.path(), "long.log", &text);
    let parsed = read_logs(&[p], None).unwrap();
    let paths: Vec<_> = parsed.entries.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(paths, ["/ok", "/after"]);
    assert_eq!(
        (parsed.bad_lines, parsed.long_lines, parsed.lines),
        (1, 1, 3)
    );
    let bad = &parsed.bad_examples[0];
    assert_eq!((bad.line, bad.text.len()), (2, 200));
    assert!(bad.why.contains("64 KiB"), "{}", bad.why);
}

#[test]
fn a_time_before_1990_or_in_the_future_is_a_bad_line() {
    let dir = tempfile::tempdir().unwrap();
    let dated = |date: &str| {
        format!("10.0.0.1 - - [{date} +0000] \"GET /old HTTP/1.1\" 200 10 \"-\" \"t\"\n")
    };
    let text = format!(
        "{}{}{}{}",
        line(1, "/ok"),
        dated("01/Jan/0001:00:00:00"),
        dated("31/Dec/9999:23:59:59"),
        dated("31/Dec/1989:23:59:59")
    );
    let p = write(dir.path(), "dates.log", text.as_bytes());
    let parsed = read_logs(&[p], None).unwrap();
    assert_eq!(parsed.entries.len(), 1);
    assert_eq!((parsed.bad_lines, parsed.bad_times), (3, 3));
    let whys: Vec<_> = parsed.bad_examples.iter().map(|b| b.why).collect();
    assert!(
        whys[0].contains("before 1990") && whys[1].contains("ahead"),
        "{whys:?}"
    );
}

#[test]
fn a_time_zone_beyond_14_hours_is_a_bad_line() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "{}10.0.0.1 - - [01/Jan/2024:00:00:02 +9999] \"GET /tz HTTP/1.1\" 200 10 \"-\" \"t\"\n",
        line(1, "/ok")
    );
    let p = write(dir.path(), "tz.log", text.as_bytes());
    let parsed = read_logs(&[p], None).unwrap();
    assert_eq!((parsed.entries.len(), parsed.bad_lines), (1, 1));
    assert_eq!(parsed.bad_examples[0].why, "bad [time] field");
}

#[test]
fn a_gzip_of_newlines_says_its_lines_are_blank() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "blank.gz", &gzip(&"\n".repeat(100_000)));
    let err = read_logs(&[p], None).unwrap_err().to_string();
    assert!(
        err.contains("no log line in 100000 lines, all blank") && err.contains("blank.gz"),
        "{err}"
    );
}

#[test]
fn lines_cut_short_in_the_user_agent_are_entries_counted_as_repaired_over_files() {
    let dir = tempfile::tempdir().unwrap();
    let cut = "10.0.0.1 - - [01/Jan/2024:00:00:07 +0000] \"GET /cut HTTP/1.1\" 200 10 \"-\" \"Mozilla/5.0 (Windows\n";
    let a = write(
        dir.path(),
        "a",
        format!("{}{cut}{}", line(1, "/a"), line(9, "/b")).as_bytes(),
    );
    let b = write(dir.path(), "b", format!("{cut}junk\n").as_bytes());
    let mut paths = Vec::new();
    let summary = crate::stream_logs(
        &[a.clone(), b],
        &crate::ReadOptions::default(),
        &mut |e| paths.push(e.path),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(paths, ["/a", "/cut", "/cut", "/b"]);
    assert_eq!(
        (summary.entries, summary.repaired_lines, summary.bad_lines),
        (4, 2, 1)
    );
    // read_logs hands the count on.
    assert_eq!(read_logs(&[a], None).unwrap().repaired_lines, 1);
}
