//! What keeps the anchor's work equal to Sluice's and Pebble's (issue 11): the same cache state
//! before timed reads, the same sort, raw-table scans through RocksDB's own `SstFileReader`,
//! and the same read-amplification count.

use std::io::Read;
use std::path::{Path, PathBuf};

use rocksdb::DB;

mod ffi {
    extern "C" {
        pub fn anchor_sst_scan(
            path: *const std::os::raw::c_char,
            entries: *mut u64,
            bytes: *mut u64,
            err: *mut *mut std::os::raw::c_char,
        ) -> std::os::raw::c_int;
        pub fn anchor_free_error(err: *mut std::os::raw::c_char);
    }
}

/// Scans every entry of one SST with `rocksdb::SstFileReader::NewTableIterator` (the raw table
/// iterator); adds its entries and user key + value bytes to the totals.
pub fn scan_sst(path: &Path, entries: &mut u64, bytes: &mut u64) -> Result<(), String> {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| format!("{}: path contains a NUL byte", path.display()))?;
    let mut err: *mut std::os::raw::c_char = std::ptr::null_mut();
    // SAFETY: `c_path` is a valid NUL-terminated string for the call; `entries`, `bytes` and
    // `err` point to live locals; the shim only writes `*err` with a malloc'd string (or leaves it
    // null), which is read here and released with `anchor_free_error` exactly once.
    let rc = unsafe { ffi::anchor_sst_scan(c_path.as_ptr(), entries, bytes, &mut err) };
    if rc == 0 {
        return Ok(());
    }
    let msg = if err.is_null() {
        "unknown error".to_string()
    } else {
        // SAFETY: non-null `err` is the NUL-terminated string the shim allocated; freed once.
        unsafe {
            let m = std::ffi::CStr::from_ptr(err).to_string_lossy().into_owned();
            ffi::anchor_free_error(err);
            m
        }
    };
    Err(format!("{}: {msg}", path.display()))
}

/// Reads every regular file under `dir` (recursively) once, so timed reads start from the page
/// cache in every engine (RocksDB's `SstFileWriter` drops what it wrote from the cache).
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

/// The settings the DB at `db_dir` really runs with, from its newest OPTIONS file (RocksDB
/// persists them there): block size, memtable bytes, compression, checksum, format version.
/// Bloom bits and the block cache's capacity are not in that file; they stay as configured.
pub fn options_file_settings(db_dir: &Path) -> serde_json::Value {
    let newest = std::fs::read_dir(db_dir).ok().and_then(|rd| {
        rd.filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("OPTIONS-"))
            })
            .max()
    });
    let Some(text) = newest.and_then(|p| std::fs::read_to_string(p).ok()) else {
        return serde_json::json!({"settings_source": "constants (no OPTIONS file)"});
    };
    let get = |name: &str| {
        text.lines()
            .filter_map(|l| l.trim().split_once('='))
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_string())
    };
    let num = |name: &str| get(name).and_then(|v| v.parse::<u64>().ok());
    let compression = match get("compression").as_deref() {
        Some("kNoCompression") => "none".to_string(),
        Some(other) => other.to_string(),
        None => "unknown".to_string(),
    };
    serde_json::json!({
        "block_size": num("block_size"), "memtable_bytes": num("write_buffer_size"),
        "compression": compression, "checksum": get("checksum"),
        "format_version": num("format_version"),
        "settings_source": "the DB's OPTIONS file (bloom bits and cache capacity: as configured)",
    })
}

/// Files per level L0..L6 from `rocksdb.num-files-at-level<N>`.
pub fn level_files(db: &DB) -> [u64; 7] {
    let mut out = [0u64; 7];
    for (l, o) in out.iter_mut().enumerate() {
        *o = db
            .property_value(format!("rocksdb.num-files-at-level{l}").as_str())
            .ok()
            .flatten()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
    }
    out
}

/// Tables a point read may consult, counted as every engine in the harness counts it: L0
/// sublevels (RocksDB has none: each L0 file is one) + non-empty levels ≥ 1. Memtables are not
/// counted.
pub fn read_amp(levels: &[u64; 7]) -> u64 {
    levels[0] + levels[1..].iter().filter(|&&f| f > 0).count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_amp_counts_l0_files_and_nonempty_levels() {
        assert_eq!(read_amp(&[3, 0, 0, 0, 0, 2, 9]), 5);
        assert_eq!(read_amp(&[0; 7]), 0);
    }
}
