//! The interrupted-and-resumed import cases of `resume.rs` and `resume_multilevel.rs`: an
//! import interrupted after each of its checkpoints in turn, resumed, against an
//! uninterrupted one.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use crate::common::*;
use sluice_import::{open_db, ImportError, ImportOptions, Summary};

pub const SCHEMA: &str = "CREATE TABLE t (id INT PRIMARY KEY, grp INT, email TEXT, note TEXT); \
                      CREATE INDEX by_grp ON t (grp); \
                      CREATE UNIQUE INDEX by_email ON t (email);";

/// `n` rows in a scrambled order (or sorted), every `dup_every`th followed by a row with
/// another id taken (with other values); emails are unique, `tag` tells the files apart.
pub fn rows_csv(tag: &str, n: u64, dup_every: u64, sorted: bool) -> Vec<u8> {
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
pub fn ck_opts(tmp: &Path) -> ImportOptions {
    ImportOptions {
        chunk_size: Some(512),
        checkpoint_bytes: 4096,
        tmp_dir: Some(tmp.to_path_buf()),
        ..opts()
    }
}

/// The checkpoint directory in `tmp`.
pub fn ck_dir(tmp: &Path) -> PathBuf {
    std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .find(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(sluice_import::pipeline::RESUME_PREFIX)
        })
        .expect("a checkpoint directory")
        .path()
}

/// The stage the checkpoint in `tmp` records; inside an index's merge with final files
/// finished, `Merge+files` (`Merge+parallel-files` for a parallel merge).
pub fn stage_of(tmp: &Path) -> String {
    let text = std::fs::read_to_string(ck_dir(tmp).join("CHECKPOINT")).unwrap();
    let at = text.find("\"stage\":\"").unwrap() + 9;
    let stage = text[at..].split('"').next().unwrap().to_string();
    match merging_file(&text) {
        Some(_) if text.contains("\"merging\":{\"parallel\":true") => {
            format!("{stage}+parallel-files")
        }
        Some(_) => format!("{stage}+files"),
        None => stage,
    }
}

/// The first final file of the index merging that the manifest `text` names.
pub fn merging_file(text: &str) -> Option<String> {
    let at = text.find("\"merging\":{")?;
    let rest = &text[at..];
    let f = rest.find("\"finals\":[{\"name\":\"")? + 19;
    Some(rest[f..].split('"').next()?.to_string())
}

pub struct Case {
    pub name: &'static str,
    pub o: ImportOptions,
    pub files: Vec<PathBuf>,
    /// Rows in the table before the import.
    pub existing: Option<PathBuf>,
}

pub type Outcome = (Vec<(Vec<u8>, Vec<u8>)>, Summary, Vec<u8>, Option<String>);

/// The Db, summary and rejects of one import (after `c.existing`'s rows, when given),
/// interrupted after checkpoint `interrupt` (then resumed) or not; `None` when the import
/// wrote fewer checkpoints and finished.
pub fn run_case(dir: &Path, c: &Case, interrupt: Option<u64>) -> Option<Outcome> {
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

/// An import's files as `(index, level, entries, bytes)`, sorted.
pub fn files_of(s: &Summary) -> Vec<(String, Option<usize>, u64, u64)> {
    let mut v: Vec<_> = s
        .files
        .iter()
        .map(|f| (f.index.clone(), f.level, f.entries, f.bytes))
        .collect();
    v.sort();
    v
}

/// `c` interrupted after each of its checkpoints in turn, then resumed, against an
/// uninterrupted run; the stages interrupted.
pub fn every_interruption_matches(dir: &Path, c: &Case) -> Vec<String> {
    every_interruption_matches_with(dir, c).0
}

/// [`every_interruption_matches`], with the uninterrupted import's summary.
pub fn every_interruption_matches_with(dir: &Path, c: &Case) -> (Vec<String>, Summary) {
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
        // The same files (cut at the same entries, of the same sizes): nothing emitted twice
        // or lost at a checkpoint's boundary.
        assert_eq!(files_of(&gs), files_of(&ws), "{}: {n}: files", c.name);
        stages.push(stage.unwrap());
    }
    (stages, ws)
}
