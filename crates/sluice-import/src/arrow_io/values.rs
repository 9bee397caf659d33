//! Arrow arrays → typed values of the schema's columns.
//!
//! A batch column is looked at once ([`Cells::new`]: its Arrow type resolved to one typed
//! view) and then read row by row ([`Cells::value`]). Matching types take a direct path (an
//! Int32 array into an INT column, Utf8 into TEXT, Decimal128 into DECIMAL, Timestamp into
//! TIMESTAMP); every other pairing goes through the value's text and [`parse_value`], so an
//! Arrow value is accepted exactly when its text would be accepted from a CSV file (an Int64
//! into a DECIMAL(10,2), a string into a DATE, a Float64 `100.0` into an INT), and refused
//! with the same message otherwise.
//!
//! Invariants:
//! 1. Exact or refused, as for text ([`crate::types`]'s invariant 3): integers out of the
//!    column's range, decimals with more fraction digits than the column's scale, timestamps
//!    finer than microseconds or outside years 0000..=9999 are refused, never cut.
//! 2. [`check_type`] decides per column before any row is read whether an Arrow type can be
//!    stored at all (a List cannot); [`Cells::value`] then fails only for a value.
//! 3. Never panics on any array content (dictionary keys out of range included).

use std::borrow::Cow;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Date64Type, Decimal128Type, Float16Type, Float32Type, Float64Type, Int16Type,
    Int32Type, Int64Type, Int8Type, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{Array, ArrayRef};
use arrow_schema::{DataType, TimeUnit};

use crate::types::{
    format_date, format_decimal, format_timestamp, parse_value, ColumnType, TypeError, Value,
    TIMESTAMP_MAX, TIMESTAMP_MIN,
};

/// First and last DATE (days since 1970-01-01): years 0000..=9999, as for TIMESTAMP.
const DATE_MIN: i64 = TIMESTAMP_MIN / 86_400_000_000;
const DATE_MAX: i64 = TIMESTAMP_MAX / 86_400_000_000;

/// Whether values of Arrow type `dt` can be stored in a column of type `ty` (value by value,
/// under [`Cells::value`]'s rules). `Err` says why not.
pub fn check_type(dt: &DataType, ty: &ColumnType) -> Result<(), String> {
    let ok = match dt {
        DataType::Dictionary(_, v) => return check_type(v, ty),
        DataType::Null => true,
        DataType::Boolean => matches!(ty, ColumnType::Bool | ColumnType::Text { .. }),
        d if d.is_integer() || d.is_floating() || is_decimal(d) => {
            ty.is_numeric() || matches!(ty, ColumnType::Text { .. })
        }
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => true,
        DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_) => ty.is_text(),
        DataType::Date32 | DataType::Date64 | DataType::Timestamp(_, _) => matches!(
            ty,
            ColumnType::Date | ColumnType::Timestamp | ColumnType::Text { .. }
        ),
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "Arrow type {dt} cannot be stored in {} column",
            ty.with_article()
        ))
    }
}

fn is_decimal(d: &DataType) -> bool {
    matches!(
        d,
        DataType::Decimal32(..)
            | DataType::Decimal64(..)
            | DataType::Decimal128(..)
            | DataType::Decimal256(..)
    )
}

/// One Arrow column seen as a typed view.
enum View<'a> {
    Null,
    Bool(&'a arrow_array::BooleanArray),
    /// Any integer type, widened.
    Int(Box<dyn Fn(usize) -> i128 + 'a>),
    Float(Box<dyn Fn(usize) -> f64 + 'a>),
    /// Unscaled value and scale (Decimal32/64/128; Decimal256 goes through its text).
    Decimal(Box<dyn Fn(usize) -> i128 + 'a>, u8),
    Text(Box<dyn Fn(usize) -> &'a str + 'a>),
    Binary(Box<dyn Fn(usize) -> &'a [u8] + 'a>),
    /// Days since the epoch.
    Days(Box<dyn Fn(usize) -> i64 + 'a>),
    /// Time since the epoch in units of `1 / per_second` seconds.
    Instant(Box<dyn Fn(usize) -> i64 + 'a>, i64),
    /// Values as text (Decimal256, negative-scale decimals).
    Display(Box<dyn Fn(usize) -> String + 'a>),
    Dict(Vec<usize>, Box<Cells<'a>>),
}

/// A batch column ready to be read row by row as values of one column type.
pub struct Cells<'a> {
    array: &'a dyn Array,
    view: View<'a>,
    ty: ColumnType,
}

impl<'a> Cells<'a> {
    /// Views `array` for a column of type `ty`; `Err` when [`check_type`] refuses the pairing.
    pub fn new(array: &'a ArrayRef, ty: ColumnType) -> Result<Cells<'a>, String> {
        check_type(array.data_type(), &ty)?;
        Ok(Cells {
            array: array.as_ref(),
            view: view(array.as_ref(), ty)?,
            ty,
        })
    }

    /// Row `i`'s value (`i` must be within the array).
    pub fn value(&self, i: usize) -> Result<Value<'a>, TypeError> {
        if self.array.is_null(i) {
            return Ok(Value::Null);
        }
        let ty = &self.ty;
        match &self.view {
            View::Null => Ok(Value::Null),
            View::Bool(a) => match ty {
                ColumnType::Bool => Ok(Value::Bool(a.value(i))),
                _ => text(ty, if a.value(i) { "true" } else { "false" }.into()),
            },
            View::Int(f) => {
                let v = f(i);
                match ty.int_range() {
                    Some((lo, hi)) if (i128::from(lo)..=i128::from(hi)).contains(&v) => {
                        Ok(Value::Int(v as i64))
                    }
                    None if matches!(ty, ColumnType::Decimal { .. }) => decimal(ty, v, 0),
                    _ => text(ty, v.to_string()),
                }
            }
            View::Float(f) => {
                let v = f(i);
                match ty {
                    ColumnType::Double => Ok(Value::Double(normal_double(v))),
                    _ => text(ty, format_double(v)),
                }
            }
            View::Decimal(f, scale) => decimal(ty, f(i), *scale),
            View::Text(f) => {
                let s = f(i);
                if s.is_empty() && !ty.is_text() {
                    // As JSON's "": the empty string is NULL for a type without an empty value.
                    return Ok(Value::Null);
                }
                parse_value(ty, s.as_bytes())
            }
            View::Binary(f) => match ty {
                ColumnType::Bytes => Ok(Value::Bytes(Cow::Borrowed(f(i)))),
                _ => parse_value(ty, f(i)),
            },
            View::Days(f) => days(ty, f(i)),
            View::Instant(f, per_second) => instant(ty, f(i), *per_second),
            View::Display(f) => text(ty, f(i)),
            View::Dict(keys, values) => match keys.get(i) {
                Some(&k) if k < values.array.len() => values.value(k),
                _ => Err(TypeError {
                    value: String::new(),
                    reason: "has a dictionary key out of range".into(),
                }),
            },
        }
    }

    /// Row `i` as text, for the rejects file (NULL as the empty string).
    pub fn text(&self, i: usize) -> String {
        if self.array.is_null(i) {
            return String::new();
        }
        match &self.view {
            View::Null => String::new(),
            View::Bool(a) => a.value(i).to_string(),
            View::Int(f) => f(i).to_string(),
            View::Float(f) => format_double(f(i)),
            View::Decimal(f, scale) => {
                let mut s = String::new();
                format_decimal(f(i), *scale, &mut s);
                s
            }
            View::Text(f) => f(i).to_string(),
            View::Binary(f) => String::from_utf8_lossy(f(i)).into_owned(),
            View::Days(f) => days_text(f(i)),
            View::Instant(f, per_second) => f(i).to_string() + &unit_suffix(*per_second),
            View::Display(f) => f(i),
            View::Dict(keys, values) => keys
                .get(i)
                .filter(|&&k| k < values.array.len())
                .map_or_else(String::new, |&k| values.text(k)),
        }
    }
}

fn view(a: &dyn Array, ty: ColumnType) -> Result<View<'_>, String> {
    macro_rules! prim {
        ($t:ty, $variant:ident, $conv:expr) => {{
            let p = a.as_primitive::<$t>();
            View::$variant(Box::new(move |i| $conv(p.value(i))))
        }};
    }
    Ok(match a.data_type() {
        DataType::Null => View::Null,
        DataType::Boolean => View::Bool(a.as_boolean()),
        DataType::Int8 => prim!(Int8Type, Int, i128::from),
        DataType::Int16 => prim!(Int16Type, Int, i128::from),
        DataType::Int32 => prim!(Int32Type, Int, i128::from),
        DataType::Int64 => prim!(Int64Type, Int, i128::from),
        DataType::UInt8 => prim!(UInt8Type, Int, i128::from),
        DataType::UInt16 => prim!(UInt16Type, Int, i128::from),
        DataType::UInt32 => prim!(UInt32Type, Int, i128::from),
        DataType::UInt64 => prim!(UInt64Type, Int, i128::from),
        DataType::Float16 => prim!(Float16Type, Float, f64::from),
        DataType::Float32 => prim!(Float32Type, Float, f64::from),
        DataType::Float64 => prim!(Float64Type, Float, |v: f64| v),
        DataType::Decimal32(_, s) if *s >= 0 => {
            let p = a.as_primitive::<arrow_array::types::Decimal32Type>();
            View::Decimal(Box::new(move |i| i128::from(p.value(i))), *s as u8)
        }
        DataType::Decimal64(_, s) if *s >= 0 => {
            let p = a.as_primitive::<arrow_array::types::Decimal64Type>();
            View::Decimal(Box::new(move |i| i128::from(p.value(i))), *s as u8)
        }
        DataType::Decimal128(_, s) if *s >= 0 => {
            let p = a.as_primitive::<Decimal128Type>();
            View::Decimal(Box::new(move |i| p.value(i)), *s as u8)
        }
        DataType::Decimal32(..)
        | DataType::Decimal64(..)
        | DataType::Decimal128(..)
        | DataType::Decimal256(..) => {
            // Negative scales and 256-bit values: Arrow's own text of the value.
            let dt = a.data_type().clone();
            View::Display(Box::new(move |i| decimal_text(a, &dt, i)))
        }
        DataType::Utf8 => {
            let s = a.as_string::<i32>();
            View::Text(Box::new(move |i| s.value(i)))
        }
        DataType::LargeUtf8 => {
            let s = a.as_string::<i64>();
            View::Text(Box::new(move |i| s.value(i)))
        }
        DataType::Utf8View => {
            let s = a.as_string_view();
            View::Text(Box::new(move |i| s.value(i)))
        }
        DataType::Binary => {
            let b = a.as_binary::<i32>();
            View::Binary(Box::new(move |i| b.value(i)))
        }
        DataType::LargeBinary => {
            let b = a.as_binary::<i64>();
            View::Binary(Box::new(move |i| b.value(i)))
        }
        DataType::BinaryView => {
            let b = a.as_binary_view();
            View::Binary(Box::new(move |i| b.value(i)))
        }
        DataType::FixedSizeBinary(_) => {
            let b = a.as_fixed_size_binary();
            View::Binary(Box::new(move |i| b.value(i)))
        }
        DataType::Date32 => prim!(Date32Type, Days, i64::from),
        DataType::Date64 => {
            let p = a.as_primitive::<Date64Type>();
            View::Instant(Box::new(move |i| p.value(i)), 1_000)
        }
        DataType::Timestamp(unit, _) => match unit {
            TimeUnit::Second => {
                let p = a.as_primitive::<TimestampSecondType>();
                View::Instant(Box::new(move |i| p.value(i)), 1)
            }
            TimeUnit::Millisecond => {
                let p = a.as_primitive::<TimestampMillisecondType>();
                View::Instant(Box::new(move |i| p.value(i)), 1_000)
            }
            TimeUnit::Microsecond => {
                let p = a.as_primitive::<TimestampMicrosecondType>();
                View::Instant(Box::new(move |i| p.value(i)), 1_000_000)
            }
            TimeUnit::Nanosecond => {
                let p = a.as_primitive::<TimestampNanosecondType>();
                View::Instant(Box::new(move |i| p.value(i)), 1_000_000_000)
            }
        },
        DataType::Dictionary(_, _) => {
            let d = a
                .as_any_dictionary_opt()
                .ok_or_else(|| format!("{} is not a dictionary array", a.data_type()))?;
            let values = d.values();
            let inner = Cells {
                array: values.as_ref(),
                view: view(values.as_ref(), ty)?,
                ty,
            };
            View::Dict(d.normalized_keys(), Box::new(inner))
        }
        other => return Err(format!("Arrow type {other} is not supported")),
    })
}

/// A decimal of any width as text, from its unscaled value and scale.
fn decimal_text(a: &dyn Array, dt: &DataType, i: usize) -> String {
    let (unscaled, scale) = match dt {
        DataType::Decimal32(_, s) => (
            a.as_primitive::<arrow_array::types::Decimal32Type>()
                .value(i)
                .to_string(),
            *s,
        ),
        DataType::Decimal64(_, s) => (
            a.as_primitive::<arrow_array::types::Decimal64Type>()
                .value(i)
                .to_string(),
            *s,
        ),
        DataType::Decimal128(_, s) => (a.as_primitive::<Decimal128Type>().value(i).to_string(), *s),
        DataType::Decimal256(_, s) => (
            a.as_primitive::<arrow_array::types::Decimal256Type>()
                .value(i)
                .to_string(),
            *s,
        ),
        _ => return String::new(),
    };
    // `e` notation keeps any scale exact: 12345 at scale 2 is 12345e-2.
    format!("{unscaled}e{}", -i64::from(scale))
}

/// `-0.0` as `0.0` and every NaN as [`f64::NAN`] (the values' invariant 2).
fn normal_double(v: f64) -> f64 {
    if v.is_nan() {
        f64::NAN
    } else if v == 0.0 {
        0.0
    } else {
        v
    }
}

/// A double as the text `parse_value` reads back as the same double.
fn format_double(v: f64) -> String {
    if v.is_nan() {
        "nan".into()
    } else if v.is_infinite() {
        if v > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        format!("{v:e}")
    }
}

fn text(ty: &ColumnType, s: String) -> Result<Value<'static>, TypeError> {
    parse_value(ty, s.as_bytes()).map(Value::into_owned)
}

fn decimal<'a>(ty: &ColumnType, v: i128, scale: u8) -> Result<Value<'a>, TypeError> {
    if let ColumnType::Decimal {
        precision,
        scale: want,
    } = ty
    {
        let limit = 10i128.checked_pow(u32::from(*precision));
        let rescaled = if *want >= scale {
            10i128
                .checked_pow(u32::from(want - scale))
                .and_then(|m| v.checked_mul(m))
        } else {
            10i128
                .checked_pow(u32::from(scale - want))
                .filter(|d| v % d == 0)
                .map(|d| v / d)
        };
        if let (Some(r), Some(limit)) = (rescaled, limit) {
            if r.unsigned_abs() < limit.unsigned_abs() {
                return Ok(Value::Decimal(r));
            }
        }
    }
    let mut s = String::new();
    format_decimal(v, scale, &mut s);
    text(ty, s)
}

fn days_text(d: i64) -> String {
    let mut s = String::new();
    match i32::try_from(d) {
        Ok(d32) if (DATE_MIN..=DATE_MAX).contains(&d) => format_date(d32, &mut s),
        _ => s = format!("{d} days after 1970-01-01"),
    }
    s
}

fn days<'a>(ty: &ColumnType, d: i64) -> Result<Value<'a>, TypeError> {
    let out_of_range = || TypeError {
        value: days_text(d),
        reason: format!("is out of range for {ty} (years 0000 to 9999)"),
    };
    if !(DATE_MIN..=DATE_MAX).contains(&d) {
        return Err(out_of_range());
    }
    match ty {
        ColumnType::Date => Ok(Value::Date(d as i32)),
        ColumnType::Timestamp => Ok(Value::Timestamp(d * 86_400_000_000)),
        _ => text(ty, days_text(d)),
    }
}

fn unit_suffix(per_second: i64) -> String {
    match per_second {
        1 => "s",
        1_000 => "ms",
        1_000_000 => "us",
        _ => "ns",
    }
    .to_string()
}

fn instant<'a>(ty: &ColumnType, v: i64, per_second: i64) -> Result<Value<'a>, TypeError> {
    let shown = || format!("{v}{} after 1970-01-01T00:00:00Z", unit_suffix(per_second));
    let micros = match per_second {
        1_000_000_000 if v % 1_000 != 0 => {
            return Err(TypeError {
                value: shown(),
                reason: format!("has a fraction finer than microseconds ({ty} keeps microseconds)"),
            })
        }
        1_000_000_000 => Some(v / 1_000),
        p => v.checked_mul(1_000_000 / p),
    };
    let micros = micros
        .filter(|m| (TIMESTAMP_MIN..=TIMESTAMP_MAX).contains(m))
        .ok_or_else(|| TypeError {
            value: shown(),
            reason: format!("is out of range for {ty} (years 0000 to 9999)"),
        })?;
    match ty {
        ColumnType::Timestamp => Ok(Value::Timestamp(micros)),
        ColumnType::Date if micros % 86_400_000_000 == 0 => {
            Ok(Value::Date((micros / 86_400_000_000) as i32))
        }
        ColumnType::Date => Err(TypeError {
            value: shown(),
            reason: "is not a DATE (it has a time of day)".into(),
        }),
        _ => {
            let mut s = String::new();
            format_timestamp(micros, &mut s);
            text(ty, s)
        }
    }
}
