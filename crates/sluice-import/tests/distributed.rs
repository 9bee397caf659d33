//! The distributed import's core, with "workers" simulated in one process: encode batches,
//! cut ranges from a sample, build each range (primary first, then the secondary indexes
//! without the rows the primary dropped), commit once. The result is the single-machine
//! import's, byte for byte; every file lands at the bottom level, no two overlap.

mod common;

use std::collections::HashSet;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt32Type;
use arrow_array::{ArrayRef, Int64Array, RecordBatch, RecordBatchIterator, StringArray};
use arrow_schema::ArrowError;
use common::*;
use sluice_import::distributed::{build_range, commit, JobPlan, RangeManifest};
use sluice_import::{open_db, Import, ImportError, OnDuplicate};

const SCHEMA: &str = "CREATE TABLE t (id BIGINT PRIMARY KEY, grp TEXT, email TEXT, n BIGINT); \
    CREATE INDEX by_grp ON t (grp); CREATE UNIQUE INDEX by_email ON t (email);";

/// `n` rows in a shuffled order; ids repeat every `modulo` rows (duplicates when < n).
fn rows(n: i64, modulo: i64, unique_emails: bool) -> Vec<RecordBatch> {
    let ids: Vec<i64> = (0..n).map(|i| (i * 7919) % n % modulo).collect();
    let mut out = Vec::new();
    for chunk in ids.chunks(97) {
        let grp: Vec<String> = chunk.iter().map(|i| format!("g{}", i % 5)).collect();
        let email: Vec<Option<String>> = chunk
            .iter()
            .enumerate()
            .map(|(k, i)| {
                if unique_emails {
                    (i % 11 != 3).then(|| format!("{i}@x"))
                } else {
                    Some(format!("{}@x", k % 3))
                }
            })
            .collect();
        out.push(
            RecordBatch::try_from_iter(vec![
                ("id", Arc::new(Int64Array::from(chunk.to_vec())) as ArrayRef),
                ("grp", Arc::new(StringArray::from(grp))),
                ("email", Arc::new(StringArray::from(email))),
                (
                    "n",
                    Arc::new(Int64Array::from(
                        chunk.iter().map(|i| i * 3).collect::<Vec<_>>(),
                    )),
                ),
            ])
            .unwrap(),
        );
    }
    out
}

fn single_machine(
    db: &sluice::Db,
    batches: &[RecordBatch],
    on_duplicate: OnDuplicate,
) -> Result<(), ImportError> {
    let schema = batches[0].schema();
    let owned: Vec<Result<RecordBatch, ArrowError>> = batches.iter().cloned().map(Ok).collect();
    let stream = Box::new(RecordBatchIterator::new(owned, schema));
    let o = sluice_import::ImportOptions {
        on_duplicate,
        ..opts()
    };
    Import::from_arrow(SCHEMA, stream, Some("input".into()), o)?.run(db)?;
    Ok(())
}

/// The whole distributed flow over `batches` (one input: source 0), `ranges` ranges a slot;
/// `extra_attempt`: every range is built twice (a retried task), only one may be ingested.
fn distributed(
    db: &sluice::Db,
    dir: &std::path::Path,
    batches: &[RecordBatch],
    on_duplicate: OnDuplicate,
    ranges: usize,
    extra_attempt: bool,
) -> Result<Vec<(u32, sluice::IngestedFile)>, ImportError> {
    let mut plan = JobPlan::new(db, SCHEMA, None, on_duplicate, "job1", vec!["input".into()])?;
    let plan_text = plan.to_json();
    // Encode once to sample (every 3rd key of each slot), then cut.
    let mut samples = vec![Vec::new(); plan.slots()];
    let mut first_row = 0u64;
    for (n, b) in batches.iter().enumerate() {
        let e = JobPlan::from_json(&plan_text)?.encode(b, 0, first_row, n as u64)?;
        first_row += b.num_rows() as u64;
        let slots = e.column(0).as_primitive::<UInt32Type>();
        let keys = e.column(2).as_binary::<i32>();
        for i in (0..e.num_rows()).step_by(3) {
            samples[slots.value(i) as usize].push(keys.value(i).to_vec());
        }
    }
    plan.set_cuts(samples, ranges);
    // Encode again with ranges (what the shuffle routes by).
    let mut encoded = Vec::new();
    let mut first_row = 0u64;
    for (n, b) in batches.iter().enumerate() {
        encoded.push(plan.encode(b, 0, first_row, n as u64)?);
        first_row += b.num_rows() as u64;
    }
    let work = dir.join("work");
    let mut manifests: Vec<RangeManifest> = Vec::new();
    let mut dropped = HashSet::new();
    for slot in 0..plan.slots() {
        for range in 0..plan.ranges(slot) {
            let attempts: &[&str] = if extra_attempt {
                &["a1", "a2"]
            } else {
                &["a1"]
            };
            for attempt in attempts {
                let m = build_range(&plan, slot, range, &encoded, &dropped, &work, attempt)?;
                manifests.push(RangeManifest::from_json(&m.to_json())?);
            }
        }
        if slot == 0 {
            dropped = manifests
                .iter()
                .flat_map(|m| m.dropped.iter().copied())
                .collect();
        }
    }
    commit(db, &plan, manifests, &work)
}

#[test]
fn equals_single_machine_import_in_every_byte() {
    for (policy, modulo, ranges) in [
        (OnDuplicate::Error, i64::MAX, 4),
        (OnDuplicate::First, 700, 8),
        (OnDuplicate::Last, 700, 3),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        let (dba, dbb) = (open_db(&a, true).unwrap(), open_db(&b, true).unwrap());
        let input = rows(2000, modulo, true);
        single_machine(&dba, &input, policy).unwrap();
        let placed = distributed(&dbb, dir.path(), &input, policy, ranges, true).unwrap();
        assert_eq!(dump(&dba), dump(&dbb), "{policy:?}");
        // Every file at the bottom level, ranges per slot at least as many as asked for when
        // the sample allows; no attempt directory left.
        assert!(placed.iter().all(|(_, f)| f.level == Some(6)), "{placed:?}");
        let primary_files = placed.iter().filter(|(s, _)| *s == 0).count();
        assert!(primary_files >= 2, "{primary_files} primary files");
        assert!(!dir.path().join("work").join("sluice-job-job1").exists());
    }
}

#[test]
fn duplicates_and_unique_values_fail_naming_both_rows() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path().join("db"), true).unwrap();
    let before = dump(&db);
    let e = distributed(
        &db,
        dir.path(),
        &rows(500, 400, true),
        OnDuplicate::Error,
        4,
        false,
    )
    .unwrap_err();
    assert!(
        matches!(&e, ImportError::DuplicateKey { place, .. } if place.file == "input"),
        "{e}"
    );
    assert!(e.to_string().contains("input:"), "{e}");
    // Emails repeat (k % 3): the unique index refuses them, whatever range they fell in.
    let e = distributed(
        &db,
        dir.path(),
        &rows(300, i64::MAX, false),
        OnDuplicate::Error,
        4,
        false,
    )
    .unwrap_err();
    assert!(matches!(e, ImportError::UniqueViolation { .. }), "{e}");
    assert!(e.to_string().contains("by_email"), "{e}");
    assert_eq!(dump(&db), before);
}

#[test]
fn a_table_with_rows_or_without_a_key_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path().join("db"), true).unwrap();
    single_machine(&db, &rows(10, i64::MAX, true), OnDuplicate::Error).unwrap();
    let e = JobPlan::new(&db, SCHEMA, None, OnDuplicate::Error, "j", vec![]).unwrap_err();
    assert!(e.to_string().contains("already holds rows"), "{e}");
    let e = JobPlan::new(
        &db,
        "CREATE TABLE k (a INT)",
        None,
        OnDuplicate::Error,
        "j",
        vec![],
    )
    .unwrap_err();
    assert!(e.to_string().contains("PRIMARY KEY"), "{e}");
}
