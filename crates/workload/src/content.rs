//! The bytes a set's files hold: printable text drawn from the set's seed and the file's
//! path, so that a file can be written in chunks by `write` and its start recomputed by
//! `owned` (which checks that an unmarked set is one webscope wrote).

use crate::rng::Rng;

/// How much of a file `head` gives: what `owned` reads of each file of an unmarked set.
pub(crate) const HEAD: u64 = 4096;

/// The first [`HEAD`] bytes (or fewer, for a smaller file) that `write` puts in the file at
/// `path` of a set made from `seed`.
pub(crate) fn head(seed: u64, path: &str, size: u64) -> Vec<u8> {
    let mut bytes = vec![0u8; size.min(HEAD) as usize];
    // One chunk of `write`'s 64 KiB ones begins the file; `fill` of its start is its start.
    fill(&mut Rng::for_stream(seed, path), &mut bytes);
    bytes
}

/// Fills `buf` with printable text (64 symbols, a newline every 64 bytes): readable in a
/// pager, never mistaken for a compressed format, one 64-bit draw per 8 bytes.
pub(crate) fn fill(rng: &mut Rng, buf: &mut [u8]) {
    const SYMBOLS: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for chunk in buf.chunks_mut(8) {
        let mut bits = rng.next_u64();
        for byte in chunk.iter_mut() {
            *byte = SYMBOLS[(bits & 63) as usize];
            bits >>= 6;
        }
    }
    for byte in buf.iter_mut().skip(63).step_by(64) {
        *byte = b'\n';
    }
}
