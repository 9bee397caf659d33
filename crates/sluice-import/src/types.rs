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
    fn int_range(&self) -> Option<(i64, i64)> {
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

fn trim(b: &[u8]) -> &[u8] {
    let s = b.iter().position(|c| *c != b' ').unwrap_or(b.len());
    let e = b.iter().rposition(|c| *c != b' ').map_or(s, |p| p + 1);
    &b[s..e.max(s)]
}

/// A number in decimal notation, `[-+]digits[.digits][(e|E)[-+]digits]`, as its significant
/// digits and a power of ten: the value is `±digits × 10^exp`. `digits` has no leading or
/// trailing zeros (it is empty for zero), so its length is the number of significant digits.
struct DecimalText<'a> {
    neg: bool,
    digits: DigitRun<'a>,
    exp: i64,
}

/// The significant digits of a [`DecimalText`]: a run of the integer part followed by a run of
/// the fraction (the point removed without copying).
struct DigitRun<'a> {
    int: &'a [u8],
    frac: &'a [u8],
}

impl DigitRun<'_> {
    fn len(&self) -> usize {
        self.int.len() + self.frac.len()
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The digits as an integer (`None` past i128; callers bound the length first).
    fn value(&self) -> Option<i128> {
        self.int.iter().chain(self.frac).try_fold(0i128, |v, &c| {
            v.checked_mul(10)?.checked_add(i128::from(c - b'0'))
        })
    }
}

/// Exponents beyond this make any non-zero value out of range and any zero still zero; the
/// bound keeps the arithmetic on them from overflowing.
const EXP_LIMIT: i64 = 1 << 40;

fn decimal_text(b: &[u8]) -> Option<DecimalText<'_>> {
    let (neg, rest) = match b.first()? {
        b'-' => (true, &b[1..]),
        b'+' => (false, &b[1..]),
        _ => (false, b),
    };
    let (mantissa, exp_text) = match rest.iter().position(|c| *c == b'e' || *c == b'E') {
        Some(p) => (&rest[..p], Some(&rest[p + 1..])),
        None => (rest, None),
    };
    let (int_part, frac_part) = match mantissa.iter().position(|c| *c == b'.') {
        Some(p) => (&mantissa[..p], &mantissa[p + 1..]),
        None => (mantissa, &[][..]),
    };
    if int_part.is_empty() && frac_part.is_empty()
        || !int_part.iter().chain(frac_part).all(u8::is_ascii_digit)
    {
        return None;
    }
    let mut exp: i64 = match exp_text {
        None => 0,
        Some(e) => {
            let (eneg, edigits) = match e.first()? {
                b'-' => (true, &e[1..]),
                b'+' => (false, &e[1..]),
                _ => (false, e),
            };
            if edigits.is_empty() || !edigits.iter().all(u8::is_ascii_digit) {
                return None;
            }
            let v = edigits
                .iter()
                .fold(0i64, |v, &c| (v * 10 + i64::from(c - b'0')).min(EXP_LIMIT));
            if eneg {
                -v
            } else {
                v
            }
        }
    };
    // Strip zeros that carry no digits: leading ones of the integer part, trailing ones of
    // the fraction, then (when the fraction is empty) trailing ones of the integer part, which
    // move into the exponent.
    let int_part = &int_part[int_part.iter().take_while(|c| **c == b'0').count()..];
    let frac_part =
        &frac_part[..frac_part.len() - frac_part.iter().rev().take_while(|c| **c == b'0').count()];
    exp -= frac_part.len() as i64;
    let (int_part, frac_part) = if frac_part.is_empty() {
        let z = int_part.iter().rev().take_while(|c| **c == b'0').count();
        exp += z as i64;
        (&int_part[..int_part.len() - z], frac_part)
    } else if int_part.is_empty() {
        (
            int_part,
            &frac_part[frac_part.iter().take_while(|c| **c == b'0').count()..],
        )
    } else {
        (int_part, frac_part)
    };
    Some(DecimalText {
        neg,
        digits: DigitRun {
            int: int_part,
            frac: frac_part,
        },
        exp,
    })
}

/// `d` scaled by `10^shift` as an integer with at most `max_digits` digits.
fn scaled(d: &DecimalText<'_>, shift: i64, max_digits: usize) -> Result<i128, NumberError> {
    if d.digits.is_empty() {
        return Ok(0);
    }
    let e = d.exp + shift;
    if e < 0 {
        return Err(NumberError::Fraction);
    }
    if d.digits.len() as i64 + e > max_digits as i64 {
        return Err(NumberError::OutOfRange);
    }
    let mut v = d.digits.value().ok_or(NumberError::OutOfRange)?;
    for _ in 0..e {
        v = v.checked_mul(10).ok_or(NumberError::OutOfRange)?;
    }
    Ok(if d.neg { -v } else { v })
}

/// An integer column's value: plain digits on the fast path, else any exact decimal notation.
fn parse_integer(b: &[u8], ty: &ColumnType) -> Result<i64, NumberError> {
    let (lo, hi) = ty.int_range().ok_or(NumberError::Malformed)?;
    let v = match parse_int(b) {
        Some(v) => i128::from(v),
        None => {
            let d = decimal_text(b).ok_or(NumberError::Malformed)?;
            scaled(&d, 0, 20)?
        }
    };
    if v < i128::from(lo) || v > i128::from(hi) {
        return Err(NumberError::OutOfRange);
    }
    Ok(v as i64)
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

/// Decimal notation rounded to the nearest double, or one of the specials; finite text beyond
/// the double range is refused. Rust's parser is correctly rounded and allocation-free, and
/// its grammar is exactly that (`[+-]` then digits with an optional point and exponent, or
/// `inf`/`infinity`/`nan` in any case).
fn parse_double(b: &[u8]) -> Result<f64, NumberError> {
    let s = std::str::from_utf8(b).map_err(|_| NumberError::Malformed)?;
    let v: f64 = s.parse().map_err(|_| NumberError::Malformed)?;
    if v.is_nan() {
        return Ok(f64::NAN);
    }
    if v.is_infinite() {
        let unsigned = s.strip_prefix(['-', '+']).unwrap_or(s);
        if !["inf", "infinity"]
            .iter()
            .any(|w| unsigned.eq_ignore_ascii_case(w))
        {
            return Err(NumberError::OutOfRange);
        }
    }
    Ok(if v == 0.0 { 0.0 } else { v })
}

/// Decimal notation to the unscaled integer at `scale`: more fraction digits than the scale,
/// or more than `precision` digits in all, is refused (trailing zeros of the fraction and
/// leading zeros do not count).
fn parse_decimal(b: &[u8], precision: u8, scale: u8) -> Result<i128, NumberError> {
    let d = decimal_text(b).ok_or(NumberError::Malformed)?;
    scaled(&d, i64::from(scale), usize::from(precision))
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

/// Why a timestamp was refused.
enum TimestampError {
    /// Not `YYYY-MM-DD[ HH:MM[:SS[.f…]]][offset]`.
    Malformed,
    /// A non-zero digit past the microseconds.
    Nanos,
    /// The UTC instant falls outside years 0000..=9999.
    OutOfRange,
}

/// The first and last TIMESTAMP (UTC microseconds): years 0000 to 9999, the years a
/// `YYYY-MM-DD` prints, so every stored timestamp prints as text that reads back.
pub const TIMESTAMP_MIN: i64 = -62_167_219_200_000_000;
/// See [`TIMESTAMP_MIN`].
pub const TIMESTAMP_MAX: i64 = 253_402_300_799_999_999;

/// `YYYY-MM-DD[( |T)HH:MM[:SS[.fraction]]][Z|(+|-)HH[:MM]]` → UTC microseconds. Fraction
/// digits past the sixth must be zeros; an offset is applied (the result is UTC) and must not
/// carry the instant out of [`TIMESTAMP_MIN`]..=[`TIMESTAMP_MAX`].
fn parse_timestamp(b: &[u8]) -> Result<i64, TimestampError> {
    use TimestampError::Malformed;
    let (days, mut rest) = parse_date_prefix(b).ok_or(Malformed)?;
    let mut secs = days * 86_400;
    let mut micros = 0i64;
    if let Some((&sep, r)) = rest.split_first() {
        if sep != b' ' && sep != b'T' && sep != b't' {
            return Err(Malformed);
        }
        let h = digits(r, 2).ok_or(Malformed)?;
        if r.get(2) != Some(&b':') {
            return Err(Malformed);
        }
        let mi = digits(&r[3..], 2).ok_or(Malformed)?;
        rest = &r[5..];
        let mut s = 0;
        if rest.first() == Some(&b':') {
            s = digits(&rest[1..], 2).ok_or(Malformed)?;
            rest = &rest[3..];
            if rest.first() == Some(&b'.') {
                let n = rest[1..].iter().take_while(|c| c.is_ascii_digit()).count();
                if n == 0 {
                    return Err(Malformed);
                }
                let (kept, past) = rest[1..1 + n].split_at(n.min(6));
                let f = digits(kept, kept.len()).ok_or(Malformed)?;
                micros = i64::from(f) * 10i64.pow(6 - kept.len() as u32);
                if past.iter().any(|c| *c != b'0') {
                    return Err(TimestampError::Nanos);
                }
                rest = &rest[1 + n..];
            }
        }
        if h > 23 || mi > 59 || s > 60 {
            return Err(Malformed);
        }
        secs += i64::from(h) * 3600 + i64::from(mi) * 60 + i64::from(s);
        match rest.first() {
            None => {}
            Some(b'Z') | Some(b'z') if rest.len() == 1 => rest = &[],
            Some(&c @ (b'+' | b'-')) => {
                let oh = digits(&rest[1..], 2).ok_or(Malformed)?;
                let r2 = &rest[3..];
                let om = match r2 {
                    [] => 0,
                    [b':', m @ ..] if m.len() == 2 => digits(m, 2).ok_or(Malformed)?,
                    m if m.len() == 2 => digits(m, 2).ok_or(Malformed)?,
                    _ => return Err(Malformed),
                };
                if oh > 23 || om > 59 {
                    return Err(Malformed);
                }
                let off = i64::from(oh) * 3600 + i64::from(om) * 60;
                secs += if c == b'+' { -off } else { off };
                rest = &[];
            }
            _ => return Err(Malformed),
        }
    }
    if !rest.is_empty() {
        return Err(Malformed);
    }
    // Years 0000..=9999 keep `secs` far from overflow.
    let t = secs * 1_000_000 + micros;
    if !(TIMESTAMP_MIN..=TIMESTAMP_MAX).contains(&t) {
        return Err(TimestampError::OutOfRange);
    }
    Ok(t)
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

/// The value as text (CSV output): NULL as the empty string, BYTES as `\x` + hex, doubles as
/// the shortest text that reads back as the same double (`1.5`, `1e300`, `inf`, `-inf`,
/// `nan`), DECIMAL with exactly its scale. [`parse_value`] reads every output back as the
/// same value.
pub fn format_text(v: &Value<'_>, ty: &ColumnType, out: &mut String) {
    match v {
        Value::Null => {}
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Value::Double(d) => format_double(*d, out, ["inf", "-inf", "nan"]),
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

/// A double as the shortest text that reads back as it (exponent form when large or small),
/// the specials as `specials` = [+inf, -inf, NaN].
fn format_double(d: f64, out: &mut String, specials: [&str; 3]) {
    if d.is_nan() {
        out.push_str(specials[2]);
    } else if d.is_infinite() {
        out.push_str(if d > 0.0 { specials[0] } else { specials[1] });
    } else {
        let s = format!("{d:?}");
        out.push_str(s.strip_suffix(".0").unwrap_or(&s));
    }
}

/// The value as JSON, always valid JSON: NULL `null`, integers and finite doubles as numbers,
/// DECIMAL as a number literal with exactly its scale (exact, however many digits), the
/// doubles JSON has no number for as the strings `"Infinity"`, `"-Infinity"` and `"NaN"`
/// (distinct from `null`; the JSON-lines reader reads them back), DATE/TIMESTAMP/BYTES as
/// strings.
///
/// ```
/// use sluice_import::types::{format_json, ColumnType, Value};
/// let mut s = String::new();
/// format_json(&Value::Double(f64::NEG_INFINITY), &ColumnType::Double, &mut s);
/// assert_eq!(s, "\"-Infinity\"");
/// ```
pub fn format_json(v: &Value<'_>, ty: &ColumnType, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Double(d) => format_double(*d, out, ["\"Infinity\"", "\"-Infinity\"", "\"NaN\""]),
        Value::Int(_) | Value::Decimal(_) | Value::Bool(_) => format_text(v, ty, out),
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
}
