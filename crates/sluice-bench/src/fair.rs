//! What keeps Sluice's work equal to the anchors' (issue 11): the settings every engine prints
//! and `bench/test_params.py` compares, the cache state before timed reads (every file read
//! once, untimed), and one LSM-shape sampler (every 20 ms, as the anchors poll).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{json, Value};
use sluice::{Db, Options, TableOptions};

/// How often the shape sampler polls the Db.
const POLL: Duration = Duration::from_millis(20);

/// The settings of the Db and SST writers the workloads use, under the names every engine
/// prints: block size, Bloom bits, block cache bytes, compression, memtable bytes.
pub fn table_params() -> Value {
    let o = Options::default();
    let t = TableOptions::default();
    json!({
        "key_bytes": 16, "value_bytes": 100,
        "compression": if o.compression_per_level.iter().all(|c| *c == sluice::CompressionType::None) { "none" } else { "per level" },
        "bloom_bits": o.bloom_bits_per_level[0].or(t.bloom_bits_per_key),
        "filter": "full",
        "block_size": o.block_size,
        "cache_bytes": o.block_cache_bytes,
        "memtable_bytes": o.write_buffer_size,
        "file_write_buffer": "1 MiB (RealFs writable buffer), fdatasync every 8 MiB in the background",
        "checksum": "CRC32c (Sluice's default)",
        "index": "one index block per table, read at open (not in the block cache); filter likewise",
        "flush_split_bytes": o.flush_split_bytes,
        "l0_stop_writes": o.l0_stop_writes_trigger,
        "l0_trigger": match o.l0_thin_sublevels_until() {
            Some(until) => format!("{} L0 sublevels; under {until} deep, counted as no more than the full flushes' worth of bytes L0 holds, a flush's bytes measured (Options::l0_thin_sublevels_wait, the default)", o.l0_compaction_trigger),
            None => format!("{} L0 sublevels", o.l0_compaction_trigger),
        },
        "intra_l0": if o.l0_tiering_ratio_pct > 0 {
            format!("where the base level is busy, or an L0→Lbase compaction would rewrite over {}% of its L0 bytes there (Sluice's default l0_tiering_ratio_pct)", o.l0_tiering_ratio_pct)
        } else {
            "where the base level is busy".to_string()
        },
        "compaction_threads": format!("{} background jobs: 1 flush + 1 compaction at a time, each compaction split into <= {} subcompactions", o.max_background_jobs, o.max_subcompactions),
        "background_priority": format!("flush thread nice {}, compaction threads nice {} (Sluice's default Options::background_nice, compactions 5 steps nicer; WAL files preallocated a memtable and a tenth, as RocksDB's)", o.background_nice, o.compaction_nice()),
        "sluice": env!("CARGO_PKG_VERSION"),
    })
}

/// Adds `extra`'s fields to `base` (an object); `extra` wins on equal names.
pub fn with(mut base: Value, extra: Value) -> Value {
    if let (Some(b), Value::Object(e)) = (base.as_object_mut(), extra) {
        b.extend(e);
    }
    base
}

/// Reads every regular file under `dir` (recursively) once, so timed reads start from the page
/// cache in every engine.
pub fn warm_dir(dir: &Path) -> std::io::Result<u64> {
    let mut files = Vec::new();
    collect_files(dir, &mut files)?;
    warm_files(&files)
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let Ok(e) = e else { continue }; // deleted by a background job meanwhile
        let t = e.file_type()?;
        if t.is_dir() {
            collect_files(&e.path(), out)?;
        } else if t.is_file() {
            out.push(e.path());
        }
    }
    Ok(())
}

/// Bytes of the regular files directly in `dir` (their lengths: an open Sluice Db's WAL counts
/// at its reserved length, `Options::wal_mmap_writes`).
pub fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok()?.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

/// Reads each file once (1 MiB reads); returns the bytes read.
pub fn warm_files(files: &[PathBuf]) -> std::io::Result<u64> {
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    for f in files {
        let mut file = match std::fs::File::open(f) {
            Ok(file) => file,
            // Deleted by a background job meanwhile.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        loop {
            let n = file.read(&mut buf)?;
            if n == 0 {
                break;
            }
            total += n as u64;
        }
    }
    Ok(total)
}

/// The largest L0 file count, L0 sublevel count and read amplification seen in a phase. Read
/// amplification is counted as every engine in the harness counts it: L0 sublevels + non-empty
/// levels ≥ 1 (memtables not counted).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MaxShape {
    /// Most L0 files seen.
    pub l0_files: usize,
    /// Most L0 sublevels seen.
    pub l0_sublevels: usize,
    /// Highest read amplification seen.
    pub read_amp: usize,
}

impl MaxShape {
    /// The shape of `db` now.
    pub fn of(db: &Db) -> MaxShape {
        let m = db.metrics();
        MaxShape {
            l0_files: m.levels[0].files,
            l0_sublevels: m.l0_sublevels,
            read_amp: m.l0_sublevels + m.levels[1..].iter().filter(|l| l.files > 0).count(),
        }
    }

    /// The larger of each figure.
    pub fn max(self, o: MaxShape) -> MaxShape {
        MaxShape {
            l0_files: self.l0_files.max(o.l0_files),
            l0_sublevels: self.l0_sublevels.max(o.l0_sublevels),
            read_amp: self.read_amp.max(o.read_amp),
        }
    }

    /// `read_amp`, `max_l0_files` and `max_l0_sublevels` as result-line fields.
    pub fn json(self) -> Value {
        json!({"read_amp": self.read_amp, "max_l0_files": self.l0_files, "max_l0_sublevels": self.l0_sublevels})
    }
}

/// Runs `f` while a thread samples `db`'s shape every 20 ms; returns f's result and the maxima.
pub fn with_sampler<R>(db: &Db, f: impl FnOnce() -> R) -> (R, MaxShape) {
    let stop = AtomicBool::new(false);
    let first = MaxShape::of(db);
    let (l0, sub, ra) = (
        AtomicUsize::new(first.l0_files),
        AtomicUsize::new(first.l0_sublevels),
        AtomicUsize::new(first.read_amp),
    );
    let sample = || {
        let s = MaxShape::of(db);
        l0.fetch_max(s.l0_files, Ordering::Relaxed);
        sub.fetch_max(s.l0_sublevels, Ordering::Relaxed);
        ra.fetch_max(s.read_amp, Ordering::Relaxed);
    };
    let r = std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                sample();
                std::thread::sleep(POLL);
            }
        });
        let r = f();
        stop.store(true, Ordering::Relaxed);
        r
    });
    sample();
    (
        r,
        MaxShape {
            l0_files: l0.into_inner(),
            l0_sublevels: sub.into_inner(),
            read_amp: ra.into_inner(),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_params_name_the_settings_the_anchors_are_checked_against() {
        let p = table_params();
        for k in [
            "block_size",
            "bloom_bits",
            "cache_bytes",
            "compression",
            "memtable_bytes",
        ] {
            assert!(!p[k].is_null(), "{k} missing from {p}");
        }
        assert_eq!(p["compression"], "none");
    }

    #[test]
    fn warm_dir_reads_every_file_below_it() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        std::fs::write(d.path().join("a"), vec![1u8; 3000]).unwrap();
        std::fs::write(d.path().join("sub").join("b"), vec![2u8; 5]).unwrap();
        assert_eq!(warm_dir(d.path()).unwrap(), 3005);
    }

    #[test]
    fn sampler_sees_the_l0_files_a_flush_makes() {
        let d = tempfile::tempdir().unwrap();
        let db = Db::open(d.path(), Options::default()).unwrap();
        let ((), shape) = with_sampler(&db, || {
            db.put(b"k", b"v").unwrap();
            db.flush().unwrap();
        });
        assert_eq!(shape.l0_files, 1);
        assert_eq!(shape.l0_sublevels, 1);
        assert_eq!(shape.read_amp, 1);
    }
}
