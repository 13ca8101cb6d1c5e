//! Per-worker caches between a request target and the bytes of a file: the `uri-cache`
//! (target → path translation), the `stat-cache` (metadata: size, mtime, ETag, Content-Type)
//! and the `file-cache` (the bytes of small files; open descriptors and, with `mmap`, mappings
//! of large ones). Which are used is decided by [`Techniques`]; with none, every request
//! resolves, opens and reads its file afresh (the paper's baseline).
//!
//! Correctness when files change: a cached entry is trusted for at most [`REVALIDATE`] (1 s,
//! as lighttpd's stat cache); then the path is stat'ed again and the entry kept only if the
//! file is the same (device, inode, size, mtime with nanoseconds). Without the stat-cache an
//! entry of the file-cache is checked that way on every request. So a changed or deleted file
//! is noticed within one second.
//!
//! Memory is bounded by the bytes of cached bodies and the number of entries; when an insert
//! would pass either bound, random entries are evicted (HashMap iteration order is randomly
//! seeded): cheap, and without LRU bookkeeping on every hit.

use std::cell::Cell;
use std::collections::HashMap;
use std::fs::File;
use std::rc::Rc;
use std::time::Duration;

use quanta::{Clock, Instant};

use webscope_http::path;

use crate::files::{self, Identity, Lookup, OpenFile, Root};
use crate::techniques::Techniques;

/// How long an entry is trusted without looking at the file again.
pub const REVALIDATE: Duration = Duration::from_secs(1);

/// A resolved regular file, ready to answer from.
#[derive(Debug)]
pub(crate) struct Entry {
    pub size: u64,
    pub mtime: i64,
    pub etag: Box<[u8]>,
    /// `mtime` as an HTTP date, formatted once.
    pub last_modified: Box<[u8]>,
    pub content_type: &'static str,
    /// The path that was opened, relative to the root (to open it again).
    pub opened: Box<[u8]>,
    pub identity: Identity,
    /// The bytes, for small files under the file-cache.
    pub bytes: Option<Rc<[u8]>>,
    /// An open descriptor: kept by the file-cache for large files, or the one just opened.
    pub fd: Option<Rc<File>>,
    /// A mapping of a large file (file-cache with mmap and without sendfile).
    pub map: Option<Rc<memmap2::Mmap>>,
    checked: Cell<Instant>,
}

/// The outcome of resolving a target.
pub(crate) enum Resolved {
    File(Rc<Entry>),
    /// The target is not a path under the root (400).
    BadTarget,
    Other(Lookup),
}

/// What the uri-cache remembers of a target.
#[derive(Debug)]
struct Translation {
    rel: Box<[u8]>,
    names_dir: bool,
    entry: Option<Rc<Entry>>,
}

/// One worker's caches.
#[derive(Debug)]
pub(crate) struct Caches {
    techniques: Techniques,
    by_uri: HashMap<Box<[u8]>, Translation>,
    by_path: HashMap<Box<[u8]>, Rc<Entry>>,
    body_bytes: usize,
    max_body_bytes: usize,
    max_entries: usize,
    /// Files up to this size are read into memory; larger ones are sent from a descriptor or
    /// a mapping.
    memory_threshold: u64,
    uri_key: Vec<u8>,
    path_key: Vec<u8>,
    rel: Vec<u8>,
    /// The TSC clock: a request's freshness check reads it, and on this VM the vDSO's
    /// clock_gettime was one of three reads per request, together 1.07 % of CPU 0's samples
    /// at 1 KiB keep-alive.
    clock: Clock,
}

impl Caches {
    pub(crate) fn new(
        techniques: Techniques,
        max_body_bytes: usize,
        max_entries: usize,
        memory_threshold: u64,
    ) -> Self {
        Caches {
            techniques,
            by_uri: HashMap::new(),
            by_path: HashMap::new(),
            body_bytes: 0,
            max_body_bytes,
            max_entries: max_entries.max(1),
            memory_threshold,
            uri_key: Vec::new(),
            path_key: Vec::new(),
            clock: Clock::new(),
            rel: Vec::new(),
        }
    }

    fn caching_entries(&self) -> bool {
        self.techniques.stat_cache || self.techniques.file_cache
    }

    /// Resolves a request target (with the request's Host) to a file entry or why not.
    pub(crate) fn resolve(
        &mut self,
        root: &Root,
        host: &[u8],
        target: &str,
        scratch: &mut Vec<u8>,
    ) -> Resolved {
        let now = self.clock.now();
        let Ok(target_path) = path::target_path(target) else {
            return Resolved::BadTarget;
        };
        let mut rel = std::mem::take(&mut self.rel);
        let mut translated = None;
        if self.techniques.uri_cache {
            self.uri_key.clear();
            self.uri_key.extend_from_slice(host);
            self.uri_key.push(0);
            self.uri_key.extend_from_slice(target_path.as_bytes());
            if let Some(t) = self.by_uri.get(self.uri_key.as_slice()) {
                if let Some(entry) = t.entry.as_ref().filter(|e| self.fresh(e, now)) {
                    let entry = Rc::clone(entry);
                    self.rel = rel;
                    return Resolved::File(entry);
                }
                rel.clear();
                rel.extend_from_slice(&t.rel);
                translated = Some(t.names_dir);
            }
        }
        let names_dir = match translated {
            Some(names_dir) => names_dir,
            None => match path::normalize(target_path, &mut rel) {
                Ok(names_dir) => names_dir,
                Err(_) => {
                    self.rel = rel;
                    return Resolved::BadTarget;
                }
            },
        };
        let resolved = self.resolve_path(root, &rel, names_dir, now, scratch);
        if self.techniques.uri_cache {
            if let Resolved::File(entry) = &resolved {
                let cached = self.caching_entries().then(|| Rc::clone(entry));
                let key: Box<[u8]> = self.uri_key.as_slice().into();
                if self.by_uri.len() >= self.max_entries && !self.by_uri.contains_key(&key) {
                    evict_one(&mut self.by_uri);
                }
                self.by_uri.insert(
                    key,
                    Translation {
                        rel: rel.as_slice().into(),
                        names_dir,
                        entry: cached,
                    },
                );
            }
        }
        self.rel = rel;
        resolved
    }

    fn fresh(&self, entry: &Entry, now: Instant) -> bool {
        self.techniques.stat_cache && now.duration_since(entry.checked.get()) < REVALIDATE
    }

    /// From a normalised path to an entry, through the stat- and file-caches.
    fn resolve_path(
        &mut self,
        root: &Root,
        rel: &[u8],
        names_dir: bool,
        now: Instant,
        scratch: &mut Vec<u8>,
    ) -> Resolved {
        if !self.caching_entries() {
            return match root.lookup(rel, names_dir, scratch) {
                Lookup::File(open) => self.entry(open, scratch, now, false),
                other => Resolved::Other(other),
            };
        }
        // The key tells "/d" from "/d/": they resolve differently (redirect vs index.html).
        self.path_key.clear();
        self.path_key.extend_from_slice(rel);
        self.path_key.push(if names_dir { b'/' } else { b'.' });
        if let Some(entry) = self.by_path.get(self.path_key.as_slice()) {
            if self.fresh(entry, now) {
                return Resolved::File(Rc::clone(entry));
            }
            // Stale (or no stat-cache): one stat says whether it is still the same file.
            if root.identity(&entry.opened, scratch).ok() == Some(entry.identity) {
                entry.checked.set(now);
                return Resolved::File(Rc::clone(entry));
            }
        }
        let key: Box<[u8]> = self.path_key.as_slice().into();
        if let Some(old) = self.by_path.remove(&key) {
            self.body_bytes -= memory_cost(&old);
        }
        match root.lookup(rel, names_dir, scratch) {
            Lookup::File(open) => {
                let resolved = self.entry(open, scratch, now, true);
                if let Resolved::File(entry) = &resolved {
                    self.insert(key, Rc::clone(entry));
                }
                resolved
            }
            other => Resolved::Other(other),
        }
    }

    /// Builds an entry for a file just opened; `cache` says whether it will be kept.
    fn entry(&self, open: OpenFile, opened: &[u8], now: Instant, cache: bool) -> Resolved {
        let content_type = files::content_type(opened, false);
        let content_type = if open.index {
            "text/html"
        } else {
            content_type
        };
        let mut etag = Vec::with_capacity(24);
        files::write_etag(&mut etag, open.mtime, open.size);
        let identity = open.identity();
        let keep_bytes = cache && self.techniques.file_cache;
        let mut bytes = None;
        let mut map = None;
        let mut fd = None;
        if keep_bytes && open.size <= self.memory_threshold {
            let mut buf = Vec::new();
            match files::read_at(&open.file, 0, open.size, &mut buf) {
                Ok(n) if n == open.size => bytes = Some(buf.into()),
                // Changed while being read: serve nothing stale, let the client retry.
                _ => return Resolved::Other(Lookup::Unavailable),
            }
        } else if keep_bytes && self.techniques.mmap && !self.techniques.sendfile && open.size > 0 {
            // SAFETY: the mapping is read-only; a file truncated under it could fault, which
            // is the known hazard of mmap-based serving (Apache and the paper accept it).
            match unsafe { memmap2::Mmap::map(&open.file) } {
                Ok(m) => map = Some(Rc::new(m)),
                Err(_) => fd = Some(Rc::new(open.file)),
            }
        } else if keep_bytes || !cache {
            // The file-cache keeps large files' descriptors (nginx's open_file_cache); an
            // uncached entry carries the descriptor it was just opened with.
            fd = Some(Rc::new(open.file));
        }
        Resolved::File(Rc::new(Entry {
            size: open.size,
            mtime: open.mtime,
            etag: etag.into_boxed_slice(),
            last_modified: {
                let mut date = Vec::with_capacity(webscope_http::date::HTTP_DATE_LEN);
                webscope_http::date::write_http_date(&mut date, open.mtime);
                date.into_boxed_slice()
            },
            content_type,
            opened: opened.into(),
            identity,
            bytes,
            fd,
            map,
            checked: Cell::new(now),
        }))
    }

    fn insert(&mut self, key: Box<[u8]>, entry: Rc<Entry>) {
        let cost = memory_cost(&entry);
        if cost > self.max_body_bytes {
            return;
        }
        while self.by_path.len() >= self.max_entries || self.body_bytes + cost > self.max_body_bytes
        {
            match evict_one(&mut self.by_path) {
                Some(old) => self.body_bytes -= memory_cost(&old),
                None => break,
            }
        }
        self.body_bytes += cost;
        self.by_path.insert(key, entry);
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.by_path.len()
    }
}

fn evict_one<V>(map: &mut HashMap<Box<[u8]>, V>) -> Option<V> {
    let victim = map.keys().next().cloned()?;
    map.remove(&victim)
}

fn memory_cost(entry: &Entry) -> usize {
    entry.bytes.as_ref().map_or(0, |b| b.len())
}

#[cfg(test)]
mod tests;
