//! The OPTIONS file beside the MANIFEST, for display: the newest `OPTIONS-NNNNNN`, read as
//! `key=value` lines under `[section]` headers (RocksDB's INI layout; Sluice's file is the
//! same without sections). Only what a reader of the timeline needs is kept for RocksDB (the
//! settings that shape the LSM); every Sluice setting is kept. A file that does not parse is
//! shown as far as it does: it is for display, never trusted.

use std::path::Path;

use super::Setting;

/// RocksDB settings that shape the LSM, shown on the page (any section).
const ROCKSDB_KEYS: &[&str] = &[
    "rocksdb_version",
    "options_file_version",
    "max_background_jobs",
    "max_subcompactions",
    "write_buffer_size",
    "max_write_buffer_number",
    "level0_file_num_compaction_trigger",
    "level0_slowdown_writes_trigger",
    "level0_stop_writes_trigger",
    "max_bytes_for_level_base",
    "max_bytes_for_level_multiplier",
    "level_compaction_dynamic_level_bytes",
    "target_file_size_base",
    "compaction_style",
    "compression",
    "bottommost_compression",
    "num_levels",
    "disable_auto_compactions",
    "soft_pending_compaction_bytes_limit",
    "hard_pending_compaction_bytes_limit",
    "block_size",
    "format_version",
    "filter_policy",
];

/// Longest OPTIONS file read (a real one is a few KiB).
const MAX_OPTIONS_BYTES: u64 = 1 << 20;

/// The newest OPTIONS file's name and its settings as (section, key, value); `all` keeps
/// every setting, otherwise only [`ROCKSDB_KEYS`]. `None` when there is no readable one.
pub fn read(dir: &Path, all: bool) -> Option<(String, Vec<Setting>)> {
    let newest = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|n| {
            let num: u64 = n.strip_prefix("OPTIONS-")?.parse().ok()?;
            Some((num, n))
        })
        .max()?;
    let path = dir.join(&newest.1);
    if std::fs::metadata(&path).ok()?.len() > MAX_OPTIONS_BYTES {
        return None;
    }
    let text = String::from_utf8_lossy(&std::fs::read(&path).ok()?).into_owned();
    Some((newest.1, parse(&text, all)))
}

/// The settings of an OPTIONS text (see [`read`]).
fn parse(text: &str, all: bool) -> Vec<Setting> {
    let mut section = String::new();
    let mut out = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        if let Some(s) = line.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
            section = s.to_string();
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        let (k, v) = (k.trim(), v.trim());
        if all || ROCKSDB_KEYS.contains(&k) {
            out.push((section.clone(), k.to_string(), v.to_string()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rocksdb_sections_and_chosen_keys() {
        let t = "# x\n[Version]\n  rocksdb_version=10.4.2\n[CFOptions \"default\"]\n  write_buffer_size=67108864\n  paranoid=true\nbroken line\n";
        let got = parse(t, false);
        assert_eq!(
            got,
            vec![
                ("Version".into(), "rocksdb_version".into(), "10.4.2".into()),
                (
                    "CFOptions \"default\"".into(),
                    "write_buffer_size".into(),
                    "67108864".into()
                ),
            ]
        );
        assert_eq!(parse(t, true).len(), 3);
    }
}
