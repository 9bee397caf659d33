//! Imports end to end: every type and NULL, formats, CSV edge cases, compressed inputs,
//! duplicates (across chunks, against existing rows), unique indexes, spills, catalog checks.

mod common;

columnar_too!(
    every_type_and_null_round_trips_in_every_format,
    csv_edge_cases,
    compressed_inputs_and_header_mapping,
    hidden_row_id_in_input_order_and_append,
    duplicate_across_chunks_is_found_with_both_lines,
    spills_and_merges_under_a_small_budget,
    sorted_input_streams_straight_to_final_files,
    duplicates_against_existing_rows_keep_indexes_consistent,
    unique_index_violation_is_refused,
    changed_definition_and_catalog,
    max_errors_writes_rejects_and_goes_on,
    explicit_format_and_delimiter,
    streaming_then_out_of_order_with_a_unique_index,
);

use std::io::Write as _;

use common::*;
use sluice_import::{open_db, Format, ImportOptions, Layout, OnDuplicate, TableReader};

const ALL_TYPES: &str = "CREATE TABLE t (
    id BIGINT PRIMARY KEY,
    s SMALLINT, i INT, d DOUBLE, m DECIMAL(10,2), b BOOLEAN, x TEXT, v VARCHAR(5),
    y BYTES, dt DATE, ts TIMESTAMP
);
CREATE INDEX by_x ON t (x);";

#[test]
fn every_type_and_null_round_trips_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let csv = "1,-32768,2147483647,-1.5e300,-12345678.99,true,\"héllo, \"\"world\"\"\",abcde,\\x00ff41,2024-02-29,2024-02-29 23:59:59.123456\n\
               2,,,,,,,,,,\n\
               3,7,-7,0,0.1,f,\"\",ä,\"\",1900-01-01,1970-01-01T00:00:00+01:00\n";
    let tsv = "1\t-32768\t2147483647\t-1.5e300\t-12345678.99\ttrue\théllo, \"world\"\tabcde\t\\\\x00ff41\t2024-02-29\t2024-02-29 23:59:59.123456\n\
               2\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\n\
               3\t7\t-7\t0\t0.1\tf\t\tä\t\t1900-01-01\t1970-01-01T00:00:00+01:00\n";
    let jsonl = r#"{"id":1,"s":-32768,"i":2147483647,"d":-1.5e300,"m":"-12345678.99","b":true,"x":"héllo, \"world\"","v":"abcde","y":"\\x00ff41","dt":"2024-02-29","ts":"2024-02-29 23:59:59.123456"}
{"id":2,"s":null}
{"id":3,"s":7,"i":-7,"d":0,"m":0.1,"b":false,"x":"","v":"ä","y":"","dt":"1900-01-01","ts":"1970-01-01T00:00:00+01:00"}
"#;
    let expected = [
        "1,-32768,2147483647,-1.5e300,-12345678.99,true,\"héllo, \"\"world\"\"\",abcde,\\x00ff41,2024-02-29,2024-02-29T23:59:59.123456Z",
        "2,,,,,,,,,,",
        "3,7,-7,0,0.10,false,\"\",ä,\\x,1900-01-01,1969-12-31T23:00:00Z",
    ];
    for (name, content) in [("a.csv", csv), ("a.tsv", tsv), ("a.jsonl", jsonl)] {
        let db = open_db(dir.path().join(name.replace('.', "_")), true).unwrap();
        let f = write(dir.path(), name, content.as_bytes());
        let s = import(&db, ALL_TYPES, vec![f], opts()).unwrap();
        assert_eq!(s.rows, 3, "{name}");
        let got = rows(&db, "t", None);
        // Row 2 is NULL in every column but the key in every format (CSV: unquoted empty fields;
        // TSV: \\N; JSON: missing keys); row 3's TEXT and BYTES are empty values (CSV: `""`).
        assert_eq!(got, expected, "{name}");
        let j = json_rows(&db, "t");
        assert!(j[0].contains("\"m\":-12345678.99"), "{}", j[0]);
        assert!(j[1].contains("\"x\":null"), "{name}: {}", j[1]);
        assert!(
            j[2].contains("\"x\":\"\",\"v\":\"ä\",\"y\":\"\\\\x\""),
            "{name}: {}",
            j[2]
        );
        assert!(j[2].contains("\"ts\":\"1969-12-31T23:00:00Z\""), "{}", j[2]);
        // Secondary index order: NULL first, then "", then text.
        let by_x = rows(&db, "t", Some("by_x"));
        assert_eq!(by_x.len(), 3);
        assert!(
            by_x[0].starts_with("2,") && by_x[1].starts_with("3,"),
            "{by_x:?}"
        );
    }
}

#[test]
fn csv_edge_cases() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path().join("db"), true).unwrap();
    let schema = "CREATE TABLE e (id INT PRIMARY KEY, a TEXT, b TEXT, n INT)";
    // BOM, header, CRLF, quotes, embedded delimiter and newlines, trailing empty fields.
    let content = b"\xEF\xBB\xBFid,a,b,n\r\n1,\"x,y\",\"line1\r\nline2\",\r\n2,\"he said \"\"hi\"\"\",,\r\n3,,\"\",7\r\n4,plain,\"\n\",";
    let f = write(dir.path(), "e.csv", content);
    let s = import(
        &db,
        schema,
        vec![f],
        ImportOptions {
            header: true,
            ..opts()
        },
    )
    .unwrap();
    assert_eq!(s.rows, 4);
    let r = TableReader::open(&db, None).unwrap();
    let get = |id: &str| {
        let row = r.get(&[id.to_string()]).unwrap().unwrap();
        r.format_row(&row, sluice_import::OutputFormat::Json)
    };
    assert_eq!(
        get("1"),
        r#"{"id":1,"a":"x,y","b":"line1\r\nline2","n":null}"#
    );
    // An unquoted empty field is NULL, a quoted one the empty string.
    assert_eq!(
        get("2"),
        r#"{"id":2,"a":"he said \"hi\"","b":null,"n":null}"#
    );
    assert_eq!(get("3"), r#"{"id":3,"a":null,"b":"","n":7}"#);
    assert_eq!(get("4"), r#"{"id":4,"a":"plain","b":"\n","n":null}"#);
}

#[test]
fn compressed_inputs_and_header_mapping() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path().join("db"), true).unwrap();
    let schema = "CREATE TABLE c (k TEXT, v INT NOT NULL, PRIMARY KEY (k))";
    let body = "v,k\n1,a\n2,b\n";
    let gz = dir.path().join("x.csv.gz");
    let mut e = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).unwrap(),
        flate2::Compression::default(),
    );
    e.write_all(body.as_bytes()).unwrap();
    e.finish().unwrap();
    let zst = dir.path().join("y.csv.zst");
    std::fs::write(&zst, zstd::encode_all("v,k\n3,c\n".as_bytes(), 3).unwrap()).unwrap();
    let s = import(
        &db,
        schema,
        vec![gz, zst],
        ImportOptions {
            header: true,
            ..opts()
        },
    )
    .unwrap();
    assert_eq!(s.rows, 3);
    assert_eq!(rows(&db, "c", None), vec!["a,1", "b,2", "c,3"]);
    // Compressed files not named so are known by their magic bytes (a header error before).
    let gz_named_csv = dir.path().join("z.csv");
    std::fs::copy(dir.path().join("x.csv.gz"), &gz_named_csv).unwrap();
    let zst_named_txt = dir.path().join("w.txt");
    std::fs::write(
        &zst_named_txt,
        zstd::encode_all("v,k\n4,d\n".as_bytes(), 3).unwrap(),
    )
    .unwrap();
    let db2 = open_db(dir.path().join("db2"), true).unwrap();
    let o = ImportOptions {
        header: true,
        ..opts()
    };
    let s = import(&db2, schema, vec![gz_named_csv, zst_named_txt], o).unwrap();
    assert_eq!(s.rows, 3);
    assert_eq!(rows(&db2, "c", None), vec!["a,1", "b,2", "d,4"]);
}

/// A delimiter or quote no record could be read with is refused before anything is read.
#[test]
fn a_quote_equal_to_the_delimiter_or_a_line_end_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path().join("db"), true).unwrap();
    let f = write(dir.path(), "q.csv", b"1,a\n");
    let schema = "CREATE TABLE q (id INT PRIMARY KEY, t TEXT)";
    for (delimiter, quote, want) in [
        (None, Some(b','), "quote: must differ from the delimiter"),
        (
            Some(b';'),
            Some(b';'),
            "quote: must differ from the delimiter",
        ),
        (
            Some(b'\n'),
            Some(b'"'),
            "delimiter: a line end cannot separate fields",
        ),
        (
            Some(b','),
            Some(b'\r'),
            "quote: a line end cannot quote a field",
        ),
    ] {
        let o = ImportOptions {
            delimiter,
            quote,
            ..opts()
        };
        let e = import(&db, schema, vec![f.clone()], o)
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "{delimiter:?} {quote:?}: {e}");
    }
    // A quote equal to the delimiter is fine with quoting off.
    let o = ImportOptions {
        delimiter: Some(b'"'),
        quote: None,
        ..opts()
    };
    let f = write(dir.path(), "r.csv", b"1\"a\n");
    import(&db, schema, vec![f], o).unwrap();
    assert_eq!(rows(&db, "q", None), vec!["1,a"]);
}

#[test]
fn hidden_row_id_in_input_order_and_append() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path().join("db"), true).unwrap();
    let schema = "CREATE TABLE h (name TEXT, n INT); CREATE INDEX by_n ON h (n);";
    let f = write(dir.path(), "h.csv", b"z,3\ny,1\nx,2\n");
    import(&db, schema, vec![f.clone()], opts()).unwrap();
    assert_eq!(rows(&db, "h", None), vec!["z,3", "y,1", "x,2"]);
    // A second import appends after the existing rows.
    import(&db, schema, vec![f], opts()).unwrap();
    assert_eq!(
        rows(&db, "h", None),
        vec!["z,3", "y,1", "x,2", "z,3", "y,1", "x,2"]
    );
    assert_eq!(
        rows(&db, "h", Some("by_n")),
        vec!["y,1", "y,1", "x,2", "x,2", "z,3", "z,3"]
    );
}

fn many_rows(n: usize, dup_of: Option<(usize, usize)>) -> Vec<u8> {
    let mut s = String::new();
    for i in 0..n {
        let id = match dup_of {
            Some((at, of)) if i == at => of,
            _ => i,
        };
        // Keys out of input order so nothing streams.
        s.push_str(&format!("{},{}\n", (id * 7919) % 100_003, i));
    }
    s.into_bytes()
}

#[test]
fn duplicate_across_chunks_is_found_with_both_lines() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path().join("db"), true).unwrap();
    let before = dump(&db);
    let schema = "CREATE TABLE d (id INT PRIMARY KEY, n INT)";
    // Row 900 (line 901) repeats row 30's key; chunks are about 64 bytes, so they are far
    // apart (and the first chunk, streamed before the input turned out unsorted, is not
    // involved, so both lines are named).
    let f = write(dir.path(), "d.csv", &many_rows(1000, Some((900, 30))));
    let e = import(&db, schema, vec![f.clone()], opts())
        .unwrap_err()
        .to_string();
    assert!(e.contains("d.csv:901: duplicate primary key"), "{e}");
    assert!(e.contains("(also at ") && e.contains("d.csv:31)"), "{e}");
    assert_eq!(dump(&db), before);
    assert!(leftovers(&dir.path().join("db")).is_empty());
    // first / last keep one of them.
    for (mode, n) in [(OnDuplicate::First, "30"), (OnDuplicate::Last, "900")] {
        let db2 = open_db(dir.path().join(format!("db{n}")), true).unwrap();
        let s = import(
            &db2,
            schema,
            vec![f.clone()],
            ImportOptions {
                on_duplicate: mode,
                ..opts()
            },
        )
        .unwrap();
        assert_eq!((s.rows, s.duplicates_dropped), (999, 1));
        let r = TableReader::open(&db2, None).unwrap();
        let key = ((30 * 7919) % 100_003).to_string();
        let row = r.get(&[key]).unwrap().unwrap();
        assert_eq!(
            r.format_row(&row, sluice_import::OutputFormat::Csv)
                .split(',')
                .nth(1),
            Some(n)
        );
    }
}

#[test]
fn spills_and_merges_under_a_small_budget() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path().join("db"), true).unwrap();
    let schema = "CREATE TABLE s (id INT PRIMARY KEY, n INT); CREATE INDEX by_n ON s (n);";
    let n = 100_003;
    let mut content = String::new();
    for i in 0..n {
        content.push_str(&format!("{},{}\n", (i * 7919) % n, i % 1000));
    }
    let f = write(dir.path(), "s.csv", content.as_bytes());
    let s = import(
        &db,
        schema,
        vec![f],
        ImportOptions {
            memory: 8 << 20,
            chunk_size: Some(16 << 10),
            target_file_size: 256 << 10,
            ..opts()
        },
    )
    .unwrap();
    assert_eq!(s.rows, n as u64);
    assert!(s.runs_spilled > 0, "{s:?}");
    assert!(s.files.len() > 3, "{s:?}");
    let got = rows(&db, "s", None);
    assert_eq!(got.len(), n);
    for (i, line) in got.iter().enumerate() {
        assert!(line.starts_with(&format!("{i},")), "{line}");
    }
    let by_n = rows(&db, "s", Some("by_n"));
    let ns: Vec<u32> = by_n
        .iter()
        .map(|l| l.split(',').nth(1).unwrap().parse().unwrap())
        .collect();
    assert!(ns.windows(2).all(|w| w[0] <= w[1]));
    assert!(leftovers(&dir.path().join("db")).is_empty());
}

#[test]
fn sorted_input_streams_straight_to_final_files() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path().join("db"), true).unwrap();
    let schema = "CREATE TABLE o (id INT PRIMARY KEY, n INT); CREATE INDEX by_n ON o (n);";
    let mut content = String::new();
    for i in 0..20_000 {
        content.push_str(&format!("{i},{}\n", 20_000 - i));
    }
    let f = write(dir.path(), "o.csv", content.as_bytes());
    let s = import(&db, schema, vec![f], opts()).unwrap();
    if layout() == Layout::Row {
        assert_eq!(s.streamed_indexes, vec!["primary".to_string()]);
    } else {
        // Columnar: the streamed rows are split into cells in one more sequential pass.
        assert!(s.streamed_indexes.is_empty(), "{s:?}");
    }
    assert_eq!(s.runs_spilled, 0);
    assert_eq!(rows(&db, "o", Some("by_n"))[0], "19999,1");
}

#[test]
fn duplicates_against_existing_rows_keep_indexes_consistent() {
    let dir = tempfile::tempdir().unwrap();
    let schema =
        "CREATE TABLE p (id INT PRIMARY KEY, color TEXT); CREATE INDEX by_color ON p (color);";
    let first = write(dir.path(), "1.csv", b"1,red\n2,green\n3,blue\n");
    let second = write(dir.path(), "2.csv", b"2,yellow\n4,red\n");
    for mode in [OnDuplicate::Error, OnDuplicate::First, OnDuplicate::Last] {
        let db = open_db(dir.path().join(format!("{mode:?}")), true).unwrap();
        import(&db, schema, vec![first.clone()], opts()).unwrap();
        let before = dump(&db);
        let r = import(
            &db,
            schema,
            vec![second.clone()],
            ImportOptions {
                on_duplicate: mode,
                ..opts()
            },
        );
        match mode {
            OnDuplicate::Error => {
                let e = r.unwrap_err().to_string();
                assert!(
                    e.contains("2.csv:1: duplicate primary key (2): already in table p"),
                    "{e}"
                );
                assert_eq!(dump(&db), before);
            }
            OnDuplicate::First => {
                r.unwrap();
                assert_eq!(
                    rows(&db, "p", None),
                    vec!["1,red", "2,green", "3,blue", "4,red"]
                );
                assert_eq!(
                    rows(&db, "p", Some("by_color")),
                    vec!["3,blue", "2,green", "1,red", "4,red"]
                );
            }
            // Refused for cells tables holding rows (see
            // `replacing_cells_rows_is_refused_rather_than_resurrecting_cells`).
            OnDuplicate::Last if layout() == Layout::Cells => {
                let e = r.unwrap_err().to_string();
                assert!(e.contains("not supported yet"), "{e}");
                assert_eq!(dump(&db), before);
            }
            OnDuplicate::Last => {
                r.unwrap();
                assert_eq!(
                    rows(&db, "p", None),
                    vec!["1,red", "2,yellow", "3,blue", "4,red"]
                );
                assert_eq!(
                    rows(&db, "p", Some("by_color")),
                    vec!["3,blue", "1,red", "4,red", "2,yellow"]
                );
            }
        }
    }
}

#[test]
fn replacing_cells_rows_is_refused_rather_than_resurrecting_cells() {
    // A replaced row's NULL columns would keep their old cells (cells are stored for non-NULL
    // values only): `--on-duplicate last` into a cells table holding rows is refused and
    // changes nothing.
    let dir = tempfile::tempdir().unwrap();
    let schema = "CREATE TABLE p (id INT PRIMARY KEY, color TEXT, n INT) WITH (layout = 'cells');";
    let first = write(dir.path(), "1.csv", b"1,red,10\n2,green,20\n");
    let second = write(dir.path(), "2.csv", b"2,,\n");
    let db = open_db(dir.path().join("db"), true).unwrap();
    import(&db, schema, vec![first], opts()).unwrap();
    let before = dump(&db);
    let e = import(
        &db,
        schema,
        vec![second],
        ImportOptions {
            on_duplicate: OnDuplicate::Last,
            null: Some(String::new()),
            ..opts()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("not supported yet"), "{e}");
    assert_eq!(dump(&db), before);
}

#[test]
fn unique_index_violation_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path().join("db"), true).unwrap();
    let before = dump(&db);
    let schema = "CREATE TABLE u (id INT PRIMARY KEY, email TEXT); CREATE UNIQUE INDEX by_email ON u (email);";
    let f = write(dir.path(), "u.csv", b"1,a@x\n2,\n3,\n4,b@x\n5,a@x\n");
    let nulls = || ImportOptions {
        null: Some(String::new()),
        ..opts()
    };
    let e = import(&db, schema, vec![f], nulls())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("u.csv:5: column email: \"a@x\" violates unique index by_email (also at"),
        "{e}"
    );
    assert!(e.contains("u.csv:1)"), "{e}");
    assert_eq!(dump(&db), before);
    // NULLs do not collide; a later import colliding with a stored row is refused.
    let ok = write(dir.path(), "ok.csv", b"1,a@x\n2,\n3,\n");
    import(&db, schema, vec![ok], nulls()).unwrap();
    let before = dump(&db);
    let clash = write(dir.path(), "clash.csv", b"9,a@x\n");
    let e = import(&db, schema, vec![clash], nulls())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(
            "clash.csv:1: column email: \"a@x\" violates unique index by_email: existing row (1)"
        ),
        "{e}"
    );
    assert_eq!(dump(&db), before);
}

#[test]
fn changed_definition_and_catalog() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path().join("db"), true).unwrap();
    let f = write(dir.path(), "a.csv", b"1,x\n");
    import(
        &db,
        "CREATE TABLE a (id INT PRIMARY KEY, t TEXT)",
        vec![f.clone()],
        opts(),
    )
    .unwrap();
    let e = import(
        &db,
        "CREATE TABLE a (id BIGINT PRIMARY KEY, t TEXT)",
        vec![f.clone()],
        opts(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("column 1: stored as id INT NOT NULL, schema says id BIGINT NOT NULL"),
        "{e}"
    );
    import(
        &db,
        "CREATE TABLE b (id INT PRIMARY KEY, t TEXT)",
        vec![f],
        opts(),
    )
    .unwrap();
    let tables = TableReader::tables(&db).unwrap();
    assert_eq!(
        tables
            .iter()
            .map(|t| (t.name.as_str(), t.id))
            .collect::<Vec<_>>(),
        vec![("a", 1), ("b", 2)]
    );
    // Survives a reopen.
    drop(db);
    let db = open_db(dir.path().join("db"), false).unwrap();
    assert_eq!(rows(&db, "b", None), vec!["1,x"]);
}

#[test]
fn max_errors_writes_rejects_and_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path().join("db"), true).unwrap();
    let schema = "CREATE TABLE r (id INT PRIMARY KEY, score DOUBLE)";
    let f = write(dir.path(), "r.csv", b"1,1.5\n2,notanumber\n3,2\n3,9\n");
    let rej = dir.path().join("rejects.txt");
    let committed = sluice_import::imports_committed();
    let s = import(
        &db,
        schema,
        vec![f.clone()],
        ImportOptions {
            max_errors: 2,
            rejects: Some(rej.clone()),
            ..opts()
        },
    )
    .unwrap();
    assert_eq!((s.rows, s.rejected), (2, 2));
    // Counted for a signal handler's message (other tests of this process commit too).
    assert!(sluice_import::imports_committed() > committed);
    let text = std::fs::read_to_string(&rej).unwrap();
    assert!(
        text.contains("r.csv:2: column score: \"notanumber\" is not a DOUBLE\n2,notanumber\n"),
        "{text}"
    );
    assert!(
        text.contains("r.csv:4: duplicate primary key (3)"),
        "{text}"
    );
    assert_eq!(rows(&db, "r", None), vec!["1,1.5", "3,2"]);
    // Past the limit the import fails and stores nothing, and the rejects file holds every row
    // rejected up to and including the one that went over: one (none allowed), or both.
    for (max_errors, kept) in [(0, 1), (1, 2)] {
        let db = open_db(dir.path().join(format!("db{max_errors}")), true).unwrap();
        let e = import(
            &db,
            schema,
            vec![f.clone()],
            ImportOptions {
                max_errors,
                rejects: Some(rej.clone()),
                ..opts()
            },
        )
        .unwrap_err()
        .to_string();
        let last = ["notanumber", "duplicate primary key (3)"][kept - 1];
        assert!(e.contains(last), "{e}");
        assert!(TableReader::tables(&db).unwrap().is_empty());
        let text = std::fs::read_to_string(&rej).unwrap();
        let reasons: Vec<&str> = text.lines().filter(|l| l.starts_with("# ")).collect();
        assert_eq!(reasons.len(), kept, "{text}");
        assert!(text.contains("2,notanumber\n"), "{text}");
        assert_eq!(
            text.contains("r.csv:4: duplicate primary key (3)"),
            kept == 2
        );
    }
}

/// A record with malformed quoting (a stray quote in an unquoted field, characters after a
/// closing quote) is a rejected row like any other: under `max_errors` it goes to the rejects
/// file as written, with its column and text, and the rows around it, a multi-line quoted
/// one too, are imported. Every chunk size cuts the input somewhere else.
#[test]
fn malformed_quoting_is_a_rejected_row() {
    let schema = "CREATE TABLE m (id INT PRIMARY KEY, t TEXT, n INT)";
    let input =
        "1,\"a\nb\",1\n2,12\" pizza,2\n3,\"x\"\"y\",3\n4,\"ab\"c,4\r\n5,\"e\",5\n6,f,\"6\"7\n";
    for chunk in [1, 7, 64, 1 << 20] {
        let dir = tempfile::tempdir().unwrap();
        let db = open_db(dir.path().join("db"), true).unwrap();
        let f = write(dir.path(), "m.csv", input.as_bytes());
        let rej = dir.path().join("rejects.txt");
        let s = import(
            &db,
            schema,
            vec![f.clone()],
            ImportOptions {
                max_errors: 3,
                rejects: Some(rej.clone()),
                chunk_size: Some(chunk),
                ..opts()
            },
        )
        .unwrap();
        assert_eq!((s.rows, s.rejected), (3, 3), "chunk {chunk}");
        assert_eq!(
            rows(&db, "m", None),
            vec!["1,\"a\nb\",1", "3,\"x\"\"y\",3", "5,e,5"],
            "chunk {chunk}"
        );
        let text = std::fs::read_to_string(&rej).unwrap();
        for want in [
            "m.csv:3: column t: \"12\\\" pizza\": malformed quoting: a quote inside an unquoted field\n2,12\" pizza,2\n",
            "m.csv:5: column t: \"\\\"ab\\\"c\": malformed quoting: characters after a closing quote\n4,\"ab\"c,4\n",
            "m.csv:7: column n: \"\\\"6\\\"7\": malformed quoting: characters after a closing quote\n6,f,\"6\"7\n",
        ] {
            assert!(text.contains(want), "chunk {chunk}: {want:?} not in {text}");
        }
        // Without room for them, the first one fails the import and nothing is stored.
        let db2 = open_db(dir.path().join("db2"), true).unwrap();
        let e = import(
            &db2,
            schema,
            vec![f],
            ImportOptions {
                chunk_size: Some(chunk),
                ..opts()
            },
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("m.csv:3: column t: \"12\\\" pizza\""), "{e}");
        assert!(TableReader::tables(&db2).unwrap().is_empty());
    }
}

/// Where records end never depends on where chunks are cut: a UTF-8 BOM at the start of a
/// record after the first is data (csv-core would drop one only at a chunk's start), and a
/// stray quote that takes line ends with it (characters after a quoted field that spans
/// lines) fails the import, naming the line it opened on, even under `max_errors`.
#[test]
fn record_ends_do_not_depend_on_chunk_cuts() {
    let schema = "CREATE TABLE b (a TEXT PRIMARY KEY, b TEXT)";
    let bom_mid = b"k,aaaaaaaaaaaaa\n\xEF\xBB\xBF\"x\ny\",2\n3,c\n";
    let stray = b"1,a\n2,\"12 inch pizza,12\n3,Salad,5\n4,Soda,2\n5,6\" sub,7\n";
    for chunk in [1, 7, 64, 1 << 20] {
        let dir = tempfile::tempdir().unwrap();
        let o = || ImportOptions {
            max_errors: 10,
            chunk_size: Some(chunk),
            ..opts()
        };
        let db = open_db(dir.path().join("db"), true).unwrap();
        let f = write(dir.path(), "bom.csv", bom_mid);
        let s = import(&db, schema, vec![f], o()).unwrap();
        assert_eq!((s.rows, s.rejected), (2, 2), "chunk {chunk}");
        assert_eq!(
            rows(&db, "b", None),
            vec!["3,c", "k,aaaaaaaaaaaaa"],
            "chunk {chunk}"
        );
        let db2 = open_db(dir.path().join("db2"), true).unwrap();
        let f = write(dir.path(), "stray.csv", stray);
        let e = import(&db2, schema, vec![f], o()).unwrap_err().to_string();
        assert!(
            e.contains("stray.csv:2: field 2: the quoted field opened here runs to line 5"),
            "chunk {chunk}: {e}"
        );
        assert!(TableReader::tables(&db2).unwrap().is_empty());
    }
}

#[test]
fn explicit_format_and_delimiter() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path().join("db"), true).unwrap();
    let f = write(dir.path(), "data.txt", b"1;'a;b'\n2;c\n");
    import(
        &db,
        "CREATE TABLE x (id INT PRIMARY KEY, t TEXT)",
        vec![f],
        ImportOptions {
            format: Some(Format::Csv),
            delimiter: Some(b';'),
            quote: Some(b'\''),
            ..opts()
        },
    )
    .unwrap();
    assert_eq!(rows(&db, "x", None), vec!["1,a;b", "2,c"]);
}

#[test]
fn streaming_then_out_of_order_with_a_unique_index() {
    // The first chunks are in key order (streamed), later ones are not: what was streamed is
    // merged again, and must not collide with itself in the unique index.
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path().join("db"), true).unwrap();
    let schema = "CREATE TABLE q (id INT PRIMARY KEY, email TEXT); CREATE UNIQUE INDEX by_email ON q (email);";
    let mut content = String::new();
    for i in 0..200 {
        content.push_str(&format!("{i},user{i}@example.com\n"));
    }
    for i in (200..400).rev() {
        content.push_str(&format!("{i},user{i}@example.com\n"));
    }
    let f = write(dir.path(), "q.csv", content.as_bytes());
    let s = import(&db, schema, vec![f], opts()).unwrap();
    assert_eq!(s.rows, 400);
    assert!(s.streamed_indexes.is_empty(), "{s:?}");
    assert_eq!(rows(&db, "q", None).len(), 400);
    assert_eq!(rows(&db, "q", Some("by_email")).len(), 400);
    // A duplicate of a streamed row found after the fallback names both files and lines.
    let mut bad = content.clone();
    bad.push_str("5,again@example.com\n");
    let f = write(dir.path(), "q2.csv", bad.as_bytes());
    let db2 = open_db(dir.path().join("db2"), true).unwrap();
    let e = import(&db2, schema, vec![f], opts())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("q2.csv:401: duplicate primary key (5) (also at ") && e.ends_with("q2.csv:6)"),
        "{e}"
    );
}

#[test]
fn cells_layout_stores_one_kv_per_cell() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path().join("db"), true).unwrap();
    let schema =
        "CREATE TABLE c (a INT, b TEXT, n INT, PRIMARY KEY (b, a)) WITH (layout = 'cells');
                  CREATE INDEX by_n ON c (n);";
    let f = write(dir.path(), "c.csv", b"2,x,10\n1,y,\n1,x,30\n");
    let s = import(&db, schema, vec![f], opts()).unwrap();
    assert_eq!(s.rows, 3);
    let t = &TableReader::open(&db, Some("c")).unwrap().table;
    assert_eq!(t.layout, Layout::Cells);
    // Index ids under table c: 1 (primary: one marker a row), 2 (by_n), and only column n
    // (position 2) has cells: a and b are in the key, and row (1, y) has n NULL.
    let per_index = per_index_counts(&db, t.id);
    let cells = sluice_import::schema::COLUMN_INDEX_BASE + 2;
    assert_eq!(
        per_index,
        [(1, 3), (2, 3), (cells, 2)].into_iter().collect()
    );
    assert_eq!(rows(&db, "c", None), vec!["1,x,30", "2,x,10", "1,y,"]);
    assert_eq!(
        rows(&db, "c", Some("by_n")),
        vec!["1,y,", "2,x,10", "1,x,30"]
    );
    let r = TableReader::open(&db, Some("c")).unwrap();
    let got = r.get(&["y".into(), "1".into()]).unwrap().unwrap();
    assert_eq!(r.format_row(&got, sluice_import::OutputFormat::Csv), "1,y,");
    // The same table as row layout is a different definition.
    let f2 = write(dir.path(), "c2.csv", b"3,z,1\n");
    let e = import(
        &db,
        schema,
        vec![f2],
        ImportOptions {
            layout: Some(Layout::Row),
            ..opts()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("layout: stored as cells, schema says row"),
        "{e}"
    );
}

#[test]
fn a_later_import_keeps_the_stored_layout_unless_it_names_another() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path().join("db"), true).unwrap();
    let with = "CREATE TABLE c (a INT PRIMARY KEY, n INT) WITH (layout = 'columnar');";
    let plain = "CREATE TABLE c (a INT PRIMARY KEY, n INT);";
    let f1 = write(dir.path(), "c1.csv", b"1,10\n2,20\n");
    import(&db, with, vec![f1], opts()).unwrap();
    // The schema without WITH, no layout option: the table's columnar layout, not row.
    let f2 = write(dir.path(), "c2.csv", b"3,30\n");
    let s = import(&db, plain, vec![f2], opts()).unwrap();
    assert!(!s.created);
    let r = TableReader::open(&db, Some("c")).unwrap();
    assert_eq!(r.table.layout, Layout::Columnar);
    assert_eq!(rows(&db, "c", None), vec!["1,10", "2,20", "3,30"]);
    // Column n's chunks: one per import's row group (a row table has no column chunks).
    assert_eq!(
        per_index_counts(&db, r.table.id)[&(sluice_import::schema::COLUMN_INDEX_BASE + 1)],
        2
    );
    // Named, a different layout is refused (by the options or by the schema), and nothing is
    // written.
    for (schema, layout) in [
        (plain, Some(Layout::Row)),
        (
            "CREATE TABLE c (a INT PRIMARY KEY, n INT) WITH (layout = 'row');",
            None,
        ),
    ] {
        let f = write(dir.path(), "c3.csv", b"4,40\n");
        let e = import(&db, schema, vec![f], ImportOptions { layout, ..opts() })
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("layout: stored as columnar, schema says row"),
            "{e}"
        );
    }
    assert_eq!(rows(&db, "c", None), vec!["1,10", "2,20", "3,30"]);
    // A new table without a named layout is row.
    let f = write(dir.path(), "d.csv", b"1,2\n");
    import(
        &db,
        "CREATE TABLE d (a INT PRIMARY KEY, n INT);",
        vec![f],
        opts(),
    )
    .unwrap();
    let d = TableReader::open(&db, Some("d")).unwrap();
    assert_eq!(d.table.layout, Layout::Row);
}

#[test]
fn columnar_layout_stores_one_chunk_per_column_and_row_group() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path().join("db"), true).unwrap();
    let schema =
        "CREATE TABLE c (a INT, b TEXT, n INT, PRIMARY KEY (b, a)) WITH (layout = 'columnar');
                  CREATE INDEX by_n ON c (n);";
    let f = write(dir.path(), "c.csv", b"2,x,10\n1,y,\n1,x,30\n");
    let s = import(&db, schema, vec![f], opts()).unwrap();
    assert_eq!(s.rows, 3);
    let t = TableReader::open(&db, Some("c")).unwrap().table;
    assert_eq!(t.layout, Layout::Columnar);
    // Index ids under table c: 1 (primary: one entry a row), 2 (by_n), and one chunk of each
    // column (key columns too) for the one row group.
    let per_index = |db: &sluice::Db| per_index_counts(db, t.id);
    let base = sluice_import::schema::COLUMN_INDEX_BASE;
    assert_eq!(
        per_index(&db),
        [(1, 3), (2, 3), (base, 1), (base + 1, 1), (base + 2, 1)]
            .into_iter()
            .collect()
    );
    assert_eq!(rows(&db, "c", None), vec!["1,x,30", "2,x,10", "1,y,"]);
    assert_eq!(
        rows(&db, "c", Some("by_n")),
        vec!["1,y,", "2,x,10", "1,x,30"]
    );
    let r = TableReader::open(&db, Some("c")).unwrap();
    let got = r.get(&["y".into(), "1".into()]).unwrap().unwrap();
    assert_eq!(r.format_row(&got, sluice_import::OutputFormat::Csv), "1,y,");
    assert!(r.get(&["y".into(), "2".into()]).unwrap().is_none());

    // A second import adds a row group with a higher id; a primary-key scan interleaves the
    // two imports' rows, a scan of chosen columns reads them import by import.
    let f2 = write(dir.path(), "c2.csv", b"0,x,5\n3,y,7\n");
    import(&db, schema, vec![f2], opts()).unwrap();
    assert_eq!(
        rows(&db, "c", None),
        vec!["0,x,5", "1,x,30", "2,x,10", "1,y,", "3,y,7"]
    );
    assert_eq!(per_index(&db)[&(base + 2)], 2);
    let mut r = TableReader::open(&db, Some("c")).unwrap();
    r.set_columns(Some(&["n".into(), "a".into()])).unwrap();
    let scan = |r: &TableReader<'_>| {
        let mut got = Vec::new();
        let n = r
            .scan(None, None, None, None, |row| {
                got.push(r.format_row(row, sluice_import::OutputFormat::Csv));
                Ok(())
            })
            .unwrap();
        assert_eq!(n as usize, got.len());
        got
    };
    assert_eq!(scan(&r), vec!["5,0", "30,1", "10,2", ",1", "7,3"]);
    r.set_any_order(true);
    assert_eq!(scan(&r), vec!["30,1", "10,2", ",1", "5,0", "7,3"]);
    // It read chunks of n and a only: the primary index and b's chunks stay unread.
    assert!(r.bytes_read() > 0);
    let cs = r.count_sum(None, None, None, None, Some(2)).unwrap();
    assert_eq!(cs.rows, 5);
    assert_eq!(cs.sum.unwrap().to_json(), "52");
    // An unknown column is refused by name.
    let e = r
        .set_columns(Some(&["nope".into()]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("no column nope"), "{e}");
}

#[test]
fn columnar_row_groups_hold_at_most_group_rows() {
    // Enough rows for several row groups; every read path agrees with the row layout.
    let dir = tempfile::tempdir().unwrap();
    let mut csv = String::new();
    let n = 2 * sluice_import::chunk::GROUP_ROWS + 123;
    for i in 0..n {
        if i % 5 == 0 {
            csv.push_str(&format!("{i},,{}\n", i % 3 == 0));
        } else {
            csv.push_str(&format!("{i},v{},{}\n", i * 7 % 1000, i % 3 == 0));
        }
    }
    let f = write(dir.path(), "g.csv", csv.as_bytes());
    let mut out = Vec::new();
    for layout in ["row", "columnar"] {
        let db = open_db(dir.path().join(layout), true).unwrap();
        let schema = format!(
            "CREATE TABLE g (id INT PRIMARY KEY, s TEXT, b BOOLEAN) WITH (layout = '{layout}');"
        );
        import(
            &db,
            &schema,
            vec![f.clone()],
            ImportOptions {
                null: Some(String::new()),
                ..opts()
            },
        )
        .unwrap();
        let r = TableReader::open(&db, Some("g")).unwrap();
        let got = r.get(&[(n - 1).to_string()]).unwrap().unwrap();
        out.push((
            rows(&db, "g", None),
            r.format_row(&got, sluice_import::OutputFormat::Json),
            r.count_sum(None, None, None, None, Some(0))
                .unwrap()
                .sum
                .unwrap()
                .to_json(),
        ));
        if layout == "columnar" {
            let t = &r.table;
            let groups = dump(&db)
                .iter()
                .filter(|(k, _)| {
                    k[..4] == t.id.to_be_bytes()[..]
                        && k[4..8] == sluice_import::schema::COLUMN_INDEX_BASE.to_be_bytes()[..]
                })
                .count();
            assert_eq!(groups, 3);
        }
    }
    assert_eq!(out[0], out[1]);
    assert_eq!(out[0].0.len(), n);
}

/// Field `n` (1-based, as proc(5) numbers them) of a `/proc/…/stat` line: fields 3 on follow
/// the command name's closing parenthesis.
#[cfg(target_os = "linux")]
fn stat_field(stat: &str, n: usize) -> Option<String> {
    stat.rsplit(')')
        .next()?
        .split_whitespace()
        .nth(n - 3)
        .map(str::to_string)
}

/// `ImportOptions::nice`: the import runs on a thread of its own at that nice value (the
/// caller's thread keeps its priority) and imports the same rows; out-of-range values are
/// refused as usage errors.
#[test]
fn an_import_at_a_lower_priority_imports_the_same_rows() {
    let dir = tempfile::tempdir().unwrap();
    let schema = "CREATE TABLE t (id INT PRIMARY KEY, s TEXT);";
    let csv: String = (0..500).map(|i| format!("{},row {i}\n", 499 - i)).collect();
    let f = write(dir.path(), "t.csv", csv.as_bytes());
    let db = open_db(dir.path().join("db"), true).unwrap();
    #[cfg(target_os = "linux")]
    let before = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
    let s = import(
        &db,
        schema,
        vec![f.clone()],
        ImportOptions {
            nice: Some(19),
            ..opts()
        },
    )
    .unwrap();
    assert_eq!(s.rows, 500);
    assert_eq!(rows(&db, "t", None).len(), 500);
    // The calling thread's nice value (field 19 of its stat line) is unchanged.
    #[cfg(target_os = "linux")]
    {
        let after = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        assert_eq!(stat_field(&before, 19), stat_field(&after, 19));
    }
    // Under SCHED_IDLE too; the calling thread keeps its policy (field 41 of its stat line).
    let db2 = open_db(dir.path().join("db2"), true).unwrap();
    #[cfg(target_os = "linux")]
    let before = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
    let s = import(
        &db2,
        schema,
        vec![f.clone()],
        ImportOptions {
            idle: true,
            ..opts()
        },
    )
    .unwrap();
    assert_eq!(s.rows, 500);
    assert_eq!(rows(&db2, "t", None), rows(&db, "t", None));
    #[cfg(target_os = "linux")]
    {
        let after = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        assert_eq!(stat_field(&before, 41), stat_field(&after, 41));
        assert_eq!(stat_field(&after, 41).as_deref(), Some("0"));
    }
    for bad in [-1, 20] {
        let e = sluice_import::Import::new(
            schema,
            vec![f.clone()],
            ImportOptions {
                nice: Some(bad),
                ..opts()
            },
        )
        .expect_err("an out-of-range nice is refused");
        assert!(
            matches!(
                e,
                sluice_import::ImportError::InvalidOption { option: "nice", .. }
            ),
            "{e}"
        );
    }
}

/// `ImportOptions::rate_limiter`: every file the import writes (runs spilled at checkpoints,
/// the final tables of the table and its index) goes through the shared limiter, and the
/// import gives the same rows as an unpaced one.
#[test]
fn a_paced_import_imports_the_same_rows() {
    let dir = tempfile::tempdir().unwrap();
    let schema = "CREATE TABLE t (id INT PRIMARY KEY, s TEXT); CREATE INDEX by_s ON t (s);";
    let csv: String = (0..3000)
        .map(|i| format!("{},row {}\n", 2999 - i, i % 7))
        .collect();
    let f = write(dir.path(), "t.csv", csv.as_bytes());
    let limiter = std::sync::Arc::new(sluice::RateLimiter::new(4 << 20));
    let mut seen = Vec::new();
    for (name, l) in [("unpaced", None), ("paced", Some(&limiter))] {
        let db = open_db(dir.path().join(name), true).unwrap();
        let s = import(
            &db,
            schema,
            vec![f.clone()],
            ImportOptions {
                rate_limiter: l.cloned(),
                checkpoint_bytes: 8 << 10,
                ..opts()
            },
        )
        .unwrap();
        assert_eq!(s.rows, 3000);
        assert!(s.runs_spilled > 0, "{name}: the checkpoints spill runs");
        if l.is_some() {
            // The final files passed through it, and the spilled runs on top of them.
            let finals: u64 = s.files.iter().map(|f| f.bytes).sum();
            assert!(
                limiter.bytes_requested() > finals,
                "{} requested, final files {finals}",
                limiter.bytes_requested()
            );
        }
        seen.push((rows(&db, "t", None), rows(&db, "t", Some("by_s"))));
    }
    assert_eq!(seen[0].0.len(), 3000);
    assert_eq!(seen[0], seen[1]);
}

/// Sparse columns: a NOT NULL column's cell holding its type's zero value (0, 0.0, false, '',
/// 1970-01-01, the epoch) is not stored, and reads back as that value through scans, point
/// gets and index scans — the same rows as the row layout. A nullable column keeps its zero
/// cells (there a missing cell means NULL).
#[test]
fn columnar_zero_cells_of_not_null_columns_are_not_stored_and_read_back() {
    let cols =
        "id INT PRIMARY KEY, s SMALLINT NOT NULL, d DOUBLE NOT NULL, m DECIMAL(6,2) NOT NULL,
        b BOOLEAN NOT NULL, x TEXT NOT NULL, y BYTES NOT NULL, dt DATE NOT NULL,
        ts TIMESTAMP NOT NULL, n INT";
    let csv = b"1,0,0,0.00,false,\"\",\\x,1970-01-01,1970-01-01 00:00:00,0\n\
                2,5,-0.0,1.50,true,a,\\x01,2024-01-02,2024-01-02 03:04:05,\n\
                3,0,2.5,0,f,\"\",\\x,1970-01-01,1970-01-01T00:00:00Z,7\n";
    let mut results = Vec::new();
    for layout in ["row", "columnar"] {
        let dir = tempfile::tempdir().unwrap();
        let db = open_db(dir.path().join("db"), true).unwrap();
        let schema = format!(
            "CREATE TABLE z ({cols}) WITH (layout = '{layout}'); CREATE INDEX by_s ON z (s);"
        );
        let f = write(dir.path(), "z.csv", csv);
        assert_eq!(import(&db, &schema, vec![f], opts()).unwrap().rows, 3);
        let t = TableReader::open(&db, Some("z")).unwrap();
        let got = t.get(&["1".into()]).unwrap().unwrap();
        let get1 = t.format_row(&got, sluice_import::OutputFormat::Csv);
        let mut cells = 0;
        for (k, _) in dump(&db) {
            if u32::from_be_bytes(k[..4].try_into().unwrap()) == t.table.id
                && u32::from_be_bytes(k[4..8].try_into().unwrap())
                    >= sluice_import::schema::COLUMN_INDEX_BASE
            {
                cells += 1;
            }
        }
        results.push((
            rows(&db, "z", None),
            rows(&db, "z", Some("by_s")),
            json_rows(&db, "z"),
            get1,
        ));
        if layout == "columnar" {
            // Row 1: only n (nullable, 0) is stored. Row 2: every column but n (NULL) and d
            // (-0.0 parses as 0.0). Row 3: d and n.
            assert_eq!(cells, 1 + 7 + 2);
        }
    }
    assert_eq!(results[0], results[1]);
    assert_eq!(
        results[1].0,
        vec![
            "1,0,0,0.00,false,\"\",\\x,1970-01-01,1970-01-01T00:00:00Z,0",
            "2,5,0,1.50,true,a,\\x01,2024-01-02,2024-01-02T03:04:05Z,",
            "3,0,2.5,0.00,false,\"\",\\x,1970-01-01,1970-01-01T00:00:00Z,7"
        ]
    );
}

/// `--on-duplicate last` into a table with a unique index: a new row may take a value that
/// the row it replaces gives up (the old index entry is deleted by the same import), but not
/// one another stored row still holds.
#[test]
fn a_replacing_row_may_take_a_unique_value_its_old_row_gives_up() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path().join("db"), true).unwrap();
    let schema = "CREATE TABLE u (id INT PRIMARY KEY, email TEXT); CREATE UNIQUE INDEX by_email ON u (email);";
    let last = || ImportOptions {
        on_duplicate: OnDuplicate::Last,
        ..opts()
    };
    let f = write(dir.path(), "a.csv", b"1,a@x\n2,b@x\n3,c@x\n");
    import(&db, schema, vec![f], last()).unwrap();
    // Row 1 takes b@x, which row 2 gives up for d@x in the same import.
    let f = write(dir.path(), "b.csv", b"1,b@x\n2,d@x\n");
    import(&db, schema, vec![f], last()).unwrap();
    assert_eq!(rows(&db, "u", None), vec!["1,b@x", "2,d@x", "3,c@x"]);
    assert_eq!(
        rows(&db, "u", Some("by_email")),
        vec!["1,b@x", "3,c@x", "2,d@x"]
    );
    // c@x is still row 3's.
    let before = dump(&db);
    let f = write(dir.path(), "c.csv", b"1,c@x\n");
    let e = import(&db, schema, vec![f], last())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("violates unique index by_email: existing row (3)"),
        "{e}"
    );
    assert_eq!(dump(&db), before);
}

/// `ImportOptions::idle`: while the import runs, its threads are under `SCHED_IDLE` (policy 5
/// in field 41 of `/proc/self/task/*/stat`), the caller's thread is not, and the rows arrive.
#[cfg(target_os = "linux")]
#[test]
fn an_idle_import_runs_its_threads_under_sched_idle() {
    let dir = tempfile::tempdir().unwrap();
    let schema = "CREATE TABLE t (id INT PRIMARY KEY, s TEXT); CREATE INDEX by_s ON t (s);";
    let csv: String = (0..200_000)
        .map(|i| format!("{},v{}\n", (i * 7919) % 200_000, i % 977))
        .collect();
    let f = write(dir.path(), "t.csv", csv.as_bytes());
    let db = open_db(dir.path().join("db"), true).unwrap();
    let policy = |stat: &str| stat_field(stat, 41);
    let done = std::sync::atomic::AtomicBool::new(false);
    let (seen_idle, rows) = std::thread::scope(|s| {
        let h = s.spawn(|| {
            let r = import(
                &db,
                schema,
                vec![f.clone()],
                ImportOptions {
                    idle: true,
                    chunk_size: Some(64 << 10),
                    ..opts()
                },
            );
            done.store(true, std::sync::atomic::Ordering::Release);
            (
                r,
                policy(&std::fs::read_to_string("/proc/thread-self/stat").unwrap()),
            )
        });
        let mut seen = false;
        while !done.load(std::sync::atomic::Ordering::Acquire) {
            for t in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
                if let Ok(stat) = std::fs::read_to_string(t.path().join("stat")) {
                    seen |= policy(&stat).as_deref() == Some("5");
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let (r, caller_policy) = h.join().unwrap();
        assert_eq!(
            caller_policy.as_deref(),
            Some("0"),
            "the caller's thread stays normal"
        );
        (seen, r.unwrap().rows)
    });
    assert_eq!(rows, 200_000);
    assert!(
        seen_idle,
        "no thread of the import was seen under SCHED_IDLE"
    );
}

/// Keys under table `id`, counted by index id (the 4 bytes after the table id).
fn per_index_counts(db: &sluice::Db, id: u32) -> std::collections::BTreeMap<u32, usize> {
    let mut out = std::collections::BTreeMap::new();
    for (k, _) in dump(db) {
        if u32::from_be_bytes(k[..4].try_into().unwrap()) == id {
            *out.entry(u32::from_be_bytes(k[4..8].try_into().unwrap()))
                .or_default() += 1;
        }
    }
    out
}
