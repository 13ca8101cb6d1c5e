//! The manifest: what a file set holds (path, size, class, access probability of each file)
//! and how it was made. The load generator reads it to choose its requests.
//!
//! It is JSON (`manifest.json` at the set's root) so that any tool can read it; it is written
//! last, so a directory with a manifest is a complete set.

use std::path::{Component, Path};

use serde::{Deserialize, Serialize};

use crate::Error;

/// The manifest's file name at the root of a set.
pub const MANIFEST: &str = "manifest.json";

/// The marker `write` puts at the root of every set beside the manifest: what tells
/// `--force` that webscope wrote the directory (a `manifest.json` alone may be a web app's).
pub const MARKER: &str = ".webscope-fileset";
/// The URL→file map a set like a site's log carries at its root (`fileset like`), for the
/// servers.
pub const URL_MAP: &str = "urls.json";
/// The nginx `map`s of such a set, for the `http {}` block.
pub const NGINX_HTTP: &str = "nginx-http.conf";
/// The nginx directives of such a set, for the `server {}` block whose root is the set.
pub const NGINX_SERVER: &str = "nginx-server.conf";
/// The Apache httpd snippet of such a set (`RewriteMap` and `RewriteRule`s), to include in
/// the server config or the `<VirtualHost>` whose DocumentRoot is the set.
pub const APACHE_CONF: &str = "apache.conf";
/// The text `RewriteMap` the Apache snippet reads.
pub const APACHE_MAP: &str = "apache-urls.txt";
/// The files a set may carry at its root beside its manifest (a set like a site's URL map and
/// server snippets): `--force` replaces a set holding them, and `write_with` writes only them.
pub(crate) const BESIDE: [&str; 5] = [URL_MAP, NGINX_HTTP, NGINX_SERVER, APACHE_CONF, APACHE_MAP];

/// The format tag written in every manifest; a different tag is refused on load.
pub const FORMAT: &str = "webscope-fileset/1";

/// The most files a set may have (copies included): a manifest entry costs about 100 bytes
/// in memory and the load generator's tables hold one request per file.
pub const MAX_FILES: u64 = 10_000_000;

/// A file set: its files with their access probabilities, grouped into classes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Always [`FORMAT`].
    pub format: String,
    /// Which generator made it: `specweb96`, `webstone-a`, `heavy-tail`, `single`.
    pub kind: String,
    /// One line saying what the set is, for people.
    pub description: String,
    /// The seed the sizes (heavy-tail) and the bytes were drawn from.
    pub seed: u64,
    /// The generator's parameters as given (e.g. `{"ops": 10}`).
    pub parameters: serde_json::Value,
    /// How many copies of the base set the files are (cache avoidance); 1 when not copied.
    pub copies: u32,
    /// Sum of all file sizes.
    pub total_bytes: u64,
    /// The access-weighted mean response size (bytes a request fetches on average).
    pub mean_response_bytes: f64,
    /// The classes, in report order.
    pub classes: Vec<Class>,
    /// Every file.
    pub files: Vec<File>,
}

/// A class of files reported together (a SPECweb96 size class, a WebStone media type).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Class {
    /// Its name as the load generator reports it.
    pub name: String,
    /// The chance that a request is for a file of this class.
    pub probability: f64,
    /// How many files it has.
    pub files: u64,
    /// Their total size.
    pub bytes: u64,
}

/// One file of the set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct File {
    /// Path relative to the set's root, `/`-separated: also the URL path under the base URL.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// Name of its class.
    pub class: String,
    /// The chance that a request is for this file.
    pub probability: f64,
}

impl Manifest {
    /// What `webscope fileset` says of a set it wrote to `out` (`verb`: "wrote", "would
    /// write"): its files, bytes and origin, its mean response, and a row per class.
    pub fn summary(&self, out: &Path, verb: &str) -> String {
        use std::fmt::Write;
        use webscope_report::human::{self, plural};
        let mut text = String::new();
        let _ = writeln!(
            text,
            "webscope fileset: {verb} {}, {} to {} ({}; seed {}{})",
            plural(self.files.len() as u64, "file"),
            human::bytes(self.total_bytes as f64),
            out.display(),
            self.description,
            self.seed,
            if self.copies > 1 {
                format!(", {}", plural(u64::from(self.copies), "copy"))
            } else {
                String::new()
            }
        );
        let _ = writeln!(
            text,
            "  mean response {} (access-weighted)",
            human::bytes(self.mean_response_bytes.round())
        );
        let _ = writeln!(
            text,
            "  {:<12} {:>8} {:>12} {:>10}",
            "class", "files", "bytes", "requests"
        );
        for class in &self.classes {
            let _ = writeln!(
                text,
                "  {:<12} {:>8} {:>12} {:>10}",
                class.name,
                human::count(class.files),
                human::bytes(class.bytes as f64),
                human::pct(class.probability)
            );
        }
        text
    }

    /// Builds a manifest from files whose classes are listed in `class_names` order, filling
    /// the totals and the per-class summaries.
    pub(crate) fn assemble(
        kind: &str,
        description: String,
        seed: u64,
        parameters: serde_json::Value,
        class_names: &[&str],
        files: Vec<File>,
    ) -> Manifest {
        let mut manifest = Manifest {
            format: FORMAT.to_string(),
            kind: kind.to_string(),
            description,
            seed,
            parameters,
            copies: 1,
            total_bytes: 0,
            mean_response_bytes: 0.0,
            classes: class_names
                .iter()
                .map(|name| Class {
                    name: name.to_string(),
                    probability: 0.0,
                    files: 0,
                    bytes: 0,
                })
                .collect(),
            files,
        };
        manifest.summarise();
        manifest
    }

    /// Recomputes the totals and class summaries from the files; classes with no file are
    /// dropped.
    pub(crate) fn summarise(&mut self) {
        for class in &mut self.classes {
            class.probability = 0.0;
            class.files = 0;
            class.bytes = 0;
        }
        self.total_bytes = 0;
        self.mean_response_bytes = 0.0;
        for file in &self.files {
            self.total_bytes += file.size;
            self.mean_response_bytes += file.probability * file.size as f64;
            if let Some(class) = self.classes.iter_mut().find(|c| c.name == file.class) {
                class.probability += file.probability;
                class.files += 1;
                class.bytes += file.size;
            }
        }
        self.classes.retain(|c| c.files > 0);
    }

    /// Replicates the set `copies` times under `copy01/`, `copy02/`, ... with each file's
    /// probability divided by the number of copies, so that requests spread evenly over
    /// more distinct bytes than the page cache can hold (cache avoidance, as Chiarini &
    /// Couch did). One copy leaves the set unchanged.
    pub fn replicate(&mut self, copies: u32) -> Result<(), Error> {
        if copies == 0 {
            return Err(Error::Invalid(
                "--copies must be at least 1 (1 means no extra copies)".into(),
            ));
        }
        if copies == 1 {
            return Ok(());
        }
        let total = self.files.len() as u64 * u64::from(copies);
        if total > MAX_FILES {
            return Err(Error::Invalid(format!(
                "--copies {copies} makes {total} files; at most {MAX_FILES} are allowed"
            )));
        }
        let width = copies.to_string().len().max(2);
        let share = 1.0 / f64::from(copies);
        let base = std::mem::take(&mut self.files);
        self.files.reserve(base.len() * copies as usize);
        for copy in 1..=copies {
            for file in &base {
                self.files.push(File {
                    path: format!("copy{copy:0width$}/{}", file.path),
                    size: file.size,
                    class: file.class.clone(),
                    probability: file.probability * share,
                });
            }
        }
        self.copies = copies;
        self.summarise();
        Ok(())
    }

    /// Reads and checks `DIR/manifest.json`.
    pub fn load(dir: &Path) -> Result<Manifest, Error> {
        let path = dir.join(MANIFEST);
        let text = std::fs::read_to_string(&path).map_err(|source| {
            if source.kind() == std::io::ErrorKind::NotFound {
                Error::BadManifest {
                    path: path.clone(),
                    reason: "no manifest here: not a webscope file set".into(),
                }
            } else {
                Error::io(&path, source)
            }
        })?;
        let manifest: Manifest = serde_json::from_str(&text).map_err(|e| Error::BadManifest {
            path: path.clone(),
            reason: format!("not a valid manifest: {e}"),
        })?;
        manifest
            .check()
            .map_err(|reason| Error::BadManifest { path, reason })?;
        Ok(manifest)
    }

    /// Checks what the load generator relies on: a known format, at least one file, safe
    /// relative paths, known classes, and probabilities that are finite, non-negative and
    /// sum to 1.
    pub fn check(&self) -> Result<(), String> {
        if self.format != FORMAT {
            return Err(format!("format {:?}, expected {FORMAT:?}", self.format));
        }
        if self.files.is_empty() {
            return Err("the manifest lists no file".into());
        }
        let mut sum = 0.0;
        for file in &self.files {
            if !is_safe_relative(&file.path) {
                return Err(format!("unsafe path {:?}", file.path));
            }
            if !file.probability.is_finite() || file.probability < 0.0 {
                return Err(format!("bad probability for {:?}", file.path));
            }
            if !self.classes.iter().any(|c| c.name == file.class) {
                return Err(format!(
                    "{:?} has unknown class {:?}",
                    file.path, file.class
                ));
            }
            sum += file.probability;
        }
        if (sum - 1.0).abs() > 1e-6 {
            return Err(format!("probabilities sum to {sum}, not 1"));
        }
        Ok(())
    }
}

/// A `/`-separated relative path with no `..`, no empty or `.` part, nothing that a URL or a
/// file system would read differently.
fn is_safe_relative(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && path
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..")
        && path
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./".contains(&b))
        && Path::new(path)
            .components()
            .all(|c| matches!(c, Component::Normal(_)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_files() -> Manifest {
        Manifest::assemble(
            "test",
            "two files".into(),
            1,
            serde_json::json!({}),
            &["small", "big", "unused"],
            vec![
                File {
                    path: "a/small.bin".into(),
                    size: 10,
                    class: "small".into(),
                    probability: 0.75,
                },
                File {
                    path: "b/big.bin".into(),
                    size: 1000,
                    class: "big".into(),
                    probability: 0.25,
                },
            ],
        )
    }

    #[test]
    fn assemble_sums_classes_and_drops_empty_ones() {
        let m = two_files();
        assert_eq!(m.total_bytes, 1010);
        assert!((m.mean_response_bytes - 257.5).abs() < 1e-9);
        assert_eq!(m.classes.len(), 2);
        assert_eq!(m.classes[0].probability, 0.75);
        assert!(m.check().is_ok());
    }

    #[test]
    fn replicate_spreads_probability_over_copies() {
        let mut m = two_files();
        m.replicate(3).unwrap();
        assert_eq!(m.files.len(), 6);
        assert_eq!(m.copies, 3);
        assert_eq!(m.total_bytes, 3030);
        assert_eq!(m.files[0].path, "copy01/a/small.bin");
        assert_eq!(m.files[5].path, "copy03/b/big.bin");
        assert!((m.classes[0].probability - 0.75).abs() < 1e-12);
        assert!((m.mean_response_bytes - 257.5).abs() < 1e-9);
        assert!(m.check().is_ok());
        assert!(m.replicate(0).is_err());
    }

    #[test]
    fn check_refuses_what_the_load_generator_cannot_use() {
        let mut m = two_files();
        m.files[0].path = "../etc/passwd".into();
        assert!(m.check().unwrap_err().contains("unsafe"));
        let mut m = two_files();
        m.files[0].probability = 0.5;
        assert!(m.check().unwrap_err().contains("sum"));
        let mut m = two_files();
        m.files[1].class = "nope".into();
        assert!(m.check().unwrap_err().contains("unknown class"));
        let mut m = two_files();
        m.format = "other".into();
        assert!(m.check().is_err());
    }

    #[test]
    fn safe_paths() {
        assert!(is_safe_relative("dir00001/class0_3"));
        assert!(is_safe_relative("copy01/html/file01.html"));
        for bad in ["", "/abs", "a//b", "a/../b", "./a", "a b", "a?b", "a%2e"] {
            assert!(!is_safe_relative(bad), "{bad}");
        }
    }
}
