//! Streams sorted internal keys into a block-based table.
//!
//! Memory is bounded by about one data block, the index block (twice until the index is known
//! to need internal keys: invariant 4) and (with a filter) 8 bytes per key for the filter
//! hashes. Blocks are written as soon as they fill.
//!
//! Invariants:
//! 1. Keys are strictly increasing under the internal-key order; a violation is
//!    [`Error::KeyOrder`] in every build and leaves the builder usable for nothing but drop.
//! 2. Every block is followed by a trailer whose checksum covers the block and its type byte
//!    (and, in format_version 6, the block's offset: see [`crate::sst::footer`]).
//! 3. Each index entry's separator `s` satisfies `last key of its block <= s < first key of the
//!    next block`, so a seek never misses an entry.
//! 4. The index holds user-key separators (`index_key_is_user_key`) unless some block's last
//!    user key equals the next block's first — then a user key cannot say which block holds
//!    which version, and the index holds internal keys. Its values are delta-encoded
//!    (`index_value_is_delta_encoded`). Both are RocksDB's defaults for format_version 5.

use std::io::Write;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::base::error::{Error, Result};
use crate::base::key::{self, compare_internal, ValueKind, MAX_SEQNO};
use crate::sst::block::BlockBuilder;
use crate::sst::filter::{BloomBuilder, FULL_FILTER_META_KEY};
use crate::sst::footer::{stored_block_checksum, INDEX_META_KEY};
use crate::sst::format::{
    compress_block, BlockHandle, ChecksumType, CompressionType, Footer, FORMAT_VERSION,
};
use crate::sst::properties::{TableProperties, PROPERTIES_META_KEY, UNKNOWN_COLUMN_FAMILY};

/// How a table is laid out. Defaults match RocksDB's.
#[derive(Debug, Clone)]
pub struct TableOptions {
    /// Target uncompressed size of a data block, in bytes. Default 4096.
    pub block_size: usize,
    /// Entries between restart points in data blocks. Default 16.
    pub restart_interval: usize,
    /// Compression of data blocks. Default none.
    pub compression: CompressionType,
    /// Block checksum. Default CRC32c.
    pub checksum: ChecksumType,
    /// Bloom filter bits per key; `None` writes no filter. Default `Some(10.0)`.
    pub bloom_bits_per_key: Option<f64>,
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            block_size: 4096,
            restart_interval: 16,
            compression: CompressionType::None,
            checksum: ChecksumType::Crc32c,
            bloom_bits_per_key: Some(10.0),
        }
    }
}

impl TableOptions {
    /// Rejects settings that cannot produce a valid table.
    pub fn validate(&self) -> Result<()> {
        if self.block_size == 0 || self.block_size > (1 << 30) {
            return Err(Error::InvalidArgument(format!(
                "block_size must be in 1..=1GiB, got {}",
                self.block_size
            )));
        }
        if self.restart_interval == 0 {
            return Err(Error::InvalidArgument(
                "restart_interval must be at least 1".into(),
            ));
        }
        if !self.compression.writable() {
            return Err(Error::InvalidArgument(format!(
                "compression {:?} can be read but not written",
                self.compression
            )));
        }
        if !matches!(self.checksum, ChecksumType::Crc32c | ChecksumType::Xxh3) {
            return Err(Error::InvalidArgument(
                "checksum must be crc32c or xxh3".into(),
            ));
        }
        if let Some(b) = self.bloom_bits_per_key {
            if !(b > 0.0 && b <= 100.0) {
                return Err(Error::InvalidArgument(format!(
                    "bloom_bits_per_key must be in (0, 100], got {b}"
                )));
            }
        }
        Ok(())
    }
}

/// Extra properties a caller stamps on the table.
#[derive(Debug, Clone, Default)]
pub struct TableIdentity {
    /// Set for external files (RocksDB's `SstFileWriter` writes version 2, global seqno 0).
    pub external_sst: bool,
    /// Creator identity recorded in the properties.
    pub db_id: String,
    /// Creator session recorded in the properties.
    pub db_session_id: String,
}

/// Writes one table to `W`.
pub struct TableBuilder<W: Write> {
    out: W,
    offset: u64,
    opts: TableOptions,
    identity: TableIdentity,
    data: BlockBuilder,
    /// The index with internal-key separators; used where two blocks share a user key at their
    /// edge (`separator_needs_seqno`).
    index: BlockBuilder,
    /// The same index with user-key separators (RocksDB's default from format_version 3:
    /// 8 bytes less an entry); used otherwise.
    user_index: BlockBuilder,
    /// Some block's last user key equals the next block's first: the index must tell their
    /// versions apart by seqno (RocksDB's `seperator_is_key_plus_seq_`).
    separator_needs_seqno: bool,
    filter: Option<BloomBuilder>,
    /// Handle of the last flushed data block, waiting for the next key to pick its separator.
    pending_handle: Option<BlockHandle>,
    last_key: Vec<u8>,
    first_key: Vec<u8>,
    props: TableProperties,
    scratch: Vec<u8>,
    separator: Vec<u8>,
    range_dels: Vec<(Vec<u8>, Vec<u8>)>,
    format_version: u32,
    /// The base of the checksum context (format_version 6; zero before).
    base_context: u32,
}

impl<W: Write> TableBuilder<W> {
    /// Starts a table. Options are validated here.
    pub fn new(out: W, opts: TableOptions, identity: TableIdentity) -> Result<Self> {
        opts.validate()?;
        let filter = opts.bloom_bits_per_key.map(BloomBuilder::new);
        Ok(TableBuilder {
            out,
            offset: 0,
            data: BlockBuilder::new(opts.restart_interval),
            index: BlockBuilder::new(1),
            user_index: BlockBuilder::new(1),
            separator_needs_seqno: false,
            filter,
            pending_handle: None,
            last_key: Vec::with_capacity(64),
            first_key: Vec::new(),
            props: TableProperties {
                smallest_seqno: MAX_SEQNO,
                ..Default::default()
            },
            scratch: Vec::new(),
            separator: Vec::with_capacity(64),
            range_dels: Vec::new(),
            format_version: FORMAT_VERSION,
            base_context: 0,
            opts,
            identity,
        })
    }

    /// Writes `format_version` 6 instead of the default [`FORMAT_VERSION`] (5): a
    /// checksummed footer, block checksums that include each block's offset, the index handle
    /// in the metaindex. Call before adding anything. Readable by RocksDB ≥ 8.6 and by Sluice;
    /// the default stays 5 so that older RocksDB releases can ingest Sluice's files.
    pub fn with_format_version(mut self, version: u32) -> Result<Self> {
        if !matches!(version, 5 | 6) || self.offset != 0 {
            return Err(Error::InvalidArgument(format!(
                "Sluice writes format_version 5 or 6 (set before adding entries), got {version}"
            )));
        }
        self.format_version = version;
        self.base_context = if version >= 6 { new_base_context() } else { 0 };
        Ok(self)
    }

    /// Appends one entry. `ikey` must sort strictly after the previous key.
    #[inline]
    pub fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        self.add_checked(ikey, value, true)
    }

    /// [`add`](Self::add) for a caller that has checked the order itself (the SST writer
    /// compares user keys, which are unique there): no second key comparison.
    pub(crate) fn add_ordered(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        self.add_checked(ikey, value, false)
    }

    #[inline]
    fn add_checked(&mut self, ikey: &[u8], value: &[u8], check_order: bool) -> Result<()> {
        let Some(parsed) = key::parse_internal_key(ikey) else {
            return Err(Error::InvalidArgument(format!(
                "malformed internal key of {} bytes",
                ikey.len()
            )));
        };
        if self.props.num_entries > 0 {
            if check_order && compare_internal(&self.last_key, ikey) != std::cmp::Ordering::Less {
                return Err(Error::KeyOrder {
                    previous: self.last_key.clone(),
                    key: ikey.to_vec(),
                });
            }
        } else {
            self.first_key.extend_from_slice(ikey);
        }
        if parsed.kind == ValueKind::RangeDeletion {
            return Err(Error::NotSupported(
                "range deletions in table builder (use the range-del block)".into(),
            ));
        }
        if let Some(handle) = self.pending_handle.take() {
            self.add_index_entry(handle, Some(ikey));
        }
        if let Some(f) = &mut self.filter {
            f.add_key(parsed.user_key);
        }
        self.data.add(ikey, value);
        self.last_key.clear();
        self.last_key.extend_from_slice(ikey);
        let p = &mut self.props;
        p.num_entries += 1;
        p.raw_key_size += ikey.len() as u64;
        p.raw_value_size += value.len() as u64;
        if parsed.kind == ValueKind::Deletion {
            p.num_deletions += 1;
        }
        p.smallest_seqno = p.smallest_seqno.min(parsed.seqno);
        p.largest_seqno = p.largest_seqno.max(parsed.seqno);
        if self.data.estimated_size() >= self.opts.block_size {
            self.flush_data_block()?;
        }
        Ok(())
    }

    /// Adds a range deletion of user keys `[start, end)` at `seqno`. Range deletions go to
    /// their own block and may be added in any order relative to point entries.
    pub fn add_range_deletion(&mut self, start: &[u8], end: &[u8], seqno: u64) -> Result<()> {
        if start >= end {
            return Err(Error::InvalidArgument(format!(
                "range deletion start {:?} must sort before its end {:?}",
                crate::base::error::escape_bytes(start),
                crate::base::error::escape_bytes(end)
            )));
        }
        let k = key::make_internal_key(start, seqno, ValueKind::RangeDeletion);
        self.range_dels.push((k, end.to_vec()));
        let p = &mut self.props;
        p.num_range_deletions += 1;
        p.smallest_seqno = p.smallest_seqno.min(seqno);
        p.largest_seqno = p.largest_seqno.max(seqno);
        Ok(())
    }

    /// Point entries added so far.
    pub fn num_entries(&self) -> u64 {
        self.props.num_entries
    }

    /// Bytes written so far plus the open data block: a lower bound of the final file size.
    pub fn estimated_file_size(&self) -> u64 {
        self.offset + self.data.estimated_size() as u64
    }

    /// The first key added (empty if none).
    pub fn first_key(&self) -> &[u8] {
        &self.first_key
    }

    /// The last key added (empty if none).
    pub fn last_key(&self) -> &[u8] {
        &self.last_key
    }

    fn add_index_entry(&mut self, handle: BlockHandle, next_key: Option<&[u8]>) {
        let last_user = key::user_key(&self.last_key);
        let shortened = match next_key {
            Some(next) => {
                let next_user = key::user_key(next);
                self.separator_needs_seqno |= last_user == next_user;
                key::shortest_separator(last_user, next_user)
            }
            None => key::short_successor(last_user),
        };
        // Values delta-encoded (RocksDB's default from format_version 4): every entry of these
        // restart-interval-1 blocks is a restart point, so each holds its full handle without
        // a length.
        let mut full = Vec::with_capacity(20);
        handle.encode_to(&mut full);
        if self.separator_needs_seqno {
            if !self.user_index.is_empty() {
                // Not used any more: let its memory go.
                self.user_index = BlockBuilder::new(1);
            }
        } else {
            self.user_index.add_full_handle(&shortened, &full);
        }
        self.separator.clear();
        if shortened.as_slice() == last_user {
            self.separator.extend_from_slice(&self.last_key);
        } else {
            // Any trailer works for a shortened key since its user key lies strictly between
            // the neighbours; MAX_SEQNO makes it the smallest internal key for that user key.
            key::append_internal_key(
                &mut self.separator,
                &shortened,
                MAX_SEQNO,
                ValueKind::Value as u8,
            );
        }
        self.index.add_full_handle(&self.separator, &full);
    }

    fn flush_data_block(&mut self) -> Result<()> {
        if self.data.is_empty() {
            return Ok(());
        }
        let compression = self.opts.compression;
        let raw = self.data.finish();
        let (ty, bytes) = if compression == CompressionType::None {
            (CompressionType::None, raw)
        } else if compress_block(compression, raw, &mut self.scratch)
            && self.scratch.len() < raw.len() - raw.len() / 8
        {
            (compression, self.scratch.as_slice())
        } else {
            (CompressionType::None, raw)
        };
        let handle = write_block(
            &mut self.out,
            &mut self.offset,
            (self.opts.checksum, self.base_context),
            bytes,
            ty,
        )?;
        self.props.data_size = self.offset;
        self.props.num_data_blocks += 1;
        self.data.reset();
        self.pending_handle = Some(handle);
        Ok(())
    }

    /// Writes the filter, index, properties, metaindex and footer; returns the output and the
    /// table's properties. The table holds at least one entry or this is an error.
    pub fn finish(mut self) -> Result<(W, TableProperties)> {
        self.flush_data_block()?;
        if let Some(h) = self.pending_handle.take() {
            self.add_index_entry(h, None);
        }
        let mut meta: Vec<(String, BlockHandle)> = Vec::new();
        meta.extend(self.write_filter_block()?);
        meta.extend(self.write_range_del_block()?);
        let user_keys = !self.separator_needs_seqno;
        let index_block = if user_keys {
            self.user_index.finish().to_vec()
        } else {
            self.index.finish().to_vec()
        };
        let index = self.write_raw(index_block)?;
        self.finalize_properties(index, user_keys);
        meta.push((
            PROPERTIES_META_KEY.to_string(),
            self.write_properties_block()?,
        ));
        // From format_version 6 the index is found through the metaindex, which must end
        // right before the footer (it does: it is the last block written).
        let in_footer = if self.format_version >= 6 {
            meta.push((INDEX_META_KEY.to_string(), index));
            None
        } else {
            Some(index)
        };
        let metaindex = self.write_metaindex(meta)?;
        let footer = Footer {
            checksum: self.opts.checksum,
            metaindex,
            index: in_footer,
            format_version: self.format_version,
            base_context_checksum: self.base_context,
        }
        .encode(self.offset);
        self.out.write_all(&footer)?;
        self.offset += footer.len() as u64;
        self.out.flush()?;
        Ok((self.out, self.props))
    }

    /// Writes a finished meta/index block (never compressed) and returns its handle.
    fn write_raw(&mut self, block: Vec<u8>) -> Result<BlockHandle> {
        write_block(
            &mut self.out,
            &mut self.offset,
            (self.opts.checksum, self.base_context),
            &block,
            CompressionType::None,
        )
    }

    /// The full Bloom filter block, if the table has a filter.
    fn write_filter_block(&mut self) -> Result<Option<(String, BlockHandle)>> {
        let Some(f) = &mut self.filter else {
            return Ok(None);
        };
        self.props.num_filter_entries = f.len() as u64;
        let block = f.finish();
        let h = self.write_raw(block)?;
        self.props.filter_size = h.size;
        self.props.filter_policy = "bloomfilter".into();
        Ok(Some((FULL_FILTER_META_KEY.to_string(), h)))
    }

    /// The range deletion block, sorted by internal key, if there are range deletions.
    fn write_range_del_block(&mut self) -> Result<Option<(String, BlockHandle)>> {
        if self.range_dels.is_empty() {
            return Ok(None);
        }
        self.range_dels.sort_by(|a, b| compare_internal(&a.0, &b.0));
        let mut rb = BlockBuilder::new(1);
        for (k, v) in &self.range_dels {
            rb.add(k, v);
        }
        let h = self.write_raw(rb.finish().to_vec())?;
        Ok(Some((crate::sst::table::RANGE_DEL_META_KEY.to_string(), h)))
    }

    /// Fills in the properties known only at the end.
    fn finalize_properties(&mut self, index: BlockHandle, index_key_is_user_key: bool) {
        let p = &mut self.props;
        p.index_size = index.size + 5;
        p.format_version = u64::from(self.format_version);
        p.comparator = "leveldb.BytewiseComparator".into();
        p.compression = self.opts.compression.rocksdb_name().into();
        p.column_family_id = UNKNOWN_COLUMN_FAMILY;
        p.index_key_is_user_key = index_key_is_user_key;
        p.index_value_is_delta_encoded = true;
        if p.num_entries == 0 && p.num_range_deletions == 0 {
            p.smallest_seqno = 0;
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        p.creation_time = now;
        p.file_creation_time = now;
        p.db_id = self.identity.db_id.clone();
        p.db_session_id = self.identity.db_session_id.clone();
        if self.identity.external_sst {
            p.external_sst_version = Some(2);
            p.global_seqno = Some(0);
        }
    }

    /// The `rocksdb.properties` block.
    fn write_properties_block(&mut self) -> Result<BlockHandle> {
        let mut pb = BlockBuilder::new(1);
        for (k, v) in self.props.encode() {
            pb.add(k.as_bytes(), &v);
        }
        self.write_raw(pb.finish().to_vec())
    }

    /// The metaindex block: each meta block's name and handle, sorted by name.
    fn write_metaindex(&mut self, mut meta: Vec<(String, BlockHandle)>) -> Result<BlockHandle> {
        meta.sort_by(|a, b| a.0.cmp(&b.0));
        let mut mb = BlockBuilder::new(1);
        for (k, h) in &meta {
            let mut v = Vec::new();
            h.encode_to(&mut v);
            mb.add(k.as_bytes(), &v);
        }
        self.write_raw(mb.finish().to_vec())
    }

    /// Total bytes written (valid after [`finish`](Self::finish) via the properties' sizes).
    pub fn offset(&self) -> u64 {
        self.offset
    }
}

/// Writes a block and its trailer; `(checksum, base)` are the checksum type and base context
/// (zero before format_version 6).
fn write_block<W: Write>(
    out: &mut W,
    offset: &mut u64,
    (checksum, base): (ChecksumType, u32),
    bytes: &[u8],
    ty: CompressionType,
) -> Result<BlockHandle> {
    let handle = BlockHandle {
        offset: *offset,
        size: bytes.len() as u64,
    };
    let mut trailer = [0u8; 5];
    trailer[0] = ty as u8;
    let sum = stored_block_checksum(checksum, base, *offset, bytes, ty as u8);
    trailer[1..].copy_from_slice(&sum.to_le_bytes());
    out.write_all(bytes)?;
    out.write_all(&trailer)?;
    *offset += bytes.len() as u64 + trailer.len() as u64;
    Ok(handle)
}

/// A base context checksum for a new file: differs between files (time, process, a counter) so
/// that a block copied from another table fails its check; never zero (zero means "no context").
fn new_base_context() -> u32 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut seed = [0u8; 24];
    seed[..8].copy_from_slice(&nanos.to_le_bytes());
    seed[8..16].copy_from_slice(&u64::from(std::process::id()).to_le_bytes());
    seed[16..].copy_from_slice(&COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    (xxhash_rust::xxh3::xxh3_64(&seed) as u32).max(1)
}
