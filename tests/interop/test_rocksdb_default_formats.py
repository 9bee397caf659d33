"""Files written by RocksDB with its *default* options (format_version 6 in the RocksDB 10.4.2
that rocksdict 0.3.29 bundles; 7 in RocksDB >= 11) and with the common non-default table
options: every compression and checksum, format_version 7, partitioned index + filters, Ribbon
filters, range deletions. Sluice dumps them exactly, checks them, ingests them and reads every
key back; RocksDB with default options ingests Sluice's files; corruption is located."""
import glob
import itertools
import os
import re
import shutil
import tempfile

import pytest
from rocksdict import (
    BlockBasedIndexType,
    BlockBasedOptions,
    BottommostLevelCompaction,
    ChecksumType,
    CompactOptions,
    DBCompressionType,
    IngestExternalFileOptions,
    Options,
    Rdict,
    SliceTransform,
    SstFileWriter,
)

from conftest import random_pairs, to_lines

COMPRESSIONS = {
    "none": DBCompressionType.none,
    "snappy": DBCompressionType.snappy,
    "zlib": DBCompressionType.zlib,
    "bz2": DBCompressionType.bz2,
    "lz4": DBCompressionType.lz4,
    "lz4hc": DBCompressionType.lz4hc,
    "zstd": DBCompressionType.zstd,
}
CHECKSUMS = ["crc32c", "xxhash", "xxhash64", "xxh3"]


def write_sst(path, opts, pairs, deleted=frozenset()):
    w = SstFileWriter(opts)
    w.open(str(path))
    for k, v in pairs:
        if k in deleted:
            del w[k]
        else:
            w[k] = v
    w.finish()


def dump_lines(pairs, deleted=frozenset()):
    return b"".join(
        k.hex().encode() + (b"" if k in deleted else b"\t" + v.hex().encode()) + b"\n" for k, v in pairs
    )


def props(sluice, sst):
    out = sluice("sst", "props", sst).stdout.decode()
    return dict(line.split(": ", 1) for line in out.splitlines() if ": " in line)


def check_read_exactly(sluice, tmp, sst, pairs, deleted=frozenset()):
    """dump == what was written, check OK, ingest into a Sluice Db, every key back."""
    assert sluice("sst", "dump", sst).stdout == dump_lines(pairs, deleted)
    out = sluice("sst", "check", sst).stdout.decode()
    assert out.startswith(f"OK: {len(pairs)} entries"), out
    db = tmp / "sluice-db"
    shutil.rmtree(db, ignore_errors=True)
    sluice("ingest", "--db", db, sst)
    live = [(k, v) for k, v in pairs if k not in deleted]
    assert sluice("scan", "--db", db, "--hex").stdout == to_lines(live)
    for k, v in live[:: max(1, len(live) // 50)]:
        assert sluice("get", "--db", db, "--hex", k.hex()).stdout == v.hex().encode() + b"\n"
    for k in list(deleted)[:10]:
        assert sluice("get", "--db", db, "--hex", k.hex(), check=False).returncode == 1


def options_with(**table_options):
    """Column-family options carrying BlockBasedTable options rocksdict has no setter for (such
    as filter_policy=ribbonfilter), read back from an edited OPTIONS file of a scratch Db."""
    d = tempfile.mkdtemp()
    try:
        Rdict(os.path.join(d, "db"), Options(raw_mode=True)).close()
        f = glob.glob(os.path.join(d, "db", "OPTIONS-*"))[0]
        s = open(f).read()
        for k, v in table_options.items():
            s, n = re.subn(r"(\n  %s=)[^\n]*" % k, lambda m: m.group(1) + v, s)
            assert n == 1, k
        open(f, "w").write(s)
        _, cfs = Options.load_latest(os.path.join(d, "db"))
        return cfs["default"]
    finally:
        shutil.rmtree(d)


def test_rocksdb_default_options_file(sluice, tmp):
    """Exactly what a new user gets: SstFileWriter(Options())."""
    pairs = random_pairs(seed=60, n=3000)
    deleted = {k for i, (k, _) in enumerate(pairs) if i % 11 == 0}
    sst = tmp / "default.sst"
    write_sst(sst, Options(raw_mode=True), pairs, deleted)
    p = props(sluice, sst)
    assert p["format version"] == "6" and p["checksum"] == "xxh3", p
    check_read_exactly(sluice, tmp, sst, pairs, deleted)


@pytest.mark.parametrize("compression,checksum", list(itertools.product(sorted(COMPRESSIONS), CHECKSUMS)))
def test_rocksdb_default_format_every_compression_and_checksum(sluice, tmp, compression, checksum):
    pairs = random_pairs(seed=len(compression) * 7 + len(checksum), n=1500)
    deleted = {k for i, (k, _) in enumerate(pairs) if i % 13 == 0}
    o = Options(raw_mode=True)
    t = BlockBasedOptions()  # default format_version (6), index and filter policy
    t.set_checksum_type(getattr(ChecksumType, checksum)())
    o.set_block_based_table_factory(t)
    o.set_compression_type(COMPRESSIONS[compression]())
    sst = tmp / "rocks.sst"
    write_sst(sst, o, pairs, deleted)
    p = props(sluice, sst)
    assert p["format version"] == "6" and p["checksum"] == checksum, p
    check_read_exactly(sluice, tmp, sst, pairs, deleted)


@pytest.mark.parametrize("compression", ["none", "lz4", "zstd"])
def test_rocksdb_format_version_7(sluice, tmp, compression):
    """RocksDB >= 11 writes format_version 7 by default; 10.4.2 writes it when asked."""
    pairs = random_pairs(seed=77, n=1500)
    o = Options(raw_mode=True)
    t = BlockBasedOptions()
    t.set_format_version(7)
    t.set_bloom_filter(10, False)
    o.set_block_based_table_factory(t)
    o.set_compression_type(COMPRESSIONS[compression]())
    sst = tmp / "fv7.sst"
    write_sst(sst, o, pairs)
    assert props(sluice, sst)["format version"] == "7"
    check_read_exactly(sluice, tmp, sst, pairs)


@pytest.mark.parametrize("filter_kind", ["bloom", "ribbon"])
def test_rocksdb_partitioned_index_and_filters(sluice, tmp, filter_kind):
    pairs = random_pairs(seed=88, n=6000, max_key=40)
    deleted = {k for i, (k, _) in enumerate(pairs) if i % 5 == 0}
    if filter_kind == "ribbon":
        o = options_with(
            filter_policy="ribbonfilter:10:-1",
            index_type="kTwoLevelIndexSearch",
            partition_filters="true",
            metadata_block_size="512",
            block_size="1024",
        )
    else:
        o = Options(raw_mode=True)
        t = BlockBasedOptions()
        t.set_index_type(BlockBasedIndexType.two_level_index_search())
        t.set_partition_filters(True)
        t.set_bloom_filter(10, False)
        t.set_metadata_block_size(512)
        t.set_block_size(1024)
        o.set_block_based_table_factory(t)
    sst = tmp / "partitioned.sst"
    write_sst(sst, o, pairs, deleted)
    p = props(sluice, sst)
    assert p["rocksdb.block.based.table.index.type"] == "2", p
    assert int(p["rocksdb.index.partitions"]) > 3, p
    assert p["rocksdb.filter.policy"] == ("ribbonfilter" if filter_kind == "ribbon" else "bloomfilter")
    json = sluice("sst", "props", "--json", sst).stdout.decode()
    assert '"has_filter": true' in json
    check_read_exactly(sluice, tmp, sst, pairs, deleted)


@pytest.mark.parametrize("index_type", ["kHashSearch", "kBinarySearchWithFirstKey"])
def test_rocksdb_other_index_types(sluice, tmp, index_type):
    pairs = random_pairs(seed=101, n=3000)
    deleted = {k for i, (k, _) in enumerate(pairs) if i % 9 == 0}
    o = options_with(index_type=index_type, index_block_restart_interval="4", block_size="512")
    if index_type == "kHashSearch":  # needs a prefix extractor
        o.set_prefix_extractor(SliceTransform.create_fixed_prefix(2))
    sst = tmp / "index.sst"
    write_sst(sst, o, pairs, deleted)
    want = {"kHashSearch": "1", "kBinarySearchWithFirstKey": "3"}[index_type]
    assert props(sluice, sst)["rocksdb.block.based.table.index.type"] == want
    check_read_exactly(sluice, tmp, sst, pairs, deleted)


def test_rocksdb_ribbon_filter(sluice, tmp):
    """A full Ribbon filter (the Ribbon policy at every level): read as a filter, not as "no
    filter"; `check` proves it admits every key under Sluice's reading of it."""
    pairs = random_pairs(seed=99, n=5000)
    sst = tmp / "ribbon.sst"
    write_sst(sst, options_with(filter_policy="ribbonfilter:10:-1"), pairs)
    assert props(sluice, sst)["rocksdb.filter.policy"] == "ribbonfilter"
    assert '"has_filter": true' in sluice("sst", "props", "--json", sst).stdout.decode()
    check_read_exactly(sluice, tmp, sst, pairs)


def test_rocksdb_file_with_range_deletions(sluice, tmp):
    """rocksdict's SstFileWriter cannot write range deletions, so the file is flushed by a
    RocksDB Db (default options): Sluice reads its points exactly and its range deletion."""
    pairs = random_pairs(seed=111, n=1000, max_key=30)
    db = Rdict(str(tmp / "rocks"), Options(raw_mode=True))
    for k, v in pairs:
        db[k] = v
    lo, hi = pairs[300][0], pairs[600][0]
    db.delete_range(lo, hi)
    db.flush()
    (f,) = db.live_files()
    db.close()
    sst = str(tmp / "rocks") + f["name"]
    kept = [(k, v) for k, v in pairs if not lo <= k < hi]
    p = props(sluice, sst)
    assert p["format version"] == "6" and p["rocksdb.num.range-deletions"] == "1", p
    out = sluice("sst", "check", sst).stdout.decode()
    assert out.startswith(f"OK: {len(kept)} entries"), out
    lines = [l.split("\t") for l in sluice("sst", "dump", "--internal", sst).stdout.decode().splitlines()]
    points = [l for l in lines if l[3] != "rangedel"]
    assert [(bytes.fromhex(l[0]), bytes.fromhex(l[1])) for l in points] == kept
    assert all(l[3] == "put" and int(l[2]) > 0 for l in points)
    # The range deletion itself: START, END (exclusive), its seqno.
    tombs = [l for l in lines if l[3] == "rangedel"]
    assert [(bytes.fromhex(l[0]), bytes.fromhex(l[1])) for l in tombs] == [(lo, hi)]
    assert int(tombs[0][2]) > 0


@pytest.mark.parametrize("bloom", [True, False])
def test_sluice_files_ingest_into_rocksdb_with_default_options(sluice, tmp, bloom):
    pairs = random_pairs(seed=121, n=3000)
    sst = tmp / "sluice.sst"
    args = [] if bloom else ["--bloom-bits", "0"]
    sluice("sst", "build", "--out", sst, *args, input=to_lines(pairs))
    o = Options(raw_mode=True)
    o.create_if_missing(True)
    db = Rdict(str(tmp / "db"), o)
    try:
        db.ingest_external_file([str(sst)], IngestExternalFileOptions())
        assert list(db.items()) == pairs
        for k, v in pairs[::37]:
            assert db.get(k) == v
        # RocksDB rewrites them in its own default format; Sluice reads that back.
        c = CompactOptions()
        c.set_bottommost_level_compaction(BottommostLevelCompaction.force())
        db.compact_range(None, None, c)
    finally:
        db.close()
    db = Rdict(str(tmp / "db"), o)
    files = [str(tmp / "db") + f["name"] for f in db.live_files()]
    db.close()
    assert files
    rewritten = b""
    for f in files:
        assert props(sluice, f)["format version"] == "6"
        assert sluice("sst", "check", f).stdout.decode().startswith("OK:")
        rewritten += sluice("sst", "dump", f).stdout
    assert sorted(rewritten.splitlines()) == sorted(to_lines(pairs).splitlines())


def corrupt_check(sluice, path, offset, expect_at, expect_reason):
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))
    for cmd in (["sst", "check", path], ["sst", "dump", path]):
        r = sluice(*cmd, check=False)
        assert r.returncode == 2, cmd
        err = r.stderr.decode()
        assert f"corruption in {path} at offset {expect_at}" in err and expect_reason in err, err
    r = sluice("ingest", "--db", path.parent / "db", path, check=False)
    assert r.returncode == 2 and f"at offset {expect_at}" in r.stderr.decode(), r.stderr.decode()


def test_corrupt_format_version_6_footer_is_refused(sluice, tmp):
    sst = tmp / "c.sst"
    write_sst(sst, Options(raw_mode=True), random_pairs(seed=5, n=500))
    footer = sst.stat().st_size - 53
    # Byte 20 of the footer lies in its checksummed reserved area.
    corrupt_check(sluice, sst, footer + 20, footer + 5, "footer checksum mismatch")


def test_corrupt_format_version_6_block_is_refused(sluice, tmp):
    sst = tmp / "c.sst"
    write_sst(sst, Options(raw_mode=True), random_pairs(seed=6, n=500))
    corrupt_check(sluice, sst, 100, 0, "data block checksum mismatch")


def test_rocksdb_ingests_sluice_format_version_6(sluice, tmp):
    """Sluice writes format_version 6 when asked (TableBuilder::with_format_version; the
    default stays 5): crates/sluice/testdata/rocksdb/sluice_fv6.sst, rewritten by the Rust test
    `sluice_fv6_fixture_reads_back`. RocksDB verifies its footer and context-aware block
    checksums when it opens and reads it."""
    src = os.path.join(os.path.dirname(__file__), "../../crates/sluice/testdata/rocksdb/sluice_fv6.sst")
    sst = tmp / "sluice_fv6.sst"
    shutil.copyfile(src, sst)
    assert props(sluice, sst)["format version"] == "6"
    o = Options(raw_mode=True)
    o.create_if_missing(True)
    db = Rdict(str(tmp / "db"), o)
    try:
        db.ingest_external_file([str(sst)], IngestExternalFileOptions())
        for i in range(300):
            want = None if i % 7 == 0 else b"value-%d" % i
            assert db.get(b"key%06d" % i) == want, i
    finally:
        db.close()
    # The same file with one byte of its first data block changed: RocksDB refuses it, having
    # removed our context from the stored checksum.
    bad = tmp / "bad.sst"
    data = bytearray(open(src, "rb").read())
    data[3] ^= 1
    bad.write_bytes(bytes(data))
    db = Rdict(str(tmp / "db2"), o)
    try:
        with pytest.raises(Exception, match=r"block checksum mismatch: stored\(context removed\)"):
            db.ingest_external_file([str(bad)], IngestExternalFileOptions())
    finally:
        db.close()
