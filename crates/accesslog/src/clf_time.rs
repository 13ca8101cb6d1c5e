//! The Common Log Format timestamp, `10/Oct/2000:13:55:36 -0700`.
//!
//! Written by hand rather than with chrono's `parse_from_str`: the layout is fixed (Apache's
//! and nginx's `%t` / `$time_local` never vary it), the parse is on every line of logs that
//! run to gigabytes, and a fixed-position read is both exact and several times faster than
//! a format-string interpreter.

const MONTHS: [&[u8; 3]; 12] = [
    b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec",
];

/// The largest time-zone offset, ±14:00 (Kiribati's Line Islands), in minutes.
const MAX_ZONE_MINUTES: i64 = 14 * 60;

/// Seconds since the Unix epoch (UTC) of a CLF timestamp without its brackets.
#[cfg(test)]
pub(crate) fn parse(text: &str) -> Option<i64> {
    parse_zoned(text).map(|(secs, _)| secs)
}

/// [`parse`], with the logged zone's offset east of UTC in seconds (`-0700` is -25 200): the
/// day the log itself names is that of `secs + offset`.
pub(crate) fn parse_zoned(text: &str) -> Option<(i64, i32)> {
    let b = text.as_bytes();
    // dd/Mon/yyyy:HH:MM:SS +zzzz
    if b.len() != 26 || b[2] != b'/' || b[6] != b'/' || b[11] != b':' || b[14] != b':' {
        return None;
    }
    if b[17] != b':' || b[20] != b' ' {
        return None;
    }
    let day = digits(&b[0..2])?;
    let month = MONTHS.iter().position(|m| m[..] == b[3..6])? as i64 + 1;
    let year = digits(&b[7..11])?;
    let (hour, minute, second) = (
        digits(&b[12..14])?,
        digits(&b[15..17])?,
        digits(&b[18..20])?,
    );
    let sign = match b[21] {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let (zone_hours, zone_minutes) = (digits(&b[22..24])?, digits(&b[24..26])?);
    // Real zones run from -12:00 to +14:00; `+9999` would shift the line by four days.
    if zone_minutes > 59 || zone_hours * 60 + zone_minutes > MAX_ZONE_MINUTES {
        return None;
    }
    let offset = sign * (zone_hours * 3600 + zone_minutes * 60);
    // A leap second (:60) is kept as the next second's start, as the clock that wrote it did.
    if !(1..=days_in_month(year, month)).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let local = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second;
    Some((local - offset, offset as i32))
}

fn digits(b: &[u8]) -> Option<i64> {
    b.iter().try_fold(0i64, |acc, &c| {
        c.is_ascii_digit().then(|| acc * 10 + i64::from(c - b'0'))
    })
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apache_example_with_offset() {
        // Apache's documentation example: 13:55:36 at -0700 is 20:55:36 UTC.
        assert_eq!(parse("10/Oct/2000:13:55:36 -0700"), Some(971_211_336));
        assert_eq!(parse("10/Oct/2000:20:55:36 +0000"), Some(971_211_336));
        assert_eq!(parse("11/Oct/2000:02:25:36 +0530"), Some(971_211_336));
        // The widest real offsets.
        assert_eq!(parse("11/Oct/2000:10:55:36 +1400"), Some(971_211_336));
        assert_eq!(parse("10/Oct/2000:06:55:36 -1400"), Some(971_211_336));
    }

    #[test]
    fn agrees_with_the_servers_own_formatter() {
        let mut secs = 0i64;
        while secs < 4_102_444_800 {
            let mut out = Vec::new();
            webscope_http::date::write_clf_date(&mut out, secs);
            let text = String::from_utf8(out).unwrap();
            assert_eq!(parse(&text), Some(secs), "{text}");
            secs += 86_400 * 13 + 3_607;
        }
    }

    #[test]
    fn rejects_junk() {
        for bad in [
            "",
            "10/Oct/2000:13:55:36",
            "10/Foo/2000:13:55:36 -0700",
            "31/Feb/2000:13:55:36 -0700",
            "10/Oct/2000:24:55:36 -0700",
            "10/Oct/2000:13:55:36 07000",
            "1O/Oct/2000:13:55:36 -0700",
            "10/Oct/2000:13:55:36 +9999",
            "10/Oct/2000:13:55:36 -1401",
            "10/Oct/2000:13:55:36 +0160",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
