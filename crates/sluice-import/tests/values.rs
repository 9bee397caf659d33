//! Values kept exactly from every reader: JSON-lines numbers converted from their text for
//! every column type, DOUBLE's specials (inf, -inf, NaN) in every reader and writer with valid
//! JSON output, the NULL rules of each format and `--null`, and exact `--count --sum`.

mod common;

columnar_too!(
    json_numbers_keep_every_digit_for_every_type,
    doubles_specials_in_every_format_and_valid_json,
    null_marker_rules_are_the_same_in_every_format,
    sums_are_exact_in_the_column_type,
    csv_output_quotes_what_it_must_and_reads_back,
);

use common::*;
use sluice_import::{open_db, ColumnSum, ImportOptions, OutputFormat, TableReader};

fn get_json(db: &sluice::Db, table: &str, pk: &str) -> serde_json::Value {
    let r = TableReader::open(db, Some(table)).unwrap();
    let row = r.get(&[pk.to_string()]).unwrap().unwrap();
    let line = r.format_row(&row, OutputFormat::Json);
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line} is not JSON: {e}"))
}

fn get_csv(db: &sluice::Db, table: &str, pk: &str) -> String {
    let r = TableReader::open(db, Some(table)).unwrap();
    let row = r.get(&[pk.to_string()]).unwrap().unwrap();
    r.format_row(&row, OutputFormat::Csv)
}

#[test]
fn json_numbers_keep_every_digit_for_every_type() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path().join("db"), true).unwrap();
    let schema = "CREATE TABLE n (id BIGINT PRIMARY KEY, d DECIMAL(38,10), e DECIMAL(20,2), \
                  s SMALLINT, i INT, f DOUBLE, t TEXT, z DECIMAL(38,0))";
    let lines = [
        r#"{"id":1,"d":1234567890123456789.0123456789,"e":12345678901234567.89,"s":-0,"i":1e2,"f":0.1,"t":1.50,"z":99999999999999999999999999999999999999}"#,
        r#"{"id":-0,"d":-9999999999999999999999999999.9999999999,"e":1.2345678901234567E16,"s":32767,"i":-2147483648,"f":1e-400,"t":1e2,"z":-12345678901234567890123456789012345678}"#,
        r#"{"id":9223372036854775807,"d":0.00000000010,"e":0e5,"s":3.0e2,"i":2147483647.000,"f":17976931348623157e292,"t":-0,"z":1.2e37}"#,
        r#"{"id":-9223372036854775808,"d":1E-10,"e":-0.01,"s":-32768,"i":-1.0E9,"f":-2.5e-308,"t":12345678901234567890123456789}"#,
    ];
    let f = write(dir.path(), "n.jsonl", lines.join("\n").as_bytes());
    assert_eq!(import(&db, schema, vec![f], opts()).unwrap().rows, 4);
    assert_eq!(
        get_csv(&db, "n", "1"),
        "1,1234567890123456789.0123456789,12345678901234567.89,0,100,0.1,1.50,99999999999999999999999999999999999999"
    );
    assert_eq!(
        get_csv(&db, "n", "0"),
        "0,-9999999999999999999999999999.9999999999,12345678901234567.00,32767,-2147483648,0,1e2,-12345678901234567890123456789012345678"
    );
    assert_eq!(
        get_csv(&db, "n", "9223372036854775807"),
        "9223372036854775807,0.0000000001,0.00,300,2147483647,1.7976931348623157e308,-0,12000000000000000000000000000000000000"
    );
    assert_eq!(
        get_csv(&db, "n", "-9223372036854775808"),
        "-9223372036854775808,0.0000000001,-0.01,-32768,-1000000000,-2.5e-308,12345678901234567890123456789,"
    );
    // JSON output carries the same digits as number literals.
    let raw = {
        let r = TableReader::open(&db, Some("n")).unwrap();
        let row = r.get(&["1".to_string()]).unwrap().unwrap();
        r.format_row(&row, OutputFormat::Json)
    };
    assert!(
        raw.contains(r#""d":1234567890123456789.0123456789,"e":12345678901234567.89"#),
        "{raw}"
    );

    // Refusals quote the number as written, whatever the type.
    let cases = [
        (
            r#"{"id":5,"i":1.5}"#,
            r#"column i: "1.5" is not a whole number (INT has no fraction)"#,
        ),
        (
            r#"{"id":5,"s":1e5}"#,
            r#"column s: "1e5" is out of range for SMALLINT"#,
        ),
        (
            r#"{"id":5,"e":0.125}"#,
            r#"column e: "0.125" has more than 2 digits after the point (DECIMAL(20,2) keeps 2)"#,
        ),
        (
            r#"{"id":5,"z":1e38}"#,
            r#"column z: "1e38" is out of range for DECIMAL(38,0)"#,
        ),
        (
            r#"{"id":5,"f":1e400}"#,
            r#"column f: "1e400" is out of range for DOUBLE"#,
        ),
        (
            r#"{"id":9223372036854775808}"#,
            r#"column id: "9223372036854775808" is out of range for BIGINT"#,
        ),
        (
            r#"{"id":1E2,"i":true}"#,
            r#"column i: "true" is not an INT"#,
        ),
    ];
    for (line, want) in cases {
        let f = write(dir.path(), "bad.jsonl", line.as_bytes());
        let e = import(&db, schema, vec![f], opts())
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "{line}: got {e}, want {want}");
    }
}

#[test]
fn doubles_specials_in_every_format_and_valid_json() {
    let dir = tempfile::tempdir().unwrap();
    let schema =
        "CREATE TABLE d (k DOUBLE PRIMARY KEY, v DOUBLE, n INT); CREATE INDEX by_v ON d (v);";
    let csv = "inf,-inf,1\n-Infinity,nan,2\nNaN,INF,3\n0,-0.0,4\n-1.5,1e308,5\n";
    let tsv = csv.replace(',', "\t");
    let jsonl = r#"{"k":"Infinity","v":"-Infinity","n":1}
{"k":"-Infinity","v":"NaN","n":2}
{"k":"nan","v":"inf","n":3}
{"k":0,"v":-0.0,"n":4}
{"k":-1.5,"v":1e308,"n":5}
"#;
    // Key order: -inf < -1.5 < 0 < +inf < NaN (NaN sorts last, as in DuckDB and PostgreSQL).
    let want_csv = [
        "-inf,nan,2",
        "-1.5,1e308,5",
        "0,0,4",
        "inf,-inf,1",
        "nan,inf,3",
    ];
    let want_json = [
        r#"{"k":"-Infinity","v":"NaN","n":2}"#,
        r#"{"k":-1.5,"v":1e308,"n":5}"#,
        r#"{"k":0,"v":0,"n":4}"#,
        r#"{"k":"Infinity","v":"-Infinity","n":1}"#,
        r#"{"k":"NaN","v":"Infinity","n":3}"#,
    ];
    for (name, content) in [("a.csv", csv), ("a.tsv", tsv.as_str()), ("a.jsonl", jsonl)] {
        let db = open_db(dir.path().join(name.replace('.', "_")), true).unwrap();
        let f = write(dir.path(), name, content.as_bytes());
        import(&db, schema, vec![f], opts()).unwrap();
        assert_eq!(rows(&db, "d", None), want_csv, "{name}");
        let j = json_rows(&db, "d");
        assert_eq!(j, want_json, "{name}");
        for line in &j {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert!(!v["k"].is_null() && !v["v"].is_null(), "{line}");
        }
        // Index order of v: -inf, 0, 1e308, inf, NaN.
        let by_v: Vec<String> = rows(&db, "d", Some("by_v"));
        assert_eq!(
            by_v,
            [
                "inf,-inf,1",
                "0,0,4",
                "-1.5,1e308,5",
                "nan,inf,3",
                "-inf,nan,2"
            ],
            "{name}"
        );
        // Point lookups by a special key.
        assert_eq!(get_csv(&db, "d", "NaN"), "nan,inf,3");
        assert_eq!(get_json(&db, "d", "-inf")["v"], "NaN");
        // The JSON output reads back as JSON lines, the CSV output as CSV: the same rows.
        let back = dir.path().join(format!("{name}.json.jsonl"));
        std::fs::write(&back, j.join("\n")).unwrap();
        let db2 = open_db(dir.path().join(format!("{name}_json")), true).unwrap();
        import(&db2, schema, vec![back], opts()).unwrap();
        assert_eq!(json_rows(&db2, "d"), want_json);
        let back = dir.path().join(format!("{name}.out.csv"));
        std::fs::write(&back, rows(&db, "d", None).join("\n")).unwrap();
        let db3 = open_db(dir.path().join(format!("{name}_csv")), true).unwrap();
        import(&db3, schema, vec![back], opts()).unwrap();
        assert_eq!(json_rows(&db3, "d"), want_json);
    }
}

#[test]
fn null_marker_rules_are_the_same_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let schema = "CREATE TABLE m (id INT PRIMARY KEY, t TEXT, n INT, tn TEXT NOT NULL)";
    let o = || ImportOptions {
        null: Some("NA".into()),
        ..opts()
    };
    // Row 1: the marker is NULL for TEXT and INT alike; row 2: empty TEXT is the empty string
    // where the format can say so; row 3: `\N` is NULL in TSV whatever --null says.
    let csv = "1,NA,NA,x\n2,\"\",,\n3,\"NA\",\"\",\"\"\n";
    let tsv = "1\tNA\tNA\tx\n2\t\t\t\n3\t\\N\t\\N\t\n";
    let jsonl = "{\"id\":1,\"t\":\"NA\",\"n\":\"NA\",\"tn\":\"x\"}\n\
                 {\"id\":2,\"t\":\"\",\"n\":\"\",\"tn\":\"\"}\n\
                 {\"id\":3,\"t\":null,\"tn\":\"\"}\n";
    let want = |fmt: &str| -> Vec<&'static str> {
        vec![
            r#"{"id":1,"t":null,"n":null,"tn":"x"}"#,
            r#"{"id":2,"t":"","n":null,"tn":""}"#,
            if fmt == "csv" {
                // A quoted "NA" is the text NA; a quoted "" in an INT column is NULL.
                r#"{"id":3,"t":"NA","n":null,"tn":""}"#
            } else {
                r#"{"id":3,"t":null,"n":null,"tn":""}"#
            },
        ]
    };
    for (name, content) in [("a.csv", csv), ("a.tsv", tsv), ("a.jsonl", jsonl)] {
        let db = open_db(dir.path().join(name.replace('.', "_")), true).unwrap();
        let f = write(dir.path(), name, content.as_bytes());
        import(&db, schema, vec![f], o()).unwrap();
        assert_eq!(json_rows(&db, "m"), want(&name[2..]), "{name}");
    }
    // A NOT NULL TEXT column refuses the marker (it is NULL) in every format.
    for (name, content) in [
        ("b.csv", "1,a,1,NA\n"),
        ("b.tsv", "1\ta\t1\tNA\n"),
        ("b.jsonl", "{\"id\":1,\"tn\":\"NA\"}\n"),
    ] {
        let db = open_db(dir.path().join(name.replace('.', "_")), true).unwrap();
        let f = write(dir.path(), name, content.as_bytes());
        let e = import(&db, schema, vec![f], o()).unwrap_err().to_string();
        assert!(
            e.contains("column tn: NULL in a NOT NULL column"),
            "{name}: {e}"
        );
    }
}

#[test]
fn sums_are_exact_in_the_column_type() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path().join("db"), true).unwrap();
    let schema = "CREATE TABLE s (id INT PRIMARY KEY, small DECIMAL(4,2), big DECIMAL(38,0), \
                  neg DECIMAL(10,3), b BIGINT, d DOUBLE, t TEXT, z DECIMAL(5,1), w DOUBLE)";
    let max38 = "9".repeat(38);
    let csv = format!(
        "1,0.10,{max38},-1.005,9223372036854775807,1.5,x,,1e308\n\
         2,0.25,{max38},0.002,9223372036854775807,inf,y,,1e308\n\
         3,,{max38},,9223372036854775807,,z,,\n"
    );
    let f = write(dir.path(), "s.csv", csv.as_bytes());
    import(&db, schema, vec![f], opts()).unwrap();
    let r = TableReader::open(&db, Some("s")).unwrap();
    let sum = |col: &str| {
        let c = r.table.column(col).unwrap();
        let cs = r.count_sum(None, None, None, None, Some(c)).unwrap();
        assert_eq!(cs.rows, 3);
        let s = cs.sum.unwrap();
        // Always valid JSON.
        serde_json::from_str::<serde_json::Value>(&s.to_json())
            .unwrap_or_else(|e| panic!("{col}: {} is not JSON: {e}", s.to_json()));
        s
    };
    assert_eq!(sum("small").to_json(), "0.35");
    assert_eq!(sum("small").to_string(), "0.35");
    // Three 38-digit values: past i128, kept exact.
    assert_eq!(sum("big").to_json(), format!("2{}7", "9".repeat(37)));
    assert_eq!(sum("neg").to_json(), "-1.003");
    // Three i64::MAX: past i64, exact.
    assert_eq!(sum("b"), ColumnSum::Int(3 * i128::from(i64::MAX)));
    assert_eq!(sum("b").to_json(), "27670116110564327421");
    assert_eq!(sum("d").to_json(), "\"Infinity\"");
    // Two finite doubles whose sum overflows: +inf, as IEEE; JSON stays valid.
    assert_eq!(sum("w"), ColumnSum::Double(f64::INFINITY));
    // Every value NULL: SQL's SUM is NULL.
    assert_eq!(sum("z"), ColumnSum::Null);
    assert_eq!(sum("z").to_json(), "null");
    let e = r
        .count_sum(None, None, None, None, r.table.column("t"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("--sum t: a TEXT column does not sum"), "{e}");
    // A range scan sums only its rows.
    let cs = r
        .count_sum(
            None,
            Some(&["2".to_string()]),
            None,
            None,
            r.table.column("small"),
        )
        .unwrap();
    assert_eq!(
        (cs.rows, cs.sum.unwrap().to_json()),
        (2, "0.25".to_string())
    );
}

/// `sluice scan`'s CSV lines (`format_row_into`, into one reused buffer): text with commas,
/// quotes, CR and LF is quoted with quotes doubled, the empty string and text equal to the
/// NULL marker are quoted, NULL is the bare marker, timestamps and dates print in full; a CSV
/// reader gets every field back as stored.
#[test]
fn csv_output_quotes_what_it_must_and_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path().join("db"), true).unwrap();
    let schema = "CREATE TABLE q (id INT PRIMARY KEY, t TEXT, ts TIMESTAMP, d DATE)";
    let texts = [
        "plain",
        "a,b",
        "say \"hi\"",
        "line\nbreak",
        "cr\rhere",
        "",
        "NA",
        "\"",
        ",",
    ];
    let mut jsonl = String::new();
    for (i, t) in texts.iter().enumerate() {
        let ts = format!(
            "2013-07-0{}T0{}:05:0{}.{:06}Z",
            1 + i % 9,
            i % 10,
            i % 10,
            i * 7
        );
        jsonl += &serde_json::json!({"id": i, "t": t, "ts": ts, "d": "1999-12-31"}).to_string();
        jsonl.push('\n');
    }
    jsonl += "{\"id\":99,\"t\":null,\"ts\":\"0001-01-01T00:00:00Z\",\"d\":null}\n";
    let f = write(dir.path(), "q.jsonl", jsonl.as_bytes());
    import(&db, schema, vec![f], opts()).unwrap();
    let mut r = TableReader::open(&db, Some("q")).unwrap();
    r.set_csv_null("NA").unwrap();
    let mut out = String::new();
    let mut line = String::new();
    r.scan(None, None, None, None, |row| {
        line.clear();
        r.format_row_into(row, OutputFormat::Csv, &mut line);
        out += &line;
        out.push('\n');
        Ok(())
    })
    .unwrap();
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(out.as_bytes());
    let rows: Vec<csv::StringRecord> = rdr.records().map(|r| r.unwrap()).collect();
    assert_eq!(rows.len(), texts.len() + 1, "{out}");
    for (i, t) in texts.iter().enumerate() {
        assert_eq!(&rows[i][1], *t, "row {i} of {out}");
        // A zero fraction is left out.
        let frac = if i == 0 {
            String::new()
        } else {
            format!(".{:06}", i * 7)
        };
        assert_eq!(
            &rows[i][2],
            format!("2013-07-0{}T0{}:05:0{}{frac}Z", 1 + i % 9, i % 10, i % 10),
        );
        assert_eq!(&rows[i][3], "1999-12-31");
    }
    // The empty string and the text NA are quoted; a NULL is the bare marker.
    assert!(
        out.contains("5,\"\",") && out.contains("6,\"NA\","),
        "{out}"
    );
    assert!(out.ends_with("99,NA,0001-01-01T00:00:00Z,NA\n"), "{out}");
}

/// TSV: an empty line in a one-text-column input is a row holding the empty string
/// (PostgreSQL's text format), not a line to drop; with several fields, or one that is not
/// text, it holds no row.
#[test]
fn an_empty_tsv_line_is_a_one_column_tables_empty_string() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path().join("db"), true).unwrap();
    let one = write(dir.path(), "one.tsv", b"a\n\nb\n");
    let s = import(
        &db,
        "CREATE TABLE k (k TEXT PRIMARY KEY);",
        vec![one],
        opts(),
    )
    .unwrap();
    assert_eq!(s.rows, 3);
    assert_eq!(
        json_rows(&db, "k"),
        [r#"{"k":""}"#, r#"{"k":"a"}"#, r#"{"k":"b"}"#]
    );
    // No primary key (a hidden row id): the same.
    let none = write(dir.path(), "none.tsv", b"a\n\nb\n");
    let s = import(&db, "CREATE TABLE n (v TEXT);", vec![none], opts()).unwrap();
    assert_eq!(s.rows, 3);
    let two = write(dir.path(), "two.tsv", b"1\ta\n\n2\tb\n");
    let sql = "CREATE TABLE t (id INT PRIMARY KEY, v TEXT);";
    assert_eq!(import(&db, sql, vec![two], opts()).unwrap().rows, 2);
    // One column that is not text: an empty line holds no row (a trailing one included).
    let ints = write(dir.path(), "ints.tsv", b"1\n\n2\n\n");
    let sql = "CREATE TABLE i (id INT PRIMARY KEY);";
    assert_eq!(import(&db, sql, vec![ints], opts()).unwrap().rows, 2);
    db.close().unwrap();
}
