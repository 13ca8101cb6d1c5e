//! Writing a planned set to disk so that nothing half-written ever looks complete.
//!
//! The set is built in a hidden sibling directory (`.NAME.partial-PID`) and renamed into
//! place only when every file and then the manifest are written; any error or an
//! interruption removes the partial directory. A directory holding a `manifest.json` is
//! therefore always a whole set. Free space is checked before the first byte is written.
//!
//! Beside the manifest goes the marker [`MARKER`]: `--force` replaces only a directory that
//! carries it and holds nothing else webscope did not write (see `owned`).

use std::ffi::CString;
use std::fs;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::content::fill;
use crate::manifest::{Manifest, BESIDE, MANIFEST, MARKER};
use crate::rng::Rng;
use crate::Error;
use webscope_report::human::bytes;

/// How to write a set.
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    /// Replace an existing file set (a directory holding a manifest) at the destination.
    pub force: bool,
}

/// Writes `manifest`'s files (bytes drawn from its seed) and the manifest under `out`.
/// `cancel` is polled between chunks (Ctrl-C); `progress(done, total)` is called as bytes go
/// out.
pub fn write(
    manifest: &Manifest,
    out: &Path,
    options: &WriteOptions,
    cancel: &AtomicBool,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(), Error> {
    write_with(manifest, &[], out, options, cancel, progress)
}

/// [`write()`], with files of given bytes at the set's root (`beside`: name and bytes; only the
/// names a set may carry there, `urls.json` and the nginx and Apache snippets), written before
/// the manifest so that a set with a manifest has them whole.
pub fn write_with(
    manifest: &Manifest,
    beside: &[(&str, &[u8])],
    out: &Path,
    options: &WriteOptions,
    cancel: &AtomicBool,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(), Error> {
    if let Some((name, _)) = beside.iter().find(|(n, _)| !BESIDE.contains(n)) {
        return Err(Error::Invalid(format!(
            "{name} is not a file a set carries beside its manifest"
        )));
    }
    let replacing = check_destination(out, options.force)?;
    let name = out
        .file_name()
        .ok_or_else(|| Error::Invalid(format!("--out {} has no directory name", out.display())))?;
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&parent).map_err(|source| Error::Unwritable {
        path: parent.clone(),
        source,
    })?;
    check_space(&parent, manifest)?;
    let pid = std::process::id();
    let partial = parent.join(format!(".{}.partial-{pid}", name.to_string_lossy()));
    let _ = fs::remove_dir_all(&partial);
    fs::create_dir(&partial).map_err(|source| Error::Unwritable {
        path: parent.clone(),
        source,
    })?;
    let mut guard = RemoveOnDrop(Some(partial.clone()));

    let mut done = 0u64;
    let mut made_dirs = std::collections::HashSet::new();
    let mut buffer = vec![0u8; 64 << 10];
    for file in &manifest.files {
        let path = partial.join(&file.path);
        if let Some(dir) = path.parent() {
            if made_dirs.insert(dir.to_path_buf()) {
                fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
            }
        }
        let mut rng = Rng::for_stream(manifest.seed, &file.path);
        // The partial directory is new and this process's own: O_EXCL (a name that exists,
        // a symlink included, is refused) is all the care a file in it needs.
        let mut handle = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
        let mut left = file.size;
        while left > 0 {
            if cancel.load(Ordering::Relaxed) {
                return Err(Error::Interrupted);
            }
            let n = left.min(buffer.len() as u64) as usize;
            fill(&mut rng, &mut buffer[..n]);
            handle
                .write_all(&buffer[..n])
                .map_err(|e| Error::io(&path, e))?;
            left -= n as u64;
            done += n as u64;
            progress(done, manifest.total_bytes);
        }
    }
    let text = serde_json::to_vec_pretty(manifest)
        .map_err(|e| Error::Invalid(format!("cannot encode the manifest: {e}")))?;
    let marker_path = partial.join(MARKER);
    let marker = format!(
        "This directory is a file set written by webscope {}: `webscope fileset --force` may replace it whole.\n",
        env!("CARGO_PKG_VERSION")
    );
    webscope_sys::write_file(&marker_path, marker.as_bytes())
        .map_err(|e| Error::io(&marker_path, e))?;
    for (name, bytes) in beside {
        let path = partial.join(name);
        webscope_sys::write_file(&path, bytes).map_err(|e| Error::io(&path, e))?;
    }
    let manifest_path = partial.join(MANIFEST);
    webscope_sys::write_file(&manifest_path, &text).map_err(|e| Error::io(&manifest_path, e))?;
    if cancel.load(Ordering::Relaxed) {
        return Err(Error::Interrupted);
    }
    put_in_place(&partial, out, replacing, &parent, name, pid)?;
    guard.0 = None;
    Ok(())
}

/// The bytes `write` puts in the file at `path` of a set made from `seed`: what a server of
/// the set must send back, so that a check can tell the set's own files from another copy.
pub fn content(seed: u64, path: &str, size: u64) -> Vec<u8> {
    let mut rng = Rng::for_stream(seed, path);
    let mut bytes = vec![0u8; size as usize];
    // In the same 64 KiB chunks as `write`: `fill` restarts its newline pattern per chunk.
    for chunk in bytes.chunks_mut(64 << 10) {
        fill(&mut rng, chunk);
    }
    bytes
}

/// Refuses a destination that holds anything but (with --force) a file set webscope wrote;
/// true when there is such a set to replace.
fn check_destination(out: &Path, force: bool) -> Result<bool, Error> {
    match fs::symlink_metadata(out) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(source) => Err(Error::Unwritable {
            path: out.to_path_buf(),
            source,
        }),
        Ok(meta) if !meta.is_dir() => Err(Error::OutExists(out.to_path_buf())),
        Ok(_) => {
            let empty = fs::read_dir(out)
                .map_err(|e| Error::io(out, e))?
                .next()
                .is_none();
            if empty {
                Ok(false)
            } else if !force {
                Err(Error::OutExists(out.to_path_buf()))
            } else {
                crate::owned::check(out).map(|()| true)
            }
        }
    }
}

/// Checks that the file system under `dir` has room for the set (sizes rounded up to 4 KiB
/// blocks, plus the manifest).
fn check_space(dir: &Path, manifest: &Manifest) -> Result<(), Error> {
    let needed: u64 = manifest
        .files
        .iter()
        .map(|f| f.size.div_ceil(4096) * 4096 + 4096)
        .sum::<u64>()
        + manifest.files.len() as u64 * 200;
    let Ok(c_path) = CString::new(dir.as_os_str().as_bytes()) else {
        return Ok(());
    };
    // SAFETY: statvfs fills the zeroed struct from a valid NUL-terminated path.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c_path.as_ptr(), &mut stat) } != 0 {
        // Cannot tell: let the writes fail (and clean up) if space runs out.
        return Ok(());
    }
    let available = stat.f_bavail as u64 * stat.f_frsize as u64;
    if needed > available {
        return Err(Error::NoSpace {
            path: dir.to_path_buf(),
            needed: bytes(needed as f64),
            available: bytes(available as f64),
        });
    }
    Ok(())
}

/// Renames the finished set to `out`, replacing an earlier set (`replacing`) or an empty
/// directory.
fn put_in_place(
    partial: &Path,
    out: &Path,
    replacing: bool,
    parent: &Path,
    name: &std::ffi::OsStr,
    pid: u32,
) -> Result<(), Error> {
    let old = parent.join(format!(".{}.old-{pid}", name.to_string_lossy()));
    if replacing {
        fs::rename(out, &old).map_err(|e| Error::io(out, e))?;
    }
    // rename(2) replaces an empty directory in one step.
    if let Err(e) = fs::rename(partial, out) {
        if replacing {
            let _ = fs::rename(&old, out);
        }
        return Err(Error::io(out, e));
    }
    if replacing {
        let _ = fs::remove_dir_all(&old);
    }
    Ok(())
}

/// Removes a partial directory unless disarmed.
struct RemoveOnDrop(Option<PathBuf>);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        if let Some(path) = self.0.take() {
            let _ = fs::remove_dir_all(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Spec;

    fn no_cancel() -> AtomicBool {
        AtomicBool::new(false)
    }

    #[test]
    fn writes_every_file_at_its_size_and_the_manifest_last() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("set");
        let m = Spec::WebStoneA { scale: 0.25 }.plan(7).unwrap();
        let mut calls = 0;
        write(
            &m,
            &out,
            &WriteOptions::default(),
            &no_cancel(),
            &mut |_, _| calls += 1,
        )
        .unwrap();
        assert!(calls > 0);
        for f in &m.files {
            assert_eq!(
                fs::metadata(out.join(&f.path)).unwrap().len(),
                f.size,
                "{}",
                f.path
            );
        }
        assert_eq!(Manifest::load(&out).unwrap(), m);
        // `content` gives the bytes written, across 64 KiB chunk boundaries too.
        let checked = m.files.iter().enumerate();
        for (_, f) in checked.filter(|(i, f)| i % 7 == 0 || f.size > 64 << 10) {
            let bytes = fs::read(out.join(&f.path)).unwrap();
            assert!(bytes == content(m.seed, &f.path, f.size), "{}", f.path);
        }
        assert!(m.files.iter().any(|f| f.size > 64 << 10));
        // Nothing partial is left beside it.
        let names: Vec<_> = fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("set")]);
    }

    #[test]
    fn same_seed_same_bytes_other_seed_other_bytes() {
        let tmp = tempfile::tempdir().unwrap();
        let plan = |seed| Spec::Single { size: 5000 }.plan(seed).unwrap();
        for (dir, seed) in [("a", 1), ("b", 1), ("c", 2)] {
            write(
                &plan(seed),
                &tmp.path().join(dir),
                &WriteOptions::default(),
                &no_cancel(),
                &mut |_, _| {},
            )
            .unwrap();
        }
        let read = |d: &str| fs::read(tmp.path().join(d).join("file-5000.bin")).unwrap();
        assert_eq!(read("a"), read("b"));
        assert_ne!(read("a"), read("c"));
        assert!(read("a")
            .iter()
            .all(|b| b.is_ascii_graphic() || *b == b'\n'));
    }

    #[test]
    fn refuses_a_non_empty_directory_and_force_replaces_only_a_set() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("set");
        fs::create_dir(&out).unwrap();
        fs::write(out.join("precious.txt"), b"keep me").unwrap();
        let m = Spec::Single { size: 10 }.plan(1).unwrap();
        let opts = WriteOptions::default();
        assert!(matches!(
            write(&m, &out, &opts, &no_cancel(), &mut |_, _| {}),
            Err(Error::OutExists(_))
        ));
        let force = WriteOptions { force: true };
        assert!(matches!(
            write(&m, &out, &force, &no_cancel(), &mut |_, _| {}),
            Err(Error::NotAFileSet { .. })
        ));
        assert_eq!(fs::read(out.join("precious.txt")).unwrap(), b"keep me");

        let set = tmp.path().join("set2");
        write(&m, &set, &opts, &no_cancel(), &mut |_, _| {}).unwrap();
        let m2 = Spec::Single { size: 20 }.plan(1).unwrap();
        write(&m2, &set, &force, &no_cancel(), &mut |_, _| {}).unwrap();
        assert_eq!(Manifest::load(&set).unwrap(), m2);
        assert!(!set.join("file-10.bin").exists());
    }

    #[test]
    fn an_interrupted_write_leaves_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("set");
        let m = Spec::Single { size: 1 << 20 }.plan(1).unwrap();
        let cancel = AtomicBool::new(false);
        let result = write(
            &m,
            &out,
            &WriteOptions::default(),
            &cancel,
            &mut |done, _| {
                if done > 100_000 {
                    cancel.store(true, Ordering::Relaxed);
                }
            },
        );
        assert!(matches!(result, Err(Error::Interrupted)));
        assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 0);
    }

    #[test]
    fn too_little_space_is_refused_before_writing() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("huge");
        // 10 million files of 1 GiB: no test machine has 10 PB free.
        let m = Manifest::assemble(
            "test",
            "huge".into(),
            1,
            serde_json::json!({}),
            &["c"],
            vec![crate::manifest::File {
                path: "x".into(),
                size: 1 << 53,
                class: "c".into(),
                probability: 1.0,
            }],
        );
        let err = write(
            &m,
            &out,
            &WriteOptions::default(),
            &no_cancel(),
            &mut |_, _| {},
        )
        .unwrap_err();
        assert!(err.to_string().contains("not enough space"), "{err}");
        assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 0);
    }
}
