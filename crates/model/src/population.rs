//! Population lists as the CLI writes them: `20`, `1,5,10`, `1..200` (inclusive), `20..200:20`
//! (a step), or several of these joined by commas.

use crate::Error;

/// The most populations one list may name (a sweep of a million points is a typo).
pub const MAX_POINTS: usize = 100_000;

/// Parses a population list into ascending, distinct values, each at least 1.
pub fn parse_populations(text: &str) -> Result<Vec<u32>, Error> {
    let bad = |why: &str| {
        Error::invalid(format!(
            "population list '{text}': {why} (write e.g. 20, 1,5,10, 1..200 or 20..200:20)"
        ))
    };
    let number = |s: &str| -> Result<u32, Error> {
        let s = s.trim();
        s.parse::<u32>().map_err(|e| match e.kind() {
            std::num::IntErrorKind::PosOverflow => {
                bad(&format!("'{s}' is too large (at most {})", u32::MAX))
            }
            _ => bad(&format!("'{s}' is not a whole number")),
        })
    };
    let mut out = Vec::new();
    for part in text.split(',') {
        let part = part.trim();
        if part.is_empty() {
            return Err(bad("an empty item"));
        }
        match part.split_once("..") {
            None => out.push(number(part)?),
            Some((from, rest)) => {
                let (to, step) = match rest.split_once(':') {
                    Some((to, step)) => (to, number(step)?),
                    None => (rest, 1),
                };
                let (from, to) = (number(from)?, number(to)?);
                if step == 0 {
                    return Err(bad("a step of 0"));
                }
                if from > to {
                    return Err(bad(&format!("{from}..{to} runs backwards")));
                }
                if ((to - from) / step) as usize >= MAX_POINTS {
                    return Err(bad(&format!("more than {MAX_POINTS} points")));
                }
                out.extend((from..=to).step_by(step as usize));
            }
        }
        if out.len() > MAX_POINTS {
            return Err(bad(&format!("more than {MAX_POINTS} points")));
        }
    }
    if out.contains(&0) {
        return Err(bad("population 0 (a closed class needs at least one job)"));
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_ranges_and_steps() {
        assert_eq!(parse_populations("20").unwrap(), vec![20]);
        assert_eq!(parse_populations("10, 1,5").unwrap(), vec![1, 5, 10]);
        assert_eq!(parse_populations("1..4").unwrap(), vec![1, 2, 3, 4]);
        assert_eq!(
            parse_populations("20..100:20").unwrap(),
            vec![20, 40, 60, 80, 100]
        );
        assert_eq!(parse_populations("1..3,2..5:3").unwrap(), vec![1, 2, 3, 5]);
    }

    #[test]
    fn mistakes_say_what_to_write() {
        for (text, why) in [
            ("0..10", "population 0"),
            ("5..1", "backwards"),
            ("1..10:0", "step of 0"),
            ("ten", "'ten' is not"),
            ("1,,2", "empty item"),
            ("1..2000000", "more than"),
            ("-3", "'-3' is not"),
            (
                "1000000000000",
                "'1000000000000' is too large (at most 4294967295)",
            ),
            ("1..99999999999", "is too large"),
        ] {
            let err = parse_populations(text).unwrap_err().to_string();
            assert!(
                err.contains(why) && err.contains("write e.g."),
                "{text}: {err}"
            );
        }
    }
}
