//! The legend in a chart's right margin, laid out so that no name is cut: each name is
//! wrapped at its spaces to the margin's width, and a chart whose longest word (a URL, say)
//! is wider than the margin, or whose legend runs below the plot, grows to hold it.
//!
//! The browser lays the text out with whatever sans-serif font it has, so the width of a name
//! is not known here; [`text_width`] is an upper bound for the common ones (DejaVu Sans, the
//! widest, Liberation Sans, Arial, Helvetica), so that a name fits wherever the page is opened
//! and the SVG still depends only on the data. Before this, "lognormal body + Pareto tail" and
//! "Poisson arrivals, same rate" ran off the chart's right edge.

use std::fmt::Write;

use super::{esc, H, MR, MT, PALETTE, W};

/// The legend's font size (the chart's), in SVG user units.
const FONT: f64 = 11.0;
/// Where a name's text starts: after the colour swatch.
const TEXT_X: f64 = W - MR + 26.0;
/// Room between a name's end and the chart's edge.
const PAD: f64 = 6.0;
/// From one name's first line to the next name's; a wrapped name's lines are closer.
const ENTRY_STEP: f64 = 16.0;
const LINE_STEP: f64 = 13.0;

/// The width of one character in ems: the widest of the common sans-serif fonts' advances
/// (DejaVu Sans nearly always), by class of character.
fn em(c: char) -> f64 {
    match c {
        // Combining marks (the hat of α̂) take no room.
        '\u{300}'..='\u{36f}' => 0.0,
        'i' | 'j' | 'l' | '\'' | '|' => 0.28,
        ' ' | '.' | ',' | ':' | ';' | '!' | 'I' | 'J' | '·' => 0.34,
        'f' | 't' | 'r' | '(' | ')' | '[' | ']' | '{' | '}' | '-' | '/' | '\\' | '"' => 0.47,
        'm' | 'w' | 'M' | 'W' | '%' | '@' | '…' | '—' => 1.0,
        '+' | '=' | '×' | '<' | '>' | '≤' | '≥' | '−' | '~' | '#' | '&' => 0.84,
        'A'..='Z' => 0.8,
        c if c.is_ascii() => 0.65,
        // Greek letters, arrows and anything else: as wide as a capital or more.
        _ => 0.85,
    }
}

/// An upper bound on the width of `text` at `font` user units.
pub(super) fn text_width(text: &str, font: f64) -> f64 {
    text.chars().map(em).sum::<f64>() * font
}

/// `text` in lines no wider than `width`, broken at spaces; a word wider than `width` is a
/// line of its own (the chart widens for it).
fn wrap(text: &str, width: f64) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        match lines.last_mut() {
            Some(line) if text_width(&format!("{line} {word}"), FONT) <= width => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    if lines.is_empty() {
        lines.push(String::new());
    }
    lines
}

/// The legend of a chart's series, laid out.
pub(super) struct Legend {
    /// Each series' name, as lines.
    entries: Vec<Vec<String>>,
}

impl Legend {
    pub(super) fn new(names: &[&str]) -> Legend {
        let room = W - TEXT_X - PAD;
        Legend {
            entries: names.iter().map(|n| wrap(n, room)).collect(),
        }
    }

    /// The chart's size with the legend in it: (W, H), or more where the legend needs it.
    pub(super) fn size(&self) -> (f64, f64) {
        let widest = self
            .entries
            .iter()
            .flatten()
            .map(|l| text_width(l, FONT))
            .fold(0.0, f64::max);
        let lines: usize = self.entries.iter().map(Vec::len).sum();
        let bottom = self.first_baseline()
            + self.entries.len().saturating_sub(1) as f64 * ENTRY_STEP
            + lines.saturating_sub(self.entries.len()) as f64 * LINE_STEP;
        (
            W.max((TEXT_X + widest + PAD).ceil()),
            H.max((bottom + 8.0).ceil()),
        )
    }

    fn first_baseline(&self) -> f64 {
        MT + 8.0
    }

    /// Draws the swatches and names.
    pub(super) fn draw(&self, out: &mut String) {
        let mut y = self.first_baseline();
        for (i, lines) in self.entries.iter().enumerate() {
            let _ = write!(
                out,
                "<rect x=\"{x:.1}\" y=\"{ry:.1}\" width=\"10\" height=\"10\" fill=\"{c}\"/>",
                x = W - MR + 12.0,
                ry = y - 9.0,
                c = PALETTE[i % PALETTE.len()],
            );
            for (j, line) in lines.iter().enumerate() {
                if j > 0 {
                    y += LINE_STEP;
                }
                let _ = write!(
                    out,
                    "<text x=\"{TEXT_X:.1}\" y=\"{y:.1}\" class=\"legend\">{}</text>",
                    esc(line)
                );
            }
            y += ENTRY_STEP;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_widths_bound_dejavu_sans_on_names_from_the_pages() {
        // The wider of DejaVu Sans and Liberation Sans at 11 px, measured in Chromium
        // (getComputedTextLength): the bound is at least these.
        for (text, dejavu) in [
            ("lognormal body + Pareto tail", 157.9),
            ("Poisson arrivals, same rate", 148.2),
            ("WWWMMM", 61.1),
            ("iiiilll", 21.4),
            ("ABCDEFGHIJKLMNOPQRSTUVWXYZ", 193.8),
            ("0123456789 %+=×≥−·…μσα", 165.8),
            ("/blog/tags/puppet?flav=rss20&page=2", 215.1),
        ] {
            let bound = text_width(text, FONT);
            assert!(bound >= dejavu, "{text}: {bound} < {dejavu}");
            assert!(
                bound <= dejavu * 1.25,
                "{text}: {bound} is far above {dejavu}"
            );
        }
    }

    #[test]
    fn long_names_wrap_at_spaces_within_the_margin() {
        let legend = Legend::new(&["lognormal body + Pareto tail", "ok"]);
        let room = W - TEXT_X - PAD;
        assert!(legend.entries[0].len() > 1);
        assert_eq!(legend.entries[0].join(" "), "lognormal body + Pareto tail");
        assert!(legend.entries[0]
            .iter()
            .all(|l| text_width(l, FONT) <= room));
        assert_eq!(legend.size(), (W, H));
    }

    #[test]
    fn a_word_wider_than_the_margin_widens_the_chart() {
        let url = "/blog/tags/puppet?flav=rss20&page=2";
        let legend = Legend::new(&[url]);
        let (w, _) = legend.size();
        assert!(w >= TEXT_X + text_width(url, FONT), "{w}");
    }

    #[test]
    fn a_legend_longer_than_the_plot_lengthens_the_chart() {
        let names: Vec<String> = (0..40).map(|i| format!("series {i}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let (_, h) = Legend::new(&names).size();
        assert!(h >= MT + 8.0 + 39.0 * ENTRY_STEP, "{h}");
    }
}
