//! Order-preserving ("memcomparable") key encoding: `table_id, index_id, key columns…`.
//!
//! Invariants:
//! 1. For values `a`, `b` of one column type, `encode(a) < encode(b)` bytewise iff `a < b`,
//!    with NULL before every value; a sequence of columns compares lexicographically (every
//!    column encoding is prefix-free), so composite keys sort like tuples.
//! 2. Integers (SMALLINT…BIGINT, DATE, TIMESTAMP): a tag byte, then big-endian with the sign
//!    bit flipped; DOUBLE: the IEEE sign trick (`-inf < … < 0 < … < +inf < NaN`: values hold
//!    no `-0.0` and only the one positive NaN, whose flipped bits are the largest); DECIMAL:
//!    16-byte big-endian unscaled value, sign bit flipped (one scale per column); TEXT/BYTES:
//!    `00 → 00 FF`, terminator `00 01`.
//! 3. [`decode_column`] reads back exactly what [`encode_value`] wrote and never panics on
//!    other bytes (a malformed key is an error).
//! 4. Table 0 is the system catalog: no table's keys share a prefix with it or each other.

use std::borrow::Cow;

use crate::types::{ColumnType, Value};

/// Tag of a NULL column value (sorts first).
const NULL_TAG: u8 = 0x00;
/// Tag of a present column value.
const VALUE_TAG: u8 = 0x01;

/// Appends the 8-byte prefix of `table_id`'s index `index_id`.
pub fn encode_prefix(out: &mut Vec<u8>, table_id: u32, index_id: u32) {
    out.extend_from_slice(&table_id.to_be_bytes());
    out.extend_from_slice(&index_id.to_be_bytes());
}

/// Bytes of an index's key prefix (table id, index id): what every key of one index (of one
/// column of a columnar table) starts with.
pub const PREFIX_LEN: usize = 8;

/// The prefix of an index as a vector.
pub fn prefix(table_id: u32, index_id: u32) -> Vec<u8> {
    let mut v = Vec::with_capacity(8);
    encode_prefix(&mut v, table_id, index_id);
    v
}

/// The smallest key after every key starting with `p` (`None`: no such key).
pub fn prefix_successor(p: &[u8]) -> Option<Vec<u8>> {
    let mut e = p.to_vec();
    while let Some(last) = e.pop() {
        if last < 0xff {
            e.push(last + 1);
            return Some(e);
        }
    }
    None
}

fn escaped(out: &mut Vec<u8>, b: &[u8]) {
    let mut rest = b;
    while let Some(p) = memchr::memchr(0, rest) {
        out.extend_from_slice(&rest[..p]);
        out.extend_from_slice(&[0x00, 0xff]);
        rest = &rest[p + 1..];
    }
    out.extend_from_slice(rest);
    out.extend_from_slice(&[0x00, 0x01]);
}

/// Appends the order-preserving encoding of one column value.
pub fn encode_value(out: &mut Vec<u8>, v: &Value<'_>) {
    match v {
        Value::Null => out.push(NULL_TAG),
        Value::Int(i) => {
            out.push(VALUE_TAG);
            out.extend_from_slice(&((*i as u64) ^ (1 << 63)).to_be_bytes());
        }
        Value::Double(d) => {
            out.push(VALUE_TAG);
            let bits = d.to_bits();
            let k = if bits >> 63 == 1 {
                !bits
            } else {
                bits ^ (1 << 63)
            };
            out.extend_from_slice(&k.to_be_bytes());
        }
        Value::Decimal(x) => {
            out.push(VALUE_TAG);
            out.extend_from_slice(&((*x as u128) ^ (1 << 127)).to_be_bytes());
        }
        Value::Bool(b) => {
            out.push(VALUE_TAG);
            out.push(u8::from(*b));
        }
        Value::Text(s) => {
            out.push(VALUE_TAG);
            escaped(out, s.as_bytes());
        }
        Value::Bytes(b) => {
            out.push(VALUE_TAG);
            escaped(out, b);
        }
        Value::Date(d) => {
            out.push(VALUE_TAG);
            out.extend_from_slice(&((*d as u32) ^ (1 << 31)).to_be_bytes());
        }
        Value::Timestamp(t) => {
            out.push(VALUE_TAG);
            out.extend_from_slice(&((*t as u64) ^ (1 << 63)).to_be_bytes());
        }
    }
}

/// A key that does not decode under its schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MalformedKey;

fn take<'a>(b: &mut &'a [u8], n: usize) -> Result<&'a [u8], MalformedKey> {
    if b.len() < n {
        return Err(MalformedKey);
    }
    let (h, t) = b.split_at(n);
    *b = t;
    Ok(h)
}

fn unescape(b: &mut &[u8]) -> Result<Vec<u8>, MalformedKey> {
    let mut out = Vec::new();
    loop {
        let p = memchr::memchr(0, b).ok_or(MalformedKey)?;
        out.extend_from_slice(&b[..p]);
        match b.get(p + 1) {
            Some(0xff) => {
                out.push(0);
                *b = &b[p + 2..];
            }
            Some(0x01) => {
                *b = &b[p + 2..];
                return Ok(out);
            }
            _ => return Err(MalformedKey),
        }
    }
}

/// Reads one column of type `ty` from the front of `b`, advancing it.
pub fn decode_column(b: &mut &[u8], ty: &ColumnType) -> Result<Value<'static>, MalformedKey> {
    let tag = take(b, 1)?[0];
    if tag == NULL_TAG {
        return Ok(Value::Null);
    }
    if tag != VALUE_TAG {
        return Err(MalformedKey);
    }
    let u64_of = |s: &[u8]| u64::from_be_bytes(s.try_into().unwrap_or([0; 8]));
    Ok(match ty {
        ColumnType::SmallInt | ColumnType::Int | ColumnType::BigInt => {
            Value::Int((u64_of(take(b, 8)?) ^ (1 << 63)) as i64)
        }
        ColumnType::Timestamp => Value::Timestamp((u64_of(take(b, 8)?) ^ (1 << 63)) as i64),
        ColumnType::Double => {
            let k = u64_of(take(b, 8)?);
            let bits = if k >> 63 == 1 { k ^ (1 << 63) } else { !k };
            Value::Double(f64::from_bits(bits))
        }
        ColumnType::Decimal { .. } => {
            let s = take(b, 16)?;
            let k = u128::from_be_bytes(s.try_into().map_err(|_| MalformedKey)?);
            Value::Decimal((k ^ (1 << 127)) as i128)
        }
        ColumnType::Bool => Value::Bool(take(b, 1)?[0] != 0),
        ColumnType::Text { .. } => {
            let v = unescape(b)?;
            Value::Text(Cow::Owned(String::from_utf8(v).map_err(|_| MalformedKey)?))
        }
        ColumnType::Bytes => Value::Bytes(Cow::Owned(unescape(b)?)),
        ColumnType::Date => {
            let s = take(b, 4)?;
            let k = u32::from_be_bytes(s.try_into().map_err(|_| MalformedKey)?);
            Value::Date((k ^ (1 << 31)) as i32)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_escapes_round_trip() {
        let v = Value::Bytes(Cow::Borrowed(b"a\0b\0\0"));
        let mut out = Vec::new();
        encode_value(&mut out, &v);
        let mut s = out.as_slice();
        assert_eq!(decode_column(&mut s, &ColumnType::Bytes).unwrap(), v);
        assert!(s.is_empty());
        assert!(decode_column(&mut &[1u8, 0, 2][..], &ColumnType::Bytes).is_err());
    }
}
