//! Whether `--force` may remove a directory: only a file set webscope wrote, holding nothing
//! webscope did not write.
//!
//! A `manifest.json` alone proves nothing: web apps ship one (`{"name": "My PWA", ...}`), and
//! a user may write a webscope manifest by hand for a site of their own to load it. So a
//! directory is taken as webscope's only when
//! - its `manifest.json` is a webscope manifest (format tag, safe paths, sums), and
//! - it holds nothing but the files that manifest lists, their directories, the manifest and
//!   the marker (no symlink anywhere: webscope writes none), and
//! - it carries the marker [`MARKER`] that `write` puts in every set, or, for a set written
//!   before the marker existed, every listed file has its size and begins with the bytes
//!   webscope draws for it from the manifest's seed (the first 4 KiB of each are read).
//!
//! Anything else is refused with the reason; nothing is removed.

use std::collections::HashSet;
use std::fs;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::content::head;
use crate::manifest::{Manifest, MANIFEST, MARKER};
use crate::Error;

/// Ok when `dir` is a set webscope wrote and may be replaced whole; else why not.
pub(crate) fn check(dir: &Path) -> Result<(), Error> {
    let refuse = |reason: String| Error::NotAFileSet {
        path: dir.to_path_buf(),
        reason,
    };
    let manifest = match Manifest::load(dir) {
        Ok(manifest) => manifest,
        Err(Error::BadManifest { .. }) if !dir.join(MANIFEST).exists() => {
            return Err(refuse(format!("it has no {MANIFEST}")))
        }
        Err(Error::BadManifest { .. }) => {
            return Err(refuse(format!("its {MANIFEST} is not one webscope writes")))
        }
        Err(e) => return Err(e),
    };
    let files: HashSet<&str> = manifest.files.iter().map(|f| f.path.as_str()).collect();
    let dirs: HashSet<&str> = files
        .iter()
        .flat_map(|p| p.match_indices('/').map(move |(i, _)| &p[..i]))
        .collect();
    let listed = Listed { files, dirs };
    if let Some(foreign) = listed.first_foreign(dir, "")? {
        return Err(refuse(format!(
            "it holds {}, which its manifest does not list",
            shown(&foreign)
        )));
    }
    let marked = fs::symlink_metadata(dir.join(MARKER)).is_ok_and(|m| m.is_file());
    if !marked {
        if let Some(path) = first_not_drawn(dir, &manifest) {
            return Err(refuse(format!(
                "it has no {MARKER} and {} is not the bytes webscope draws for it",
                shown(path)
            )));
        }
    }
    Ok(())
}

/// What a set's manifest lists: its files and the directories they need.
struct Listed<'a> {
    files: HashSet<&'a str>,
    dirs: HashSet<&'a str>,
}

impl Listed<'_> {
    /// The first entry under `dir` (whose path in the set is `prefix`) that webscope did not
    /// write: an unlisted name, a symlink, a file where a directory is listed or the reverse.
    fn first_foreign(&self, dir: &Path, prefix: &str) -> Result<Option<String>, Error> {
        let entries = fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| Error::io(dir, e))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else {
                return Ok(Some(format!("{prefix}{}", name.to_string_lossy())));
            };
            let path = format!("{prefix}{name}");
            let kind = entry.file_type().map_err(|e| Error::io(entry.path(), e))?;
            let own = if kind.is_file() {
                self.files.contains(path.as_str())
                    || (prefix.is_empty() && (name == MANIFEST || name == MARKER))
                    || (prefix.is_empty() && crate::manifest::BESIDE.contains(&name))
            } else if kind.is_dir() {
                self.dirs.contains(path.as_str())
            } else {
                false
            };
            if !own {
                return Ok(Some(path));
            }
            if kind.is_dir() {
                if let Some(found) = self.first_foreign(&entry.path(), &format!("{path}/"))? {
                    return Ok(Some(found));
                }
            }
        }
        Ok(None)
    }
}

/// The first listed file that is missing, of another size, or does not begin with the
/// bytes `write` draws for it.
fn first_not_drawn<'a>(dir: &Path, manifest: &'a Manifest) -> Option<&'a str> {
    let drawn = |file: &crate::File| -> bool {
        let expected = head(manifest.seed, &file.path, file.size);
        let opened = fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(dir.join(&file.path));
        let Ok(opened) = opened else { return false };
        if opened.metadata().map(|m| m.len()).ok() != Some(file.size) {
            return false;
        }
        let mut found = Vec::with_capacity(expected.len());
        let read = opened.take(expected.len() as u64).read_to_end(&mut found);
        read.is_ok() && found == expected
    };
    manifest
        .files
        .iter()
        .find(|f| !drawn(f))
        .map(|f| f.path.as_str())
}

/// A name as a message may quote it: a logged path may be kilobytes long.
fn shown(name: &str) -> String {
    const MOST: usize = 60;
    match name.char_indices().nth(MOST) {
        Some((cut, _)) => format!("{:?}...", &name[..cut]),
        None => format!("{name:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{write, Spec, WriteOptions};
    use std::sync::atomic::AtomicBool;

    fn set(dir: &Path) -> Manifest {
        let m = Spec::WebStoneA { scale: 0.25 }.plan(3).unwrap();
        let no = AtomicBool::new(false);
        write(&m, dir, &WriteOptions::default(), &no, &mut |_, _| {}).unwrap();
        m
    }

    fn reason(dir: &Path) -> String {
        match check(dir) {
            Err(Error::NotAFileSet { reason, .. }) => reason,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_set_webscope_wrote_is_its_own_with_or_without_the_marker() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("set");
        set(&dir);
        assert!(dir.join(MARKER).is_file());
        check(&dir).unwrap();
        // A set of an earlier version: no marker, but every file is the seed's bytes.
        fs::remove_file(dir.join(MARKER)).unwrap();
        check(&dir).unwrap();
    }

    #[test]
    fn a_web_apps_manifest_or_none_is_not_a_set() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(
            tmp.path().join(MANIFEST),
            r#"{"name":"My PWA","start_url":"/"}"#,
        )
        .unwrap();
        fs::write(tmp.path().join(MARKER), "planted").unwrap();
        assert!(reason(tmp.path()).contains("not one webscope writes"));
        fs::remove_file(tmp.path().join(MANIFEST)).unwrap();
        assert!(reason(tmp.path()).contains("has no manifest.json"));
    }

    #[test]
    fn anything_webscope_did_not_write_makes_it_not_a_set() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("set");
        let m = set(&dir);
        let first = &m.files[0].path;
        // A file of the user's added to a marked set.
        fs::write(dir.join("html/notes.txt"), "mine").unwrap();
        assert!(
            reason(&dir).contains("\"html/notes.txt\""),
            "{}",
            reason(&dir)
        );
        fs::remove_file(dir.join("html/notes.txt")).unwrap();
        // A symlink where a listed file was.
        fs::rename(dir.join(first), tmp.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(tmp.path().join("moved"), dir.join(first)).unwrap();
        assert!(reason(&dir).contains(first.as_str()), "{}", reason(&dir));
        fs::remove_file(dir.join(first)).unwrap();
        fs::rename(tmp.path().join("moved"), dir.join(first)).unwrap();
        check(&dir).unwrap();
        // Unmarked, a file whose bytes are not the seed's: a user's own files under a
        // manifest written by hand.
        fs::remove_file(dir.join(MARKER)).unwrap();
        let size = m.files[0].size as usize;
        fs::write(dir.join(first), vec![b'u'; size]).unwrap();
        assert!(
            reason(&dir).contains("not the bytes webscope draws"),
            "{}",
            reason(&dir)
        );
        // A long name is quoted short.
        let long = "x".repeat(250);
        fs::write(dir.join(&long), "").unwrap();
        assert!(reason(&dir).len() < 120, "{}", reason(&dir));
    }
}
