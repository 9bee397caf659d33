//! What one import of the crash mode loads: a table, its input files and its options, all drawn
//! from `(seed, number)` so the child that runs it and the driver that checks it agree without
//! exchanging anything but the number.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use sluice_import::{ImportOptions, OnDuplicate, ProgressMode};

/// The tables imports load, by index: a name and its schema. The same columns in the row and
/// the columnar (chunks) and cells layouts, secondary and unique indexes, and a composite key.
pub const TABLES: [(&str, &str); 4] = [
    (
        "imp_row",
        "CREATE TABLE imp_row (id BIGINT PRIMARY KEY, grp INT, name TEXT NOT NULL, \
         amount DECIMAL(12,2), day DATE, note TEXT); \
         CREATE INDEX imp_row_grp ON imp_row (grp); \
         CREATE UNIQUE INDEX imp_row_name ON imp_row (name);",
    ),
    (
        "imp_col",
        "CREATE TABLE imp_col (id BIGINT PRIMARY KEY, grp INT, name TEXT NOT NULL, \
         amount DECIMAL(12,2), day DATE, note TEXT) WITH (layout = 'columnar'); \
         CREATE INDEX imp_col_grp ON imp_col (grp); \
         CREATE UNIQUE INDEX imp_col_name ON imp_col (name);",
    ),
    (
        "imp_cells",
        "CREATE TABLE imp_cells (id BIGINT PRIMARY KEY, grp INT, name TEXT NOT NULL, \
         amount DECIMAL(12,2), day DATE, note TEXT) WITH (layout = 'cells'); \
         CREATE INDEX imp_cells_grp ON imp_cells (grp);",
    ),
    (
        "imp_pair",
        "CREATE TABLE imp_pair (region TEXT, id BIGINT, grp INT, name TEXT NOT NULL, \
         amount DECIMAL(12,2), day DATE, note TEXT, PRIMARY KEY (region, id)); \
         CREATE INDEX imp_pair_grp ON imp_pair (grp, day);",
    ),
];

/// The header line of table `t`'s input files.
pub fn header(t: usize) -> &'static str {
    match t {
        2 => "region,id,grp,name,amount,day,note\n",
        _ => "id,grp,name,amount,day,note\n",
    }
}

/// One import: which table, its rows as CSV files, and its options.
#[derive(Debug, Clone)]
pub struct ImportSpec {
    /// Its number in the run (imports are numbered across rounds).
    pub number: u64,
    /// Index into [`TABLES`].
    pub table: usize,
    /// The input files' contents (CSV with a header line), in source order.
    pub files: Vec<String>,
    /// Duplicate policy.
    pub on_duplicate: OnDuplicate,
    /// Rows over all files.
    pub rows: usize,
    threads: usize,
    memory: u64,
    chunk: usize,
    target_file_size: u64,
    parallel_merge: bool,
    /// Its temporary directory is outside the Db directory (`--tmp-dir`).
    pub outside_tmp: bool,
}

impl ImportSpec {
    /// The import numbered `number` of the run seeded `seed`.
    pub fn new(seed: u64, number: u64) -> ImportSpec {
        let mut rng = rand::rngs::StdRng::seed_from_u64(
            seed ^ number.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x1A90,
        );
        let table = rng.gen_range(0..TABLES.len());
        let on_duplicate = *[OnDuplicate::Error, OnDuplicate::First, OnDuplicate::Last]
            .choose(&mut rng)
            .expect("non-empty");
        // Mostly small imports (many per round), some large enough to spill under 8 MiB.
        // (Each row makes ~3 index entries of ~60 bytes: 50k rows are over the sort budget.)
        let rows = if rng.gen_bool(0.15) {
            rng.gen_range(50_000..=90_000)
        } else {
            rng.gen_range(50..=6_000)
        };
        // Keys from [0, span) (and the slots above it): a table stays under ~450k rows however
        // many imports run.
        let span = (rows as u64 * rng.gen_range(1..=2)).max(64);
        // Under `error` most imports must succeed: distinct keys unless one duplicate is planted.
        let distinct = on_duplicate == OnDuplicate::Error && rng.gen_bool(0.85);
        // Distinct keys under `error` go to one of three slots above the others' key space,
        // so that they do not collide with the rows already there (unless the slot is taken).
        let slot = (number % 3 + 1) * 1_000_000;
        let ids: Vec<u64> = if distinct {
            let mut v: Vec<u64> =
                rand::seq::index::sample(&mut rng, span as usize, rows.min(span as usize))
                    .into_iter()
                    .map(|i| slot + i as u64)
                    .collect();
            if rng.gen_bool(0.5) {
                v.sort_unstable(); // sorted input takes the streaming path
            }
            v
        } else {
            (0..rows).map(|_| rng.gen_range(0..span)).collect()
        };
        // A unique-index violation now and then: another key's name.
        let clash = (rng.gen_bool(0.04) && ids.len() > 2 && table != 2).then(|| {
            let a = rng.gen_range(0..ids.len());
            let b = rng.gen_range(0..ids.len());
            (a, ids[b])
        });
        let nfiles = rng.gen_range(1..=3usize).min(ids.len().max(1));
        let mut files = vec![header(table).to_string(); nfiles];
        for (i, &id) in ids.iter().enumerate() {
            let f = &mut files[i * nfiles / ids.len().max(1)];
            let name_of = match clash {
                Some((at, other)) if at == i => other,
                _ => id,
            };
            if table == 2 {
                let _ = write!(f, "{},", ["eu", "us", "ap", "af"][(id % 4) as usize]);
            }
            let grp = if rng.gen_bool(0.1) {
                String::new()
            } else {
                (id % 23).to_string()
            };
            let amount = if rng.gen_bool(0.1) {
                String::new()
            } else {
                format!(
                    "{}.{:02}",
                    rng.gen_range(-99_999..100_000i64),
                    rng.gen_range(0..100)
                )
            };
            let day = if rng.gen_bool(0.1) {
                String::new()
            } else {
                format!(
                    "20{:02}-{:02}-{:02}",
                    rng.gen_range(0..30),
                    rng.gen_range(1..=12),
                    rng.gen_range(1..=28)
                )
            };
            let note = match rng.gen_range(0..4) {
                0 => String::new(),
                1 => "\"quoted, with \"\"quotes\"\"\nand a newline\"".to_string(),
                _ => "x".repeat(rng.gen_range(0..40)),
            };
            let _ = writeln!(f, "{id},{grp},n{name_of},{amount},{day},{note}");
        }
        ImportSpec {
            number,
            table,
            files,
            on_duplicate,
            rows: ids.len(),
            threads: rng.gen_range(1..=2),
            memory: 8 << 20,
            chunk: [4 << 10, 16 << 10, 64 << 10][rng.gen_range(0..3)],
            target_file_size: [32 << 10, 256 << 10, 4 << 20][rng.gen_range(0..3)],
            parallel_merge: rng.gen_bool(0.5),
            outside_tmp: rng.gen_bool(0.3),
        }
    }

    /// The table's name.
    pub fn table_name(&self) -> &'static str {
        TABLES[self.table].0
    }

    /// The table's schema.
    pub fn schema(&self) -> &'static str {
        TABLES[self.table].1
    }

    /// Writes the input files into `dir` (replacing earlier ones of the same number).
    pub fn write_inputs(&self, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
        std::fs::create_dir_all(dir)?;
        let paths = self.input_paths(dir);
        for (p, f) in paths.iter().zip(&self.files) {
            std::fs::write(p, f)?;
        }
        Ok(paths)
    }

    /// Where [`Self::write_inputs`] puts the input files in `dir` (a resume reads the same
    /// files, unchanged: their size and modification time are in the checkpoint).
    pub fn input_paths(&self, dir: &Path) -> Vec<PathBuf> {
        (0..self.files.len())
            .map(|i| dir.join(format!("imp{}-{i}.csv", self.number)))
            .collect()
    }

    /// The import's options; `tmp` is where its temporary directory goes when the spec puts it
    /// outside the Db directory.
    pub fn options(&self, tmp: &Path) -> ImportOptions {
        ImportOptions {
            table: Some(self.table_name().into()),
            header: true,
            threads: self.threads,
            memory: self.memory,
            chunk_size: Some(self.chunk),
            target_file_size: self.target_file_size,
            parallel_merge_min_bytes: if self.parallel_merge { 0 } else { u64::MAX },
            on_duplicate: self.on_duplicate,
            tmp_dir: self.outside_tmp.then(|| tmp.to_path_buf()),
            progress: ProgressMode::Off,
            ..ImportOptions::default()
        }
    }

    /// One line describing it, for anomalies.
    pub fn describe(&self) -> String {
        format!(
            "import {} into {} ({} rows in {} files, on-duplicate {:?}, threads {}, chunk {}, \
             target file {}, parallel merge {}, tmp {})",
            self.number,
            self.table_name(),
            self.rows,
            self.files.len(),
            self.on_duplicate,
            self.threads,
            self.chunk,
            self.target_file_size,
            self.parallel_merge,
            if self.outside_tmp {
                "outside the Db"
            } else {
                "in the Db"
            }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_is_a_function_of_seed_and_number() {
        let a = ImportSpec::new(3, 17);
        let b = ImportSpec::new(3, 17);
        assert_eq!(a.files, b.files);
        assert_eq!(a.describe(), b.describe());
        assert_ne!(ImportSpec::new(3, 18).files, a.files);
        for n in 0..40 {
            let s = ImportSpec::new(9, n);
            let lines: usize = s.files.iter().map(|f| f.lines().count() - 1).sum();
            // Quoted notes hold a newline: two lines for such a row.
            assert!(lines >= s.rows, "{}", s.describe());
        }
    }
}
