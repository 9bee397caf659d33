//! Ingests: disjoint files, overlapping files (`allow_overlap`), tiny files applied as batches
//! (`small_file_threshold`), and `ingest_behind` of reserved `z` keys, each key once, ever.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use rand::Rng;
use sluice::{Error, IngestOptions};

use crate::keys::{make_value, Key};
use crate::oracle::{Kind, Status};
use crate::report::Op;
use crate::storage::sst_options;

use super::Worker;

impl Worker {
    /// Builds the files of an ingest over a random range: disjoint chunks (`Ingest`),
    /// overlapping random subsets (`IngestOverlap`), or either with some tiny files applied as
    /// batches (`IngestSmall`). A key in several overlapping files is visible only from the
    /// last one (later files are newer); its earlier copies are `Hidden`.
    fn ingest_plan(&mut self, op: Op) -> (Vec<Vec<(u32, bool)>>, bool) {
        let n = self.keys();
        let len = self.rng.gen_range(4..=80).min(n);
        let a = self.rng.gen_range(0..=n - len);
        let overlap = op == Op::IngestOverlap || (op == Op::IngestSmall && self.rng.gen_bool(0.4));
        let nfiles = match op {
            Op::Ingest => self.rng.gen_range(1..=3),
            _ => self.rng.gen_range(2..=4),
        };
        let mut files: Vec<Vec<(u32, bool)>> = vec![Vec::new(); nfiles];
        if overlap {
            for f in files.iter_mut() {
                for i in a..a + len {
                    if self.rng.gen_bool(0.45) {
                        f.push((i, self.rng.gen_bool(0.9)));
                    }
                }
            }
        } else {
            let mut cuts: Vec<u32> = (1..nfiles)
                .map(|_| self.rng.gen_range(a..a + len))
                .collect();
            cuts.sort_unstable();
            for i in a..a + len {
                if self.rng.gen_bool(0.7) {
                    let f = cuts.iter().filter(|&&c| c <= i).count();
                    files[f].push((i, self.rng.gen_bool(0.9)));
                }
            }
        }
        if op == Op::IngestSmall {
            // One or two tiny files (1–2 keys) anywhere in the list, the rest as they are.
            for _ in 0..self.rng.gen_range(1..=2) {
                let at = self.rng.gen_range(0..files.len());
                let keep = self.rng.gen_range(1..=2).min(files[at].len());
                files[at].truncate(keep);
            }
        }
        files.retain(|f| !f.is_empty());
        if !overlap && self.rng.gen_bool(0.5) {
            // Order of the file list should not matter for disjoint files.
            files.reverse();
        }
        (files, overlap)
    }

    pub(super) fn ingest(&mut self, op: Op) {
        let (files, overlap) = self.ingest_plan(op);
        if files.is_empty() {
            return;
        }
        let mut writes = Vec::new();
        let mut puts = Vec::new();
        for (fi, f) in files.iter().enumerate() {
            for &(i, put) in f {
                let later = files[fi + 1..].iter().any(|g| g.iter().any(|e| e.0 == i));
                let kind = match (later, put) {
                    (true, _) => Kind::Hidden,
                    (false, true) => Kind::Put,
                    (false, false) => Kind::Delete,
                };
                writes.push((Key::K(i), kind));
                puts.push(put);
            }
        }
        let lo = writes
            .iter()
            .map(|w| k_index(w.0))
            .min()
            .expect("non-empty");
        let hi = writes
            .iter()
            .map(|w| k_index(w.0))
            .max()
            .expect("non-empty");
        let range: Vec<u32> = (lo..=hi).collect();
        let ctx = Arc::clone(&self.ctx);
        let _locks = ctx.oracle.lock_keys(&range);
        let a = self.begin(op, &writes);
        // Build the files from the assigned versions.
        let mut paths = Vec::new();
        let mut sizes = Vec::new();
        let mut at = 0;
        for f in &files {
            let entries: Vec<(Vec<u8>, Option<Vec<u8>>)> = (at..at + f.len())
                .map(|j| {
                    let key = a[j].0.bytes();
                    let val = puts[j].then(|| make_value(&key, a[j].1));
                    (key, val)
                })
                .collect();
            at += f.len();
            match ctx.storage.write_sst(&entries, sst_options()) {
                Ok((p, size)) => {
                    paths.push(p);
                    sizes.push(size);
                }
                Err(e) => {
                    for p in &paths {
                        ctx.storage.remove_sst(p);
                    }
                    for &(k, v, _) in &a {
                        let idx = ctx.oracle.idx(k).expect("key");
                        ctx.oracle.finish(idx, v, Status::NotApplied);
                    }
                    if !self.tolerate_errors() {
                        self.report(
                            op.name(),
                            None,
                            e,
                            "harness could not write an external file".into(),
                        );
                    }
                    return;
                }
            }
        }
        let small_file_threshold = if op == Op::IngestSmall {
            // Above the tiny files, below the others where possible.
            let tiny = sizes
                .iter()
                .zip(&files)
                .filter(|(_, f)| f.len() <= 2)
                .map(|(s, _)| *s)
                .max()
                .unwrap_or(0);
            tiny + 1
        } else {
            0
        };
        let opts = IngestOptions {
            allow_overlap: overlap || self.rng.gen_bool(0.3),
            small_file_threshold,
            link_files: self.rng.gen_bool(0.5),
            ..IngestOptions::default()
        };
        let jid = self.journal.start(op, false, &a);
        let r = ctx.db.ingest(&paths, &opts).map(|_| ());
        for p in &paths {
            ctx.storage.remove_sst(p);
        }
        self.finish(op, jid, &a, &r, false);
    }

    /// Ingests a fresh block of reserved `z` keys behind everything (each key once, ever).
    pub(super) fn ingest_behind(&mut self) {
        let n = self.rng.gen_range(2..=12u32);
        let o = Arc::clone(&self.ctx.oracle);
        let z0 = o.z_next.fetch_add(n, Ordering::SeqCst);
        if z0 + n > o.zcap() {
            return;
        }
        let writes: Vec<(Key, Kind)> = (z0..z0 + n).map(|z| (Key::Z(z), Kind::Put)).collect();
        let a = self.begin(Op::IngestBehind, &writes);
        let entries: Vec<(Vec<u8>, Option<Vec<u8>>)> = a
            .iter()
            .map(|&(k, v, _)| {
                let key = k.bytes();
                let val = make_value(&key, v);
                (key, Some(val))
            })
            .collect();
        let (path, _) = match self.ctx.storage.write_sst(&entries, sst_options()) {
            Ok(p) => p,
            Err(e) => {
                for &(k, v, _) in &a {
                    o.finish(o.idx(k).expect("key"), v, Status::NotApplied);
                }
                if !self.tolerate_errors() {
                    self.report("ingest_behind", None, e, "harness could not write".into());
                }
                return;
            }
        };
        let opts = IngestOptions {
            ingest_behind: true,
            link_files: self.rng.gen_bool(0.5),
            ..IngestOptions::default()
        };
        let jid = self.journal.start(Op::IngestBehind, false, &a);
        let r = self.ctx.db.ingest(&[&path], &opts).map(|_| ());
        self.ctx.storage.remove_sst(&path);
        // The engine may refuse (bottom level busy in the range): then nothing applied.
        let rejected = matches!(&r, Err(Error::InvalidArgument(m)) if m.contains("bottom level"));
        self.finish(Op::IngestBehind, jid, &a, &r, rejected);
    }
}

fn k_index(k: Key) -> u32 {
    match k {
        Key::K(i) => i,
        _ => unreachable!("main-space key expected"),
    }
}
