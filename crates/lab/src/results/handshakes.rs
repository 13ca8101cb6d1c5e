//! The TLS handshakes a run's clients made (over HTTPS, HTTP/2 or HTTP/3's QUIC), as the
//! users experiment's steps and the loss comparison's rows keep them: how many, full or
//! resumed, and their mean time as the load generator timed it. One type, so that the two
//! pages say the same thing the same way.

use serde::{Deserialize, Serialize};
use webscope_load::Report;

/// A run's handshakes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Handshakes {
    /// Full handshakes (the server sent its certificate).
    pub full: u64,
    /// Resumed ones (a ticket or a session ID).
    pub resumed: u64,
    /// Their mean time, from the client's first flight to the handshake's end, ms.
    pub mean_ms: f64,
}

impl Handshakes {
    /// From a load report: None for a run without TLS, or whose handshakes all failed.
    pub fn of(load: &Report) -> Option<Handshakes> {
        load.tls.as_ref().map(|t| Handshakes {
            full: t.full,
            resumed: t.resumed,
            mean_ms: t.handshake_us.mean / 1000.0,
        })
    }

    /// The cells a page shows: "4/0" (full/resumed) and the mean, "12.3".
    pub fn cells(handshakes: Option<&Handshakes>) -> [String; 2] {
        match handshakes {
            Some(h) => [
                format!("{}/{}", h.full, h.resumed),
                format!("{:.1}", h.mean_ms),
            ],
            None => ["-".into(), "-".into()],
        }
    }
}

/// The two columns' headings, beside [`Handshakes::cells`].
pub const HEADINGS: [&str; 2] = ["handshakes full/resumed", "handshake mean (ms)"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_over_tls_has_its_handshakes_and_one_without_none() {
        let mut load = Report::default();
        assert_eq!(Handshakes::of(&load), None);
        assert_eq!(Handshakes::cells(None), ["-", "-"]);
        load.tls = Some(webscope_load::TlsReport {
            full: 4,
            resumed: 2,
            ..Default::default()
        });
        load.tls.as_mut().unwrap().handshake_us.mean = 12_345.0;
        let h = Handshakes::of(&load).unwrap();
        assert_eq!((h.full, h.resumed), (4, 2));
        assert_eq!(Handshakes::cells(Some(&h)), ["4/2", "12.3"]);
    }
}
