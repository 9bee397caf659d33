//! Resumable imports: an import interrupted after each of its checkpoints in turn (parse
//! chunks, between index merges, after final files inside a merge, staged before the ingest)
//! and resumed gives the Db an
//! uninterrupted import gives, byte for byte, with the same counts and rejects; a checkpoint
//! that does not belong to the import is refused; without `resume` it is discarded.

mod common;
#[path = "common/resume_cases.rs"]
mod resume_cases;

use std::path::{Path, PathBuf};

use common::*;
use resume_cases::*;
use sluice_import::{open_db, ImportError, ImportOptions, OnDuplicate};

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

/// Merges cut into many final files (a checkpoint after each), every row followed by a
/// duplicate of another key (so duplicate groups end files), under each `--on-duplicate`
/// policy, with `--max-errors` and a rejects file, on one thread and in parallel; the unique
/// index always merges on one thread.
fn file_cases(dir: &Path) -> Vec<Case> {
    let a = write(dir, "fa.csv", &rows_csv("a", 360, 1, false));
    let b = write(dir, "fb.csv", &rows_csv("b", 140, 2, false));
    let o = ImportOptions {
        target_file_size: 2048,
        ..ck_opts(dir)
    };
    let files = vec![a, b];
    let case = |name, on_duplicate, threads| Case {
        name,
        o: ImportOptions {
            on_duplicate,
            threads,
            ..o.clone()
        },
        files: files.clone(),
        existing: None,
    };
    vec![
        case("files-first", OnDuplicate::First, 2),
        case("files-last", OnDuplicate::Last, 2),
        Case {
            o: ImportOptions {
                max_errors: 10_000,
                rejects: Some(dir.join("unused")),
                ..case("", OnDuplicate::Error, 2).o
            },
            ..case("files-error", OnDuplicate::Error, 2)
        },
        Case {
            o: ImportOptions {
                max_errors: 10_000,
                rejects: Some(dir.join("unused")),
                ..case("", OnDuplicate::Error, 1).o
            },
            ..case("files-error-one-thread", OnDuplicate::Error, 1)
        },
        case("files-last-one-thread", OnDuplicate::Last, 1),
    ]
}

fn resume_after_every_final_file_equals_an_uninterrupted_import() {
    let dir = tempfile::tempdir().unwrap();
    let mut stages = Vec::new();
    for c in file_cases(dir.path()) {
        stages.extend(every_interruption_matches(dir.path(), &c));
    }
    for s in ["Merge+files", "Merge+parallel-files"] {
        assert!(
            stages.iter().filter(|x| *x == s).count() > 4,
            "{s} interrupted too rarely: {stages:?}"
        );
    }
}

#[test]
fn resume_after_every_final_file_equals_an_uninterrupted_import_row() {
    resume_after_every_final_file_equals_an_uninterrupted_import();
}

#[test]
fn resume_after_every_final_file_equals_an_uninterrupted_import_columnar() {
    with_layout(
        sluice_import::Layout::Columnar,
        resume_after_every_final_file_equals_an_uninterrupted_import,
    );
}

#[test]
fn resume_after_every_final_file_equals_an_uninterrupted_import_cells() {
    with_layout(
        sluice_import::Layout::Cells,
        resume_after_every_final_file_equals_an_uninterrupted_import,
    );
}

/// A replacing import into a table with rows, its merges cut into many files: the replaced
/// rows' deletions are merged as a source, sought past the recorded key on resume.
#[test]
fn resume_after_every_final_file_of_a_replacing_import() {
    let dir = tempfile::tempdir().unwrap();
    let existing = write(dir.path(), "s.csv", &rows_csv("s", 500, 0, true));
    let a = write(dir.path(), "a.csv", &rows_csv("a", 360, 3, false));
    for threads in [1, 2] {
        let c = Case {
            name: if threads == 1 {
                "replace-one"
            } else {
                "replace-par"
            },
            o: ImportOptions {
                on_duplicate: OnDuplicate::Last,
                target_file_size: 2048,
                threads,
                ..ck_opts(dir.path())
            },
            files: vec![a.clone()],
            existing: Some(existing.clone()),
        };
        let stages = every_interruption_matches(dir.path(), &c);
        assert!(stages.iter().any(|s| s.starts_with("Merge+")), "{stages:?}");
    }
}

/// A final file a merge checkpoint names, gone, cut short or with a byte changed: the resume
/// is refused naming it (never skipped or trusted), and the checkpoint is kept.
#[test]
fn a_missing_or_changed_final_file_refuses_the_resume() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.csv", &rows_csv("a", 360, 1, false));
    for damage in ["remove", "truncate", "flip"] {
        let dbdir = dir.path().join(format!("db-{damage}"));
        let tmp = dir.path().join(format!("tmp-{damage}"));
        let o = ImportOptions {
            on_duplicate: OnDuplicate::First,
            target_file_size: 2048,
            ..ck_opts(&tmp)
        };
        let db = open_db(&dbdir, true).unwrap();
        // The first checkpoint naming a final file of a merge in progress.
        let mut name = None;
        for n in 1..200 {
            let oi = ImportOptions {
                interrupt_after_checkpoints: Some(n),
                ..o.clone()
            };
            assert!(import(&db, SCHEMA, vec![a.clone()], oi).is_err());
            let text = std::fs::read_to_string(ck_dir(&tmp).join("CHECKPOINT")).unwrap();
            if let Some(f) = merging_file(&text) {
                name = Some(f);
                break;
            }
        }
        let name = name.expect("a checkpoint inside a merge");
        let path = ck_dir(&tmp).join(&name);
        let mut bytes = std::fs::read(&path).unwrap();
        match damage {
            "remove" => std::fs::remove_file(&path).unwrap(),
            "truncate" => std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap(),
            _ => {
                let mid = bytes.len() / 2;
                bytes[mid] ^= 0x20;
                std::fs::write(&path, &bytes).unwrap();
            }
        }
        let e = refused(&db, SCHEMA, vec![a.clone()], o.clone());
        assert!(e.contains(&name), "{damage}: {e}");
        let why = match damage {
            "remove" => "No such file",
            "truncate" => "changed size",
            _ => "changed since the checkpoint",
        };
        assert!(e.contains(why), "{damage}: {e}");
        assert_eq!(leftovers(&tmp).len(), 1);
        // Without resume it is discarded and the import runs whole.
        let s = import(&db, SCHEMA, vec![a.clone()], o).unwrap();
        assert!(!s.resumed && s.rows > 0);
        assert!(leftovers(&tmp).is_empty());
    }
}

/// `text`, a format-2 manifest without a merge in progress, as format 1 wrote it: no file
/// CRCs, no merge progress, no merge state file, no positions or rejects CRC.
fn as_format_1(text: &str) -> String {
    let (_, body) = text.split_once('\n').unwrap();
    let mut body = body
        .replace(",\"merging\":null", "")
        .replace(",\"merge_state\":null", "")
        .replace(",\"positions_file\":null", "")
        .replace(",\"rejects_crc\":null", "");
    while let Some(at) = body.find(",\"crc\":") {
        let end = at + body[at..].find('}').unwrap();
        body.replace_range(at..end, "");
    }
    assert!(!body.contains("merging") && !body.contains("crc"), "{body}");
    let crc = crc32c::crc32c(body.as_bytes());
    format!("sluice-import-checkpoint 1 {crc:08x}\n{body}")
}

/// A checkpoint of format 1 (written before merge progress and file CRCs), between two index
/// merges, still resumes to the uninterrupted import's Db.
#[test]
fn a_format_1_checkpoint_still_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.csv", &rows_csv("a", 360, 1, false));
    let o = ImportOptions {
        on_duplicate: OnDuplicate::First,
        target_file_size: 2048,
        ..ck_opts(&dir.path().join("tmp"))
    };
    let want = {
        let db = open_db(dir.path().join("ref"), true).unwrap();
        import(&db, SCHEMA, vec![a.clone()], o.clone()).unwrap();
        dump(&db)
    };
    let mut resumed = 0;
    for n in 1..400 {
        let tmp = dir.path().join(format!("tmp-{n}"));
        let db = open_db(dir.path().join(format!("db-{n}")), true).unwrap();
        let o = ImportOptions {
            tmp_dir: Some(tmp.clone()),
            ..o.clone()
        };
        let oi = ImportOptions {
            interrupt_after_checkpoints: Some(n),
            ..o.clone()
        };
        if import(&db, SCHEMA, vec![a.clone()], oi).is_ok() {
            break;
        }
        let m = ck_dir(&tmp).join("CHECKPOINT");
        let text = std::fs::read_to_string(&m).unwrap();
        if stage_of(&tmp) != "Merge" || text.contains("\"merging\":{") {
            continue;
        }
        std::fs::write(&m, as_format_1(&text)).unwrap();
        let s = import(
            &db,
            SCHEMA,
            vec![a.clone()],
            ImportOptions { resume: true, ..o },
        )
        .unwrap();
        assert!(s.resumed);
        assert!(dump(&db) == want, "format 1 checkpoint {n}: Db differs");
        resumed += 1;
    }
    assert!(resumed >= 2, "{resumed}");
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

#[test]
fn resume_after_every_checkpoint_equals_an_uninterrupted_import_cells() {
    with_layout(
        sluice_import::Layout::Cells,
        resume_after_every_checkpoint_equals_an_uninterrupted_import,
    );
}

/// A `--on-duplicate last` import into a table with rows (replaced rows' secondary entries
/// become deletions, carried across the checkpoints); row and columnar layouts (a columnar
/// table's replaced rows get deletion marks, carried the same way; cells refuses it).
#[test]
fn resume_of_a_replacing_import_into_an_existing_table_columnar() {
    with_layout(
        sluice_import::Layout::Columnar,
        resume_of_a_replacing_import_into_an_existing_table,
    );
}

#[test]
fn resume_after_every_final_file_of_a_replacing_import_columnar() {
    with_layout(
        sluice_import::Layout::Columnar,
        resume_after_every_final_file_of_a_replacing_import,
    );
}

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

/// Resumes the import of `files` into `db`, which must succeed from a checkpoint.
fn resume_ok(db: &sluice::Db, files: &[PathBuf], o: &ImportOptions) -> sluice_import::Summary {
    let o = ImportOptions {
        resume: true,
        ..o.clone()
    };
    let s = import(db, SCHEMA, files.to_vec(), o).unwrap();
    assert!(s.resumed);
    s
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

/// The layout counts as the table's, not as typed: an import into a columnar table that named
/// no layout resumes with `--layout columnar` added (the same table, the same result); a new
/// table's layout is what the first run chose, so a resume naming another one is refused.
#[test]
fn a_resume_naming_the_layout_the_table_has_goes_on() {
    use sluice_import::Layout;
    let (dir, dbdir, tmp, a, o) = setup();
    let files = vec![a];
    let db = open_db(&dbdir, true).unwrap();
    let s0 = write(dir.path(), "s0.csv", b"5000,1,s0@x,s\n");
    let columnar = ImportOptions {
        layout: Some(Layout::Columnar),
        ..opts()
    };
    import(&db, SCHEMA, vec![s0.clone()], columnar.clone()).unwrap();
    db.close().unwrap();
    let unnamed = ImportOptions { layout: None, ..o };
    let db = interrupted(&dbdir, &tmp, &files, &unnamed);
    let named = ImportOptions {
        layout: Some(Layout::Columnar),
        ..unnamed.clone()
    };
    resume_ok(&db, &files, &named);
    // The same rows as an uninterrupted import of both files into a columnar table.
    let want_db = open_db(dir.path().join("want"), true).unwrap();
    import(&want_db, SCHEMA, vec![s0], columnar).unwrap();
    import(
        &want_db,
        SCHEMA,
        files.clone(),
        opts_like(&unnamed, dir.path()),
    )
    .unwrap();
    assert!(dump(&db) == dump(&want_db), "the resumed import differs");
    db.close().unwrap();

    // A new table: the first run made it a row table; a resume naming columnar is refused.
    let dbdir2 = dir.path().join("db2");
    let db = interrupted(&dbdir2, &tmp, &files, &unnamed);
    let e = refused(&db, SCHEMA, files, named);
    assert!(
        e.contains("table's definition") || e.contains("differs"),
        "{e}"
    );
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
    resume_ok(&db, &files, &o);
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

#[test]
fn an_import_into_the_table_meanwhile_refuses_the_resume_even_at_seqno_0() {
    // No secondary index: the other import's keys lie past every stored key, so its data file
    // overlaps nothing and goes in at sequence number 0 — only its catalog entry, written
    // again by every import, marks the table as changed.
    const U: &str = "CREATE TABLE u (id INT PRIMARY KEY, v TEXT);";
    let dir = tempfile::tempdir().unwrap();
    let (dbdir, tmp) = (dir.path().join("db"), dir.path().join("tmp"));
    let rows = |from: u64, n: u64| -> Vec<u8> {
        (from..from + n)
            .map(|i| format!("{},v{i}\n", from + (i * 7919) % n))
            .collect::<String>()
            .into_bytes()
    };
    let first = write(dir.path(), "first.csv", &rows(0, 10));
    let a = write(dir.path(), "a.csv", &rows(100, 4000));
    let b = write(dir.path(), "b.csv", &rows(90_000, 10));
    let db = open_db(&dbdir, true).unwrap();
    import(&db, U, vec![first], opts()).unwrap();
    let o = ck_opts(&tmp);
    let a_run = ImportOptions {
        interrupt_after_checkpoints: Some(2),
        ..o.clone()
    };
    assert!(import(&db, U, vec![a.clone()], a_run).is_err());
    assert_eq!(leftovers(&tmp).len(), 1);
    // Another import into u, its temporary directory elsewhere (so it does not discard the
    // checkpoint in `tmp`).
    let b_opts = ImportOptions {
        tmp_dir: Some(dir.path().join("tmp-b")),
        ..opts()
    };
    import(&db, U, vec![b], b_opts).unwrap();
    let e = refused(&db, U, vec![a], o);
    assert!(e.contains("table u changed since the checkpoint"), "{e}");
}

/// A row deleted while the import is down, its tombstone and the row then compacted away:
/// the table's newest entry is again what the checkpoint saw, yet the import (`first`) had
/// dropped its own row under that key as a duplicate of the stored one. The resume is
/// refused, and a fresh run stores the row. (Before row deletes wrote the table's deletes
/// key, the resume was taken and the row was missing from the table.)
#[test]
fn a_row_deleted_and_compacted_away_meanwhile_refuses_the_resume() {
    const U: &str = "CREATE TABLE u (id INT PRIMARY KEY, v TEXT);";
    let dir = tempfile::tempdir().unwrap();
    let (dbdir, tmp) = (dir.path().join("db"), dir.path().join("tmp"));
    let first = write(dir.path(), "first.csv", b"1,old1\n3,old3\n5,old5\n");
    // The import's rows, 0..4000 shuffled: 3 among them.
    let a_rows: String = (0..4000u64)
        .map(|i| format!("{},a{}\n", (i * 7919) % 4000, (i * 7919) % 4000))
        .collect();
    let a = write(dir.path(), "a.csv", a_rows.as_bytes());
    let db = open_db(&dbdir, true).unwrap();
    import(&db, U, vec![first], opts()).unwrap();
    let o = ImportOptions {
        on_duplicate: OnDuplicate::First,
        ..ck_opts(&tmp)
    };
    let a_run = ImportOptions {
        interrupt_after_checkpoints: Some(2),
        ..o.clone()
    };
    assert!(import(&db, U, vec![a.clone()], a_run).is_err());
    assert_eq!(leftovers(&tmp).len(), 1);
    let reader = sluice_import::TableReader::open(&db, Some("u")).unwrap();
    let table_seqno = |db: &sluice::Db| {
        let id = reader.table.id;
        db.max_seqno_in_range(&id.to_be_bytes(), &(id + 1).to_be_bytes())
            .unwrap()
    };
    let before = table_seqno(&db);
    assert!(reader.delete(&["3".to_string()], false).unwrap());
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    // The delete's tombstone and row 3 are gone from the files; only the deletes key keeps
    // the table's newest sequence number past the checkpoint's.
    let deletes_key =
        sluice_import::keycode::prefix(reader.table.id, sluice_import::query::DELETES_INDEX_ID);
    assert!(db.get(&deletes_key).unwrap().is_some());
    assert_eq!(db.newest_seqno(&deletes_key).unwrap(), table_seqno(&db));
    assert!(table_seqno(&db) > before);
    let e = refused(&db, U, vec![a.clone()], o.clone());
    assert!(e.contains("table u changed since the checkpoint"), "{e}");
    import(&db, U, vec![a], o).unwrap();
    let mut rows = Vec::new();
    reader
        .scan(None, None, None, None, |row| {
            rows.push(reader.format_row(row, sluice_import::OutputFormat::Csv));
            Ok(())
        })
        .unwrap();
    assert_eq!(rows.len(), 4000);
    assert!(rows.contains(&"3,a3".to_string()), "row 3 is missing");
    assert!(rows.contains(&"1,old1".to_string()));
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

#[test]
fn a_rejects_file_lost_cut_short_or_changed_refuses_the_resume() {
    let (dir, dbdir, tmp, _, o) = setup();
    // Every 25th line a bad id: rejects written before each checkpoint.
    let mut csv = Vec::new();
    for (i, line) in rows_csv("a", 700, 9, false)
        .split(|&b| b == b'\n')
        .enumerate()
    {
        if line.is_empty() {
            continue;
        }
        if i % 25 == 0 {
            csv.extend(format!("bad{i},1,x,n\n").bytes());
        }
        csv.extend_from_slice(line);
        csv.push(b'\n');
    }
    let a = write(dir.path(), "bad.csv", &csv);
    let rejects = dir.path().join("rejects.csv");
    let o = ImportOptions {
        max_errors: 10_000,
        rejects: Some(rejects.clone()),
        ..o
    };
    let files = vec![a.clone()];
    let db = interrupted(&dbdir, &tmp, &files, &o);
    let kept = std::fs::read(&rejects).unwrap();
    assert!(!kept.is_empty(), "no rejects before the interruption");

    // Removed: refused, naming the file (a resume would have zero-filled it back).
    std::fs::remove_file(&rejects).unwrap();
    let e = refused(&db, SCHEMA, files.clone(), o.clone());
    assert!(
        e.contains(&rejects.display().to_string()) && e.contains("holds no bytes"),
        "{e}"
    );
    // Cut short: refused too.
    std::fs::write(&rejects, &kept[..kept.len() / 2]).unwrap();
    let e = refused(&db, SCHEMA, files.clone(), o.clone());
    assert!(e.contains("cut short"), "{e}");
    // Rewritten at the same length (another import's rejects in its place): refused too.
    let mut other = kept.clone();
    other[2] ^= 0x20;
    std::fs::write(&rejects, &other).unwrap();
    let e = refused(&db, SCHEMA, files.clone(), o.clone());
    assert!(e.contains("changed since the checkpoint"), "{e}");
    assert_eq!(leftovers(&tmp).len(), 1);

    // Given back, it resumes and writes the rejects an uninterrupted import writes.
    std::fs::write(&rejects, &kept).unwrap();
    let s = resume_ok(&db, &files, &o);
    let resumed = std::fs::read(&rejects).unwrap();
    let whole = dir.path().join("whole");
    let db2 = open_db(&whole, true).unwrap();
    let rejects2 = dir.path().join("rejects2.csv");
    let o2 = ImportOptions {
        rejects: Some(rejects2.clone()),
        tmp_dir: None,
        ..o
    };
    let s2 = import(&db2, SCHEMA, files, o2).unwrap();
    assert_eq!(s.rejected, s2.rejected);
    assert_eq!(resumed, std::fs::read(&rejects2).unwrap());
    assert_eq!(dump(&db), dump(&db2));
}

#[test]
fn a_damaged_positions_file_refuses_the_resume() {
    let dir = tempfile::tempdir().unwrap();
    let sorted = write(dir.path(), "s.csv", &rows_csv("s", 900, 0, true));
    let a = write(dir.path(), "a.csv", &rows_csv("a", 700, 9, false));
    // Sorted input only: the streaming writer's recorder; sorted then unsorted: the
    // positions of what was streamed, kept for messages.
    for (n, files) in [vec![sorted.clone()], vec![sorted.clone(), a.clone()]]
        .into_iter()
        .enumerate()
    {
        for damage in ["flip", "cut"] {
            let (dbdir, tmp) = (
                dir.path().join(format!("db{n}{damage}")),
                dir.path().join("tmp"),
            );
            let o = ImportOptions {
                on_duplicate: OnDuplicate::First,
                ..ck_opts(&tmp)
            };
            let interrupt = ImportOptions {
                interrupt_after_checkpoints: Some(if n == 0 { 3 } else { 9 }),
                ..o.clone()
            };
            let db = open_db(&dbdir, true).unwrap();
            assert!(import(&db, SCHEMA, files.clone(), interrupt).is_err());
            let ck = ck_dir(&tmp);
            let state = std::fs::read_to_string(ck.join("CHECKPOINT")).unwrap();
            let key = if n == 0 {
                "\"recorder\":{"
            } else {
                "\"positions_file\":{"
            };
            assert!(state.contains(key), "{n}: no positions in {state}");
            let p = ck.join("positions-0");
            let mut bytes = std::fs::read(&p).unwrap();
            assert!(bytes.len() > 8, "{n}");
            if damage == "flip" {
                bytes[3] ^= 0x40;
            } else {
                bytes.truncate(bytes.len() / 2);
            }
            std::fs::write(&p, &bytes).unwrap();
            let e = refused(&db, SCHEMA, files.clone(), o.clone());
            assert!(e.contains("positions-0"), "{n} {damage}: {e}");
            let why = if damage == "flip" {
                "changed since the checkpoint"
            } else {
                "bytes at the checkpoint"
            };
            assert!(e.contains(why), "{n} {damage}: {e}");
            // Without resume the import runs from the start and the directory goes.
            import(&db, SCHEMA, files.clone(), o).unwrap();
            assert!(leftovers(&tmp).is_empty());
        }
    }
}

#[test]
fn resume_with_no_checkpoint_into_a_row_id_table_with_rows_is_refused() {
    // A table keyed by row id: running a finished import again would add every row twice.
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    let db = open_db(dir.path().join("db"), true).unwrap();
    let schema = "CREATE TABLE r (a BIGINT, b TEXT);";
    let f = write(dir.path(), "r.csv", b"1,x\n2,y\n3,z\n");
    let o = ck_opts(&tmp);
    let resume = ImportOptions {
        resume: true,
        ..o.clone()
    };
    // Into an empty table a resume with nothing to resume starts the import.
    let s = import(&db, schema, vec![f.clone()], resume.clone()).unwrap();
    assert!(!s.resumed && s.rows == 3);
    // The import finished and its checkpoint directory went (as after a kill between the
    // ingest and the directory's removal): resuming it is refused, the Db unchanged and no
    // directory left.
    assert!(leftovers(&tmp).is_empty());
    let before = dump(&db);
    let e = import(&db, schema, vec![f.clone()], resume.clone()).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, ImportError::CannotResume { .. }), "{msg}");
    assert!(
        msg.contains("no checkpoint to resume") && msg.contains("table r (keyed by row id"),
        "{msg}"
    );
    assert!(dump(&db) == before, "a refused resume changed the Db");
    assert!(leftovers(&tmp).is_empty(), "{:?}", leftovers(&tmp));
    // Killed before its first checkpoint (its directory kept, no CHECKPOINT in it): refused
    // too, and the directory goes.
    let killed = ImportOptions {
        interrupt_after_checkpoints: Some(1),
        ..o.clone()
    };
    assert!(import(&db, schema, vec![f.clone()], killed).is_err());
    std::fs::remove_file(ck_dir(&tmp).join("CHECKPOINT")).unwrap();
    let e = import(&db, schema, vec![f.clone()], resume).unwrap_err();
    assert!(matches!(e, ImportError::CannotResume { .. }), "{e}");
    assert!(dump(&db) == before);
    assert!(leftovers(&tmp).is_empty(), "{:?}", leftovers(&tmp));
    // Without resume it imports again, as asked.
    assert_eq!(
        import(&db, schema, vec![f.clone()], o.clone())
            .unwrap()
            .rows,
        3
    );
    // With a primary key, a resume with nothing to resume starts over (a second run keeps
    // the same rows under `first`).
    let pk = "CREATE TABLE p (a BIGINT PRIMARY KEY, b TEXT);";
    let first = ImportOptions {
        on_duplicate: OnDuplicate::First,
        resume: true,
        ..o
    };
    assert_eq!(
        import(&db, pk, vec![f.clone()], first.clone())
            .unwrap()
            .rows,
        3
    );
    let s = import(&db, pk, vec![f], first).unwrap();
    assert!(!s.resumed);
}
