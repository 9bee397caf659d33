"""Writes the RocksDB MANIFEST seeds of the `lsm` fuzz target (lsm/rocksdb-*): RocksDB's own
bytes, from rocksdict (tests/requirements.txt), so that the fuzzer starts from every kind of
edit RocksDB writes: column families added and dropped, flushes, ingests, a compaction, the
state dump a reopen starts a new MANIFEST with, and blob files.

    python crates/sluice-cli/testdata/fuzz/generate_rocksdb_seeds.py SCRATCH_DIR
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "tests" / "interop"))
from test_lsm_timeline import build_rocksdb, opts  # noqa: E402
from rocksdict import Options, Rdict  # noqa: E402

OUT = Path(__file__).resolve().parent / "lsm"


def manifest(db):
    return (db / (db / "CURRENT").read_text().strip()).read_bytes()


def main(tmp):
    build_rocksdb(tmp / "db", tmp)
    (OUT / "rocksdb-history").write_bytes(manifest(tmp / "db"))
    r = Rdict(str(tmp / "db"), opts(), column_families={"users": Options(raw_mode=True)})
    r[b"after"] = b"reopen"
    r.flush()
    r.drop_column_family("users")
    r.close()
    (OUT / "rocksdb-reopen").write_bytes(manifest(tmp / "db"))
    o = opts()
    o.set_enable_blob_files(True)
    o.set_min_blob_size(16)
    b = Rdict(str(tmp / "blobs"), o)
    for k in range(40):
        b[b"b%03d" % k] = b"blob" * 20
    b.flush()
    for k in range(20, 60):
        b[b"b%03d" % k] = b"blob" * 21
    b.flush()
    b.compact_range(None, None)
    b.close()
    (OUT / "rocksdb-blobs").write_bytes(manifest(tmp / "blobs"))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
