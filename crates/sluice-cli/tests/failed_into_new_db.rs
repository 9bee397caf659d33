//! A command that creates a Db and then fails having written nothing (a bad row in an
//! import, a corrupt file given to `ingest`) leaves the path as it found it: no directory if
//! there was none, an empty one if it was empty. A Db that existed before stays, unchanged.

mod common;

use std::path::Path;

use common::{csv_import, run};

const SCHEMA: &str = "CREATE TABLE t (id INT PRIMARY KEY, d DATE, note TEXT);";

/// A CSV whose third row (line 4: a quoted newline in row 1) has a bad date.
const BAD_CSV: &str = "id,d,note\n1,2024-02-29,\"two\nlines\"\n2,NA,NA\n3,2024-13-01,x\n";

/// `sluice import` of `BAD_CSV` into `db`: must fail naming the file, line, column and value.
fn failed_import(dir: &Path, db: &Path) {
    let schema = dir.join("s.sql");
    let csv = dir.join("bad.csv");
    std::fs::write(&schema, SCHEMA).unwrap();
    std::fs::write(&csv, BAD_CSV).unwrap();
    let out = csv_import(db.to_str().unwrap(), &schema, &csv, &[]);
    assert!(!out.status.success(), "the import of a bad row succeeded");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.csv:5: column d: \"2024-13-01\" is not a DATE"),
        "{err}"
    );
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_failed_import_into_a_missing_path_leaves_no_db() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("new-db");
    failed_import(dir.path(), &db);
    assert!(!db.exists(), "a Db was left: {:?}", names(&db));
}

#[test]
fn a_failed_import_into_an_empty_directory_leaves_it_empty() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("empty");
    std::fs::create_dir(&db).unwrap();
    failed_import(dir.path(), &db);
    assert!(db.is_dir());
    assert_eq!(names(&db), Vec::<String>::new());
}

#[test]
fn a_failed_import_into_an_existing_db_keeps_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let d = db.to_str().unwrap();
    // A Db made by an earlier command, holding one key.
    assert!(run(&["put", "--db", d, "k", "v"], b"").status.success());
    failed_import(dir.path(), &db);
    let got = run(&["get", "--db", d, "k"], b"");
    assert!(
        got.status.success(),
        "{}",
        String::from_utf8_lossy(&got.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&got.stdout).trim(), "v");
    // And no table t: the failed import left the catalog as it was.
    let scan = run(&["scan", "--db", d, "--table", "t", "--count"], b"");
    assert!(
        !scan.status.success(),
        "table t exists after a failed import"
    );
}

#[test]
fn a_failed_ingest_into_a_missing_path_leaves_no_db() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("new-db");
    let sst = dir.path().join("junk.sst");
    std::fs::write(&sst, b"not a table").unwrap();
    let out = run(
        &[
            "ingest",
            "--db",
            db.to_str().unwrap(),
            sst.to_str().unwrap(),
        ],
        b"",
    );
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("junk.sst"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!db.exists(), "a Db was left: {:?}", names(&db));
    assert!(sst.exists(), "the input file was touched");
}

/// `--rejects` names a file the import empties when it starts: an input, the schema, or a
/// file inside the Db's directory is refused before anything is touched.
#[test]
fn a_rejects_file_that_is_an_input_the_schema_or_in_the_db_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let d = db.to_str().unwrap();
    assert!(run(&["put", "--db", d, "k", "v"], b"").status.success());
    let schema = dir.path().join("s.sql");
    let csv = dir.path().join("in.csv");
    std::fs::write(&schema, SCHEMA).unwrap();
    let rows = "id,d,note\n1,2024-01-01,a\n2,2024-01-02,b\n";
    std::fs::write(&csv, rows).unwrap();
    let current = db.join("CURRENT");
    // The same files under other names too: a hard link to the input.
    let linked = dir.path().join("linked.csv");
    std::fs::hard_link(&csv, &linked).unwrap();
    // And symbolic links: one into the Db, one to nothing (creating it would make its target).
    let into_db = dir.path().join("into-db.rejects");
    std::os::unix::fs::symlink(&current, &into_db).unwrap();
    let dangling = dir.path().join("dangling.rejects");
    std::os::unix::fs::symlink(db.join("new-file"), &dangling).unwrap();
    // A hard link to a table of the Db (as a checkpoint makes), from an import of other rows.
    let other = dir.path().join("other.csv");
    std::fs::write(&other, "id,d,note\n7,2024-01-07,z\n").unwrap();
    assert!(csv_import(d, &schema, &other, &[]).status.success());
    let table = std::fs::read_dir(&db)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "sst"))
        .expect("a table file");
    let table_bytes = std::fs::read(&table).unwrap();
    let linked_table = dir.path().join("table.rejects");
    std::fs::hard_link(&table, &linked_table).unwrap();
    // Inside a kept checkpoint, which its import removes when it ends.
    let ckpt = dir.path().join("sluice-resume-1234");
    std::fs::create_dir(&ckpt).unwrap();
    let in_ckpt = ckpt.join("rejects.txt");
    for (rejects, what) in [
        (&csv, "is an input"),
        (&linked, "is an input"),
        (&schema, "is the schema file"),
        (&current, "is inside the database directory"),
        (&into_db, "is inside the database directory"),
        (&dangling, "is a symbolic link to nothing"),
        (&linked_table, "is a hard link to"),
        (&in_ckpt, "checkpoint directory"),
    ] {
        let r = rejects.to_str().unwrap();
        let out = csv_import(d, &schema, &csv, &["--max-errors", "5", "--rejects", r]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "--rejects {r} was taken");
        assert!(err.contains("--rejects") && err.contains(what), "{err}");
    }
    assert_eq!(std::fs::read_to_string(&csv).unwrap(), rows);
    assert_eq!(std::fs::read_to_string(&schema).unwrap(), SCHEMA);
    assert!(!db.join("new-file").exists());
    assert!(!in_ckpt.exists());
    assert_eq!(std::fs::read(&table).unwrap(), table_bytes);
    // Each open writes a new MANIFEST (CURRENT names it): the Db opens and holds its key.
    let got = run(&["get", "--db", d, "k"], b"");
    assert_eq!(String::from_utf8_lossy(&got.stdout).trim(), "v");
}
