//! Arrow record batches and Parquet files as import inputs: every SQL type from its own Arrow
//! type and from others (exact or refused), NULLs, dictionaries, bad values naming the batch,
//! row and column with the Db unchanged, Parquet row groups and projection, a table taken from
//! a Parquet file's schema, and tables read back as batches.

mod common;

columnar_too!(
    every_sql_type_round_trips_through_arrow,
    parquet_row_groups_and_projection,
);

use std::sync::Arc;

use arrow_array::builder::{
    BinaryBuilder, BooleanBuilder, Date32Builder, Decimal128Builder, Float64Builder, Int16Builder,
    Int32Builder, StringBuilder, StringDictionaryBuilder, TimestampMicrosecondBuilder,
    TimestampNanosecondBuilder, UInt64Builder,
};
use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type, TimestampMicrosecondType};
use arrow_array::Array;
use arrow_array::{ArrayRef, RecordBatch, RecordBatchIterator};
use arrow_schema::{ArrowError, DataType, Field, Schema};
use common::*;
use sluice_import::arrow_io::{create_table_sql, parquet_schema, ArrowStream, BatchBuilder};
use sluice_import::{open_db, Import, ImportError, ImportOptions, TableReader};

fn stream(batches: Vec<RecordBatch>) -> ArrowStream {
    let schema = batches[0].schema();
    Box::new(RecordBatchIterator::new(
        batches.into_iter().map(Ok::<_, ArrowError>),
        schema,
    ))
}

fn batch(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
    RecordBatch::try_from_iter(columns).unwrap()
}

fn import_arrow(
    db: &sluice::Db,
    schema: &str,
    batches: Vec<RecordBatch>,
    o: ImportOptions,
) -> Result<sluice_import::Summary, ImportError> {
    Import::from_arrow(schema, stream(batches), Some("batches".into()), o)?.run(db)
}

const ALL_TYPES: &str = "CREATE TABLE t (id BIGINT PRIMARY KEY, s SMALLINT, i INT, \
    d DECIMAL(20,3), f DOUBLE, b BOOLEAN, t TEXT, v VARCHAR(3), x BYTES, day DATE, ts TIMESTAMP); \
    CREATE INDEX by_t ON t (t)";

fn all_types_batch(ids: &[i64]) -> RecordBatch {
    let n = ids.len();
    let mut s = Int16Builder::new();
    let mut i = Int32Builder::new();
    let mut d = Decimal128Builder::new()
        .with_precision_and_scale(20, 3)
        .unwrap();
    let mut f = Float64Builder::new();
    let mut b = BooleanBuilder::new();
    let mut t = StringBuilder::new();
    let mut v = StringBuilder::new();
    let mut x = BinaryBuilder::new();
    let mut day = Date32Builder::new();
    let mut ts = TimestampMicrosecondBuilder::new();
    for (k, &id) in ids.iter().enumerate() {
        if k % 3 == 2 {
            // Every third row: NULL in every nullable column.
            s.append_null();
            i.append_null();
            d.append_null();
            f.append_null();
            b.append_null();
            t.append_null();
            v.append_null();
            x.append_null();
            day.append_null();
            ts.append_null();
            continue;
        }
        s.append_value(i16::MIN + k as i16);
        i.append_value(i32::MAX - k as i32);
        d.append_value(-12_345_678_901_234_567 + id as i128);
        f.append_value(if k == 1 {
            f64::NEG_INFINITY
        } else {
            0.1 * id as f64
        });
        b.append_value(k % 2 == 0);
        t.append_value(format!("ünï \"{id}\",\n"));
        v.append_value("");
        x.append_value([0u8, 0xff, id as u8]);
        day.append_value(-719_528 + k as i32); // 0000-01-01 onwards
        ts.append_value(253_402_300_799_999_999 - k as i64); // up to 9999-12-31T23:59:59.999999
    }
    assert_eq!(arrow_array::builder::ArrayBuilder::len(&s), n);
    batch(vec![
        (
            "id",
            Arc::new(arrow_array::Int64Array::from(ids.to_vec())) as ArrayRef,
        ),
        ("s", Arc::new(s.finish())),
        ("i", Arc::new(i.finish())),
        ("d", Arc::new(d.finish())),
        ("f", Arc::new(f.finish())),
        ("b", Arc::new(b.finish())),
        ("t", Arc::new(t.finish())),
        ("v", Arc::new(v.finish())),
        ("x", Arc::new(x.finish())),
        ("day", Arc::new(day.finish())),
        ("ts", Arc::new(ts.finish())),
    ])
}

/// The table's rows read back as Arrow batches of `columns` (all when empty).
fn read_back(db: &sluice::Db, table: &str, columns: &[&str]) -> RecordBatch {
    let r = TableReader::open(db, Some(table)).unwrap();
    let cols: Vec<usize> = if columns.is_empty() {
        r.table.visible_columns().map(|(i, _)| i).collect()
    } else {
        columns.iter().map(|c| r.table.column(c).unwrap()).collect()
    };
    let mut b = BatchBuilder::new(&r.table, cols);
    r.scan(None, None, None, None, |row| {
        b.push(row);
        Ok(())
    })
    .unwrap();
    b.finish().unwrap()
}

#[test]
fn every_sql_type_round_trips_through_arrow() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path().join("db"), true).unwrap();
    // Two batches, out of order across them (the merge sorts), NULLs in every column type.
    let first = all_types_batch(&[5, 3, 9, 1]);
    let second = all_types_batch(&[2, 8, 4]);
    let s = import_arrow(&db, ALL_TYPES, vec![first.clone(), second.clone()], opts()).unwrap();
    assert_eq!((s.rows, s.rejected), (7, 0));
    let back = read_back(&db, "t", &[]);
    assert_eq!(back.num_rows(), 7);
    // Sorted by id, every value as it went in (timestamps come back in UTC).
    let ids = back.column(0).as_primitive::<Int64Type>();
    assert_eq!(ids.values().to_vec(), vec![1, 2, 3, 4, 5, 8, 9]);
    let position = |b: &RecordBatch, id: i64| {
        b.column(0)
            .as_primitive::<Int64Type>()
            .values()
            .iter()
            .position(|&v| v == id)
            .unwrap()
    };
    for (src, id) in [
        (&first, 5),
        (&first, 3),
        (&first, 9),
        (&second, 8),
        (&second, 4),
    ] {
        let (r, w) = (position(&back, id), position(src, id));
        for c in 0..10 {
            assert_eq!(
                back.column(c).slice(r, 1).as_ref(),
                src.column(c).slice(w, 1).as_ref(),
                "row {id} column {c}"
            );
        }
        // TIMESTAMP comes back as UTC (the same instants).
        let (got, want) = (back.column(10), src.column(10));
        assert_eq!(got.is_null(r), want.is_null(w));
        assert_eq!(
            got.as_primitive::<TimestampMicrosecondType>().value(r),
            want.as_primitive::<TimestampMicrosecondType>().value(w)
        );
    }
    // The secondary index holds every row (NULLs first).
    assert_eq!(rows(&db, "t", Some("by_t")).len(), 7);
    // The field types of the read-back batch are the schema's.
    let schema = back.schema();
    let types: Vec<String> = schema
        .fields()
        .iter()
        .map(|f| f.data_type().to_string())
        .collect();
    assert_eq!(
        types,
        [
            "Int64",
            "Int16",
            "Int32",
            "Decimal128(20, 3)",
            "Float64",
            "Boolean",
            "Utf8",
            "Utf8",
            "Binary",
            "Date32",
            "Timestamp(µs, \"UTC\")"
        ]
    );
    assert!(!schema.field(0).is_nullable());
    assert!(schema.field(1).is_nullable());
}

#[test]
fn other_arrow_types_convert_exactly_or_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path().join("db"), true).unwrap();
    let schema = "CREATE TABLE c (id INT PRIMARY KEY, d DECIMAL(10,2), day DATE, n INT, \
                  u DECIMAL(20,0), k TEXT, ts TIMESTAMP)";
    let mut u = UInt64Builder::new();
    let mut k = StringDictionaryBuilder::<Int32Type>::new();
    let mut ts = TimestampNanosecondBuilder::new();
    for i in 0..3u64 {
        u.append_value(u64::MAX - i);
        k.append_value(["red", "green"][i as usize % 2]);
        ts.append_value(1_700_000_000_000_000_000 + i as i64 * 1_000);
    }
    let good = batch(vec![
        // Strings into INT, numbers into DECIMAL and INT, text dates into DATE.
        (
            "id",
            Arc::new(arrow_array::StringArray::from(vec!["1", "2", "3"])) as ArrayRef,
        ),
        (
            "d",
            Arc::new(arrow_array::Int64Array::from(vec![7, -8, 12345678])),
        ),
        (
            "day",
            Arc::new(arrow_array::StringArray::from(vec![
                "2024-02-29",
                "",
                "1970-01-01",
            ])),
        ),
        (
            "n",
            Arc::new(arrow_array::Float64Array::from(vec![100.0, -0.0, 2.5e3])),
        ),
        ("u", Arc::new(u.finish())),
        ("k", Arc::new(k.finish())),
        ("ts", Arc::new(ts.finish())),
        (
            "ignored",
            Arc::new(arrow_array::BooleanArray::from(vec![true, false, true])),
        ),
    ]);
    import_arrow(&db, schema, vec![good], opts()).unwrap();
    assert_eq!(
        rows(&db, "c", None),
        [
            "1,7.00,2024-02-29,100,18446744073709551615,red,2023-11-14T22:13:20Z",
            "2,-8.00,,0,18446744073709551614,green,2023-11-14T22:13:20.000001Z",
            "3,12345678.00,1970-01-01,2500,18446744073709551613,red,2023-11-14T22:13:20.000002Z",
        ]
    );
    // Each refusal names the input, the row, the batch, the row in the batch and the column;
    // the Db is exactly as it was.
    let before = dump(&db);
    let bad_cases: Vec<(&str, ArrayRef, &str)> = vec![
        (
            "n",
            Arc::new(arrow_array::Float64Array::from(vec![1.0, 1.5])),
            "batches:5: column n: \"1.5e0\" is not a whole number (INT has no fraction) (batch 1, row 1)",
        ),
        (
            "d",
            Arc::new(arrow_array::Int64Array::from(vec![1, 1_000_000_000_000])),
            "batches:5: column d: \"1000000000000\" is out of range for DECIMAL(10,2) (batch 1, row 1)",
        ),
        (
            "ts",
            Arc::new(arrow_array::TimestampNanosecondArray::from(vec![0, 1])),
            "batches:5: column ts: \"1ns after 1970-01-01T00:00:00Z\" has a fraction finer than microseconds (TIMESTAMP keeps microseconds) (batch 1, row 1)",
        ),
        (
            "n",
            Arc::new(arrow_array::Int64Array::from(vec![0, i64::from(i32::MAX) + 1])),
            "batches:5: column n: \"2147483648\" is out of range for INT (batch 1, row 1)",
        ),
    ];
    for (col, array, want) in bad_cases {
        let ids = Arc::new(arrow_array::Int32Array::from(vec![10, 11, 12])) as ArrayRef;
        let first = batch(vec![("id", Arc::clone(&ids).slice(0, 3))]);
        let second = batch(vec![
            (
                "id",
                Arc::new(arrow_array::Int32Array::from(vec![20, 21])) as ArrayRef,
            ),
            (col, array),
        ]);
        let e = import_arrow(&db, schema, vec![first, second], opts()).unwrap_err();
        assert_eq!(e.to_string(), want);
        assert!(e.is_data_error());
        assert_eq!(dump(&db), before);
    }
    // A column type that cannot be stored is refused before any row.
    let list = batch(vec![
        (
            "id",
            Arc::new(arrow_array::Int32Array::from(vec![1])) as ArrayRef,
        ),
        (
            "k",
            Arc::new(
                arrow_array::ListArray::from_iter_primitive::<Int32Type, _, _>(vec![Some(vec![
                    Some(1),
                ])]),
            ),
        ),
    ]);
    let e = import_arrow(&db, schema, vec![list], opts()).unwrap_err();
    assert!(
        e.to_string().contains("column k: Arrow type List") && e.to_string().contains("TEXT"),
        "{e}"
    );
    // NOT NULL columns must be there.
    let no_id = batch(vec![(
        "k",
        Arc::new(arrow_array::StringArray::from(vec!["a"])) as ArrayRef,
    )]);
    let e = import_arrow(&db, schema, vec![no_id], opts()).unwrap_err();
    assert_eq!(e.to_string(), "batches: no column id (NOT NULL in table c)");
    assert_eq!(dump(&db), before);
    // Under --max-errors the bad row goes to the rejects file as CSV, the rest is imported.
    let rejects = dir.path().join("rejects.csv");
    let o = ImportOptions {
        max_errors: 5,
        rejects: Some(rejects.clone()),
        ..opts()
    };
    let mixed = batch(vec![
        (
            "id",
            Arc::new(arrow_array::Int32Array::from(vec![30, 31, 32])) as ArrayRef,
        ),
        (
            "k",
            Arc::new(arrow_array::StringArray::from(vec!["a,b", "ok", "c"])),
        ),
        (
            "d",
            Arc::new(arrow_array::StringArray::from(vec!["1.001", "2", "x"])),
        ),
    ]);
    let s = import_arrow(&db, schema, vec![mixed], o).unwrap();
    assert_eq!((s.rows, s.rejected), (1, 2));
    assert_eq!(
        std::fs::read_to_string(&rejects).unwrap(),
        "# batches:1: column d: \"1.001\" has more than 2 digits after the point \
         (DECIMAL(10,2) keeps 2) (batch 0, row 0)\n30,\"a,b\",1.001\n\
         # batches:3: column d: \"x\" is not a DECIMAL(10,2) (batch 0, row 2)\n32,c,x\n"
    );
}

fn write_parquet(path: &std::path::Path, batches: &[RecordBatch], rows_per_group: usize) {
    let props = parquet::file::properties::WriterProperties::builder()
        .set_max_row_group_row_count(Some(rows_per_group))
        .set_compression(parquet::basic::Compression::SNAPPY)
        .build();
    write_parquet_with(path, batches, props);
}

fn write_parquet_with(
    path: &std::path::Path,
    batches: &[RecordBatch],
    props: parquet::file::properties::WriterProperties,
) {
    let file = std::fs::File::create(path).unwrap();
    let mut w =
        parquet::arrow::ArrowWriter::try_new(file, batches[0].schema(), Some(props)).unwrap();
    for b in batches {
        w.write(b).unwrap();
    }
    w.close().unwrap();
}

#[test]
fn parquet_row_groups_and_projection() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path().join("db"), true).unwrap();
    let ids: Vec<i64> = (0..5000).map(|i| (i * 7919) % 5000).collect();
    let b = all_types_batch(&ids);
    let p = dir.path().join("t.parquet");
    write_parquet(&p, std::slice::from_ref(&b), 700);
    // The file's columns and the schema's in a different order, one file column not in the
    // schema (projected away), one schema column not in the file (NULL).
    let schema = "CREATE TABLE t (ts TIMESTAMP, id BIGINT PRIMARY KEY, t TEXT, i INT, extra TEXT, \
                  d DECIMAL(20,3))";
    let s = import(&db, schema, vec![p.clone()], opts()).unwrap();
    assert_eq!((s.rows, s.rejected), (5000, 0));
    let back = read_back(&db, "t", &["id", "i", "extra"]);
    assert_eq!(back.num_rows(), 5000);
    assert_eq!(back.column(2).null_count(), 5000);
    let sum = TableReader::open(&db, Some("t"))
        .unwrap()
        .count_sum(None, None, None, None, Some(3))
        .unwrap();
    let want: i128 = (0..5000)
        .filter(|k| k % 3 != 2)
        .map(|k| i128::from(i32::MAX - k))
        .sum();
    assert_eq!(sum.sum, Some(sluice_import::ColumnSum::Int(want)));
    // A second import of the same file: every key a duplicate of a stored row.
    let e = import(&db, schema, vec![p], opts()).unwrap_err();
    assert!(
        e.to_string()
            .starts_with(&format!("{}:", dir.path().join("t.parquet").display())),
        "{e}"
    );
}

#[test]
fn a_table_taken_from_a_parquet_schema() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path().join("db"), true).unwrap();
    let p = dir.path().join("all.parquet");
    write_parquet(&p, &[all_types_batch(&[3, 1, 2])], 1024);
    let schema = parquet_schema(&p).unwrap();
    let sql = create_table_sql("all", &schema, &["id".to_string()]).unwrap();
    assert_eq!(
        sql,
        "CREATE TABLE \"all\" (\"id\" BIGINT NOT NULL, \"s\" SMALLINT, \"i\" INT, \
         \"d\" DECIMAL(20,3), \"f\" DOUBLE, \"b\" BOOLEAN, \"t\" TEXT, \"v\" TEXT, \"x\" BYTES, \
         \"day\" DATE, \"ts\" TIMESTAMP, PRIMARY KEY (\"id\"));"
    );
    let s = import(&db, &sql, vec![p], opts()).unwrap();
    assert_eq!(s.rows, 3);
    assert_eq!(rows(&db, "all", None).len(), 3);
    let e = create_table_sql("all", &schema, &["nope".to_string()]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "--primary-key nope: the input has no such column"
    );
    let nested = Schema::new(vec![Field::new(
        "l",
        DataType::List(Arc::new(Field::new("item", DataType::Int32, true))),
        true,
    )]);
    assert!(create_table_sql("n", &nested, &["l".to_string()]).is_err());
}

#[test]
fn a_file_that_is_not_parquet_is_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path().join("db"), true).unwrap();
    let p = write(dir.path(), "bad.parquet", b"PAR1 not really");
    let e = import(&db, "CREATE TABLE t (id INT PRIMARY KEY)", vec![p], opts()).unwrap_err();
    assert!(
        e.to_string()
            .contains("bad.parquet: not a readable Parquet file"),
        "{e}"
    );
    assert!(leftovers(dir.path()).is_empty());
}

/// Damaged Parquet files (bytes flipped, cut short): every import ends with a result — rows or
/// an error naming the file — and never a panic, whatever the decoder meets.
#[test]
fn damaged_parquet_files_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path().join("db"), true).unwrap();
    let good = dir.path().join("good.parquet");
    let ids: Vec<i64> = (0..400).collect();
    write_parquet(&good, &[all_types_batch(&ids)], 150);
    let bytes = std::fs::read(&good).unwrap();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut rand = move |n: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % n as u64) as usize
    };
    let o = ImportOptions {
        on_duplicate: sluice_import::OnDuplicate::Last,
        ..opts()
    };
    let (mut ok, mut refused) = (0, 0);
    for case in 0..300 {
        let mut b = bytes.clone();
        if case % 10 == 9 {
            b.truncate(rand(b.len()));
        } else {
            for _ in 0..1 + rand(8) {
                let at = rand(b.len());
                b[at] ^= 1 << rand(8);
            }
        }
        let p = dir.path().join(format!("case-{case}.parquet"));
        std::fs::write(&p, &b).unwrap();
        match import(&db, ALL_TYPES, vec![p.clone()], o.clone()) {
            Ok(_) => ok += 1,
            Err(e) => {
                assert!(
                    e.to_string().contains(&format!("case-{case}.parquet")),
                    "{e}"
                );
                refused += 1;
            }
        }
        std::fs::remove_file(&p).unwrap();
    }
    assert!(
        refused > 0 && ok + refused == 300,
        "{ok} imported, {refused} refused"
    );
    assert!(leftovers(&dir.path().join("db")).is_empty());
}

/// A page header that claims far more decompressed bytes than its stored bytes can make
/// (parquet-rs would reserve the claim before decompressing): refused before any decoding,
/// naming the file, row group, column and page offset. The claim is patched into a real
/// file's header in place (same varint width).
#[test]
fn a_page_claiming_a_decompressed_size_past_its_bytes_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path().join("db"), true).unwrap();
    let p = dir.path().join("zeros.parquet");
    // 1,000,000 zeros, PLAIN, one zstd page: about 4 MB decompressed from a few hundred bytes.
    let ids = Arc::new(arrow_array::Int32Array::from(vec![0i32; 1_000_000])) as ArrayRef;
    let b = batch(vec![("v", ids)]);
    let props = parquet::file::properties::WriterProperties::builder()
        .set_dictionary_enabled(false)
        .set_data_page_size_limit(64 << 20)
        .set_data_page_row_count_limit(2_000_000)
        .set_write_batch_size(2_000_000)
        .set_compression(parquet::basic::Compression::ZSTD(Default::default()))
        .build();
    write_parquet_with(&p, &[b], props);
    let schema = "CREATE TABLE z (v INT)";
    // As written it imports.
    let s = import(&db, schema, vec![p.clone()], opts()).unwrap();
    assert_eq!(s.rows, 1_000_000);
    // The page header at offset 4: field 1 (type) then field 2, the decompressed size (about
    // 4 MB: a 4-byte zigzag varint); patch it to 127 MiB (past the 120 MiB floor), also 4
    // bytes.
    let mut bytes = std::fs::read(&p).unwrap();
    assert_eq!(&bytes[4..6], &[0x15, 0x00], "a data page header");
    assert_eq!(bytes[6], 0x15, "field 2, an i32");
    let varint = |mut v: u64| {
        let mut out = Vec::new();
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
        out
    };
    let was = bytes[7..11]
        .iter()
        .rev()
        .fold(0u64, |v, &b| (v << 7) | u64::from(b & 0x7f));
    assert!(bytes[7..10].iter().all(|b| b & 0x80 != 0) && bytes[10] < 0x80);
    assert!((2 * 4_000_000..2 * 4_100_000).contains(&was), "{was}");
    bytes[7..11].copy_from_slice(&varint(2 * (127 << 20)));
    let bad = dir.path().join("claims.parquet");
    std::fs::write(&bad, &bytes).unwrap();
    let e = import(&db, "CREATE TABLE y (v INT)", vec![bad], opts())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("claims.parquet: not a readable Parquet file: row group 0, column v: the page at offset 4 claims 133169152 bytes decompressed from"),
        "{e}"
    );
    assert!(leftovers(dir.path()).is_empty());
}

/// A dictionary page whose header claims more values than its PLAIN bytes hold (parquet-rs
/// sizes the dictionary from the claim): refused naming the page, before decoding. The claim
/// is patched into a real file in place (1 value claimed as 63: same varint width).
#[test]
fn a_dictionary_page_claiming_more_values_than_it_holds_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path().join("db"), true).unwrap();
    let p = dir.path().join("dict.parquet");
    let names = Arc::new(arrow_array::StringArray::from(vec!["x"; 3])) as ArrayRef;
    let b = batch(vec![("s", names)]);
    let props = parquet::file::properties::WriterProperties::builder()
        .set_compression(parquet::basic::Compression::UNCOMPRESSED)
        .build();
    write_parquet_with(&p, &[b], props);
    let schema = "CREATE TABLE d (s TEXT)";
    assert_eq!(
        import(&db, schema, vec![p.clone()], opts()).unwrap().rows,
        3
    );
    // The dictionary page header's field 7 (a struct, 4 after field 3), whose field 1 is
    // num_values = 1 (zigzag 2).
    let mut bytes = std::fs::read(&p).unwrap();
    let at = bytes
        .windows(3)
        .position(|w| w == [0x4C, 0x15, 0x02])
        .expect("a dictionary page header with one value");
    bytes[at + 2] = 0x7E;
    let bad = dir.path().join("claims.parquet");
    std::fs::write(&bad, &bytes).unwrap();
    let e = import(&db, "CREATE TABLE e (s TEXT)", vec![bad], opts())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("claims.parquet: not a readable Parquet file: row group 0, column s: the dictionary page at offset 4 claims 63 values, more than its 5 bytes hold (1)"),
        "{e}"
    );
}

/// A Parquet file whose column names miss the table's: two columns of one name are refused,
/// and a table column the file lacks beside a column the table lacks (a misspelling) is
/// named by `Import::input_warnings`, while a file that only has extra columns, or only lacks
/// some, is not.
#[test]
fn parquet_column_names_that_do_not_match_are_refused_or_warned_of() {
    let dir = tempfile::tempdir().unwrap();
    let schema = "CREATE TABLE t (id BIGINT PRIMARY KEY, s TEXT, n INT)";
    let ids = || -> ArrayRef { Arc::new(arrow_array::Int64Array::from(vec![1i64, 2])) };
    let text = |v: &str| -> ArrayRef { Arc::new(arrow_array::StringArray::from(vec![v, v])) };
    let write = |name: &str, b: RecordBatch| {
        let p = dir.path().join(name);
        write_parquet(&p, &[b], 100);
        p
    };
    let fields = |names: &[&str]| {
        Arc::new(Schema::new(
            names
                .iter()
                .enumerate()
                .map(|(i, n)| {
                    let ty = if i == 0 {
                        DataType::Int64
                    } else {
                        DataType::Utf8
                    };
                    Field::new(*n, ty, true)
                })
                .collect::<Vec<_>>(),
        ))
    };
    let dup = write(
        "dup.parquet",
        RecordBatch::try_new(fields(&["id", "s", "s"]), vec![ids(), text("a"), text("b")]).unwrap(),
    );
    let typo = write(
        "typo.parquet",
        batch(vec![("id", ids()), ("sx", text("a"))]),
    );
    let extra = write(
        "extra.parquet",
        batch(vec![
            ("id", ids()),
            ("s", text("a")),
            ("n", Arc::new(arrow_array::Int32Array::from(vec![1, 2]))),
            ("z", text("z")),
        ]),
    );
    let lacking = write(
        "lacking.parquet",
        batch(vec![("id", ids()), ("s", text("a"))]),
    );
    let db = open_db(dir.path().join("db"), true).unwrap();
    let e = import(&db, schema, vec![dup], opts())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("column s: the input has two columns of that name"),
        "{e}"
    );
    assert!(TableReader::tables(&db).unwrap().is_empty());
    let warnings = |p: &std::path::Path| {
        Import::new(schema, vec![p.to_path_buf()], opts())
            .unwrap()
            .input_warnings()
    };
    let w = warnings(&typo);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].contains("has no column s, n of table t") && w[0].contains("sx"),
        "{w:?}"
    );
    assert_eq!(warnings(&extra), Vec::<String>::new());
    assert_eq!(warnings(&lacking), Vec::<String>::new());
    // The import itself goes on, as documented: the missing columns are NULL.
    let s = import(&db, schema, vec![typo], opts()).unwrap();
    assert_eq!(s.rows, 2);
}
