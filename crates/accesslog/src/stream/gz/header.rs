//! Where a gzip member may start: a cheap test of the header's fixed fields (RFC 1952 §2.3),
//! and for a BGZF member (an `BC` extra field giving its size) the test that another member
//! or the file's end lies where the size says. A candidate that passes is still only a
//! guess: inflating it, and the member before ending exactly there, is what decides.

use std::io;

use super::Source;

/// ID1, ID2 and CM (deflate): the three bytes every member starts with.
pub(super) const MAGIC: [u8; 3] = [0x1f, 0x8b, 0x08];
/// FLG's reserved bits, zero in every header written to the RFC.
const RESERVED_FLAGS: u8 = 0xe0;
const FEXTRA: u8 = 0x04;
/// Bytes read at a candidate: the fixed header, XLEN, and a BGZF subfield (the first one in
/// every BGZF writer); an extra field longer than this is not checked, only allowed.
const PEEK: usize = 10 + 2 + 6;

/// Whether a member plausibly starts at `at`. Read errors say "no": a real member there is
/// then inflated by the thread before, and the error found by it.
pub(super) fn plausible(src: &Source, at: u64) -> bool {
    let mut head = [0u8; PEEK];
    let Ok(n) = src.read_at_most(at, &mut head) else {
        return false;
    };
    let head = &head[..n];
    if n < 10 || head[..3] != MAGIC || head[3] & RESERVED_FLAGS != 0 {
        return false;
    }
    // XFL is 2 or 4 after deflate at its best or fastest, 0 otherwise (gzip, zlib, bgzip,
    // pigz); OS is 0-13 or 255 (unknown).
    let (xfl, os) = (head[8], head[9]);
    if !matches!(xfl, 0 | 2 | 4) || !(os <= 13 || os == 255) {
        return false;
    }
    match bgzf_size(head) {
        Some(size) => next_is_member(src, at + size),
        None => true,
    }
}

/// A BGZF member's total size, from its BC subfield (BSIZE + 1), when the header has one.
pub(super) fn bgzf_size(head: &[u8]) -> Option<u64> {
    if head.len() < PEEK || head[3] & FEXTRA == 0 {
        return None;
    }
    let xlen = u16::from_le_bytes([head[10], head[11]]);
    let sub = &head[12..18];
    let is_bc = xlen >= 6 && sub[..2] == *b"BC" && sub[2..4] == [2, 0];
    is_bc.then(|| u64::from(u16::from_le_bytes([sub[4], sub[5]])) + 1)
}

/// Whether the file ends at `at` or another member's magic bytes are there.
fn next_is_member(src: &Source, at: u64) -> bool {
    if at == src.len {
        return true;
    }
    let mut magic = [0u8; 3];
    matches!(src.read_at_most(at, &mut magic), Ok(3)) && magic == MAGIC
}

/// The first offset in `[from, to)` where the member magic bytes are, reading `buf` at a
/// time (the magic may cross two reads).
pub(super) fn next_magic(
    src: &Source,
    from: u64,
    to: u64,
    buf: &mut [u8],
) -> io::Result<Option<u64>> {
    let mut at = from;
    while at < to {
        let n = src.read_at_most(at, buf)?;
        if n < MAGIC.len() {
            return Ok(None);
        }
        let seen = &buf[..n];
        if let Some(i) = memchr::memmem::find(seen, &MAGIC) {
            let found = at + i as u64;
            return Ok((found < to).then_some(found));
        }
        // The last two bytes may start the magic: read them again.
        at += (n - (MAGIC.len() - 1)) as u64;
    }
    Ok(None)
}
