//! Export → import round trips: random rows (NULLs, empty strings, quotes, delimiters, line
//! breaks, the NULL marker as text, inf/NaN, 38-digit decimals, dates and timestamps at the
//! edges of their range) loaded from JSON lines, written out as CSV (with and without a
//! `--null` marker) and as JSON, and imported again: the same rows, value for value.

mod common;

use std::fmt::Write as _;

use common::*;
use proptest::prelude::*;
use sluice_import::types::{
    days_from_civil, format_json, ColumnType, TIMESTAMP_MAX, TIMESTAMP_MIN,
};
use sluice_import::{open_db, ImportOptions, OutputFormat, TableReader};

const SCHEMA: &str = "CREATE TABLE r (id INT PRIMARY KEY, t TEXT, v VARCHAR(5), b BYTES, \
    d DOUBLE, m DECIMAL(38,10), n BIGINT, dt DATE, ts TIMESTAMP, ok BOOLEAN, tn TEXT NOT NULL);\
    CREATE INDEX by_t ON r (t);";

/// One generated row, without its id.
#[derive(Debug, Clone)]
struct Row {
    t: Option<String>,
    v: Option<String>,
    b: Option<Vec<u8>>,
    d: Option<f64>,
    m: Option<i128>,
    n: Option<i64>,
    dt: Option<i32>,
    ts: Option<i64>,
    ok: Option<bool>,
    tn: String,
}

/// Text that is hard for CSV: pieces with delimiters, quotes, line breaks, NULL markers.
fn nasty_text(max_chars: usize) -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just(""),
        Just(","),
        Just("\""),
        Just("\"\""),
        Just("\n"),
        Just("\r\n"),
        Just("\r"),
        Just("NA"),
        Just("\\N"),
        Just(" "),
        Just("null"),
        Just("é"),
        Just("a"),
        Just("\\x41"),
        Just("\t"),
    ];
    proptest::collection::vec(piece, 0..4).prop_map(move |ps| {
        let s: String = ps.concat();
        s.chars().take(max_chars).collect()
    })
}

fn double() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(f64::NAN),
        Just(0.0),
        Just(f64::MAX),
        Just(f64::MIN_POSITIVE),
        Just(5e-324),
        any::<f64>().prop_filter("finite", |d| d.is_finite()),
    ]
}

fn row() -> impl Strategy<Value = Row> {
    let max38 = 10i128.pow(38) - 1;
    let days = days_from_civil(0, 1, 1) as i32..=days_from_civil(9999, 12, 31) as i32;
    (
        (
            proptest::option::of(nasty_text(12)),
            proptest::option::of(nasty_text(5)),
            proptest::option::of(proptest::collection::vec(any::<u8>(), 0..4)),
            proptest::option::of(double()),
            proptest::option::of(prop_oneof![Just(max38), Just(-max38), -max38..=max38]),
        ),
        (
            proptest::option::of(any::<i64>()),
            proptest::option::of(days),
            proptest::option::of(prop_oneof![
                Just(TIMESTAMP_MIN),
                Just(TIMESTAMP_MAX),
                TIMESTAMP_MIN..=TIMESTAMP_MAX
            ]),
            proptest::option::of(any::<bool>()),
            nasty_text(8),
        ),
    )
        .prop_map(|((t, v, b, d, m), (n, dt, ts, ok, tn))| Row {
            t,
            v,
            b,
            d,
            m,
            n,
            dt,
            ts,
            ok,
            tn,
        })
}

/// The rows as JSON lines, written independently of the library's writer: strings with
/// serde_json, BYTES as `\x` hex, doubles as strings (specials) or numbers, DECIMAL as a
/// number literal with its 10 fraction digits, DATE/TIMESTAMP as ISO text.
fn to_jsonl(rows: &[Row]) -> String {
    let mut out = String::new();
    for (id, r) in rows.iter().enumerate() {
        let mut fields = vec![format!("\"id\":{id}")];
        let s = |x: &str| serde_json::to_string(x).unwrap();
        if let Some(x) = &r.t {
            fields.push(format!("\"t\":{}", s(x)));
        }
        if let Some(x) = &r.v {
            fields.push(format!("\"v\":{}", s(x)));
        }
        if let Some(x) = &r.b {
            let hex: String = x.iter().map(|c| format!("{c:02x}")).collect();
            fields.push(format!("\"b\":{}", s(&format!("\\x{hex}"))));
        }
        if let Some(x) = r.d {
            let text = if x.is_nan() {
                "\"NaN\"".to_string()
            } else if x.is_infinite() {
                format!("\"{}\"", if x > 0.0 { "inf" } else { "-Infinity" })
            } else {
                format!("{x:e}")
            };
            fields.push(format!("\"d\":{text}"));
        }
        if let Some(x) = r.m {
            let digits = format!("{:011}", x.unsigned_abs());
            let (i, f) = digits.split_at(digits.len() - 10);
            let sign = if x < 0 { "-" } else { "" };
            fields.push(format!("\"m\":{sign}{i}.{f}"));
        }
        if let Some(x) = r.n {
            fields.push(format!("\"n\":{x}"));
        }
        if let Some(x) = r.dt {
            let mut d = String::new();
            sluice_import::types::format_date(x, &mut d);
            fields.push(format!("\"dt\":{}", s(&d)));
        }
        if let Some(x) = r.ts {
            let mut d = String::new();
            sluice_import::types::format_timestamp(x, &mut d);
            fields.push(format!("\"ts\":{}", s(&d.replace('T', " "))));
        }
        if let Some(x) = r.ok {
            fields.push(format!("\"ok\":{x}"));
        }
        fields.push(format!("\"tn\":{}", s(&r.tn)));
        let _ = writeln!(out, "{{{}}}", fields.join(","));
    }
    out
}

/// The JSON lines the library should print for the rows (its JSON writer, unit-tested on its
/// own), to compare the first import with.
fn expected_json(rows: &[Row]) -> Vec<String> {
    use sluice_import::types::Value;
    use std::borrow::Cow;
    let cols: [(&str, ColumnType); 11] = [
        ("id", ColumnType::Int),
        ("t", ColumnType::Text { max_chars: None }),
        ("v", ColumnType::Text { max_chars: Some(5) }),
        ("b", ColumnType::Bytes),
        ("d", ColumnType::Double),
        (
            "m",
            ColumnType::Decimal {
                precision: 38,
                scale: 10,
            },
        ),
        ("n", ColumnType::BigInt),
        ("dt", ColumnType::Date),
        ("ts", ColumnType::Timestamp),
        ("ok", ColumnType::Bool),
        ("tn", ColumnType::Text { max_chars: None }),
    ];
    rows.iter()
        .enumerate()
        .map(|(id, r)| {
            let vals: [Value<'_>; 11] = [
                Value::Int(id as i64),
                r.t.as_deref()
                    .map_or(Value::Null, |x| Value::Text(Cow::Borrowed(x))),
                r.v.as_deref()
                    .map_or(Value::Null, |x| Value::Text(Cow::Borrowed(x))),
                r.b.as_deref()
                    .map_or(Value::Null, |x| Value::Bytes(Cow::Borrowed(x))),
                r.d.map_or(Value::Null, |x| {
                    Value::Double(if x == 0.0 { 0.0 } else { x })
                }),
                r.m.map_or(Value::Null, Value::Decimal),
                r.n.map_or(Value::Null, Value::Int),
                r.dt.map_or(Value::Null, Value::Date),
                r.ts.map_or(Value::Null, Value::Timestamp),
                r.ok.map_or(Value::Null, Value::Bool),
                Value::Text(Cow::Borrowed(&r.tn)),
            ];
            let mut s = String::from("{");
            for (n, ((name, ty), v)) in cols.iter().zip(&vals).enumerate() {
                if n > 0 {
                    s.push(',');
                }
                let _ = write!(s, "\"{name}\":");
                format_json(v, ty, &mut s);
            }
            s.push('}');
            s
        })
        .collect()
}

/// The table as a CSV file (header line, `null` as the NULL marker).
fn export_csv(db: &sluice::Db, null: &str) -> String {
    let mut r = TableReader::open(db, Some("r")).unwrap();
    r.set_csv_null(null).unwrap();
    let mut out = r.csv_header();
    out.push('\n');
    r.scan(None, None, None, None, |row| {
        out.push_str(&r.format_row(row, OutputFormat::Csv));
        out.push('\n');
        Ok(())
    })
    .unwrap();
    out
}

fn round_trip(rows: &[Row]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path().join("db"), true).unwrap();
    let f = write(dir.path(), "in.jsonl", to_jsonl(rows).as_bytes());
    import(&db, SCHEMA, vec![f], opts()).unwrap();
    let want = expected_json(rows);
    prop_assert_eq!(&json_rows(&db, "r"), &want);
    let by_t = rows_of_index(&db);
    for (n, null) in ["", "NA", "\\N", "null"].into_iter().enumerate() {
        let csv = export_csv(&db, null);
        let f = write(dir.path(), &format!("out{n}.csv"), csv.as_bytes());
        let db2 = open_db(dir.path().join(format!("db{n}")), true).unwrap();
        let o = ImportOptions {
            header: true,
            null: (!null.is_empty()).then(|| null.to_string()),
            ..opts()
        };
        import(&db2, SCHEMA, vec![f], o).unwrap();
        prop_assert_eq!(&json_rows(&db2, "r"), &want, "--null {:?}:\n{}", null, csv);
        prop_assert_eq!(&rows_of_index(&db2), &by_t);
    }
    // JSON output read back as JSON lines.
    let f = write(dir.path(), "out.jsonl", want.join("\n").as_bytes());
    let db3 = open_db(dir.path().join("db_json"), true).unwrap();
    import(&db3, SCHEMA, vec![f], opts()).unwrap();
    prop_assert_eq!(&json_rows(&db3, "r"), &want);
    Ok(())
}

fn rows_of_index(db: &sluice::Db) -> Vec<String> {
    rows(db, "r", Some("by_t"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn csv_and_json_exports_import_back_unchanged(rows in proptest::collection::vec(row(), 1..40)) {
        round_trip(&rows)?;
    }
}

/// A table whose only visible column is nullable: a NULL row is an empty line in CSV, and an
/// empty line of a one-field file reads back as NULL (an empty string is `""`).
#[test]
fn one_column_nulls_and_empty_strings_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let schema = "CREATE TABLE o (t TEXT)";
    let db = open_db(dir.path().join("db"), true).unwrap();
    let f = write(
        dir.path(),
        "o.jsonl",
        b"{\"t\":null}\n{\"t\":\"\"}\n{\"t\":\"a\"}\n{}\n{\"t\":\"\\n\"}\n",
    );
    import(&db, schema, vec![f], opts()).unwrap();
    let r = TableReader::open(&db, Some("o")).unwrap();
    let mut csv = String::new();
    r.scan(None, None, None, None, |row| {
        csv.push_str(&r.format_row(row, OutputFormat::Csv));
        csv.push_str("\r\n");
        Ok(())
    })
    .unwrap();
    assert_eq!(csv, "\r\n\"\"\r\na\r\n\r\n\"\n\"\r\n");
    let f = write(dir.path(), "o.csv", csv.as_bytes());
    let db2 = open_db(dir.path().join("db2"), true).unwrap();
    import(&db2, schema, vec![f], opts()).unwrap();
    assert_eq!(
        json_rows(&db2, "o"),
        [
            r#"{"t":null}"#,
            r#"{"t":""}"#,
            r#"{"t":"a"}"#,
            r#"{"t":null}"#,
            r#"{"t":"\n"}"#
        ]
    );
    // Where the one column is NOT NULL, empty lines are skipped as before.
    let db3 = open_db(dir.path().join("db3"), true).unwrap();
    let f = write(dir.path(), "p.csv", b"a\n\nb\r\n\r\n\"\"\n");
    let s = import(&db3, "CREATE TABLE p (t TEXT NOT NULL)", vec![f], opts()).unwrap();
    assert_eq!(s.rows, 3);
    assert_eq!(
        json_rows(&db3, "p"),
        [r#"{"t":"a"}"#, r#"{"t":"b"}"#, r#"{"t":""}"#]
    );
}

/// Line numbers in messages count empty lines (the reader skips them itself).
#[test]
fn messages_after_empty_lines_name_the_right_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path().join("db"), true).unwrap();
    let f = write(dir.path(), "l.csv", b"1,a\r\n\r\n\n2,b\n\n\"x\",c\n");
    let e = import(
        &db,
        "CREATE TABLE l (id INT PRIMARY KEY, s TEXT)",
        vec![f],
        opts(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("l.csv:6: column id: \"x\" is not an INT"), "{e}");
}
