//! Writing a file into a directory that someone else may also write: a lab directory given
//! back to `webscope report`, an `--out` that already holds files, a path the user named.
//!
//! Every file webscope writes goes through [`write_file`] (a whole file) or [`create_file`]
//! (a stream: an interval log, a CSV written as samples arrive). Both make a new file beside
//! the target, opened with `O_CREAT|O_EXCL|O_NOFOLLOW` under a random name, and rename(2)
//! it over the target. rename replaces whatever the last component is, a symlink included,
//! so a symlink planted at `DIR/report.json` is replaced, never followed: the file it points
//! to is not touched. A name planted at the temporary's path cannot redirect it either, since
//! `O_EXCL` refuses any name that exists and the next random name is tried.
//!
//! One exception: a FIFO or a character device at the path (`/dev/null`, or `/dev/stdout`
//! through its symlink) is a stream the user pointed the output at. It holds no file to lose,
//! and renaming over it would replace a device node (as root, for every program on the
//! machine), so it is written in place. The opened descriptor is checked again, so a regular
//! file swapped in meanwhile is never written through.
//!
//! Not done: fsync. A crash right after the rename may leave an empty file on some file
//! systems; every file here can be written again from what it was made of.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Writes `bytes` as the whole content of `path`: into a new file beside it, renamed over
/// `path` when complete, so that a reader sees the old file or the new one, never half, and a
/// symlink at `path` is replaced rather than followed.
pub fn write_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    if let Some(mut stream) = stream_at(path)? {
        return stream.write_all(bytes);
    }
    let mut temporary = beside(path)?;
    temporary.write_all(bytes)?;
    temporary.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Creates `path` afresh and returns it open for writing, for a file written as it goes: a
/// new empty file takes the name at once (what was there, a symlink included, is replaced,
/// never followed nor truncated).
pub fn create_file(path: &Path) -> io::Result<File> {
    if let Some(stream) = stream_at(path)? {
        return Ok(stream);
    }
    beside(path)?.persist(path).map_err(|e| e.error)
}

/// A new empty file in `path`'s directory, under a random hidden name; removed when dropped
/// unless persisted.
fn beside(path: &Path) -> io::Result<tempfile::NamedTempFile> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    tempfile::Builder::new()
        .prefix(".webscope-")
        .suffix(".partial")
        .make_in(dir, open_new)
}

/// Creates `name`, which must not exist: a symlink there is refused (EEXIST), never followed.
/// tempfile tries another random name then.
fn open_new(name: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        // What a plain File::create gives (0666 less the umask), not tempfile's 0600: reports
        // and sets are read by other users and served by web servers.
        .mode(0o666)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(name)
}

/// The FIFO or character device at `path` opened for writing, or None when `path` is
/// anything else (missing, a regular file, a directory, a symlink to one of those).
fn stream_at(path: &Path) -> io::Result<Option<File>> {
    let is_stream = |t: std::fs::FileType| t.is_fifo() || t.is_char_device();
    match std::fs::metadata(path) {
        Ok(meta) if is_stream(meta.file_type()) => {}
        _ => return Ok(None),
    }
    // Neither created nor truncated; checked again on the descriptor, so that a regular
    // file renamed in between is left as it was.
    let file = OpenOptions::new().write(true).open(path)?;
    if is_stream(file.metadata()?.file_type()) {
        Ok(Some(file))
    } else {
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_symlink_at_the_target_is_replaced_and_what_it_points_to_is_untouched() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("outside.txt");
        std::fs::write(&outside, b"the user's own").unwrap();
        let dir = tmp.path().join("dir");
        std::fs::create_dir(&dir).unwrap();
        for (name, write) in [
            ("whole.csv", true),
            ("stream.csv", false),
            ("dangling.csv", true),
        ] {
            let target = dir.join(name);
            let pointed = if name == "dangling.csv" {
                tmp.path().join("would-be-created")
            } else {
                outside.clone()
            };
            symlink(&pointed, &target).unwrap();
            if write {
                write_file(&target, b"new").unwrap();
            } else {
                create_file(&target).unwrap().write_all(b"new").unwrap();
            }
            assert!(!std::fs::symlink_metadata(&target)
                .unwrap()
                .file_type()
                .is_symlink());
            assert_eq!(std::fs::read(&target).unwrap(), b"new");
        }
        assert_eq!(std::fs::read(&outside).unwrap(), b"the user's own");
        assert!(!tmp.path().join("would-be-created").exists());
        // No temporary is left beside them.
        assert_eq!(
            names(&dir),
            ["dangling.csv", "stream.csv", "whole.csv"],
            "{:?}",
            names(&dir)
        );
    }

    #[test]
    fn a_file_is_replaced_whole_with_a_plain_files_mode() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("report.json");
        write_file(&path, b"a much longer first version").unwrap();
        // A hard link elsewhere keeps the old bytes: the name is replaced, the file is not.
        let link = tmp.path().join("link");
        std::fs::hard_link(&path, &link).unwrap();
        write_file(&path, b"second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
        assert_eq!(
            std::fs::read(&link).unwrap(),
            b"a much longer first version"
        );
        // Group and others may read it whenever the umask lets them (022 is the usual one);
        // never the 0600 of a temporary file.
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let umask = status
            .lines()
            .find_map(|l| l.strip_prefix("Umask:"))
            .map(|m| u32::from_str_radix(m.trim(), 8).unwrap())
            .unwrap();
        assert_eq!(mode, 0o666 & !umask, "{mode:o}");
    }

    #[test]
    fn a_name_planted_at_the_temporarys_path_is_refused_not_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("outside.txt");
        std::fs::write(&outside, b"the user's own").unwrap();
        let planted = tmp.path().join(".webscope-planted.partial");
        symlink(&outside, &planted).unwrap();
        let err = open_new(&planted).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        symlink(tmp.path().join("nowhere"), tmp.path().join("dangling")).unwrap();
        assert!(open_new(&tmp.path().join("dangling")).is_err());
        assert!(!tmp.path().join("nowhere").exists());
        assert_eq!(std::fs::read(&outside).unwrap(), b"the user's own");
    }

    #[test]
    fn devices_are_written_in_place_and_a_missing_directory_is_an_error() {
        write_file(Path::new("/dev/null"), b"nothing").unwrap();
        create_file(Path::new("/dev/null"))
            .unwrap()
            .write_all(b"nothing")
            .unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let err = write_file(&tmp.path().join("no/such/dir/file"), b"x").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert_eq!(names(tmp.path()), Vec::<String>::new());
    }

    #[test]
    fn a_directory_at_the_target_is_refused_and_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("index.html");
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join("inside"), b"kept").unwrap();
        assert!(write_file(&path, b"x").is_err());
        assert_eq!(std::fs::read(path.join("inside")).unwrap(), b"kept");
        assert_eq!(names(tmp.path()), ["index.html"]);
    }
}
