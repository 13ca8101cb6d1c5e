//! The report page: one self-contained HTML file (inline CSS and SVG, no scripts, no network),
//! readable offline and printable; and its tables as CSV and as terminal text.

use std::fmt::Write;

use crate::svg::esc;

/// A table of text cells.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    /// Column headings.
    pub header: Vec<String>,
    /// Rows, each as long as the header.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headings.
    pub fn new<S: Into<String>>(header: impl IntoIterator<Item = S>) -> Table {
        Table {
            header: header.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row. A row of another width than the header is a bug of the caller (a CSV
    /// whose cells slide under the wrong headings): debug builds, and so the tests, stop on it.
    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        let row: Vec<String> = cells.into_iter().map(Into::into).collect();
        debug_assert_eq!(
            row.len(),
            self.header.len(),
            "a row of {} cells under {} headings ({:?})",
            row.len(),
            self.header.len(),
            self.header
        );
        self.rows.push(row);
    }

    /// RFC 4180 CSV.
    pub fn to_csv(&self) -> String {
        let mut out = String::new();
        for row in std::iter::once(&self.header).chain(&self.rows) {
            let cells: Vec<String> = row.iter().map(|c| csv_cell(c)).collect();
            out.push_str(&cells.join(","));
            out.push_str("\r\n");
        }
        out
    }

    /// Aligned columns for a terminal.
    pub fn to_text(&self) -> String {
        let columns = self.header.len();
        let mut widths: Vec<usize> = self.header.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (i, cell) in row.iter().enumerate().take(columns) {
                widths[i] = widths[i].max(cell.chars().count());
            }
        }
        let mut out = String::new();
        for (n, row) in std::iter::once(&self.header).chain(&self.rows).enumerate() {
            let cells: Vec<String> = row
                .iter()
                .enumerate()
                .take(columns)
                .map(|(i, c)| {
                    if i == 0 {
                        format!("{c:<w$}", w = widths[i])
                    } else {
                        format!("{c:>w$}", w = widths[i])
                    }
                })
                .collect();
            out.push_str(cells.join("  ").trim_end());
            out.push('\n');
            if n == 0 {
                let rule: Vec<String> = widths.iter().map(|&w| "-".repeat(w)).collect();
                out.push_str(&rule.join("  "));
                out.push('\n');
            }
        }
        out
    }

    /// The table in a box that scrolls sideways when the table is wider than the page, so
    /// that the page itself never is (its last columns would be off-screen).
    fn to_html(&self, out: &mut String) {
        out.push_str("<div class=\"wide\"><table><thead><tr>");
        for h in &self.header {
            let _ = write!(out, "<th>{}</th>", esc(h));
        }
        out.push_str("</tr></thead><tbody>");
        for row in &self.rows {
            out.push_str("<tr>");
            for cell in row {
                let _ = write!(out, "<td>{}</td>", esc(cell));
            }
            out.push_str("</tr>");
        }
        out.push_str("</tbody></table></div>");
    }
}

/// A cell as RFC 4180 writes it, guarded against formula injection: a spreadsheet runs a
/// cell that begins with `=`, `+`, `-` or `@` (or a tab or carriage return before one) as a
/// formula, so a URL from a log such as `=HYPERLINK(...)` would run when the CSV is opened.
/// Such a cell is written after a `'`, OWASP's rule, which spreadsheets show as text. A cell
/// that begins with `+` or `-` is guarded only when it could call something (a `(`, `|`, `!`,
/// `=` or `@` in it: a function, a DDE link, another formula): the lab's tables are full of
/// signed figures (`-2.5`, `-3.1 %`, `-`), which notebooks must read as they are.
fn csv_cell(cell: &str) -> String {
    let risky = match cell.chars().next() {
        Some('=' | '@' | '\t' | '\r') => true,
        Some('+' | '-') => cell.contains(['(', '|', '!', '=', '@']),
        _ => false,
    };
    let cell = if risky {
        std::borrow::Cow::Owned(format!("'{cell}"))
    } else {
        std::borrow::Cow::Borrowed(cell)
    };
    if cell.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", cell.replace('"', "\"\""))
    } else {
        cell.into_owned()
    }
}

/// One piece of a section.
#[derive(Debug, Clone)]
pub enum Block {
    /// A paragraph of text.
    Text(String),
    /// A chart (inline SVG) with the one sentence that says what it shows.
    Chart {
        /// The `<svg>` element.
        svg: String,
        /// What the reader should see in it.
        reading: String,
    },
    /// A table with a caption.
    Table {
        /// Said above the table.
        caption: String,
        /// The table.
        table: Table,
    },
    /// Something that went wrong or could not be measured, said plainly.
    Warning(String),
}

/// A titled part of the report.
#[derive(Debug, Clone)]
pub struct Section {
    /// The heading.
    pub heading: String,
    /// The content, in order.
    pub blocks: Vec<Block>,
}

/// The whole report page.
#[derive(Debug, Clone)]
pub struct Page {
    /// The page title.
    pub title: String,
    /// A line under the title (machine, date, command).
    pub subtitle: String,
    /// What the reader must know before anything else (invalid runs), shown under the title.
    pub banners: Vec<String>,
    /// The sections, in order.
    pub sections: Vec<Section>,
}

const STYLE: &str = "body{font-family:sans-serif;max-width:1000px;margin:2em auto;padding:0 1em;color:#222}\
h1{font-size:1.6em;margin-bottom:.2em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}\
.sub{color:#666}p{overflow-wrap:anywhere}figure{margin:1.2em 0}figcaption{font-style:italic;color:#444;margin-top:.3em}\
.wide{overflow-x:auto;max-width:100%}table{border-collapse:collapse;margin:.6em 0;font-size:.9em}th,td{border:1px solid #ccc;padding:.25em .6em;text-align:right}\
th:first-child,td:first-child{text-align:left}th{background:#f3f3f3}.warn{background:#fff4e5;border-left:4px solid #e69f00;padding:.5em 1em}\
.banner{background:#fde8e8;border:2px solid #c0392b;color:#7b1d14;font-weight:bold;padding:.7em 1em}\
svg{max-width:100%;height:auto}@media print{h2{page-break-before:auto}figure,table{page-break-inside:avoid}.wide{overflow:visible}}";

impl Page {
    /// The page as one self-contained HTML document.
    pub fn to_html(&self) -> String {
        let mut out = String::with_capacity(64 * 1024);
        let _ = write!(
            out,
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
             <title>{t}</title><style>{STYLE}</style></head><body>\n<h1>{t}</h1><p class=\"sub\">{s}</p>\n",
            t = esc(&self.title),
            s = esc(&self.subtitle)
        );
        for banner in &self.banners {
            let _ = writeln!(
                out,
                "<p class=\"banner\" role=\"alert\">{}</p>",
                esc(banner)
            );
        }
        if self.sections.len() > 1 {
            out.push_str("<nav><ul>");
            for (i, section) in self.sections.iter().enumerate() {
                let _ = write!(
                    out,
                    "<li><a href=\"#s{i}\">{}</a></li>",
                    esc(&section.heading)
                );
            }
            out.push_str("</ul></nav>\n");
        }
        for (i, section) in self.sections.iter().enumerate() {
            let _ = writeln!(
                out,
                "<section id=\"s{i}\"><h2>{}</h2>",
                esc(&section.heading)
            );
            for block in &section.blocks {
                match block {
                    Block::Text(text) => {
                        let _ = write!(out, "<p>{}</p>", esc(text));
                    }
                    Block::Chart { svg, reading } => {
                        let _ = write!(
                            out,
                            "<figure>{svg}<figcaption>{}</figcaption></figure>",
                            esc(reading)
                        );
                    }
                    Block::Table { caption, table } => {
                        let _ = write!(out, "<p><strong>{}</strong></p>", esc(caption));
                        table.to_html(&mut out);
                    }
                    Block::Warning(text) => {
                        let _ = write!(out, "<p class=\"warn\">{}</p>", esc(text));
                    }
                }
                out.push('\n');
            }
            out.push_str("</section>\n");
        }
        out.push_str("</body></html>\n");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Table {
        let mut t = Table::new(["clients", "req/s", "note"]);
        t.row(["1", "1200", "warm, \"first\""]);
        t.row(["10", "9800", ""]);
        t
    }

    #[test]
    fn csv_quotes_what_needs_quoting() {
        assert_eq!(
            table().to_csv(),
            "clients,req/s,note\r\n1,1200,\"warm, \"\"first\"\"\"\r\n10,9800,\r\n"
        );
    }

    #[test]
    fn csv_cells_that_a_spreadsheet_would_run_are_written_as_text() {
        // #51 §11: CSV injection. Numbers and the "not measured" dash are kept as they are.
        let mut t = Table::new(["cell"]);
        for cell in [
            "=HYPERLINK(\"http://x/\",\"y\")",
            "+cmd|' /C calc'!A0",
            "-2+SUM(A1)",
            "@SUM(A1)",
            "\t=1+1",
            "-2.5",
            "-3.1 %",
            "-",
            "1e-3",
            "/a=b",
        ] {
            t.row([cell]);
        }
        let csv = t.to_csv();
        let cells: Vec<&str> = csv.split("\r\n").skip(1).collect();
        assert_eq!(
            cells[..10],
            [
                "\"'=HYPERLINK(\"\"http://x/\"\",\"\"y\"\")\"",
                "'+cmd|' /C calc'!A0",
                "'-2+SUM(A1)",
                "'@SUM(A1)",
                "'\t=1+1",
                "-2.5",
                "-3.1 %",
                "-",
                "1e-3",
                "/a=b",
            ]
        );
    }

    #[test]
    fn text_tables_align() {
        let text = table().to_text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "clients  req/s           note");
        assert_eq!(lines[1], "-------  -----  -------------");
        assert_eq!(lines[3], "10        9800");
    }

    #[test]
    fn page_is_well_formed_and_self_contained() {
        let page = Page {
            title: "webscope <report>".into(),
            subtitle: "test".into(),
            banners: vec!["No valid run: 403 & more".into()],
            sections: vec![
                Section {
                    heading: "One".into(),
                    blocks: vec![
                        Block::Text("a & b".into()),
                        Block::Table {
                            caption: "t".into(),
                            table: table(),
                        },
                        Block::Warning("perf is missing".into()),
                    ],
                },
                Section {
                    heading: "Two".into(),
                    blocks: vec![Block::Chart {
                        svg: "<svg xmlns=\"http://www.w3.org/2000/svg\"></svg>".into(),
                        reading: "flat".into(),
                    }],
                },
            ],
        };
        let html = page.to_html();
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.contains("<title>webscope &lt;report&gt;</title>"));
        let banner = html
            .find("<p class=\"banner\" role=\"alert\">No valid run: 403 &amp; more</p>")
            .expect("the banner, escaped");
        assert!(
            banner < html.find("<section").unwrap(),
            "the banner opens the page"
        );
        assert!(
            !html.contains("http://") || html.matches("http://").count() == 1,
            "no links out but the SVG namespace"
        );
        assert!(!html.contains("<script"));
        // A table scrolls sideways in its own box rather than widen the page.
        assert!(html.contains("<div class=\"wide\"><table>") && html.contains("</table></div>"));
        assert!(html.contains(".wide{overflow-x:auto"));
        // The body (after the doctype) parses as XML: every tag is closed.
        let body = html
            .trim_start_matches("<!DOCTYPE html>\n")
            .replace("<meta charset=\"utf-8\">", "<meta charset=\"utf-8\"/>")
            .replace("initial-scale=1\">", "initial-scale=1\"/>");
        roxmltree::Document::parse(&body).expect("well-formed");
    }
}
