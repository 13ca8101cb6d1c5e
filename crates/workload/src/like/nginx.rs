//! The nginx snippet that makes nginx answer a set's URLs as the log did: `map`s of the raw
//! target (`$request_uri`, as the replay sends it) to a file, a status or a location, and
//! the server directives that act on them, with `if_modified_since before` so that a
//! conditional request dated at or after a file's time answers 304 (nginx's default, `exact`,
//! answers 304 only for the file's own date).

use std::fmt::Write;

use super::urls::{Answer, UrlMap};

pub use crate::manifest::{NGINX_HTTP, NGINX_SERVER};

/// The two files' texts: (http, server).
pub fn snippets(map: &UrlMap) -> (String, String) {
    let longest = map.entries.iter().map(|(u, _)| u.len()).max().unwrap_or(0);
    let mut http = String::new();
    let _ = writeln!(
        http,
        "# webscope fileset like: the logged URLs the set's file names cannot carry.\n\
         # Include in http {{}}; include {NGINX_SERVER} in the server {{}} whose root is the set.\n\
         # The hash sizes fit the longest URL here (remove them if your http {{}} sets them).\n\
         map_hash_bucket_size {};\nmap_hash_max_size {};",
        (longest + 32).next_power_of_two().max(64),
        (map.entries.len() * 2).max(2048)
    );
    let mut block = |var: &str, value: &dyn Fn(&Answer) -> Option<String>| {
        let _ = writeln!(http, "map $request_uri ${var} {{\n    default \"\";");
        for (url, answer) in &map.entries {
            if let Some(v) = value(answer) {
                let _ = writeln!(http, "    {} {};", quoted(url), quoted(&v));
            }
        }
        http.push_str("}\n");
    };
    block("webscope_file", &|a| match a {
        Answer::File(f) => Some(format!("/{f}")),
        Answer::Status(..) => None,
    });
    block("webscope_status", &|a| match a {
        Answer::Status(s, _) => Some(s.to_string()),
        Answer::File(_) => None,
    });
    block("webscope_location", &|a| match a {
        Answer::Status(_, Some(l)) => Some(l.clone()),
        _ => None,
    });
    let mut statuses: Vec<u16> = map
        .entries
        .iter()
        .filter_map(|(_, a)| match a {
            Answer::Status(s, _) => Some(*s),
            Answer::File(_) => None,
        })
        .collect();
    statuses.sort_unstable();
    statuses.dedup();
    let mut server = String::from(
        "# webscope fileset like: include in the server {} whose root is the set.\n\
         if_modified_since before;\n",
    );
    for s in statuses {
        let how = if (300..400).contains(&s) {
            format!("return {s} $webscope_location;")
        } else {
            format!("return {s};")
        };
        let _ = writeln!(server, "if ($webscope_status = {s}) {{ {how} }}");
    }
    // The trailing `?` drops the query: the mapped file is the whole answer.
    server.push_str("if ($webscope_file) { rewrite ^ $webscope_file? last; }\n");
    (http, server)
}

/// An nginx string: double-quoted, `"` and `\` escaped. A map's keys are not interpolated;
/// its values here (files, statuses, locations) hold no `$`.
fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}
