//! The parallel reader against `MultiGzDecoder`, byte for byte, on files cut into chunks far
//! smaller than the real ones so that every path (a guess taken, a guess dropped, a chunk
//! inside a member, a member longer than a chunk) is crossed many times.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use flate2::write::{DeflateEncoder, GzEncoder};
use flate2::Compression;

use super::header::{bgzf_size, plausible, MAGIC};
use super::task::{run, Begin, Msg};
use super::*;
use crate::stream::{stream_logs, ReadOptions};

/// Log lines, some bad, at `secs` past 2024-01-01T00:00:00Z.
fn log_text(lines: u32) -> String {
    (0..lines)
        .map(|i| {
            let (h, m, s) = (i / 3600 % 24, i / 60 % 60, i % 60);
            if i % 97 == 5 {
                return format!("not a log line {i}\n");
            }
            format!(
                "10.0.{}.{} - - [01/Jan/2024:{h:02}:{m:02}:{s:02} +0000] \"GET /p{} HTTP/1.1\" 200 {} \"-\" \"agent {}\"\n",
                i % 7,
                i % 251,
                i * 7919 % 1013,
                i % 5000,
                i % 13
            )
        })
        .collect()
}

fn gzip(bytes: &[u8], level: u32) -> Vec<u8> {
    let mut enc = GzEncoder::new(Vec::new(), Compression::new(level));
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

/// `text` cut at `cuts` (byte offsets, through lines), each piece gzipped at a level of its
/// own, the members concatenated as `cat` does; and where each member starts.
fn members(text: &[u8], cuts: &[usize]) -> (Vec<u8>, Vec<u64>) {
    let mut out = Vec::new();
    let mut starts = Vec::new();
    let mut from = 0;
    for (i, &to) in cuts.iter().chain([text.len()].iter()).enumerate() {
        starts.push(out.len() as u64);
        out.extend(gzip(&text[from..to], [1, 6, 9, 0][i % 4]));
        from = to;
    }
    (out, starts)
}

/// Cuts every `step` bytes, and two at the same place (an empty member).
fn cuts(len: usize, step: usize) -> Vec<usize> {
    let mut cuts: Vec<usize> = (1..len / step).map(|i| i * step + i % 7).collect();
    cuts.insert(1, cuts[0]);
    cuts
}

fn reference(gz: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(gz).read_to_end(&mut out)?;
    Ok(out)
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// What the reader gives for `gz` with `config`: the bytes read before the end or an error,
/// and the error.
fn parallel(gz: &[u8], config: Config) -> (Vec<u8>, Option<std::io::Error>) {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "log.gz", gz);
    let file = BufReader::new(File::open(path).unwrap());
    let mut reader = decoder(file, config).unwrap();
    let mut out = Vec::new();
    let mut buf = vec![0u8; 1000];
    loop {
        match reader.read(&mut buf) {
            Ok(0) => return (out, None),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) => return (out, Some(e)),
        }
    }
}

/// Small chunks and blocks, with 2 to 4 threads.
fn configs() -> Vec<Config> {
    let mut all = Vec::new();
    for threads in [2, 3, 4] {
        for (chunk, block) in [(256, 100), (1000, 4096), (8192, 777)] {
            all.push(Config {
                threads,
                chunk,
                block,
            });
        }
    }
    all
}

fn assert_same_as_multi_gz_decoder(gz: &[u8]) {
    let want = reference(gz).unwrap();
    for config in configs() {
        let (got, error) = parallel(gz, config);
        assert!(error.is_none(), "{config:?}: {error:?}");
        assert!(
            got == want,
            "{config:?}: {} bytes, not {}",
            got.len(),
            want.len()
        );
    }
}

#[test]
fn one_member_reads_as_multi_gz_decoder_reads_it() {
    assert_same_as_multi_gz_decoder(&gzip(log_text(3000).as_bytes(), 6));
}

#[test]
fn many_members_cut_through_lines_read_as_multi_gz_decoder_reads_them() {
    let text = log_text(4000);
    let (gz, starts) = members(text.as_bytes(), &cuts(text.len(), 9000));
    assert!(starts.len() > 30, "{} members", starts.len());
    assert_same_as_multi_gz_decoder(&gz);
}

#[test]
fn members_longer_than_chunks_and_chunks_without_a_start_are_read_whole() {
    let text = log_text(6000);
    // Level 0 members of ~60 KB: each spans many chunks of 256 bytes.
    let (gz, _) = members(text.as_bytes(), &cuts(text.len(), 60_000));
    assert_same_as_multi_gz_decoder(&gz);
}

/// A BGZF member: the BC extra field gives its size less one (SAM/BAM spec §4.1).
fn bgzf_member(piece: &[u8]) -> Vec<u8> {
    let mut deflate = DeflateEncoder::new(Vec::new(), Compression::fast());
    deflate.write_all(piece).unwrap();
    let deflate = deflate.finish().unwrap();
    let mut crc = flate2::Crc::new();
    crc.update(piece);
    let size = 18 + deflate.len() + 8;
    let mut out = vec![
        0x1f, 0x8b, 8, 4, 0, 0, 0, 0, 0, 0xff, 6, 0, b'B', b'C', 2, 0,
    ];
    out.extend(u16::try_from(size - 1).unwrap().to_le_bytes());
    out.extend(deflate);
    out.extend(crc.sum().to_le_bytes());
    out.extend(u32::try_from(piece.len()).unwrap().to_le_bytes());
    out
}

#[test]
fn a_bgzf_file_reads_as_multi_gz_decoder_reads_it() {
    let text = log_text(5000);
    let mut gz = Vec::new();
    for piece in text.as_bytes().chunks(20_000) {
        gz.extend(bgzf_member(piece));
    }
    gz.extend(bgzf_member(b"")); // BGZF's end-of-file marker: an empty member
    assert_eq!(
        bgzf_size(&gz[..18]),
        Some(bgzf_member(&text.as_bytes()[..20_000]).len() as u64)
    );
    assert_same_as_multi_gz_decoder(&gz);
}

fn source(bytes: &[u8]) -> (tempfile::TempDir, Arc<Source>) {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "f.gz", bytes);
    let file = File::open(path).unwrap();
    let len = bytes.len() as u64;
    (dir, Arc::new(Source { file, len }))
}

#[test]
fn a_bgzf_header_whose_size_points_to_no_member_is_not_plausible() {
    let mut gz = bgzf_member(b"some text\n");
    gz.extend(bgzf_member(b"more text\n"));
    let (_dir, src) = source(&gz);
    assert!(plausible(&src, 0));
    let mut wrong = gz.clone();
    wrong[16] += 1; // BSIZE one past the next member's start
    let (_dir2, src) = source(&wrong);
    assert!(!plausible(&src, 0));
}

/// Everything a thread sends, in order.
fn thread_says(src: &Arc<Source>, config: Config, chunk: u64) -> (Option<u64>, usize, Option<u64>) {
    let (tx, rx) = crossbeam_channel::bounded(1);
    let src = src.clone();
    let spares = crossbeam_channel::never();
    let thread = std::thread::spawn(move || run(src, config, chunk, Begin::Scan, tx, spares));
    let (mut start, mut bytes, mut end) = (None, 0, None);
    for msg in rx {
        match msg {
            Msg::Start(at) => start = at,
            Msg::Data(block) => bytes += block.len(),
            Msg::End(at) => end = Some(at),
            Msg::Failed(_) => end = None,
        }
    }
    thread.join().unwrap();
    (start, bytes, end)
}

/// A member stored (level 0) whose text holds a whole gzip file near its end: its header
/// inside the deflate data is plausible and inflates; only the member before ending
/// elsewhere shows it false. Gives the file, the false header's offset and the members'
/// starts.
fn with_false_member() -> (Vec<u8>, u64, [u64; 3]) {
    let mut tricky = log_text(20).into_bytes();
    tricky.extend(gzip(log_text(5).as_bytes(), 6));
    tricky.extend(log_text(1).as_bytes());
    let mut gz = gzip(log_text(50).as_bytes(), 6);
    let second = gz.len() as u64;
    gz.extend(gzip(&tricky, 0));
    let third = gz.len() as u64;
    gz.extend(gzip(log_text(100).as_bytes(), 1));
    let inside = &gz[second as usize + 1..];
    let false_at = second + 1 + memchr::memmem::find(inside, &MAGIC).unwrap() as u64;
    (gz, false_at, [0, second, third])
}

#[test]
fn a_false_header_inside_deflate_data_is_guessed_then_dropped() {
    let (gz, false_at, starts) = with_false_member();
    let (_dir, src) = source(&gz);
    assert!(
        plausible(&src, false_at),
        "the test's false header looks real"
    );
    // The thread of the chunk that holds it takes it for a member start and inflates past
    // its first block.
    let config = Config {
        threads: 2,
        chunk: 64,
        block: 64,
    };
    let (start, bytes, _) = thread_says(&src, config, false_at / config.chunk);
    assert_eq!(start, Some(false_at));
    assert!(bytes >= 64, "{bytes} bytes inflated from the false start");
    assert_same_as_multi_gz_decoder(&gz);
    // Chunks in which the false start comes before the true one: the reader waits for the
    // guess, sees it start elsewhere than where the member before ended, and drops it.
    let want = reference(&gz).unwrap();
    let mut tried = 0;
    for chunk in (256..4096).step_by(32) {
        let holds = |at: u64| at / chunk == false_at / chunk;
        if !holds(starts[2]) || holds(starts[1]) {
            continue;
        }
        tried += 1;
        for threads in [2, 3] {
            let (got, error) = parallel(
                &gz,
                Config {
                    threads,
                    chunk,
                    block: 64,
                },
            );
            assert!(error.is_none() && got == want, "chunk {chunk}: {error:?}");
        }
    }
    assert!(
        tried > 5,
        "{tried} chunk sizes put both starts in one chunk"
    );
}

#[test]
fn a_thread_starts_at_the_first_member_in_its_chunk_and_ends_past_its_chunk() {
    let text = log_text(2000);
    let (gz, starts) = members(text.as_bytes(), &cuts(text.len(), 10_000));
    let (_dir, src) = source(&gz);
    let config = Config {
        threads: 2,
        chunk: 2000,
        block: 4096,
    };
    for chunk in 1..gz.len() as u64 / config.chunk {
        let (from, to) = (chunk * config.chunk, (chunk + 1) * config.chunk);
        let first = starts.iter().copied().find(|&s| s >= from);
        let (start, _, end) = thread_says(&src, config, chunk);
        if first.is_some_and(|s| s < to) {
            assert_eq!(start, first, "chunk {chunk}");
            let past = starts
                .iter()
                .copied()
                .find(|&s| s >= to)
                .unwrap_or(gz.len() as u64);
            assert_eq!(end, Some(past), "chunk {chunk}");
        } else {
            assert_eq!(start, None, "chunk {chunk} lies inside a member");
        }
    }
}

/// What the sequential reader gives for `gz`, `block` bytes at a time: as [`parallel`].
fn sequential(gz: &[u8], block: usize) -> (Vec<u8>, Option<std::io::Error>) {
    let mut reader = Sequential::new(gz, block);
    let mut out = Vec::new();
    let mut buf = vec![0u8; 1000];
    loop {
        match reader.read(&mut buf) {
            Ok(0) => return (out, None),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) => return (out, Some(e)),
        }
    }
}

/// What `MultiGzDecoder` gives before its error.
fn multi_gz_prefix(gz: &[u8]) -> Vec<u8> {
    let mut reader = flate2::read::MultiGzDecoder::new(gz);
    let mut out = Vec::new();
    let mut buf = vec![0u8; 1000];
    while let Ok(n) = reader.read(&mut buf) {
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
    }
    out
}

/// Issue 51, item 12: the parallel reader's errors named another line than the sequential
/// one's (it dropped the block it was filling). Both read members with one member reader
/// now: the same bytes before the damage, the same error after them, whatever the chunks,
/// blocks and threads; and at least what `MultiGzDecoder` gave before its error.
#[test]
fn damaged_files_read_the_same_on_one_thread_as_on_many() {
    let text = log_text(3000);
    let (gz, starts) = members(text.as_bytes(), &cuts(text.len(), 20_000));
    let middle = starts[starts.len() / 2] as usize;
    let next = starts[starts.len() / 2 + 1] as usize;
    let mut damaged = vec![
        (
            "cut in a member",
            gz[..gz.len() * 2 / 3].to_vec(),
            "ends inside the deflate data",
        ),
        (
            "cut in a header",
            gz[..middle + 5].to_vec(),
            "ends inside the header",
        ),
        (
            "cut in a trailer",
            gz[..gz.len() - 3].to_vec(),
            "ends inside the trailer",
        ),
        (
            "garbage after the end",
            [gz.clone(), b"junk".to_vec()].concat(),
            "are not a gzip member",
        ),
        (
            "a middle member cut short, the next ones whole",
            [&gz[..(middle + next) / 2], &gz[next..]].concat(),
            "gzip member at byte",
        ),
    ];
    let mut flipped = gz.clone();
    flipped[middle + 40] ^= 0x55; // in the deflate data
    damaged.push(("a flipped byte", flipped, "gzip member at byte"));
    let mut bad_crc = gz.clone();
    bad_crc[middle - 6] ^= 1; // in the trailer of the member before
    damaged.push(("a wrong CRC", bad_crc, "fails its CRC check"));
    let want = reference(&gz).unwrap();
    // The text of the members before the middle one.
    let before_middle = reference(&gz[..middle]).unwrap().len();
    for (what, bytes, says) in &damaged {
        assert!(reference(bytes).is_err(), "{what}: MultiGzDecoder errs too");
        let (got, error) = sequential(bytes, 4096);
        let error = error.unwrap_or_else(|| panic!("{what}: no error"));
        assert!(member::stop_of(&error).is_some(), "{what}: {error}");
        assert!(error.to_string().contains(says), "{what}: {error}");
        assert!(
            got.len() >= multi_gz_prefix(bytes).len(),
            "{what}: less than MultiGzDecoder gave"
        );
        // The members before the damaged one are whole; what the damaged one inflated
        // before its damage was found follows them, as zcat gives it (garbage, when its
        // deflate data ran on into the next member's bytes).
        assert!(
            got.starts_with(&want[..before_middle]),
            "{what}: wrong bytes before the damaged member"
        );
        for block in [100, 777] {
            let (other, e) = sequential(bytes, block);
            assert!(other == got, "{what}, block {block}: other bytes");
            assert_eq!(e.map(|e| e.to_string()), Some(error.to_string()));
        }
        for config in configs() {
            let (other, e) = parallel(bytes, config);
            let e = e.unwrap_or_else(|| panic!("{what}, {config:?}: no error"));
            assert!(
                other == got,
                "{what}, {config:?}: {} bytes, not {}",
                other.len(),
                got.len()
            );
            assert_eq!(e.to_string(), error.to_string(), "{what}, {config:?}");
            assert!(member::stop_of(&e).is_some(), "{what}, {config:?}");
        }
    }
}

#[test]
fn a_reader_dropped_early_stops_its_threads() {
    let text = log_text(4000);
    let (gz, _) = members(text.as_bytes(), &cuts(text.len(), 5000));
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "log.gz", &gz);
    let file = BufReader::new(File::open(path).unwrap());
    let config = Config {
        threads: 4,
        chunk: 512,
        block: 256,
    };
    let mut reader = decoder(file, config).unwrap();
    let mut first = [0u8; 100];
    reader.read_exact(&mut first).unwrap();
    assert_eq!(&first[..], &text.as_bytes()[..100]);
    // Joins every thread: it returns only if each saw its channel go.
    drop(reader);
}

/// Stored members (level 0) so that the file spans several real chunks (1 MiB) with few
/// lines.
#[test]
fn a_multi_member_gzip_gives_the_entries_and_summary_of_the_plain_log() {
    let text = log_text(60_000);
    assert!(text.len() > 4 << 20);
    let cuts: Vec<usize> = (1..40).map(|i| i * text.len() / 40 + i).collect();
    let mut gz = Vec::new();
    let mut from = 0;
    for (i, &to) in cuts.iter().chain([text.len()].iter()).enumerate() {
        gz.extend(gzip(
            &text.as_bytes()[from..to],
            if i % 5 == 0 { 1 } else { 0 },
        ));
        from = to;
    }
    assert!(
        gz.len() as u64 > Config::threads(2).chunk,
        "the parallel path is taken"
    );
    let dir = tempfile::tempdir().unwrap();
    let plain = write(dir.path(), "access.log", text.as_bytes());
    let packed = write(dir.path(), "access.log.gz", &gz);
    let read = |path: &PathBuf, threads| {
        let options = ReadOptions {
            threads,
            ..ReadOptions::default()
        };
        let mut entries = Vec::new();
        let summary = stream_logs(
            std::slice::from_ref(path),
            &options,
            &mut |e| entries.push(e),
            &mut |_| {},
        )
        .unwrap();
        (entries, summary)
    };
    let (want, want_summary) = read(&plain, 1);
    assert!(want_summary.bad_lines > 400 && want.len() > 59_000);
    for threads in [1, 4] {
        let (got, summary) = read(&packed, threads);
        assert_eq!(summary, want_summary, "{threads} threads");
        assert!(got == want, "{threads} threads: entries differ");
    }
}

/// Issue 51, item 12, at the real chunk size: a file of stored members over several chunks
/// with a member cut short in the middle (the lines 104 192 and 104 547) and one cut
/// at its end (222 580 and 224 992): one thread and four give the same entries and stop at
/// the same line, after the lines before the cut.
#[test]
fn a_member_cut_short_stops_one_thread_and_four_at_the_same_line() {
    let text = log_text(60_000);
    let cuts: Vec<usize> = (1..40).map(|i| i * text.len() / 40 + i).collect();
    let (gz, starts) = {
        let mut gz = Vec::new();
        let mut starts = Vec::new();
        let mut from = 0;
        for (i, &to) in cuts.iter().chain([text.len()].iter()).enumerate() {
            starts.push(gz.len());
            gz.extend(gzip(
                &text.as_bytes()[from..to],
                if i % 5 == 0 { 1 } else { 0 },
            ));
            from = to;
        }
        (gz, starts)
    };
    let middle = (starts[20] + starts[21]) / 2;
    let cut_middle = [&gz[..middle], &gz[starts[21]..]].concat();
    let cut_end = gz[..gz.len() - 1000].to_vec();
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in [("middle.gz", cut_middle), ("end.gz", cut_end)] {
        let path = write(dir.path(), name, &bytes);
        let mut seen: Option<(Vec<crate::Entry>, u64)> = None;
        for threads in [1, 4] {
            let options = ReadOptions {
                threads,
                ..ReadOptions::default()
            };
            let mut entries = Vec::new();
            let summary = stream_logs(
                std::slice::from_ref(&path),
                &options,
                &mut |e| entries.push(e),
                &mut |_| {},
            )
            .unwrap();
            assert_eq!(summary.cut_short.len(), 1, "{name}, {threads} threads");
            let line = summary.cut_short[0].line;
            assert!(line > 20_000, "{name}: {line}");
            match &seen {
                None => seen = Some((entries, line)),
                Some((want, want_line)) => {
                    assert_eq!(line, *want_line, "{name}, {threads} threads");
                    assert!(
                        entries == *want,
                        "{name}, {threads} threads: entries differ"
                    );
                }
            }
        }
    }
}
