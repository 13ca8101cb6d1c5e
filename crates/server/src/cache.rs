//! A per-worker cache of what a path resolved to: the metadata a response needs (size, mtime,
//! ETag, Content-Type), the bytes of small files, and an open descriptor for large ones (as
//! nginx's open_file_cache keeps). A hit costs no syscall: the response is built from memory.
//!
//! Correctness when files change: an entry is trusted for at most `revalidate` (1 s, as
//! lighttpd's stat cache); after that, the next request resolves the path again (openat2 +
//! fstat) and keeps the entry only if the file is the same (device, inode, size, mtime).
//! So a changed or deleted file is noticed within one second of the change.
//!
//! Memory is bounded by the bytes of cached bodies and the number of entries; when an insert
//! would pass either bound, random entries are evicted (HashMap iteration order is randomly
//! seeded): cheap, and without LRU's bookkeeping on every hit.

use std::collections::HashMap;
use std::fs::File;
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::files::{self, Lookup, Root};

/// How long an entry is trusted without looking at the file again.
pub(crate) const REVALIDATE: Duration = Duration::from_secs(1);

/// A resolved regular file, ready to answer from.
#[derive(Debug)]
pub(crate) struct Entry {
    pub size: u64,
    pub mtime: i64,
    pub etag: Box<[u8]>,
    pub content_type: &'static str,
    pub body: Body,
    identity: (u64, u64, i64),
    checked: Instant,
}

/// Where a file's bytes come from.
#[derive(Debug, Clone)]
pub(crate) enum Body {
    /// Read once into memory (files up to the sendfile threshold).
    Memory(Rc<[u8]>),
    /// An open descriptor, for sendfile.
    File(Rc<File>),
}

/// The outcome of resolving a path through the cache.
pub(crate) enum Resolved {
    File(Rc<Entry>),
    Other(Lookup),
}

/// One worker's cache.
#[derive(Debug)]
pub(crate) struct FileCache {
    map: HashMap<Box<[u8]>, Rc<Entry>>,
    body_bytes: usize,
    max_body_bytes: usize,
    max_entries: usize,
    /// Files up to this size are kept in memory.
    memory_threshold: u64,
}

impl FileCache {
    /// `max_body_bytes` 0 disables caching: every request resolves and reads afresh.
    pub(crate) fn new(max_body_bytes: usize, max_entries: usize, memory_threshold: u64) -> Self {
        FileCache {
            map: HashMap::new(),
            body_bytes: 0,
            max_body_bytes,
            max_entries,
            memory_threshold,
        }
    }

    /// Resolves `rel` (normalised, see `files::Root::lookup`) to a file entry or why not.
    pub(crate) fn resolve(
        &mut self,
        root: &Root,
        rel: &[u8],
        names_dir: bool,
        scratch: &mut Vec<u8>,
    ) -> Resolved {
        let now = Instant::now();
        let enabled = self.max_body_bytes > 0 && self.max_entries > 0;
        // The key tells "/d" from "/d/": they resolve differently (redirect vs index.html).
        scratch.clear();
        scratch.extend_from_slice(rel);
        scratch.push(if names_dir { b'/' } else { b'.' });
        if enabled {
            if let Some(entry) = self.map.get(scratch.as_slice()) {
                if now.duration_since(entry.checked) < REVALIDATE {
                    return Resolved::File(Rc::clone(entry));
                }
            }
        }
        let key: Box<[u8]> = scratch.as_slice().into();
        let open = match root.lookup(rel, names_dir, scratch) {
            Lookup::File(open) => open,
            other => {
                if let Some(old) = self.map.remove(&key) {
                    self.forget(&old);
                }
                return Resolved::Other(other);
            }
        };
        let identity = (open.dev, open.ino, open.mtime_nsec);
        if let Some(old) = self.map.get_mut(&key) {
            if old.identity == identity && old.size == open.size && old.mtime == open.mtime {
                // Unchanged: trust it for another period. `get_mut` on the Rc is fine only if
                // no response holds it; otherwise replace it with a refreshed copy.
                if let Some(entry) = Rc::get_mut(old) {
                    entry.checked = now;
                    return Resolved::File(Rc::clone(old));
                }
                let refreshed = Rc::new(Entry {
                    size: old.size,
                    mtime: old.mtime,
                    etag: old.etag.clone(),
                    content_type: old.content_type,
                    body: old.body.clone(),
                    identity,
                    checked: now,
                });
                *old = Rc::clone(&refreshed);
                return Resolved::File(refreshed);
            }
        }
        let content_type = files::content_type(rel, open.index);
        let mut etag = Vec::with_capacity(24);
        files::write_etag(&mut etag, open.mtime, open.size);
        let body = if open.size <= self.memory_threshold {
            let mut bytes = Vec::new();
            match files::read_at(&open.file, 0, open.size, &mut bytes) {
                Ok(n) if n == open.size => Body::Memory(bytes.into()),
                // Changed while being read: serve nothing stale, let the client retry.
                _ => return Resolved::Other(Lookup::Unavailable),
            }
        } else {
            Body::File(Rc::new(open.file))
        };
        let entry = Rc::new(Entry {
            size: open.size,
            mtime: open.mtime,
            etag: etag.into_boxed_slice(),
            content_type,
            body,
            identity,
            checked: now,
        });
        if enabled {
            self.insert(key, Rc::clone(&entry));
        }
        Resolved::File(entry)
    }

    fn insert(&mut self, key: Box<[u8]>, entry: Rc<Entry>) {
        let cost = memory_cost(&entry);
        if cost > self.max_body_bytes {
            return;
        }
        if let Some(old) = self.map.remove(&key) {
            self.forget(&old);
        }
        while self.map.len() >= self.max_entries || self.body_bytes + cost > self.max_body_bytes {
            let Some(victim) = self.map.keys().next().cloned() else {
                break;
            };
            if let Some(old) = self.map.remove(&victim) {
                self.forget(&old);
            }
        }
        self.body_bytes += cost;
        self.map.insert(key, entry);
    }

    fn forget(&mut self, entry: &Entry) {
        self.body_bytes -= memory_cost(entry);
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }
}

fn memory_cost(entry: &Entry) -> usize {
    match &entry.body {
        Body::Memory(bytes) => bytes.len(),
        Body::File(_) => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site() -> (tempfile::TempDir, Root) {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..10 {
            std::fs::write(dir.path().join(format!("f{i}")), vec![b'x'; 100]).unwrap();
        }
        let root = Root::open(dir.path(), false).unwrap();
        (dir, root)
    }

    fn hit(cache: &mut FileCache, root: &Root, name: &str) -> Rc<Entry> {
        match cache.resolve(root, name.as_bytes(), false, &mut Vec::new()) {
            Resolved::File(entry) => entry,
            Resolved::Other(other) => panic!("{name}: {other:?}"),
        }
    }

    #[test]
    fn bounded_in_bytes_and_entries() {
        let (_dir, root) = site();
        let mut cache = FileCache::new(350, 100, 1024);
        for i in 0..10 {
            hit(&mut cache, &root, &format!("f{i}"));
            assert!(cache.body_bytes <= 350);
        }
        assert_eq!(cache.len(), 3);
        let mut cache = FileCache::new(1 << 20, 4, 1024);
        for i in 0..10 {
            hit(&mut cache, &root, &format!("f{i}"));
        }
        assert_eq!(cache.len(), 4);
    }

    #[test]
    fn a_hit_returns_the_same_entry_and_a_disabled_cache_keeps_nothing() {
        let (_dir, root) = site();
        let mut cache = FileCache::new(1 << 20, 100, 1024);
        let a = hit(&mut cache, &root, "f1");
        let b = hit(&mut cache, &root, "f1");
        assert!(Rc::ptr_eq(&a, &b));
        let mut off = FileCache::new(0, 100, 1024);
        let a = hit(&mut off, &root, "f1");
        let b = hit(&mut off, &root, "f1");
        assert!(!Rc::ptr_eq(&a, &b));
        assert_eq!(off.len(), 0);
    }

    #[test]
    fn changes_and_deletions_are_seen_after_the_revalidation_period() {
        let (dir, root) = site();
        let mut cache = FileCache::new(1 << 20, 100, 1024);
        assert_eq!(hit(&mut cache, &root, "f1").size, 100);
        std::fs::write(dir.path().join("f1"), vec![b'y'; 7]).unwrap();
        std::thread::sleep(REVALIDATE + Duration::from_millis(50));
        let entry = hit(&mut cache, &root, "f1");
        assert_eq!(entry.size, 7);
        match &entry.body {
            Body::Memory(bytes) => assert_eq!(&bytes[..], b"yyyyyyy"),
            Body::File(_) => panic!("small file not in memory"),
        }
        std::fs::remove_file(dir.path().join("f1")).unwrap();
        std::thread::sleep(REVALIDATE + Duration::from_millis(50));
        assert!(matches!(
            cache.resolve(&root, b"f1", false, &mut Vec::new()),
            Resolved::Other(Lookup::NotFound)
        ));
        assert_eq!(cache.len(), 0);
    }
}
