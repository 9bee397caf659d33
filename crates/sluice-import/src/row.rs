//! Row values: `version byte, NULL bitmap (one bit per column), the non-NULL values in column
//! order`. Integers, DECIMAL, DATE and TIMESTAMP as zigzag LEB128 varints, DOUBLE as 8 bytes
//! little-endian, BOOLEAN as one byte, TEXT/BYTES as a varint length and the bytes.
//!
//! Invariant: [`decode_row`] returns exactly the values [`encode_row`] was given, and never
//! panics on other bytes (malformed input is an error).

use std::borrow::Cow;

use crate::keycode::MalformedKey;
use crate::types::{ColumnType, Value};

fn put_varint(out: &mut Vec<u8>, mut v: u128) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub(crate) fn get_varint(b: &mut &[u8]) -> Result<u128, MalformedKey> {
    let mut v: u128 = 0;
    for i in 0..19 {
        let (&c, rest) = b.split_first().ok_or(MalformedKey)?;
        *b = rest;
        v |= u128::from(c & 0x7f) << (7 * i);
        if c < 0x80 {
            return Ok(v);
        }
    }
    Err(MalformedKey)
}

/// `put_varint` for values that fit 64 bits (the same bytes, without 128-bit arithmetic).
#[inline]
pub(crate) fn put_varint64(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[inline]
fn zigzag64(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn zigzag(v: i128) -> u128 {
    ((v << 1) ^ (v >> 127)) as u128
}

fn unzigzag(v: u128) -> i128 {
    ((v >> 1) as i128) ^ -((v & 1) as i128)
}

/// Appends the row value of `values` (one per column) under schema `version`.
pub fn encode_row(out: &mut Vec<u8>, version: u8, values: &[Value<'_>]) {
    out.push(version);
    let start = out.len();
    out.resize(start + values.len().div_ceil(8), 0);
    for (i, v) in values.iter().enumerate() {
        if matches!(v, Value::Null) {
            out[start + i / 8] |= 1 << (i % 8);
        }
    }
    for v in values {
        match v {
            Value::Null => {}
            Value::Int(i) => put_varint64(out, zigzag64(*i)),
            Value::Date(d) => put_varint64(out, zigzag64(i64::from(*d))),
            Value::Timestamp(t) => put_varint64(out, zigzag64(*t)),
            Value::Decimal(d) => put_varint(out, zigzag(*d)),
            Value::Double(d) => out.extend_from_slice(&d.to_le_bytes()),
            Value::Bool(b) => out.push(u8::from(*b)),
            Value::Text(s) => {
                put_varint64(out, s.len() as u64);
                out.extend_from_slice(s.as_bytes());
            }
            Value::Bytes(b) => {
                put_varint64(out, b.len() as u64);
                out.extend_from_slice(b);
            }
        }
    }
}

/// Reads one non-NULL value of type `ty` (as [`encode_row`] wrote it) from the front of `b`.
pub fn decode_value(b: &mut &[u8], ty: &ColumnType) -> Result<Value<'static>, MalformedKey> {
    let int = |b: &mut &[u8]| -> Result<i128, MalformedKey> { Ok(unzigzag(get_varint(b)?)) };
    Ok(match ty {
        ColumnType::SmallInt | ColumnType::Int | ColumnType::BigInt => {
            Value::Int(i64::try_from(int(b)?).map_err(|_| MalformedKey)?)
        }
        ColumnType::Date => Value::Date(i32::try_from(int(b)?).map_err(|_| MalformedKey)?),
        ColumnType::Timestamp => {
            Value::Timestamp(i64::try_from(int(b)?).map_err(|_| MalformedKey)?)
        }
        ColumnType::Decimal { .. } => Value::Decimal(int(b)?),
        ColumnType::Double => {
            if b.len() < 8 {
                return Err(MalformedKey);
            }
            let (h, t) = b.split_at(8);
            *b = t;
            Value::Double(f64::from_le_bytes(h.try_into().map_err(|_| MalformedKey)?))
        }
        ColumnType::Bool => {
            let (&c, t) = b.split_first().ok_or(MalformedKey)?;
            *b = t;
            Value::Bool(c != 0)
        }
        ColumnType::Text { .. } | ColumnType::Bytes => {
            let n = usize::try_from(get_varint(b)?).map_err(|_| MalformedKey)?;
            if b.len() < n {
                return Err(MalformedKey);
            }
            let (h, t) = b.split_at(n);
            *b = t;
            if matches!(ty, ColumnType::Bytes) {
                Value::Bytes(Cow::Owned(h.to_vec()))
            } else {
                Value::Text(Cow::Owned(
                    String::from_utf8(h.to_vec()).map_err(|_| MalformedKey)?,
                ))
            }
        }
    })
}

/// Length of the varint at the front of `b` (at most 19 bytes, as [`get_varint`] reads).
#[inline]
fn varint_len(b: &[u8]) -> Result<usize, MalformedKey> {
    // Eight bytes at once: the first with its high bit clear ends the varint.
    if let Some(head) = b.first_chunk::<8>() {
        let ends = !u64::from_le_bytes(*head) & 0x8080_8080_8080_8080;
        if ends != 0 {
            return Ok(ends.trailing_zeros() as usize / 8 + 1);
        }
    }
    match b.iter().take(19).position(|&c| c < 0x80) {
        Some(i) => Ok(i + 1),
        None => Err(MalformedKey),
    }
}

/// How a non-NULL value of a column type is laid out in a row value: all that is needed to
/// find where it ends. Resolved once per column ([`CellShape::of`]), so loops over millions of
/// cells (the columnar split) do not match on [`ColumnType`] per cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CellShape {
    /// A fixed number of bytes (DOUBLE 8, BOOLEAN 1).
    Fixed(usize),
    /// One varint (integers, DECIMAL, DATE, TIMESTAMP).
    Varint,
    /// A varint length and that many bytes (TEXT, BYTES).
    Prefixed,
}

impl CellShape {
    /// The shape of `ty`'s values.
    pub(crate) fn of(ty: &ColumnType) -> CellShape {
        match ty {
            ColumnType::Double => CellShape::Fixed(8),
            ColumnType::Bool => CellShape::Fixed(1),
            ColumnType::Text { .. } | ColumnType::Bytes => CellShape::Prefixed,
            _ => CellShape::Varint,
        }
    }
}

/// Length of the non-NULL value of type `ty` at the front of `b` (no allocation).
#[inline]
pub(crate) fn value_len(b: &[u8], ty: &ColumnType) -> Result<usize, MalformedKey> {
    cell_len(b, CellShape::of(ty))
}

/// Length of the non-NULL value of shape `shape` at the front of `b` (no allocation).
#[inline]
pub(crate) fn cell_len(b: &[u8], shape: CellShape) -> Result<usize, MalformedKey> {
    let n = match shape {
        CellShape::Fixed(n) => n,
        CellShape::Prefixed => {
            // A one-byte length is the common case (strings under 128 bytes).
            let (head, n) = match b.first() {
                Some(&c) if c < 0x80 => (1, usize::from(c)),
                _ => {
                    let mut r = b;
                    let n = usize::try_from(get_varint(&mut r)?).map_err(|_| MalformedKey)?;
                    (b.len() - r.len(), n)
                }
            };
            head.checked_add(n).ok_or(MalformedKey)?
        }
        CellShape::Varint => return varint_len(b),
    };
    if b.len() < n {
        return Err(MalformedKey);
    }
    Ok(n)
}

/// Calls `f(column, cell)` for every non-NULL column of a row value, in column order, where
/// `cell` is that value's encoding (what [`decode_value`] reads): the columnar layout's cells,
/// cut out of the row without decoding or copying it.
pub fn for_each_cell(
    row: &[u8],
    types: &[ColumnType],
    mut f: impl FnMut(usize, &[u8]) -> sluice::Result<()>,
) -> Result<sluice::Result<()>, MalformedKey> {
    let mut b = row.get(1..).ok_or(MalformedKey)?;
    let nb = types.len().div_ceil(8);
    if b.len() < nb {
        return Err(MalformedKey);
    }
    let (bitmap, rest) = b.split_at(nb);
    b = rest;
    for (i, ty) in types.iter().enumerate() {
        if bitmap[i / 8] & (1 << (i % 8)) != 0 {
            continue;
        }
        let n = value_len(b, ty)?;
        let (cell, t) = b.split_at(n);
        b = t;
        if let Err(e) = f(i, cell) {
            return Ok(Err(e));
        }
    }
    if !b.is_empty() {
        return Err(MalformedKey);
    }
    Ok(Ok(()))
}

/// The encoding of type `ty`'s zero value (0, 0.0, false, the empty string or bytes, DATE
/// 1970-01-01, TIMESTAMP 1970-01-01 00:00:00): a columnar table does not store a NOT NULL
/// column's cell that holds it, and reads a missing cell of a NOT NULL column as it (sparse
/// columns, as ClickHouse's sparse serialization of default values; `-0.0` parses as `0.0`).
pub fn default_cell(ty: &ColumnType) -> &'static [u8] {
    match ty {
        ColumnType::Double => &[0; 8],
        _ => &[0],
    }
}

/// What a columnar row holds for a column without a stored cell: NULL, or for a NOT NULL
/// column its type's zero value ([`default_cell`]).
pub fn absent_cell(ty: &ColumnType, not_null: bool) -> Value<'static> {
    if !not_null {
        return Value::Null;
    }
    let mut b = default_cell(ty);
    decode_value(&mut b, ty).unwrap_or(Value::Null)
}

/// The schema version of a row value.
pub fn row_version(b: &[u8]) -> Option<u8> {
    b.first().copied()
}

/// Decodes a row value of a table whose columns have `types`.
pub fn decode_row(b: &[u8], types: &[ColumnType]) -> Result<Vec<Value<'static>>, MalformedKey> {
    let mut b = b.get(1..).ok_or(MalformedKey)?;
    let nb = types.len().div_ceil(8);
    if b.len() < nb {
        return Err(MalformedKey);
    }
    let (bitmap, rest) = b.split_at(nb);
    b = rest;
    let mut out = Vec::with_capacity(types.len());
    for (i, ty) in types.iter().enumerate() {
        if bitmap[i / 8] & (1 << (i % 8)) != 0 {
            out.push(Value::Null);
            continue;
        }
        out.push(decode_value(&mut b, ty)?);
    }
    if !b.is_empty() {
        return Err(MalformedKey);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A value of every kind, with the widths that stress the bound of `encode_row` (the
    /// longest varints, empty and 128-byte-plus strings).
    fn value() -> impl Strategy<Value = (ColumnType, Value<'static>)> {
        prop_oneof![
            Just((ColumnType::Int, Value::Null)),
            any::<i64>().prop_map(|v| (ColumnType::BigInt, Value::Int(v))),
            any::<i32>().prop_map(|v| (ColumnType::Date, Value::Date(v))),
            any::<i64>().prop_map(|v| (ColumnType::Timestamp, Value::Timestamp(v))),
            any::<i128>().prop_map(|v| (
                ColumnType::Decimal {
                    precision: 38,
                    scale: 2
                },
                Value::Decimal(v)
            )),
            any::<f64>().prop_map(|v| (ColumnType::Double, Value::Double(v))),
            any::<bool>().prop_map(|v| (ColumnType::Bool, Value::Bool(v))),
            ".{0,300}".prop_map(|v| (
                ColumnType::Text { max_chars: None },
                Value::Text(Cow::Owned(v))
            )),
            proptest::collection::vec(any::<u8>(), 0..300)
                .prop_map(|v| (ColumnType::Bytes, Value::Bytes(Cow::Owned(v)))),
        ]
    }

    proptest! {
        /// `varint_len`'s eight-bytes-at-once path ends every varint where a byte-by-byte
        /// search does, whatever follows it, and refuses what that refuses (19 bytes and
        /// more without an end, or too short).
        #[test]
        fn varint_len_agrees_with_a_bytewise_search(
            v in any::<u64>(),
            cont in 0usize..24,
            tail in proptest::collection::vec(any::<u8>(), 0..12),
        ) {
            let mut b = Vec::new();
            put_varint64(&mut b, v);
            b.extend_from_slice(&tail);
            let bytewise = |b: &[u8]| b.iter().take(19).position(|&c| c < 0x80).map(|i| i + 1);
            prop_assert_eq!(varint_len(&b).ok(), bytewise(&b));
            // Continuation bytes only, then the tail: ends inside the tail, or never.
            let mut c = vec![0x80u8; cont];
            c.extend_from_slice(&tail);
            prop_assert_eq!(varint_len(&c).ok(), bytewise(&c));
        }

        /// `encode_row` appended after other bytes writes exactly the row `decode_row` reads
        /// back, and `value_len` cuts each value where `decode_value` ends it.
        #[test]
        fn rows_round_trip(cols in proptest::collection::vec(value(), 0..40), before in 0usize..9) {
            let (types, values): (Vec<ColumnType>, Vec<Value<'static>>) = cols.into_iter().unzip();
            let mut out = vec![0xAB; before];
            encode_row(&mut out, 3, &values);
            prop_assert!(out[..before].iter().all(|&b| b == 0xAB));
            let row = &out[before..];
            prop_assert_eq!(row[0], 3);
            let back = decode_row(row, &types).unwrap();
            prop_assert_eq!(back.len(), values.len());
            for (a, b) in back.iter().zip(&values) {
                match (a, b) {
                    (Value::Double(x), Value::Double(y)) => prop_assert_eq!(x.to_bits(), y.to_bits()),
                    _ => prop_assert_eq!(a, b),
                }
            }
            let mut rest = &row[1 + values.len().div_ceil(8)..];
            for (ty, v) in types.iter().zip(&values) {
                if matches!(v, Value::Null) {
                    continue;
                }
                let n = value_len(rest, ty).unwrap();
                let mut cut = &rest[..n];
                decode_value(&mut cut, ty).unwrap();
                prop_assert!(cut.is_empty());
                rest = &rest[n..];
            }
            prop_assert!(rest.is_empty());
        }
    }

    #[test]
    fn varint64_path_writes_the_128_bit_encoding() {
        for v in [
            0i64,
            1,
            -1,
            63,
            -64,
            64,
            i64::MAX,
            i64::MIN,
            1 << 40,
            -(1 << 40),
        ] {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            put_varint64(&mut a, zigzag64(v));
            put_varint(&mut b, zigzag(i128::from(v)));
            assert_eq!(a, b, "{v}");
            let types = [ColumnType::BigInt, ColumnType::Timestamp];
            let mut row = Vec::new();
            encode_row(&mut row, 1, &[Value::Int(v), Value::Timestamp(v)]);
            assert_eq!(
                decode_row(&row, &types).unwrap(),
                vec![Value::Int(v), Value::Timestamp(v)]
            );
        }
    }
}
