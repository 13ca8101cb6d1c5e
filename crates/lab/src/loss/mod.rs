//! The loss experiment (`lab --experiment protocols --loss 1%,3% --rtt 20ms`): page loads over
//! HTTP/2 and HTTP/3 across a link that delays and drops packets, made by the
//! `webscope-lossylink` crate between two network namespaces (this kernel has no netem). Its runs are the protocols
//! experiment's when `--loss` is given ([`experiment`]); its page is
//! `protocols_loss.rs` of the pages crate.

pub mod experiment;

use std::time::Duration;

/// `--loss` and `--rtt`.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Loss rates, each a chance in [0, 1), as given.
    pub rates: Vec<f64>,
    /// The round-trip time the link adds (half of it each way).
    pub rtt: Duration,
}

/// `--loss`'s rates as one value (a command-line parser takes a `Vec` for a list of values).
#[derive(Debug, Clone, PartialEq)]
pub struct Rates(pub Vec<f64>);

/// Parses `--loss`: per cent values with or without `%`, comma-separated (`1%,3%`).
pub fn parse_rates(text: &str) -> Result<Rates, String> {
    let mut rates = Vec::new();
    for part in text.split(',') {
        let number = part.trim().trim_end_matches('%');
        let pct: f64 = number
            .parse()
            .map_err(|_| format!("--loss takes per cent values such as 1%,3%, not {part:?}"))?;
        if !(0.0..50.0).contains(&pct) {
            return Err(format!("--loss {part}: give a rate from 0% to under 50%"));
        }
        rates.push(pct / 100.0);
    }
    Ok(Rates(rates))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loss_rates_are_per_cent_and_bounded() {
        assert_eq!(parse_rates("1%,3%").unwrap().0, vec![0.01, 0.03]);
        assert_eq!(parse_rates("0, 2.5").unwrap().0, vec![0.0, 0.025]);
        assert!(parse_rates("x%").unwrap_err().contains("per cent"));
        assert!(parse_rates("60%").unwrap_err().contains("under 50%"));
        assert!(parse_rates("-1").is_err());
    }
}
