//! Every kind of bad input is refused with file, line and column (and the value); the Db is
//! exactly as before and no temporary file remains.

mod common;

columnar_too!(
    bad_rows_are_refused_and_leave_nothing,
    bad_header_and_tmp_dir_cleanup,
    schema_errors_name_line_and_construct,
);

use common::*;
use sluice_import::{open_db, ImportOptions};

const SCHEMA: &str = "CREATE TABLE b (
    id INT PRIMARY KEY, score DOUBLE, name TEXT, day DATE, code VARCHAR(3), n SMALLINT NOT NULL,
    price DECIMAL(5,2), at TIMESTAMP, ok BOOLEAN
);";

#[test]
fn bad_rows_are_refused_and_leave_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let dbdir = dir.path().join("db");
    let db = open_db(&dbdir, true).unwrap();
    // Some rows already in the table: a failed import must not change them.
    let good = write(
        dir.path(),
        "good.csv",
        b"100,1.5,x,2024-01-01,abc,1,1.25,2024-01-01 00:00:00,true\n",
    );
    import(&db, SCHEMA, vec![good], opts()).unwrap();
    let before = dump(&db);
    let ok = "1,2.5,n,2024-01-02,ab,3,9.99,2024-01-02T10:00:00Z,f";
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("type.csv", format!("{ok}\n2,notanumber,n,2024-01-02,ab,3,1,,\n").into_bytes(),
         "type.csv:2: column score: \"notanumber\" is not a DOUBLE"),
        ("fields.csv", format!("{ok}\n2,1.0,n\n").into_bytes(), "fields.csv:2: expected 9 fields, found 3"),
        ("quote.csv", format!("{ok}\n2,1.0,ab\"c,2024-01-02,ab,3,1,,\n").into_bytes(),
         "quote.csv:2: column name: \"ab\\\"c\": malformed quoting: a quote inside an unquoted field"),
        ("unterminated.csv", format!("{ok}\n2,1.0,\"abc,2024-01-02,ab,3,1,,\n").into_bytes(),
         "unterminated.csv:2: field 3: a quoted field is never closed"),
        ("after.csv", format!("{ok}\n2,1.0,\"ab\"c,2024-01-02,ab,3,1,,\n").into_bytes(),
         "after.csv:2: column name: \"\\\"ab\\\"c\": malformed quoting: characters after a closing quote"),
        ("utf8.csv", [format!("{ok}\n2,1.0,").into_bytes(), b"\xff\xfe".to_vec(), b",2024-01-02,ab,3,1,,\n".to_vec()].concat(),
         "utf8.csv:2: column name: \"\u{fffd}\u{fffd}\" is not valid UTF-8"),
        ("date.csv", format!("{ok}\n2,1.0,n,2023-02-29,ab,3,1,,\n").into_bytes(),
         "date.csv:2: column day: \"2023-02-29\" is not a DATE"),
        ("notnull.csv", format!("{ok}\n2,1.0,n,2023-02-28,ab,,1,,\n").into_bytes(),
         "notnull.csv:2: column n: NULL in a NOT NULL column"),
        ("long.csv", format!("{ok}\n2,1.0,n,2023-02-28,abcd,1,1,,\n").into_bytes(),
         "long.csv:2: column code: \"abcd\" is longer than 3 characters"),
        ("small.csv", format!("{ok}\n2,1.0,n,2023-02-28,a,40000,1,,\n").into_bytes(),
         "small.csv:2: column n: \"40000\" is out of range for SMALLINT"),
        ("whole.csv", format!("{ok}\n2.5,1.0,n,2023-02-28,a,4,1,,\n").into_bytes(),
         "whole.csv:2: column id: \"2.5\" is not a whole number (INT has no fraction)"),
        ("an.csv", format!("{ok}\nx,1.0,n,2023-02-28,a,4,1,,\n").into_bytes(),
         "an.csv:2: column id: \"x\" is not an INT"),
        ("inf.csv", format!("{ok}\n2,1e400,n,2023-02-28,a,4,1,,\n").into_bytes(),
         "inf.csv:2: column score: \"1e400\" is out of range for DOUBLE"),
        ("nanos.csv", format!("{ok}\n2,1,n,2023-02-28,a,4,1,2024-01-01 00:00:00.0000001,\n").into_bytes(),
         "nanos.csv:2: column at: \"2024-01-01 00:00:00.0000001\" has a non-zero digit past microseconds"),
        ("edge.csv", format!("{ok}\n2,1,n,2023-02-28,a,4,1,9999-12-31 23:00:00-01:00,\n").into_bytes(),
         "edge.csv:2: column at: \"9999-12-31 23:00:00-01:00\" is out of range for TIMESTAMP"),
        ("scale.csv", format!("{ok}\n2,1.0,n,2023-02-28,a,4,1.234,,\n").into_bytes(),
         "scale.csv:2: column price: \"1.234\" has more than 2 digits after the point (DECIMAL(5,2) keeps 2)"),
        ("ts.csv", format!("{ok}\n2,1.0,n,2023-02-28,a,4,1,2024-01-01 25:00,\n").into_bytes(),
         "ts.csv:2: column at: \"2024-01-01 25:00\" is not a TIMESTAMP"),
        ("bool.csv", format!("{ok}\n2,1.0,n,2023-02-28,a,4,1,,maybe\n").into_bytes(),
         "bool.csv:2: column ok: \"maybe\" is not a BOOLEAN"),
        ("dup.csv", format!("{ok}\n100,1.0,n,2023-02-28,a,4,1,,\n").into_bytes(),
         "dup.csv:2: duplicate primary key (100): already in table b"),
        ("multi.csv", format!("{ok}\n\"2\",\"1.0\",\"two\nlines\",2023-02-28,a,4,1,,\n3,x,n,2023-02-28,a,4,1,,\n").into_bytes(),
         "multi.csv:4: column score: \"x\" is not a DOUBLE"),
        ("j.jsonl", b"{\"id\":1,\"n\":1}\n{\"id\":2,\"n\":1,\"score\":\"abc\"}\n".to_vec(),
         "j.jsonl:2: column score: \"abc\" is not a DOUBLE"),
        ("k.jsonl", b"{\"id\":1,\"n\":1}\n{\"id\":2,\"n\":1,\"nope\":1}\n".to_vec(),
         "k.jsonl:2: key \"nope\" is not a column of b"),
        ("l.jsonl", b"{\"id\":1,\"n\":1}\n[1,2]\n".to_vec(), "l.jsonl:2: not a JSON object"),
        ("case.jsonl", b"{\"id\":1,\"n\":1}\n{\"id\":2,\"n\":1,\"Name\":\"a\",\"name\":\"b\"}\n".to_vec(),
         "case.jsonl:2: keys \"Name\" and \"name\" both name column name"),
        ("twice.jsonl", b"{\"id\":1,\"n\":1,\"n\":2}\n".to_vec(), "twice.jsonl:1: key \"n\" appears twice"),
        ("num.jsonl", b"{\"id\":1e2,\"n\":1}\n{\"id\":2,\"n\":1,\"price\":123.456}\n".to_vec(),
         "num.jsonl:2: column price: \"123.456\" has more than 2 digits after the point"),
        ("big.jsonl", b"{\"id\":1,\"n\":1}\n{\"id\":2,\"n\":1e10}\n".to_vec(),
         "big.jsonl:2: column n: \"1e10\" is out of range for SMALLINT"),
        ("nested.jsonl", b"{\"id\":1,\"n\":[1]}\n".to_vec(),
         "nested.jsonl:1: column n: [1] is not a SMALLINT (nested JSON is not supported)"),
        ("e.tsv", b"1\t\\N\t\\N\t\\N\t\\N\t1\t\\N\t\\N\t\\N\n2\t\\N\tbad\\q\t\\N\t\\N\t1\t\\N\t\\N\t\\N\n".to_vec(),
         "e.tsv:2: column name: \"bad\\\\q\": unknown backslash escape"),
    ];
    for (name, content, want) in cases {
        let f = write(dir.path(), name, &content);
        let e = import(&db, SCHEMA, vec![f], opts())
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "{name}: got {e:?}, want {want:?}");
        assert_eq!(dump(&db), before, "{name} changed the Db");
        assert!(
            leftovers(&dbdir).is_empty(),
            "{name} left {:?}",
            leftovers(&dbdir)
        );
    }
}

#[test]
fn bad_header_and_tmp_dir_cleanup() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let db = open_db(dir.path().join("db"), true).unwrap();
    let f = write(dir.path(), "h.csv", b"id,nosuch\n1,2\n");
    let o = ImportOptions {
        header: true,
        tmp_dir: Some(tmp.clone()),
        ..opts()
    };
    let e = import(&db, SCHEMA, vec![f], o).unwrap_err().to_string();
    assert!(e.contains("h.csv:1: header names column \"nosuch\""), "{e}");
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
    assert!(dump(&db).is_empty());
}

#[test]
fn schema_errors_name_line_and_construct() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "x.csv", b"1\n");
    for (schema, want) in [
        (
            "CREATE TABLE a (\n  id INT,\n  g GEOMETRY\n)",
            "line 3, column 5: column g: column type GEOMETRY is not supported",
        ),
        (
            "CREATE TABLE a (id INT);\nCREATE INDEX i ON a (zz);",
            "line 2, column 22: index i: table a has no column zz",
        ),
        (
            "CREATE TABLE a (id INT);\nCREATE INDEX i ON nope (id);",
            "line 2, column 19: CREATE INDEX on nope: no such table",
        ),
        (
            "CREATE TABLE a (id INT,\n  PRIMARY KEY (id, id))",
            "line 2, column 20: PRIMARY KEY: column id listed twice",
        ),
        (
            "CREATE TABLE a (id INT) ;\n SELECT 1",
            "line 2, column 2: only CREATE TABLE and CREATE INDEX are supported",
        ),
        (
            "CREATE TABLE a (\n id DECIMAL(50,2))",
            "line 2, column 5: column id: DECIMAL(50,2): precision must be 1..=38",
        ),
    ] {
        let e = sluice_import::Import::new(schema, vec![f.clone()], opts())
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "{schema}: got {e}");
    }
}
