//! Column types and values: parsing input text into typed values (no allocation for numbers,
//! dates and borrowed text), and printing values back as CSV fields or JSON.
//!
//! Invariants:
//! 1. `parse_value` never panics on any input bytes; every refusal is a [`TypeError`] whose
//!    `Display` reads "`"value" is not a TYPE`" or says what bound was broken.
//! 2. Equal input values give equal [`Value`]s: `-0.0` parses as `0.0`, NaN is refused, DECIMAL
//!    is held as an unscaled integer at the column's scale, TIMESTAMP as UTC microseconds.

use std::fmt::{self, Write as _};

use serde::{Deserialize, Serialize};

/// A column's SQL type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ColumnType {
    /// SMALLINT: 16-bit signed.
    SmallInt,
    /// INT / INTEGER: 32-bit signed.
    Int,
    /// BIGINT: 64-bit signed.
    BigInt,
    /// FLOAT / DOUBLE / REAL: IEEE 754 binary64.
    Double,
    /// DECIMAL(p, s): exact, `p` ≤ 38 significant digits, `s` after the point.
    Decimal {
        /// Total digits.
        precision: u8,
        /// Digits after the decimal point.
        scale: u8,
    },
    /// BOOL / BOOLEAN.
    Bool,
    /// TEXT / VARCHAR(n) / CHAR(n): UTF-8, at most `max_chars` characters when set.
    Text {
        /// Length limit in characters (VARCHAR(n), CHAR(n)).
        max_chars: Option<u32>,
    },
    /// BYTES / BYTEA: input as `\x` + hex, or the raw field bytes.
    Bytes,
    /// DATE: days since 1970-01-01.
    Date,
    /// TIMESTAMP: microseconds since 1970-01-01T00:00:00Z.
    Timestamp,
}

impl fmt::Display for ColumnType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ColumnType::SmallInt => f.write_str("SMALLINT"),
            ColumnType::Int => f.write_str("INT"),
            ColumnType::BigInt => f.write_str("BIGINT"),
            ColumnType::Double => f.write_str("DOUBLE"),
            ColumnType::Decimal { precision, scale } => write!(f, "DECIMAL({precision},{scale})"),
            ColumnType::Bool => f.write_str("BOOLEAN"),
            ColumnType::Text { max_chars: None } => f.write_str("TEXT"),
            ColumnType::Text { max_chars: Some(n) } => write!(f, "VARCHAR({n})"),
            ColumnType::Bytes => f.write_str("BYTES"),
            ColumnType::Date => f.write_str("DATE"),
            ColumnType::Timestamp => f.write_str("TIMESTAMP"),
        }
    }
}

impl ColumnType {
    /// True for TEXT-like columns, where an empty field is an empty string rather than NULL.
    pub fn is_text(&self) -> bool {
        matches!(self, ColumnType::Text { .. } | ColumnType::Bytes)
    }
}

/// One typed value. Text and bytes borrow from the input where they can.
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    /// SQL NULL.
    Null,
    /// SMALLINT, INT, BIGINT.
    Int(i64),
    /// DOUBLE (never NaN, never -0.0).
    Double(f64),
    /// DECIMAL as the unscaled integer (`12.34` at scale 2 is `1234`).
    Decimal(i128),
    /// BOOLEAN.
    Bool(bool),
    /// TEXT (valid UTF-8).
    Text(std::borrow::Cow<'a, str>),
    /// BYTES.
    Bytes(std::borrow::Cow<'a, [u8]>),
    /// DATE: days since 1970-01-01.
    Date(i32),
    /// TIMESTAMP: microseconds since the epoch, UTC.
    Timestamp(i64),
}

impl Value<'_> {
    /// An owned copy.
    pub fn into_owned(self) -> Value<'static> {
        match self {
            Value::Null => Value::Null,
            Value::Int(v) => Value::Int(v),
            Value::Double(v) => Value::Double(v),
            Value::Decimal(v) => Value::Decimal(v),
            Value::Bool(v) => Value::Bool(v),
            Value::Text(s) => Value::Text(std::borrow::Cow::Owned(s.into_owned())),
            Value::Bytes(b) => Value::Bytes(std::borrow::Cow::Owned(b.into_owned())),
            Value::Date(v) => Value::Date(v),
            Value::Timestamp(v) => Value::Timestamp(v),
        }
    }
}

/// Why a field could not become a value of its column's type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeError {
    /// The offending field (lossy UTF-8, cut at 100 characters).
    pub value: String,
    /// What is wrong, e.g. "is not a DOUBLE".
    pub reason: String,
}

impl fmt::Display for TypeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} {}", self.value, self.reason)
    }
}

fn shown(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(b);
    if s.chars().count() > 100 {
        let mut t: String = s.chars().take(100).collect();
        t.push('…');
        t
    } else {
        s.into_owned()
    }
}

fn not_a(b: &[u8], ty: &ColumnType) -> TypeError {
    TypeError {
        value: shown(b),
        reason: format!("is not a {ty}"),
    }
}

/// Parses one non-NULL field as `ty`. Leading/trailing ASCII spaces are allowed around
/// numbers, booleans and dates, never stripped from text.
pub fn parse_value<'a>(ty: &ColumnType, b: &'a [u8]) -> Result<Value<'a>, TypeError> {
    let t = trim(b);
    match ty {
        ColumnType::SmallInt => parse_int(t)
            .filter(|v| i16::try_from(*v).is_ok())
            .map(Value::Int)
            .ok_or_else(|| not_a(b, ty)),
        ColumnType::Int => parse_int(t)
            .filter(|v| i32::try_from(*v).is_ok())
            .map(Value::Int)
            .ok_or_else(|| not_a(b, ty)),
        ColumnType::BigInt => parse_int(t).map(Value::Int).ok_or_else(|| not_a(b, ty)),
        ColumnType::Double => parse_double(t)
            .map(Value::Double)
            .ok_or_else(|| not_a(b, ty)),
        ColumnType::Decimal { precision, scale } => parse_decimal(t, *precision, *scale)
            .map(Value::Decimal)
            .ok_or_else(|| not_a(b, ty)),
        ColumnType::Bool => parse_bool(t).map(Value::Bool).ok_or_else(|| not_a(b, ty)),
        ColumnType::Text { max_chars } => {
            let s = std::str::from_utf8(b).map_err(|e| TypeError {
                value: shown(b),
                reason: format!("is not valid UTF-8 (byte {})", e.valid_up_to()),
            })?;
            if let Some(n) = max_chars {
                if s.chars().count() > *n as usize {
                    return Err(TypeError {
                        value: shown(b),
                        reason: format!("is longer than {n} characters"),
                    });
                }
            }
            Ok(Value::Text(std::borrow::Cow::Borrowed(s)))
        }
        ColumnType::Bytes => {
            if let Some(h) = b.strip_prefix(b"\\x") {
                decode_hex(h)
                    .map(|v| Value::Bytes(std::borrow::Cow::Owned(v)))
                    .ok_or_else(|| TypeError {
                        value: shown(b),
                        reason: "is not valid \\x hex".into(),
                    })
            } else {
                Ok(Value::Bytes(std::borrow::Cow::Borrowed(b)))
            }
        }
        ColumnType::Date => parse_date(t).map(Value::Date).ok_or_else(|| not_a(b, ty)),
        ColumnType::Timestamp => parse_timestamp(t)
            .map(Value::Timestamp)
            .ok_or_else(|| not_a(b, ty)),
    }
}

fn trim(b: &[u8]) -> &[u8] {
    let s = b.iter().position(|c| *c != b' ').unwrap_or(b.len());
    let e = b.iter().rposition(|c| *c != b' ').map_or(s, |p| p + 1);
    &b[s..e.max(s)]
}

fn parse_int(b: &[u8]) -> Option<i64> {
    let (neg, digits) = match b.first()? {
        b'-' => (true, &b[1..]),
        b'+' => (false, &b[1..]),
        _ => (false, b),
    };
    if digits.is_empty() || digits.len() > 19 {
        return None;
    }
    let mut v: i64 = 0;
    for &c in digits {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v.checked_mul(10)?;
        v = if neg {
            v.checked_sub(i64::from(d))?
        } else {
            v.checked_add(i64::from(d))?
        };
    }
    Some(v)
}

fn parse_double(b: &[u8]) -> Option<f64> {
    // Rust's parser is correct and allocation-free; refuse what it accepts beyond SQL numbers.
    let s = std::str::from_utf8(b).ok()?;
    let v: f64 = s.parse().ok()?;
    if v.is_nan() {
        return None;
    }
    Some(if v == 0.0 { 0.0 } else { v })
}

/// `[-+]digits[.digits][e[-+]digits]` to the unscaled integer at `scale`; more fraction
/// digits than the scale, or more than `precision` digits in all, is refused.
fn parse_decimal(b: &[u8], precision: u8, scale: u8) -> Option<i128> {
    let (neg, rest) = match b.first()? {
        b'-' => (true, &b[1..]),
        b'+' => (false, &b[1..]),
        _ => (false, b),
    };
    let (mantissa, exp) = match rest.iter().position(|c| *c == b'e' || *c == b'E') {
        Some(p) => (&rest[..p], parse_int(&rest[p + 1..])?),
        None => (rest, 0),
    };
    let (int_part, frac_part) = match mantissa.iter().position(|c| *c == b'.') {
        Some(p) => (&mantissa[..p], &mantissa[p + 1..]),
        None => (mantissa, &[][..]),
    };
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    let mut v: i128 = 0;
    let mut frac_digits: i64 = 0;
    for (i, &c) in int_part.iter().chain(frac_part).enumerate() {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        if i >= int_part.len() {
            frac_digits += 1;
        }
        v = v.checked_mul(10)?.checked_add(i128::from(d))?;
    }
    // value = v * 10^(exp - frac_digits); we want v * 10^(exp - frac_digits + scale).
    let shift = exp
        .checked_sub(frac_digits)?
        .checked_add(i64::from(scale))?;
    if shift >= 0 {
        for _ in 0..shift.min(40) {
            v = v.checked_mul(10)?;
        }
        if shift > 40 && v != 0 {
            return None;
        }
    } else {
        for _ in 0..(-shift).min(40) {
            if v % 10 != 0 {
                return None; // more fraction digits than the scale allows
            }
            v /= 10;
        }
    }
    let limit = 10i128.checked_pow(u32::from(precision))?;
    if v >= limit {
        return None;
    }
    Some(if neg { -v } else { v })
}

fn parse_bool(b: &[u8]) -> Option<bool> {
    const T: [&[u8]; 5] = [b"true", b"t", b"1", b"yes", b"y"];
    const F: [&[u8]; 5] = [b"false", b"f", b"0", b"no", b"n"];
    if T.iter().any(|t| t.eq_ignore_ascii_case(b)) {
        Some(true)
    } else if F.iter().any(|t| t.eq_ignore_ascii_case(b)) {
        Some(false)
    } else {
        None
    }
}

fn decode_hex(h: &[u8]) -> Option<Vec<u8>> {
    if !h.len().is_multiple_of(2) {
        return None;
    }
    let nib = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    };
    h.chunks(2)
        .map(|p| Some(nib(p[0])? << 4 | nib(p[1])?))
        .collect()
}

fn digits(b: &[u8], n: usize) -> Option<u32> {
    if b.len() < n {
        return None;
    }
    let mut v = 0u32;
    for &c in &b[..n] {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v * 10 + u32::from(d);
    }
    Some(v)
}

/// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (i64::from(m) + 9) % 12;
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day number (inverse of [`days_from_civil`]).
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn days_in_month(y: u32, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (y.is_multiple_of(4) && !y.is_multiple_of(100)) || y.is_multiple_of(400) => 29,
        _ => 28,
    }
}

/// `YYYY-MM-DD` → (days, rest of input).
fn parse_date_prefix(b: &[u8]) -> Option<(i64, &[u8])> {
    let y = digits(b, 4)?;
    if b.get(4) != Some(&b'-') || b.get(7) != Some(&b'-') {
        return None;
    }
    let m = digits(&b[5..], 2)?;
    let d = digits(&b[8..], 2)?;
    if !(1..=12).contains(&m) || d == 0 || d > days_in_month(y, m) {
        return None;
    }
    Some((days_from_civil(i64::from(y), m, d), &b[10..]))
}

fn parse_date(b: &[u8]) -> Option<i32> {
    let (days, rest) = parse_date_prefix(b)?;
    rest.is_empty().then_some(days as i32)
}

/// `YYYY-MM-DD[( |T)HH:MM[:SS[.f{1,9}]]][Z|(+|-)HH[:MM]]` → UTC microseconds.
fn parse_timestamp(b: &[u8]) -> Option<i64> {
    let (days, mut rest) = parse_date_prefix(b)?;
    let mut secs = days * 86_400;
    let mut micros = 0i64;
    if let Some((&sep, r)) = rest.split_first() {
        if sep != b' ' && sep != b'T' && sep != b't' {
            return None;
        }
        let h = digits(r, 2)?;
        if r.get(2) != Some(&b':') {
            return None;
        }
        let mi = digits(&r[3..], 2)?;
        rest = &r[5..];
        let mut s = 0;
        if rest.first() == Some(&b':') {
            s = digits(&rest[1..], 2)?;
            rest = &rest[3..];
            if rest.first() == Some(&b'.') {
                let n = rest[1..].iter().take_while(|c| c.is_ascii_digit()).count();
                if n == 0 || n > 9 {
                    return None;
                }
                let f = digits(&rest[1..], n)?;
                micros = i64::from(f) * 10i64.pow(9 - n as u32) / 1000;
                rest = &rest[1 + n..];
            }
        }
        if h > 23 || mi > 59 || s > 60 {
            return None;
        }
        secs += i64::from(h) * 3600 + i64::from(mi) * 60 + i64::from(s);
        match rest.first() {
            None => {}
            Some(b'Z') | Some(b'z') if rest.len() == 1 => rest = &[],
            Some(&c @ (b'+' | b'-')) => {
                let oh = digits(&rest[1..], 2)?;
                let r2 = &rest[3..];
                let om = match r2 {
                    [] => 0,
                    [b':', m @ ..] if m.len() == 2 => digits(m, 2)?,
                    m if m.len() == 2 => digits(m, 2)?,
                    _ => return None,
                };
                if oh > 23 || om > 59 {
                    return None;
                }
                let off = i64::from(oh) * 3600 + i64::from(om) * 60;
                secs += if c == b'+' { -off } else { off };
                rest = &[];
            }
            _ => return None,
        }
    }
    if !rest.is_empty() {
        return None;
    }
    secs.checked_mul(1_000_000)?.checked_add(micros)
}

/// Formats a DATE day number as `YYYY-MM-DD`.
pub fn format_date(days: i32, out: &mut String) {
    let (y, m, d) = civil_from_days(i64::from(days));
    let _ = write!(out, "{y:04}-{m:02}-{d:02}");
}

/// Formats a TIMESTAMP as ISO-8601 UTC: `YYYY-MM-DDTHH:MM:SS[.ffffff]Z`.
pub fn format_timestamp(micros: i64, out: &mut String) {
    let secs = micros.div_euclid(1_000_000);
    let frac = micros.rem_euclid(1_000_000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let _ = write!(
        out,
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
        sod / 3600,
        sod / 60 % 60,
        sod % 60
    );
    if frac != 0 {
        let _ = write!(out, ".{frac:06}");
    }
    out.push('Z');
}

/// Formats an unscaled DECIMAL with exactly `scale` fraction digits.
pub fn format_decimal(v: i128, scale: u8, out: &mut String) {
    let neg = v < 0;
    let mut digits = v.unsigned_abs().to_string();
    let scale = scale as usize;
    if digits.len() <= scale {
        digits = format!("{}{digits}", "0".repeat(scale + 1 - digits.len()));
    }
    if neg {
        out.push('-');
    }
    let (i, f) = digits.split_at(digits.len() - scale);
    out.push_str(i);
    if scale > 0 {
        out.push('.');
        out.push_str(f);
    }
}

/// The value as text (CSV output): NULL as the empty string, BYTES as `\x` + hex.
pub fn format_text(v: &Value<'_>, ty: &ColumnType, out: &mut String) {
    match v {
        Value::Null => {}
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Value::Double(d) => {
            // Shortest text that reads back as the same double; exponent form when large.
            let s = format!("{d:?}");
            out.push_str(s.strip_suffix(".0").unwrap_or(&s));
        }
        Value::Decimal(d) => {
            let scale = match ty {
                ColumnType::Decimal { scale, .. } => *scale,
                _ => 0,
            };
            format_decimal(*d, scale, out);
        }
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Text(s) => out.push_str(s),
        Value::Bytes(b) => {
            out.push_str("\\x");
            for c in b.iter() {
                let _ = write!(out, "{c:02x}");
            }
        }
        Value::Date(d) => format_date(*d, out),
        Value::Timestamp(t) => format_timestamp(*t, out),
    }
}

/// The value as JSON: NULL `null`, numbers as numbers (DECIMAL as a number literal with
/// exactly its scale), DATE/TIMESTAMP/BYTES as strings. Infinite doubles print as `null`.
pub fn format_json(v: &Value<'_>, ty: &ColumnType, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Double(d) if !d.is_finite() => out.push_str("null"),
        Value::Int(_) | Value::Double(_) | Value::Decimal(_) | Value::Bool(_) => {
            format_text(v, ty, out)
        }
        Value::Text(s) => out.push_str(&serde_json::to_string(s.as_ref()).unwrap_or_default()),
        _ => {
            let mut s = String::new();
            format_text(v, ty, &mut s);
            out.push_str(&serde_json::to_string(&s).unwrap_or_default());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals() {
        let d = |s: &str| parse_decimal(s.as_bytes(), 10, 2);
        assert_eq!(d("12.34"), Some(1234));
        assert_eq!(d("-0.5"), Some(-50));
        assert_eq!(d("7"), Some(700));
        assert_eq!(d("1.234"), None);
        assert_eq!(d("1.230"), Some(123));
        assert_eq!(d("1e2"), Some(10000));
        assert_eq!(d("123456789"), None);
        assert_eq!(d("."), None);
        let mut s = String::new();
        format_decimal(-5, 2, &mut s);
        assert_eq!(s, "-0.05");
    }

    #[test]
    fn timestamps() {
        let t = |s: &str| parse_timestamp(s.as_bytes());
        assert_eq!(t("1970-01-01 00:00:00"), Some(0));
        assert_eq!(t("1970-01-01T00:00:01.5Z"), Some(1_500_000));
        assert_eq!(t("1970-01-01T01:00:00+01:00"), Some(0));
        assert_eq!(t("1970-01-01T00:00-0130"), Some(5_400_000_000));
        assert_eq!(t("2023-02-29 00:00:00"), None);
        assert_eq!(
            t("2024-02-29"),
            Some(days_from_civil(2024, 2, 29) * 86_400_000_000)
        );
        let mut s = String::new();
        format_timestamp(1_500_000, &mut s);
        assert_eq!(s, "1970-01-01T00:00:01.500000Z");
        for z in [-800_000i64, -1, 0, 59, 20_000, 2_932_896] {
            let (y, m, d) = civil_from_days(z);
            assert_eq!(days_from_civil(y, m, d), z);
        }
    }
}
