"""The kv-bulkload stream of shared/BENCH-SPEC.md in Python (for the harness scripts that need
it: bench/import/run.py, bench/python/run.py). Standard library only."""

M64 = (1 << 64) - 1
PERM, KEYS, VAL = 0x5EED000000000001, 0xA5A5A5A55A5A5A5A, 0x0123456789ABCDEF
READ = 0x0BAD5EED0BAD5EED


def splitmix64(x):
    z = (x + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def perm_fn(n):
    """perm(i) for i in 0..n: the spec's 4-round Feistel permutation with cycle walking."""
    bits = max((n - 1).bit_length(), 2)
    bits += bits & 1
    half = bits // 2
    mask = (1 << half) - 1

    def perm(i):
        x = i
        while True:
            l, r = x >> half, x & mask
            for k in range(4):
                l, r = r, l ^ (splitmix64(r ^ (PERM + k)) & mask)
            x = (l << half) | r
            if x < n:
                return x

    return perm


def kv_pair(p):
    """(key, value) of pair p: 16 and 100 bytes."""
    k = p.to_bytes(8, "big") + splitmix64(p ^ KEYS).to_bytes(8, "big")
    v = b"".join(splitmix64((p * 13 + j + VAL) & M64).to_bytes(8, "little") for j in range(13))[:100]
    return k, v
