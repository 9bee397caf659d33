//! Helpers shared by the import tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use sluice::{Db, ReadOptions};
use sluice_import::{
    Import, ImportError, ImportOptions, Layout, ProgressMode, Summary, TableReader,
};

thread_local! {
    static LAYOUT: std::cell::Cell<Option<Layout>> = const { std::cell::Cell::new(None) };
}

/// Runs `test` with every [`opts`] of this thread asking for `layout`.
pub fn with_layout(layout: Layout, test: fn()) {
    LAYOUT.with(|l| l.set(Some(layout)));
    test();
}

/// The layout [`opts`] asks for (row unless [`with_layout`] says otherwise).
pub fn layout() -> Layout {
    LAYOUT.with(|l| l.get()).unwrap_or(Layout::Row)
}

/// Defines `mod columnar` and `mod cells` running each named test again with the columnar
/// (chunks) and the cells layout.
#[macro_export]
macro_rules! columnar_too {
    ($($name:ident),* $(,)?) => {
        mod columnar {
            $(
                #[test]
                fn $name() {
                    $crate::common::with_layout(sluice_import::Layout::Columnar, super::$name);
                }
            )*
        }
        mod cells {
            $(
                #[test]
                fn $name() {
                    $crate::common::with_layout(sluice_import::Layout::Cells, super::$name);
                }
            )*
        }
    };
}

/// Options for tests: quiet, small chunks so even small inputs make several chunks, and every
/// merge that can run on several threads does (on two key ranges).
pub fn opts() -> ImportOptions {
    ImportOptions {
        progress: ProgressMode::Off,
        threads: 2,
        memory: 16 << 20,
        chunk_size: Some(64),
        parallel_merge_min_bytes: 0,
        layout: LAYOUT.with(|l| l.get()),
        ..ImportOptions::default()
    }
}

/// Writes `content` to `dir/name`.
pub fn write(dir: &Path, name: &str, content: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, content).unwrap();
    p
}

/// Runs an import.
pub fn import(
    db: &Db,
    schema: &str,
    files: Vec<PathBuf>,
    o: ImportOptions,
) -> Result<Summary, ImportError> {
    Import::new(schema, files, o)?.run(db)
}

/// Every raw KV in the Db.
pub fn dump(db: &Db) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut it = db
        .iter(ReadOptions {
            snapshot: None,
            lower_bound: None,
            upper_bound: None,
            ..Default::default()
        })
        .unwrap();
    it.seek_to_first();
    let mut v = Vec::new();
    while it.valid() {
        v.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status().unwrap();
    v
}

/// All rows of a table as CSV lines (primary key order, or `index` order).
pub fn rows(db: &Db, table: &str, index: Option<&str>) -> Vec<String> {
    let r = TableReader::open(db, Some(table)).unwrap();
    let mut out = Vec::new();
    r.scan(index, None, None, None, |row| {
        out.push(r.format_row(row, sluice_import::OutputFormat::Csv));
        Ok(())
    })
    .unwrap();
    out
}

/// Same rows as JSON lines.
pub fn json_rows(db: &Db, table: &str) -> Vec<String> {
    let r = TableReader::open(db, Some(table)).unwrap();
    let mut out = Vec::new();
    r.scan(None, None, None, None, |row| {
        out.push(r.format_row(row, sluice_import::OutputFormat::Json));
        Ok(())
    })
    .unwrap();
    out
}

/// Names in `dir` that an import may have left behind.
pub fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| {
            n.starts_with(sluice_import::pipeline::TMP_PREFIX)
                || n.starts_with(sluice_import::pipeline::RESUME_PREFIX)
        })
        .collect()
}
