//! DATE and TIMESTAMP text: parsing within years 0000..=9999 (UTC).

pub(super) fn digits(b: &[u8], n: usize) -> Option<u32> {
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

pub(super) fn days_in_month(y: u32, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (y.is_multiple_of(4) && !y.is_multiple_of(100)) || y.is_multiple_of(400) => 29,
        _ => 28,
    }
}

/// `YYYY-MM-DD` → (days, rest of input).
pub(super) fn parse_date_prefix(b: &[u8]) -> Option<(i64, &[u8])> {
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

pub(super) fn parse_date(b: &[u8]) -> Option<i32> {
    let (days, rest) = parse_date_prefix(b)?;
    rest.is_empty().then_some(days as i32)
}

/// Why a timestamp was refused.
pub(super) enum TimestampError {
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
pub(super) fn parse_timestamp(b: &[u8]) -> Result<i64, TimestampError> {
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
