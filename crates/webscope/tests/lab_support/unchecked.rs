//! Tests that could not check their claim say so, and are counted (#47 §7): a busy machine
//! that refused a capacity search, one CPU where the test pins two. Such a test passes (its
//! claim is neither shown nor refuted), but it must not pass silently: it prints why, and,
//! where CI asks for it (`WEBSCOPE_UNCHECKED_LOG` names a file), adds a line to that file.
//! `.ci/run` runs each such test once more after the suite (a shared host's steal comes and
//! goes), then counts what is still unchecked, lists it, and fails past its stated allowance.

use std::io::Write;

/// Records that the running test could not check its claim, and why.
pub fn unchecked(why: &str) {
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("a test");
    eprintln!("note: {test} could not check its claim: {why}");
    let Some(path) = std::env::var_os("WEBSCOPE_UNCHECKED_LOG") else {
        return;
    };
    // One short write with O_APPEND: lines from test binaries run at once do not interleave.
    // Tab-separated, the test binary first, so that `.ci/run` can run the test again alone.
    let line = format!(
        "{}\t{test}\t{}\n",
        test_binary(),
        why.replace(['\n', '\t'], " ")
    );
    let written = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&path)
        .and_then(|mut f| f.write_all(line.as_bytes()));
    assert!(
        written.is_ok(),
        "cannot record an unchecked test in {}: {written:?}",
        std::path::Path::new(&path).display()
    );
}

/// The name cargo gives this test binary (`--test NAME`): the executable's name without the
/// hash cargo appends (`lab_ab-99d4141f8d6b73d5` is `lab_ab`).
fn test_binary() -> String {
    let exe = std::env::current_exe().ok();
    let stem = exe
        .as_deref()
        .and_then(|p| p.file_stem())
        .and_then(|s| s.to_str())
        .unwrap_or("unknown");
    match stem.rsplit_once('-') {
        Some((name, hash)) if hash.chars().all(|c| c.is_ascii_hexdigit()) => name.to_string(),
        _ => stem.to_string(),
    }
}
