//! A URL map (`urls.json`, written by `webscope fileset like --keep-paths` beside a set): the
//! logged targets that a set's file names cannot carry, each answered by a file of the set or
//! by a status (a redirect with its `Location`, or an absence), so that a site's log replayed
//! against its set gets the logged statuses.
//!
//! A target is matched exactly as the request line carries it (path and query, undecoded),
//! before the path is decoded and looked up: the replay sends each target as it was logged.
//! A map is read once at start-up and shared by the workers, read-only.

use std::collections::HashMap;
use std::path::Path;

/// The format tag `fileset like` writes.
const FORMAT: &str = "webscope-urls/1";

/// Most entries read: a map holds what is distinct in a site's log, and each costs memory in
/// every request's lookup table.
const MAX_ENTRIES: usize = 10_000_000;

/// What a mapped target answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Mapped {
    /// The file at this target instead (`/` + the set's relative path).
    File(String),
    /// This status, with a `Location` for a redirect.
    Status(u16, Option<Vec<u8>>),
}

/// The map, by target.
#[derive(Debug, Default)]
pub struct UrlMap {
    by_target: HashMap<Box<[u8]>, Mapped>,
}

impl UrlMap {
    /// Reads a map; the error says what is wrong in one line.
    pub fn load(path: &Path) -> Result<UrlMap, String> {
        let text = std::fs::read(path)
            .map_err(|e| format!("cannot read the URL map {}: {e}", path.display()))?;
        UrlMap::parse(&text).map_err(|why| {
            format!(
                "the URL map {} is not one `webscope fileset like --keep-paths` writes: {why}",
                path.display()
            )
        })
    }

    /// Targets mapped.
    pub fn len(&self) -> usize {
        self.by_target.len()
    }

    /// Whether nothing is mapped.
    pub fn is_empty(&self) -> bool {
        self.by_target.is_empty()
    }

    fn parse(text: &[u8]) -> Result<UrlMap, String> {
        let value: serde_json::Value =
            serde_json::from_slice(text).map_err(|e| format!("not JSON ({e})"))?;
        if value["format"] != FORMAT {
            return Err(format!("its format is not {FORMAT:?}"));
        }
        let urls = value["urls"].as_array().ok_or("no \"urls\" list")?;
        if urls.len() > MAX_ENTRIES {
            return Err(format!("more than {MAX_ENTRIES} entries"));
        }
        let mut by_target = HashMap::with_capacity(urls.len());
        for (i, entry) in urls.iter().enumerate() {
            let url = entry["url"].as_str().filter(|u| u.starts_with('/'));
            let url = url.ok_or_else(|| format!("entry {i} has no \"url\" beginning with /"))?;
            let mapped = match (entry["file"].as_str(), entry["status"].as_u64()) {
                (Some(file), None) if safe_file(file) => Mapped::File(format!("/{file}")),
                (None, Some(status @ 300..=599)) => Mapped::Status(
                    status as u16,
                    entry["location"].as_str().map(|l| l.as_bytes().to_vec()),
                ),
                _ => {
                    return Err(format!(
                        "entry {i} ({url}) has neither a safe \"file\" nor a \"status\" of 300-599"
                    ))
                }
            };
            by_target.insert(url.as_bytes().into(), mapped);
        }
        Ok(UrlMap { by_target })
    }

    /// What `target` (as the request line carries it) answers, when mapped.
    pub(crate) fn get(&self, target: &str) -> Option<&Mapped> {
        self.by_target.get(target.as_bytes())
    }
}

/// A relative path of plain parts: a mapped file must lie inside the root.
fn safe_file(file: &str) -> bool {
    !file.is_empty()
        && file
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..")
        && file
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_read_by_their_raw_target_and_bad_ones_refused() {
        let text = br#"{"format": "webscope-urls/1", "urls": [
            {"url": "/a%20b.pdf?x=1", "file": "d0000/0000003.pdf"},
            {"url": "/blog", "status": 301, "location": "/blog/"},
            {"url": "/", "status": 404}]}"#;
        let map = UrlMap::parse(text).unwrap();
        assert_eq!(map.len(), 3);
        assert_eq!(
            map.get("/a%20b.pdf?x=1"),
            Some(&Mapped::File("/d0000/0000003.pdf".into()))
        );
        assert_eq!(map.get("/a b.pdf?x=1"), None);
        assert_eq!(
            map.get("/blog"),
            Some(&Mapped::Status(301, Some(b"/blog/".to_vec())))
        );
        assert_eq!(map.get("/"), Some(&Mapped::Status(404, None)));
        let escape =
            br#"{"format": "webscope-urls/1", "urls": [{"url": "/x", "file": "../etc/passwd"}]}"#;
        assert!(UrlMap::parse(escape).unwrap_err().contains("safe"));
        assert!(UrlMap::parse(b"{}").unwrap_err().contains("format"));
        assert!(UrlMap::parse(b"nope").unwrap_err().contains("not JSON"));
    }
}
