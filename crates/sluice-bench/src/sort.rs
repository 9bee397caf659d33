//! kv-bulkload's sort, shared by every engine's driver: sluice-bench's, and the RocksDB
//! anchor's (`bench/anchors/rocksdb`, which includes this file); the Pebble anchor's
//! `radixSort` (`bench/anchors/pebble/fair.go`) takes the same steps. No dependencies.

/// How kv-bulkload sorts, as every engine prints it (`params.sort`).
pub const SORT: &str =
    "radix sort of the BE64 key prefix, 8-bit digits: one MSD pass, then LSD passes per bucket on 2 threads";

/// Sorts `(BE64 key prefix, record index)` pairs by prefix on two threads (see the module
/// docs for who uses it):
/// 1. one pass finds the bytes in which prefixes differ (`OR ^ AND` of them all);
/// 2. one MSD pass scatters the pairs by the most significant of those bytes into 256 buckets;
/// 3. two threads, each with the buckets of about half the pairs, sort each bucket by LSD
///    passes over the other differing bytes, least significant first (a bucket of the spec's
///    10M keys is 64K pairs, 1 MiB: the passes stay in cache).
///
/// Bytes that do not differ are never passed over. Stable: equal prefixes keep their order.
pub fn radix_sort(items: &mut [(u64, u32)]) {
    let n = items.len();
    let (mut or, mut and) = (0u64, u64::MAX);
    for &(p, _) in items.iter() {
        or |= p;
        and &= p;
    }
    let differ = or ^ and;
    let mut digits: Vec<u32> = (0..8u32)
        .filter(|d| (differ >> (8 * d)) & 0xff != 0)
        .collect();
    let Some(top) = digits.pop() else {
        return; // every prefix is the same
    };
    let shift = 8 * top;
    let mut starts = [0usize; 257];
    for &(p, _) in items.iter() {
        starts[((p >> shift) & 0xff) as usize + 1] += 1;
    }
    for b in 0..256 {
        starts[b + 1] += starts[b];
    }
    let mut tmp = vec![(0u64, 0u32); n];
    let mut next = starts;
    for &it in items.iter() {
        let b = ((it.0 >> shift) & 0xff) as usize;
        tmp[next[b]] = it;
        next[b] += 1;
    }
    // The bucket boundary nearest the middle: the first one at or past n / 2.
    let k = starts.partition_point(|&s| s < n / 2).min(256);
    let cut = starts[k];
    let (tmp_lo, tmp_hi) = tmp.split_at_mut(cut);
    let (out_lo, out_hi) = items.split_at_mut(cut);
    let digits = &digits[..];
    std::thread::scope(|s| {
        let hi = s.spawn(move || sort_buckets(tmp_hi, out_hi, &starts[k..], cut, digits));
        sort_buckets(tmp_lo, out_lo, &starts[..=k], 0, digits);
        hi.join().expect("sort thread");
    });
}

/// Sorts each bucket of `src` (its bounds `bounds`, as offsets less `base`) by the byte
/// `digits` (least significant first), leaving the sorted pairs in `dst`.
fn sort_buckets(
    src: &mut [(u64, u32)],
    dst: &mut [(u64, u32)],
    bounds: &[usize],
    base: usize,
    digits: &[u32],
) {
    for w in bounds.windows(2) {
        let (lo, hi) = (w[0] - base, w[1] - base);
        let mut in_src = true;
        {
            let (mut from, mut to) = (&mut src[lo..hi], &mut dst[lo..hi]);
            for &d in digits {
                let shift = 8 * d;
                let mut at = [0usize; 257];
                for &(p, _) in from.iter() {
                    at[((p >> shift) & 0xff) as usize + 1] += 1;
                }
                if at[1..].contains(&from.len()) {
                    continue; // one value of this byte in the bucket
                }
                for b in 0..256 {
                    at[b + 1] += at[b];
                }
                for &it in from.iter() {
                    let b = ((it.0 >> shift) & 0xff) as usize;
                    to[at[b]] = it;
                    at[b] += 1;
                }
                std::mem::swap(&mut from, &mut to);
                in_src = !in_src;
            }
        }
        if in_src {
            dst[lo..hi].copy_from_slice(&src[lo..hi]);
        }
    }
}

/// How many records kv-bulkload's writers gather at a time ([`gather`]).
pub const GATHER_BATCH: usize = 4096;

/// Copies the `rec`-byte records of `records` whose indices `idx` gives, in that order, into
/// `buf` (cleared first). kv-bulkload's writers take their sorted records in batches of
/// [`GATHER_BATCH`] through this: a tight copy loop keeps many cache misses in flight, where a
/// writer that fetched each record from the 1.16 GB input as it went would wait out one miss per
/// record, with the table building in between (40% of its samples, in `perf`).
pub fn gather<I: IntoIterator<Item = usize>>(
    records: &[u8],
    rec: usize,
    idx: I,
    buf: &mut Vec<u8>,
) {
    buf.clear();
    for i in idx {
        buf.extend_from_slice(&records[i * rec..(i + 1) * rec]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The two-thread sort orders as a stable sort by prefix does, for prefixes that differ
    /// in one byte, in several, in none, and with repeats.
    #[test]
    fn radix_sort_orders_as_a_stable_sort() {
        let mix = |i: u64| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (i >> 7);
        let cases: Vec<Vec<u64>> = vec![
            (0..100_000).map(mix).collect(),
            (0..100_000).map(|i| mix(i) & 0x00ff_ff00).collect(),
            (0..100_000).map(|i| mix(i) % 1000).collect(),
            (0..100_000).map(|i| (mix(i) % 3) << 56).collect(),
            vec![7; 1000],
            vec![],
            vec![5, 3],
            (0..70_000u64).rev().collect(),
        ];
        for prefixes in cases {
            let mut items: Vec<(u64, u32)> = prefixes
                .iter()
                .enumerate()
                .map(|(i, &p)| (p, i as u32))
                .collect();
            let mut want = items.clone();
            want.sort_by_key(|&(p, _)| p);
            radix_sort(&mut items);
            assert_eq!(items, want);
        }
    }

    /// `gather` copies the records at the given indices, in that order, and clears the
    /// buffer's earlier batch first.
    #[test]
    fn gather_copies_the_indexed_records_in_order() {
        let rec = 5;
        let records: Vec<u8> = (0..100u8).collect();
        let mut buf = vec![9u8; 3];
        gather(&records, rec, [3usize, 0, 19, 3], &mut buf);
        let want: Vec<u8> = [15u8..20, 0..5, 95..100, 15..20]
            .into_iter()
            .flatten()
            .collect();
        assert_eq!(buf, want);
        gather(&records, rec, [1usize], &mut buf);
        assert_eq!(buf, vec![5, 6, 7, 8, 9]);
    }
}
