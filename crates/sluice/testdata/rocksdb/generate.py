#!/usr/bin/env python3
"""Regenerates the RocksDB-written fixture tables of this folder (read by crates/sluice/src/sst).

Run from anywhere with `rocksdict` installed (tests/requirements.txt pins the version, which
bundles RocksDB 10.4.2):  python3 crates/sluice/testdata/rocksdb/generate.py [FILE...]
(no FILE: every file).

Every file holds keys b"key%06d" % i for i in range(n); the value of key i is b"value-%d" % i,
except that every 7th key is a point deletion. Files (n):
  fv6_default.sst      RocksDB's default options (format_version 6, XXH3, Snappy), n = 300
  fv6_crc32c.sst       format_version 6, crc32c, no compression, Bloom filter, n = 300
  fv7_zstd.sst         format_version 7, XXH3, ZSTD, Bloom filter, n = 300
  ribbon.sst           format_version 6, Ribbon filter (ribbonfilter:10:-1, always Ribbon), n = 3000
  partitioned.sst      format_version 6, partitioned index + partitioned Bloom filter, 512-byte
                       data blocks, 256-byte partitions, n = 3000
  first_key.sst        format_version 6, index_type=kBinarySearchWithFirstKey, index restart
                       interval 4, 256-byte data blocks, n = 1000
  range_del.sst        flushed by a RocksDB database with default options (rocksdict's
                       SstFileWriter cannot write range deletions): key i = b"value-%d" % i put
                       with seqno i + 1 for i in range(300), then the range deletion
                       [key000100, key000200) with seqno 301; the flush drops the 100 keys
                       it covers, so the file holds 200 puts and the range deletion

Regenerating changes the bytes (RocksDB records times and session ids), so the unit tests read
these files instead of hard-coding their contents, except for footer.rs's vectors, which were
copied from fv6_default.sst and fv6_crc32c.sst and stay valid on their own.
"""
import glob
import os
import re
import shutil
import sys
import tempfile

from rocksdict import (
    BlockBasedIndexType,
    BlockBasedOptions,
    ChecksumType,
    DBCompressionType,
    Options,
    Rdict,
    SstFileWriter,
)

HERE = os.path.dirname(os.path.abspath(__file__))


def write(name, opts, n):
    path = os.path.join(HERE, name)
    if os.path.exists(path):
        os.remove(path)
    w = SstFileWriter(opts)
    w.open(path)
    for i in range(n):
        k = b"key%06d" % i
        if i % 7 == 0:
            del w[k]
        else:
            w[k] = b"value-%d" % i
    w.finish()


def table(**kw):
    o = Options(raw_mode=True)
    t = BlockBasedOptions()
    for k, v in kw.items():
        getattr(t, k)(*v)
    o.set_block_based_table_factory(t)
    return o


def options_with(**table_options):
    """Column-family options with BlockBasedTable options rocksdict has no setter for (such as
    filter_policy=ribbonfilter), through an OPTIONS file of a scratch database."""
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


def fv6_crc32c():
    o = table(set_bloom_filter=(10, False), set_checksum_type=(ChecksumType.crc32c(),))
    o.set_compression_type(DBCompressionType.none())
    return o


def fv7_zstd():
    o = table(set_bloom_filter=(10, False), set_format_version=(7,))
    o.set_compression_type(DBCompressionType.zstd())
    return o


def partitioned():
    return table(
        set_bloom_filter=(10, False),
        set_index_type=(BlockBasedIndexType.two_level_index_search(),),
        set_partition_filters=(True,),
        set_metadata_block_size=(256,),
        set_block_size=(512,),
    )


FILES = {
    "fv6_default.sst": lambda name: write(name, Options(raw_mode=True), 300),
    "fv6_crc32c.sst": lambda name: write(name, fv6_crc32c(), 300),
    "fv7_zstd.sst": lambda name: write(name, fv7_zstd(), 300),
    "ribbon.sst": lambda name: write(name, options_with(filter_policy="ribbonfilter:10:-1"), 3000),
    "partitioned.sst": lambda name: write(name, partitioned(), 3000),
    "first_key.sst": lambda name: write(
        name,
        options_with(
            index_type="kBinarySearchWithFirstKey", index_block_restart_interval="4", block_size="256"
        ),
        1000,
    ),
    "range_del.sst": lambda name: write_range_del(name),
}


def main():
    for name in sys.argv[1:] or FILES:
        FILES[name](name)


def write_range_del(name):
    d = tempfile.mkdtemp()
    try:
        db = Rdict(os.path.join(d, "db"), Options(raw_mode=True))
        for i in range(300):
            db[b"key%06d" % i] = b"value-%d" % i
        db.delete_range(b"key000100", b"key000200")
        db.flush()
        (f,) = db.live_files()
        db.close()
        shutil.copyfile(os.path.join(d, "db") + f["name"], os.path.join(HERE, name))
    finally:
        shutil.rmtree(d)


if __name__ == "__main__":
    main()
