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
                format!("{:.2}", r.baseline),
                format!("{:.2}", r.candidate),
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

/// Whether the change is beyond the noise, and which way.
fn significance(r: &Row) -> &'static str {
    match (r.significant, r.worse) {
        (true, true) => "yes, worse",
        (true, false) => "yes, better",
        _ => "no",
    }
}

/// The test's name with its p-value or its interval of the change.
fn test_with_figures(r: &Row) -> String {
    match (r.p, r.ci_pct) {
        (Some(p), _) => format!("{} (p = {p:.3})", r.test),
        (None, Some((lo, hi))) => format!("{} ({lo:+.1} .. {hi:+.1} %)", r.test),
        _ => r.test.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comparison(scope: &str) -> Comparison {
        let row = |metric: &str, p, ci_pct, significant, worse| Row {
            metric: metric.into(),
            baseline: 100.0,
            candidate: 110.0,
            change_pct: 10.0,
            test: "a test".into(),
            p,
            ci_pct,
            significant,
            worse,
        };
        Comparison {
            scope: scope.into(),
            runs: (2, 2),
            rows: vec![
                row("p99", Some(0.03), None, true, true),
                row("goodput", None, Some((2.0, 18.0)), true, false),
                row("rps", None, None, false, false),
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
        assert_eq!(terminal.rows[1][5], "a test (+2.0 .. +18.0 %)");
        assert_eq!(terminal.rows[2][4..], ["no", "a test"]);
        let page = table([&one], &Layout::PAGE);
        assert_eq!(page.rows[0][5], "a test");
        let lab = table([&one, &two], &Layout::LAB_BASELINE);
        assert_eq!(lab.rows.len(), 6);
        assert_eq!(lab.rows[3][..3], ["2 clients", "p99", "100.00"]);
        assert!(lab
            .to_csv()
            .starts_with("clients,metric,baseline,this lab,"));
    }
}
