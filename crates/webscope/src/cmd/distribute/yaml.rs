//! The Job as YAML that every YAML reader takes as meant: block style, every string
//! double-quoted. Why not serde_yaml_ng's output: it leaves a string plain wherever YAML 1.2
//! would read it back as a string, but YAML 1.1 readers (PyYAML, so the Kubernetes Python
//! client, Ansible and `kubernetes-validate`) read `2026-11-25T11:47:50.889Z` as a date and
//! `on`, `yes` or `1:20` as a boolean or a number. A double-quoted scalar is the same in both,
//! and JSON's string escapes are valid in it.

use serde_json::Value;

/// `value` as a YAML document ending in a newline.
pub fn to_string(value: &Value) -> String {
    let mut out = String::new();
    match value {
        Value::Object(map) if !map.is_empty() => block(value, 0, &mut out),
        Value::Array(items) if !items.is_empty() => block(value, 0, &mut out),
        scalar => {
            out.push_str(&inline(scalar));
            out.push('\n');
        }
    }
    out
}

/// A non-empty map or list, each line indented by `indent` spaces.
fn block(value: &Value, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match value {
        Value::Object(map) => {
            for (key, item) in map {
                out.push_str(&pad);
                out.push_str(&key_text(key));
                out.push(':');
                nested(item, indent + 2, indent, out);
            }
        }
        Value::Array(items) => {
            for item in items {
                // An entry's map or list starts on the dash's line: rendered two columns in,
                // then its first indent replaced by the dash.
                let mut entry = String::new();
                nested(item, indent + 2, indent + 2, &mut entry);
                out.push_str(&pad);
                out.push('-');
                match entry.strip_prefix('\n') {
                    Some(rest) => {
                        out.push(' ');
                        out.push_str(&rest[indent + 2..]);
                    }
                    None => out.push_str(&entry),
                }
            }
        }
        _ => unreachable!("block() takes a map or a list"),
    }
}

/// What follows a key's colon or a dash: ` scalar\n`, or a newline and the block. A list
/// under a key sits at the key's own indent (`list_indent`), as Kubernetes writes it.
fn nested(value: &Value, map_indent: usize, list_indent: usize, out: &mut String) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            out.push('\n');
            block(value, map_indent, out);
        }
        Value::Array(items) if !items.is_empty() => {
            out.push('\n');
            block(value, list_indent, out);
        }
        scalar => {
            out.push(' ');
            out.push_str(&inline(scalar));
            out.push('\n');
        }
    }
}

fn inline(value: &Value) -> String {
    match value {
        Value::Object(_) => "{}".into(),
        Value::Array(_) => "[]".into(),
        // JSON's quoting: a valid YAML double-quoted scalar.
        other => other.to_string(),
    }
}

/// Keys stay plain where no YAML reader could take them for anything but a string.
fn key_text(key: &str) -> String {
    const WORDS_1_1: [&str; 11] = [
        "y", "n", "yes", "no", "on", "off", "true", "false", "null", "~", "",
    ];
    let plain = key.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '/' | '-' | '_'))
        && !WORDS_1_1.contains(&key.to_ascii_lowercase().as_str());
    if plain {
        key.to_string()
    } else {
        Value::String(key.to_string()).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strings_are_quoted_and_read_back_as_the_same_value() {
        let value = json!({
            "kind": "Job",
            "on": "yes",
            "spec": {
                "args": ["load", "2026-11-25T11:47:50.889Z", "1:20", "say \"hi\"\n"],
                "completions": 3,
                "empty": {},
                "none": [],
                "items": [{"name": "a", "list": [1, 2]}, [true, null]],
            },
        });
        let text = to_string(&value);
        assert!(text.contains("- \"2026-11-25T11:47:50.889Z\"\n"), "{text}");
        assert!(text.contains("\"on\": \"yes\"\n"), "{text}");
        assert!(
            text.contains("  - list:\n    - 1\n    - 2\n    name: \"a\"\n"),
            "{text}"
        );
        let back: Value = serde_yaml_ng::from_str(&text).unwrap();
        assert_eq!(back, value, "{text}");
    }
}
