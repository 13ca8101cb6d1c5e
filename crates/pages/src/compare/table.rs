//! The comparison as a table, one row per metric: the one table `webscope compare` prints,
//! `compare --html` draws for each point and the lab's baseline section draws for all its
//! points. Where it is shown decides only its layout ([`Layout`]). Not for the verdicts on
//! thresholds (`Threshold::verdict` words its own line).

use webscope_report::{human, Table};

use webscope_compare::{Comparison, Row};

/// How the table is laid out where it is shown.
pub struct Layout<'a> {
    /// A first column naming each row's point, with this heading (the lab's "clients"), or
    /// none when the table is of one point.
    pub scope: Option<&'a str>,
    /// The candidate's column heading.
    pub candidate: &'a str,
}

impl Layout<'static> {
    /// `webscope compare`'s output and `compare --html`: one point a table.
    pub const ONE_POINT: Layout<'static> = Layout {
        scope: None,
        candidate: "candidate",
    };
    /// The lab's `--baseline` section: all client counts in one table, against this lab.
    pub const LAB_BASELINE: Layout<'static> = Layout {
        scope: Some("clients"),
        candidate: "this lab",
    };
}

/// The rows of `comparisons`, in their order, laid out as `layout` says.
pub fn table<'c>(comparisons: impl IntoIterator<Item = &'c Comparison>, layout: &Layout) -> Table {
    let columns = [
        "metric",
        "baseline",
        layout.candidate,
        "change",
        "95 % interval",
        "beyond noise",
        "runs",
    ];
    let mut t = Table::new(layout.scope.into_iter().chain(columns));
    for c in comparisons {
        for r in &c.rows {
            let cells = [
                r.metric.clone(),
                value(&r.metric, r.baseline),
                value(&r.metric, r.candidate),
                human::change(r.change_pct / 100.0),
                r.interval_pct.map_or("-".into(), |[lo, hi]| {
                    human::change_interval(lo / 100.0, hi / 100.0)
                }),
                significance(r).to_string(),
                r.test.clone(),
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

/// Whether the interval leaves out "no change", and which way; or that there is none.
fn significance(r: &Row) -> &'static str {
    match (r.decided, r.significant, r.worse) {
        (false, _, _) => "cannot be decided",
        (_, true, true) => "yes, worse",
        (_, true, false) => "yes, better",
        _ => "no",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comparison(scope: &str) -> Comparison {
        let row = |metric: &str, interval_pct, decided, significant, worse| Row {
            metric: metric.into(),
            baseline: 100.0,
            candidate: 1100.0,
            change_pct: 10.0,
            interval_pct,
            test: "4 and 4 runs".into(),
            paired: false,
            decided,
            significant,
            worse,
            change: None,
        };
        Comparison {
            scope: scope.into(),
            runs: (2, 2),
            paired: false,
            rows: vec![
                row("p99", Some([4.0, 16.0]), true, true, true),
                row("goodput", Some([-2.0, 12.5]), true, false, false),
                row("rps", None, false, false, false),
            ],
            distributions: None,
        }
    }

    #[test]
    fn each_place_lays_the_same_rows_out_its_way() {
        let (one, two) = (comparison("1 client"), comparison("2 clients"));
        let terminal = table([&one], &Layout::ONE_POINT);
        assert_eq!(terminal.rows.len(), 3);
        assert_eq!(
            terminal.rows[0][3..],
            ["+10.0 %", "+4.0 .. +16.0 %", "yes, worse", "4 and 4 runs"]
        );
        assert_eq!(terminal.rows[1][4..6], ["\u{2212}2.0 .. +12.5 %", "no"]);
        assert_eq!(terminal.rows[2][4..6], ["-", "cannot be decided"]);
        assert_eq!(terminal.rows[0][1..3], ["100.0 µs", "1.10 ms"]);
        assert_eq!(terminal.rows[1][1..3], ["100.0/s", "1100.0/s"]);
        let lab = table([&one, &two], &Layout::LAB_BASELINE);
        assert_eq!(lab.rows.len(), 6);
        assert_eq!(lab.rows[3][..3], ["2 clients", "p99", "100.0 µs"]);
        assert!(lab
            .to_csv()
            .starts_with("clients,metric,baseline,this lab,"));
    }
}
