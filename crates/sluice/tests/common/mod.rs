//! Helpers shared by the integration tests (each test file includes this module).
#![allow(dead_code)] // each test file uses its own subset

use std::path::{Path, PathBuf};
use std::sync::Arc;

use sluice::fs::{FileSystem, MemFs};
use sluice::key::{make_internal_key, ValueKind};
use sluice::sst::table_builder::TableIdentity;
use sluice::{Db, Options, ReadOptions, Snapshot, TableBuilder, TableOptions, WriteOptions};

/// Default options on `fs`.
pub fn mem_opts(fs: &MemFs) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        ..Options::default()
    }
}

/// Tiny sizes on `fs`: memtables, tables and levels fill within a few hundred writes, so
/// flushes and compactions keep running.
pub fn tiny_opts(fs: &MemFs) -> Options {
    Options {
        write_buffer_size: 4 << 10,
        l0_compaction_trigger: 2,
        max_bytes_for_level_base: 16 << 10,
        target_file_size: 4 << 10,
        block_size: 256,
        fs: Arc::new(fs.clone()),
        ..Options::default()
    }
}

/// A synced write.
pub fn sync() -> WriteOptions<'static> {
    WriteOptions {
        sync: true,
        disable_wal: false,
        ..Default::default()
    }
}

/// The value of `key` as of `snap`.
pub fn get_at(db: &Db, snap: &Snapshot, key: &[u8]) -> Option<Vec<u8>> {
    let opts = ReadOptions {
        snapshot: Some(snap),
        ..Default::default()
    };
    db.get_opt(key, &opts).unwrap()
}

/// Bytes of the table files in the real directory `dir`.
pub fn table_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".sst"))
        .map(|e| e.metadata().unwrap().len())
        .sum()
}

/// Bytes of the tables the current version holds.
pub fn live_bytes(db: &Db) -> u64 {
    db.metrics().levels.iter().map(|l| l.bytes).sum()
}

/// An external SST on `fs` at `/src/<name>` (seqno 0, durable) with `puts` (key, value) and
/// range deletions `[start, end)`.
pub fn external_sst(
    fs: &MemFs,
    name: &str,
    puts: &[(&str, &str)],
    range_dels: &[(&str, &str)],
) -> PathBuf {
    let p = Path::new("/src").join(name);
    fs.write_raw(&p, sst_bytes(puts, range_dels));
    fs.sync_dir(Path::new("/src")).unwrap();
    p
}

/// The bytes of an external SST (seqno 0) with `puts` (key, value) and range deletions
/// `[start, end)`.
pub fn sst_bytes(puts: &[(&str, &str)], range_dels: &[(&str, &str)]) -> Vec<u8> {
    let identity = TableIdentity {
        external_sst: true,
        ..Default::default()
    };
    let mut b = TableBuilder::new(Vec::new(), TableOptions::default(), identity).unwrap();
    for (k, v) in puts {
        b.add(
            &make_internal_key(k.as_bytes(), 0, ValueKind::Value),
            v.as_bytes(),
        )
        .unwrap();
    }
    for (s, e) in range_dels {
        b.add_range_deletion(s.as_bytes(), e.as_bytes(), 0).unwrap();
    }
    b.finish().unwrap().0
}

/// An external SST holding `keys`, each set to `value`.
pub fn external(fs: &MemFs, name: &str, keys: &[&str], value: &str) -> PathBuf {
    let puts: Vec<(&str, &str)> = keys.iter().map(|k| (*k, value)).collect();
    external_sst(fs, name, &puts, &[])
}

/// Every `(key, value)` of `db`, by a full scan.
pub fn scan_all(db: &Db) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut it = db.iter(ReadOptions::default()).unwrap();
    it.seek_to_first();
    let mut out = Vec::new();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status().unwrap();
    out
}
