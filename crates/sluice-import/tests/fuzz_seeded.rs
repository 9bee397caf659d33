//! A short, seeded mutation run of the fuzz harnesses (the same functions the cargo-fuzz
//! targets in `fuzz/` call): the readers, the schema parser, Parquet files and Arrow
//! batches of any schema must never panic. A Parquet file that cannot be read is an error
//! naming it, and a rejected row names its input and row (and batch). The Parquet and Arrow
//! runs start from the cargo-fuzz seed corpora (`testdata/fuzz/parquet`, `testdata/fuzz/arrow`;
//! `SLUICE_FUZZ_REWRITE=1` rewrites them) and run in a child process under `ulimit -v`. The
//! seed is fixed so CI is reproducible; `SLUICE_FUZZ_SEED` and `SLUICE_FUZZ_ITERS` explore
//! further.

use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{
    BinaryBuilder, BooleanBuilder, Date32Builder, Decimal128Builder, Float64Builder, Int16Builder,
    Int32Builder, Int64Builder, StringBuilder, StringDictionaryBuilder,
    TimestampMicrosecondBuilder,
};
use arrow_array::types::Int32Type;
use arrow_array::{ArrayRef, RecordBatch};
use parquet::basic::{Compression, GzipLevel, ZstdLevel};
use sluice::fuzz::{run_capped, seed_and_iters, seed_files, Mutator};
use sluice_import::fuzz::{exercise_arrow, exercise_parquet, exercise_readers, exercise_schema};
use sluice_import::fuzz::{FUZZ_INPUT, FUZZ_SCHEMA};

/// Address-space cap of the Parquet and Arrow runs' processes, KiB.
const MEMORY_CAP_KIB: u64 = 2 << 20;

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

fn seed_dir(target: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/fuzz")
        .join(target)
}

/// 20 rows of the fuzz table's columns, each of the type the table declares (a third of the
/// values NULL), `e` dictionary-encoded when `dictionary`.
fn table_batch(dictionary: bool) -> RecordBatch {
    let (mut a, mut b, mut d) = (
        Int32Builder::new(),
        Float64Builder::new(),
        BooleanBuilder::new(),
    );
    let mut c = Decimal128Builder::new()
        .with_precision_and_scale(12, 3)
        .unwrap();
    let (mut e, mut ed) = (
        StringBuilder::new(),
        StringDictionaryBuilder::<Int32Type>::new(),
    );
    let (mut g, mut h) = (BinaryBuilder::new(), Date32Builder::new());
    let (mut i, mut j) = (TimestampMicrosecondBuilder::new(), StringBuilder::new());
    let mut k = Int16Builder::new();
    for n in 0..20i32 {
        a.append_value(n * 7 - 30);
        k.append_value((n % 5) as i16);
        if n % 3 == 2 {
            b.append_null();
            c.append_null();
            d.append_null();
            e.append_null();
            ed.append_null();
            g.append_null();
            h.append_null();
            i.append_null();
            j.append_null();
            continue;
        }
        b.append_value(f64::from(n) / 3.0);
        c.append_value(i128::from(n) * 1_000_001);
        d.append_value(n % 2 == 0);
        e.append_value(format!("name {}", n % 4));
        ed.append_value(format!("name {}", n % 4));
        g.append_value([n as u8, 0xff]);
        h.append_value(19_000 + n);
        i.append_value(1_700_000_000_000_000 + i64::from(n));
        j.append_value(["", "ab", "abcd", "abcde"][n as usize % 4]);
    }
    let e: ArrayRef = if dictionary {
        Arc::new(ed.finish())
    } else {
        Arc::new(e.finish())
    };
    RecordBatch::try_from_iter([
        ("a", Arc::new(a.finish()) as ArrayRef),
        ("b", Arc::new(b.finish())),
        ("c", Arc::new(c.finish())),
        ("d", Arc::new(d.finish())),
        ("e", e),
        ("g", Arc::new(g.finish())),
        ("h", Arc::new(h.finish())),
        ("i", Arc::new(i.finish())),
        ("j", Arc::new(j.finish())),
        ("k", Arc::new(k.finish())),
    ])
    .unwrap()
}

/// Columns that do not fit the table: `k` as text (some not numbers), `e` as integers, a
/// column the table lacks.
fn mismatched_batch() -> RecordBatch {
    let mut a = Int64Builder::new();
    let mut k = StringBuilder::new();
    let mut e = Int64Builder::new();
    let mut x = Int64Builder::new();
    for n in 0..12i64 {
        a.append_value(n * 3_000_000_000 - 5);
        k.append_value(if n % 4 == 3 {
            "x".to_string()
        } else {
            (n * 9000).to_string()
        });
        e.append_value(n * 1_000_000_007);
        x.append_value(n);
    }
    RecordBatch::try_from_iter([
        ("a", Arc::new(a.finish()) as ArrayRef),
        ("K", Arc::new(k.finish())),
        ("e", Arc::new(e.finish())),
        ("extra", Arc::new(x.finish())),
    ])
    .unwrap()
}

fn parquet_bytes(batch: &RecordBatch, compression: Compression, rows_per_group: usize) -> Vec<u8> {
    let props = parquet::file::properties::WriterProperties::builder()
        .set_max_row_group_row_count(Some(rows_per_group))
        .set_compression(compression)
        .build();
    let mut out = Vec::new();
    let mut w =
        parquet::arrow::ArrowWriter::try_new(&mut out, batch.schema(), Some(props)).unwrap();
    w.write(batch).unwrap();
    w.close().unwrap();
    out
}

/// The Parquet seeds: the table's columns with each codec, dictionary-encoded, and columns
/// that do not fit.
fn write_parquet_seeds() {
    let dir = seed_dir("parquet");
    std::fs::create_dir_all(&dir).unwrap();
    let plain = table_batch(false);
    for (name, bytes) in [
        ("snappy", parquet_bytes(&plain, Compression::SNAPPY, 7)),
        (
            "zstd",
            parquet_bytes(&plain, Compression::ZSTD(ZstdLevel::default()), 20),
        ),
        (
            "gzip",
            parquet_bytes(&plain, Compression::GZIP(GzipLevel::default()), 20),
        ),
        ("lz4", parquet_bytes(&plain, Compression::LZ4_RAW, 20)),
        (
            "brotli",
            parquet_bytes(&plain, Compression::BROTLI(Default::default()), 20),
        ),
        (
            "dictionary",
            parquet_bytes(&table_batch(true), Compression::UNCOMPRESSED, 8),
        ),
        (
            "mismatched",
            parquet_bytes(&mismatched_batch(), Compression::UNCOMPRESSED, 12),
        ),
    ] {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}

/// The Arrow seeds (`sluice_import::fuzz::arrow_gen`'s layout): for each Arrow type, one
/// batch of 8 rows with a column of that type named after a table column, nullable, and the
/// same against the table taken from the batch's own schema.
fn write_arrow_seeds() {
    let dir = seed_dir("arrow");
    std::fs::create_dir_all(&dir).unwrap();
    let mut rng = Mutator::new(7);
    for ty in 0..31u8 {
        for mode in 0..2u8 {
            // Table mode, 1 batch, 3 columns, 8 rows: a (Int32), k (Int16), then a nullable
            // column of the type, named after another column of the table.
            let mut b = vec![mode, 0, 3, 8, 0, 0, 4];
            b.extend((0..32).map(|_| rng.next_u64() as u8));
            b.extend([9, 0, 3]);
            b.extend((0..16).map(|_| rng.next_u64() as u8));
            b.extend([1 + ty % 8, 1, 0x5a, ty]);
            b.extend((0..96).map(|_| rng.next_u64() as u8));
            std::fs::write(dir.join(format!("type-{ty:02}-{mode}")), b).unwrap();
        }
    }
}

/// Damage to a Parquet file: anywhere, or (half the time) in its last 256 bytes, where the
/// footer's metadata — schema, row groups, page offsets and sizes — lives.
fn mutate_parquet(rng: &mut Mutator, file: &[u8]) -> Vec<u8> {
    let mut v = file.to_vec();
    if rng.below(2) == 0 {
        rng.mutate_bytes(&mut v);
        return v;
    }
    let at = v.len().saturating_sub(256);
    let mut tail = v.split_off(at);
    rng.mutate_bytes(&mut tail);
    v.extend(tail);
    v
}

#[test]
fn parquet_mutations_never_panic() {
    if run_capped("parquet_mutations_never_panic", MEMORY_CAP_KIB) {
        return;
    }
    if std::env::var_os("SLUICE_FUZZ_REWRITE").is_some() {
        write_parquet_seeds();
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("input.parquet");
    let shown = path.display().to_string();
    let seeds = seed_files(&seed_dir("parquet"));
    // The seeds written on purpose (the fuzzer's own, merged in, are named by their SHA-1).
    for (name, bytes) in seeds.iter().filter(|(name, _)| name.len() != 40) {
        let run = exercise_parquet(&path, bytes).unwrap_or_else(|e| panic!("seed {name}: {e}"));
        assert!(
            run.rows + run.rejects.len() as u64 >= 12,
            "seed {name}: {run:?}"
        );
    }
    let (seed, iters) = seed_and_iters(4000);
    let mut rng = Mutator::new(seed);
    for i in 0..iters {
        let (name, bytes) = &seeds[i % seeds.len()];
        let damaged = mutate_parquet(&mut rng, bytes);
        let what = format!("seed {seed}, iteration {i} ({name})");
        let r = std::panic::catch_unwind(|| exercise_parquet(&path, &damaged))
            .unwrap_or_else(|_| panic!("Parquet input panicked ({what}): {damaged:?}"));
        match r {
            Ok(run) => {
                for reject in &run.rejects {
                    assert!(reject.starts_with(&shown), "{what}: {reject}");
                }
            }
            Err(e) => assert!(e.to_string().contains(&shown), "{what}: {e}"),
        }
    }
}

#[test]
fn arrow_mutations_never_panic() {
    if run_capped("arrow_mutations_never_panic", MEMORY_CAP_KIB) {
        return;
    }
    if std::env::var_os("SLUICE_FUZZ_REWRITE").is_some() {
        write_arrow_seeds();
    }
    let seeds = seed_files(&seed_dir("arrow"));
    let (mut rows, mut rejects) = (0, 0);
    for (_, bytes) in seeds.iter().filter(|(name, _)| name.starts_with("type-")) {
        let run = exercise_arrow(bytes);
        rows += run.rows;
        rejects += run.rejects.len();
    }
    assert!(
        rows > 100 && rejects > 10,
        "the seeds: {rows} rows, {rejects} rejected"
    );
    let (seed, iters) = seed_and_iters(20_000);
    let mut rng = Mutator::new(seed);
    for i in 0..iters {
        let (name, bytes) = &seeds[i % seeds.len()];
        let mut damaged = bytes.clone();
        rng.mutate_bytes(&mut damaged);
        let what = format!("seed {seed}, iteration {i} ({name})");
        let run = std::panic::catch_unwind(|| exercise_arrow(&damaged))
            .unwrap_or_else(|_| panic!("Arrow input panicked ({what}): {damaged:?}"));
        for reject in &run.rejects {
            let place = format!("{FUZZ_INPUT}:");
            assert!(
                reject.starts_with(&place) && reject.contains("(batch "),
                "{what}: {reject}"
            );
        }
        for refusal in &run.refused {
            assert!(refusal.starts_with(FUZZ_INPUT), "{what}: {refusal}");
        }
    }
}

/// Found by arrow_mutations_never_panic (seed 0x5eed, iteration 97): batches whose schema had
/// two columns named `a` made `create_table_sql` write a `CREATE TABLE` that does not parse.
/// Now such a schema is refused, naming the column.
#[test]
fn arrow_regression_two_columns_of_one_name_are_refused() {
    let bytes = include_bytes!("../testdata/fuzz-regressions/arrow/two-columns-of-one-name");
    let run = exercise_arrow(bytes);
    assert!(
        run.refused
            .iter()
            .any(|r| r.contains("column a: the input has two columns of that name")),
        "{run:?}"
    );
}

/// Found by the parquet cargo-fuzz target (296 executions in): a file whose embedded Arrow
/// schema (the `ARROW:schema` metadata) is malformed makes arrow-ipc, inside parquet-rs,
/// panic while the file is opened. The import's `guarded` turns that into an error naming the
/// file (the fuzz target now keeps the default panic hook so that it does the same).
#[test]
fn parquet_regression_arrow_schema_decoder_panic_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("input.parquet");
    let bytes = include_bytes!("../testdata/fuzz-regressions/parquet/arrow-schema-decoder-panic");
    let e = exercise_parquet(&path, bytes).unwrap_err().to_string();
    assert!(e.contains(&path.display().to_string()), "{e}");
    assert!(e.contains("not a readable Parquet file"), "{e}");
    // Reading its schema alone (the CLI's warnings before an import, a table taken from the
    // file) is an error too, not a panic.
    let e = sluice_import::arrow_io::parquet_schema(&path).unwrap_err();
    assert!(e.to_string().contains("not a readable Parquet file"), "{e}");
    let import = sluice_import::Import::new(
        "CREATE TABLE t (id BIGINT PRIMARY KEY)",
        vec![path.clone()],
        sluice_import::ImportOptions::default(),
    )
    .unwrap();
    assert_eq!(import.input_warnings(), Vec::<String>::new());
}

/// Found by the parquet cargo-fuzz target (5.6 minutes in, `-malloc_limit_mb=512`): a
/// zstd-compressed INT32 column whose dictionary page header claims 1,206,910,975 values for
/// an 80-byte page. parquet-rs's `DictDecoder::set_dict` reserved 4 bytes a value before
/// decoding one, `malloc(4,827,643,900)`: no panic to catch, an import tried the allocation.
/// Now the import checks each dictionary page's value count against its decoded bytes before
/// the decoder sees the file (`arrow_io::parquet_pages`), and refuses it naming the file, the
/// row group, the column and the page's offset. Runs under the memory cap, as the fuzzer did.
#[test]
fn parquet_regression_dictionary_page_count_past_its_bytes_is_refused() {
    if run_capped(
        "parquet_regression_dictionary_page_count_past_its_bytes_is_refused",
        MEMORY_CAP_KIB,
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("input.parquet");
    let bytes =
        include_bytes!("../testdata/fuzz-regressions/parquet/dictionary-page-count-past-its-bytes");
    let e = exercise_parquet(&path, bytes).unwrap_err().to_string();
    assert!(e.contains(&path.display().to_string()), "{e}");
    // Its data page's header is damaged too: the walk of the page headers (which runs before
    // any page is read) refuses that first; the dictionary check itself is tested on a file
    // made for it (`arrow_input`'s `a_dictionary_page_claiming_more_values_than_it_holds_*`).
    assert!(
        e.contains(
            "row group 0, column a: the page at offset 85 claims 26 stored bytes, past its \
             column chunk's end at 124"
        ),
        "{e}"
    );
}
