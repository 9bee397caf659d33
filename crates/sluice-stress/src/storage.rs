//! Where the database lives (a real directory or a [`MemFs`]), the stress options, and the
//! scratch space for external SST files.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rand::{Rng, SeedableRng};
use sluice::fs::{FileSystem, MemFs};
use sluice::{ChecksumType, CompressionType, Options, SstWriter, TableOptions};

/// The database's file system and directories.
#[derive(Debug)]
pub enum Storage {
    /// On disk: `root/db` holds the database, `root/scratch` the external files.
    Real {
        /// The database directory.
        db_dir: PathBuf,
        /// Where external SSTs are written before ingestion.
        scratch: PathBuf,
    },
    /// In memory: SSTs are written with [`SstWriter`] to a real scratch directory, then
    /// copied into the `MemFs` under `/scratch`.
    Mem {
        /// The file system (shared with the `Db`).
        fs: MemFs,
        /// The database directory inside `fs`.
        db_dir: PathBuf,
        /// Real directory for `SstWriter` output.
        scratch: PathBuf,
    },
}

static SST_SEQ: AtomicU64 = AtomicU64::new(0);

impl Storage {
    /// A database under the real directory `root`.
    pub fn real(root: &Path) -> std::io::Result<Storage> {
        let db_dir = root.join("db");
        let scratch = root.join("scratch");
        std::fs::create_dir_all(&scratch)?;
        Ok(Storage::Real { db_dir, scratch })
    }

    /// A database in `fs` at `/db`, with SstWriter output staged in the real `scratch`.
    pub fn mem(fs: MemFs, scratch: &Path) -> Storage {
        Storage::Mem {
            fs,
            db_dir: PathBuf::from("/db"),
            scratch: scratch.to_path_buf(),
        }
    }

    /// The database directory.
    pub fn db_dir(&self) -> &Path {
        match self {
            Storage::Real { db_dir, .. } | Storage::Mem { db_dir, .. } => db_dir,
        }
    }

    /// The file system the database uses.
    pub fn fs(&self) -> Arc<dyn FileSystem> {
        match self {
            Storage::Real { .. } => Arc::new(sluice::fs::RealFs),
            Storage::Mem { fs, .. } => Arc::new(fs.clone()),
        }
    }

    /// Writes an external SST holding `entries` (sorted; `None` = deletion) and returns its
    /// path (in the database's file system) and size.
    pub fn write_sst(
        &self,
        entries: &[(Vec<u8>, Option<Vec<u8>>)],
        opts: TableOptions,
    ) -> Result<(PathBuf, u64), String> {
        let n = SST_SEQ.fetch_add(1, Ordering::Relaxed);
        let name = format!("ext-{}-{n}.sst", std::process::id());
        let scratch = match self {
            Storage::Real { scratch, .. } | Storage::Mem { scratch, .. } => scratch,
        };
        let real = scratch.join(&name);
        let mut w = SstWriter::create(&real, opts).map_err(|e| e.to_string())?;
        for (k, v) in entries {
            match v {
                Some(v) => w.put(k, v),
                None => w.delete(k),
            }
            .map_err(|e| e.to_string())?;
        }
        let info = w.finish().map_err(|e| e.to_string())?;
        match self {
            Storage::Real { .. } => Ok((real, info.file_size)),
            Storage::Mem { fs, .. } => {
                let bytes = std::fs::read(&real).map_err(|e| e.to_string())?;
                let _ = std::fs::remove_file(&real);
                let p = Path::new("/scratch").join(name);
                fs.write_raw(&p, bytes);
                Ok((p, info.file_size))
            }
        }
    }

    /// Removes an external file after its ingestion (linked or copied: it is no longer needed).
    pub fn remove_sst(&self, path: &Path) {
        match self {
            Storage::Real { .. } => {
                let _ = std::fs::remove_file(path);
            }
            Storage::Mem { fs, .. } => {
                let _ = fs.remove(path);
            }
        }
    }
}

/// Tiny sizes so that every path runs: flushes every few hundred writes, L0 compactions at two
/// to four sublevels, 512-byte blocks, a small table cache and block cache. Compression,
/// filters, tiered L0 and the number of background jobs (2: one compaction at a time; 3–4:
/// concurrent compactions) vary with the seed.
pub fn stress_options(seed: u64, fs: Arc<dyn FileSystem>) -> Options {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ 0x0b7e_c0de);
    let mut compression = [CompressionType::None; 7];
    if rng.gen_bool(0.5) {
        for c in compression.iter_mut().skip(1) {
            *c = [
                CompressionType::None,
                CompressionType::Snappy,
                CompressionType::Lz4,
                CompressionType::Zstd,
            ][rng.gen_range(0..4)];
        }
    }
    let bloom = if rng.gen_bool(0.8) { Some(10.0) } else { None };
    Options {
        write_buffer_size: rng.gen_range(16..=64) << 10,
        target_file_size: rng.gen_range(16..=32) << 10,
        max_bytes_for_level_base: 64 << 10,
        l0_compaction_trigger: rng.gen_range(2..=4),
        // Tiered L0 off, at its default, and eager (an intra-L0 merge wherever the base level
        // holds half the candidate's bytes), so that every run meets intra-L0 compactions of
        // files newer than the memtables.
        l0_tiering_ratio_pct: [0, 200, 50][rng.gen_range(0..3)],
        // Small files merged in their level (within a 1-byte prefix: the stress keys'), or not.
        small_file_merge_prefix: rng.gen_range(0..=1),
        // Thin sublevels waiting for a memtable's bytes, or compacted by depth alone.
        l0_thin_sublevels_wait: rng.gen_bool(0.5),
        max_background_jobs: rng.gen_range(2..=4),
        block_size: 512,
        block_cache_bytes: 256 << 10,
        max_open_files: rng.gen_range(16..=64),
        checksum: if rng.gen_bool(0.5) {
            ChecksumType::Crc32c
        } else {
            ChecksumType::Xxh3
        },
        compression_per_level: compression,
        bloom_bits_per_level: [bloom; 7],
        fs,
        ..Options::default()
    }
}

/// Keeps the events of the open Db (registered in its options by the concurrent mode), taken
/// after each close and checked against the MANIFEST
/// ([`sluice::events::check_against_manifest`]).
#[derive(Default)]
pub struct EventLog(parking_lot::Mutex<Vec<sluice::Event>>);

impl sluice::EventListener for EventLog {
    fn on_event(&self, event: &sluice::Event) {
        self.0.lock().push(event.clone());
    }
}

impl EventLog {
    /// The events delivered since the last call.
    pub fn take(&self) -> Vec<sluice::Event> {
        std::mem::take(&mut *self.0.lock())
    }
}

/// Table options of the external files (small blocks, like the database's).
pub fn sst_options() -> TableOptions {
    TableOptions {
        block_size: 512,
        ..TableOptions::default()
    }
}
