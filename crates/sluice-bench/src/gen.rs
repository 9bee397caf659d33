//! The kv-bulkload input of `shared/BENCH-SPEC.md`: a keyed Feistel permutation of `0..N`
//! giving 16-byte keys in random order and 100-byte incompressible values.

/// SplitMix64 finalizer.
#[inline]
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Seed of the permutation.
pub const PERM: u64 = 0x5EED_0000_0000_0001;
/// Seed of the key suffix.
pub const KEY: u64 = 0xA5A5_A5A5_5A5A_5A5A;
/// Seed of the values.
pub const VAL: u64 = 0x0123_4567_89AB_CDEF;
/// Seed of the read sequence.
pub const READ: u64 = 0x0BAD_5EED_0BAD_5EED;

/// Key length in bytes.
pub const KEY_LEN: usize = 16;
/// Value length in bytes.
pub const VALUE_LEN: usize = 100;

/// A bijection of `0..n` (4-round Feistel over the next even bit width, cycle walking).
#[derive(Debug, Clone, Copy)]
pub struct Permutation {
    n: u64,
    half: u32,
    mask: u64,
}

impl Permutation {
    /// The permutation of `0..n` (`n >= 1`).
    pub fn new(n: u64) -> Self {
        let bits = (64 - (n.max(2) - 1).leading_zeros()).max(2);
        let bits = bits + (bits & 1);
        let half = bits / 2;
        Permutation {
            n,
            half,
            mask: (1u64 << half) - 1,
        }
    }

    /// The image of `i`.
    #[inline]
    pub fn apply(&self, i: u64) -> u64 {
        let mut x = i;
        loop {
            let (mut l, mut r) = (x >> self.half, x & self.mask);
            for k in 0..4 {
                let nl = r;
                r = l ^ (splitmix64(r ^ PERM.wrapping_add(k)) & self.mask);
                l = nl;
            }
            x = (l << self.half) | r;
            if x < self.n {
                return x;
            }
        }
    }
}

/// Writes the key of logical row `p` into `out`.
#[inline]
pub fn key_of(p: u64, out: &mut [u8; KEY_LEN]) {
    out[..8].copy_from_slice(&p.to_be_bytes());
    out[8..].copy_from_slice(&splitmix64(p ^ KEY).to_be_bytes());
}

/// Writes the value of logical row `p` into `out`.
#[inline]
pub fn value_of(p: u64, out: &mut [u8; VALUE_LEN]) {
    let mut buf = [0u8; 104];
    for j in 0..13u64 {
        let v = splitmix64(p.wrapping_mul(13).wrapping_add(j).wrapping_add(VAL));
        buf[8 * j as usize..8 * j as usize + 8].copy_from_slice(&v.to_le_bytes());
    }
    out.copy_from_slice(&buf[..VALUE_LEN]);
}

/// The logical row read by read number `i`.
#[inline]
pub fn read_row(i: u64, n: u64) -> u64 {
    splitmix64(i ^ READ) % n
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};

    fn hex(d: &[u8]) -> String {
        d.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn matches_the_spec_check_values_for_n_1000() {
        let n = 1000;
        let perm = Permutation::new(n);
        let mut kv = Sha256::new();
        let (mut k, mut v) = ([0u8; KEY_LEN], [0u8; VALUE_LEN]);
        let mut seen = vec![false; n as usize];
        for i in 0..n {
            let p = perm.apply(i);
            assert!(!seen[p as usize], "not a permutation");
            seen[p as usize] = true;
            key_of(p, &mut k);
            value_of(p, &mut v);
            kv.update(k);
            kv.update(v);
        }
        assert_eq!(
            hex(&kv.finalize()),
            "d4a7cd05639e50be3c457e790d16fd4ee07906ea30a6f005a649dd5c2dcf8cdc"
        );
        let mut reads = Sha256::new();
        for i in 0..1000 {
            key_of(read_row(i, n), &mut k);
            reads.update(k);
        }
        assert_eq!(
            hex(&reads.finalize()),
            "cb48fd96699cd44a9065b673d3564b22dcb39b0f5046a5071c67ac65513796f0"
        );
    }
}
