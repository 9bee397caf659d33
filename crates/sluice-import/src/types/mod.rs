//! Column types and values: parsing input text into typed values (no allocation for numbers,
//! dates and borrowed text), and printing values back as CSV fields or JSON.
//!
//! Every number is converted from its text, never through a binary double on the way: a
//! DECIMAL or BIGINT keeps all its digits whether it came from CSV, TSV or a JSON-lines number
//! (the JSON reader hands over a number's original text).
//!
//! Invariants:
//! 1. `parse_value` never panics on any input bytes; every refusal is a [`TypeError`] whose
//!    `Display` quotes the field as written and reads `"value" is not a TYPE` (or `an INT`) or
//!    says which bound was broken (`is out of range for INT`, `has more than 2 digits after the
//!    point`, …).
//! 2. Equal input values give equal [`Value`]s: `-0.0` parses as `0.0`, every NaN as the one
//!    positive quiet NaN ([`f64::NAN`]), DECIMAL is held as an unscaled integer at the column's
//!    scale, TIMESTAMP as UTC microseconds.
//! 3. Exact or refused: a value that does not fit its column exactly is refused, never rounded
//!    or cut — a DECIMAL with more fraction digits than its scale, an integer column given
//!    `1.5`, a finite DOUBLE beyond ±1.8e308 (`1e400`), a TIMESTAMP with a non-zero 7th
//!    fraction digit. Only DOUBLE rounds, to the nearest binary64, as every reader of decimal
//!    text does (`0.1`, `1e-400` → 0).
//! 4. Closed under round trip: whatever is stored prints (`format_text`) as text that
//!    `parse_value` reads back as the same value — TIMESTAMPs are kept within years
//!    0000..=9999 in UTC (an offset that would carry one out is refused), doubles print as the
//!    shortest text that reads back as the same double, `inf`, `-inf` and `nan`.
//!
//! DOUBLE specials (as DuckDB): `inf`, `+inf`, `-inf`, `infinity`, `-infinity` and `nan` (any
//! case, any sign for NaN) are accepted; finite text out of range is refused. In keys NaN sorts
//! after `+inf` (its sign-flipped bits are the largest), so an index orders
//! `-inf < … < -0 = 0 < … < +inf < NaN`, as DuckDB and PostgreSQL order them. JSON output
//! writes the specials as the strings `"Infinity"`, `"-Infinity"` and `"NaN"` (JSON has no
//! literal for them, and `null` would read as SQL NULL); the JSON-lines reader takes those
//! strings back.

mod format;
mod number;
mod time;

use std::fmt;

use serde::{Deserialize, Serialize};

pub use format::{format_date, format_decimal, format_json, format_text, format_timestamp};
use number::{parse_decimal, parse_double, parse_integer, trim};
pub use time::{civil_from_days, days_from_civil, TIMESTAMP_MAX, TIMESTAMP_MIN};
use time::{parse_date, parse_timestamp, TimestampError};

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
    /// True for TEXT-like columns, which have an empty value (the empty string or bytes), so
    /// that an empty field can mean something other than NULL.
    pub fn is_text(&self) -> bool {
        matches!(self, ColumnType::Text { .. } | ColumnType::Bytes)
    }

    /// True for the types `--sum` adds up: SMALLINT, INT, BIGINT, DECIMAL and DOUBLE.
    pub fn is_numeric(&self) -> bool {
        matches!(
            self,
            ColumnType::SmallInt
                | ColumnType::Int
                | ColumnType::BigInt
                | ColumnType::Decimal { .. }
                | ColumnType::Double
        )
    }

    /// The type's name with its indefinite article: `an INT`, `a DECIMAL(10,2)`.
    pub fn with_article(&self) -> String {
        let name = self.to_string();
        let vowel = name.starts_with(['A', 'E', 'I', 'O', 'U']);
        format!("{} {name}", if vowel { "an" } else { "a" })
    }

    /// The range of an integer column's values.
    pub(crate) fn int_range(&self) -> Option<(i64, i64)> {
        match self {
            ColumnType::SmallInt => Some((i16::MIN.into(), i16::MAX.into())),
            ColumnType::Int => Some((i32::MIN.into(), i32::MAX.into())),
            ColumnType::BigInt => Some((i64::MIN, i64::MAX)),
            _ => None,
        }
    }
}

/// One typed value. Text and bytes borrow from the input where they can.
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    /// SQL NULL.
    Null,
    /// SMALLINT, INT, BIGINT.
    Int(i64),
    /// DOUBLE (never -0.0; NaN only as [`f64::NAN`]).
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
    /// The offending field as written (lossy UTF-8, cut at 100 characters).
    pub value: String,
    /// What is wrong, e.g. "is not a DOUBLE", "is out of range for INT".
    pub reason: String,
}

impl fmt::Display for TypeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} {}", self.value, self.reason)
    }
}

pub(crate) fn shown(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(b);
    if s.chars().count() > 100 {
        let mut t: String = s.chars().take(100).collect();
        t.push('…');
        t
    } else {
        s.into_owned()
    }
}

fn type_error(b: &[u8], reason: impl Into<String>) -> TypeError {
    TypeError {
        value: shown(b),
        reason: reason.into(),
    }
}

fn not_a(b: &[u8], ty: &ColumnType) -> TypeError {
    type_error(b, format!("is not {}", ty.with_article()))
}

/// Why a number did not fit its column.
enum NumberError {
    /// Not a number at all.
    Malformed,
    /// Too large (or too small) for the type.
    OutOfRange,
    /// Digits after the point that the type cannot keep.
    Fraction,
}

fn number_error(b: &[u8], ty: &ColumnType, e: NumberError) -> TypeError {
    match (e, ty) {
        (NumberError::Malformed, _) => not_a(b, ty),
        (NumberError::OutOfRange, _) => type_error(b, format!("is out of range for {ty}")),
        (NumberError::Fraction, ColumnType::Decimal { scale, .. }) => type_error(
            b,
            format!("has more than {scale} digits after the point ({ty} keeps {scale})"),
        ),
        (NumberError::Fraction, _) => {
            type_error(b, format!("is not a whole number ({ty} has no fraction)"))
        }
    }
}

/// Parses one non-NULL field as `ty`. Leading/trailing ASCII spaces are allowed around
/// numbers, booleans and dates, never stripped from text.
///
/// Integer columns take any exact integer in decimal notation (`42`, `-0`, `1e2`, `100.0`);
/// DECIMAL any decimal notation that fits exactly; DOUBLE decimal notation rounded to the
/// nearest binary64 plus the specials in the module doc.
///
/// ```
/// use sluice_import::types::{parse_value, ColumnType, Value};
/// let d = ColumnType::Decimal { precision: 20, scale: 2 };
/// assert_eq!(parse_value(&d, b"12345678901234567.89"), Ok(Value::Decimal(1234567890123456789)));
/// assert_eq!(parse_value(&ColumnType::BigInt, b"1e2"), Ok(Value::Int(100)));
/// let e = parse_value(&ColumnType::Int, b"1.5").unwrap_err();
/// assert_eq!(e.to_string(), "\"1.5\" is not a whole number (INT has no fraction)");
/// assert!(parse_value(&ColumnType::Double, b"1e400").is_err());
/// ```
pub fn parse_value<'a>(ty: &ColumnType, b: &'a [u8]) -> Result<Value<'a>, TypeError> {
    match parse_value_fast(ty, b) {
        Some(v) => Ok(v),
        None => parse_value_slow(ty, b),
    }
}

/// [`parse_value`]'s successes, without its error path: `None` for a field it refuses (or
/// BYTES, which may need decoding), for [`parse_value`] to explain. A value this returns is
/// the one `parse_value` returns: it calls the same parsers on the same trimmed bytes.
///
/// This runs once per field of an import (105 million times for 1M `hits` rows): returning a
/// small `Option` where the full path returns a `Result` carrying an error's strings, and
/// inlined into the parser's loop, it saves the copy and test of that result per field.
#[inline]
pub(crate) fn parse_value_fast<'a>(ty: &ColumnType, b: &'a [u8]) -> Option<Value<'a>> {
    match ty {
        ColumnType::SmallInt | ColumnType::Int | ColumnType::BigInt => {
            // The plain form first (no spaces to trim, no fraction or exponent): calling
            // `parse_integer(trim(b))` alone cost hits 3% more import CPU.
            let v = match number::parse_int(b) {
                Some(v) => v,
                None => parse_integer(trim(b), ty).ok()?,
            };
            let (lo, hi) = ty.int_range()?;
            (lo..=hi).contains(&v).then_some(Value::Int(v))
        }
        ColumnType::Text { max_chars } => {
            let s = std::str::from_utf8(b).ok()?;
            // Bytes bound characters: a string of at most `n` bytes has at most `n` chars.
            match max_chars {
                Some(n) if s.len() > *n as usize && s.chars().count() > *n as usize => None,
                _ => Some(Value::Text(std::borrow::Cow::Borrowed(s))),
            }
        }
        ColumnType::Double => parse_double(trim(b)).ok().map(Value::Double),
        ColumnType::Decimal { precision, scale } => parse_decimal(trim(b), *precision, *scale)
            .ok()
            .map(Value::Decimal),
        ColumnType::Bool => parse_bool(trim(b)).map(Value::Bool),
        ColumnType::Date => parse_date(trim(b)).map(Value::Date),
        ColumnType::Timestamp => parse_timestamp(trim(b)).ok().map(Value::Timestamp),
        ColumnType::Bytes => None,
    }
}

/// [`parse_value`] for every form and every error (a caller that tried
/// [`parse_value_fast`] already goes on here).
pub(crate) fn parse_value_slow<'a>(ty: &ColumnType, b: &'a [u8]) -> Result<Value<'a>, TypeError> {
    let t = trim(b);
    match ty {
        ColumnType::SmallInt | ColumnType::Int | ColumnType::BigInt => parse_integer(t, ty)
            .map(Value::Int)
            .map_err(|e| number_error(b, ty, e)),
        ColumnType::Double => parse_double(t)
            .map(Value::Double)
            .map_err(|e| number_error(b, ty, e)),
        ColumnType::Decimal { precision, scale } => parse_decimal(t, *precision, *scale)
            .map(Value::Decimal)
            .map_err(|e| number_error(b, ty, e)),
        ColumnType::Bool => parse_bool(t).map(Value::Bool).ok_or_else(|| not_a(b, ty)),
        ColumnType::Text { max_chars } => {
            let s = std::str::from_utf8(b).map_err(|e| {
                type_error(
                    b,
                    format!("is not valid UTF-8 (byte {})", e.valid_up_to()),
                )
            })?;
            if let Some(n) = max_chars {
                if s.chars().count() > *n as usize {
                    return Err(type_error(b, format!("is longer than {n} characters")));
                }
            }
            Ok(Value::Text(std::borrow::Cow::Borrowed(s)))
        }
        ColumnType::Bytes => {
            if let Some(h) = b.strip_prefix(b"\\x") {
                decode_hex(h)
                    .map(|v| Value::Bytes(std::borrow::Cow::Owned(v)))
                    .ok_or_else(|| type_error(b, "is not valid \\x hex"))
            } else {
                Ok(Value::Bytes(std::borrow::Cow::Borrowed(b)))
            }
        }
        ColumnType::Date => parse_date(t).map(Value::Date).ok_or_else(|| not_a(b, ty)),
        ColumnType::Timestamp => parse_timestamp(t).map(Value::Timestamp).map_err(|e| match e {
            TimestampError::Malformed => not_a(b, ty),
            TimestampError::Nanos => type_error(
                b,
                "has a non-zero digit past microseconds (TIMESTAMP keeps 6 fraction digits)",
            ),
            TimestampError::OutOfRange => type_error(
                b,
                "is out of range for TIMESTAMP (0000-01-01 00:00:00 to 9999-12-31 23:59:59.999999 UTC)",
            ),
        }),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(ty: &ColumnType, s: &str) -> Value<'static> {
        parse_value(ty, s.as_bytes())
            .unwrap_or_else(|e| panic!("{s}: {e}"))
            .into_owned()
    }

    fn refused(ty: &ColumnType, s: &str) -> String {
        match parse_value(ty, s.as_bytes()) {
            Ok(v) => panic!("{s} as {ty} gave {v:?}"),
            Err(e) => e.to_string(),
        }
    }

    fn text(v: &Value<'_>, ty: &ColumnType) -> String {
        let mut s = String::new();
        format_text(v, ty, &mut s);
        s
    }

    #[test]
    fn decimals_are_exact_from_any_notation() {
        let d = |p, s| ColumnType::Decimal {
            precision: p,
            scale: s,
        };
        let t = d(10, 2);
        assert_eq!(ok(&t, "12.34"), Value::Decimal(1234));
        assert_eq!(ok(&t, "-0.5"), Value::Decimal(-50));
        assert_eq!(ok(&t, "7"), Value::Decimal(700));
        assert_eq!(ok(&t, "1.230"), Value::Decimal(123));
        assert_eq!(ok(&t, "1e2"), Value::Decimal(10000));
        assert_eq!(ok(&t, "12300E-4"), Value::Decimal(123));
        assert_eq!(ok(&t, "-0"), Value::Decimal(0));
        assert_eq!(ok(&t, "0e999999999999999999999"), Value::Decimal(0));
        assert_eq!(ok(&t, ".5"), Value::Decimal(50));
        assert_eq!(ok(&t, "5."), Value::Decimal(500));
        assert_eq!(
            ok(&t, "00000000000000000000000000000000000000000001.000000000000000000000000000000000000000"),
            Value::Decimal(100)
        );
        assert_eq!(
            refused(&t, "1.234"),
            "\"1.234\" has more than 2 digits after the point (DECIMAL(10,2) keeps 2)"
        );
        assert_eq!(
            refused(&t, "123456789"),
            "\"123456789\" is out of range for DECIMAL(10,2)"
        );
        assert_eq!(
            refused(&t, "1e99999999999999999999"),
            "\"1e99999999999999999999\" is out of range for DECIMAL(10,2)"
        );
        for bad in [
            ".", "", "-", "1e", "e5", "1.2.3", "1,5", "0x10", "inf", "nan", "1e+-2", "١",
        ] {
            assert_eq!(
                refused(&t, bad),
                format!("{bad:?} is not a DECIMAL(10,2)"),
                "{bad}"
            );
        }
        // 38 digits, the full precision, both signs, from plain and exponent notation.
        let big = d(38, 10);
        let digits = "1234567890123456789012345678.0123456789";
        let unscaled: i128 = 12345678901234567890123456780123456789;
        assert_eq!(ok(&big, digits), Value::Decimal(unscaled));
        assert_eq!(ok(&big, &format!("-{digits}")), Value::Decimal(-unscaled));
        assert_eq!(
            ok(&big, "1.2345678901234567890123456780123456789e27"),
            Value::Decimal(unscaled)
        );
        assert_eq!(
            ok(&big, "9999999999999999999999999999.9999999999"),
            Value::Decimal(10i128.pow(38) - 1)
        );
        assert!(refused(&big, "99999999999999999999999999999").contains("out of range"));
        assert_eq!(
            ok(&d(38, 10), "1234567890123456789.0123456789"),
            Value::Decimal(12345678901234567890123456789)
        );
        assert_eq!(
            ok(&d(20, 2), "12345678901234567.89"),
            Value::Decimal(1234567890123456789)
        );
        let mut s = String::new();
        format_decimal(-5, 2, &mut s);
        assert_eq!(s, "-0.05");
    }

    #[test]
    fn integers_take_exact_integers_in_any_notation() {
        assert_eq!(ok(&ColumnType::BigInt, "-0"), Value::Int(0));
        assert_eq!(ok(&ColumnType::BigInt, "1e2"), Value::Int(100));
        assert_eq!(ok(&ColumnType::BigInt, "100.000"), Value::Int(100));
        assert_eq!(ok(&ColumnType::BigInt, "-1.5E1"), Value::Int(-15));
        assert_eq!(ok(&ColumnType::BigInt, " +7 "), Value::Int(7));
        assert_eq!(
            ok(&ColumnType::BigInt, "-9223372036854775808"),
            Value::Int(i64::MIN)
        );
        assert_eq!(
            ok(&ColumnType::BigInt, "9.223372036854775807e18"),
            Value::Int(i64::MAX)
        );
        assert_eq!(
            refused(&ColumnType::BigInt, "9223372036854775808"),
            "\"9223372036854775808\" is out of range for BIGINT"
        );
        assert_eq!(
            refused(&ColumnType::Int, "1e10"),
            "\"1e10\" is out of range for INT"
        );
        assert_eq!(
            refused(&ColumnType::SmallInt, "40000"),
            "\"40000\" is out of range for SMALLINT"
        );
        assert_eq!(
            refused(&ColumnType::Int, "1.5"),
            "\"1.5\" is not a whole number (INT has no fraction)"
        );
        assert_eq!(refused(&ColumnType::Int, "x"), "\"x\" is not an INT");
        assert_eq!(
            refused(&ColumnType::BigInt, "inf"),
            "\"inf\" is not a BIGINT"
        );
        assert_eq!(
            refused(&ColumnType::SmallInt, "nan"),
            "\"nan\" is not a SMALLINT"
        );
    }

    #[test]
    fn doubles_accept_specials_and_refuse_overflow() {
        let t = ColumnType::Double;
        assert_eq!(ok(&t, "-0.0"), Value::Double(0.0));
        assert!(matches!(ok(&t, "-0.0"), Value::Double(d) if d.is_sign_positive()));
        assert_eq!(ok(&t, "1e-400"), Value::Double(0.0));
        assert_eq!(ok(&t, "0.1"), Value::Double(0.1));
        for (s, v) in [
            ("inf", f64::INFINITY),
            ("+Inf", f64::INFINITY),
            ("-INFINITY", f64::NEG_INFINITY),
            ("Infinity", f64::INFINITY),
            ("-inf", f64::NEG_INFINITY),
        ] {
            assert_eq!(ok(&t, s), Value::Double(v), "{s}");
        }
        for s in ["nan", "NaN", "-nan", "NAN"] {
            match ok(&t, s) {
                Value::Double(d) => assert_eq!(d.to_bits(), f64::NAN.to_bits(), "{s}"),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(refused(&t, "1e400"), "\"1e400\" is out of range for DOUBLE");
        assert_eq!(
            refused(&t, "-1e309"),
            "\"-1e309\" is out of range for DOUBLE"
        );
        for bad in ["infinit", "in", "nana", "1e", "0x1p3", "1_000", ""] {
            assert_eq!(refused(&t, bad), format!("{bad:?} is not a DOUBLE"));
        }
        // CSV text of every double reads back as the same double.
        for d in [
            0.0,
            1.0,
            -1.5e300,
            f64::MAX,
            f64::MIN_POSITIVE,
            5e-324,
            0.1 + 0.2,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            let s = text(&Value::Double(d), &t);
            assert_eq!(ok(&t, &s), Value::Double(d), "{s}");
        }
        assert_eq!(text(&Value::Double(f64::NAN), &t), "nan");
        assert_eq!(text(&Value::Double(f64::INFINITY), &t), "inf");
        let json = |d: f64| {
            let mut s = String::new();
            format_json(&Value::Double(d), &t, &mut s);
            s
        };
        assert_eq!(json(f64::INFINITY), "\"Infinity\"");
        assert_eq!(json(f64::NAN), "\"NaN\"");
        assert_eq!(json(2.5), "2.5");
        // The JSON strings read back.
        assert_eq!(ok(&t, "Infinity"), Value::Double(f64::INFINITY));
        assert_eq!(ok(&t, "-Infinity"), Value::Double(f64::NEG_INFINITY));
    }

    #[test]
    fn timestamps() {
        let t = |s: &str| parse_timestamp(s.as_bytes()).ok();
        assert_eq!(t("1970-01-01 00:00:00"), Some(0));
        assert_eq!(t("1970-01-01T00:00:01.5Z"), Some(1_500_000));
        assert_eq!(t("1970-01-01T00:00:01.123456000Z"), Some(1_123_456));
        assert_eq!(t("1970-01-01T01:00:00+01:00"), Some(0));
        assert_eq!(t("1970-01-01T00:00-0130"), Some(5_400_000_000));
        assert_eq!(t("2023-02-29 00:00:00"), None);
        assert_eq!(
            t("2024-02-29"),
            Some(days_from_civil(2024, 2, 29) * 86_400_000_000)
        );
        let ts = ColumnType::Timestamp;
        assert_eq!(
            refused(&ts, "2024-01-01 00:00:00.1234567"),
            "\"2024-01-01 00:00:00.1234567\" has a non-zero digit past microseconds (TIMESTAMP keeps 6 fraction digits)"
        );
        // The edges of the range, and offsets that would carry an instant past them.
        assert_eq!(t("0000-01-01T00:00:00Z"), Some(TIMESTAMP_MIN));
        assert_eq!(t("9999-12-31T23:59:59.999999Z"), Some(TIMESTAMP_MAX));
        assert_eq!(t("9999-12-31T23:59:60Z"), None);
        for s in ["0000-01-01T00:00:00+00:01", "9999-12-31T23:30:00-01:00"] {
            assert!(
                refused(&ts, s).contains("out of range for TIMESTAMP"),
                "{s}"
            );
        }
        for s in [
            "0000-01-01T00:59:00-00:01",
            "0000-01-01T00:00:00-01:00",
            "9999-12-31T23:30:00+01:00",
            "2024-06-30T23:59:60Z",
        ] {
            let v = ok(&ts, s);
            let back = text(&v, &ts);
            assert_eq!(ok(&ts, &back), v, "{s} -> {back}");
        }
        let mut s = String::new();
        format_timestamp(1_500_000, &mut s);
        assert_eq!(s, "1970-01-01T00:00:01.500000Z");
        for z in [-800_000i64, -1, 0, 59, 20_000, 2_932_896] {
            let (y, m, d) = civil_from_days(z);
            assert_eq!(days_from_civil(y, m, d), z);
        }
    }

    #[test]
    fn messages_use_the_right_article() {
        assert_eq!(ColumnType::Int.with_article(), "an INT");
        assert_eq!(ColumnType::BigInt.with_article(), "a BIGINT");
        assert_eq!(
            refused(&ColumnType::Bool, "maybe"),
            "\"maybe\" is not a BOOLEAN"
        );
        assert_eq!(
            refused(&ColumnType::Date, "2024-13-01"),
            "\"2024-13-01\" is not a DATE"
        );
    }

    /// Equal as stored: doubles by their bits (NaN equals itself, -0.0 is not 0.0), as the
    /// rows an import writes compare.
    fn same(a: &Value<'_>, b: &Value<'_>) -> bool {
        match (a, b) {
            (Value::Double(x), Value::Double(y)) => x.to_bits() == y.to_bits(),
            _ => a == b,
        }
    }

    /// Checks the fast path against the full parser on one field, for every type.
    fn fast_agrees(
        field: &[u8],
        limit: Option<u32>,
    ) -> Result<(), proptest::test_runner::TestCaseError> {
        let types = [
            ColumnType::SmallInt,
            ColumnType::Int,
            ColumnType::BigInt,
            ColumnType::Text { max_chars: limit },
            ColumnType::Double,
            ColumnType::Decimal {
                precision: 20,
                scale: 2,
            },
            ColumnType::Decimal {
                precision: 3,
                scale: 0,
            },
            ColumnType::Bool,
            ColumnType::Date,
            ColumnType::Timestamp,
        ];
        for ty in &types {
            let fast = parse_value_fast(ty, field);
            let slow = parse_value_slow(ty, field);
            if matches!(ty, ColumnType::Timestamp) && field.len() == 19 {
                // Most generated 19-byte fields are valid timestamps: the fast path must
                // take every one the full parser takes.
                proptest::prop_assert_eq!(fast.is_some(), slow.is_ok());
            }
            if let Some(v) = fast {
                let Ok(want) = slow else {
                    return Err(proptest::test_runner::TestCaseError::fail(format!(
                        "{ty}: fast path took a field the full parser refuses"
                    )));
                };
                proptest::prop_assert!(same(&v, &want), "{}: {:?} against {:?}", ty, v, want);
            }
        }
        Ok(())
    }

    proptest::proptest! {
        /// Whenever the fast path gives a value, the full parser gives the same one (equal as
        /// stored): fields near the integer types' limits, with signs, spaces, leading
        /// zeros, fractions and exponents, specials, text over and under its character limit
        /// (multi-byte characters), dates and timestamps, and any bytes at all.
        #[test]
        fn the_fast_path_agrees_with_the_full_parser(
            field in concat!(
                "[ +-]?[0-9]{0,21}(\\.[0-9]{0,4})?([eE][+-]?[0-9]{1,2})? ?|[a-zé€ ]{0,12}|",
                "[ +-]?([nN][aA][nN]|[iI]nf(inity)?)|-0(\\.0)?|[tTfF]|true|no|\t1|",
                " ?[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}( [0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?)? ?|",
                "20[0-9]{2}-(0[1-9]|1[0-2])-[0-2][1-9]( [01][0-9]:[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,9})?)?",
            ),
            limit in proptest::option::of(0u32..10),
            raw in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..24),
        ) {
            fast_agrees(field.as_bytes(), limit)?;
            fast_agrees(&raw, limit)?;
        }
    }
}
