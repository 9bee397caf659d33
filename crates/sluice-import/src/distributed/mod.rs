//! The engine-agnostic core of an import spread over workers (Ray, Spark, or anything that can
//! move Arrow batches): the coordinator plans, tasks encode and build, the coordinator commits.
//!
//! 1. [`JobPlan::new`] (coordinator): the schema's table bound to the Db's catalog (its id and
//!    index ids), the duplicate policy, the job id, the input names. Serialisable
//!    ([`JobPlan::to_json`]) so every task gets the same plan.
//! 2. [`JobPlan::encode`] (tasks): a record batch → one Arrow batch of entries
//!    `(slot, range, key, value, src)`: slot 0 is the primary index, 1.. the secondary indexes
//!    in schema order; `src` orders rows as the input does (input number, row).
//! 3. [`JobPlan::set_cuts`] (coordinator): cut points per slot from a sample of the encoded
//!    keys: full keys for the primary and plain secondary indexes (the primary key suffix makes
//!    secondary keys distinct, so a hot value cannot skew a range), the unique prefix for a
//!    unique index (every holder of a value lands in one range, where the duplicate is seen).
//!    [`JobPlan::encode`] after this fills `range`.
//! 4. [`build_range`] (tasks, primary index first): one range's entries sorted, duplicates
//!    resolved by the policy (`error`, `first`, `last` by source order), unique values checked,
//!    the entries of rows dropped from the primary index left out of the secondary indexes,
//!    written as SSTs under a per-attempt directory; returns a [`RangeManifest`].
//! 5. [`commit`] (coordinator): one manifest per (slot, range), ranges checked disjoint, the
//!    catalog entry, then every file in **one** `Db::ingest`. Nothing is visible before it; a
//!    failed job leaves the Db exactly as it was.
//!
//! Not yet: tables that already hold rows (refused: the check against stored rows needs the
//! Db in every task), tables without a primary key (their hidden row ids are assigned by one
//! reader), the columnar layout, `max_errors` (the first bad row fails the job).

mod build;
mod files;

use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, UInt32Builder, UInt64Builder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use serde::{Deserialize, Serialize};
use sluice::Db;

use crate::arrow_io::parquet::match_columns;
use crate::catalog;
use crate::input::Format;
use crate::parse::{parse_chunk, ArrowBatch, Chunk, FieldMap, ParseConfig};
use crate::schema::{parse_schema, Layout, TableDef};
use crate::{ImportError, OnDuplicate};

pub use build::{attempt_dir, build_range, commit, RangeFile, RangeManifest};

/// What every task of one distributed import shares.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JobPlan {
    /// Names this job's attempt directories and manifests.
    pub job_id: String,
    /// The table, bound to the Db's catalog.
    pub table: TableDef,
    /// Whether the commit creates the table (writes its catalog entry).
    pub created: bool,
    /// `error`, `first` or `last`.
    pub on_duplicate: String,
    /// Input names by input number, for messages.
    pub sources: Vec<String>,
    /// Cut points per slot (empty: one range).
    pub cuts: Vec<Vec<Vec<u8>>>,
    /// Target size of an output SST, bytes.
    pub target_file_size: u64,
    /// How text inputs are read ([`JobPlan::encode_file`]): `sluice import`'s options.
    #[serde(default)]
    pub text: TextOptions,
}

/// `sluice import`'s input options, for [`JobPlan::encode_file`].
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TextOptions {
    /// `csv`, `tsv`, `jsonl` or `parquet` (default: from each file's extension).
    pub format: Option<String>,
    /// The first line of each text file names the columns.
    pub header: bool,
    /// Field delimiter (default: `,` for CSV, tab for TSV).
    pub delimiter: Option<u8>,
    /// CSV quote character (default `"`); `Some(None)`: no quoting.
    pub quote: Option<Option<u8>>,
    /// The string that means NULL.
    pub null: Option<String>,
}

/// Columns of an encoded batch.
pub fn entries_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("slot", DataType::UInt32, false),
        Field::new("range", DataType::UInt32, false),
        Field::new("key", DataType::Binary, false),
        Field::new("value", DataType::Binary, false),
        Field::new("src", DataType::UInt64, false),
    ]))
}

impl JobPlan {
    /// Step 1: binds the schema's table (`table`, or its only one) to `db`'s catalog.
    pub fn new(
        db: &Db,
        schema_sql: &str,
        table: Option<&str>,
        on_duplicate: OnDuplicate,
        job_id: &str,
        sources: Vec<String>,
    ) -> Result<JobPlan, ImportError> {
        let tables = parse_schema(schema_sql).map_err(ImportError::Schema)?;
        let def = catalog::choose(&tables, table)?;
        let (table, created) = catalog::bind(&catalog::load(db)?, def)?;
        if table.has_rowid() {
            return Err(ImportError::InvalidArgument(format!(
                "table {}: a distributed import needs a PRIMARY KEY (hidden row ids are \
                 numbered by one reader)",
                table.name
            )));
        }
        if table.layout == Layout::Columnar {
            return Err(ImportError::InvalidArgument(format!(
                "table {}: the columnar layout is not supported by the distributed import yet",
                table.name
            )));
        }
        if !created && has_rows(db, &table)? {
            return Err(ImportError::InvalidArgument(format!(
                "table {} already holds rows: the distributed import loads new tables only \
                 (use sluice import to add to it)",
                table.name
            )));
        }
        let on_duplicate = match on_duplicate {
            OnDuplicate::Error => "error",
            OnDuplicate::First => "first",
            OnDuplicate::Last => "last",
        };
        Ok(JobPlan {
            job_id: job_id.to_string(),
            table,
            created,
            on_duplicate: on_duplicate.into(),
            sources,
            cuts: Vec::new(),
            target_file_size: 64 << 20,
            text: TextOptions::default(),
        })
    }

    /// The plan as JSON (what tasks are given).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// A plan from [`to_json`](Self::to_json)'s text.
    pub fn from_json(s: &str) -> Result<JobPlan, ImportError> {
        serde_json::from_str(s)
            .map_err(|e| ImportError::InvalidArgument(format!("not an import plan: {e}")))
    }

    /// Index slots: the primary index and each secondary index.
    pub fn slots(&self) -> usize {
        1 + self.table.indexes.len()
    }

    /// Step 3: `ranges` ranges per slot, cut at quantiles of `samples[slot]` (keys encoded by
    /// [`encode`](Self::encode)); a unique index is cut on the unique prefix.
    pub fn set_cuts(&mut self, mut samples: Vec<Vec<Vec<u8>>>, ranges: usize) {
        samples.resize(self.slots(), Vec::new());
        self.cuts = samples
            .into_iter()
            .enumerate()
            .map(|(slot, mut keys)| {
                if slot > 0 && self.table.indexes[slot - 1].unique {
                    keys = keys
                        .iter()
                        .map(|k| {
                            self.table
                                .unique_prefix(slot, k)
                                .unwrap_or(k.as_slice())
                                .to_vec()
                        })
                        .collect();
                }
                keys.sort();
                keys.dedup();
                let mut cuts: Vec<Vec<u8>> = (1..ranges.max(1))
                    .filter_map(|i| keys.get(i * keys.len() / ranges).cloned())
                    .collect();
                cuts.dedup();
                cuts
            })
            .collect();
    }

    /// The range of `key` in slot `slot`: how many cut points are ≤ it.
    pub fn range_of(&self, slot: usize, key: &[u8]) -> u32 {
        self.cuts
            .get(slot)
            .map_or(0, |c| c.partition_point(|cut| cut.as_slice() <= key) as u32)
    }

    /// Ranges of slot `slot`.
    pub fn ranges(&self, slot: usize) -> u32 {
        self.cuts.get(slot).map_or(1, |c| c.len() as u32 + 1)
    }

    /// Step 2: the entries of `batch`, whose first row is row `first_row` (0-based) of input
    /// `source`. A bad value fails with the input's name, the row, the batch's number in its
    /// input and the column.
    pub fn encode(
        &self,
        batch: &RecordBatch,
        source: usize,
        first_row: u64,
        batch_number: u64,
    ) -> Result<RecordBatch, ImportError> {
        let name = self.sources.get(source).cloned().unwrap_or_default();
        let (roots, fields) = match_columns(batch.schema().as_ref(), &self.table)
            .map_err(|why| ImportError::InvalidArgument(format!("{name}: {why}")))?;
        let rows = batch
            .project(&roots)
            .map_err(|e| ImportError::InvalidArgument(format!("{name}: {e}")))?;
        let out = parse_chunk(
            &self.parse_config(Format::Arrow),
            Chunk {
                seq: 0,
                file: source,
                data: Vec::new(),
                first_line: first_row + 1,
                offset: first_row,
                map: Arc::new(FieldMap { fields }),
                batch: Some(ArrowBatch {
                    rows,
                    number: batch_number,
                }),
            },
        );
        self.entries_batch(out)
    }

    /// A parsed chunk's entries as an encoded batch; its first bad row fails the job.
    fn entries_batch(&self, out: crate::parse::ChunkOutput) -> Result<RecordBatch, ImportError> {
        if let Some(r) = out.rejects.into_iter().next() {
            return Err(ImportError::BadRow(r.error));
        }
        let mut slot_b = UInt32Builder::new();
        let mut range_b = UInt32Builder::new();
        let mut key_b = BinaryBuilder::new();
        let mut value_b = BinaryBuilder::new();
        let mut src_b = UInt64Builder::new();
        for (slot, e) in out.indexes.iter().enumerate() {
            for i in 0..e.items.len() {
                let key = e.key(i);
                slot_b.append_value(slot as u32);
                range_b.append_value(self.range_of(slot, key));
                key_b.append_value(key);
                value_b.append_value(e.value(i));
                src_b.append_value(e.items[i].3);
            }
        }
        let columns: Vec<ArrayRef> = vec![
            Arc::new(slot_b.finish()),
            Arc::new(range_b.finish()),
            Arc::new(key_b.finish()),
            Arc::new(value_b.finish()),
            Arc::new(src_b.finish()),
        ];
        RecordBatch::try_new(entries_schema(), columns)
            .map_err(|e| ImportError::Internal(format!("encoded batch: {e}")))
    }
}

impl JobPlan {
    /// The parser's settings for inputs of `format`.
    fn parse_config(&self, format: Format) -> ParseConfig {
        ParseConfig {
            table: self.table.clone(),
            format,
            delimiter: self.text.delimiter.unwrap_or(match format {
                Format::Tsv => b'\t',
                _ => b',',
            }),
            quote: self.text.quote.unwrap_or(Some(b'"')),
            null: self.text.null.as_ref().map(|s| s.as_bytes().to_vec()),
            files: self.sources.clone(),
            rowid_base: 0,
            pool: None,
        }
    }
}

fn has_rows(db: &Db, t: &TableDef) -> Result<bool, ImportError> {
    let mut it = catalog::index_iter(db, t.id, crate::schema::PRIMARY_INDEX_ID)?;
    it.seek_to_first();
    let found = it.valid();
    it.status()?;
    Ok(found)
}
