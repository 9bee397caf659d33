//! Schema clauses are implemented or refused, never ignored: each refusal names the clause and
//! the line and column where it is written; the identifier rule (unquoted names fold to lower
//! case, quoted ones keep theirs, names unique ignoring case) holds for tables, columns and
//! indexes alike, and for header and JSON-key matching.

mod common;

use common::*;
use sluice_import::{open_db, parse_schema, ImportOptions};

/// 1-based line and column (in characters) of the `nth` occurrence of `needle` in `text`.
fn position(text: &str, needle: &str, nth: usize) -> (u64, u64) {
    let at = text
        .match_indices(needle)
        .nth(nth)
        .unwrap_or_else(|| panic!("{needle:?} not in {text:?}"))
        .0;
    let before = &text[..at];
    let line = before.matches('\n').count() as u64 + 1;
    let col = before.rsplit('\n').next().unwrap_or("").chars().count() as u64 + 1;
    (line, col)
}

/// `(schema, the text the error points at, which occurrence of it, how the message starts)`.
const REFUSED: &[(&str, &str, usize, &str)] = &[
    // Column options.
    (
        "CREATE TABLE t (\n  a INT DEFAULT 0\n)",
        "DEFAULT",
        0,
        "DEFAULT is not supported",
    ),
    (
        "CREATE TABLE t (a INT,\n  b INT CHECK (b > 0))",
        "CHECK",
        0,
        "CHECK is not supported",
    ),
    (
        "CREATE TABLE t (a INT REFERENCES u (b))",
        "REFERENCES",
        0,
        "REFERENCES is not supported",
    ),
    (
        "CREATE TABLE t (a TEXT COLLATE \"de_DE\")",
        "COLLATE",
        0,
        "COLLATE \"de_DE\" is not supported",
    ),
    (
        "CREATE TABLE t (a INT GENERATED ALWAYS AS (1) STORED)",
        "GENERATED",
        0,
        "GENERATED / AS (…) is not supported",
    ),
    (
        "CREATE TABLE t (a INT GENERATED ALWAYS AS IDENTITY)",
        "GENERATED",
        0,
        "GENERATED / AS (…) is not supported",
    ),
    (
        "CREATE TABLE t (a INT AUTO_INCREMENT)",
        "AUTO_INCREMENT",
        0,
        "AUTO_INCREMENT is not supported",
    ),
    (
        "CREATE TABLE t (a TEXT CHARACTER SET utf8)",
        "CHARACTER",
        0,
        "CHARACTER SET is not supported",
    ),
    (
        "CREATE TABLE t (a INT COMMENT 'x')",
        "COMMENT",
        0,
        "COMMENT is not supported",
    ),
    (
        "CREATE TABLE t (a INT NOT NULL NULL)",
        "NULL",
        1,
        "column a: NULL and NOT NULL conflict",
    ),
    (
        "CREATE TABLE t (a INT NULL PRIMARY KEY)",
        "NULL",
        0,
        "column a: NULL conflicts with PRIMARY KEY",
    ),
    (
        "CREATE TABLE t (a INT PRIMARY KEY,\n PRIMARY KEY (a))",
        "PRIMARY",
        1,
        "more than one PRIMARY KEY",
    ),
    (
        "CREATE TABLE t (a INT PRIMARY KEY DEFERRABLE)",
        "DEFERRABLE",
        0,
        "DEFERRABLE is not supported",
    ),
    (
        "CREATE TABLE t (a INT CONSTRAINT nn NOT NULL)",
        "nn",
        0,
        "CONSTRAINT nn on NOT NULL is not supported",
    ),
    // Table constraints.
    (
        "CREATE TABLE t (a INT,\n FOREIGN KEY (a) REFERENCES u (b))",
        "FOREIGN",
        0,
        "FOREIGN KEY is not supported",
    ),
    (
        "CREATE TABLE t (a INT,\n CONSTRAINT c CHECK (a > 0))",
        "CHECK",
        0,
        "CHECK is not supported",
    ),
    (
        "CREATE TABLE t (a INT,\n PRIMARY KEY (a DESC))",
        "DESC",
        0,
        "DESC is not supported",
    ),
    (
        "CREATE TABLE t (a INT, b INT,\n UNIQUE (b NULLS LAST))",
        "NULLS",
        0,
        "NULLS LAST is not supported",
    ),
    (
        "CREATE TABLE t (a INT,\n UNIQUE NULLS NOT DISTINCT (a))",
        "NULLS",
        0,
        "NULLS NOT DISTINCT is not supported",
    ),
    (
        "CREATE TABLE t (a INT,\n PRIMARY KEY (lower(a)))",
        "lower",
        0,
        "key column lower(a): only plain column names",
    ),
    (
        "CREATE TABLE t (a INT,\n PRIMARY KEY (a) USING BTREE)",
        "USING",
        0,
        "index option USING BTREE is not supported",
    ),
    (
        "CREATE TABLE t (a TEXT,\n FULLTEXT (a))",
        "FULLTEXT",
        0,
        "FULLTEXT is not supported",
    ),
    // Table clauses.
    (
        "CREATE TEMPORARY TABLE t (a INT)",
        "TEMPORARY",
        0,
        "TEMPORARY is not supported",
    ),
    (
        "CREATE TEMP TABLE t (a INT)",
        "TEMP",
        0,
        "TEMPORARY is not supported",
    ),
    (
        "CREATE TABLE IF NOT EXISTS t (a INT)",
        "IF",
        0,
        "IF NOT EXISTS is not supported",
    ),
    (
        "CREATE OR REPLACE TABLE t (a INT)",
        "OR",
        0,
        "OR REPLACE is not supported",
    ),
    (
        "CREATE TABLE\n  s.t (a INT)",
        "s.t",
        0,
        "schema-qualified name s.t is not supported",
    ),
    (
        "CREATE TABLE t (a INT)\n WITH (fillfactor = 70)",
        "fillfactor",
        0,
        "table option fillfactor = 70 is not supported",
    ),
    (
        "CREATE TABLE t (a INT)\n ENGINE = InnoDB",
        "ENGINE",
        0,
        "table option ENGINE = InnoDB is not supported",
    ),
    (
        "CREATE TABLE t (a INT)\n PARTITION BY (a)",
        "PARTITION",
        0,
        "PARTITION BY is not supported",
    ),
    (
        "CREATE TABLE t (a INT)\n COMMENT 'x'",
        "COMMENT",
        0,
        "table option COMMENT",
    ),
    (
        "CREATE TABLE t (a INT)\n WITHOUT ROWID",
        "WITHOUT",
        0,
        "WITHOUT ROWID is not supported",
    ),
    (
        "CREATE TABLE t (a INT)\n AS SELECT 1",
        "AS",
        0,
        "AS SELECT is not supported",
    ),
    (
        "CREATE TABLE t (a INT)\n INHERITS (u)",
        "INHERITS",
        0,
        "INHERITS is not supported",
    ),
    (
        "CREATE TABLE t (a INT)\n ORDER BY a",
        "ORDER",
        0,
        "ORDER BY is not supported",
    ),
    // Types.
    (
        "CREATE TABLE t (a INT,\n ts TIMESTAMP(3))",
        "TIMESTAMP",
        0,
        "column ts: TIMESTAMP(3): only microsecond precision",
    ),
    (
        "CREATE TABLE t (a INT(11))",
        "INT(11)",
        0,
        "column a: INT(11): a display width is not supported",
    ),
    (
        "CREATE TABLE t (a FLOAT(60))",
        "FLOAT",
        0,
        "column a: FLOAT(60): only FLOAT(p) with p of 1..=53",
    ),
    (
        "CREATE TABLE t (a DOUBLE(10,2))",
        "DOUBLE",
        0,
        "column a: DOUBLE(10,2): only FLOAT(p)",
    ),
    (
        "CREATE TABLE t (a BLOB(10))",
        "BLOB",
        0,
        "column a: BLOB(10): a length is not supported",
    ),
    (
        "CREATE TABLE t (a UUID)",
        "UUID",
        0,
        "column a: column type UUID is not supported",
    ),
    // CREATE INDEX clauses.
    (
        "CREATE TABLE t (a INT);\nCREATE INDEX i ON t (a) WHERE a > 0;",
        "WHERE",
        0,
        "WHERE (a partial index) is not supported",
    ),
    (
        "CREATE TABLE t (a INT);\nCREATE INDEX i ON t (a DESC);",
        "DESC",
        0,
        "DESC is not supported",
    ),
    (
        "CREATE TABLE t (a INT);\nCREATE INDEX i ON t (a NULLS LAST);",
        "NULLS",
        0,
        "NULLS LAST is not supported",
    ),
    (
        "CREATE TABLE t (a INT);\nCREATE INDEX i ON t USING btree (a);",
        "USING",
        0,
        "USING is not supported",
    ),
    (
        "CREATE TABLE t (a INT, b INT);\nCREATE INDEX i ON t (a) INCLUDE (b);",
        "INCLUDE",
        0,
        "INCLUDE is not supported",
    ),
    (
        "CREATE TABLE t (a INT);\nCREATE INDEX CONCURRENTLY i ON t (a);",
        "CONCURRENTLY",
        0,
        "CONCURRENTLY is not supported",
    ),
    (
        "CREATE TABLE t (a INT);\nCREATE INDEX IF NOT EXISTS i ON t (a);",
        "IF",
        0,
        "IF NOT EXISTS is not supported",
    ),
    (
        "CREATE TABLE t (a INT);\nCREATE INDEX i ON t (a) WITH (fillfactor = 70);",
        "WITH",
        0,
        "WITH (…) on an index is not supported",
    ),
    (
        "CREATE TABLE t (a INT);\nCREATE UNIQUE INDEX i ON t (a) NULLS NOT DISTINCT;",
        "NULLS",
        0,
        "NULLS NOT DISTINCT is not supported",
    ),
    (
        "CREATE TABLE t (a INT);\nCREATE INDEX i ON t (lower(a));",
        "lower",
        0,
        "key column lower(a)",
    ),
    (
        "CREATE TABLE t (a INT);\nCREATE INDEX i ON s.t (a);",
        "s.t",
        0,
        "schema-qualified name s.t is not supported",
    ),
    (
        "CREATE TABLE t (a INT);\nCREATE INDEX s.i ON t (a);",
        "s.i",
        0,
        "schema-qualified name s.i is not supported",
    ),
    // Other statements.
    (
        "CREATE TABLE t (a INT);\n  DROP TABLE t;",
        "DROP",
        0,
        "only CREATE TABLE and CREATE INDEX are supported",
    ),
    // Identifiers: unquoted names fold to lower case; names must differ in more than case.
    (
        "CREATE TABLE t (\"Id\" INT,\n \"id\" INT)",
        "\"id\"",
        0,
        "columns Id and id differ only in case",
    ),
    (
        "CREATE TABLE t (ID INT,\n id INT)",
        "id",
        0,
        "column id is defined twice",
    ),
    (
        "CREATE TABLE T (a INT);\nCREATE TABLE \"t\" (a INT);",
        "\"t\"",
        0,
        "table t is defined twice",
    ),
    (
        "CREATE TABLE \"T\" (a INT);\nCREATE TABLE t (b INT);",
        "t (b",
        0,
        "tables T and t differ only in case",
    ),
    (
        "CREATE TABLE t (Id INT,\n PRIMARY KEY (\"Id\"))",
        "\"Id\"",
        0,
        "PRIMARY KEY: table t has no column Id (column id differs in case",
    ),
    (
        "CREATE TABLE T (a INT);\nCREATE INDEX i ON \"T\" (a);",
        "\"T\"",
        0,
        "CREATE INDEX on T: no such table (create it first) (table t differs in case",
    ),
    (
        "CREATE TABLE t (a INT, b INT);\nCREATE INDEX i ON t (a);\nCREATE INDEX I ON t (b);",
        "I ON",
        0,
        "index name i is already used",
    ),
    (
        "CREATE TABLE t (_ROWID INT)",
        "_ROWID",
        0,
        "column name _rowid is reserved",
    ),
];

#[test]
fn every_refused_clause_names_itself_and_its_position() {
    for &(schema, needle, nth, want) in REFUSED {
        let e = match parse_schema(schema) {
            Ok(t) => panic!("{schema}: accepted as {t:?}"),
            Err(e) => e,
        };
        let (line, column) = position(schema, needle, nth);
        assert_eq!(
            (e.line, e.column),
            (line, column),
            "{schema}: {e} (want it at {needle:?})"
        );
        assert!(e.message.starts_with(want), "{schema}: {e}, want {want:?}");
        // Display carries the position for the CLI's `file:line:column:`.
        assert!(e
            .to_string()
            .starts_with(&format!("line {line}, column {column}: ")));
    }
}

#[test]
fn implemented_clauses_mean_what_they_say() {
    let t = parse_schema(
        "CREATE TABLE Orders (\n\
           Id INT,\n\
           \"Note\" TEXT COLLATE \"C\",\n\
           code CHAR,\n\
           name CHARACTER VARYING(4) NULL,\n\
           at TIMESTAMP(6) WITH TIME ZONE,\n\
           r REAL, f FLOAT(24),\n\
           CONSTRAINT pk_orders PRIMARY KEY (id ASC NULLS FIRST),\n\
           CONSTRAINT one_note UNIQUE NULLS DISTINCT (\"Note\"),\n\
           INDEX by_code (code)\n\
         );\n\
         CREATE UNIQUE INDEX By_Name ON ORDERS (name ASC);",
    )
    .unwrap();
    let t = &t[0];
    assert_eq!(t.name, "orders");
    let names: Vec<&str> = t.columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["id", "Note", "code", "name", "at", "r", "f"]);
    assert_eq!(t.columns[2].ty.to_string(), "VARCHAR(1)");
    assert_eq!(t.columns[3].ty.to_string(), "VARCHAR(4)");
    assert_eq!(t.columns[4].ty.to_string(), "TIMESTAMP");
    assert_eq!(t.columns[6].ty.to_string(), "DOUBLE");
    assert_eq!(t.primary_key, [0]);
    let idx: Vec<(&str, bool)> = t
        .indexes
        .iter()
        .map(|i| (i.name.as_str(), i.unique))
        .collect();
    assert_eq!(
        idx,
        [("one_note", true), ("by_code", false), ("by_name", true)]
    );
}

/// Header fields and JSON keys name columns ignoring case; the names stored and printed are
/// the folded (or quoted) ones.
#[test]
fn headers_and_keys_follow_the_identifier_rule() {
    let dir = tempfile::tempdir().unwrap();
    let schema = "CREATE TABLE People (ID INT PRIMARY KEY, \"FullName\" TEXT)";
    let db = open_db(dir.path().join("db"), true).unwrap();
    let f = write(dir.path(), "p.csv", b"fullname,Id\nAda,1\n");
    let o = ImportOptions {
        header: true,
        table: Some("PEOPLE".into()),
        ..opts()
    };
    import(&db, schema, vec![f], o).unwrap();
    let f = write(dir.path(), "p.jsonl", b"{\"FULLNAME\":\"Bob\",\"id\":2}\n");
    import(&db, schema, vec![f], opts()).unwrap();
    assert_eq!(
        json_rows(&db, "people"),
        [
            r#"{"id":1,"FullName":"Ada"}"#,
            r#"{"id":2,"FullName":"Bob"}"#
        ]
    );
    // A header naming one column twice (in two spellings) is refused.
    let f = write(dir.path(), "q.csv", b"id,ID\n3,3\n");
    let e = import(
        &db,
        schema,
        vec![f],
        ImportOptions {
            header: true,
            ..opts()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("header names column \"ID\""), "{e}");
}
