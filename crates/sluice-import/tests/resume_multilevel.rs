//! Resumes of imports whose merges run in passes (a multi-level merge): the process's file
//! descriptors are cut so a merge reads at most 10 runs at once, and each index spills more.
//! Interrupted after every checkpoint (the passes' one naming the merged runs, the final
//! files' ones) and resumed, the Db, counts, rejects and files equal an uninterrupted
//! import's. The only test of its binary: the limit is the process's.

mod common;
#[path = "common/resume_cases.rs"]
mod resume_cases;

use common::*;
use resume_cases::*;
use sluice_import::{ImportOptions, OnDuplicate};

#[test]
fn resume_after_every_checkpoint_of_a_multi_level_merge() {
    // 80 descriptors: (80 - 40) / 2 = 20 for runs, 10 per merge thread (see
    // `merge::open_files_for_runs` and `merge_fan_in`).
    let nofile = rustix::process::Resource::Nofile;
    let lim = rustix::process::Rlimit {
        current: Some(80),
        maximum: rustix::process::getrlimit(nofile).maximum,
    };
    rustix::process::setrlimit(nofile, lim).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.csv", &rows_csv("a", 900, 4, false));
    // A spill at every checkpoint, one every 2 KiB of input: about 15 runs an index.
    let o = ImportOptions {
        checkpoint_bytes: 2048,
        target_file_size: 8 << 10,
        ..ck_opts(dir.path())
    };
    let mut stages = Vec::new();
    // Two merge threads: the primary and `by_grp` merge in parallel (row layout), the
    // unique index and a columnar table's rows on one thread.
    for (name, layout, on_duplicate) in [
        ("ml-error", sluice_import::Layout::Row, OnDuplicate::Error),
        (
            "ml-last-col",
            sluice_import::Layout::Cells,
            OnDuplicate::Last,
        ),
    ] {
        let c = Case {
            name,
            o: ImportOptions {
                on_duplicate,
                threads: 2,
                layout: Some(layout),
                max_errors: 100_000,
                rejects: Some(dir.path().join("unused")),
                ..o.clone()
            },
            files: vec![a.clone()],
            existing: None,
        };
        let (s, reference) = every_interruption_matches_with(dir.path(), &c);
        assert!(reference.runs_premerged > 0, "{name}: no multi-level merge");
        stages.extend(s);
    }
    assert!(
        stages.iter().filter(|s| s.starts_with("Merge+")).count() > 10,
        "{stages:?}"
    );
}
