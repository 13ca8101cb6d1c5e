//! Figures as people read them in a sentence or a table cell: three significant figures,
//! thousands set apart, nouns that agree with their count, durations in their two largest
//! units, byte sizes in binary units. Every page and terminal summary that prints a measured number goes through here, so
//! that "334.4040687947534 req/s", "8.695652 %", "1 lines" and "3days 11h 1m" cannot come back
//! one call site at a time.
//!
//! Not for: JSON and CSV (they keep full precision for notebooks), nor tick labels (the charts'
//! own [`crate::svg::fmt_num`], short and sized to the axis).
//!
//! Thousands are set apart by a plain space, as ISO 80000 writes them and as the terminal
//! summaries already did: a comma reads as a decimal point in much of Europe, and a thin space
//! is not shown by every terminal.

/// A measured figure to three significant figures: `0.0304`, `8.70`, `334`, and whole numbers
/// with their thousands set apart from 1 000 on (`41 800`, `1 234 567`: a figure that large is
/// printed whole rather than padded with zeros that would look measured). Trailing zeros are
/// kept (`2.50`), as they say how precise the figure is, except in a whole number (`3`, not
/// `3.00`: a count's median, a ratio of counts), which is exact. Below 0.0001, in scientific
/// notation (`1.23e-7`). Not finite: `-`.
pub fn sig3(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs();
    if v.fract() == 0.0 && a < 1e15 {
        let sign = if v < 0.0 { "-" } else { "" };
        return format!("{sign}{}", count(a as u64));
    }
    if a < 1e-4 {
        // Rather than a row of zeros before the figures.
        return format!("{v:.2e}");
    }
    // Decimals for three significant figures; rounding may carry into the next decade
    // (9.996 → 10.0), which the second look catches.
    let decimals = |a: f64| (2 - a.log10().floor() as i32).max(0) as usize;
    let mut d = decimals(a);
    let rounded: f64 = format!("{a:.d$}").parse().unwrap_or(a);
    if rounded > 0.0 && decimals(rounded) < d {
        d = decimals(rounded);
    }
    let text = format!("{a:.d$}");
    let sign = if v < 0.0 { "-" } else { "" };
    match text.split_once('.') {
        Some((whole, frac)) => format!("{sign}{}.{frac}", group(whole)),
        None => format!("{sign}{}", group(&text)),
    }
}

/// A count with its thousands set apart: `1 595`.
pub fn count(n: u64) -> String {
    group(&n.to_string())
}

/// A count and its noun, agreeing: `1 line`, `2 lines`, `1 234 files`, `3 entries`,
/// `2 classes`. `noun` is the singular; the plural follows the regular English rules (which
/// every noun the pages count follows).
pub fn plural(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{} {}", count(n), plural_of(noun))
    }
}

/// The regular English plural of `noun`: `-s`, `-es` after a hiss, `-ies` after a consonant's y.
fn plural_of(noun: &str) -> String {
    let lower = noun.to_ascii_lowercase();
    if ["s", "x", "z", "ch", "sh"]
        .iter()
        .any(|e| lower.ends_with(e))
    {
        return format!("{noun}es");
    }
    let mut tail = lower.chars().rev();
    if let (Some('y'), Some(c)) = (tail.next(), tail.next()) {
        if !"aeiou".contains(c) {
            return format!("{}ies", &noun[..noun.len() - 1]);
        }
    }
    format!("{noun}s")
}

/// A share (0.087 for 8.7 %) as a percentage to three significant figures: `8.70 %`,
/// `100 %`, `0.0120 %`.
pub fn pct(share: f64) -> String {
    format!("{} %", sig3(100.0 * share))
}

/// A share (0.38 for 38 %) in a sentence, where its tenths would not change the reading:
/// whole per cent from 10 % on (`38 %`, and a ratio past all, `130 %`), one decimal below
/// (`4.5 %`) and near all (`99.6 %`), so that "100 %" is never a rounded 99.6. For causes
/// and limits ("403 Forbidden on 38 % of requests", "steal 12 %"); a measured figure in a
/// table or a summary is [`pct`].
pub fn pct_brief(share: f64) -> String {
    let percent = 100.0 * share;
    if !percent.is_finite() {
        "-".into()
    } else if percent < 10.0 || (99.5..99.95).contains(&percent) {
        format!("{percent:.1} %")
    } else {
        format!("{percent:.0} %")
    }
}

/// A change (−0.151 for 15.1 % lower) as a signed percentage to one decimal, with a true
/// minus sign: `+2.0 %`, `−15.1 %`, `+0.0 %`; `any rise` and `any drop` for a change the data
/// leave unbounded (+∞, or −100 % reached through an open bound). One decimal, not three
/// significant figures: a change is read against a limit written in whole per cent.
pub fn change(fraction: f64) -> String {
    if fraction.is_nan() {
        return "-".into();
    }
    if fraction == f64::INFINITY {
        return "any rise".into();
    }
    if fraction <= -1.0 {
        return "any drop".into();
    }
    format!("{:+.1} %", 100.0 * fraction).replace('-', "\u{2212}")
}

/// An interval of changes: `−22.0 .. −8.0 %`, `−3.1 .. +2.0 %`, `−4.0 % .. any rise`.
pub fn change_interval(low: f64, high: f64) -> String {
    let (lo, hi) = (change(low), change(high));
    // The unit once, at the end, when both ends carry it.
    let lo = match lo.strip_suffix(" %") {
        Some(bare) if hi.ends_with(" %") => bare.to_string(),
        _ => lo,
    };
    format!("{lo} .. {hi}")
}

/// A rate of requests per second: `334 req/s`, `0.0300 req/s`, `41 800 req/s`.
pub fn rate(per_s: f64) -> String {
    format!("{} req/s", sig3(per_s))
}

/// A span of time in its two largest units: `3 d 11 h`, `2 h 46 m`, `4 m 32 s`, `45 s`;
/// below a minute in whole seconds or to three significant figures (`1.25 s`), below a second in milliseconds
/// (`850 ms`). A unit that is zero is left out (`2 h`, `1 d 5 m` is not written: the second
/// unit is always the one just below the first).
pub fn duration(seconds: f64) -> String {
    if !seconds.is_finite() || seconds < 0.0 {
        return "-".into();
    }
    if seconds == 0.0 {
        return "0 s".into();
    }
    if seconds < 1.0 {
        return format!("{} ms", sig3(seconds * 1000.0));
    }
    if seconds < 60.0 && seconds.fract() != 0.0 {
        return format!("{} s", sig3(seconds));
    }
    const UNITS: [(u64, &str); 4] = [(86_400, "d"), (3_600, "h"), (60, "m"), (1, "s")];
    let whole = seconds.round() as u64;
    let Some(i) = UNITS.iter().position(|(size, _)| whole >= *size) else {
        return "0 s".into();
    };
    let (big, big_name) = UNITS[i];
    let Some(&(small, small_name)) = UNITS.get(i + 1) else {
        return format!("{whole} s");
    };
    // Rounded to the smaller unit, so 1 h 59 m 50 s is 2 h, not 1 h 59 m.
    let in_small = (whole as f64 / small as f64).round() as u64;
    let per = big / small;
    let (b, s) = (in_small / per, in_small % per);
    if s == 0 {
        format!("{} {big_name}", count(b))
    } else {
        format!("{} {big_name} {s} {small_name}", count(b))
    }
}

/// A number of bytes in binary units, as the file sets are sized and as the kernel counts
/// memory: `512 B`, `1.5 KiB`, `21.8 MiB`, `3.2 GiB`. The one rule for a size or an amount
/// of bytes on every page and terminal line (a rate appends `/s`: `1.2 MiB/s`).
///
/// Below 1 KiB in whole bytes; from there in the largest unit it reaches, to one decimal, and
/// whole when the amount is a whole number of that unit (`16 MiB`, `64 KiB`: a bound or a
/// file size given as such reads back as it was written). A figure that rounds up to 1 024
/// of a unit is written in the next one (`1.0 MiB`, not `1024.0 KiB`). Not finite: `-`.
///
/// Written here rather than with a crate (humansize, bytesize): it is a few lines, and a crate
/// would bring a second rule for decimals beside this module's.
pub fn bytes(amount: f64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if !amount.is_finite() {
        return "-".into();
    }
    let sign = if amount < 0.0 { "-" } else { "" };
    let mut value = amount.abs();
    if value.round() < 1024.0 {
        return format!("{sign}{} B", value.round());
    }
    let mut unit = 0;
    value /= 1024.0;
    // Rounded to one decimal before the unit is chosen, so 1023.96 KiB is 1.0 MiB.
    while (value * 10.0).round() >= 10_240.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if value.fract() == 0.0 {
        format!("{sign}{value} {}", UNITS[unit])
    } else {
        format!("{sign}{value:.1} {}", UNITS[unit])
    }
}

/// Digits with a space before each group of three from the right: `1234567` → `1 234 567`.
fn group(digits: &str) -> String {
    let n = digits.len();
    let mut out = String::with_capacity(n + n / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (n - i) % 3 == 0 {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_from_the_issue_read_as_three_significant_figures() {
        assert_eq!(rate(334.4040687947534), "334 req/s");
        assert_eq!(pct(0.08695652), "8.70 %");
        assert_eq!(rate(0.03), "0.0300 req/s");
        assert_eq!(sig3(2.5), "2.50");
        assert_eq!(sig3(2.0), "2");
        assert_eq!(sig3(-3.0), "-3");
        assert_eq!(sig3(12.345), "12.3");
        assert_eq!(sig3(-0.000123456), "-0.000123");
    }

    #[test]
    fn rounding_that_carries_into_the_next_decade_keeps_three_figures() {
        assert_eq!(sig3(9.996), "10.0");
        assert_eq!(sig3(99.96), "100");
        assert_eq!(sig3(0.09996), "0.100");
        assert_eq!(sig3(999.6), "1 000");
    }

    #[test]
    fn large_figures_are_whole_with_thousands_apart() {
        assert_eq!(sig3(41_800.3), "41 800");
        assert_eq!(sig3(1_234_567.4), "1 234 567");
        assert_eq!(sig3(-1_234.0), "-1 234");
        assert_eq!(count(1_595), "1 595");
        assert_eq!(count(999), "999");
        assert_eq!(count(1_000_000), "1 000 000");
        assert_eq!(pct(1.0), "100 %");
    }

    #[test]
    fn nothing_but_a_number_reads_as_one() {
        assert_eq!(sig3(f64::NAN), "-");
        assert_eq!(sig3(f64::INFINITY), "-");
        assert_eq!(sig3(0.0), "0");
        assert_eq!(sig3(-0.0001), "-0.000100");
        assert_eq!(sig3(-1.234e-300), "-1.23e-300");
    }

    #[test]
    fn nouns_agree_with_their_count() {
        assert_eq!(plural(1, "line"), "1 line");
        assert_eq!(plural(0, "line"), "0 lines");
        assert_eq!(plural(10_000, "line"), "10 000 lines");
        assert_eq!(plural(1, "client"), "1 client");
        assert_eq!(plural(3, "entry"), "3 entries");
        assert_eq!(plural(2, "day"), "2 days");
        assert_eq!(plural(2, "class"), "2 classes");
        assert_eq!(plural(2, "speed-up"), "2 speed-ups");
    }

    #[test]
    fn durations_in_their_two_largest_units() {
        assert_eq!(duration((3 * 86_400 + 11 * 3_600 + 60) as f64), "3 d 11 h");
        assert_eq!(duration(9_960.0), "2 h 46 m");
        assert_eq!(duration(272.0), "4 m 32 s");
        assert_eq!(duration(7_190.0), "2 h");
        assert_eq!(duration(60.0), "1 m");
        assert_eq!(duration(45.0), "45 s");
        assert_eq!(duration(1.0), "1 s");
        assert_eq!(duration(1.25), "1.25 s");
        assert_eq!(duration(0.85), "850 ms");
        assert_eq!(duration(0.0), "0 s");
        assert_eq!(duration(400.0 * 86_400.0), "400 d");
        assert_eq!(duration(f64::NAN), "-");
    }

    #[test]
    fn changes_are_signed_to_one_decimal_with_a_true_minus() {
        assert_eq!(change(-0.151), "\u{2212}15.1 %");
        assert_eq!(change(0.02), "+2.0 %");
        assert_eq!(change(0.0), "+0.0 %");
        assert_eq!(change(f64::INFINITY), "any rise");
        assert_eq!(change(-1.0), "any drop");
        assert_eq!(
            change_interval(-0.22, -0.08),
            "\u{2212}22.0 .. \u{2212}8.0 %"
        );
        assert_eq!(
            change_interval(-0.04, f64::INFINITY),
            "\u{2212}4.0 % .. any rise"
        );
        assert_eq!(change_interval(-1.0, 0.05), "any drop .. +5.0 %");
    }

    #[test]
    fn a_brief_share_is_whole_from_ten_percent_and_never_rounds_up_to_all() {
        assert_eq!(pct_brief(0.38), "38 %");
        assert_eq!(pct_brief(0.045), "4.5 %");
        assert_eq!(pct_brief(0.9994), "99.9 %");
        assert_eq!(pct_brief(0.996), "99.6 %");
        assert_eq!(pct_brief(0.9996), "100 %");
        assert_eq!(pct_brief(0.9949), "99 %");
        assert_eq!(pct_brief(0.0), "0.0 %");
        assert_eq!(pct_brief(f64::NAN), "-");
        // A ratio past all is said as it is, never capped at 100 %.
        assert_eq!(pct_brief(1.3), "130 %");
        assert_eq!(pct_brief(1.0), "100 %");
    }

    #[test]
    fn bytes_in_binary_units_to_one_decimal_whole_when_exact() {
        assert_eq!(bytes(0.0), "0 B");
        assert_eq!(bytes(512.0), "512 B");
        assert_eq!(bytes(1023.4), "1023 B");
        assert_eq!(bytes(1023.6), "1.0 KiB");
        assert_eq!(bytes(1024.0), "1 KiB");
        assert_eq!(bytes(1536.0), "1.5 KiB");
        assert_eq!(bytes(22_858_752.0), "21.8 MiB");
        assert_eq!(bytes((16u64 << 20) as f64), "16 MiB");
        assert_eq!(bytes((64u64 << 10) as f64), "64 KiB");
        assert_eq!(bytes(3.2 * (1u64 << 30) as f64), "3.2 GiB");
        // Rounding that reaches 1 024 of a unit is written in the next.
        assert_eq!(bytes(1023.96 * 1024.0), "1.0 MiB");
        assert_eq!(bytes(1023.9 * 1024.0), "1023.9 KiB");
        assert_eq!(bytes((1u64 << 40) as f64), "1 TiB");
        assert_eq!(bytes(-1536.0), "-1.5 KiB");
        assert_eq!(bytes(f64::NAN), "-");
        assert_eq!(bytes(f64::INFINITY), "-");
    }
}
