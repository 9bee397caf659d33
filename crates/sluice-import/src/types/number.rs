//! Numbers from their text: integers, DECIMAL at full precision, DOUBLE with its specials.

use super::{ColumnType, NumberError};

pub(super) fn trim(b: &[u8]) -> &[u8] {
    let s = b.iter().position(|c| *c != b' ').unwrap_or(b.len());
    let e = b.iter().rposition(|c| *c != b' ').map_or(s, |p| p + 1);
    &b[s..e.max(s)]
}

/// A number in decimal notation, `[-+]digits[.digits][(e|E)[-+]digits]`, as its significant
/// digits and a power of ten: the value is `±digits × 10^exp`. `digits` has no leading or
/// trailing zeros (it is empty for zero), so its length is the number of significant digits.
pub(super) struct DecimalText<'a> {
    neg: bool,
    digits: DigitRun<'a>,
    exp: i64,
}

/// The significant digits of a [`DecimalText`]: a run of the integer part followed by a run of
/// the fraction (the point removed without copying).
pub(super) struct DigitRun<'a> {
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
pub(super) const EXP_LIMIT: i64 = 1 << 40;

pub(super) fn decimal_text(b: &[u8]) -> Option<DecimalText<'_>> {
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
pub(super) fn scaled(
    d: &DecimalText<'_>,
    shift: i64,
    max_digits: usize,
) -> Result<i128, NumberError> {
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
pub(super) fn parse_integer(b: &[u8], ty: &ColumnType) -> Result<i64, NumberError> {
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

pub(super) fn parse_int(b: &[u8]) -> Option<i64> {
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
pub(super) fn parse_double(b: &[u8]) -> Result<f64, NumberError> {
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
pub(super) fn parse_decimal(b: &[u8], precision: u8, scale: u8) -> Result<i128, NumberError> {
    let d = decimal_text(b).ok_or(NumberError::Malformed)?;
    scaled(&d, i64::from(scale), usize::from(precision))
}
