//! Where one compaction is cut into subcompactions (key ranges merged on separate threads).
//!
//! A pure decision over the input files' metadata (no I/O). Two sources of cut points:
//!
//! 1. When the output level has two or more input files, their smallest keys: those files do
//!    not overlap, so each cut leaves whole output-level files on either side (RocksDB's
//!    choice), spread evenly over their bytes.
//! 2. Otherwise (everything in L0, or one output file), an estimate of where the input bytes
//!    lie: each file's bytes are spread evenly over its key span, with keys mapped to numbers
//!    by the 8 bytes after the inputs' common prefix, and the cuts go where the cumulative
//!    bytes reach `k / n` of the total. Random keys (secondary indexes, unsorted ingests) make
//!    every L0 file span the key space; their smallest keys all sit near its start, so cutting
//!    there would leave one range with nearly everything, while the spread estimate splits
//!    them evenly — no "priming" compaction into Lbase is needed to get parallelism.
//!
//! Invariants of the result: ranges are contiguous, the first has no lower bound and the last
//! no upper bound, and every cut is strictly greater than the one before it (so no range is
//! empty by construction and each user key falls in exactly one range).

use std::sync::Arc;

use crate::base::bounds::IterBounds;
use crate::version::FileMeta;

/// The key ranges a compaction with `inputs` (level, file) writing to `output_level` is split
/// into: at most `max` ranges, one unbounded range when `max < 2`.
pub fn subcompaction_ranges(
    inputs: &[(usize, Arc<FileMeta>)],
    output_level: usize,
    max: usize,
) -> Vec<IterBounds> {
    if max < 2 || inputs.is_empty() {
        return vec![IterBounds::default()];
    }
    let at_output: Vec<&Arc<FileMeta>> = inputs
        .iter()
        .filter(|(l, _)| *l == output_level)
        .map(|(_, f)| f)
        .collect();
    let cuts = if at_output.len() >= 2 {
        cuts_at_file_starts(&at_output, max)
    } else {
        let files: Vec<&Arc<FileMeta>> = inputs.iter().map(|(_, f)| f).collect();
        cuts_by_spread(&files, max)
    };
    IterBounds::between_cuts(cuts)
}

/// Cut points among the files' smallest keys, spread evenly over the files' bytes.
fn cuts_at_file_starts(files: &[&Arc<FileMeta>], max: usize) -> Vec<Vec<u8>> {
    let mut points: Vec<(&[u8], u64)> = files.iter().map(|f| (f.smallest_user(), f.size)).collect();
    points.sort();
    let total: u64 = points.iter().map(|p| p.1).sum::<u64>().max(1);
    let mut cuts: Vec<Vec<u8>> = Vec::new();
    let mut acc = 0u64;
    let smallest = points[0].0;
    for (key, size) in &points {
        let want = (cuts.len() as u64 + 1) * total / max as u64;
        // Never cut at the smallest key (the range below it would be empty); cuts increase.
        if *key > smallest
            && acc >= want
            && cuts.len() + 1 < max
            && cuts.last().is_none_or(|c| &c[..] < *key)
        {
            cuts.push(key.to_vec());
        }
        acc += size;
    }
    cuts
}

/// The common prefix of `a` and `b`.
fn common_prefix<'a>(a: &'a [u8], b: &[u8]) -> &'a [u8] {
    let n = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    &a[..n]
}

/// The 8 bytes of `key` after `prefix_len`, zero-padded, as a number: order-preserving for keys
/// sharing the prefix (ties are possible, never inversions).
fn position(key: &[u8], prefix_len: usize) -> f64 {
    let mut b = [0u8; 8];
    let rest = key.get(prefix_len..).unwrap_or(&[]);
    let n = rest.len().min(8);
    b[..n].copy_from_slice(&rest[..n]);
    u64::from_be_bytes(b) as f64
}

/// Cut points where the estimated cumulative input bytes reach `k / max` of the total, each
/// file's bytes spread evenly over its key span.
fn cuts_by_spread(files: &[&Arc<FileMeta>], max: usize) -> Vec<Vec<u8>> {
    let (Some(lo), Some(hi)) = (
        files.iter().map(|f| f.smallest_user()).min(),
        files.iter().map(|f| f.largest_user()).max(),
    ) else {
        return Vec::new();
    };
    let prefix = common_prefix(lo, hi);
    let spans: Vec<(f64, f64, f64)> = files
        .iter()
        .map(|f| {
            (
                position(f.smallest_user(), prefix.len()),
                position(f.largest_user(), prefix.len()),
                f.size.max(1) as f64,
            )
        })
        .collect();
    let total: f64 = spans.iter().map(|s| s.2).sum();
    // Bytes at or below position x.
    let mass_below = |x: f64| -> f64 {
        spans
            .iter()
            .map(|&(a, b, size)| {
                if x >= b {
                    size
                } else if x < a {
                    0.0
                } else {
                    size * (x - a) / (b - a)
                }
            })
            .sum()
    };
    let (start, end) = (position(lo, prefix.len()), position(hi, prefix.len()));
    let mut cuts: Vec<Vec<u8>> = Vec::new();
    for k in 1..max {
        let want = total * k as f64 / max as f64;
        // Bisection on the monotone mass function.
        let (mut a, mut b) = (start, end);
        for _ in 0..80 {
            let mid = a + (b - a) / 2.0;
            if mass_below(mid) < want {
                a = mid;
            } else {
                b = mid;
            }
        }
        let mut cut = prefix.to_vec();
        cut.extend_from_slice(&(b as u64).to_be_bytes());
        while cut.len() > prefix.len() + 1 && cut.last() == Some(&0) {
            cut.pop();
        }
        // Keep cuts strictly inside (lo, hi] and strictly increasing.
        if &cut[..] > lo && &cut[..] <= hi && cuts.last().is_none_or(|c| c < &cut) {
            cuts.push(cut);
        }
    }
    cuts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(n: u64, lo: &[u8], hi: &[u8], size: u64) -> Arc<FileMeta> {
        Arc::new(FileMeta::for_test(n, lo, hi, size, n))
    }

    fn uppers(r: &[IterBounds]) -> Vec<Vec<u8>> {
        r.iter().filter_map(|b| b.upper.clone()).collect()
    }

    #[test]
    fn wide_l0_files_are_split_at_the_middle_of_their_span() {
        // Four L0 files, each spanning the whole (random) key space: cutting at file starts
        // would give one range everything.
        let inputs: Vec<_> = (1..=4)
            .map(|n| {
                (
                    0,
                    file(n, &[0x00, n as u8], &[0xff, 0xf0 + n as u8], 100 << 20),
                )
            })
            .collect();
        let r = subcompaction_ranges(&inputs, 6, 2);
        assert_eq!(r.len(), 2);
        let cut = &uppers(&r)[0];
        assert!((0x7c..=0x83).contains(&cut[0]), "cut {cut:02x?}");
        assert_eq!(r[0].lower, None);
        assert_eq!(r[1].lower.as_ref(), Some(cut));
        assert_eq!(r[1].upper, None);
    }

    #[test]
    fn bytes_not_key_spans_decide_the_cut() {
        // A big file over [0x00, 0x40] and a small one over [0x40, 0xff]: most bytes are low.
        let inputs = vec![
            (0, file(1, &[0x00], &[0x40], 900)),
            (0, file(2, &[0x40], &[0xff], 100)),
        ];
        let cut = uppers(&subcompaction_ranges(&inputs, 6, 2))[0].clone();
        assert!(
            cut[..] > [0x10][..] && cut[..] < [0x40][..],
            "cut {cut:02x?}"
        );
    }

    #[test]
    fn output_level_files_give_their_starts_as_cuts() {
        let inputs = vec![
            (0, file(9, b"a", b"z", 10)),
            (6, file(1, b"a", b"f", 100)),
            (6, file(2, b"g", b"m", 100)),
            (6, file(3, b"n", b"s", 100)),
            (6, file(4, b"t", b"z", 100)),
        ];
        let r = subcompaction_ranges(&inputs, 6, 2);
        assert_eq!(uppers(&r), vec![b"n".to_vec()]);
    }

    #[test]
    fn keys_sharing_a_long_prefix_still_split() {
        let inputs: Vec<_> = (1..=3)
            .map(|n| (0, file(n, b"table/0001/\x00", b"table/0001/\xff", 1 << 30)))
            .collect();
        let r = subcompaction_ranges(&inputs, 6, 4);
        let cuts = uppers(&r);
        assert_eq!(cuts.len(), 3, "{cuts:?}");
        assert!(cuts.windows(2).all(|w| w[0] < w[1]));
        assert!(cuts.iter().all(|c| c.starts_with(b"table/0001/")));
    }

    #[test]
    fn degenerate_inputs_give_one_range() {
        let one_key = vec![(0, file(1, b"k", b"k", 10)), (0, file(2, b"k", b"k", 10))];
        assert_eq!(subcompaction_ranges(&one_key, 6, 4).len(), 1);
        assert_eq!(subcompaction_ranges(&[], 6, 4).len(), 1);
        let inputs = vec![(0, file(1, b"a", b"z", 10))];
        assert_eq!(subcompaction_ranges(&inputs, 6, 1).len(), 1);
    }

    proptest::proptest! {
        /// Whatever the inputs: contiguous ranges, strictly increasing cuts inside the inputs'
        /// key span, at most `max` ranges.
        #[test]
        fn ranges_partition_the_key_space(
            spans in proptest::collection::vec(
                (proptest::collection::vec(0u8..4, 0..4), proptest::collection::vec(0u8..4, 0..4), 1u64..1000, 0usize..2),
                1..8),
            max in 1usize..6,
        ) {
            let inputs: Vec<_> = spans.iter().enumerate().map(|(i, (a, b, size, lvl))| {
                let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
                (*lvl * 6, file(i as u64 + 1, lo, hi, *size))
            }).collect();
            let r = subcompaction_ranges(&inputs, 6, max);
            proptest::prop_assert!(!r.is_empty() && r.len() <= max.max(1));
            proptest::prop_assert!(r[0].lower.is_none() && r[r.len() - 1].upper.is_none());
            for w in r.windows(2) {
                proptest::prop_assert_eq!(&w[0].upper, &w[1].lower);
            }
            let cuts = uppers(&r);
            proptest::prop_assert!(cuts.windows(2).all(|w| w[0] < w[1]));
            let lo = inputs.iter().map(|(_, f)| f.smallest_user().to_vec()).min().unwrap();
            proptest::prop_assert!(cuts.iter().all(|c| c > &lo));
        }
    }
}
