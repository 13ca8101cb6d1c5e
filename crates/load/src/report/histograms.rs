//! A segment's whole histograms in its report (`--segment I/N`), so that `webscope merge` adds
//! them exactly instead of averaging percentiles: per class, latency, uncorrected latency, time
//! to first byte, connect and handshake time, ages of the unfinished, V2-compressed and base64-encoded.
//!
//! Here, below the report, because both the report (which carries them) and the merge (which
//! reads them back) need the type; not for the interval log's histograms (`hlog`).

use base64::Engine as _;
use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::recorder::Recorder;

/// One class's whole histograms, encoded.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClassHistograms {
    /// Latency (corrected for coordinated omission in open loop), ns.
    pub latency: String,
    /// Open loop: latency from the actual send, ns.
    pub uncorrected: String,
    /// Time to first byte, ns.
    pub ttfb: String,
    /// Connect time, ns.
    pub connect: String,
    /// https: TLS handshake time, ns.
    #[serde(default)]
    pub handshake: String,
    /// Ages of the requests unanswered at the run's end, ns.
    #[serde(default)]
    pub unfinished: String,
}

pub(crate) fn encode_one(serializer: &mut V2DeflateSerializer, h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    // Serialising into a Vec cannot fail for a histogram the recorder made.
    let _ = serializer.serialize(h, &mut bytes);
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// One histogram back from its text.
pub(crate) fn decode(text: &str) -> Result<Histogram<u64>, String> {
    // Checked before it is believed: a segment's report comes from another host.
    let mut h = crate::hdr_text::decode(text)?;
    h.auto(true);
    Ok(h)
}

/// A segment's histograms, per class, for its report.
pub(crate) fn encode(totals: &Recorder) -> Vec<ClassHistograms> {
    let mut serializer = V2DeflateSerializer::new();
    totals
        .classes
        .iter()
        .map(|c| ClassHistograms {
            latency: encode_one(&mut serializer, &c.latency),
            uncorrected: encode_one(&mut serializer, &c.uncorrected),
            ttfb: encode_one(&mut serializer, &c.ttfb),
            connect: encode_one(&mut serializer, &c.connect),
            handshake: encode_one(&mut serializer, &c.handshake),
            unfinished: encode_one(&mut serializer, &c.unfinished),
        })
        .collect()
}
