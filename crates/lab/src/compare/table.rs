//! The comparison as a table, one row per metric: the one table `webscope compare` prints,
//! `compare --html` draws for each point and the lab's baseline section draws for all its
//! points. Where it is shown decides only its layout ([`Layout`]). Not for the verdicts on
//! thresholds (`Threshold::verdict` words its own line).

use webscope_report::Table;

use super::{Comparison, Row};

/// How the table is laid out where it is shown.
pub struct Layout<'a> {
    /// A first column naming each row's point, with this heading (the lab's "clients"), or
    /// none when the table is of one point.
    pub scope: Option<&'a str>,
    /// The candidate's column heading.
    pub candidate: &'a str,
    /// The test's p-value or interval beside its name: the terminal has room for it.
    pub test_detail: bool,
}

impl Layout<'static> {
    /// `webscope compare`'s output: one point a table, the test with its figures.
    pub const TERMINAL: Layout<'static> = Layout {
        scope: None,
        candidate: "candidate",
        test_detail: true,
    };
    /// `compare --html`: one point a table, the test by name.
    pub const PAGE: Layout<'static> = Layout {
        scope: None,
        candidate: "candidate",
        test_detail: false,
    };
    /// The lab's `--baseline` section: all client counts in one table, against this lab.
    pub const LAB_BASELINE: Layout<'static> = Layout {
        scope: Some("clients"),
        candidate: "this lab",
        test_detail: false,
    };
}

/// The rows of `comparisons`, in their order, laid out as `layout` says.
pub fn table<'c>(comparisons: impl IntoIterator<Item = &'c Comparison>, layout: &Layout) -> Table {
    let columns = [
        "metric",
        "baseline",
        layout.candidate,
        "change",
        "significant",
        "test",
    ];
    let mut t = Table::new(layout.scope.into_iter().chain(columns));
    for c in comparisons {
        for r in &c.rows {
            let cells = [
                r.metric.clone(),
                value(&r.metric, r.baseline),
                value(&r.metric, r.candidate),
                format!("{:+.1} %", r.change_pct),
                significance(r).to_string(),
                if layout.test_detail {
                    test_with_figures(r)
                } else {
                    r.test.clone()
                },
            ];
            let scope = layout.scope.map(|_| c.scope.clone());
            t.row(scope.into_iter().chain(cells));
        }
    }
    t
}

/// A metric's figure with its unit: latencies and CPU per request in µs, ms or s, rates per
/// second, the error share in per cent.
pub fn value(metric: &str, v: f64) -> String {
    match metric {
        "goodput" | "rps" => format!("{v:.1}/s"),
        "error_pct" => format!("{v:.2} %"),
        _ if v.abs() >= 1e6 => format!("{:.2} s", v / 1e6),
        _ if v.abs() >= 1e3 => format!("{:.2} ms", v / 1e3),
        _ => format!("{v:.1} µs"),
    }
}

/// Whether the change is beyond the noise, and which way; or that no test could say.
fn significance(r: &Row) -> &'static str {
    match (r.decided, r.significant, r.worse) {
        (false, _, _) => "cannot be decided",
        (_, true, true) => "yes, worse",
        (_, true, false) => "yes, better",
        _ => "no",
    }
}

/// The test's name with its p-value.
fn test_with_figures(r: &Row) -> String {
    match r.p {
        Some(p) => format!("{} (p = {p:.3})", r.test),
        None => r.test.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comparison(scope: &str) -> Comparison {
        let row = |metric: &str, p, decided, significant, worse| Row {
            metric: metric.into(),
            baseline: 100.0,
            candidate: 1100.0,
            change_pct: 10.0,
            test: "a test".into(),
            p,
            decided,
            significant,
            worse,
        };
        Comparison {
            scope: scope.into(),
            runs: (2, 2),
            rows: vec![
                row("p99", Some(0.03), true, true, true),
                row("goodput", Some(0.01), true, true, false),
                row("rps", None, false, false, false),
            ],
            distributions: None,
        }
    }

    #[test]
    fn each_place_lays_the_same_rows_out_its_way() {
        let (one, two) = (comparison("1 client"), comparison("2 clients"));
        let terminal = table([&one], &Layout::TERMINAL);
        assert_eq!(terminal.rows.len(), 3);
        assert_eq!(terminal.rows[0][4], "yes, worse");
        assert_eq!(terminal.rows[0][5], "a test (p = 0.030)");
        assert_eq!(terminal.rows[1][4], "yes, better");
        assert_eq!(terminal.rows[1][5], "a test (p = 0.010)");
        assert_eq!(terminal.rows[2][4..], ["cannot be decided", "a test"]);
        assert_eq!(terminal.rows[0][1..3], ["100.0 µs", "1.10 ms"]);
        assert_eq!(terminal.rows[1][1..3], ["100.0/s", "1100.0/s"]);
        let page = table([&one], &Layout::PAGE);
        assert_eq!(page.rows[0][5], "a test");
        let lab = table([&one, &two], &Layout::LAB_BASELINE);
        assert_eq!(lab.rows.len(), 6);
        assert_eq!(lab.rows[3][..3], ["2 clients", "p99", "100.0 µs"]);
        assert!(lab
            .to_csv()
            .starts_with("clients,metric,baseline,this lab,"));
    }
}
