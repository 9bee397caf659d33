//! The `rocksdb.properties` meta block: a sorted bytewise block of name → value, integers as
//! varint64, strings as raw bytes, plus the user-collected properties RocksDB needs to ingest an
//! external file (`rocksdb.external_sst_file.*`, fixed-width).

use std::collections::BTreeMap;

use crate::base::coding::{
    decode_fixed32, decode_fixed64, decode_varint64, put_fixed32, put_fixed64, put_varint64,
};

/// Metaindex key of the properties block.
pub const PROPERTIES_META_KEY: &str = "rocksdb.properties";

/// RocksDB property names.
pub mod names {
    #![allow(missing_docs)]
    pub const DATA_SIZE: &str = "rocksdb.data.size";
    pub const INDEX_SIZE: &str = "rocksdb.index.size";
    pub const FILTER_SIZE: &str = "rocksdb.filter.size";
    pub const RAW_KEY_SIZE: &str = "rocksdb.raw.key.size";
    pub const RAW_VALUE_SIZE: &str = "rocksdb.raw.value.size";
    pub const NUM_DATA_BLOCKS: &str = "rocksdb.num.data.blocks";
    pub const NUM_ENTRIES: &str = "rocksdb.num.entries";
    pub const NUM_FILTER_ENTRIES: &str = "rocksdb.num.filter_entries";
    pub const DELETED_KEYS: &str = "rocksdb.deleted.keys";
    pub const MERGE_OPERANDS: &str = "rocksdb.merge.operands";
    pub const NUM_RANGE_DELETIONS: &str = "rocksdb.num.range-deletions";
    pub const FORMAT_VERSION: &str = "rocksdb.format.version";
    pub const FIXED_KEY_LEN: &str = "rocksdb.fixed.key.length";
    pub const FILTER_POLICY: &str = "rocksdb.filter.policy";
    pub const COLUMN_FAMILY_ID: &str = "rocksdb.column.family.id";
    pub const COLUMN_FAMILY_NAME: &str = "rocksdb.column.family.name";
    pub const COMPARATOR: &str = "rocksdb.comparator";
    pub const MERGE_OPERATOR: &str = "rocksdb.merge.operator";
    pub const PREFIX_EXTRACTOR: &str = "rocksdb.prefix.extractor.name";
    pub const PROPERTY_COLLECTORS: &str = "rocksdb.property.collectors";
    pub const COMPRESSION: &str = "rocksdb.compression";
    pub const COMPRESSION_OPTIONS: &str = "rocksdb.compression_options";
    pub const CREATION_TIME: &str = "rocksdb.creation.time";
    pub const OLDEST_KEY_TIME: &str = "rocksdb.oldest.key.time";
    pub const FILE_CREATION_TIME: &str = "rocksdb.file.creation.time";
    pub const INDEX_KEY_IS_USER_KEY: &str = "rocksdb.index.key.is.user.key";
    pub const INDEX_VALUE_IS_DELTA_ENCODED: &str = "rocksdb.index.value.is.delta.encoded";
    pub const DB_ID: &str = "rocksdb.creating.db.identity";
    pub const DB_SESSION_ID: &str = "rocksdb.creating.session.identity";
    pub const ORIG_FILE_NUMBER: &str = "rocksdb.original.file.number";
    pub const SMALLEST_SEQNO: &str = "rocksdb.key.smallest.seqno";
    pub const LARGEST_SEQNO: &str = "rocksdb.key.largest.seqno";
    pub const INDEX_TYPE: &str = "rocksdb.block.based.table.index.type";
    pub const WHOLE_KEY_FILTERING: &str = "rocksdb.block.based.table.whole.key.filtering";
    pub const PREFIX_FILTERING: &str = "rocksdb.block.based.table.prefix.filtering";
    pub const EXTERNAL_SST_VERSION: &str = "rocksdb.external_sst_file.version";
    pub const EXTERNAL_SST_GLOBAL_SEQNO: &str = "rocksdb.external_sst_file.global_seqno";
}

/// Column family id RocksDB uses for "unknown" (files from `SstFileWriter` without a handle).
pub const UNKNOWN_COLUMN_FAMILY: u64 = 0x7fff_ffff;

/// Properties of one table. Integer fields use RocksDB's varint encoding on disk.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TableProperties {
    /// Bytes of data blocks (with trailers).
    pub data_size: u64,
    /// Bytes of the index block (with trailer).
    pub index_size: u64,
    /// Bytes of the filter block (with trailer).
    pub filter_size: u64,
    /// Sum of internal key lengths.
    pub raw_key_size: u64,
    /// Sum of value lengths.
    pub raw_value_size: u64,
    /// Number of data blocks.
    pub num_data_blocks: u64,
    /// Number of entries (all kinds except range deletions).
    pub num_entries: u64,
    /// Number of keys added to the filter.
    pub num_filter_entries: u64,
    /// Number of point deletions.
    pub num_deletions: u64,
    /// Number of range deletions.
    pub num_range_deletions: u64,
    /// Table format version.
    pub format_version: u64,
    /// Filter policy name, empty when there is no filter.
    pub filter_policy: String,
    /// Comparator name.
    pub comparator: String,
    /// Compression name (RocksDB spelling).
    pub compression: String,
    /// Unix seconds when the table was created.
    pub creation_time: u64,
    /// Unix seconds when the file was created.
    pub file_creation_time: u64,
    /// Column family id.
    pub column_family_id: u64,
    /// Column family name.
    pub column_family_name: String,
    /// Whether index keys are user keys (no seqno trailer).
    pub index_key_is_user_key: bool,
    /// Whether index values are delta-encoded block handles.
    pub index_value_is_delta_encoded: bool,
    /// Smallest seqno in the table.
    pub smallest_seqno: u64,
    /// Largest seqno in the table.
    pub largest_seqno: u64,
    /// Identity of the creator.
    pub db_id: String,
    /// Session identity of the creator.
    pub db_session_id: String,
    /// `rocksdb.external_sst_file.version`, when present (2 for files from `SstFileWriter`).
    pub external_sst_version: Option<u32>,
    /// `rocksdb.external_sst_file.global_seqno`, when present.
    pub global_seqno: Option<u64>,
    /// Every property as read, values rendered for display (including unknown ones).
    pub raw: BTreeMap<String, Vec<u8>>,
}

impl TableProperties {
    /// Encodes the properties block contents: (name, value) pairs sorted by name.
    pub fn encode(&self) -> Vec<(String, Vec<u8>)> {
        use names::*;
        let mut m: BTreeMap<&str, Vec<u8>> = BTreeMap::new();
        let mut int = |k: &'static str, v: u64| {
            let mut b = Vec::new();
            put_varint64(&mut b, v);
            m.insert(k, b);
        };
        int(DATA_SIZE, self.data_size);
        int(INDEX_SIZE, self.index_size);
        int(FILTER_SIZE, self.filter_size);
        int(RAW_KEY_SIZE, self.raw_key_size);
        int(RAW_VALUE_SIZE, self.raw_value_size);
        int(NUM_DATA_BLOCKS, self.num_data_blocks);
        int(NUM_ENTRIES, self.num_entries);
        int(NUM_FILTER_ENTRIES, self.num_filter_entries);
        int(DELETED_KEYS, self.num_deletions);
        int(MERGE_OPERANDS, 0);
        int(NUM_RANGE_DELETIONS, self.num_range_deletions);
        int(FORMAT_VERSION, self.format_version);
        int(FIXED_KEY_LEN, 0);
        int(COLUMN_FAMILY_ID, self.column_family_id);
        int(CREATION_TIME, self.creation_time);
        int(OLDEST_KEY_TIME, self.creation_time);
        int(FILE_CREATION_TIME, self.file_creation_time);
        int(INDEX_KEY_IS_USER_KEY, u64::from(self.index_key_is_user_key));
        int(
            INDEX_VALUE_IS_DELTA_ENCODED,
            u64::from(self.index_value_is_delta_encoded),
        );
        int(ORIG_FILE_NUMBER, 0);
        int(SMALLEST_SEQNO, self.smallest_seqno);
        int(LARGEST_SEQNO, self.largest_seqno);
        let strings = [
            (FILTER_POLICY, self.filter_policy.as_str()),
            (COMPARATOR, self.comparator.as_str()),
            (COMPRESSION, self.compression.as_str()),
            (COLUMN_FAMILY_NAME, self.column_family_name.as_str()),
            (MERGE_OPERATOR, "nullptr"),
            (PREFIX_EXTRACTOR, "nullptr"),
            (PROPERTY_COLLECTORS, "[]"),
            (COMPRESSION_OPTIONS, ""),
            (DB_ID, self.db_id.as_str()),
            (DB_SESSION_ID, self.db_session_id.as_str()),
            (WHOLE_KEY_FILTERING, "1"),
            (PREFIX_FILTERING, "0"),
        ];
        for (k, v) in strings {
            m.insert(k, v.as_bytes().to_vec());
        }
        let mut b = Vec::new();
        put_fixed32(&mut b, 0); // BinarySearch index
        m.insert(INDEX_TYPE, b);
        if let Some(v) = self.external_sst_version {
            let mut b = Vec::new();
            put_fixed32(&mut b, v);
            m.insert(EXTERNAL_SST_VERSION, b);
        }
        if let Some(v) = self.global_seqno {
            let mut b = Vec::new();
            put_fixed64(&mut b, v);
            m.insert(EXTERNAL_SST_GLOBAL_SEQNO, b);
        }
        m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
    }

    /// Decodes from (name, value) pairs. Unknown names are kept in `raw`; malformed values of
    /// known names are errors (reasons).
    pub fn decode<'a>(
        pairs: impl IntoIterator<Item = (&'a [u8], &'a [u8])>,
    ) -> Result<Self, String> {
        use names::*;
        let mut p = TableProperties::default();
        for (k, v) in pairs {
            let name = String::from_utf8_lossy(k).into_owned();
            let int = || -> Result<u64, String> {
                match decode_varint64(v) {
                    Some((x, n)) if n == v.len() => Ok(x),
                    _ => Err(format!("property {name} is not a varint64")),
                }
            };
            let s = || String::from_utf8_lossy(v).into_owned();
            match name.as_str() {
                DATA_SIZE => p.data_size = int()?,
                INDEX_SIZE => p.index_size = int()?,
                FILTER_SIZE => p.filter_size = int()?,
                RAW_KEY_SIZE => p.raw_key_size = int()?,
                RAW_VALUE_SIZE => p.raw_value_size = int()?,
                NUM_DATA_BLOCKS => p.num_data_blocks = int()?,
                NUM_ENTRIES => p.num_entries = int()?,
                NUM_FILTER_ENTRIES => p.num_filter_entries = int()?,
                DELETED_KEYS => p.num_deletions = int()?,
                NUM_RANGE_DELETIONS => p.num_range_deletions = int()?,
                FORMAT_VERSION => p.format_version = int()?,
                COLUMN_FAMILY_ID => p.column_family_id = int()?,
                CREATION_TIME => p.creation_time = int()?,
                FILE_CREATION_TIME => p.file_creation_time = int()?,
                INDEX_KEY_IS_USER_KEY => p.index_key_is_user_key = int()? != 0,
                INDEX_VALUE_IS_DELTA_ENCODED => p.index_value_is_delta_encoded = int()? != 0,
                SMALLEST_SEQNO => p.smallest_seqno = int()?,
                LARGEST_SEQNO => p.largest_seqno = int()?,
                FILTER_POLICY => p.filter_policy = s(),
                COMPARATOR => p.comparator = s(),
                COMPRESSION => p.compression = s(),
                COLUMN_FAMILY_NAME => p.column_family_name = s(),
                DB_ID => p.db_id = s(),
                DB_SESSION_ID => p.db_session_id = s(),
                EXTERNAL_SST_VERSION => {
                    p.external_sst_version = Some(
                        decode_fixed32(v)
                            .filter(|_| v.len() == 4)
                            .ok_or_else(|| format!("property {name} is not a fixed32"))?,
                    )
                }
                EXTERNAL_SST_GLOBAL_SEQNO => {
                    p.global_seqno = Some(
                        decode_fixed64(v)
                            .filter(|_| v.len() == 8)
                            .ok_or_else(|| format!("property {name} is not a fixed64"))?,
                    )
                }
                _ => {}
            }
            p.raw.insert(name, v.to_vec());
        }
        Ok(p)
    }

    /// Renders a property value for humans: known integer properties as numbers, printable
    /// strings as they are, anything else as hex.
    pub fn display_value(name: &str, v: &[u8]) -> String {
        use names::*;
        let ints = [
            DATA_SIZE,
            INDEX_SIZE,
            FILTER_SIZE,
            RAW_KEY_SIZE,
            RAW_VALUE_SIZE,
            NUM_DATA_BLOCKS,
            NUM_ENTRIES,
            NUM_FILTER_ENTRIES,
            DELETED_KEYS,
            MERGE_OPERANDS,
            NUM_RANGE_DELETIONS,
            FORMAT_VERSION,
            FIXED_KEY_LEN,
            COLUMN_FAMILY_ID,
            CREATION_TIME,
            OLDEST_KEY_TIME,
            FILE_CREATION_TIME,
            INDEX_KEY_IS_USER_KEY,
            INDEX_VALUE_IS_DELTA_ENCODED,
            ORIG_FILE_NUMBER,
            SMALLEST_SEQNO,
            LARGEST_SEQNO,
            "rocksdb.tail.start.offset",
            "rocksdb.index.partitions",
            "rocksdb.top-level.index.size",
        ];
        if ints.contains(&name) {
            if let Some((x, n)) = decode_varint64(v) {
                if n == v.len() {
                    return x.to_string();
                }
            }
        }
        if name == EXTERNAL_SST_VERSION || name == INDEX_TYPE {
            if let Some(x) = decode_fixed32(v).filter(|_| v.len() == 4) {
                return x.to_string();
            }
        }
        if name == EXTERNAL_SST_GLOBAL_SEQNO {
            if let Some(x) = decode_fixed64(v).filter(|_| v.len() == 8) {
                return x.to_string();
            }
        }
        match std::str::from_utf8(v) {
            Ok(s) if s.chars().all(|c| !c.is_control()) => s.to_string(),
            _ => v.iter().map(|b| format!("{b:02x}")).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_keeps_known_fields() {
        let p = TableProperties {
            data_size: 123_456,
            num_entries: 1000,
            raw_key_size: 24_000,
            comparator: "leveldb.BytewiseComparator".into(),
            external_sst_version: Some(2),
            global_seqno: Some(0),
            format_version: 5,
            ..Default::default()
        };
        let enc = p.encode();
        assert!(
            enc.windows(2).all(|w| w[0].0 < w[1].0),
            "names must be sorted"
        );
        let d =
            TableProperties::decode(enc.iter().map(|(k, v)| (k.as_bytes(), v.as_slice()))).unwrap();
        assert_eq!(d.data_size, 123_456);
        assert_eq!(d.num_entries, 1000);
        assert_eq!(d.external_sst_version, Some(2));
        assert_eq!(d.global_seqno, Some(0));
        assert_eq!(d.comparator, "leveldb.BytewiseComparator");
    }

    #[test]
    fn malformed_integer_is_an_error() {
        let pairs: [(&[u8], &[u8]); 1] = [(names::NUM_ENTRIES.as_bytes(), &[0x80])];
        assert!(TableProperties::decode(pairs).is_err());
    }
}
