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
//!    failed job leaves the Db exactly as it was. Or [`export_ranges`]: the ranges' SSTs and a
//!    ranges manifest in a directory, for stores that own key ranges per node.
//!
//! Around them: a job's directory and resuming a job by id ([`job`]), `max_errors` across
//! tasks ([`rejects`]).
//!
//! A table that already holds rows: the coordinator exports its primary keys and unique index
//! entries ([`JobPlan::existing_entries`], source position 0) into the shuffle beside the
//! input's entries, so the build of each range meets the stored keys of its range and applies
//! the duplicate policy to them as `sluice import` does (`error`: the new row is refused as a
//! duplicate of an existing row; `first`: the stored row stays, the new one is dropped with its
//! index entries; `last`: the new row replaces it, and the stored row's secondary entries that
//! the new row does not have are deleted — the primary build returns them as
//! [`RangeManifest::deletions`], the secondary builds write them as deletions in the same
//! ingest, and a unique value freed that way is no conflict). The cost: one sequential read of
//! the table's primary and unique indexes by the coordinator (under `last` the primary with its
//! rows' values), and those entries through the shuffle.
//!
//! A columnar table: the primary builds write each range's row groups (every column's chunks
//! and the primary entries naming them) from a slice of group ids the coordinator reserved
//! ([`groups`]); the secondary indexes are built as for a row table. The commit holds the
//! table's latch, as `sluice import` does.
//!
//! `last` into a columnar table that holds rows: the coordinator's export of the stored rows
//! carries each row's position and its indexed columns' values, read from the chunks; a
//! primary build that replaces a stored row returns the position's deletion mark
//! ([`RangeManifest::dead_marks`]) besides the index entries to delete, and the commit writes
//! every mark in one more file of the same ingest — as `sluice import` marks a replaced row.
//!
//! Not yet: tables without a primary key (their hidden row ids are assigned by one reader);
//! the cells layout; exporting a columnar table's ranges ([`export_ranges`]).

mod build;
mod files;
pub mod groups;
pub mod job;
mod output;
pub mod rejects;

use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, UInt32Builder, UInt64Builder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use serde::{Deserialize, Serialize};
use sluice::{Db, ReadOptions};

use crate::arrow_io::parquet::match_columns;
use crate::catalog;
use crate::input::Format;
use crate::parse::{parse_chunk, ArrowBatch, Chunk, FieldMap, ParseConfig};
use crate::schema::{parse_schema, Layout, TableDef};
use crate::{ImportError, OnDuplicate};

pub use build::{
    attempt_dir, build_range, commit, merge_small_files, FromPrimary, RangeFile, RangeManifest,
    DEAD_MARKS_SLOT,
};
pub use output::{export_ranges, RangeSet, RangesManifest};
use rejects::{over_limit, RowReject};

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
    /// The table already holds rows: the builds meet them as entries with source position 0
    /// ([`JobPlan::existing_entries`]).
    #[serde(default)]
    pub existing_rows: bool,
    /// Bad rows (and, under `error`, duplicate keys) tolerated across the job (default 0).
    #[serde(default)]
    pub max_errors: u64,
    /// A columnar table: the first id of the block of row-group ids the job holds; range `r`
    /// numbers its groups from `group_base + r ×` [`groups::RANGE_GROUP_IDS`].
    #[serde(default)]
    pub group_base: u64,
    /// An existing table: the newest seqno of its entries and catalog entry when the job was
    /// planned. The commit refuses if it moved (another import or a delete changed the table
    /// the builds checked their rows against).
    #[serde(default)]
    pub table_seqno: u64,
}

/// Encoded entries and the rows rejected on the way.
pub type Encoded = (Vec<RecordBatch>, Vec<RowReject>);

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
        // Read before the stored rows are looked at: a write between the two then shows at
        // the commit as a newer seqno.
        let table_seqno = match created {
            true => 0,
            false => crate::pipeline::checkpoint::table_seqno(db, &table)?,
        };
        let existing_rows = !created && has_rows(db, &table)?;
        let group_base = match table.layout {
            Layout::Row => 0,
            Layout::Cells => {
                return Err(ImportError::InvalidArgument(format!(
                    "table {}: the cells layout (kept for Dbs made before chunks) is not \
                     supported by the distributed import",
                    table.name
                )))
            }
            Layout::Columnar => groups::reserve(db, &table, job_id)?,
        };
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
            existing_rows,
            max_errors: 0,
            group_base,
            table_seqno,
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
    /// `source`, and its bad rows (each naming the input, the row, the batch's number in its
    /// input and the column). More bad rows than `max_errors` fail the call.
    pub fn encode(
        &self,
        batch: &RecordBatch,
        source: usize,
        first_row: u64,
        batch_number: u64,
    ) -> Result<(RecordBatch, Vec<RowReject>), ImportError> {
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
                malformed: Vec::new(),
            },
        );
        self.entries_batch(out)
    }

    /// A parsed chunk's entries as an encoded batch, and its bad rows; more than
    /// `max_errors` of them fail.
    fn entries_batch(
        &self,
        out: crate::parse::ChunkOutput,
    ) -> Result<(RecordBatch, Vec<RowReject>), ImportError> {
        let rejects: Vec<RowReject> = out
            .rejects
            .iter()
            .filter_map(|r| RowReject::new(r.src, &ImportError::BadRow(r.error.clone()), &r.record))
            .collect();
        if let Some(e) = over_limit(&rejects, self.max_errors) {
            return Err(e);
        }
        let mut b = EntriesBuilder::new(self);
        for (slot, e) in out.indexes.iter().enumerate() {
            for i in 0..e.items.len() {
                b.append(slot, e.key(i), e.value(i), e.items[i].3);
            }
        }
        let batch = b.finish()?;
        Ok((batch, rejects))
    }

    /// The slots whose stored entries the builds must meet when the table holds rows: the
    /// primary index and each unique index.
    pub fn existing_slots(&self) -> Vec<usize> {
        if !self.existing_rows {
            return Vec::new();
        }
        (0..self.slots())
            .filter(|&s| s == 0 || self.table.indexes[s - 1].unique)
            .collect()
    }

    /// Up to `limit` stored keys of slot `slot` after `after` (`None`: from the first), as an
    /// encoded batch with source position 0 and empty values (the primary index under `last`:
    /// the stored rows, whose replaced index entries the build deletes — a columnar table's
    /// as their positions and indexed columns, see [`build::stored_columnar_value`]), and the
    /// last key returned (to pass as `after` for the next page; `None`: no more). The page is
    /// read from one snapshot.
    pub fn existing_entries(
        &self,
        db: &Db,
        slot: usize,
        after: Option<&[u8]>,
        limit: usize,
    ) -> Result<(RecordBatch, Option<Vec<u8>>), ImportError> {
        let index_id = match slot {
            0 => crate::schema::PRIMARY_INDEX_ID,
            s => self.table.indexes[s - 1].id,
        };
        // One snapshot for the page: the primary entries and the chunks they name agree.
        let snap = db.snapshot();
        let mut it = catalog::index_iter_at(db, self.table.id, index_id, Some(&snap))?;
        match after {
            Some(k) => {
                it.seek(k);
                if it.valid() && it.key() == k {
                    it.next();
                }
            }
            None => it.seek_to_first(),
        }
        let replacing = slot == 0 && self.on_duplicate == "last";
        let mut page: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        while it.valid() && page.len() < limit {
            let value = if replacing { it.value() } else { &[] };
            page.push((it.key().to_vec(), value.to_vec()));
            it.next();
        }
        it.status()?;
        drop(it);
        if replacing && self.table.layout == Layout::Columnar {
            self.stored_columnar_rows(db, &snap, &mut page)?;
        }
        let mut b = EntriesBuilder::new(self);
        for (k, v) in &page {
            b.append(slot, k, v, 0);
        }
        let last = page.pop().map(|(k, _)| k);
        let batch = b.finish()?;
        Ok((batch, last))
    }
}

impl JobPlan {
    /// A columnar table's stored rows of one page (key, primary-index value), their values
    /// replaced by what the builds need to replace them under `last`: the position and the
    /// indexed columns ([`build::stored_columnar_value`]). Read in (group, position) order,
    /// so each chunk is read once per page however the groups interleave in key order.
    fn stored_columnar_rows(
        &self,
        db: &Db,
        snap: &sluice::Snapshot,
        page: &mut [(Vec<u8>, Vec<u8>)],
    ) -> Result<(), ImportError> {
        let mut indexed: Vec<usize> = (self.table.indexes.iter())
            .flat_map(|i| i.columns.iter().copied())
            .collect();
        indexed.sort_unstable();
        indexed.dedup();
        let mut chunks = crate::query::ChunkCursors::new(&self.table, Some(&indexed));
        let ropts = ReadOptions {
            snapshot: Some(snap),
            ..Default::default()
        };
        let mut order: Vec<usize> = (0..page.len()).collect();
        order.sort_by_key(|&i| crate::chunk::decode_pk_value(&page[i].1));
        let mut out = Vec::new();
        for i in order {
            let (key, pointer) = &page[i];
            let vals = chunks.row(db, &ropts, key, pointer)?;
            build::stored_columnar_value(&self.table, pointer, &vals, &mut out);
            page[i].1 = std::mem::take(&mut out);
        }
        Ok(())
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

/// Builds an encoded batch, routing each entry to its range under the plan's cuts.
struct EntriesBuilder<'p> {
    plan: &'p JobPlan,
    slot: UInt32Builder,
    range: UInt32Builder,
    key: BinaryBuilder,
    value: BinaryBuilder,
    src: UInt64Builder,
}

impl<'p> EntriesBuilder<'p> {
    fn new(plan: &'p JobPlan) -> Self {
        EntriesBuilder {
            plan,
            slot: UInt32Builder::new(),
            range: UInt32Builder::new(),
            key: BinaryBuilder::new(),
            value: BinaryBuilder::new(),
            src: UInt64Builder::new(),
        }
    }

    fn append(&mut self, slot: usize, key: &[u8], value: &[u8], src: u64) {
        self.slot.append_value(slot as u32);
        self.range.append_value(self.plan.range_of(slot, key));
        self.key.append_value(key);
        self.value.append_value(value);
        self.src.append_value(src);
    }

    fn finish(mut self) -> Result<RecordBatch, ImportError> {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(self.slot.finish()),
            Arc::new(self.range.finish()),
            Arc::new(self.key.finish()),
            Arc::new(self.value.finish()),
            Arc::new(self.src.finish()),
        ];
        RecordBatch::try_new(entries_schema(), columns)
            .map_err(|e| ImportError::Internal(format!("encoded batch: {e}")))
    }
}

fn has_rows(db: &Db, t: &TableDef) -> Result<bool, ImportError> {
    let mut it = catalog::index_iter(db, t.id, crate::schema::PRIMARY_INDEX_ID)?;
    it.seek_to_first();
    let found = it.valid();
    it.status()?;
    Ok(found)
}
