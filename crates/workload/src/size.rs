//! Byte sizes as people type them (`1024`, `1k`, `1.5MiB`); they read them as
//! `webscope_report::human::bytes` prints them, in the same binary units.
//!
//! One kilobyte is 1024 bytes here, as in the papers' tables ("KBytes", SPECweb96's 1 KB
//! class boundary at 1024): `k`, `kb` and `kib` all mean 1024.

/// Parses a size: a non-negative number (decimals allowed) with an optional unit `b`, `k`,
/// `m`, `g` (also `kb`/`kib` etc., any case). The error says what was wrong.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    if trimmed.starts_with('-') {
        return Err(format!(
            "size {text:?} is negative (give bytes, e.g. 1024 or 1k)"
        ));
    }
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    if number.is_empty() {
        return Err(format!(
            "size {text:?} is not a number (give bytes, e.g. 1024 or 1k)"
        ));
    }
    let multiplier: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        other => {
            return Err(format!(
                "size {text:?} has an unknown unit {other:?} (use b, k, m or g; k = 1024)"
            ))
        }
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("size {text:?} is not a number (give bytes, e.g. 1024 or 1k)"))?;
    let bytes = value * multiplier as f64;
    if !bytes.is_finite() || bytes > 1e15 {
        return Err(format!("size {text:?} is too large"));
    }
    Ok(bytes.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units_as_powers_of_1024() {
        assert_eq!(parse_size("0"), Ok(0));
        assert_eq!(parse_size("1024"), Ok(1024));
        assert_eq!(parse_size("1k"), Ok(1024));
        assert_eq!(parse_size("1KiB"), Ok(1024));
        assert_eq!(parse_size("1.5M"), Ok(1_572_864));
        assert_eq!(parse_size(" 2 gb "), Ok(2 << 30));
        assert_eq!(parse_size("100b"), Ok(100));
    }

    #[test]
    fn rejects_bad_sizes_with_a_reason() {
        assert!(parse_size("-1").unwrap_err().contains("negative"));
        assert!(parse_size("1x").unwrap_err().contains("unknown unit"));
        assert!(parse_size("abc").unwrap_err().contains("not a number"));
        assert!(parse_size("").unwrap_err().contains("not a number"));
        assert!(parse_size("1e30").is_err());
    }

    /// What people read (`webscope_report::human::bytes`, the one rule for sizes) reads back.
    #[test]
    fn the_printed_size_reads_back() {
        for size in [512u64, 1024, 1536, 16 << 20, 3 << 30] {
            let printed = webscope_report::human::bytes(size as f64);
            assert_eq!(parse_size(&printed), Ok(size), "{printed}");
        }
    }
}
