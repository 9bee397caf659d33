//! Little-endian fixed-width and LEB128 varint encodings, as used by LevelDB and RocksDB.
//!
//! Decoders never panic: they return `None` on truncated or over-long input.

/// Appends `v` as 4 little-endian bytes.
#[inline]
pub fn put_fixed32(dst: &mut Vec<u8>, v: u32) {
    dst.extend_from_slice(&v.to_le_bytes());
}

/// Appends `v` as 8 little-endian bytes.
#[inline]
pub fn put_fixed64(dst: &mut Vec<u8>, v: u64) {
    dst.extend_from_slice(&v.to_le_bytes());
}

/// Reads 4 little-endian bytes at the start of `src`.
#[inline]
pub fn decode_fixed32(src: &[u8]) -> Option<u32> {
    Some(u32::from_le_bytes(src.get(..4)?.try_into().ok()?))
}

/// Reads 8 little-endian bytes at the start of `src`.
#[inline]
pub fn decode_fixed64(src: &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(src.get(..8)?.try_into().ok()?))
}

/// Appends `v` as a varint (at most 5 bytes).
#[inline]
pub fn put_varint32(dst: &mut Vec<u8>, v: u32) {
    put_varint64(dst, u64::from(v));
}

/// Appends `v` as a varint (at most 10 bytes).
#[inline]
pub fn put_varint64(dst: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        dst.push((v as u8) | 0x80);
        v >>= 7;
    }
    dst.push(v as u8);
}

/// Appends a signed value zig-zag encoded as a varint (RocksDB's `PutVarsignedint64`; the
/// reader side is `decode_varsigned64`).
pub fn put_varsigned64(dst: &mut Vec<u8>, v: i64) {
    put_varint64(dst, ((v << 1) ^ (v >> 63)) as u64);
}

/// Number of bytes `put_varint64(v)` appends.
#[cfg(test)]
pub fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// Decodes a varint32 from the start of `src`; returns the value and the bytes consumed.
#[inline]
pub fn decode_varint32(src: &[u8]) -> Option<(u32, usize)> {
    // Fast path: one byte.
    if let Some(&b) = src.first() {
        if b < 0x80 {
            return Some((u32::from(b), 1));
        }
    }
    let (v, n) = decode_varint_bits(src, 35)?;
    u32::try_from(v).ok().map(|v| (v, n))
}

/// Decodes a varint64 from the start of `src`; returns the value and the bytes consumed.
#[inline]
pub fn decode_varint64(src: &[u8]) -> Option<(u64, usize)> {
    decode_varint_bits(src, 70)
}

/// Decodes a zig-zag varint (RocksDB's `GetVarsignedint64`).
#[inline]
pub fn decode_varsigned64(src: &[u8]) -> Option<(i64, usize)> {
    let (u, n) = decode_varint64(src)?;
    Some((((u >> 1) as i64) ^ -((u & 1) as i64), n))
}

#[inline]
fn decode_varint_bits(src: &[u8], max_shift: u32) -> Option<(u64, usize)> {
    let mut result: u64 = 0;
    let mut shift = 0u32;
    for (i, &b) in src.iter().enumerate() {
        if shift >= max_shift || (shift == 63 && b > 1) {
            return None;
        }
        result |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some((result, i + 1));
        }
        shift += 7;
    }
    None
}

/// A cursor over a byte slice that decodes values front to back.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    /// Starts reading at the beginning of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf }
    }
    /// Bytes not yet consumed.
    pub fn remaining(&self) -> &'a [u8] {
        self.buf
    }
    /// Reads a varint32.
    pub fn varint32(&mut self) -> Option<u32> {
        let (v, n) = decode_varint32(self.buf)?;
        self.buf = &self.buf[n..];
        Some(v)
    }
    /// Reads a varint64.
    pub fn varint64(&mut self) -> Option<u64> {
        let (v, n) = decode_varint64(self.buf)?;
        self.buf = &self.buf[n..];
        Some(v)
    }
    /// Reads a zig-zag varint.
    pub fn varsigned64(&mut self) -> Option<i64> {
        let (v, n) = decode_varsigned64(self.buf)?;
        self.buf = &self.buf[n..];
        Some(v)
    }
    /// Reads exactly `n` bytes.
    pub fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.buf.len() < n {
            return None;
        }
        let (a, b) = self.buf.split_at(n);
        self.buf = b;
        Some(a)
    }
    /// Reads a varint32 length followed by that many bytes.
    pub fn length_prefixed(&mut self) -> Option<&'a [u8]> {
        let n = self.varint32()? as usize;
        self.bytes(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn varint64_roundtrip(v: u64) {
            let mut b = Vec::new();
            put_varint64(&mut b, v);
            prop_assert_eq!(b.len(), varint_len(v));
            prop_assert_eq!(decode_varint64(&b), Some((v, b.len())));
            // Any truncation is detected.
            prop_assert_eq!(decode_varint64(&b[..b.len() - 1]), None);
        }

        #[test]
        fn varsigned_roundtrip(v: i64) {
            let mut b = Vec::new();
            put_varsigned64(&mut b, v);
            prop_assert_eq!(decode_varsigned64(&b), Some((v, b.len())));
        }

        #[test]
        fn varint_decoder_never_panics(b: Vec<u8>) {
            let _ = decode_varint32(&b);
            let _ = decode_varint64(&b);
        }
    }

    #[test]
    fn varint32_rejects_values_over_32_bits() {
        let mut b = Vec::new();
        put_varint64(&mut b, 1 << 32);
        assert_eq!(decode_varint32(&b), None);
        let over_long = [0x80u8; 11];
        assert_eq!(decode_varint64(&over_long), None);
    }
}
