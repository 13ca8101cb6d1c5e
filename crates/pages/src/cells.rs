//! How the pages write a figure into a table cell, so that every table says a missing figure
//! and a ratio the same way. Not for numbers in sentences (each page words its own).

/// `v` with `digits` decimals, or "-" when there is no figure.
pub fn cell(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".into(), |v| format!("{v:.digits$}"))
}

/// `v / base` as "1.25×", or "-" when either is missing or the base is not positive.
pub fn ratio_cell(v: Option<f64>, base: Option<f64>) -> String {
    match (v, base) {
        (Some(v), Some(b)) if b > 0.0 => format!("{:.2}×", v / b),
        _ => "-".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_figures_are_a_dash() {
        assert_eq!(cell(Some(1.25), 1), "1.2");
        assert_eq!(cell(None, 3), "-");
        assert_eq!(ratio_cell(Some(3.0), Some(2.0)), "1.50×");
        assert_eq!(ratio_cell(Some(3.0), Some(0.0)), "-");
        assert_eq!(ratio_cell(None, Some(2.0)), "-");
    }
}
