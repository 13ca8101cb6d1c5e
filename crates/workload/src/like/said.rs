//! What `webscope fileset like` says of a planned set: the URL map's counts and where the
//! servers' snippets go, the paths `--keep-paths` could not keep, and a synthetic set's
//! requests' sizes beside the log's. Here rather than in the binary because each line is a
//! reading of this module's types (`Planned`, `Renamed`, `RequestSizes`).

use std::fmt::Write;

use webscope_report::human::{self, plural};

use super::{apache, nginx, Observed, Planned, RequestSizes, URL_MAP};
use crate::Manifest;

impl Planned {
    /// How many logged paths `--keep-paths` could not keep, and why, and what the URL map
    /// holds: three lines, each ending in a newline.
    pub fn said(&self) -> String {
        let mut out = String::new();
        let c = self.counts;
        let _ = writeln!(
            out,
            "  URL map: {} answered by another file, {}, {} kept 404/410{}{}",
            plural(c.mapped, "target"),
            plural(c.redirects, "redirect"),
            human::count(c.absences),
            if c.unreproducible > 0 {
                format!(
                    "; {} mostly answered a status a set cannot give (5xx, 403, ...): left to the server",
                    plural(c.unreproducible, "URL")
                )
            } else {
                String::new()
            },
            if c.sizeless > 0 {
                format!(
                    "; {} never answered 200, sized by their 206 or the median",
                    plural(c.sizeless, "file")
                )
            } else {
                String::new()
            }
        );
        let _ = writeln!(
            out,
            "  for nginx: include {} in http {{}} and {} in the set's server {{}}; for Apache: Include {} where the DocumentRoot is the set (mod_rewrite); webscope serve reads {} itself",
            nginx::NGINX_HTTP,
            nginx::NGINX_SERVER,
            apache::APACHE_CONF,
            URL_MAP
        );
        let r = self.renamed;
        let kept = self.manifest.files.len() as u64 - r.total();
        let mut why = Vec::new();
        for (count, reason) in [
            (r.not_plain, "not plain file names"),
            (r.too_long, "too long for a file name"),
            (
                r.reserved,
                "named like the set's own manifest.json, .webscope-fileset, urls.json, nginx-*.conf, apache.conf or apache-urls.txt",
            ),
            (r.queries, "queries with a file of their own"),
        ] {
            if count > 0 {
                why.push(format!("{} {reason}", human::count(count)));
            }
        }
        let _ = if why.is_empty() {
            writeln!(out, "  --keep-paths: all {} kept", plural(kept, "path"))
        } else {
            writeln!(
                out,
                "  --keep-paths: {} kept, {} given rank names ({})",
                plural(kept, "path"),
                human::count(r.total()),
                why.join(", ")
            )
        };
        out
    }
}

impl RequestSizes {
    /// A synthetic set's requests' sizes beside the log's, in one line: what `--synthetic`
    /// is drawn to match. None when either has no requests.
    pub fn compared(observed: &[Observed], manifest: &Manifest) -> Option<String> {
        const UNDER: u64 = 10 * 1024;
        let set = RequestSizes::of_set(manifest, UNDER)?;
        let log = RequestSizes::of_log(observed, UNDER)?;
        Some(format!(
            "  requests' sizes: median {}, {} under {}; the log's: median {}, {} (its documents' sizes weighted by their 200, 206 and 304 requests)",
            human::bytes(set.median as f64),
            human::pct(set.under),
            human::bytes(UNDER as f64),
            human::bytes(log.median as f64),
            human::pct(log.under)
        ))
    }
}
