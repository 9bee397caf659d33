"""`sluice lsm --json/--html` on Dbs written by RocksDB (rocksdict): flushes, ingests (one tiny
file spanning every key: the wide one), a manual compaction, a second column family, a reopen
(RocksDB starts a new MANIFEST with a dump of the state at every open). The JSON of a fresh Db
is compared with golden/lsm_timeline_rocksdb.json (SLUICE_REWRITE_GOLDEN=1 rewrites it): the
page prints no volatile field (no db id, no file times) and rocksdict's RocksDB writes the
same table bytes on every run."""
import json
import os
from pathlib import Path

from rocksdict import Options, Rdict, SstFileWriter

GOLDEN = Path(__file__).resolve().parent / "golden" / "lsm_timeline_rocksdb.json"


def opts():
    o = Options(raw_mode=True)
    o.create_if_missing(True)
    o.create_missing_column_families(True)
    o.set_disable_auto_compactions(True)
    return o


def write_sst(path, pairs):
    w = SstFileWriter(Options(raw_mode=True))
    w.open(str(path))
    for k, v in pairs:
        w[k] = v
    w.finish()


def build_rocksdb(path, tmp):
    db = Rdict(str(path), opts(), column_families={"users": Options(raw_mode=True)})
    users = db.get_column_family("users")
    for lo, hi in [(0, 400), (100, 300), (200, 260), (500, 900)]:
        for k in range(lo, hi):
            db[b"k%04d" % k] = b"v" * 200
        db.flush()
    for k in range(50):
        users[b"u%03d" % k] = b"x"
    users.flush()
    write_sst(tmp / "wide.sst", [(b"a", b"x"), (b"zz", b"x")])
    db.ingest_external_file([str(tmp / "wide.sst")])
    write_sst(tmp / "high.sst", [(b"k%04d" % k, b"y" * 100) for k in range(2000, 2100)])
    db.ingest_external_file([str(tmp / "high.sst")])
    db.compact_range(b"k0100", b"k0300")
    db.close()


def lsm_json(sluice, db):
    return json.loads(sluice("lsm", "--db", db, "--json").stdout)


def kinds(data):
    return [e["kind"] for e in data["edits"]]


def test_rocksdb_history_matches_golden(sluice, tmp):
    db = tmp / "rdb"
    build_rocksdb(db, tmp)
    out = sluice("lsm", "--db", db, "--json").stdout.decode()
    data = json.loads(out)
    assert data["source"] == "rocksdb"
    assert [(c["name"], c["drawn"]) for c in data["column_families"]] == [
        ("default", True), ("users", False)]
    k = kinds(data)
    assert k.count("flush") == 4 and k.count("ingest") == 2 and k.count("compaction") == 1, k
    wide = [f for f in data["files"] if f.get("wide")]
    assert [(f["kind"], data["keys"][f["lo"]], data["keys"][f["hi"]]) for f in wide] == [
        ("ingest", "a", "zz")]
    assert data["series"]["l0_sublevels"][-2] >= 3
    assert data["series"]["compaction_written"][-1] > 0
    settings = {k: v for s, k, v in data["options"]["settings"] if s == 'CFOptions "default"'}
    assert settings["disable_auto_compactions"] == "true"
    if os.environ.get("SLUICE_REWRITE_GOLDEN"):
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(out)
    assert out == GOLDEN.read_text(), f"differs from {GOLDEN} (SLUICE_REWRITE_GOLDEN=1 rewrites it)"


def test_reopened_rocksdb_starts_from_a_snapshot(sluice, tmp):
    db = tmp / "rdb"
    build_rocksdb(db, tmp)
    r = Rdict(str(db), opts(), column_families={"users": Options(raw_mode=True)})
    r[b"k5000"] = b"z"
    r.flush()
    r.close()
    data = lsm_json(sluice, db)
    k = kinds(data)
    assert "snapshot" in k and k[-2:].count("flush") + k[-1:].count("other") >= 1, k
    snap = [f for f in data["files"] if f["kind"] == "snapshot"]
    assert snap, "files present at the open are snapshot files"
    assert k.index("snapshot") < k.index("flush")
    page = tmp / "r.html"
    sluice("lsm", "--db", db, "--html", page)
    assert page.stat().st_size > 10_000


def test_damaged_rocksdb_manifest_is_refused_with_file_and_offset(sluice, tmp):
    db = tmp / "rdb"
    build_rocksdb(db, tmp)
    manifest = db / (db / "CURRENT").read_text().strip()
    data = bytearray(manifest.read_bytes())
    # Append a well-framed record (valid checksum) whose edit holds tag 77: unknown and not
    # marked safe to ignore, so RocksDB itself would refuse it.
    import struct

    def crc32c(b):
        crc = 0xFFFFFFFF
        for x in b:
            crc ^= x
            for _ in range(8):
                crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
        return crc ^ 0xFFFFFFFF

    def mask(c):
        return ((((c >> 15) | (c << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF

    payload = bytes([77])
    block_left = 32768 - len(data) % 32768
    if block_left < 7 + len(payload):
        data += b"\0" * block_left
    offset = len(data)
    data += struct.pack("<IHB", mask(crc32c(bytes([1]) + payload)), len(payload), 1) + payload
    manifest.write_bytes(bytes(data))
    r = sluice("lsm", "--db", db, "--json", check=False)
    assert r.returncode == 2
    err = r.stderr.decode()
    assert manifest.name in err and str(offset) in err and "unknown tag 77" in err, err


def test_text_lsm_of_a_rocksdb_db_points_at_the_history_flags(sluice, tmp):
    db = tmp / "rdb"
    build_rocksdb(db, tmp)
    r = sluice("lsm", "--db", db, check=False)
    assert r.returncode == 2 and b"is a RocksDB Db" in r.stderr and b"--json or --html" in r.stderr
