//! The merge on several threads (disjoint key ranges) imports exactly what the merge on one
//! thread imports: the same KVs, counts, rejects file and error, for random inputs with
//! duplicate keys (across chunks and against rows already in the table), every
//! `--on-duplicate` policy, `--max-errors` limits, spills, and a secondary index.

mod common;

use proptest::prelude::*;
use sluice_import::{open_db, ImportOptions, OnDuplicate};

use common::*;

const SCHEMA: &str = "CREATE TABLE t (id INT PRIMARY KEY, tag TEXT, n INT);
CREATE INDEX by_tag ON t (tag);";

/// What an import left: its outcome (summary or error), every KV, and the rejects file.
type Outcome = (String, Vec<(Vec<u8>, Vec<u8>)>, String);

/// One import of `files` (after `existing`, if any) with `threads` merge threads; what it
/// left: its outcome, every KV, and the rejects file.
fn run(
    existing: Option<&str>,
    files: &[String],
    on_duplicate: OnDuplicate,
    max_errors: u64,
    threads: usize,
) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path().join("db"), true).unwrap();
    if let Some(e) = existing {
        let f = write(dir.path(), "existing.csv", e.as_bytes());
        import(&db, SCHEMA, vec![f], opts()).unwrap();
    }
    let paths = files
        .iter()
        .enumerate()
        .map(|(i, c)| write(dir.path(), &format!("in{i}.csv"), c.as_bytes()))
        .collect();
    let rejects = dir.path().join("rejects.txt");
    let o = ImportOptions {
        threads,
        on_duplicate,
        max_errors,
        rejects: Some(rejects.clone()),
        // Spills: the sort budget is a quarter of this at least, well under some inputs.
        memory: 8 << 20,
        ..opts()
    };
    let outcome = match import(&db, SCHEMA, paths, o) {
        Ok(s) => format!(
            "ok rows {} rejected {} dropped {}",
            s.rows, s.rejected, s.duplicates_dropped
        ),
        Err(e) => format!("error {e}"),
    };
    let rejects = std::fs::read_to_string(&rejects).unwrap_or_default();
    let d = dir.path().display().to_string();
    (
        outcome.replace(&d, "DIR"),
        dump(&db),
        rejects.replace(&d, "DIR"),
    )
}

fn csv(rows: &[(u16, u8, i32)]) -> String {
    rows.iter()
        .map(|(id, tag, n)| format!("{id},tag{tag},{n}\n"))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn merging_on_several_threads_imports_what_one_thread_does(
        existing in proptest::option::of(proptest::collection::vec((0u16..300, 0u8..20, any::<i32>()), 1..200)),
        inputs in proptest::collection::vec(proptest::collection::vec((0u16..400, 0u8..20, any::<i32>()), 0..400), 1..3),
        dup in prop_oneof![Just(OnDuplicate::Error), Just(OnDuplicate::First), Just(OnDuplicate::Last)],
        max_errors in prop_oneof![Just(0u64), Just(3), Just(100_000)],
        threads in 2usize..5,
    ) {
        let existing = existing.map(|rows| {
            let mut rows = rows;
            rows.sort_by_key(|r| r.0);
            rows.dedup_by_key(|r| r.0);
            csv(&rows)
        });
        let files: Vec<String> = inputs.iter().map(|r| csv(r)).collect();
        let one = run(existing.as_deref(), &files, dup, max_errors, 1);
        let many = run(existing.as_deref(), &files, dup, max_errors, threads);
        prop_assert_eq!(&one.0, &many.0);
        prop_assert_eq!(&one.2, &many.2);
        prop_assert!(one.1 == many.1, "the imported KVs differ ({})", one.0);
    }
}

/// A merge over a large sorted list splits it at its sampled keys: with many distinct keys,
/// the threads each write files (the ranges are not empty), and the result equals one thread's.
#[test]
fn a_large_merge_is_cut_into_ranges_that_each_write_files() {
    let rows: Vec<(u16, u8, i32)> = (0..20_000u32)
        .map(|i| (((i * 7919) % 20_000) as u16, (i % 50) as u8, i as i32))
        .collect();
    let files = vec![csv(&rows)];
    let one = run(None, &files, OnDuplicate::Error, 0, 1);
    let many = run(None, &files, OnDuplicate::Error, 0, 4);
    assert_eq!(one.0, "ok rows 20000 rejected 0 dropped 0");
    assert_eq!(one, many);
    // Four threads cut the primary and the index into four ranges each: at least four files
    // per index (one thread writes one file per index: no entry limit is reached here).
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path().join("db"), true).unwrap();
    let f = write(dir.path(), "in.csv", files[0].as_bytes());
    let s = import(
        &db,
        SCHEMA,
        vec![f],
        ImportOptions {
            threads: 4,
            ..opts()
        },
    )
    .unwrap();
    let primary = s.files.iter().filter(|f| f.index == "primary").count();
    let by_tag = s.files.iter().filter(|f| f.index == "by_tag").count();
    assert!(primary >= 4 && by_tag >= 4, "{:?}", s.files);
}
