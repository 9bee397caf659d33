"""The `sluice` database commands, and ingestion of RocksDB-built files."""
from rocksdict import BlockBasedOptions, DBCompressionType, Options, SstFileWriter

from conftest import random_pairs, to_lines


def test_put_get_delete_scan_stats(sluice, tmp):
    db = tmp / "db"
    sluice("put", "--db", db, "apple", "red")
    sluice("put", "--db", db, "banana", "yellow")
    sluice("put", "--db", db, "cherry", "dark")
    sluice("delete", "--db", db, "apple")
    assert sluice("get", "--db", db, "banana").stdout == b"yellow\n"
    r = sluice("get", "--db", db, "apple", check=False)
    assert r.returncode == 1 and b"not found" in r.stderr
    assert sluice("scan", "--db", db).stdout == b"banana\tyellow\ncherry\tdark\n"
    assert sluice("scan", "--db", db, "--prefix", "ch").stdout == b"cherry\tdark\n"
    assert sluice("scan", "--db", db, "--start", "b", "--end", "c").stdout == b"banana\tyellow\n"
    assert sluice("scan", "--db", db, "--limit", "1").stdout == b"banana\tyellow\n"
    stats = sluice("stats", "--db", db, "--json").stdout
    assert b'"levels"' in stats and b'"write_amplification"' in stats
    manifest = sluice("manifest", "dump", "--db", db).stdout.decode()
    assert "format=2" in manifest


def test_get_on_missing_db_is_a_clear_error(sluice, tmp):
    r = sluice("get", "--db", tmp / "nope", "k", check=False)
    assert r.returncode == 2 and b"does not exist" in r.stderr


def test_ingest_sluice_and_rocksdb_files(sluice, tmp):
    db = tmp / "db"
    pairs = random_pairs(seed=9, n=1500)
    half = len(pairs) // 2
    ours = tmp / "ours.sst"
    sluice("sst", "build", "--out", ours, input=to_lines(pairs[:half]))
    theirs = tmp / "theirs.sst"
    o = Options(raw_mode=True)
    t = BlockBasedOptions()
    t.set_bloom_filter(10, False)
    t.set_format_version(5)
    o.set_block_based_table_factory(t)
    o.set_compression_type(DBCompressionType.lz4())
    w = SstFileWriter(o)
    w.open(str(theirs))
    for k, v in pairs[half:]:
        w[k] = v
    w.finish()
    sluice("put", "--db", db, "--hex", pairs[0][0].hex(), "00")  # overlaps: needs a seqno
    out = sluice("ingest", "--db", db, ours, theirs).stdout.decode().splitlines()
    assert len(out) == 2 and all("\tL" in line for line in out), out
    got = sluice("scan", "--db", db, "--hex").stdout
    assert got == to_lines(pairs)
    # Both source files are untouched and still valid.
    assert sluice("sst", "check", theirs).returncode == 0
