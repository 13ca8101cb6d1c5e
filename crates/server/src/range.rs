//! The `Range` field (RFC 9110 §14.2): one byte range is honoured with 206; several ranges
//! are answered with the whole file (allowed: a server may ignore Range), and syntax it does
//! not understand is ignored the same way.

use webscope_http::request::trim_ows;

/// What to do with a `Range` field for a representation of `size` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RangeAnswer {
    /// Send the whole representation (no, several or unparsable ranges).
    Whole,
    /// Send bytes `start..=end` with 206.
    Part { start: u64, end: u64 },
    /// 416 with `Content-Range: bytes */size`.
    Unsatisfiable,
}

pub(crate) fn answer(range: &[u8], size: u64) -> RangeAnswer {
    let Some(spec) = strip_prefix_ignore_case(range, b"bytes=") else {
        return RangeAnswer::Whole;
    };
    if spec.contains(&b',') {
        return RangeAnswer::Whole;
    }
    let spec = trim_ows(spec);
    let Some(dash) = spec.iter().position(|&b| b == b'-') else {
        return RangeAnswer::Whole;
    };
    let (first, last) = (trim_ows(&spec[..dash]), trim_ows(&spec[dash + 1..]));
    match (number(first), number(last)) {
        // bytes=-N: the last N bytes.
        (None, Some(suffix)) if first.is_empty() => {
            if suffix == 0 || size == 0 {
                RangeAnswer::Unsatisfiable
            } else {
                RangeAnswer::Part {
                    start: size.saturating_sub(suffix),
                    end: size - 1,
                }
            }
        }
        // bytes=A- : from A to the end.
        (Some(start), None) if last.is_empty() => part(start, u64::MAX, size),
        (Some(start), Some(end)) if start <= end => part(start, end, size),
        _ => RangeAnswer::Whole,
    }
}

fn part(start: u64, end: u64, size: u64) -> RangeAnswer {
    if start >= size {
        RangeAnswer::Unsatisfiable
    } else {
        RangeAnswer::Part {
            start,
            end: end.min(size - 1),
        }
    }
}

fn number(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

fn strip_prefix_ignore_case<'a>(value: &'a [u8], prefix: &[u8]) -> Option<&'a [u8]> {
    (value.len() >= prefix.len() && value[..prefix.len()].eq_ignore_ascii_case(prefix))
        .then(|| &value[prefix.len()..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use RangeAnswer::*;

    #[test]
    fn single_ranges() {
        assert_eq!(answer(b"bytes=0-99", 1000), Part { start: 0, end: 99 });
        assert_eq!(
            answer(b"bytes=900-", 1000),
            Part {
                start: 900,
                end: 999
            }
        );
        assert_eq!(
            answer(b"bytes=-100", 1000),
            Part {
                start: 900,
                end: 999
            }
        );
        assert_eq!(answer(b"bytes=-5000", 1000), Part { start: 0, end: 999 });
        assert_eq!(
            answer(b"bytes=10-5000", 1000),
            Part {
                start: 10,
                end: 999
            }
        );
        assert_eq!(answer(b"Bytes= 1-1 ", 2), Part { start: 1, end: 1 });
    }

    #[test]
    fn unsatisfiable() {
        assert_eq!(answer(b"bytes=1000-", 1000), Unsatisfiable);
        assert_eq!(answer(b"bytes=1000-2000", 1000), Unsatisfiable);
        assert_eq!(answer(b"bytes=-0", 1000), Unsatisfiable);
        assert_eq!(answer(b"bytes=0-0", 0), Unsatisfiable);
    }

    #[test]
    fn ignored() {
        for value in [
            &b"bytes=0-1,5-6"[..],
            b"items=0-1",
            b"bytes=5-1",
            b"bytes=a-b",
            b"bytes=",
            b"bytes=-",
        ] {
            assert_eq!(
                answer(value, 1000),
                Whole,
                "{:?}",
                String::from_utf8_lossy(value)
            );
        }
    }
}
