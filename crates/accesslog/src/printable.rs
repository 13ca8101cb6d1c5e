//! A log's text made safe to print: a log is written by whoever sends requests, so a user
//! agent of `\x1b[2J` in a bad line's excerpt would clear the reader's terminal, and a
//! right-to-left override (U+202E) would make a URL read backwards.
//!
//! Every character that moves the cursor or changes how the rest of the line is shown is
//! written as an escape instead: the C0 controls, DEL and the C1 controls (U+0080-U+009F:
//! U+009B is a CSI on terminals that read 8-bit controls) as `\xhh` — Apache's and nginx's own
//! way of escaping such a byte in a log — and the bidirectional formatting characters as
//! `\u{202e}`. Tab is escaped too: a summary line is one line. What is printed is for reading;
//! the JSON reports keep the text as logged (JSON escapes controls itself).

use std::borrow::Cow;
use std::fmt::Write;

/// Whether `c` is written as an escape.
fn needs_escape(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with its control and bidirectional formatting characters escaped (see the
/// module's doc); borrowed when it has none, as nearly every text has.
///
/// ```
/// use webscope_accesslog::printable;
/// assert_eq!(printable("curl\u{1b}[2J"), r"curl\x1b[2J");
/// assert_eq!(printable("/a\u{202e}b"), r"/a\u{202e}b");
/// assert_eq!(printable("/plain/é"), "/plain/é");
/// ```
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            c if !needs_escape(c) => out.push(c),
            c if (c as u32) < 0x100 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::printable;

    #[test]
    fn controls_and_bidi_overrides_are_escaped_and_the_rest_kept() {
        let hostile = "a\u{1b}[2J\u{1b}[31m\tb\r\n\u{7f}\u{9b}c\u{2067}d";
        let shown = printable(hostile);
        assert_eq!(shown, r"a\x1b[2J\x1b[31m\x09b\x0d\x0a\x7f\x9bc\u{2067}d");
        assert!(!shown.chars().any(|c| c.is_control()));
        // Nothing to escape: the text itself, not a copy.
        assert!(matches!(
            printable("GET /ünïcode?x=1 HTTP/1.1"),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}
