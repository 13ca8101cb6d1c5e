//! Finding the file a request names: under the root, regular, and not reached through a
//! symlink that leads out of the root.
//!
//! The containment check is the kernel's: `openat2(2)` with `RESOLVE_BENEATH` refuses any
//! resolution, `..` or symlink, that would leave the directory the root's descriptor names,
//! without a `realpath` per request. Kernels before 5.6 lack `openat2`; there the opened file's
//! path is read back from `/proc/self/fd` and compared with the root's.

use std::ffi::CStr;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The document root, opened once.
#[derive(Debug)]
pub(crate) struct Root {
    dir: OwnedFd,
    /// The canonical path, for the fallback check on kernels without openat2.
    canonical: PathBuf,
    follow_symlinks: bool,
}

/// What a path under the root turned out to be.
#[derive(Debug)]
pub(crate) enum Lookup {
    /// A regular file, opened.
    File(OpenFile),
    /// A directory named without its trailing slash: redirect to add it.
    DirectoryWithoutSlash,
    /// Nothing there, or a directory without `index.html`.
    NotFound,
    /// There, but not to be served: a symlink out of the root, a special file, no permission.
    Forbidden,
    /// The server is out of file descriptors.
    Unavailable,
}

/// An open regular file and the metadata a response needs.
#[derive(Debug)]
pub(crate) struct OpenFile {
    pub file: File,
    pub size: u64,
    pub mtime: i64,
    pub mtime_nsec: i64,
    pub dev: u64,
    pub ino: u64,
    /// The path that was opened, relative to the root (index.html appended for directories),
    /// for the Content-Type.
    pub index: bool,
}

/// What makes a file the same file: where it lives, its size and its modification time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Identity {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime: i64,
    pub mtime_nsec: i64,
}

impl OpenFile {
    pub(crate) fn identity(&self) -> Identity {
        Identity {
            dev: self.dev,
            ino: self.ino,
            size: self.size,
            mtime: self.mtime,
            mtime_nsec: self.mtime_nsec,
        }
    }

    fn new(file: File, meta: &std::fs::Metadata, index: bool) -> OpenFile {
        OpenFile {
            size: meta.len(),
            mtime: meta.mtime(),
            mtime_nsec: meta.mtime_nsec(),
            dev: meta.dev(),
            ino: meta.ino(),
            file,
            index,
        }
    }
}

impl Root {
    pub(crate) fn open(path: &Path, follow_symlinks: bool) -> io::Result<Root> {
        let canonical = std::fs::canonicalize(path)?;
        let dir = File::open(&canonical)?;
        if !dir.metadata()?.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                "not a directory",
            ));
        }
        Ok(Root {
            dir: dir.into(),
            canonical,
            follow_symlinks,
        })
    }

    /// Looks up `rel` (a normalised path without leading `/`, empty for the root itself).
    /// `scratch` is a reusable buffer; on success it holds the path that was opened (with
    /// `/index.html` for a directory), so the file can be opened again later.
    pub(crate) fn lookup(&self, rel: &[u8], names_dir: bool, scratch: &mut Vec<u8>) -> Lookup {
        scratch.clear();
        if rel.is_empty() {
            scratch.push(b'.');
        } else {
            scratch.extend_from_slice(rel);
        }
        let file = match self.open_beneath(scratch) {
            Ok(file) => file,
            Err(err) => return lookup_error(&err),
        };
        let meta = match file.metadata() {
            Ok(meta) => meta,
            Err(err) => return lookup_error(&err),
        };
        if meta.is_file() {
            scratch.pop(); // the NUL
            return Lookup::File(OpenFile::new(file, &meta, false));
        }
        if !meta.is_dir() {
            return Lookup::Forbidden;
        }
        if !names_dir {
            return Lookup::DirectoryWithoutSlash;
        }
        drop(file);
        scratch.truncate(scratch.len() - 1); // the NUL
        scratch.extend_from_slice(b"/index.html");
        match self.open_beneath(scratch) {
            Ok(file) => match file.metadata() {
                Ok(meta) if meta.is_file() => {
                    scratch.pop(); // the NUL
                    Lookup::File(OpenFile::new(file, &meta, true))
                }
                Ok(_) => Lookup::NotFound,
                Err(err) => lookup_error(&err),
            },
            Err(err) if err.raw_os_error() == Some(libc::ENOENT) => Lookup::NotFound,
            Err(err) => lookup_error(&err),
        }
    }

    /// Opens a path that `lookup` resolved before (as it left it in its scratch buffer).
    pub(crate) fn reopen(&self, opened: &[u8], scratch: &mut Vec<u8>) -> io::Result<File> {
        scratch.clear();
        scratch.extend_from_slice(opened);
        self.open_beneath(scratch)
    }

    /// The identity of what `opened` names now, by one `fstatat` (which follows symlinks
    /// without the containment check: the result is only compared with an entry that was
    /// opened with the check, so a match proves it is the same file).
    pub(crate) fn identity(&self, opened: &[u8], scratch: &mut Vec<u8>) -> io::Result<Identity> {
        scratch.clear();
        scratch.extend_from_slice(opened);
        scratch.push(0);
        let c_path = CStr::from_bytes_with_nul(scratch)
            .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: a valid directory descriptor, NUL-terminated path and stat buffer.
        let rc =
            unsafe { libc::fstatat(self.dir.as_raw_fd(), c_path.as_ptr(), st.as_mut_ptr(), 0) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fstatat succeeded and filled the buffer.
        let st = unsafe { st.assume_init() };
        Ok(Identity {
            dev: st.st_dev,
            ino: st.st_ino,
            size: st.st_size as u64,
            mtime: st.st_mtime,
            mtime_nsec: st.st_mtime_nsec,
        })
    }

    /// Opens `path` (NUL appended here) relative to the root, refusing to leave it unless
    /// symlinks may be followed.
    fn open_beneath(&self, path: &mut Vec<u8>) -> io::Result<File> {
        path.push(0);
        let c_path = CStr::from_bytes_with_nul(path)
            .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        // O_NONBLOCK so that a FIFO cannot block the worker; O_NOCTTY for terminals. Both are
        // refused after fstat anyway, as only regular files are served.
        let flags = libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NONBLOCK | libc::O_NOCTTY;
        if self.follow_symlinks {
            return openat(self.dir.as_fd_borrowed(), c_path, flags);
        }
        match openat2_beneath(self.dir.as_fd_borrowed(), c_path, flags) {
            Err(err) if err.raw_os_error() == Some(libc::ENOSYS) => {
                let file = openat(self.dir.as_fd_borrowed(), c_path, flags)?;
                self.check_inside(&file)?;
                Ok(file)
            }
            other => other,
        }
    }

    /// The fallback containment check: where did the open really lead?
    fn check_inside(&self, file: &File) -> io::Result<()> {
        let link = format!("/proc/self/fd/{}", file.as_raw_fd());
        let real = std::fs::read_link(link)?;
        if real.starts_with(&self.canonical) {
            Ok(())
        } else {
            Err(io::Error::from_raw_os_error(libc::EXDEV))
        }
    }
}

trait AsFdBorrowed {
    fn as_fd_borrowed(&self) -> BorrowedFd<'_>;
}

impl AsFdBorrowed for OwnedFd {
    fn as_fd_borrowed(&self) -> BorrowedFd<'_> {
        std::os::fd::AsFd::as_fd(self)
    }
}

fn openat(dir: BorrowedFd<'_>, path: &CStr, flags: i32) -> io::Result<File> {
    // SAFETY: `path` is NUL-terminated and outlives the call; the returned descriptor is
    // owned by nobody else.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), path.as_ptr(), flags) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by openat and is valid.
    Ok(unsafe { File::from_raw_fd(fd) })
}

fn openat2_beneath(dir: BorrowedFd<'_>, path: &CStr, flags: i32) -> io::Result<File> {
    // The kernel's `struct open_how` (libc's is non-exhaustive, so it is spelled out here).
    #[repr(C)]
    struct OpenHow {
        flags: u64,
        mode: u64,
        resolve: u64,
    }
    let how = OpenHow {
        flags: flags as u64,
        mode: 0,
        resolve: libc::RESOLVE_BENEATH,
    };
    // SAFETY: `path` is NUL-terminated, `how` is a valid open_how and the size passed is its
    // size; the returned descriptor is owned by nobody else.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir.as_raw_fd(),
            path.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by openat2 and is valid.
    Ok(unsafe { File::from_raw_fd(fd as i32) })
}

fn lookup_error(err: &io::Error) -> Lookup {
    match err.raw_os_error() {
        Some(libc::ENOENT | libc::ENOTDIR | libc::ENAMETOOLONG) => Lookup::NotFound,
        Some(libc::EXDEV | libc::ELOOP | libc::EACCES | libc::EPERM | libc::ENXIO) => {
            Lookup::Forbidden
        }
        Some(libc::EMFILE | libc::ENFILE | libc::ENOMEM) => Lookup::Unavailable,
        _ => Lookup::NotFound,
    }
}

/// The entity tag of a file, as nginx forms it: `"<mtime hex>-<size hex>"`.
pub(crate) fn write_etag(out: &mut Vec<u8>, mtime: i64, size: u64) {
    use std::io::Write;
    // Writing to a Vec cannot fail.
    let _ = write!(out, "\"{:x}-{:x}\"", mtime, size);
}

/// The Content-Type for a path, from its extension (mime_guess's table, the one the
/// Apache/nginx `mime.types` files come from); `application/octet-stream` otherwise.
pub(crate) fn content_type(rel: &[u8], index: bool) -> &'static str {
    if index {
        return "text/html";
    }
    let name = rel.rsplit(|&b| b == b'/').next().unwrap_or(rel);
    let ext = match name.iter().rposition(|&b| b == b'.') {
        Some(dot) if dot > 0 => &name[dot + 1..],
        _ => return "application/octet-stream",
    };
    std::str::from_utf8(ext)
        .ok()
        .and_then(|ext| mime_guess::from_ext(ext).first_raw())
        .unwrap_or("application/octet-stream")
}

/// Reads `len` bytes at `offset` into `out`'s spare capacity, without zeroing it first.
/// Returns fewer than `len` only if the file is shorter.
pub(crate) fn read_at(file: &File, offset: u64, len: u64, out: &mut Vec<u8>) -> io::Result<u64> {
    let len = len as usize;
    out.reserve(len);
    let mut done = 0;
    while done < len {
        let spare = &mut out.spare_capacity_mut()[..len - done];
        // SAFETY: pread writes at most `spare.len()` bytes into the spare capacity.
        let n = unsafe {
            libc::pread(
                file.as_raw_fd(),
                spare.as_mut_ptr().cast(),
                spare.len(),
                (offset + done as u64) as libc::off_t,
            )
        };
        if n < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(err);
        }
        if n == 0 {
            break;
        }
        // SAFETY: pread initialised `n` more bytes.
        unsafe { out.set_len(out.len() + n as usize) };
        done += n as usize;
    }
    Ok(done as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types() {
        for (path, ty) in [
            ("a.html", "text/html"),
            ("d/a.css", "text/css"),
            ("a.js", "text/javascript"),
            ("a.json", "application/json"),
            ("a.txt", "text/plain"),
            ("a.png", "image/png"),
            ("a.JPG", "image/jpeg"),
            ("a.gif", "image/gif"),
            ("a.svg", "image/svg+xml"),
            ("a.pdf", "application/pdf"),
            ("a.zip", "application/zip"),
            ("a.mp3", "audio/mpeg"),
            ("a.mp4", "video/mp4"),
            ("a.unknownext", "application/octet-stream"),
            ("noext", "application/octet-stream"),
            (".hidden", "application/octet-stream"),
        ] {
            assert_eq!(content_type(path.as_bytes(), false), ty, "{path}");
        }
    }

    #[test]
    fn etag_is_nginx_style() {
        let mut out = Vec::new();
        write_etag(&mut out, 0x5f00_0000, 1024);
        assert_eq!(out, b"\"5f000000-400\"");
    }
}
