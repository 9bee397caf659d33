//! The distributed import's core, with "workers" simulated in one process: encode batches,
//! cut ranges from a sample, build each range (primary first, then the secondary indexes
//! without the rows the primary dropped), commit once. The result is the single-machine
//! import's, byte for byte; every file lands at the bottom level, no two overlap.

mod common;

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt32Type;
use arrow_array::{ArrayRef, Int64Array, RecordBatch, RecordBatchIterator, StringArray};
use arrow_schema::ArrowError;
use common::*;
use sluice_import::distributed::job::{
    begin_job, job_dir, list_jobs, mark_shuffled, record_done, save_plan, Fingerprint,
};
use sluice_import::distributed::rejects::{tally_rejects, RowReject};
use sluice_import::distributed::{
    build_range, commit, export_ranges, FromPrimary, JobPlan, RangeManifest,
};
use sluice_import::{open_db, Import, ImportError, OnDuplicate, OtherRow};

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
    single_machine_with(db, SCHEMA, batches, on_duplicate)
}

/// [`single_machine`] of `schema_sql`'s table.
fn single_machine_with(
    db: &sluice::Db,
    schema_sql: &str,
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
    Import::from_arrow(schema_sql, stream, Some("input".into()), o)?.run(db)?;
    Ok(())
}

/// How a simulated job runs.
#[derive(Clone, Copy)]
struct Job {
    on_duplicate: OnDuplicate,
    ranges: usize,
    /// Every range is built twice (a retried task): only one may be ingested.
    extra_attempt: bool,
    max_errors: u64,
}

impl Job {
    fn new(on_duplicate: OnDuplicate, ranges: usize) -> Job {
        Job {
            on_duplicate,
            ranges,
            extra_attempt: false,
            max_errors: 0,
        }
    }
}

/// Steps 1-3 over `batches` (one input: source 0): the plan with cut points from every 3rd
/// key, and the entries encoded under it — the stored entries of a table with rows too.
fn plan_and_encode(
    db: &sluice::Db,
    batches: &[RecordBatch],
    job: Job,
) -> Result<(JobPlan, Vec<RecordBatch>, Vec<RowReject>), ImportError> {
    plan_and_encode_with(db, SCHEMA, 3, batches, job)
}

/// [`plan_and_encode`] of `schema`'s table, every `every`-th key sampled.
fn plan_and_encode_with(
    db: &sluice::Db,
    schema: &str,
    every: usize,
    batches: &[RecordBatch],
    job: Job,
) -> Result<(JobPlan, Vec<RecordBatch>, Vec<RowReject>), ImportError> {
    let sources = vec!["input".into()];
    let mut plan = JobPlan::new(db, schema, None, job.on_duplicate, "job1", sources)?;
    plan.max_errors = job.max_errors;
    let plan_text = plan.to_json();
    let mut samples = vec![Vec::new(); plan.slots()];
    let mut first_row = 0u64;
    for (n, b) in batches.iter().enumerate() {
        let (e, _) = JobPlan::from_json(&plan_text)?.encode(b, 0, first_row, n as u64)?;
        first_row += b.num_rows() as u64;
        let slots = e.column(0).as_primitive::<UInt32Type>();
        let keys = e.column(2).as_binary::<i32>();
        for i in (0..e.num_rows()).step_by(every) {
            samples[slots.value(i) as usize].push(keys.value(i).to_vec());
        }
    }
    plan.set_cuts(samples, job.ranges);
    // Encode again with ranges (what the shuffle routes by).
    let (mut encoded, mut rejects) = (Vec::new(), Vec::new());
    let mut first_row = 0u64;
    for (n, b) in batches.iter().enumerate() {
        let (e, bad) = plan.encode(b, 0, first_row, n as u64)?;
        encoded.push(e);
        rejects.extend(bad);
        first_row += b.num_rows() as u64;
    }
    // The stored keys, a page of 50 at a time.
    for slot in plan.existing_slots() {
        let mut after = None;
        loop {
            let (page, last) = plan.existing_entries(db, slot, after.as_deref(), 50)?;
            encoded.push(page);
            match last {
                Some(k) => after = Some(k),
                None => break,
            }
        }
    }
    Ok((plan, encoded, rejects))
}

/// Step 4 for every range of every slot (primary first), each finished range recorded in
/// the job's directory under `work`; the ranges in `skip` are taken as built already.
fn build_all(
    plan: &JobPlan,
    encoded: &[RecordBatch],
    work: &std::path::Path,
    job: Job,
    mut done: Vec<RangeManifest>,
) -> Result<Vec<RangeManifest>, ImportError> {
    let mut from = FromPrimary::of(&done);
    for slot in 0..plan.slots() {
        for range in 0..plan.ranges(slot) {
            if done
                .iter()
                .any(|m| (m.slot, m.range) == (slot as u32, range))
            {
                continue;
            }
            let attempts: &[&str] = if job.extra_attempt {
                &["a1", "a2"]
            } else {
                &["a1"]
            };
            for attempt in attempts {
                let m = build_range(plan, slot, range, encoded, &from, work, attempt)?;
                record_done(work, &m)?;
                done.push(RangeManifest::from_json(&m.to_json())?);
            }
        }
        if slot == 0 {
            from = FromPrimary::of(&done);
        }
    }
    Ok(done)
}

/// The rejects of every task added up (past `max_errors`: the job's error), as the
/// coordinator does.
fn tally(
    plan: &JobPlan,
    bad: Vec<RowReject>,
    manifests: &[RangeManifest],
) -> Result<u64, ImportError> {
    let dups = manifests
        .iter()
        .filter(|m| m.attempt == "a1")
        .flat_map(|m| m.rejects.clone())
        .collect();
    tally_rejects(bad, dups, plan.max_errors, None)
}

/// The whole distributed flow over `batches`.
fn distributed(
    db: &sluice::Db,
    dir: &std::path::Path,
    batches: &[RecordBatch],
    job: Job,
) -> Result<Vec<(u32, sluice::IngestedFile)>, ImportError> {
    distributed_with(db, dir, SCHEMA, batches, job)
}

/// [`distributed`] into `schema`'s table.
fn distributed_with(
    db: &sluice::Db,
    dir: &std::path::Path,
    schema: &str,
    batches: &[RecordBatch],
    job: Job,
) -> Result<Vec<(u32, sluice::IngestedFile)>, ImportError> {
    let (plan, encoded, bad) = plan_and_encode_with(db, schema, 3, batches, job)?;
    let work = dir.join("work");
    let manifests = build_all(&plan, &encoded, &work, job, Vec::new())?;
    tally(&plan, bad, &manifests)?;
    commit(db, &plan, manifests, &work)
}

/// Duplicate policies with the id modulus (duplicates when < 2,000) and ranges they run with.
const POLICIES: [(OnDuplicate, i64, usize); 3] = [
    (OnDuplicate::Error, i64::MAX, 4),
    (OnDuplicate::First, 700, 8),
    (OnDuplicate::Last, 700, 3),
];

#[test]
fn equals_single_machine_import_in_every_byte() {
    for (policy, modulo, ranges) in POLICIES {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        let (dba, dbb) = (open_db(&a, true).unwrap(), open_db(&b, true).unwrap());
        let input = rows(2000, modulo, true);
        single_machine(&dba, &input, policy).unwrap();
        let job = Job {
            extra_attempt: true,
            ..Job::new(policy, ranges)
        };
        let placed = distributed(&dbb, dir.path(), &input, job).unwrap();
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
    let job = Job::new(OnDuplicate::Error, 4);
    let e = distributed(&db, dir.path(), &rows(500, 400, true), job).unwrap_err();
    assert!(
        matches!(&e, ImportError::DuplicateKey { place, .. } if place.file == "input"),
        "{e}"
    );
    assert!(e.to_string().contains("input:"), "{e}");
    // Emails repeat (k % 3): the unique index refuses them, whatever range they fell in.
    let e = distributed(&db, dir.path(), &rows(300, i64::MAX, false), job).unwrap_err();
    assert!(matches!(e, ImportError::UniqueViolation { .. }), "{e}");
    assert!(e.to_string().contains("by_email"), "{e}");
    assert_eq!(dump(&db), before);
}

#[test]
fn a_table_without_a_primary_key_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path().join("db"), true).unwrap();
    single_machine(&db, &rows(10, i64::MAX, true), OnDuplicate::Error).unwrap();
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

/// Loads `base` into both Dbs the single-machine way, then `input` into one by `sluice
/// import` and into the other distributed: the same Db, or the same error.
fn onto_stored_rows(
    base: &[RecordBatch],
    input: &[RecordBatch],
    job: Job,
) -> (Result<(), ImportError>, Result<(), ImportError>, bool) {
    let dir = tempfile::tempdir().unwrap();
    let (dba, dbb) = (
        open_db(dir.path().join("a"), true).unwrap(),
        open_db(dir.path().join("b"), true).unwrap(),
    );
    for db in [&dba, &dbb] {
        single_machine(db, base, OnDuplicate::Error).unwrap();
    }
    let schema = input[0].schema();
    let owned: Vec<Result<RecordBatch, ArrowError>> = input.iter().cloned().map(Ok).collect();
    let o = sluice_import::ImportOptions {
        on_duplicate: job.on_duplicate,
        max_errors: job.max_errors,
        ..opts()
    };
    let stream = Box::new(RecordBatchIterator::new(owned, schema));
    let one = Import::from_arrow(SCHEMA, stream, Some("input".into()), o)
        .and_then(|i| i.run(&dba))
        .map(|_| ());
    let before = dump(&dbb);
    let many = distributed(&dbb, dir.path(), input, job).map(|_| ());
    let same = if many.is_ok() {
        dump(&dba) == dump(&dbb)
    } else {
        dump(&dbb) == before
    };
    (one, many, same)
}

/// `b` with other groups and emails (`<id>@y`) for the same ids.
fn restyle(b: &RecordBatch) -> RecordBatch {
    let ids = b.column(0).as_primitive::<arrow_array::types::Int64Type>();
    let grp: Vec<String> = ids.iter().map(|i| format!("h{}", i.unwrap() % 3)).collect();
    let email: Vec<String> = ids.iter().map(|i| format!("{}@y", i.unwrap())).collect();
    RecordBatch::try_from_iter(vec![
        ("id", Arc::clone(b.column(0))),
        ("grp", Arc::new(StringArray::from(grp)) as ArrayRef),
        ("email", Arc::new(StringArray::from(email))),
        ("n", Arc::clone(b.column(3))),
    ])
    .unwrap()
}

/// One row: `id`, group `g`, `email`, n 1.
fn one_row(id: i64, email: &str) -> RecordBatch {
    RecordBatch::try_from_iter(vec![
        ("id", Arc::new(Int64Array::from(vec![id])) as ArrayRef),
        ("grp", Arc::new(StringArray::from(vec!["g"]))),
        ("email", Arc::new(StringArray::from(vec![email]))),
        ("n", Arc::new(Int64Array::from(vec![1i64]))),
    ])
    .unwrap()
}

#[test]
fn a_table_with_rows_meets_them_as_sluice_import_does() {
    // Stored: ids 0..400 (emails unique); input: ids 0..2000 step 7 % 700 → many stored.
    let base = rows(400, i64::MAX, true);
    let input = rows(2000, 700, true);
    // first: the stored row stays; later input rows are dropped with their index entries.
    let (one, many, same) = onto_stored_rows(&base, &input, Job::new(OnDuplicate::First, 5));
    one.unwrap();
    many.unwrap();
    assert!(same, "first: the Dbs differ");
    // last: the input row replaces the stored one; the stored row's index entries that the
    // new values do not have go (other groups, other emails), and an email freed that way
    // (5@x) may be taken by another row (id 5000).
    let mut replacing: Vec<RecordBatch> = input.iter().map(restyle).collect();
    replacing.push(one_row(5000, "5@x"));
    let (one, many, same) = onto_stored_rows(&base, &replacing, Job::new(OnDuplicate::Last, 5));
    one.unwrap();
    many.unwrap();
    assert!(same, "last: the Dbs differ");
    // error: the first input row meeting a stored one is refused as such.
    let (one, many, same) = onto_stored_rows(&base, &input, Job::new(OnDuplicate::Error, 5));
    let (one, many) = (one.unwrap_err(), many.unwrap_err());
    assert!(matches!(one, ImportError::DuplicateKey { .. }), "{one}");
    assert!(
        matches!(&many, ImportError::DuplicateKey { other: OtherRow::Stored(t), .. } if t == "t")
            || matches!(
                &many,
                ImportError::DuplicateKey {
                    other: OtherRow::Input(_),
                    ..
                }
            ),
        "{many}"
    );
    assert!(same, "error: the Db changed");
    // error with room for every duplicate: the same rows in, the same count out.
    let new_only = rows(2000, 700, true);
    let job = Job {
        max_errors: 10_000,
        ..Job::new(OnDuplicate::Error, 4)
    };
    let (one, many, same) = onto_stored_rows(&base, &new_only, job);
    one.unwrap();
    many.unwrap();
    assert!(same, "error + max_errors: the Dbs differ");
    // A new row whose unique email a stored row (another id) holds.
    let clash = one_row(5000, "7@x");
    let (one, many, same) = onto_stored_rows(&base, &[clash], Job::new(OnDuplicate::Error, 2));
    assert!(matches!(
        one.unwrap_err(),
        ImportError::UniqueViolation { .. }
    ));
    let many = many.unwrap_err();
    assert!(
        matches!(&many, ImportError::UniqueViolation { other: OtherRow::Stored(pk), .. } if pk == "(7)"),
        "{many}"
    );
    assert!(same);
}

#[test]
fn max_errors_counts_every_ranges_rejects() {
    let input = rows(1000, 600, true);
    let dir = tempfile::tempdir().unwrap();
    let dba = open_db(dir.path().join("a"), true).unwrap();
    let schema = input[0].schema();
    let owned: Vec<Result<RecordBatch, ArrowError>> = input.iter().cloned().map(Ok).collect();
    let o = sluice_import::ImportOptions {
        max_errors: 1000,
        ..opts()
    };
    let stream = Box::new(RecordBatchIterator::new(owned, schema));
    let s = Import::from_arrow(SCHEMA, stream, Some("input".into()), o)
        .unwrap()
        .run(&dba)
        .unwrap();
    assert_eq!(s.rejected, 400);
    // Exactly enough room: the same Db; one less: too many, nothing visible.
    let dbb = open_db(dir.path().join("b"), true).unwrap();
    let job = Job {
        max_errors: 399,
        ..Job::new(OnDuplicate::Error, 6)
    };
    let e = distributed(&dbb, dir.path(), &input, job).unwrap_err();
    assert!(
        matches!(&e, ImportError::TooManyErrors { count, .. } if *count == 400),
        "{e}"
    );
    assert_eq!(dump(&dbb), Vec::new());
    let (plan, encoded, bad) = plan_and_encode(
        &dbb,
        &input,
        Job {
            max_errors: 400,
            ..job
        },
    )
    .unwrap();
    let work = dir.path().join("work");
    let manifests = build_all(&plan, &encoded, &work, job, Vec::new()).unwrap();
    let rejects = tempfile::NamedTempFile::new().unwrap();
    let dups: Vec<RowReject> = manifests.iter().flat_map(|m| m.rejects.clone()).collect();
    // One less room: the tally fails, and the file holds the rows up to the one that went over.
    let e = tally_rejects(bad.clone(), dups.clone(), 9, Some(rejects.path())).unwrap_err();
    assert!(
        matches!(&e, ImportError::TooManyErrors { count, .. } if *count == 400),
        "{e}"
    );
    let text = std::fs::read_to_string(rejects.path()).unwrap();
    assert_eq!(text.lines().filter(|l| l.starts_with("# ")).count(), 10);
    assert_eq!(
        tally_rejects(bad, dups, 400, Some(rejects.path())).unwrap(),
        400
    );
    commit(&dbb, &plan, manifests, &work).unwrap();
    assert_eq!(dump(&dba), dump(&dbb));
    let text = std::fs::read_to_string(rejects.path()).unwrap();
    assert_eq!(
        text.lines().filter(|l| l.starts_with("# input:")).count(),
        400
    );
    assert!(text.contains("duplicate primary key"), "{text}");
}

#[test]
fn a_rerun_reuses_the_finished_ranges_and_refuses_changed_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let (dba, dbb) = (
        open_db(dir.path().join("a"), true).unwrap(),
        open_db(dir.path().join("b"), true).unwrap(),
    );
    let input = rows(2000, 700, true);
    single_machine(&dba, &input, OnDuplicate::First).unwrap();
    let job = Job::new(OnDuplicate::First, 4);
    let (plan, encoded, _) = plan_and_encode(&dbb, &input, job).unwrap();
    let work = dir.path().join("work");
    let inputs = vec!["input: 2000 rows".to_string()];
    let f = Fingerprint::new(&dbb, &plan, SCHEMA, inputs.clone(), "{}").unwrap();
    let first = begin_job(&work, &plan, &f).unwrap();
    assert!(first.plan.is_none() && first.done.is_empty() && !first.shuffled);
    save_plan(&work, &plan).unwrap();
    mark_shuffled(&work, &plan.job_id).unwrap();
    let built = build_all(&plan, &encoded, &work, job, Vec::new()).unwrap();
    // The coordinator dies before its commit; one record is lost, one torn.
    let done = job_dir(&work, "job1").join("done");
    std::fs::remove_file(done.join("s0-r1.json")).unwrap();
    let torn = done.join("s1-r0.json");
    let text = std::fs::read_to_string(&torn).unwrap();
    std::fs::write(&torn, &text[..text.len() / 2]).unwrap();
    // The same job again: its cuts, its shuffle, every intact range.
    let again = begin_job(&work, &plan, &f).unwrap();
    assert_eq!(again.plan.as_ref().map(|p| &p.cuts), Some(&plan.cuts));
    assert!(again.shuffled);
    assert_eq!(again.done.len(), built.len() - 2);
    // Changed inputs, options or Db contents: refused, naming what changed.
    let mut changed = f.clone();
    changed.inputs[0] = "input: 2001 rows".into();
    let e = begin_job(&work, &plan, &changed).unwrap_err();
    assert!(e.to_string().contains("input \"input: 2000 rows\""), "{e}");
    let other_options = Fingerprint::new(&dbb, &plan, SCHEMA, inputs, "{\"ranges\": 5}").unwrap();
    let e = begin_job(&work, &plan, &other_options).unwrap_err();
    assert!(e.to_string().contains("the options"), "{e}");
    // Only the two lost ranges are built again; the result is the single-machine import's.
    let all = build_all(&plan, &encoded, &work, job, again.done).unwrap();
    assert_eq!(all.len(), built.len());
    commit(&dbb, &plan, all, &work).unwrap();
    assert_eq!(dump(&dba), dump(&dbb));
    assert!(!job_dir(&work, "job1").exists());
    assert!(list_jobs(&work).is_empty());
}

#[test]
fn exported_range_sets_ingest_alone() {
    let dir = tempfile::tempdir().unwrap();
    let (dba, dbb) = (
        open_db(dir.path().join("a"), true).unwrap(),
        open_db(dir.path().join("b"), true).unwrap(),
    );
    let input = rows(2000, i64::MAX, true);
    single_machine(&dba, &input, OnDuplicate::Error).unwrap();
    let job = Job::new(OnDuplicate::Error, 4);
    let (plan, encoded, _) = plan_and_encode(&dbb, &input, job).unwrap();
    let work = dir.path().join("work");
    let manifests = build_all(&plan, &encoded, &work, job, Vec::new()).unwrap();
    let out = dir.path().join("out");
    let ranges = export_ranges(&plan, manifests, &work, &out).unwrap();
    assert!(!job_dir(&work, "job1").exists());
    assert!(out.join("ranges.json").exists());
    assert!(ranges.ranges.len() >= 4 + 2 * 2, "{}", ranges.ranges.len());
    let unhex = |h: &str| -> Vec<u8> {
        (0..h.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap())
            .collect()
    };
    let all = dump(&dba);
    for set in ranges.ranges.iter().filter(|r| !r.files.is_empty()) {
        // One range's set alone in a fresh Db: exactly that key range of the single Db.
        let db = open_db(
            dir.path().join(format!("r{}-{}", set.slot, set.range)),
            true,
        )
        .unwrap();
        let paths: Vec<_> = set.files.iter().map(|f| out.join(&f.path)).collect();
        for f in &set.files {
            let bytes = std::fs::read(out.join(&f.path)).unwrap();
            assert_eq!(crc32c::crc32c(&bytes), f.crc32c);
        }
        db.ingest(&paths, &sluice::IngestOptions::default())
            .unwrap();
        let prefix = &unhex(&set.files[0].smallest)[..8];
        let lower = set.lower.as_deref().map(unhex);
        let upper = set.upper.as_deref().map(unhex);
        let expected: Vec<_> = all
            .iter()
            .filter(|(k, _)| k.starts_with(prefix))
            .filter(|(k, _)| lower.as_ref().is_none_or(|l| k >= l))
            .filter(|(k, _)| upper.as_ref().is_none_or(|u| k < u))
            .cloned()
            .collect();
        assert_eq!(dump(&db), expected, "slot {} range {}", set.slot, set.range);
    }
    // Every set and the catalog entry together: the single Db.
    let db = open_db(dir.path().join("whole"), true).unwrap();
    let mut paths: Vec<_> = ranges
        .ranges
        .iter()
        .flat_map(|r| r.files.iter().map(|f| out.join(&f.path)))
        .collect();
    paths.push(out.join(ranges.catalog.as_deref().unwrap()));
    db.ingest(&paths, &sluice::IngestOptions::default())
        .unwrap();
    assert_eq!(dump(&db), all);
}

/// Index `k` (0-based) of `n` drawn with probability ∝ 1/(k+1)^1.1, from `x` in [0, 1).
fn zipf(cdf: &[f64], x: f64) -> usize {
    cdf.partition_point(|&c| c < x).min(cdf.len() - 1)
}

fn zipf_cdf(n: usize) -> Vec<f64> {
    let w: Vec<f64> = (1..=n).map(|k| 1.0 / (k as f64).powf(1.1)).collect();
    let total: f64 = w.iter().sum();
    w.iter()
        .scan(0.0, |acc, x| {
            *acc += x / total;
            Some(*acc)
        })
        .collect()
}

#[test]
fn zipf_skewed_keys_still_cut_into_even_ranges() {
    // Primary key (uid, seq) with uid Zipf-skewed over 1000 users (the hottest has ~1/7 of
    // the rows); an index over a Zipf-skewed tag (the hottest of 50 values ~ 1/4).
    const ZSCHEMA: &str = "CREATE TABLE z (uid BIGINT, seq BIGINT, tag TEXT, \
        PRIMARY KEY (uid, seq)); CREATE INDEX by_tag ON z (tag);";
    let (users, tags) = (zipf_cdf(1000), zipf_cdf(50));
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let n = 20_000usize;
    let mut batches = Vec::new();
    for start in (0..n).step_by(1000) {
        let uid: Vec<i64> = (0..1000).map(|_| zipf(&users, next()) as i64).collect();
        let tag: Vec<String> = (0..1000)
            .map(|_| format!("t{}", zipf(&tags, next())))
            .collect();
        let seq: Vec<i64> = (start..start + 1000).map(|s| s as i64).collect();
        batches.push(
            RecordBatch::try_from_iter(vec![
                ("uid", Arc::new(Int64Array::from(uid)) as ArrayRef),
                ("seq", Arc::new(Int64Array::from(seq))),
                ("tag", Arc::new(StringArray::from(tag))),
            ])
            .unwrap(),
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path().join("db"), true).unwrap();
    // Every 16th key sampled, as sluice.distributed does by default.
    let job = Job::new(OnDuplicate::Error, 8);
    let (plan, encoded, _) = plan_and_encode_with(&db, ZSCHEMA, 16, &batches, job).unwrap();
    let work = dir.path().join("work");
    let manifests = build_all(&plan, &encoded, &work, job, Vec::new()).unwrap();
    for slot in 0..plan.slots() as u32 {
        let bytes: Vec<u64> = manifests
            .iter()
            .filter(|m| m.slot == slot)
            .map(|m| m.files.iter().map(|f| f.bytes).sum())
            .collect();
        let mean = bytes.iter().sum::<u64>() as f64 / bytes.len() as f64;
        let max = *bytes.iter().max().unwrap() as f64;
        assert_eq!(bytes.len(), 8, "slot {slot}: {bytes:?}");
        eprintln!("slot {slot}: largest range / mean = {:.2}", max / mean);
        assert!(
            max <= 1.5 * mean,
            "slot {slot}: {bytes:?} (max / mean {:.2})",
            max / mean
        );
    }
}

/// The test table in the columnar layout.
fn columnar_schema() -> String {
    SCHEMA.replacen("n BIGINT);", "n BIGINT) WITH (layout = 'columnar');", 1)
}

/// Every way of reading table t: by primary key, by each index, as JSON, one column alone
/// (read from its chunks only), and three point reads by primary key.
fn readings(db: &sluice::Db) -> Vec<Vec<String>> {
    let mut r = sluice_import::TableReader::open(db, Some("t")).unwrap();
    let gets = [0i64, 5, 699]
        .iter()
        .map(|id| {
            r.get(&[id.to_string()])
                .unwrap()
                .map(|row| r.format_row(&row, sluice_import::OutputFormat::Csv))
                .unwrap_or_default()
        })
        .collect();
    r.set_columns(Some(&["n".to_string()])).unwrap();
    let mut n = Vec::new();
    r.scan(None, None, None, None, |row| {
        n.push(r.format_row(row, sluice_import::OutputFormat::Csv));
        Ok(())
    })
    .unwrap();
    vec![
        common::rows(db, "t", None),
        common::rows(db, "t", Some("by_grp")),
        common::rows(db, "t", Some("by_email")),
        json_rows(db, "t"),
        n,
        gets,
    ]
}

/// The row groups of table t's column 0 (every group has a chunk of it).
fn groups_of(db: &sluice::Db) -> Vec<u64> {
    let t = sluice_import::TableReader::open(db, Some("t"))
        .unwrap()
        .table;
    let mut prefix = t.id.to_be_bytes().to_vec();
    prefix.extend(sluice_import::schema::COLUMN_INDEX_BASE.to_be_bytes());
    dump(db)
        .iter()
        .filter(|(k, _)| k.starts_with(&prefix))
        .filter_map(|(k, _)| sluice_import::chunk::chunk_group(k))
        .collect()
}

#[test]
fn a_columnar_table_reads_back_as_the_single_machine_import() {
    use sluice_import::distributed::groups::RANGE_GROUP_IDS;
    let schema = columnar_schema();
    for (policy, modulo, ranges) in POLICIES {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        let (dba, dbb) = (open_db(&a, true).unwrap(), open_db(&b, true).unwrap());
        let input = rows(2000, modulo, true);
        single_machine_with(&dba, &schema, &input, policy).unwrap();
        let job = Job {
            extra_attempt: true,
            ..Job::new(policy, ranges)
        };
        let placed = distributed_with(&dbb, dir.path(), &schema, &input, job).unwrap();
        assert_eq!(readings(&dba), readings(&dbb), "{policy:?}");
        let t = sluice_import::TableReader::open(&dbb, Some("t"))
            .unwrap()
            .table;
        assert_eq!(t.layout, sluice_import::Layout::Columnar);
        // Each range numbered its groups in its own slice of the job's block.
        let slices: std::collections::BTreeSet<u64> = groups_of(&dbb)
            .iter()
            .map(|g| g / RANGE_GROUP_IDS)
            .collect();
        assert!(slices.len() >= 2, "{policy:?}: slices {slices:?}");
        assert!(placed.iter().all(|(_, f)| f.level == Some(6)), "{placed:?}");
        assert!(!dir.path().join("work").join("sluice-job-job1").exists());
    }
}

/// Stored rows 0..400 of a columnar table, then `input` into one Db by `sluice import` and
/// into the other distributed: every reading the same (the storage-order scan of one column
/// skips the positions marked deleted), and again after both rewrite their row groups.
fn columnar_onto_stored_rows(input: &[RecordBatch], job: Job) -> (RewriteCounts, RewriteCounts) {
    let schema = columnar_schema();
    let base = rows(400, i64::MAX, true);
    let dir = tempfile::tempdir().unwrap();
    let (dba, dbb) = (
        open_db(dir.path().join("a"), true).unwrap(),
        open_db(dir.path().join("b"), true).unwrap(),
    );
    for db in [&dba, &dbb] {
        single_machine_with(db, &schema, &base, OnDuplicate::Error).unwrap();
    }
    let o = sluice_import::ImportOptions {
        on_duplicate: job.on_duplicate,
        max_errors: job.max_errors,
        ..opts()
    };
    let owned: Vec<Result<RecordBatch, ArrowError>> = input.iter().cloned().map(Ok).collect();
    let stream = Box::new(RecordBatchIterator::new(owned, input[0].schema()));
    Import::from_arrow(&schema, stream, Some("input".into()), o)
        .unwrap()
        .run(&dba)
        .unwrap();
    distributed_with(&dbb, dir.path(), &schema, input, job).unwrap();
    assert_eq!(readings(&dba), readings(&dbb), "{:?}", job.on_duplicate);
    let rewrite = |db: &sluice::Db| {
        let s = sluice_import::TableReader::open(db, Some("t"))
            .unwrap()
            .rewrite_groups(f64::MIN_POSITIVE, false)
            .unwrap();
        (s.rows_moved, s.rows_dropped)
    };
    let counts = (rewrite(&dba), rewrite(&dbb));
    assert_eq!(
        readings(&dba),
        readings(&dbb),
        "{:?}, rewritten",
        job.on_duplicate
    );
    counts
}

/// Rows moved and dropped by a group rewrite.
type RewriteCounts = (u64, u64);

#[test]
fn a_columnar_table_with_rows_meets_them_as_sluice_import_does() {
    let input = rows(2000, 700, true);
    for job in [
        Job::new(OnDuplicate::First, 5),
        Job {
            max_errors: 10_000,
            ..Job::new(OnDuplicate::Error, 4)
        },
    ] {
        let (a, b) = columnar_onto_stored_rows(&input, job);
        assert_eq!((a, b), ((0, 0), (0, 0)), "nothing replaced");
    }
    // last: each input row replaces the stored one of its id (other groups and emails), whose
    // position is marked deleted and whose index entries the new values lack are deleted; an
    // email freed that way (5@x) may be taken by another row (id 5000).
    let mut replacing: Vec<RecordBatch> = input.iter().map(restyle).collect();
    replacing.push(one_row(5000, "5@x"));
    let (a, b) = columnar_onto_stored_rows(&replacing, Job::new(OnDuplicate::Last, 3));
    // Ids 0..700 of the input meet the 400 stored rows: all 400 replaced, their group all
    // dead. `sluice import` rewrote it when done (`rewrite_dead`); the job left its 400
    // deletion marks for the rewrite.
    assert_eq!(a, (0, 0), "{a:?}");
    assert_eq!(b, (0, 400), "{b:?}");
}

#[test]
fn a_columnar_commit_refuses_group_ids_taken_since_its_plan() {
    let schema = columnar_schema();
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path().join("db"), true).unwrap();
    single_machine_with(&db, &schema, &rows(300, i64::MAX, true), OnDuplicate::Error).unwrap();
    let input: Vec<RecordBatch> = (1000..1400)
        .map(|i| one_row(i, &format!("{i}@y")))
        .collect();
    let job = Job::new(OnDuplicate::Error, 3);
    let work = dir.path().join("work");
    // A plan whose block the stored groups already use (a stale copy under another job id):
    // refused at commit, nothing changed, its job directory gone.
    let (plan, encoded, _) = plan_and_encode_with(&db, &schema, 3, &input, job).unwrap();
    let mut stale = plan.clone();
    stale.group_base = 0;
    stale.job_id = "stale".into();
    let manifests = build_all(&stale, &encoded, &work, job, Vec::new()).unwrap();
    let before = dump(&db);
    let e = commit(&db, &stale, manifests, &work).unwrap_err();
    assert!(e.to_string().contains("taken by another import"), "{e}");
    assert_eq!(dump(&db), before);
    assert!(!job_dir(&work, "stale").exists());
    // The plan holds its block: a single-machine import meanwhile numbers its groups past it.
    // It changed the table the job checked its keys against, so the job's commit is refused,
    // the Db as the import left it.
    let meanwhile = one_row(5000, "5000@z");
    single_machine_with(&db, &schema, &[meanwhile], OnDuplicate::Error).unwrap();
    let past = plan.group_base + sluice_import::chunk::IDS_PER_IMPORT;
    assert!(
        groups_of(&db).iter().any(|&g| g >= past),
        "{:?}",
        groups_of(&db)
    );
    let manifests = build_all(&plan, &encoded, &work, job, Vec::new()).unwrap();
    let before = dump(&db);
    let e = commit(&db, &plan, manifests, &work).unwrap_err();
    assert!(e.to_string().contains("was changed"), "{e}");
    assert_eq!(dump(&db), before);
    // Run again (planned afresh), the job commits beside the import's rows.
    let (plan, encoded, _) = plan_and_encode_with(&db, &schema, 3, &input, job).unwrap();
    let manifests = build_all(&plan, &encoded, &work, job, Vec::new()).unwrap();
    commit(&db, &plan, manifests, &work).unwrap();
    let all = common::rows(&db, "t", None);
    assert_eq!(all.len(), 300 + 400 + 1);
    assert!(all.iter().any(|r| r.starts_with("5000,")));
    let groups = groups_of(&db);
    let unique: std::collections::BTreeSet<_> = groups.iter().collect();
    assert_eq!(
        unique.len(),
        groups.len(),
        "a group id used twice: {groups:?}"
    );
    // Planned twice in one process (a rerun of the job): the second plan gets the block
    // back, so a plan saved by the first run still commits.
    let first = plan_and_encode_with(&db, &schema, 3, &[one_row(6000, "6000@q")], job).unwrap();
    let second = plan_and_encode_with(&db, &schema, 3, &[one_row(6000, "6000@q")], job).unwrap();
    assert_eq!(first.0.group_base, second.0.group_base);
    let manifests = build_all(&first.0, &first.1, &work, job, Vec::new()).unwrap();
    commit(&db, &first.0, manifests, &work).unwrap();
    assert!(common::rows(&db, "t", None)
        .iter()
        .any(|r| r.starts_with("6000,")));
    // Its ranges cannot be exported (chunks are keyed by group, not by primary key).
    let later = [one_row(7000, "7000@q")];
    let (plan, encoded, _) = plan_and_encode_with(&db, &schema, 3, &later, job).unwrap();
    let manifests = build_all(&plan, &encoded, &work, job, Vec::new()).unwrap();
    let e = export_ranges(&plan, manifests, &work, &dir.path().join("out")).unwrap_err();
    assert!(e.to_string().contains("cannot be exported"), "{e}");
    // The cells layout is refused when planned.
    let cells = SCHEMA.replacen("n BIGINT);", "n BIGINT) WITH (layout = 'cells');", 1);
    let fresh = open_db(dir.path().join("fresh"), true).unwrap();
    let e = JobPlan::new(&fresh, &cells, None, OnDuplicate::Error, "c", vec![]).unwrap_err();
    assert!(e.to_string().contains("cells layout"), "{e}");
}

#[test]
fn a_compaction_that_drops_the_newest_entries_is_no_change() {
    // A row deleted before the plan, its deletion then dropped at the bottom level by a
    // compaction: the table's newest seqno falls, which is no write; the job commits.
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path().join("db"), true).unwrap();
    single_machine(&db, &rows(300, i64::MAX, true), OnDuplicate::Error).unwrap();
    let r = sluice_import::TableReader::open(&db, Some("t")).unwrap();
    assert!(r.delete(&["5".to_string()], true).unwrap());
    let id = r.table.id;
    let newest = |db: &sluice::Db| {
        db.max_seqno_in_range(&id.to_be_bytes(), &(id + 1).to_be_bytes())
            .unwrap()
    };
    let job = Job::new(OnDuplicate::Error, 3);
    let input: Vec<RecordBatch> = (1000..1100)
        .map(|i| one_row(i, &format!("{i}@c")))
        .collect();
    let (plan, encoded, _) = plan_and_encode(&db, &input, job).unwrap();
    let before = newest(&db);
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    // The delete's batch put the table's deletes key first (its lowest sequence number),
    // which stays; its tombstones after it are gone.
    assert!(newest(&db) < before, "the compaction kept the deletion");
    let work = dir.path().join("work");
    let manifests = build_all(&plan, &encoded, &work, job, Vec::new()).unwrap();
    commit(&db, &plan, manifests, &work).unwrap();
    assert_eq!(common::rows(&db, "t", None).len(), 299 + 100);
}
