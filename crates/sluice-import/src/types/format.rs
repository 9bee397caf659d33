//! Values printed back: CSV fields and JSON, text that parses back as the same value.

use std::fmt::Write as _;

use super::time::civil_from_days;
use super::{ColumnType, Value};

/// Formats a DATE day number as `YYYY-MM-DD`.
pub fn format_date(days: i32, out: &mut String) {
    let (y, m, d) = civil_from_days(i64::from(days));
    push_ymd(out, y, m, d);
}

/// `YYYY-MM-DD` (a year outside 0..=9999 as `write!` gives it: a sign, or more digits).
fn push_ymd(out: &mut String, y: i64, m: u32, d: u32) {
    if (0..=9999).contains(&y) {
        let y = y as u32;
        push_2(out, y / 100);
        push_2(out, y % 100);
        out.push('-');
        push_2(out, m);
        out.push('-');
        push_2(out, d);
    } else {
        let _ = write!(out, "{y:04}-{m:02}-{d:02}");
    }
}

/// Two decimal digits of `v` (< 100).
fn push_2(out: &mut String, v: u32) {
    out.push(char::from(b'0' + (v / 10) as u8));
    out.push(char::from(b'0' + (v % 10) as u8));
}

/// Formats a TIMESTAMP as ISO-8601 UTC: `YYYY-MM-DDTHH:MM:SS[.ffffff]Z`.
pub fn format_timestamp(micros: i64, out: &mut String) {
    let secs = micros.div_euclid(1_000_000);
    let frac = micros.rem_euclid(1_000_000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    // By hand rather than `write!`: a scan prints one per row (`sluice scan` of a timestamp
    // column spent 12% of its CPU in the formatting machinery).
    push_ymd(out, y, m, d);
    out.push('T');
    let sod = sod as u32;
    push_2(out, sod / 3600);
    out.push(':');
    push_2(out, sod / 60 % 60);
    out.push(':');
    push_2(out, sod % 60);
    if frac != 0 {
        let f = frac as u32;
        out.push('.');
        push_2(out, f / 10_000);
        push_2(out, f / 100 % 100);
        push_2(out, f % 100);
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
/// `nan`), DECIMAL with exactly its scale. [`super::parse_value`] reads every output back as the
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
pub(super) fn format_double(d: f64, out: &mut String, specials: [&str; 3]) {
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
    use proptest::strategy::Strategy as _;

    /// The formatting `format_date` and `format_timestamp` had before they wrote digits by
    /// hand: `write!` with zero padding.
    fn reference(micros: i64) -> String {
        let secs = micros.div_euclid(1_000_000);
        let frac = micros.rem_euclid(1_000_000);
        let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
        let sod = secs.rem_euclid(86_400);
        let mut s = format!(
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
            sod / 3600,
            sod / 60 % 60,
            sod % 60
        );
        if frac != 0 {
            s += &format!(".{frac:06}");
        }
        s + "Z"
    }

    proptest::proptest! {
        /// Every timestamp (years far before 0 and after 9999 among them) and every date
        /// print as `write!` printed them.
        #[test]
        fn hand_written_digits_print_as_write_did(
            micros in proptest::prop_oneof![
                proptest::num::i64::ANY,
                -62_167_219_200_000_000i64..253_402_300_800_000_000,
                (-100_000i64..100_000).prop_map(|s| s * 1_000_000),
            ],
            days in proptest::num::i32::ANY,
        ) {
            let mut s = String::new();
            format_timestamp(micros, &mut s);
            proptest::prop_assert_eq!(&s, &reference(micros));
            let mut d = String::new();
            format_date(days, &mut d);
            let (y, m, dd) = civil_from_days(i64::from(days));
            proptest::prop_assert_eq!(d, format!("{y:04}-{m:02}-{dd:02}"));
        }
    }
}
