"""Sluice <-> RocksDB table compatibility, both directions, through rocksdict."""
import itertools

import pytest
from rocksdict import (
    BlockBasedOptions,
    ChecksumType,
    DBCompressionType,
    IngestExternalFileOptions,
    Options,
    Rdict,
    SstFileWriter,
)

from conftest import random_pairs, to_lines

COMPRESSIONS = ["none", "snappy", "lz4", "zstd"]
CHECKSUMS = ["crc32c", "xxh3"]


def rocks_options(bloom=True, compression=None, checksum=None, format_version=5):
    o = Options(raw_mode=True)
    o.create_if_missing(True)
    t = BlockBasedOptions()
    if bloom:
        t.set_bloom_filter(10, False)
    if checksum is not None:
        t.set_checksum_type(checksum)
    t.set_format_version(format_version)
    o.set_block_based_table_factory(t)
    if compression is not None:
        o.set_compression_type(compression)
    return o


@pytest.mark.parametrize(
    "compression,checksum,bloom",
    list(itertools.product(COMPRESSIONS, CHECKSUMS, [True, False])),
)
def test_sluice_files_ingest_into_rocksdb(sluice, tmp, compression, checksum, bloom):
    pairs = random_pairs(seed=hash((compression, checksum, bloom)) & 0xFFFF, n=3000)
    sst = tmp / "sluice.sst"
    sluice(
        "sst", "build", "--out", sst, "--compression", compression, "--checksum", checksum,
        "--bloom-bits", "10" if bloom else "0", input=to_lines(pairs),
    )
    props = sluice("sst", "props", sst).stdout.decode()
    assert "rocksdb.external_sst_file.version: 2" in props
    db = Rdict(str(tmp / "db"), rocks_options(bloom=True))
    try:
        db.ingest_external_file([str(sst)], IngestExternalFileOptions())
        for k, v in pairs:
            assert db.get(k) == v, k.hex()
        present = {k for k, _ in pairs}
        absent = [bytes([b]) * 7 + b"absent" for b in range(256)]
        absent += [k + b"\x00" for k, _ in pairs[:500]]
        for k in absent:
            if k not in present:
                assert db.get(k) is None, k.hex()
        assert list(db.items()) == pairs
    finally:
        db.close()


ROCKS_COMPRESSIONS = {
    "none": DBCompressionType.none(),
    "snappy": DBCompressionType.snappy(),
    "zlib": DBCompressionType.zlib(),
    "bz2": DBCompressionType.bz2(),
    "lz4": DBCompressionType.lz4(),
    "lz4hc": DBCompressionType.lz4hc(),
    "zstd": DBCompressionType.zstd(),
}


@pytest.mark.parametrize("name", sorted(ROCKS_COMPRESSIONS))
@pytest.mark.parametrize("checksum", ["crc32c", "xxh3", "xxhash", "xxhash64"])
def test_rocksdb_files_are_read_by_sluice(sluice, tmp, name, checksum):
    pairs = random_pairs(seed=len(name) * 31 + len(checksum), n=2000)
    # Some deletions too: RocksDB's SstFileWriter writes them as kind 0.
    deleted = {k for i, (k, _) in enumerate(pairs) if i % 17 == 0}
    sst = tmp / "rocks.sst"
    opts = rocks_options(compression=ROCKS_COMPRESSIONS[name], checksum=getattr(ChecksumType, checksum)())
    w = SstFileWriter(opts)
    w.open(str(sst))
    for k, v in pairs:
        if k in deleted:
            del w[k]
        else:
            w[k] = v
    w.finish()
    expected = b"".join(
        k.hex().encode() + (b"" if k in deleted else b"\t" + v.hex().encode()) + b"\n" for k, v in pairs
    )
    got = sluice("sst", "dump", sst).stdout
    assert got == expected
    # `check` also proves the Bloom filter RocksDB wrote admits every key under Sluice's hash.
    out = sluice("sst", "check", sst).stdout.decode()
    assert out.startswith(f"OK: {len(pairs)} entries"), out
    internal = sluice("sst", "dump", "--internal", sst).stdout.decode().splitlines()
    assert all(line.split("\t")[2] == "0" for line in internal)
    assert sum(line.endswith("\tdel") for line in internal) == len(deleted)


def test_sluice_filter_hash_matches_rocksdb_on_every_length(sluice, tmp):
    """Keys of every length 0..300: RocksDB writes the filter, Sluice must find every key."""
    keys = sorted({bytes([i % 251]) * n + n.to_bytes(2, "big") for n in range(0, 300) for i in range(2)})
    sst = tmp / "lengths.sst"
    w = SstFileWriter(rocks_options())
    w.open(str(sst))
    for k in keys:
        w[k] = b"v"
    w.finish()
    out = sluice("sst", "check", sst).stdout.decode()
    assert out.startswith(f"OK: {len(keys)} entries"), out


def test_corrupt_file_check_names_offset(sluice, tmp):
    pairs = random_pairs(seed=5, n=500)
    sst = tmp / "c.sst"
    sluice("sst", "build", "--out", sst, input=to_lines(pairs))
    data = bytearray(sst.read_bytes())
    data[100] ^= 0x01
    sst.write_bytes(bytes(data))
    r = sluice("sst", "check", sst, check=False)
    assert r.returncode == 2
    err = r.stderr.decode()
    assert "corruption in" in err and "at offset 0" in err and "checksum mismatch" in err, err


def test_build_rejects_unsorted_input_and_leaves_no_file(sluice, tmp):
    sst = tmp / "bad.sst"
    r = sluice("sst", "build", "--out", sst, input=b"02\t00\n01\t00\n", check=False)
    assert r.returncode == 2
    assert "<stdin>:2" in r.stderr.decode() and "strictly increasing" in r.stderr.decode()
    assert not sst.exists()
    r = sluice("sst", "build", "--out", sst, input=b"zz\t00\n", check=False)
    assert r.returncode == 2 and "<stdin>:1: key is not valid hex" in r.stderr.decode()
    assert not sst.exists()
