//! Inputs as users have them: many files of every size and compression at every thread count,
//! CR / LF / CRLF line ends (header included, split across chunk boundaries), and files of
//! different formats in one import.

mod common;

use std::io::Write as _;
use std::path::{Path, PathBuf};

use common::*;
use sluice_import::{open_db, Format, ImportOptions};

const SCHEMA: &str = "CREATE TABLE t (id INT PRIMARY KEY, v TEXT)";

fn gz(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn zst(data: &[u8]) -> Vec<u8> {
    zstd::encode_all(data, 1).unwrap()
}

/// `n` CSV rows with ids from `first`, in a shuffled order when `shuffle`.
fn csv_rows(first: u64, n: u64, shuffle: bool) -> String {
    let mut ids: Vec<u64> = (first..first + n).collect();
    if shuffle {
        // A fixed permutation: reverse pairs.
        ids.reverse();
    }
    ids.iter().map(|i| format!("{i},v{i}\n")).collect()
}

/// Writes `count` files of every kind: empty, one row, a few rows, large (several chunks),
/// header-less CSV / TSV / JSON lines, plain, `.gz` and `.zst`. Returns the files and the
/// number of rows (ids are `0..rows`, each once).
fn many_files(dir: &Path, count: usize) -> (Vec<PathBuf>, u64) {
    let mut files = Vec::new();
    let mut next = 0u64;
    for f in 0..count {
        let n = match f % 7 {
            0 => 0,
            1 | 2 => 1,
            3 => 3,
            4 => 2_000,
            _ => 17,
        };
        let (ext, body) = match f % 3 {
            0 => ("csv", csv_rows(next, n, f % 2 == 0)),
            1 => (
                "tsv",
                (next..next + n).map(|i| format!("{i}\tv{i}\n")).collect(),
            ),
            _ => (
                "jsonl",
                (next..next + n)
                    .map(|i| format!("{{\"id\":{i},\"v\":\"v{i}\"}}\n"))
                    .collect(),
            ),
        };
        next += n;
        let (suffix, data) = match f % 5 {
            0 => (".gz", gz(body.as_bytes())),
            1 => (".zst", zst(body.as_bytes())),
            _ => ("", body.into_bytes()),
        };
        files.push(write(dir, &format!("f{f:04}.{ext}{suffix}"), &data));
    }
    (files, next)
}

fn ids_and_values(db: &sluice::Db) -> Vec<String> {
    rows(db, "t", None)
}

#[test]
fn hundreds_of_files_of_every_kind_import_at_every_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let (files, n) = many_files(dir.path(), 300);
    let want: Vec<String> = {
        let mut v: Vec<u64> = (0..n).collect();
        v.sort();
        v.iter().map(|i| format!("{i},v{i}")).collect()
    };
    for threads in [1, 2, 3, 4, 8, 16] {
        for chunk in [Some(64), None] {
            let db = open_db(dir.path().join(format!("db{threads}-{chunk:?}")), true).unwrap();
            let o = ImportOptions {
                threads,
                chunk_size: chunk,
                ..opts()
            };
            let s = import(&db, SCHEMA, files.clone(), o).unwrap();
            assert_eq!(s.rows, n, "threads {threads} chunk {chunk:?}");
            assert_eq!(
                ids_and_values(&db),
                want,
                "threads {threads} chunk {chunk:?}"
            );
        }
    }
}

#[test]
fn more_files_than_chunks_in_flight_with_a_failure_in_the_last_one() {
    // The reader must neither hang nor lose the error when a late file is bad.
    let dir = tempfile::tempdir().unwrap();
    let mut files: Vec<PathBuf> = (0..40)
        .map(|i| {
            write(
                dir.path(),
                &format!("f{i:02}.csv"),
                format!("{i},a\n").as_bytes(),
            )
        })
        .collect();
    files.push(write(dir.path(), "zz.csv", b"41,a\nnot-a-number,b\n"));
    for threads in [1, 2, 4] {
        let db = open_db(dir.path().join(format!("db{threads}")), true).unwrap();
        let o = ImportOptions { threads, ..opts() };
        let e = import(&db, SCHEMA, files.clone(), o)
            .unwrap_err()
            .to_string();
        assert!(e.contains("zz.csv:2"), "{e}");
        assert!(
            rows_or_none(&db).is_none(),
            "a failed import leaves no table"
        );
    }
}

fn rows_or_none(db: &sluice::Db) -> Option<Vec<String>> {
    sluice_import::TableReader::open(db, Some("t"))
        .ok()
        .map(|_| rows(db, "t", None))
}

/// The three line-end conventions (and a mix of them).
const ENDINGS: [(&str, &str); 4] = [("lf", "\n"), ("crlf", "\r\n"), ("cr", "\r"), ("mixed", "")];

fn join_lines(lines: &[&str], ending: &str) -> String {
    let mut s = String::new();
    for (i, l) in lines.iter().enumerate() {
        s.push_str(l);
        s.push_str(match ending {
            "" => ["\n", "\r\n", "\r"][i % 3],
            e => e,
        });
    }
    s
}

#[test]
fn cr_lf_and_crlf_end_lines_in_every_format_with_and_without_header() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(Format, &str, Vec<&str>); 3] = [
        (
            Format::Csv,
            "csv",
            vec!["id,v", "1,a", "2,\"two\r\nlines\"", "3,\"cr\ronly\"", "4,d"],
        ),
        (
            Format::Tsv,
            "tsv",
            vec!["id\tv", "1\ta", "2\ttwo\\r\\nlines", "3\tcr\\ronly", "4\td"],
        ),
        (
            Format::Jsonl,
            "jsonl",
            vec![
                r#"{"id":1,"v":"a"}"#,
                r#"{"id":2,"v":"two\r\nlines"}"#,
                r#"{"id":3,"v":"cr\ronly"}"#,
                r#"{"id":4,"v":"d"}"#,
            ],
        ),
    ];
    let want = ["1,a", "2,\"two\r\nlines\"", "3,\"cr\ronly\"", "4,d"];
    for (format, ext, lines) in &cases {
        for (ename, ending) in ENDINGS {
            for header in [true, false] {
                if *format == Format::Jsonl && header {
                    continue;
                }
                let body: Vec<&str> = if *format == Format::Jsonl || header {
                    lines.clone()
                } else {
                    lines[1..].to_vec()
                };
                let mut text = join_lines(&body, ending);
                for trailing in [true, false] {
                    if !trailing {
                        // The last line without its end.
                        while text.ends_with(['\r', '\n']) {
                            text.pop();
                        }
                    }
                    let f = write(dir.path(), &format!("in.{ext}"), text.as_bytes());
                    // Every chunk size: a CRLF split between two reads is still one line end.
                    for chunk in [1, 2, 3, 5, 8, 13, 64, 4096] {
                        let case = format!(
                            "{ext} {ename} header={header} trailing={trailing} chunk={chunk}"
                        );
                        let db =
                            open_db(dir.path().join(case.replace([' ', '='], "_")), true).unwrap();
                        let o = ImportOptions {
                            header,
                            chunk_size: Some(chunk),
                            ..opts()
                        };
                        let s = import(&db, SCHEMA, vec![f.clone()], o)
                            .unwrap_or_else(|e| panic!("{case}: {e}"));
                        assert_eq!(s.rows, 4, "{case}");
                        assert_eq!(rows(&db, "t", None), want, "{case}");
                    }
                }
            }
        }
    }
}

#[test]
fn a_bad_row_is_reported_at_its_line_whatever_the_line_ends() {
    let dir = tempfile::tempdir().unwrap();
    for (ename, ending) in ENDINGS {
        for (ext, lines) in [
            ("csv", vec!["id,v", "1,\"a\nb\"", "2,b", "x,c", "4,d"]),
            ("tsv", vec!["id\tv", "1\ta", "2\tb", "x\tc", "4\td"]),
        ] {
            let text = join_lines(&lines, ending);
            let f = write(dir.path(), &format!("bad_{ename}.{ext}"), text.as_bytes());
            for chunk in [1, 7, 4096] {
                let db =
                    open_db(dir.path().join(format!("db_{ename}_{ext}_{chunk}")), true).unwrap();
                let o = ImportOptions {
                    header: true,
                    chunk_size: Some(chunk),
                    ..opts()
                };
                let e = import(&db, SCHEMA, vec![f.clone()], o)
                    .unwrap_err()
                    .to_string();
                // CSV: the quoted LF in row 1 is a line of its own.
                let line = if ext == "csv" { 5 } else { 4 };
                let want = format!("bad_{ename}.{ext}:{line}:");
                assert!(e.contains(&want), "{ename} {ext} chunk {chunk}: {e}");
            }
        }
    }
}

#[test]
fn each_file_is_read_in_its_own_format_unless_one_is_given() {
    let dir = tempfile::tempdir().unwrap();
    let files = vec![
        write(dir.path(), "a.tsv", b"id\tv\n1\tx,y\n"),
        write(dir.path(), "b.csv", b"id,v\n2,\"p\tq\"\n"),
        write(dir.path(), "c.jsonl", b"{\"id\":3,\"v\":\"j\"}\n"),
        write(dir.path(), "d.csv.gz", &gz(b"v,id\nz,4\n")),
        write(dir.path(), "e.tab.zst", &zst(b"id\tv\n5\tt\n")),
        write(dir.path(), "f.ndjson", b"{\"v\":\"n\",\"id\":6}\n"),
    ];
    let db = open_db(dir.path().join("db"), true).unwrap();
    let o = ImportOptions {
        header: true,
        ..opts()
    };
    import(&db, SCHEMA, files.clone(), o).unwrap();
    assert_eq!(
        rows(&db, "t", None),
        ["1,\"x,y\"", "2,p\tq", "3,j", "4,z", "5,t", "6,n"]
    );
    // --format applies to every file: the TSV header is one CSV field, which t does not have.
    let db2 = open_db(dir.path().join("db2"), true).unwrap();
    let o = ImportOptions {
        header: true,
        format: Some(Format::Csv),
        ..opts()
    };
    let e = import(&db2, SCHEMA, files[..2].to_vec(), o)
        .unwrap_err()
        .to_string();
    assert!(e.contains("a.tsv:1"), "{e}");
    // Without headers too: the CSV file after a TSV one is CSV.
    let db3 = open_db(dir.path().join("db3"), true).unwrap();
    let files = vec![
        write(dir.path(), "g.tsv", b"7\tx,y\n"),
        write(dir.path(), "h.csv", b"8,\"a\tb\"\n"),
    ];
    import(&db3, SCHEMA, files, opts()).unwrap();
    assert_eq!(rows(&db3, "t", None), ["7,\"x,y\"", "8,a\tb"]);
}

#[test]
fn a_duplicate_names_the_file_and_line_of_both_rows_even_after_streaming() {
    let dir = tempfile::tempdir().unwrap();
    // Sorted files streamed straight to final files, then a duplicate of a streamed row: its
    // position must come back from what the streaming writer recorded.
    let mut files = Vec::new();
    for f in 0..5u64 {
        let body: String = (0..3000)
            .map(|i| format!("{},r{f}\n", f * 10_000 + i))
            .collect();
        files.push(write(dir.path(), &format!("s{f}.csv"), body.as_bytes()));
    }
    // 20_000 + 1234 is on line 1235 of s2.csv.
    files.push(write(dir.path(), "late.csv", b"99999,x\n21234,dup\n"));
    for threads in [1, 2] {
        for chunk in [Some(64), Some(4096), None] {
            let db = open_db(dir.path().join(format!("db{threads}{chunk:?}")), true).unwrap();
            let o = ImportOptions {
                threads,
                chunk_size: chunk,
                ..opts()
            };
            let e = import(&db, SCHEMA, files.clone(), o)
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("late.csv:2: duplicate primary key")
                    && e.contains("also at ")
                    && e.contains("s2.csv:1235"),
                "threads {threads} chunk {chunk:?}: {e}"
            );
        }
    }
    // The same across two one-row files (the issue's case) and for a unique index.
    let schema = "CREATE TABLE t (id INT PRIMARY KEY, v TEXT); CREATE UNIQUE INDEX uv ON t (v)";
    let a = write(dir.path(), "a.csv", b"1,x\n2,y\n");
    let b = write(dir.path(), "b.csv", b"3,z\n1,w\n");
    let db = open_db(dir.path().join("dbab"), true).unwrap();
    let e = import(&db, schema, vec![a.clone(), b], opts())
        .unwrap_err()
        .to_string();
    assert!(e.contains("b.csv:2") && e.contains("a.csv:1"), "{e}");
    let c = write(dir.path(), "c.csv", b"0,y\n");
    let db = open_db(dir.path().join("dbac"), true).unwrap();
    let e = import(&db, schema, vec![a, c], opts())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("violates unique index uv") && e.contains("a.csv:2") && e.contains("c.csv:1"),
        "{e}"
    );
}

#[test]
fn a_directory_or_a_missing_file_as_input_is_named_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("data");
    std::fs::create_dir(&sub).unwrap();
    let e = sluice_import::Import::new(SCHEMA, vec![sub.clone()], opts())
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("data: is a directory"), "{e}");
    let e = sluice_import::Import::new(SCHEMA, vec![sub.join("nope.csv")], opts())
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("nope.csv") && e.contains("No such file"), "{e}");
}
