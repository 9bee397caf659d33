//! Column types and column options: each implemented or refused at its position.

use sqlparser::ast::{
    CharLengthUnits, CharacterLength, ColumnOption, ColumnOptionDef, DataType, ExactNumberInfo,
    TimezoneInfo,
};

use crate::types::ColumnType;

use super::source::{err, ident_name, ident_pos, refuse, Pos, Source};
use super::table::Keys;
use super::SchemaError;

pub(super) fn char_length(
    l: &Option<CharacterLength>,
    default: Option<u32>,
    dt: &DataType,
    at: Pos,
) -> Result<Option<u32>, SchemaError> {
    match l {
        None => Ok(default),
        Some(CharacterLength::Max) => Ok(None),
        Some(CharacterLength::IntegerLength { length, unit }) => {
            if *unit == Some(CharLengthUnits::Octets) {
                return Err(err(
                    at,
                    format!("{dt}: a length in OCTETS is not supported (lengths count characters)"),
                ));
            }
            u32::try_from(*length)
                .ok()
                .filter(|n| *n > 0)
                .map(Some)
                .ok_or_else(|| err(at, format!("{dt}: the length must be 1..=4294967295")))
        }
    }
}

/// A display width (MySQL's `INT(11)`) or a length on a type that has none here.
pub(super) fn no_modifier(
    m: &Option<u64>,
    dt: &DataType,
    at: Pos,
    what: &str,
) -> Result<(), SchemaError> {
    match m {
        None => Ok(()),
        Some(_) => Err(err(at, format!("{dt}: {what} is not supported"))),
    }
}

pub(super) fn column_type(dt: &DataType, at: Pos) -> Result<ColumnType, SchemaError> {
    let width = "a display width";
    Ok(match dt {
        DataType::SmallInt(w) | DataType::Int2(w) => {
            no_modifier(w, dt, at, width)?;
            ColumnType::SmallInt
        }
        DataType::Int(w) | DataType::Integer(w) | DataType::Int4(w) => {
            no_modifier(w, dt, at, width)?;
            ColumnType::Int
        }
        DataType::BigInt(w) | DataType::Int8(w) => {
            no_modifier(w, dt, at, width)?;
            ColumnType::BigInt
        }
        // REAL and FLOAT4 are stored as binary64: every single-precision value is kept exactly.
        DataType::DoublePrecision
        | DataType::Real
        | DataType::Float4
        | DataType::Float8
        | DataType::Float64
        | DataType::Double(ExactNumberInfo::None)
        | DataType::Float(ExactNumberInfo::None) => ColumnType::Double,
        DataType::Float(ExactNumberInfo::Precision(p)) if (1..=53).contains(p) => ColumnType::Double,
        DataType::Float(_) | DataType::Double(_) => {
            return Err(err(
                at,
                format!("{dt}: only FLOAT(p) with p of 1..=53 (binary64 has 53 bits) is supported, DOUBLE takes no arguments"),
            ))
        }
        DataType::Decimal(info) | DataType::Numeric(info) | DataType::Dec(info) => {
            let (p, s) = match info {
                ExactNumberInfo::None => (38, 0),
                ExactNumberInfo::Precision(p) => (*p, 0),
                ExactNumberInfo::PrecisionAndScale(p, s) => {
                    (*p, u64::try_from(*s).unwrap_or(u64::MAX))
                }
            };
            if p == 0 || p > 38 || s > p {
                return Err(err(
                    at,
                    format!("{dt}: precision must be 1..=38 and scale 0..=precision"),
                ));
            }
            ColumnType::Decimal {
                precision: p as u8,
                scale: s as u8,
            }
        }
        DataType::Bool | DataType::Boolean => ColumnType::Bool,
        DataType::Text | DataType::String(None) => ColumnType::Text { max_chars: None },
        DataType::String(Some(n)) => ColumnType::Text {
            max_chars: u32::try_from(*n).ok().filter(|n| *n > 0).map(Some).ok_or_else(|| {
                err(at, format!("{dt}: the length must be 1..=4294967295"))
            })?,
        },
        DataType::Varchar(l) | DataType::CharacterVarying(l) | DataType::CharVarying(l) => {
            ColumnType::Text {
                max_chars: char_length(l, None, dt, at)?,
            }
        }
        // CHAR(n): a length limit, no blank padding; CHAR alone is CHAR(1) (SQL standard).
        DataType::Char(l) | DataType::Character(l) => ColumnType::Text {
            max_chars: char_length(l, Some(1), dt, at)?,
        },
        DataType::Bytea => ColumnType::Bytes,
        DataType::Bytes(n) | DataType::Blob(n) => {
            no_modifier(n, dt, at, "a length")?;
            ColumnType::Bytes
        }
        DataType::Date => ColumnType::Date,
        // Stored as a UTC instant with microseconds; an offset in the input is applied, with
        // or without TIME ZONE in the type (as DuckDB reads an offset into TIMESTAMP).
        DataType::Timestamp(p, tz) => {
            if !matches!(p, None | Some(6)) {
                return Err(err(
                    at,
                    format!("{dt}: only microsecond precision (TIMESTAMP or TIMESTAMP(6)) is supported"),
                ));
            }
            match tz {
                TimezoneInfo::None
                | TimezoneInfo::WithTimeZone
                | TimezoneInfo::WithoutTimeZone
                | TimezoneInfo::Tz => ColumnType::Timestamp,
            }
        }
        DataType::Datetime(p) => {
            if !matches!(p, None | Some(6)) {
                return Err(err(
                    at,
                    format!("{dt}: only microsecond precision (DATETIME or DATETIME(6)) is supported"),
                ));
            }
            ColumnType::Timestamp
        }
        other => {
            return Err(err(
                at,
                format!("column type {other} is not supported (INT, BIGINT, SMALLINT, DOUBLE, DECIMAL(p,s), BOOLEAN, TEXT, VARCHAR(n), CHAR(n), BYTES, DATE, TIMESTAMP are)"),
            ))
        }
    })
}

/// Collations whose order is the byte order of UTF-8, the order TEXT keys have.
pub(super) const BYTE_ORDER_COLLATIONS: [&str; 4] = ["C", "POSIX", "binary", "ucs_basic"];

/// What a column's options say.
#[derive(Default)]
pub(super) struct ColumnFacts {
    pub(super) not_null: Option<Pos>,
    pub(super) null: Option<Pos>,
}

/// The keywords that start a column option, to find where it is written.
pub(super) fn option_keywords<'a>(
    src: &Source,
    from: usize,
    option: &ColumnOption,
    first: &'a str,
) -> Vec<&'a str> {
    let either = |a: &'static str, b: &'static str| {
        if src.find_index(from, &[a]).is_some() {
            vec![a]
        } else {
            vec![b]
        }
    };
    match option {
        ColumnOption::Null => vec!["NULL"],
        ColumnOption::NotNull => vec!["NOT", "NULL"],
        ColumnOption::Default(_) => vec!["DEFAULT"],
        ColumnOption::Materialized(_) => vec!["MATERIALIZED"],
        ColumnOption::Ephemeral(_) => vec!["EPHEMERAL"],
        ColumnOption::Alias(_) => vec!["ALIAS"],
        ColumnOption::Unique {
            is_primary: true, ..
        } => vec!["PRIMARY", "KEY"],
        ColumnOption::Unique { .. } => vec!["UNIQUE"],
        ColumnOption::ForeignKey { .. } => vec!["REFERENCES"],
        ColumnOption::Check(_) => vec!["CHECK"],
        ColumnOption::DialectSpecific(_) => vec![first],
        ColumnOption::CharacterSet(_) => either("CHARACTER", "CHARSET"),
        ColumnOption::Collation(_) => vec!["COLLATE"],
        ColumnOption::Comment(_) => vec!["COMMENT"],
        ColumnOption::OnUpdate(_) => vec!["ON", "UPDATE"],
        ColumnOption::Generated { .. } => either("GENERATED", "AS"),
        ColumnOption::Options(_) => vec!["OPTIONS"],
        ColumnOption::Identity(_) => either("IDENTITY", "AUTOINCREMENT"),
        ColumnOption::OnConflict(_) => vec!["ON", "CONFLICT"],
        ColumnOption::Policy(_) => either("MASKING", "PROJECTION"),
        ColumnOption::Tags(_) => vec!["TAG"],
        ColumnOption::Srid(_) => vec!["SRID"],
    }
}

/// The options of column `c` (defined at `at`): NOT NULL / NULL, PRIMARY KEY, UNIQUE, a
/// byte-order COLLATE; everything else refused at its keyword. Options are found in the text
/// in order, each after the one before.
pub(super) fn column_options(
    src: &Source,
    c: &sqlparser::ast::ColumnDef,
    name: &str,
    at: Pos,
    facts: &mut ColumnFacts,
    keys: &mut Keys,
) -> Result<(), SchemaError> {
    let mut cur = src.index_at(at) + 1;
    for ColumnOptionDef {
        name: cname,
        option,
    } in &c.options
    {
        let dialect_text = match option {
            ColumnOption::DialectSpecific(tokens) => tokens
                .iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(" "),
            _ => String::new(),
        };
        let first = dialect_text.split_whitespace().next().unwrap_or("");
        let kw = option_keywords(src, cur, option, first);
        let i = src.find_index(cur, &kw);
        let p = i.map_or(at, |i| src.pos(i));
        if let Some(i) = i {
            cur = i + kw.len();
        }
        let named = cname.as_ref().map(|n| (ident_name(n), ident_pos(n)));
        if let (Some((n, np)), false) = (&named, matches!(option, ColumnOption::Unique { .. })) {
            return Err(err(
                *np,
                format!("CONSTRAINT {n} on {option} is not supported (name UNIQUE and PRIMARY KEY constraints only)"),
            ));
        }
        let no = |clause: &str, why: &str| err(p, format!("{clause} is not supported ({why})"));
        match option {
            ColumnOption::NotNull => {
                if facts.null.is_some() {
                    return Err(err(p, format!("column {name}: NULL and NOT NULL conflict")));
                }
                facts.not_null = Some(p);
            }
            ColumnOption::Null => {
                if facts.not_null.is_some() {
                    return Err(err(p, format!("column {name}: NULL and NOT NULL conflict")));
                }
                facts.null = Some(p);
            }
            ColumnOption::Unique {
                is_primary,
                characteristics,
            } => {
                if let Some(ch) = characteristics {
                    let text = ch.to_string();
                    let first = text.split_whitespace().next().unwrap_or("");
                    return Err(refuse(
                        src,
                        p,
                        &[first],
                        &text,
                        "constraints are checked at once, always",
                    ));
                }
                let cols = vec![(name.to_string(), at)];
                if *is_primary {
                    if keys.pk.is_some() {
                        return Err(err(p, "more than one PRIMARY KEY"));
                    }
                    keys.pk = Some((cols, p));
                } else {
                    keys.unique.push((named.map(|n| n.0), cols, p));
                }
            }
            ColumnOption::Collation(coll) => {
                let text = coll.to_string();
                let bare = text.trim_matches(['"', '`', '\'']);
                if !BYTE_ORDER_COLLATIONS
                    .iter()
                    .any(|b| b.eq_ignore_ascii_case(bare))
                {
                    return Err(no(
                        &format!("COLLATE {text}"),
                        "TEXT compares by bytes: only COLLATE \"C\", POSIX, binary or ucs_basic, which mean that, are accepted",
                    ));
                }
            }
            ColumnOption::Default(_) => {
                return Err(no(
                    "DEFAULT",
                    "a missing value is NULL; give every value in the input",
                ))
            }
            ColumnOption::Materialized(_) => return Err(no("MATERIALIZED", "no computed columns")),
            ColumnOption::Ephemeral(_) => return Err(no("EPHEMERAL", "no computed columns")),
            ColumnOption::Alias(_) => return Err(no("ALIAS", "no computed columns")),
            ColumnOption::ForeignKey { .. } => {
                return Err(no("REFERENCES", "foreign keys are not checked"))
            }
            ColumnOption::Check(_) => return Err(no("CHECK", "no CHECK constraints")),
            ColumnOption::DialectSpecific(_) => return Err(no(&dialect_text, "a dialect clause")),
            ColumnOption::CharacterSet(_) => return Err(no("CHARACTER SET", "TEXT is UTF-8")),
            ColumnOption::Comment(_) => return Err(no("COMMENT", "comments are not stored")),
            ColumnOption::OnUpdate(_) => return Err(no("ON UPDATE", "no computed columns")),
            ColumnOption::Generated { .. } => {
                return Err(no("GENERATED / AS (…)", "no computed or identity columns"))
            }
            ColumnOption::Options(_) => return Err(no("OPTIONS (…)", "a dialect clause")),
            ColumnOption::Identity(_) => {
                return Err(no("IDENTITY / AUTOINCREMENT", "values come from the input"))
            }
            ColumnOption::OnConflict(_) => return Err(no("ON CONFLICT", "see --on-duplicate")),
            ColumnOption::Policy(_) => return Err(no("a column policy", "a dialect clause")),
            ColumnOption::Tags(_) => return Err(no("TAG", "a dialect clause")),
            ColumnOption::Srid(_) => return Err(no("SRID", "a dialect clause")),
        }
    }
    Ok(())
}

/// An index declared in CREATE TABLE: its name if given, its columns (name and place), and
/// where it is written.
pub(super) type DeclaredIndex = (Option<String>, Vec<(String, Pos)>, Pos);
