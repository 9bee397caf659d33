//! Reads a block-based table (format_version 1 to 7): footer → metaindex → properties, index
//! (one block, or a partitioned index whose partitions are pinned at open), filter (full or
//! partitioned; Bloom or Ribbon); data blocks on demand through the shared [`BlockCache`].
//!
//! Invariants:
//! 1. Every block read is checked against its trailer checksum (unless the caller turned
//!    verification off) before any byte of it is interpreted; from format_version 6 the
//!    checksum includes the block's offset, and the footer has its own checksum.
//! 2. A [`TableIter`](crate::sst::table_iter::TableIter) with bounds never returns a key outside `[lower, upper)` and never reads a
//!    data block that the index proves lies entirely at or past `upper`.
//! 3. Nothing read from the file can make this module panic; bad bytes become
//!    [`Error::Corruption`] with the file name and the offset of the offending block.
//!
//! A `Table` is immutable after open and shared between threads (`Arc<Table>`).

use std::cmp::Ordering;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::base::bounds::IterBounds;
use crate::base::error::{Error, Result};
use crate::base::iterator::InternalIterator;
use crate::base::key::{self};
use crate::base::range_tombstone::RangeTombstone;
use crate::base::trace::{span, Trace};
use crate::fs::RandomAccessFile;
use crate::sst::block::{Block, KeyOrder};
use crate::sst::cache::{BlockCache, Lookup};
use crate::sst::filter::{BloomReader, FULL_FILTER_META_KEY, PARTITIONED_FILTER_META_KEY};
use crate::sst::footer::{stored_block_checksum, INDEX_META_KEY};
use crate::sst::format::{
    decompress_block, BlockHandle, CompressionType, Footer, IndexType, BLOCK_TRAILER_LEN,
    FOOTER_LEN, MAX_DECOMPRESSED_BLOCK,
};
use crate::sst::index_iter::{IndexIter, IndexLayout, Partitions};
use crate::sst::properties::{TableProperties, PROPERTIES_META_KEY};
use crate::sst::table_filter::TableFilter;

/// Metaindex key of the range deletion block.
pub const RANGE_DEL_META_KEY: &str = "rocksdb.range_del";

/// How to open a table.
#[derive(Clone, Default)]
pub struct TableReadOptions {
    /// Verify block checksums on every read. Default true (see [`TableReadOptions::new`]).
    pub verify_checksums: bool,
    /// Shared cache for data blocks; `None` reads every block from the file.
    pub cache: Option<Arc<BlockCache>>,
}

impl TableReadOptions {
    /// Checksums verified, no cache.
    pub fn new() -> Self {
        TableReadOptions {
            verify_checksums: true,
            cache: None,
        }
    }
}

/// An open table.
pub struct Table {
    file: Arc<dyn RandomAccessFile>,
    path: PathBuf,
    size: u64,
    pub(crate) footer: Footer,
    properties: TableProperties,
    index_type: IndexType,
    /// The index block (the top level of a partitioned index).
    pub(crate) index_handle: BlockHandle,
    pub(crate) index: Arc<Block>,
    index_partitions: Option<Partitions>,
    pub(crate) index_layout: IndexLayout,
    filter: TableFilter,
    metaindex: Vec<(String, BlockHandle)>,
    cache: Option<Arc<BlockCache>>,
    cache_id: u64,
    verify_checksums: bool,
    range_dels: Vec<RangeTombstone>,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("path", &self.path)
            .field("size", &self.size)
            .finish()
    }
}

impl Table {
    /// Opens the table at `path` on disk.
    pub fn open_path(path: &Path, opts: &TableReadOptions) -> Result<Arc<Table>> {
        let file = crate::fs::open_file(path).map_err(|e| Error::io(path, e))?;
        Table::open(file, path.to_path_buf(), opts)
    }

    /// Opens a table: reads and validates the footer, metaindex, properties, index and filter.
    pub fn open(
        file: Arc<dyn RandomAccessFile>,
        path: PathBuf,
        opts: &TableReadOptions,
    ) -> Result<Arc<Table>> {
        let size = file.size().map_err(|e| Error::io(&path, e))?;
        if size < FOOTER_LEN as u64 {
            return Err(Error::corruption(
                &path,
                0,
                format!("file of {size} bytes is too short to be a table (footer is {FOOTER_LEN} bytes)"),
            ));
        }
        let footer_off = size - FOOTER_LEN as u64;
        let mut fbuf = [0u8; FOOTER_LEN];
        file.read_exact_at(footer_off, &mut fbuf)
            .map_err(|e| Error::io(&path, e))?;
        let footer = Footer::decode(&fbuf, footer_off)
            .map_err(|(off, why)| Error::corruption(&path, footer_off + off, why))?;
        let mut t = Table {
            file,
            path,
            size,
            footer,
            properties: TableProperties::default(),
            index_type: IndexType::BinarySearch,
            index_handle: footer.index.unwrap_or_default(),
            index: Arc::new(Block::new(vec![0, 0, 0, 0, 1, 0, 0, 0]).expect("empty block")),
            index_partitions: None,
            index_layout: IndexLayout {
                order: KeyOrder::Internal,
                delta: false,
                first_key: false,
            },
            filter: TableFilter::None,
            metaindex: Vec::new(),
            cache: opts.cache.clone(),
            cache_id: opts.cache.as_ref().map_or(0, |c| c.new_id()),
            verify_checksums: opts.verify_checksums,
            range_dels: Vec::new(),
        };
        t.read_metaindex()?;
        t.read_properties()?;
        t.read_index()?;
        t.read_filter()?;
        t.read_range_dels()?;
        Ok(Arc::new(t))
    }

    pub(crate) fn corruption(&self, offset: u64, reason: impl Into<String>) -> Error {
        Error::corruption(&self.path, offset, reason)
    }

    fn read_metaindex(&mut self) -> Result<()> {
        let h = self.footer.metaindex;
        let block = Arc::new(self.read_block(h, "metaindex")?);
        let mut it = block.iter(KeyOrder::Bytewise);
        it.seek_to_first();
        while it.valid() {
            let name = String::from_utf8_lossy(it.key()).into_owned();
            let handle = BlockHandle::decode_exact(it.value()).ok_or_else(|| {
                self.corruption(
                    h.offset,
                    format!("metaindex entry {name:?} has a bad block handle"),
                )
            })?;
            self.metaindex.push((name, handle));
            it.next();
        }
        if let Some(e) = it.error() {
            return Err(self.corruption(h.offset, format!("metaindex block: {e}")));
        }
        if self.footer.index.is_none() {
            self.index_handle = self.meta_handle(INDEX_META_KEY).ok_or_else(|| {
                self.corruption(
                    h.offset,
                    format!(
                        "format_version {} metaindex has no {INDEX_META_KEY:?} entry",
                        self.footer.format_version
                    ),
                )
            })?;
        }
        Ok(())
    }

    fn meta_handle(&self, name: &str) -> Option<BlockHandle> {
        self.metaindex
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, h)| *h)
    }

    fn read_properties(&mut self) -> Result<()> {
        let Some(h) = self.meta_handle(PROPERTIES_META_KEY) else {
            return Ok(());
        };
        let block = Arc::new(self.read_block(h, "properties")?);
        let mut it = block.iter(KeyOrder::Bytewise);
        it.seek_to_first();
        let mut pairs = Vec::new();
        while it.valid() {
            pairs.push((it.key().to_vec(), it.value().to_vec()));
            it.next();
        }
        if let Some(e) = it.error() {
            return Err(self.corruption(h.offset, format!("properties block: {e}")));
        }
        self.properties =
            TableProperties::decode(pairs.iter().map(|(k, v)| (k.as_slice(), v.as_slice())))
                .map_err(|e| self.corruption(h.offset, e))?;
        if !self.properties.comparator.is_empty()
            && self.properties.comparator != "leveldb.BytewiseComparator"
        {
            return Err(Error::NotSupported(format!(
                "{}: comparator {:?} (Sluice orders keys bytewise)",
                self.path.display(),
                self.properties.comparator
            )));
        }
        if let Some(raw) = self
            .properties
            .raw
            .get("rocksdb.block.based.table.index.type")
        {
            self.index_type = IndexType::from_property(raw)
                .map_err(|why| Error::NotSupported(format!("{}: {why}", self.path.display())))?;
        }
        if self.footer.format_version >= 7 {
            crate::sst::format::check_compression_name(&self.properties.compression)
                .map_err(|why| Error::NotSupported(format!("{}: {why}", self.path.display())))?;
        }
        Ok(())
    }

    fn read_index(&mut self) -> Result<()> {
        let h = self.index_handle;
        self.index = Arc::new(self.read_block(h, "index")?);
        self.index_layout = IndexLayout {
            order: if self.properties.index_key_is_user_key {
                KeyOrder::Bytewise
            } else {
                KeyOrder::Internal
            },
            delta: self.properties.index_value_is_delta_encoded,
            first_key: self.index_type == IndexType::BinarySearchWithFirstKey,
        };
        if self.index_type == IndexType::TwoLevel {
            self.read_index_partitions()?;
        }
        Ok(())
    }

    /// Reads (and pins) every partition of a partitioned index.
    fn read_index_partitions(&mut self) -> Result<()> {
        let top = self.index_handle;
        let mut parts: Vec<(u64, Arc<Block>)> = Vec::new();
        let mut budget = self.partitions_budget();
        for (_, h) in self.read_top_level(&Arc::clone(&self.index), top, "index")? {
            let raw = self.read_raw_block_max(h, "index partition", budget, Vec::new())?;
            budget = budget.saturating_sub(raw.len());
            let block = Block::new(raw)
                .map_err(|e| self.corruption(h.offset, format!("index partition block: {e}")))?;
            parts.push((h.offset, Arc::new(block)));
        }
        self.index_partitions = Some(Arc::new(parts));
        Ok(())
    }

    /// How many decompressed bytes all the partitions of an index (or of a filter) may take
    /// together: as much as one block may, or four times the file for very large files.
    fn partitions_budget(&self) -> usize {
        let file = usize::try_from(self.size.saturating_mul(4)).unwrap_or(usize::MAX);
        MAX_DECOMPRESSED_BLOCK.max(file)
    }

    /// The entries (separator, partition handle) of the top level of a partitioned index or
    /// filter, which are laid out as an index block.
    pub(crate) fn read_top_level(
        &self,
        block: &Arc<Block>,
        h: BlockHandle,
        what: &str,
    ) -> Result<Vec<(Vec<u8>, BlockHandle)>> {
        let layout = IndexLayout {
            first_key: false,
            ..self.index_layout
        };
        let mut it = IndexIter::new(block, None, layout);
        let mut out = Vec::new();
        it.seek_to_first();
        while it.valid() {
            let handle = it.handle().ok_or_else(|| {
                self.corruption(h.offset, format!("top-level {what} entry has a bad handle"))
            })?;
            // Partitions are written in order, before their top level, and never overlap: so
            // reading them all reads each byte of the file at most once.
            let start = out.last().map_or(0, |(_, p): &(Vec<u8>, BlockHandle)| {
                p.offset + p.size + BLOCK_TRAILER_LEN as u64
            });
            let end = handle
                .offset
                .checked_add(handle.size + BLOCK_TRAILER_LEN as u64);
            if handle.offset < start || end.is_none_or(|e| e > h.offset) {
                return Err(self.corruption(
                    h.offset,
                    format!("top-level {what} entry points outside the partitions' area"),
                ));
            }
            out.push((it.key().to_vec(), handle));
            it.next();
        }
        if let Some(e) = it.error() {
            return Err(self.corruption(h.offset, format!("top-level {what} block: {e}")));
        }
        Ok(out)
    }

    /// The approximate file offset where `user_key`'s entries begin (RocksDB's
    /// `ApproximateOffsetOf`): the offset of the first data block that may hold the key, or
    /// the file size if it lies past the last one. Reads only the index.
    pub fn approximate_offset_of(&self, user_key: &[u8]) -> u64 {
        let target = key::make_internal_key(user_key, key::MAX_SEQNO, key::ValueKind::Value);
        let mut it = self.index_iter();
        it.seek(self.index_layout.seek_target(&target));
        match it.handle() {
            Some(h) if it.valid() => h.offset.min(self.size),
            _ => self.size,
        }
    }

    /// Every data block's handle in file order, read from the index (for tools that show a
    /// table's layout).
    pub fn data_block_handles(&self) -> Result<Vec<BlockHandle>> {
        Ok(self.index_entries()?.into_iter().map(|(_, h)| h).collect())
    }

    /// Every index entry in file order: the separator's user key and the block's handle.
    fn index_entries(&self) -> Result<Vec<(Vec<u8>, BlockHandle)>> {
        let mut it = self.index_iter();
        it.seek_to_first();
        let mut out = Vec::new();
        while it.valid() {
            let Some(h) = it.handle() else { break };
            let sep = self.index_layout.separator_user_key(it.key());
            out.push((sep.unwrap_or_default().to_vec(), h));
            it.next();
        }
        match it.error() {
            Some(e) => Err(self.corruption(self.index_handle.offset, format!("index block: {e}"))),
            None => Ok(out),
        }
    }

    /// Every data block's index separator (a user key at or above the block's last key and
    /// below the next block's first) with the block's size, in file order: sample split
    /// points of the table's key range (an import's parallel merge cuts its runs by them).
    /// The last block's separator is replaced by its last key: it is a short successor of
    /// that key (`[1]` for a key starting `[0, 0, 0, 1, …]`), which can lie above every key
    /// of every table, and a cut there leaves the range above it empty.
    pub fn index_separators(&self) -> Result<Vec<(Vec<u8>, u64)>> {
        let entries = self.index_entries()?;
        let last = entries.last().map(|(_, h)| *h);
        let mut out: Vec<_> = entries.into_iter().map(|(s, h)| (s, h.size)).collect();
        if let (Some(s), Some(h)) = (out.last_mut(), last) {
            let block = self.data_block(h)?;
            let mut it = block.iter(KeyOrder::Internal);
            it.seek_to_last();
            if let Some(e) = it.error() {
                return Err(self.corruption(h.offset, format!("data block: {e}")));
            }
            if it.valid() {
                s.0 = key::user_key(it.key()).to_vec();
            }
        }
        Ok(out)
    }

    /// The index block's handle (the top level of a partitioned index).
    pub fn index_handle(&self) -> BlockHandle {
        self.index_handle
    }

    /// An iterator over the index entries (separator → data block handle).
    pub(crate) fn index_iter(&self) -> IndexIter {
        IndexIter::new(
            &self.index,
            self.index_partitions.clone(),
            self.index_layout,
        )
    }

    fn read_range_dels(&mut self) -> Result<()> {
        let Some(h) = self.meta_handle(RANGE_DEL_META_KEY) else {
            return Ok(());
        };
        let block = Arc::new(self.read_block(h, "range deletion")?);
        let mut it = block.iter(KeyOrder::Internal);
        it.seek_to_first();
        while it.valid() {
            let p = key::parse_internal_key(it.key())
                .filter(|p| p.kind == key::ValueKind::RangeDeletion)
                .ok_or_else(|| {
                    self.corruption(
                        h.offset,
                        "range deletion block holds a key that is not a range deletion",
                    )
                })?;
            self.range_dels.push(RangeTombstone {
                start: p.user_key.to_vec(),
                end: it.value().to_vec(),
                seqno: p.seqno,
            });
            it.next();
        }
        if let Some(e) = it.error() {
            return Err(self.corruption(h.offset, format!("range deletion block: {e}")));
        }
        Ok(())
    }

    /// The table's range deletions, in start-key order.
    pub fn range_deletions(&self) -> &[RangeTombstone] {
        &self.range_dels
    }

    fn read_filter(&mut self) -> Result<()> {
        let full = self.meta_handle(FULL_FILTER_META_KEY);
        let partitioned = self.meta_handle(PARTITIONED_FILTER_META_KEY);
        if full.is_none() && partitioned.is_none() {
            return Ok(());
        }
        // A filter of prefixes (not whole keys) cannot answer point lookups of whole keys.
        let p = &self.properties.raw;
        let whole_keys = p
            .get("rocksdb.block.based.table.whole.key.filtering")
            .is_none_or(|v| v.as_slice() != b"0");
        let no_prefix = p
            .get("rocksdb.prefix.extractor.name")
            .is_none_or(|v| v.is_empty() || v.as_slice() == b"nullptr");
        if !(whole_keys && no_prefix) {
            return Ok(());
        }
        if let Some(h) = full {
            let raw = self.read_raw_block(h, "filter")?;
            let f = BloomReader::new(raw).map_err(|e| self.corruption(h.offset, e))?;
            self.filter = TableFilter::Full(f);
        } else if let Some(h) = partitioned {
            let top = Arc::new(self.read_block(h, "filter index")?);
            let mut parts = Vec::new();
            let mut budget = self.partitions_budget();
            for (sep, ph) in self.read_top_level(&top, h, "filter")? {
                let raw = self.read_raw_block_max(ph, "filter partition", budget, Vec::new())?;
                budget = budget.saturating_sub(raw.len());
                let f = BloomReader::new(raw).map_err(|e| self.corruption(ph.offset, e))?;
                parts.push((sep, f));
            }
            self.filter = TableFilter::Partitioned {
                order: self.index_layout.order,
                parts,
            };
        }
        Ok(())
    }

    /// Reads, verifies and decompresses the block at `h`.
    fn read_raw_block(&self, h: BlockHandle, what: &str) -> Result<Vec<u8>> {
        self.read_raw_block_max(h, what, self.max_decompressed(what), Vec::new())
    }

    /// [`Table::read_raw_block`] with at most `max` decompressed bytes (the partitions of an
    /// index or filter share one budget, see [`Table::partitions_budget`]).
    /// `buf`: a buffer to read into (its contents are overwritten), e.g. a cache spare.
    fn read_raw_block_max(
        &self,
        h: BlockHandle,
        what: &str,
        max: usize,
        mut buf: Vec<u8>,
    ) -> Result<Vec<u8>> {
        // Data blocks precede every meta block, the metaindex and the index: a data handle
        // reaching past them is corrupt, and never makes us read (allocate) beyond them.
        let limit = if what == "data" {
            self.footer.metaindex.offset.min(self.index_handle.offset)
        } else {
            self.size - FOOTER_LEN as u64
        };
        let end = h
            .offset
            .checked_add(h.size)
            .and_then(|e| e.checked_add(BLOCK_TRAILER_LEN as u64))
            .filter(|&e| e <= limit)
            .ok_or_else(|| {
                self.corruption(
                    h.offset,
                    format!("{what} block handle (offset {}, size {}) lies outside the file of {} bytes", h.offset, h.size, self.size),
                )
            })?;
        // Every byte is read over: only bytes past a reused buffer's length are zeroed first.
        // A spare far larger than the block is not kept (the cache charges capacity).
        let len = (end - h.offset) as usize;
        if buf.capacity() > 2 * len {
            buf = Vec::new();
        }
        buf.resize(len, 0);
        self.file
            .read_exact_at(h.offset, &mut buf)
            .map_err(|e| Error::io(&self.path, e))?;
        let n = h.size as usize;
        let ty = buf[n];
        if self.verify_checksums {
            let stored = u32::from_le_bytes([buf[n + 1], buf[n + 2], buf[n + 3], buf[n + 4]]);
            let actual = stored_block_checksum(
                self.footer.checksum,
                self.footer.base_context_checksum,
                h.offset,
                &buf[..n],
                ty,
            );
            if stored != actual {
                return Err(self.corruption(
                    h.offset,
                    format!(
                        "{what} block checksum mismatch ({}): stored {stored:#010x}, computed {actual:#010x}",
                        self.footer.checksum.name()
                    ),
                ));
            }
        }
        let ct = CompressionType::from_u8(ty).ok_or_else(|| {
            self.corruption(
                h.offset + h.size,
                format!("{what} block has unknown compression type {ty}"),
            )
        })?;
        if ct == CompressionType::None {
            buf.truncate(n);
            return Ok(buf);
        }
        decompress_block(ct, &buf[..n], max)
            .map_err(|e| self.corruption(h.offset, format!("{what} block: {e}")))
    }

    /// The largest decompressed size a block may claim: a data block holds at most every key
    /// and value of the table plus entry headers (≤ 15 bytes) and restarts (4 bytes each);
    /// other blocks get the global bound.
    fn max_decompressed(&self, what: &str) -> usize {
        let p = &self.properties;
        if what != "data" || p.num_entries == 0 {
            return crate::sst::format::MAX_DECOMPRESSED_BLOCK;
        }
        let bound = p
            .raw_key_size
            .saturating_add(p.raw_value_size)
            .saturating_add(p.num_entries.saturating_add(1).saturating_mul(20))
            .saturating_add(4096);
        usize::try_from(bound).unwrap_or(usize::MAX)
    }

    fn read_block(&self, h: BlockHandle, what: &str) -> Result<Block> {
        self.read_block_into(h, what, Vec::new())
    }

    /// [`Table::read_block`] into `buf` (see [`Table::read_raw_block_max`]).
    fn read_block_into(&self, h: BlockHandle, what: &str, buf: Vec<u8>) -> Result<Block> {
        let raw = self.read_raw_block_max(h, what, self.max_decompressed(what), buf)?;
        Block::new(raw).map_err(|e| self.corruption(h.offset, format!("{what} block: {e}")))
    }

    /// The data block at `h`, from the cache when possible.
    pub fn data_block(&self, h: BlockHandle) -> Result<Arc<Block>> {
        self.data_block_traced(h, None)
    }

    /// Like [`Table::data_block`], recording the read into `trace` when set: a span per block
    /// with its offset, cache hit or miss and the bytes read from the file.
    pub fn data_block_traced(&self, h: BlockHandle, trace: Option<&Trace>) -> Result<Arc<Block>> {
        let span = span(trace, || format!("data block @{}", h.offset));
        let (block, hit) = self.data_block_cached(h)?;
        if let (Some(span), Some(t)) = (&span, trace) {
            let read = if hit {
                0
            } else {
                h.size + BLOCK_TRAILER_LEN as u64
            };
            span.field("cache", if hit { "hit" } else { "miss" });
            span.field("read", format!("{read} bytes"));
            t.count("data_blocks", 1);
            t.count(if hit { "cache_hits" } else { "cache_misses" }, 1);
            t.count("bytes_read", read);
        }
        Ok(block)
    }

    /// The block and whether it came from the cache.
    fn data_block_cached(&self, h: BlockHandle) -> Result<(Arc<Block>, bool)> {
        if let Some(c) = &self.cache {
            let spare = match c.lookup((self.cache_id, h.offset)) {
                Lookup::Hit(b) => return Ok((b, true)),
                Lookup::Miss(spare) => spare.unwrap_or_default(),
            };
            let b = Arc::new(self.read_block_into(h, "data", spare)?);
            c.insert((self.cache_id, h.offset), Arc::clone(&b));
            return Ok((b, false));
        }
        Ok((Arc::new(self.read_block(h, "data")?), false))
    }

    /// The table's properties.
    pub fn properties(&self) -> &TableProperties {
        &self.properties
    }

    /// The footer.
    pub fn footer(&self) -> &Footer {
        &self.footer
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's size in bytes.
    pub fn file_size(&self) -> u64 {
        self.size
    }

    /// The metaindex entries (meta block name → handle).
    pub fn metaindex(&self) -> &[(String, BlockHandle)] {
        &self.metaindex
    }

    /// True if the table has a filter this build can use (full or partitioned, Bloom or
    /// Ribbon).
    pub fn has_filter(&self) -> bool {
        self.filter.is_effective()
    }

    /// False if the filter proves `user_key` is absent.
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        self.filter.may_contain(user_key)
    }

    /// Bytes of memory pinned by the open table (index and filter).
    pub fn memory_usage(&self) -> usize {
        let parts = self
            .index_partitions
            .as_ref()
            .map_or(0, |p| p.iter().map(|(_, b)| b.charge()).sum());
        self.index.charge() + parts + self.filter.charge()
    }

    /// The newest entry for `user_key` with seqno `<= seqno`: its kind and value.
    /// Consults the filter first.
    pub fn get(
        self: &Arc<Self>,
        user_key: &[u8],
        seqno: u64,
    ) -> Result<Option<(key::ValueKind, Vec<u8>)>> {
        Ok(self
            .get_with_seqno(user_key, seqno)?
            .map(|(kind, value, _)| (kind, value)))
    }

    /// Like [`Table::get`], also returning the entry's seqno.
    pub fn get_with_seqno(
        self: &Arc<Self>,
        user_key: &[u8],
        seqno: u64,
    ) -> Result<Option<(key::ValueKind, Vec<u8>, u64)>> {
        self.get_traced(user_key, seqno, None)
    }

    /// Like [`Table::get_with_seqno`], recording into `trace` (when set) the filter's answer
    /// (`absent`: no usable filter, `negative`: key proven absent, `positive`), the index
    /// (pinned in memory at open) and each data block read, with its cache hit or miss.
    pub fn get_traced(
        self: &Arc<Self>,
        user_key: &[u8],
        seqno: u64,
        trace: Option<&Trace>,
    ) -> Result<Option<(key::ValueKind, Vec<u8>, u64)>> {
        let may_contain = self.may_contain(user_key);
        if let Some(t) = trace {
            self.trace_filter_and_index(t, may_contain);
        }
        if !may_contain {
            return Ok(None);
        }
        let target = key::seek_key(user_key, seqno);
        let mut it = self.iter(IterBounds::default());
        it.set_trace(trace.cloned());
        it.seek(&target);
        it.status()?;
        if !it.valid() {
            return Ok(None);
        }
        let parsed = it.parsed()?;
        if parsed.user_key != user_key {
            return Ok(None);
        }
        Ok(Some((parsed.kind, it.value().to_vec(), parsed.seqno)))
    }

    fn trace_filter_and_index(&self, t: &Trace, may_contain: bool) {
        let filter = match (self.has_filter(), may_contain) {
            (false, _) => "absent",
            (true, false) => "negative",
            (true, true) => "positive",
        };
        let s = t.span("filter");
        s.field("result", filter);
        drop(s);
        t.count(
            if filter == "negative" {
                "filter_negative"
            } else {
                "filter_passed"
            },
            1,
        );
        if may_contain {
            let s = t.span("index block");
            s.field("pinned", format!("{} bytes", self.index_handle.size));
        }
    }

    /// Reads every block, verifying checksums, key order, that the filter admits every key, and
    /// the entry count; returns the number of entries.
    pub fn verify(self: &Arc<Self>) -> Result<u64> {
        let mut it = self.iter(IterBounds::default());
        it.seek_to_first();
        let mut prev: Vec<u8> = Vec::new();
        let mut n = 0u64;
        while it.valid() {
            if key::parse_internal_key(it.key()).is_none() {
                return Err(self.corruption(
                    it.current_block_offset(),
                    format!(
                        "malformed internal key {:?}",
                        crate::base::error::escape_bytes(it.key())
                    ),
                ));
            }
            if n > 0 && key::compare_internal(&prev, it.key()) != Ordering::Less {
                return Err(self.corruption(
                    it.current_block_offset(),
                    format!(
                        "keys out of order: {:?} after {:?}",
                        crate::base::error::escape_bytes(it.key()),
                        crate::base::error::escape_bytes(&prev)
                    ),
                ));
            }
            let user = key::user_key(it.key());
            if !self.may_contain(user) {
                let off = self
                    .meta_handle(FULL_FILTER_META_KEY)
                    .or_else(|| self.meta_handle(PARTITIONED_FILTER_META_KEY))
                    .map_or(0, |h| h.offset);
                return Err(self.corruption(
                    off,
                    format!(
                        "filter reports present key {:?} as absent",
                        crate::base::error::escape_bytes(user)
                    ),
                ));
            }
            prev.clear();
            prev.extend_from_slice(it.key());
            n += 1;
            it.next();
        }
        it.status()?;
        if let Some(h) = self.meta_handle(PROPERTIES_META_KEY) {
            // RocksDB counts range deletions in `num_entries` too; Sluice's writer does not.
            let with_range_dels = n.saturating_add(self.properties.num_range_deletions);
            if self.properties.num_entries != n && self.properties.num_entries != with_range_dels {
                return Err(self.corruption(
                    h.offset,
                    format!(
                        "properties say {} entries, the data blocks hold {n}",
                        self.properties.num_entries
                    ),
                ));
            }
        }
        Ok(n)
    }
}
