//! A short, seeded mutation run of the fuzz harnesses (the same functions the cargo-fuzz
//! targets in `fuzz/` call): readers and schema parser must never panic. The seed is fixed so
//! CI is reproducible; `SLUICE_FUZZ_SEED` and `SLUICE_FUZZ_ITERS` explore further.

use sluice_import::fuzz::{exercise_readers, exercise_schema, FUZZ_SCHEMA};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const TOKENS: &[&[u8]] = &[
    b"\"",
    b"\"\"",
    b",",
    b"\n",
    b"\r\n",
    b"\t",
    b"\\",
    b"\\N",
    b"NA",
    b"{",
    b"}",
    b":",
    b"null",
    b"\xEF\xBB\xBF",
    b"\xff",
    b"\x00",
    b"1e999",
    b"-",
    b"9223372036854775808",
    b"2024-02-30",
    b"24:00:00",
    b"T",
    b"Z",
    b"+99:99",
    b"\\x",
    b"\\xzz",
    b"true",
    b"(",
    b")",
    b";",
    b"PRIMARY KEY",
    b"DECIMAL(39,40)",
    b"VARCHAR(0)",
    b"CREATE",
    b"INDEX",
    b"UNIQUE",
    b"'",
];

fn mutate(rng: &mut Rng, base: &[u8]) -> Vec<u8> {
    let mut v = base.to_vec();
    for _ in 0..1 + rng.below(8) {
        let at = rng.below(v.len() + 1);
        match rng.below(4) {
            0 => {
                let t = TOKENS[rng.below(TOKENS.len())];
                v.splice(at..at, t.iter().copied());
            }
            1 if !v.is_empty() => {
                let end = (at + rng.below(8)).min(v.len());
                v.drain(at.min(end)..end);
            }
            2 if at < v.len() => v[at] = rng.next() as u8,
            _ => {
                let start = rng.below(v.len() + 1);
                let end = (start + rng.below(16)).min(v.len());
                let piece = v[start..end].to_vec();
                v.splice(at..at, piece);
            }
        }
    }
    v
}

#[test]
fn seeded_mutations_never_panic() {
    let seed = std::env::var("SLUICE_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed);
    let iters: usize = std::env::var("SLUICE_FUZZ_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3000);
    let mut rng = Rng(seed | 1);
    let reader_seeds: [&[u8]; 4] = [
        b"1,2.5,1.125,true,\"a,\"\"b\",\\x00ff,2024-02-29,2024-02-29 23:59:59.5+01:00,abcd,7\n2,,,,,,,,,3\n",
        b"1\t2.5\t1\tt\tx\\ty\t\\N\t2024-01-01\t2024-01-01T00:00Z\tab\t1\n",
        b"{\"a\":1,\"b\":2.5,\"c\":\"1.5\",\"d\":false,\"e\":\"x\",\"k\":3}\n{\"a\":2,\"k\":1}\n",
        b"#a,b\n1,\"multi\nline\",\"\",,,,,,,1\r\n",
    ];
    let good = exercise_readers(reader_seeds[0]);
    assert!(good >= 2, "the unmutated seed imports ({good} rows)");
    for i in 0..iters {
        let base = reader_seeds[i % reader_seeds.len()];
        let input = mutate(&mut rng, base);
        let r = std::panic::catch_unwind(|| exercise_readers(&input));
        assert!(
            r.is_ok(),
            "readers panicked on {:?} (seed {seed}, iteration {i})",
            input.escape_ascii().to_string()
        );
        let schema = mutate(&mut rng, FUZZ_SCHEMA.as_bytes());
        let r = std::panic::catch_unwind(|| exercise_schema(&schema));
        assert!(
            r.is_ok(),
            "schema parser panicked on {:?} (seed {seed}, iteration {i})",
            String::from_utf8_lossy(&schema)
        );
    }
}
