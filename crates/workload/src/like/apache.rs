//! The Apache httpd snippet that makes Apache answer a set's URLs as the log did: a
//! `RewriteMap` (a plain text file beside it, no dbm to build) from the raw target, as the
//! client sent it in its request line (`%{THE_REQUEST}`, as the replay sends the logged one),
//! to a file, a status or a redirect, and the `RewriteRule`s that act on it.
//!
//! The map is keyed by the raw target, not by the URL-path `RewriteRule` matches, because that
//! one is decoded and has no query: `/?flav=rss20` and `/` must be told apart, and
//! `/caf%C3%A9` looked up as logged. What Apache does by itself is left to it: a directory URL
//! without its slash is redirected by mod_dir, and a conditional request dated at or after a
//! file's time is answered 304 (nginx needs `if_modified_since before` for that). A logged 404
//! on a directory of the set is in the map (the set maps it where a file or directory would
//! answer), so Apache's 403 for a directory without an index cannot show.
//!
//! `RewriteMap` is allowed only in the server config or a `<VirtualHost>`, and it needs the
//! map's absolute path: the snippet names the set where it was written.

use std::fmt::Write;
use std::path::Path;

use super::urls::{Answer, UrlMap};
use crate::Error;

pub use crate::manifest::{APACHE_CONF, APACHE_MAP};

/// The `RewriteMap`'s name in the snippet.
const MAP_NAME: &str = "webscope_urls";

/// The snippet's and the map's texts: (`apache.conf`, `apache-urls.txt`), for a set at `set`
/// (absolute).
pub fn snippet(map: &UrlMap, set: &Path) -> Result<(String, String), Error> {
    let map_path = config_string(set)?;
    let mut lines = String::from(
        "# webscope fileset like: the logged URLs the set's file names cannot carry, keyed by the\n\
         # target as sent (path and query). One line each: a file of the set, a redirect\n\
         # (status:location) or an absence (status).\n",
    );
    let mut statuses: Vec<u16> = Vec::new();
    for (url, answer) in &map.entries {
        let value = match answer {
            Answer::File(f) => format!("/{f}"),
            Answer::Status(s, Some(l)) => format!("{s}:{l}"),
            Answer::Status(s, None) => s.to_string(),
        };
        // A request line cannot carry such a target, and a map line cannot hold it.
        if !word(url) || !word(&value) {
            continue;
        }
        if let Answer::Status(s, _) = answer {
            statuses.push(*s);
        }
        let _ = writeln!(lines, "{url} {value}");
    }
    statuses.sort_unstable();
    statuses.dedup();
    Ok((rules(&map_path, &statuses), lines))
}

/// The directives, with a rule for each status the map holds.
fn rules(map_path: &str, statuses: &[u16]) -> String {
    let mut conf = format!(
        "# webscope fileset like: Include in the server config or the <VirtualHost> whose\n\
         # DocumentRoot is the set (RewriteMap is allowed nowhere else), with mod_rewrite loaded\n\
         # (a2enmod rewrite). The map's path is where the set was written: change it if the set\n\
         # moves. Subrequests (NS) are mod_dir's own lookups: the map speaks of the client's.\n\
         RewriteEngine On\n\
         RewriteMap {MAP_NAME} {map_path}\n"
    );
    // Every rule looks the raw target up again: Apache caches a txt map's answers.
    let lookup =
        format!("RewriteCond %{{THE_REQUEST}} ^\\S+\\s+(\\S+)\nRewriteCond ${{{MAP_NAME}:%1}} ");
    for s in statuses {
        let _ = if (300..400).contains(s) {
            // NE: the location is already escaped; QSD: it is the whole location.
            writeln!(
                conf,
                "{lookup}^{s}:(.+)$\nRewriteRule ^ %1 [R={s},NE,QSD,L,NS]"
            )
        } else {
            // A status outside 3xx drops the substitution and stops the rewriting.
            writeln!(conf, "{lookup}={s}\nRewriteRule ^ - [R={s},NS]")
        };
    }
    // PT: the file is a URL-path under the DocumentRoot, never a path from the file system's
    // root (what mod_rewrite makes of it when its first part exists there).
    let _ = writeln!(conf, "{lookup}^(/.+)$\nRewriteRule ^ %1 [PT,NS]");
    conf
}

/// Whether `s` is one word of a map line: no white space or control character, not empty.
fn word(s: &str) -> bool {
    !s.is_empty() && !s.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// The `txt:` source of the map of the set at `set`, as a double-quoted Apache config string.
fn config_string(set: &Path) -> Result<String, Error> {
    let path = set.join(APACHE_MAP);
    let text = path.to_str().filter(|t| {
        !t.contains("${") && !t.chars().any(char::is_control) && Path::new(t).is_absolute()
    });
    let Some(text) = text else {
        return Err(Error::Invalid(format!(
            "the set's path {} cannot be written in an Apache config (it must be absolute \
             UTF-8 without `${{` or control characters): choose another --out",
            set.display()
        )));
    };
    Ok(format!(
        "\"txt:{}\"",
        text.replace('\\', "\\\\").replace('"', "\\\"")
    ))
}
