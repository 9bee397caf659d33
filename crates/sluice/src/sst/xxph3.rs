//! XXPH3: the "XXH3 preview" (xxHash 0.7.2) 64-bit hash with seed 0, as frozen inside RocksDB
//! for Bloom filter compatibility (`Hash64`/`GetSliceHash64`).
//!
//! It differs from final XXH3 (xxHash 0.8) at every input length — a different avalanche
//! constant, different short-input mixing and no lane swap in the long loop — so no XXH3 crate
//! can stand in for it: a filter hashed with final XXH3 would give RocksDB false negatives.
//! Verified against filters written by RocksDB (see the interop tests).

const P32_1: u64 = 0x9E37_79B1;
const P32_2: u64 = 0x85EB_CA77;
const P32_3: u64 = 0xC2B2_AE3D;
const P64_1: u64 = 0x9E37_79B1_85EB_CA87;
const P64_2: u64 = 0xC2B2_AE3D_27D4_EB4F;
const P64_3: u64 = 0x1656_67B1_9E37_79F9;
const P64_4: u64 = 0x85EB_CA77_C2B2_AE63;
const P64_5: u64 = 0x27D4_EB2F_1656_67C5;

const SECRET: [u8; 192] = [
    0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
    0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
    0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
    0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
    0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
    0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
    0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
    0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
    0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
    0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
    0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
    0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
];

const STRIPE_LEN: usize = 64;
const SECRET_CONSUME_RATE: usize = 8;
const ACC_NB: usize = 8;

#[inline(always)]
fn r64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

#[inline(always)]
fn r32(b: &[u8], at: usize) -> u64 {
    u64::from(u32::from_le_bytes(
        b[at..at + 4].try_into().expect("4 bytes"),
    ))
}

#[inline(always)]
fn fold64(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ ((p >> 64) as u64)
}

#[inline(always)]
fn avalanche(mut h: u64) -> u64 {
    h ^= h >> 37;
    h = h.wrapping_mul(P64_3);
    h ^ (h >> 32)
}

#[inline(always)]
fn mix16(input: &[u8], at: usize, s: usize) -> u64 {
    fold64(
        r64(input, at) ^ r64(&SECRET, s),
        r64(input, at + 8) ^ r64(&SECRET, s + 8),
    )
}

/// RocksDB's `Hash64(data, len)`: XXPH3 64-bit, seed 0.
#[inline]
pub fn xxph3_64(input: &[u8]) -> u64 {
    let len = input.len();
    match len {
        0 => fold64(r64(&SECRET, 0), P64_2),
        1..=3 => {
            let combined = u64::from(input[0])
                | (u64::from(input[len >> 1]) << 8)
                | (u64::from(input[len - 1]) << 16)
                | ((len as u64) << 24);
            avalanche((combined ^ r32(&SECRET, 0)).wrapping_mul(P64_1))
        }
        4..=8 => {
            let in64 = r32(input, 0) | (r32(input, len - 4) << 32);
            let keyed = in64 ^ r64(&SECRET, 0);
            let mix = (len as u64).wrapping_add((keyed ^ (keyed >> 51)).wrapping_mul(P32_1));
            avalanche((mix ^ (mix >> 47)).wrapping_mul(P64_2))
        }
        9..=16 => {
            let lo = r64(input, 0) ^ r64(&SECRET, 0);
            let hi = r64(input, len - 8) ^ r64(&SECRET, 8);
            avalanche(
                (len as u64)
                    .wrapping_add(lo)
                    .wrapping_add(hi)
                    .wrapping_add(fold64(lo, hi)),
            )
        }
        17..=128 => {
            let mut acc = (len as u64).wrapping_mul(P64_1);
            if len > 32 {
                if len > 64 {
                    if len > 96 {
                        acc = acc.wrapping_add(mix16(input, 48, 96));
                        acc = acc.wrapping_add(mix16(input, len - 64, 112));
                    }
                    acc = acc.wrapping_add(mix16(input, 32, 64));
                    acc = acc.wrapping_add(mix16(input, len - 48, 80));
                }
                acc = acc.wrapping_add(mix16(input, 16, 32));
                acc = acc.wrapping_add(mix16(input, len - 32, 48));
            }
            acc = acc.wrapping_add(mix16(input, 0, 0));
            acc = acc.wrapping_add(mix16(input, len - 16, 16));
            avalanche(acc)
        }
        129..=240 => {
            let mut acc = (len as u64).wrapping_mul(P64_1);
            for i in 0..8 {
                acc = acc.wrapping_add(mix16(input, 16 * i, 16 * i));
            }
            acc = avalanche(acc);
            for i in 8..len / 16 {
                acc = acc.wrapping_add(mix16(input, 16 * i, 16 * (i - 8) + 3));
            }
            acc = acc.wrapping_add(mix16(input, len - 16, 136 - 17));
            avalanche(acc)
        }
        _ => hash_long(input),
    }
}

#[inline(always)]
fn accumulate_512(acc: &mut [u64; ACC_NB], input: &[u8], at: usize, s: usize) {
    for (i, a) in acc.iter_mut().enumerate() {
        let data = r64(input, at + 8 * i);
        let key = data ^ r64(&SECRET, s + 8 * i);
        *a = a
            .wrapping_add((key & 0xffff_ffff).wrapping_mul(key >> 32))
            .wrapping_add(data);
    }
}

fn scramble(acc: &mut [u64; ACC_NB]) {
    let s = SECRET.len() - STRIPE_LEN;
    for (i, a) in acc.iter_mut().enumerate() {
        let mut x = *a;
        x ^= x >> 47;
        x ^= r64(&SECRET, s + 8 * i);
        *a = x.wrapping_mul(P32_1);
    }
}

fn hash_long(input: &[u8]) -> u64 {
    let len = input.len();
    let mut acc = [P32_3, P64_1, P64_2, P64_3, P64_4, P32_2, P64_5, P32_1];
    let stripes_per_block = (SECRET.len() - STRIPE_LEN) / SECRET_CONSUME_RATE;
    let block_len = STRIPE_LEN * stripes_per_block;
    let nb_blocks = len / block_len;
    for b in 0..nb_blocks {
        for s in 0..stripes_per_block {
            accumulate_512(
                &mut acc,
                input,
                b * block_len + s * STRIPE_LEN,
                s * SECRET_CONSUME_RATE,
            );
        }
        scramble(&mut acc);
    }
    let tail_stripes = (len - block_len * nb_blocks) / STRIPE_LEN;
    for s in 0..tail_stripes {
        accumulate_512(
            &mut acc,
            input,
            nb_blocks * block_len + s * STRIPE_LEN,
            s * SECRET_CONSUME_RATE,
        );
    }
    if len & (STRIPE_LEN - 1) != 0 {
        accumulate_512(
            &mut acc,
            input,
            len - STRIPE_LEN,
            SECRET.len() - STRIPE_LEN - 7,
        );
    }
    let mut h = (len as u64).wrapping_mul(P64_1);
    for i in 0..4 {
        h = h.wrapping_add(fold64(
            acc[2 * i] ^ r64(&SECRET, 11 + 16 * i),
            acc[2 * i + 1] ^ r64(&SECRET, 11 + 16 * i + 8),
        ));
    }
    avalanche(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differs_from_final_xxh3_and_is_deterministic() {
        for len in [
            0usize, 1, 3, 4, 8, 9, 16, 17, 128, 129, 240, 241, 1024, 5000,
        ] {
            let data: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
            assert_eq!(xxph3_64(&data), xxph3_64(&data.clone()));
            assert_ne!(
                xxph3_64(&data),
                xxhash_rust::xxh3::xxh3_64(&data),
                "len {len}"
            );
        }
    }
}
