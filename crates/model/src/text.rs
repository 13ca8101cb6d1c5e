//! Plain-text tables of solutions, fits and laws for the terminal: aligned columns, four
//! significant digits, units in the headers.

use crate::laws::Laws;
use crate::mva::{Solution, Solved};
use crate::network::{Discipline, StationKind};
use crate::usl::{Fit, Point, Scalability};

/// A number with about four significant digits: 0.8573, 23.33, 1884, 1.044e-4.
pub fn num(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    if !x.is_finite() {
        return x.to_string();
    }
    let magnitude = x.abs().log10().floor() as i32;
    if !(-3..6).contains(&magnitude) {
        return format!("{x:.3e}");
    }
    let decimals = (3 - magnitude).max(0) as usize;
    format!("{x:.decimals$}")
}

/// A count (concurrency, clients): whole numbers without decimals.
fn count(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        num(x)
    }
}

/// Columns padded to their widest cell; the first column left-aligned, the others right.
struct Table {
    rows: Vec<Vec<String>>,
}

impl Table {
    fn new(header: &[&str]) -> Table {
        Table {
            rows: vec![header.iter().map(|h| h.to_string()).collect()],
        }
    }

    fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    fn render(&self, left_columns: usize) -> String {
        let cols = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let widths: Vec<usize> = (0..cols)
            .map(|c| {
                self.rows
                    .iter()
                    .filter_map(|r| r.get(c))
                    .map(|s| s.chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut out = String::new();
        for row in &self.rows {
            let mut line = String::new();
            for (c, cell) in row.iter().enumerate() {
                if c > 0 {
                    line.push_str("  ");
                }
                let pad = widths[c] - cell.chars().count();
                if c < left_columns {
                    line.push_str(cell);
                    line.push_str(&" ".repeat(pad));
                } else {
                    line.push_str(&" ".repeat(pad));
                    line.push_str(cell);
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

fn kind(k: StationKind) -> String {
    match k {
        StationKind::Delay => "delay".into(),
        StationKind::Queue {
            servers,
            discipline,
        } => format!(
            "queue {servers}×{}",
            match discipline {
                Discipline::Fcfs => "fcfs",
                Discipline::Ps => "ps",
            }
        ),
    }
}

/// One solution: a class table and a station × class table.
pub fn solution(solved: &Solved) -> String {
    let mut out = format!("method: {}\n\n", solved.plan.reason);
    let Some(s) = solved.solutions.first() else {
        return out;
    };
    if s.iterations > 0 {
        out = format!(
            "method: {} ({} iterations)\n\n",
            solved.plan.reason, s.iterations
        );
    }
    let mut classes = Table::new(&["class", "N", "Z (s)", "X (/s)", "R (s)"]);
    for c in &s.classes {
        classes.row(vec![
            c.name.clone(),
            c.population.to_string(),
            num(c.think_time),
            num(c.throughput),
            num(c.response_time),
        ]);
    }
    out.push_str(&classes.render(1));
    out.push('\n');
    let mut stations = Table::new(&["station", "kind", "class", "U", "Q", "residence (s)"]);
    for st in &s.stations {
        for (r, c) in s.classes.iter().enumerate() {
            let first = r == 0;
            stations.row(vec![
                if first {
                    st.name.clone()
                } else {
                    String::new()
                },
                if first { kind(st.kind) } else { String::new() },
                c.name.clone(),
                num(st.utilization[r]),
                num(st.queue_length[r]),
                num(st.residence_time[r]),
            ]);
        }
    }
    out.push_str(&stations.render(3));
    out.push_str(
        "\nU is busy servers (X·D, at most the station's servers); Q the mean jobs there.\n",
    );
    out
}

/// A sweep: one row per population with each class's X and R and each queue's busy
/// servers.
pub fn sweep(solved: &Solved) -> String {
    let mut out = format!("method: {}\n\n", solved.plan.reason);
    let Some(first) = solved.solutions.first() else {
        return out;
    };
    let multi = first.classes.len() > 1;
    let mut header: Vec<String> = vec![if multi { "N (each)".into() } else { "N".into() }];
    for c in &first.classes {
        let suffix = if multi {
            format!(" {}", c.name)
        } else {
            String::new()
        };
        header.push(format!("X{suffix} (/s)"));
        header.push(format!("R{suffix} (s)"));
    }
    for st in &first.stations {
        header.push(format!("U {}", st.name));
    }
    let refs: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut table = Table::new(&refs);
    for s in &solved.solutions {
        table.row(sweep_row(s));
    }
    out.push_str(&table.render(0));
    out
}

fn sweep_row(s: &Solution) -> Vec<String> {
    let mut row = vec![s.classes[0].population.to_string()];
    for c in &s.classes {
        row.push(num(c.throughput));
        row.push(num(c.response_time));
    }
    for k in 0..s.stations.len() {
        row.push(num(s.station_utilization(k)));
    }
    row
}

fn stderr(v: Option<f64>, held: bool) -> String {
    match v {
        Some(v) => num(v),
        None if held => "(held at 0)".into(),
        None => "-".into(),
    }
}

/// The USL and Amdahl fits side by side, then measured against fitted throughput.
pub fn scalability(s: &Scalability, points: &[Point]) -> String {
    let (u, a) = (&s.usl, &s.amdahl);
    let mut t = Table::new(&["", "USL", "± s.e.", "Amdahl (κ = 0)", "± s.e."]);
    t.row(vec![
        "σ contention".into(),
        num(u.sigma),
        stderr(u.sigma_stderr, true),
        num(a.sigma),
        stderr(a.sigma_stderr, true),
    ]);
    t.row(vec![
        "κ coherency".into(),
        num(u.kappa),
        stderr(u.kappa_stderr, true),
        "0".into(),
        "".into(),
    ]);
    t.row(vec![
        "λ one client".into(),
        num(u.lambda),
        stderr(u.lambda_stderr, false),
        num(a.lambda),
        stderr(a.lambda_stderr, false),
    ]);
    t.row(vec![
        "R²".into(),
        num(u.r_squared),
        "".into(),
        num(a.r_squared),
        "".into(),
    ]);
    t.row(vec![
        "residual s.e.".into(),
        num(u.residual_std_error),
        "".into(),
        num(a.residual_std_error),
        "".into(),
    ]);
    let mut out = t.render(1);
    out.push('\n');
    out.push_str(&peak_line("USL", u));
    out.push_str(&peak_line("Amdahl", a));
    out.push('\n');
    let mut m = Table::new(&["N", "measured", "USL", "Amdahl"]);
    for p in points {
        m.row(vec![
            count(p.concurrency),
            num(p.throughput),
            num(u.throughput_at(p.concurrency)),
            num(a.throughput_at(p.concurrency)),
        ]);
    }
    out.push_str(&m.render(0));
    out
}

fn peak_line(name: &str, f: &Fit) -> String {
    match (f.n_peak, f.x_peak) {
        (Some(n), Some(x)) => format!(
            "{name}: throughput peaks at N* = √((1−σ)/κ) = {}, X(N*) = {}; beyond it, more concurrency lowers throughput\n",
            num(n),
            num(x)
        ),
        _ => match f.x_limit {
            Some(limit) => format!(
                "{name}: no peak; throughput rises towards λ/σ = {}\n",
                num(limit)
            ),
            None => format!("{name}: no peak and no ceiling (σ = κ = 0: linear scaling)\n"),
        },
    }
}

/// The operational laws on a measurement.
pub fn laws(throughput: f64, l: &Laws) -> String {
    let mut out = format!("throughput X = {} /s\n\n", num(throughput));
    let mut t = Table::new(&["resource", "U", "servers", "D = U/X (s)", ""]);
    for d in &l.demands {
        t.row(vec![
            d.name.clone(),
            num(d.demand * throughput),
            d.servers.to_string(),
            num(d.demand),
            if d.name == l.bottleneck {
                "bottleneck".into()
            } else {
                String::new()
            },
        ]);
    }
    out.push_str(&t.render(1));
    out.push_str(&format!(
        "\ntotal demand D = {} s (response time with no queueing)\nthroughput limit {} /s ({}); knee N* = (D + Z) / D_max = {}\n",
        num(l.total_demand),
        num(l.throughput_limit),
        l.bottleneck,
        num(l.knee)
    ));
    if let Some(c) = l.little {
        out.push_str(&format!(
            "Little's law: N = {}, X (R + Z) = {} ({:+.1} %)\n",
            count(c.clients),
            num(c.implied),
            c.deviation * 100.0
        ));
    }
    if !l.bounds.is_empty() {
        out.push('\n');
        let mut b = Table::new(&[
            "N",
            "X max (/s)",
            "X balanced (/s)",
            "R min (s)",
            "R balanced (s)",
        ]);
        for x in &l.bounds {
            let (xb, rb) = match x.balanced {
                Some([x_lo, x_hi, r_lo, r_hi]) => (
                    format!("{} .. {}", num(x_lo), num(x_hi)),
                    format!("{} .. {}", num(r_lo), num(r_hi)),
                ),
                None => ("(multi-server)".into(), "(multi-server)".into()),
            };
            b.row(vec![
                count(x.clients),
                num(x.throughput_max),
                xb,
                num(x.response_time_min),
                rb,
            ]);
        }
        out.push_str(&b.render(0));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn four_significant_digits() {
        assert_eq!(num(0.857312), "0.8573");
        assert_eq!(num(23.3291), "23.33");
        assert_eq!(num(1884.2), "1884");
        assert_eq!(num(123456.0), "123456");
        assert_eq!(num(1.044e-4), "1.044e-4");
        assert_eq!(num(0.0), "0");
        assert_eq!(num(-2.5), "-2.500");
    }

    #[test]
    fn tables_align_columns() {
        let mut t = Table::new(&["name", "value"]);
        t.row(vec!["a".into(), "1".into()]);
        t.row(vec!["long".into(), "12345".into()]);
        assert_eq!(t.render(1), "name  value\na         1\nlong  12345\n");
    }
}
