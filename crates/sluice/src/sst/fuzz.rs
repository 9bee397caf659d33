//! The table-reader fuzz harness, shared by the cargo-fuzz target (`fuzz/`) and the seeded
//! mutation test that runs in CI.

use std::sync::Arc;

use crate::base::bounds::IterBounds;
use crate::base::iterator::InternalIterator;
use crate::base::key;
use crate::sst::table::{Table, TableReadOptions};

/// Opens `bytes` as a table and exercises every read path, with checksums verified and then
/// with them off (so that corrupt bytes reach every parser). Must never panic; returns the
/// number of entries seen when everything read cleanly with checksums verified, or `None` if
/// an error surfaced.
pub fn exercise_table_bytes(bytes: &[u8]) -> Option<u64> {
    let unchecked = TableReadOptions {
        verify_checksums: false,
        cache: None,
    };
    let _ = exercise(bytes, &unchecked);
    exercise(bytes, &TableReadOptions::new())
}

fn exercise(bytes: &[u8], opts: &TableReadOptions) -> Option<u64> {
    let file: Arc<dyn crate::fs::RandomAccessFile> = Arc::new(bytes.to_vec());
    let table = Table::open(file, "fuzz.sst".into(), opts).ok()?;
    let mut n = 0u64;
    let mut ok = true;
    {
        let mut it = table.iter(IterBounds::default());
        it.seek_to_first();
        let mut first_keys = Vec::new();
        while it.valid() && n < 100_000 {
            if first_keys.len() < 4 {
                first_keys.push(it.key().to_vec());
            }
            n += 1;
            it.next();
        }
        ok &= it.status().is_ok();
        it.seek_to_last();
        for _ in 0..16 {
            if !it.valid() {
                break;
            }
            it.prev();
        }
        for k in &first_keys {
            it.seek(k);
            it.seek_for_prev(k);
            if k.len() >= key::TRAILER_LEN {
                let _ = table.get(key::user_key(k), key::MAX_SEQNO);
            }
        }
        let mut bounded = table.iter(IterBounds {
            lower: Some(b"a".to_vec()),
            upper: Some(b"m".to_vec()),
        });
        bounded.seek_to_last();
        while bounded.valid() {
            bounded.prev();
        }
    }
    ok &= table.verify().is_ok();
    ok.then_some(n)
}
