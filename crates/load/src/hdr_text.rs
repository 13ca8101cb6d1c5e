//! A histogram back from the base64 text that a report (`--segment`) or an interval log
//! (`--hlog`) holds, with every size the text claims checked against what it can hold.
//!
//! The `hdrhistogram` crate's deserializer believes the V2 header: a payload length of
//! 2^31 - 1 bytes makes it allocate 2 GiB before it finds the text ends, and a compressed
//! histogram is inflated as far as its (inflated) header says. A merged file comes from other
//! hosts, so here the text is read first: the compressed length against the bytes the text
//! decodes to, the histogram's shape (its counters) against a bound, the payload length
//! against what that shape can need and what the bytes hold, the inflation through `take()`;
//! only then does the crate's deserializer see the bytes. Last, the counts must add up
//! without overflow, or the histogram's count is a saturated lie (the crate adds saturating).
//!
//! Not here: which file and line the text came from (the callers say it).

use std::borrow::Cow;
use std::io::Read;

use base64::Engine as _;
use flate2::read::ZlibDecoder;
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;

/// The V2 header: cookie, payload length, normalizing offset, significant digits (u32 each),
/// lowest and highest trackable values (u64 each), integer-to-double ratio (f64).
const V2_HEADER: usize = 4 * 4 + 8 * 3;
/// The cookies of the V2 format, plain and zlib-compressed (HdrHistogram's own constants:
/// a base, and 0x10 for the word size).
const V2_COOKIE: u32 = 0x1c84_9303 | 0x10;
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9304 | 0x10;
/// Bytes one counter takes at most in a V2 payload (a LEB128 varint of 64 bits).
const MAX_VARINT: usize = 9;
/// Counters a histogram read here may have (8 MiB of u64): three significant digits over the
/// whole u64 range, what the load generator records, need 55 296; four digits need 425 984.
pub(crate) const MAX_COUNTERS: usize = 1 << 20;

/// One histogram from its text; the error says what is wrong with it in one clause.
pub(crate) fn decode(text: &str) -> Result<Histogram<u64>, String> {
    // The decoded bytes are at most 3/4 of the text, which is already in memory.
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| format!("its histogram is not base64 ({e})"))?;
    let v2: Cow<[u8]> = match be_u32(&bytes, 0) {
        Some(V2_COOKIE) => Cow::Borrowed(&bytes),
        Some(V2_COMPRESSED_COOKIE) => Cow::Owned(inflate(&bytes)?),
        _ => return Err("its histogram is not in HdrHistogram's V2 format".into()),
    };
    let payload = allowed_payload(&v2)?;
    let held = v2.len() - V2_HEADER;
    if payload > held {
        return Err(format!(
            "its histogram claims a payload of {payload} bytes but holds {held}"
        ));
    }
    let histogram: Histogram<u64> = Deserializer::new()
        .deserialize(&mut &v2[..V2_HEADER + payload])
        .map_err(|e| format!("its histogram cannot be read ({e})"))?;
    counted(&histogram)?;
    Ok(histogram)
}

/// Adds `more` into `sum`, refusing a total past u64 (the crate would saturate it).
pub(crate) fn add(sum: &mut Histogram<u64>, more: &Histogram<u64>) -> Result<(), String> {
    if sum.len().checked_add(more.len()).is_none() {
        return Err(format!(
            "the counts add up past {} ({} + {})",
            u64::MAX,
            sum.len(),
            more.len()
        ));
    }
    // `sum` auto-resizes: adding cannot fail.
    let _ = sum.add(more);
    Ok(())
}

/// The V2 histogram inside a compressed one, inflated no further than its shape can need.
fn inflate(bytes: &[u8]) -> Result<Vec<u8>, String> {
    let held = bytes.len().saturating_sub(8);
    let claimed = be_u32(bytes, 4).unwrap_or(0) as usize;
    if claimed > held {
        return Err(format!(
            "its histogram claims a compressed payload of {claimed} bytes but holds {held}"
        ));
    }
    let mut zlib = ZlibDecoder::new(&bytes[8..8 + claimed]);
    let mut out = vec![0; V2_HEADER];
    zlib.read_exact(&mut out)
        .map_err(|e| format!("its compressed histogram does not inflate ({e})"))?;
    let payload = allowed_payload(&out)?;
    zlib.take(payload as u64)
        .read_to_end(&mut out)
        .map_err(|e| format!("its compressed histogram does not inflate ({e})"))?;
    Ok(out)
}

/// The payload length a V2 header claims, once its shape is within [`MAX_COUNTERS`] and the
/// claim within what that shape can need.
fn allowed_payload(v2: &[u8]) -> Result<usize, String> {
    let (Some(V2_COOKIE), Some(payload), Some(digits), Some(low), Some(high)) = (
        be_u32(v2, 0),
        be_u32(v2, 4),
        be_u32(v2, 12),
        be_u64(v2, 16),
        be_u64(v2, 24),
    ) else {
        return Err("its histogram's header is cut short or not V2".into());
    };
    let digits = u8::try_from(digits).unwrap_or(u8::MAX);
    // A one-byte counter per value: the shape's size, at an eighth of the u64 histogram's.
    let shape = Histogram::<u8>::new_with_bounds(low, high, digits).map_err(|_| {
        format!("its histogram's bounds are impossible ({low} to {high}, {digits} digits)")
    })?;
    let counters = shape.distinct_values();
    if counters > MAX_COUNTERS {
        return Err(format!(
            "its histogram needs {counters} counters ({low} to {high}, {digits} digits), more than the {MAX_COUNTERS} allowed"
        ));
    }
    let payload = payload as usize;
    if payload > counters * MAX_VARINT {
        return Err(format!(
            "its histogram claims a payload of {payload} bytes, more than its {counters} counters can take"
        ));
    }
    Ok(payload)
}

/// Checks that the counts add up within u64.
fn counted(histogram: &Histogram<u64>) -> Result<(), String> {
    let mut total = 0u64;
    for value in histogram.iter_recorded() {
        total = total.checked_add(value.count_at_value()).ok_or_else(|| {
            format!(
                "its histogram's counts add up past {} (a count of {} at {})",
                u64::MAX,
                value.count_at_value(),
                value.value_iterated_to()
            )
        })?;
    }
    Ok(())
}

fn be_u32(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

fn be_u64(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_be_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use flate2::write::ZlibEncoder;
    use hdrhistogram::serialization::{Serializer, V2DeflateSerializer, V2Serializer};
    use std::io::Write;

    /// A V2 header with these fields.
    pub(crate) fn header(payload: u32, digits: u32, low: u64, high: u64) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&V2_COOKIE.to_be_bytes());
        out.extend_from_slice(&payload.to_be_bytes());
        out.extend_from_slice(&0u32.to_be_bytes());
        out.extend_from_slice(&digits.to_be_bytes());
        out.extend_from_slice(&low.to_be_bytes());
        out.extend_from_slice(&high.to_be_bytes());
        out.extend_from_slice(&1f64.to_be_bytes());
        out
    }

    /// `v2` compressed as the V2 format does it, base64-encoded.
    pub(crate) fn compressed(v2: &[u8]) -> String {
        let mut zlib = ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        zlib.write_all(v2).unwrap();
        let deflated = zlib.finish().unwrap();
        let mut out = V2_COMPRESSED_COOKIE.to_be_bytes().to_vec();
        out.extend_from_slice(&(deflated.len() as u32).to_be_bytes());
        out.extend_from_slice(&deflated);
        base64::engine::general_purpose::STANDARD.encode(out)
    }

    /// A histogram of three counts of `count` each, as the V2 format writes it (uncompressed).
    pub(crate) fn overflowing(count: i64) -> Vec<u8> {
        // Zig-zag varints: `count` at index 1000, a run of zeros, `count` twice.
        let mut payload = Vec::new();
        for n in [-1000i64, count, -5, count, count] {
            let mut zz = ((n << 1) ^ (n >> 63)) as u64;
            while zz >= 0x80 {
                payload.push((zz as u8) | 0x80);
                zz >>= 7;
            }
            payload.push(zz as u8);
        }
        let mut v2 = header(payload.len() as u32, 3, 1, 100_000_000);
        v2.extend_from_slice(&payload);
        v2
    }

    fn text(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    #[test]
    fn what_the_load_generator_writes_reads_back() {
        let mut h = crate::recorder::histogram();
        for v in [1_000u64, 2_000, 3_000_000_000_000] {
            h.record(v).unwrap();
        }
        let mut bytes = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&h, &mut bytes)
            .unwrap();
        assert_eq!(decode(&text(&bytes)).unwrap(), h);
        bytes.clear();
        V2Serializer::new().serialize(&h, &mut bytes).unwrap();
        assert_eq!(decode(&text(&bytes)).unwrap(), h);
    }

    #[test]
    fn a_claimed_payload_past_what_the_text_holds_is_refused() {
        // 2^31 - 1 bytes claimed: more than the shape can need.
        let err = decode(&text(&header(i32::MAX as u32, 3, 1, 100_000_000)))
            .err()
            .unwrap();
        assert!(err.contains("more than its"), "{err}");
        // 1 000 bytes claimed, within the shape, but 0 held.
        let err = decode(&text(&header(1000, 3, 1, 100_000_000)))
            .err()
            .unwrap();
        assert!(
            err.contains("claims a payload of 1000 bytes but holds 0"),
            "{err}"
        );
        // A compressed length past the text.
        let mut bytes = V2_COMPRESSED_COOKIE.to_be_bytes().to_vec();
        bytes.extend_from_slice(&(i32::MAX as u32).to_be_bytes());
        bytes.extend_from_slice(&[0x78, 0x9c, 0, 0]);
        let err = decode(&text(&bytes)).err().unwrap();
        assert!(err.contains("holds 4"), "{err}");
    }

    #[test]
    fn a_shape_past_the_bound_is_refused_before_its_counters_exist() {
        let err = decode(&text(&header(0, 5, 1, u64::MAX))).err().unwrap();
        assert!(err.contains("counters"), "{err}");
        let err = decode(&text(&header(0, 9, 1, 1000))).err().unwrap();
        assert!(err.contains("impossible"), "{err}");
    }

    #[test]
    fn a_zlib_bomb_is_inflated_no_further_than_its_shape_allows() {
        // A 16 MiB payload of zeros claims as much; the shape allows 9 bytes a counter.
        let mut v2 = header(16 << 20, 3, 1, 100_000_000);
        v2.resize(v2.len() + (16 << 20), 0);
        let bomb = compressed(&v2);
        assert!(bomb.len() < 200_000, "{}", bomb.len());
        let err = decode(&bomb).err().unwrap();
        assert!(err.contains("more than its"), "{err}");
        // Claiming the most the shape allows (9 bytes a counter), over 16 MiB of zeros: the
        // inflation stops there (zeros are counts of 0: an empty histogram).
        let counters = Histogram::<u8>::new_with_bounds(1, 100_000_000, 3)
            .unwrap()
            .distinct_values();
        let mut v2 = header((counters * MAX_VARINT) as u32, 3, 1, 100_000_000);
        v2.resize(v2.len() + (16 << 20), 0);
        assert!(decode(&compressed(&v2)).unwrap().is_empty());
    }

    #[test]
    fn counts_that_add_up_past_u64_are_refused() {
        let err = decode(&text(&overflowing(i64::MAX))).err().unwrap();
        assert!(err.contains("add up past"), "{err}");
        let one = decode(&text(&overflowing(1 << 61))).unwrap();
        assert_eq!(one.len(), 3 << 61);
        let mut sum = one.clone();
        add(&mut sum, &one).unwrap();
        let err = add(&mut sum, &one).err().unwrap();
        assert!(err.contains("add up past"), "{err}");
        assert_eq!(sum.len(), 3 << 62);
    }
}
