//! Resumable imports: an import interrupted after each of its checkpoints in turn (parse
//! chunks, between index merges, staged before the ingest) and resumed gives the Db an
//! uninterrupted import gives, byte for byte, with the same counts and rejects; a checkpoint
//! that does not belong to the import is refused; without `resume` it is discarded.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use sluice_import::{open_db, ImportError, ImportOptions, OnDuplicate, Summary};

const SCHEMA: &str = "CREATE TABLE t (id INT PRIMARY KEY, grp INT, email TEXT, note TEXT); \
                      CREATE INDEX by_grp ON t (grp); \
                      CREATE UNIQUE INDEX by_email ON t (email);";

/// `n` rows in a scrambled order (or sorted), every `dup_every`th followed by a row with
/// another id taken (with other values); emails are unique, `tag` tells the files apart.
fn rows_csv(tag: &str, n: u64, dup_every: u64, sorted: bool) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..n {
        let id = if sorted { i } else { (i * 7919) % n };
        let pad = "z".repeat((i % 5) as usize);
        out.extend(format!("{id},{},{tag}e{i}@x,note {i} {pad}\n", id % 13).bytes());
        if dup_every > 0 && i % dup_every == 0 && !sorted {
            out.extend(format!("{},{},{tag}d{i}@x,dup {i}\n", (id + 3) % n, i % 7).bytes());
        }
    }
    out
}

/// Small chunks and frequent checkpoints: every path of the pipeline runs on small inputs.
fn ck_opts(tmp: &Path) -> ImportOptions {
    ImportOptions {
        chunk_size: Some(512),
        checkpoint_bytes: 4096,
        tmp_dir: Some(tmp.to_path_buf()),
        ..opts()
    }
}

/// The stage the checkpoint in `tmp` records.
fn stage_of(tmp: &Path) -> String {
    let dir = std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .find(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(sluice_import::pipeline::RESUME_PREFIX)
        })
        .expect("a checkpoint directory")
        .path();
    let text = std::fs::read_to_string(dir.join("CHECKPOINT")).unwrap();
    let at = text.find("\"stage\":\"").unwrap() + 9;
    text[at..].split('"').next().unwrap().to_string()
}

struct Case {
    name: &'static str,
    o: ImportOptions,
    files: Vec<PathBuf>,
    /// Rows in the table before the import.
    existing: Option<PathBuf>,
}

type Outcome = (Vec<(Vec<u8>, Vec<u8>)>, Summary, Vec<u8>, Option<String>);

/// The Db, summary and rejects of one import (after `c.existing`'s rows, when given),
/// interrupted after checkpoint `interrupt` (then resumed) or not; `None` when the import
/// wrote fewer checkpoints and finished.
fn run_case(dir: &Path, c: &Case, interrupt: Option<u64>) -> Option<Outcome> {
    let tag = interrupt.map_or("ref".to_string(), |n| n.to_string());
    let dbdir = dir.join(format!("db-{}-{tag}", c.name));
    let tmp = dir.join(format!("tmp-{}-{tag}", c.name));
    let rejects = dir.join(format!("rejects-{}-{tag}", c.name));
    let base = ImportOptions {
        tmp_dir: Some(tmp.clone()),
        rejects: c.o.rejects.as_ref().map(|_| rejects.clone()),
        ..c.o.clone()
    };
    let mut db = open_db(&dbdir, true).unwrap();
    if let Some(f) = &c.existing {
        import(&db, SCHEMA, vec![f.clone()], opts()).unwrap();
    }
    let mut stage = None;
    if let Some(n) = interrupt {
        let o = ImportOptions {
            interrupt_after_checkpoints: Some(n),
            ..base.clone()
        };
        match import(&db, SCHEMA, c.files.clone(), o) {
            Err(ImportError::Internal(m)) if m.contains("interrupted") => {}
            Ok(_) => return None,
            Err(e) => panic!("{}: interrupt {n}: {e:?}", c.name),
        }
        stage = Some(stage_of(&tmp));
        // As after a crash: the Db is opened again.
        db.close().unwrap();
        db = open_db(&dbdir, false).unwrap();
    }
    let o = ImportOptions {
        resume: interrupt.is_some(),
        ..base
    };
    let s = import(&db, SCHEMA, c.files.clone(), o).unwrap();
    assert_eq!(s.resumed, interrupt.is_some(), "{}", c.name);
    assert!(
        leftovers(&tmp).is_empty(),
        "{}: {:?}",
        c.name,
        leftovers(&tmp)
    );
    let r = std::fs::read(&rejects).unwrap_or_default();
    Some((dump(&db), s, r, stage))
}

/// `c` interrupted after each of its checkpoints in turn, then resumed, against an
/// uninterrupted run; the stages interrupted.
fn every_interruption_matches(dir: &Path, c: &Case) -> Vec<String> {
    let (want, ws, wr, _) = run_case(dir, c, None).unwrap();
    assert!(!want.is_empty());
    let mut stages = Vec::new();
    for n in 1.. {
        let Some((got, gs, gr, stage)) = run_case(dir, c, Some(n)) else {
            break;
        };
        assert!(
            got == want,
            "{}: interrupted after checkpoint {n}: Db differs",
            c.name
        );
        assert_eq!(
            (gs.rows, gs.rejected, gs.duplicates_dropped, &gs.table),
            (ws.rows, ws.rejected, ws.duplicates_dropped, &ws.table),
            "{}: {n}",
            c.name
        );
        assert_eq!(
            String::from_utf8_lossy(&gr),
            String::from_utf8_lossy(&wr),
            "{}: {n}: rejects",
            c.name
        );
        stages.push(stage.unwrap());
    }
    stages
}

fn cases(dir: &Path) -> Vec<Case> {
    let a = write(dir, "a.csv", &rows_csv("a", 700, 9, false));
    let b = write(dir, "b.csv", &rows_csv("b", 300, 5, false));
    let sorted = write(dir, "s.csv", &rows_csv("s", 900, 0, true));
    let o = ck_opts(dir);
    vec![
        Case {
            name: "first",
            o: ImportOptions {
                on_duplicate: OnDuplicate::First,
                ..o.clone()
            },
            files: vec![a.clone(), b.clone()],
            existing: None,
        },
        Case {
            name: "last",
            o: ImportOptions {
                on_duplicate: OnDuplicate::Last,
                ..o.clone()
            },
            files: vec![a.clone(), b.clone()],
            existing: None,
        },
        Case {
            name: "error",
            o: ImportOptions {
                on_duplicate: OnDuplicate::Error,
                max_errors: 10_000,
                rejects: Some(dir.join("unused")),
                ..o.clone()
            },
            files: vec![a.clone(), b.clone()],
            existing: None,
        },
        Case {
            name: "sorted",
            o: o.clone(),
            files: vec![sorted.clone()],
            existing: None,
        },
        Case {
            name: "into-existing",
            o: ImportOptions {
                on_duplicate: OnDuplicate::First,
                ..o
            },
            files: vec![a, b],
            existing: Some(sorted),
        },
    ]
}

fn resume_after_every_checkpoint_equals_an_uninterrupted_import() {
    let dir = tempfile::tempdir().unwrap();
    let mut stages = Vec::new();
    for c in cases(dir.path()) {
        stages.extend(every_interruption_matches(dir.path(), &c));
    }
    for s in ["Parse", "Merge", "Staged"] {
        assert!(
            stages.iter().any(|x| x == s),
            "{s} never interrupted: {stages:?}"
        );
    }
}

#[test]
fn resume_after_every_checkpoint_equals_an_uninterrupted_import_row() {
    resume_after_every_checkpoint_equals_an_uninterrupted_import();
}

#[test]
fn resume_after_every_checkpoint_equals_an_uninterrupted_import_columnar() {
    with_layout(
        sluice_import::Layout::Columnar,
        resume_after_every_checkpoint_equals_an_uninterrupted_import,
    );
}

/// A `--on-duplicate last` import into a table with rows (replaced rows' secondary entries
/// become deletions, carried across the checkpoints); row layout only (columnar refuses it).
#[test]
fn resume_of_a_replacing_import_into_an_existing_table() {
    let dir = tempfile::tempdir().unwrap();
    let existing = write(dir.path(), "s.csv", &rows_csv("s", 900, 0, true));
    let a = write(dir.path(), "a.csv", &rows_csv("a", 700, 9, false));
    let c = Case {
        name: "replace",
        o: ImportOptions {
            on_duplicate: OnDuplicate::Last,
            ..ck_opts(dir.path())
        },
        files: vec![a],
        existing: Some(existing),
    };
    let stages = every_interruption_matches(dir.path(), &c);
    assert!(stages.len() > 3, "{stages:?}");
}

/// An interrupted import's checkpoint in `tmp` for the Db at `dbdir` (which keeps it open).
fn interrupted(dbdir: &Path, tmp: &Path, files: &[PathBuf], o: &ImportOptions) -> sluice::Db {
    let db = open_db(dbdir, true).unwrap();
    let o = ImportOptions {
        interrupt_after_checkpoints: Some(2),
        tmp_dir: Some(tmp.to_path_buf()),
        ..o.clone()
    };
    assert!(import(&db, SCHEMA, files.to_vec(), o).is_err());
    assert_eq!(leftovers(tmp).len(), 1);
    db
}

fn refused(db: &sluice::Db, schema: &str, files: Vec<PathBuf>, o: ImportOptions) -> String {
    let o = ImportOptions { resume: true, ..o };
    match sluice_import::Import::new(schema, files, o).and_then(|i| i.run(db)) {
        Err(e @ ImportError::CannotResume { .. }) => e.to_string(),
        other => panic!("not refused: {other:?}"),
    }
}

/// A directory with a Db path, a tmp_dir, an input and options for an import of it.
fn setup() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf, ImportOptions) {
    let dir = tempfile::tempdir().unwrap();
    let (dbdir, tmp) = (dir.path().join("db"), dir.path().join("tmp"));
    let a = write(dir.path(), "a.csv", &rows_csv("a", 700, 9, false));
    let o = ImportOptions {
        on_duplicate: OnDuplicate::First,
        ..ck_opts(&tmp)
    };
    (dir, dbdir, tmp, a, o)
}

#[test]
fn a_checkpoint_of_another_import_is_refused_and_kept() {
    let (dir, dbdir, tmp, a, o) = setup();
    let files = vec![a.clone()];
    let db = interrupted(&dbdir, &tmp, &files, &o);

    // An option that changes the result.
    let other = ImportOptions {
        on_duplicate: OnDuplicate::Last,
        ..o.clone()
    };
    let e = refused(&db, SCHEMA, files.clone(), other);
    assert!(
        e.contains("option on_duplicate differs: first then, last now"),
        "{e}"
    );
    assert!(e.contains(&tmp.display().to_string()), "{e}");
    // Another schema (one index more).
    let schema2 = format!("{SCHEMA} CREATE INDEX by_note ON t (note);");
    let e = refused(&db, &schema2, files.clone(), o.clone());
    assert!(e.contains("table's definition"), "{e}");
    // Other files.
    let b = write(dir.path(), "b.csv", &rows_csv("b", 10, 0, false));
    let e = refused(&db, SCHEMA, vec![b], o.clone());
    assert!(e.contains("other input files"), "{e}");
    // The same file, grown.
    let mut bytes = std::fs::read(&a).unwrap();
    bytes.extend_from_slice(b"100000,1,new@x,n\n");
    std::fs::write(&a, &bytes).unwrap();
    let e = refused(&db, SCHEMA, files.clone(), o.clone());
    assert!(
        e.contains("a.csv changed") && e.contains("bytes then"),
        "{e}"
    );
    // The same size as at the checkpoint, one byte changed (another modification time).
    bytes.truncate(bytes.len() - 17);
    let at = bytes.windows(4).position(|w| w == b"note").unwrap();
    bytes[at + 3] = b'a';
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&a, &bytes).unwrap();
    let e = refused(&db, SCHEMA, files.clone(), o.clone());
    assert!(e.contains("modified since the checkpoint"), "{e}");
    // Every refusal kept the checkpoint.
    assert_eq!(leftovers(&tmp).len(), 1);
    // Without resume the checkpoint is discarded and the import runs from the start.
    let s = import(&db, SCHEMA, files, o).unwrap();
    assert!(!s.resumed);
    assert!(leftovers(&tmp).is_empty());
}

#[test]
fn writes_beside_the_table_resume_and_writes_into_it_are_refused() {
    let (dir, dbdir, tmp, a, o) = setup();
    let files = vec![a];
    // A Db that serves writes while the import is down: keys outside the table's range do not
    // change what the import makes, so it resumes, and ends as an uninterrupted import beside
    // those keys.
    let db = interrupted(&dbdir, &tmp, &files, &o);
    db.put(b"\xff\xffother", b"x").unwrap();
    db.flush().unwrap();
    db.put(b"\xff\xffmore", b"y").unwrap();
    let s = import(
        &db,
        SCHEMA,
        files.clone(),
        ImportOptions {
            resume: true,
            ..o.clone()
        },
    )
    .unwrap();
    assert!(s.resumed);
    let want_db = open_db(dir.path().join("want"), true).unwrap();
    import(&want_db, SCHEMA, files.clone(), opts_like(&o, dir.path())).unwrap();
    want_db.put(b"\xff\xffother", b"x").unwrap();
    want_db.put(b"\xff\xffmore", b"y").unwrap();
    assert!(dump(&db) == dump(&want_db), "the resumed import differs");
    db.close().unwrap();

    // A write into the table (here a stray raw key under its prefix; a put through any API
    // is the same) while it is down: refused, naming the table.
    let dbdir2 = dir.path().join("db2");
    let db = open_db(&dbdir2, true).unwrap();
    let s0 = write(dir.path(), "s0.csv", b"5000,1,s0@x,s\n");
    import(&db, SCHEMA, vec![s0], opts()).unwrap();
    db.close().unwrap();
    let db = interrupted(&dbdir2, &tmp, &files, &o);
    let id = sluice_import::TableReader::open(&db, Some("t"))
        .unwrap()
        .table
        .id;
    let mut k = id.to_be_bytes().to_vec();
    k.extend_from_slice(b"\xff\xffstray");
    db.put(&k, b"").unwrap();
    let e = refused(&db, SCHEMA, files.clone(), o.clone());
    assert!(e.contains("table t changed since the checkpoint"), "{e}");
    db.close().unwrap();
    // Recreated at the same path (the checkpoint lives in tmp_dir, outside it): a table with
    // the same name and definition, and an id of its own.
    std::fs::remove_dir_all(&dbdir2).unwrap();
    let db = open_db(&dbdir2, true).unwrap();
    let other = write(dir.path(), "o.csv", b"1,1,o@x,o\n");
    import(
        &db,
        "CREATE TABLE other (id INT PRIMARY KEY, v INT, w TEXT, x TEXT);",
        vec![other],
        opts(),
    )
    .unwrap();
    let e = refused(&db, SCHEMA, files.clone(), o.clone());
    assert!(e.contains("differs") || e.contains("changed"), "{e}");
}

/// `o` without its checkpoint settings: an uninterrupted import's options.
fn opts_like(o: &ImportOptions, dir: &Path) -> ImportOptions {
    ImportOptions {
        tmp_dir: Some(dir.join("tmp-want")),
        ..o.clone()
    }
}

#[test]
fn without_resume_a_checkpoint_is_discarded() {
    let (dir, dbdir, tmp, a, o) = setup();
    let db = interrupted(&dbdir, &tmp, std::slice::from_ref(&a), &o);
    let ck = tmp.join(&leftovers(&tmp)[0]);
    std::fs::write(ck.join("marker"), b"x").unwrap();
    // Interrupted again without resume: a new checkpoint, the old one's files gone.
    let o2 = ImportOptions {
        interrupt_after_checkpoints: Some(1),
        ..o.clone()
    };
    assert!(import(&db, SCHEMA, vec![a.clone()], o2).is_err());
    assert!(!ck.join("marker").exists());
    // Resume with nothing to resume (another Db): starts over.
    let db2 = open_db(dir.path().join("db2"), true).unwrap();
    let s = import(&db2, SCHEMA, vec![a], ImportOptions { resume: true, ..o }).unwrap();
    assert!(!s.resumed && s.rows > 0);
    drop(db);
}

#[test]
fn a_data_error_removes_the_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    let db = open_db(dir.path().join("db"), true).unwrap();
    let a = write(dir.path(), "a.csv", &rows_csv("a", 700, 9, false));
    let e = import(&db, SCHEMA, vec![a], ck_opts(&tmp)).unwrap_err();
    assert!(matches!(e, ImportError::DuplicateKey { .. }), "{e}");
    assert!(leftovers(&tmp).is_empty());
    assert!(dump(&db).is_empty());
}
