"""Keys and values: round trips, batches, scans, snapshots, close, read-only, SstWriter."""

import errno
import os
import subprocess
import sys

import pytest
import rocksdict

import sluice


def test_round_trip_and_reopen(tmp_path):
    path = tmp_path / "db"
    with sluice.open(path) as db:
        db.put(b"a", b"1")
        db.put(b"b\x00\xff", b"\x00" * 1000)
        db.delete(b"a")
        assert db.get(b"a") is None
        assert db.get(b"b\x00\xff") == b"\x00" * 1000
        db[b"c"] = b"3"
        assert db[b"c"] == b"3" and b"c" in db
        with pytest.raises(KeyError):
            db[b"zz"]
    with sluice.open(path, create=False) as db:
        assert list(db) == [(b"b\x00\xff", b"\x00" * 1000), (b"c", b"3")]


def test_delete_range_flush_compact_metrics_checkpoint(db, tmp_path):
    for i in range(100):
        db.put(b"k%03d" % i, b"v%d" % i)
    db.delete_range(b"k010", b"k090")
    db.flush()
    db.compact_range()
    db.compact_range(b"k000", b"k050")
    keys = [k for k, _ in db.scan()]
    assert keys == [b"k%03d" % i for i in list(range(10)) + list(range(90, 100))]
    m = db.metrics()
    assert m["flushes"] >= 1 and len(m["levels"]) == 7 and m["background_error"] is None
    info = db.checkpoint(tmp_path / "cp")
    assert info["tables"] >= 1
    with sluice.open(tmp_path / "cp", create=False) as cp:
        assert cp.get(b"k095") == b"v95" and cp.get(b"k050") is None


def test_batch_is_atomic(db):
    db.put(b"x", b"old")
    with db.batch() as b:
        b.put(b"a", b"1")
        b.delete(b"x")
        b.put(b"b", b"2")
    assert db.get(b"a") == b"1" and db.get(b"x") is None
    with pytest.raises(RuntimeError):
        with db.batch() as b:
            b.put(b"c", b"3")
            b.delete_range(b"a", b"z")
            raise RuntimeError("boom")
    assert db.get(b"c") is None and db.get(b"a") == b"1" and db.get(b"b") == b"2"
    wb = sluice.WriteBatch()
    wb.put(b"d", b"4")
    wb.delete_range(b"a", b"c")
    assert len(wb) == 2
    db.write(wb, sync=True)
    assert list(db.scan()) == [(b"d", b"4")]


def test_scan_bounds_reverse_chunks(db):
    n = 3000  # more than one chunk
    with db.batch() as b:
        for i in range(n):
            b.put(b"%05d" % i, b"v%d" % i)
    assert len(list(db.scan())) == n
    assert [k for k, _ in db.scan(b"00010", b"00013")] == [b"00010", b"00011", b"00012"]
    assert [k for k, _ in db.scan(b"00010", b"00013", reverse=True)] == [
        b"00012",
        b"00011",
        b"00010",
    ]
    rev = list(db.scan(reverse=True))
    assert rev[0] == (b"%05d" % (n - 1), b"v%d" % (n - 1)) and len(rev) == n
    assert list(db.scan(start=b"02998")) == [(b"02998", b"v2998"), (b"02999", b"v2999")]
    assert [k for k, _ in db.scan(end=b"00002")] == [b"00000", b"00001"]
    assert list(db.scan(b"5", b"6")) == []


def test_snapshot_isolation(db):
    db.put(b"a", b"1")
    db.put(b"b", b"1")
    with db.snapshot() as snap:
        db.put(b"a", b"2")
        db.delete(b"b")
        db.put(b"c", b"2")
        db.flush()
        assert db.get(b"a", snapshot=snap) == b"1"
        assert list(db.scan(snapshot=snap)) == [(b"a", b"1"), (b"b", b"1")]
        assert list(db.scan(reverse=True, snapshot=snap)) == [(b"b", b"1"), (b"a", b"1")]
        assert list(db.scan()) == [(b"a", b"2"), (b"c", b"2")]
    with pytest.raises(sluice.ClosedError):
        db.get(b"a", snapshot=snap)


def test_use_after_close(tmp_path):
    db = sluice.open(tmp_path / "db")
    db.put(b"a", b"1")
    scan = db.scan()
    db.close()
    db.close()  # idempotent
    assert db.closed
    for call in (
        lambda: db.get(b"a"),
        lambda: db.put(b"a", b"2"),
        lambda: db.delete(b"a"),
        lambda: list(db.scan()),
        lambda: next(scan),
        lambda: db.flush(),
        lambda: db.metrics(),
        lambda: db.snapshot(),
        lambda: db.tables(),
    ):
        with pytest.raises(sluice.ClosedError):
            call()
    # The lock is released: the Db opens again.
    with sluice.open(tmp_path / "db") as again:
        assert again.get(b"a") == b"1"


def test_read_only_beside_writer_and_locked(tmp_path):
    path = tmp_path / "db"
    with sluice.open(path) as writer:
        writer.put(b"a", b"1")
        writer.flush()
        writer.put(b"b", b"2")  # in the WAL only
        with sluice.open(path, read_only=True) as reader:
            assert reader.read_only
            assert reader.get(b"a") == b"1" and reader.get(b"b") == b"2"
            with pytest.raises(sluice.InvalidArgumentError):
                reader.put(b"c", b"3")
        # Another process cannot open it for writing.
        code = (
            "import sluice, sys\n"
            "try:\n"
            f"    sluice.open({str(path)!r})\n"
            "except sluice.LockedError as e:\n"
            "    assert isinstance(e, OSError) and isinstance(e, sluice.Error)\n"
            "    print('locked', e.errno, e.filename)\n"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        assert out.stdout.split()[0] == "locked"
        assert int(out.stdout.split()[1]) == errno.EAGAIN


def _open_files_under(*prefixes):
    """This process's file descriptors whose path starts with one of `prefixes`."""
    fds = []
    for name in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue
        if target.startswith(prefixes):
            fds.append(int(name))
    return fds


def test_close_then_reopen_beside_a_child_holding_the_dbs_files(tmp_path):
    # A child forked while the Db is open shares its open files (its LOCK, its WAL ring) until
    # it execs, or for its whole life (a multiprocessing worker). Here a child is handed them
    # outright; the Db's close must still let go, so the reopen is not "locked".
    path = tmp_path / "db"
    db = sluice.open(path)
    db.put(b"k", b"v")
    fds = _open_files_under(os.path.realpath(path / "LOCK"), "/dev/shm/sluice-wal-stage-")
    assert fds, "the Db's LOCK is not open in this process"
    child = subprocess.Popen(["sleep", "30"], pass_fds=fds)
    try:
        lock = os.path.realpath(path / "LOCK")
        held = [os.readlink(f"/proc/{child.pid}/fd/{fd}") for fd in fds]
        assert lock in held, held
        db.close()
        with sluice.open(path) as again:
            assert again.get(b"k") == b"v"
    finally:
        child.kill()
        child.wait()


def _newest_options(path):
    """The key=value lines of the Db's newest OPTIONS file (one is written at every open)."""
    newest = max(path.glob("OPTIONS-*"), key=lambda p: int(p.name.split("-")[1]))
    lines = [ln.split("=", 1) for ln in newest.read_text().splitlines() if "=" in ln]
    return {k: v for k, v in lines if not k.startswith("#")}


def test_reopen_keeps_persisted_options_and_applies_given_ones(tmp_path):
    path = tmp_path / "db"
    with sluice.open(path, write_buffer_size=1 << 20, compression="zstd") as db:
        db.put(b"a", b"1")
    assert _newest_options(path)["write_buffer_size"] == str(1 << 20)
    # A keyword given again wins over the Db's OPTIONS file ...
    with sluice.open(path, write_buffer_size=3 << 20) as db:
        assert db.get(b"a") == b"1"
    opts = _newest_options(path)
    assert opts["write_buffer_size"] == str(3 << 20)
    # ... and what it does not name keeps the Db's own value.
    zstd = opts["compression_per_level"]
    assert set(zstd.split(",")) == {"ZSTD"}, zstd
    # Without keywords, the persisted values stay.
    with sluice.open(path) as db:
        pass
    assert _newest_options(path)["write_buffer_size"] == str(3 << 20)
    assert _newest_options(path)["compression_per_level"] == zstd
    # A keyword out of range on an existing Db is the caller's error, not the OPTIONS file's.
    for read_only in (False, True):
        with pytest.raises(sluice.InvalidArgumentError) as e:
            sluice.open(path, read_only=read_only, write_buffer_size=1)
        assert not isinstance(e.value, sluice.CorruptionError)
        assert "write_buffer_size" in str(e.value)
    assert _newest_options(path)["write_buffer_size"] == str(3 << 20)


def test_errors(tmp_path):
    with pytest.raises(sluice.InvalidArgumentError) as e:
        sluice.open(tmp_path / "x", write_buffer_size=1)
    assert isinstance(e.value, ValueError)
    with pytest.raises(TypeError):
        sluice.open(tmp_path / "x", no_such_option=1)
    with pytest.raises(sluice.InvalidArgumentError):
        sluice.open(tmp_path / "missing", read_only=True)
    with pytest.raises(sluice.IoError) as e:
        with sluice.open(tmp_path / "db") as db:
            db.ingest([tmp_path / "no.sst"])
    assert isinstance(e.value, OSError) and e.value.errno == errno.ENOENT


def test_corruption_names_file_and_offset(tmp_path):
    sst = tmp_path / "a.sst"
    with sluice.SstWriter(sst) as w:
        for i in range(100):
            w.put(b"k%03d" % i, b"v" * 100)
    data = bytearray(sst.read_bytes())
    data[100] ^= 0xFF  # in the first data block: its checksum fails
    sst.write_bytes(bytes(data))
    with sluice.open(tmp_path / "db") as db:
        with pytest.raises(sluice.CorruptionError) as e:
            db.ingest([sst])
    assert e.value.file.endswith("a.sst") and isinstance(e.value.offset, int)


def test_sst_writer_ingest_and_rocksdict(db, tmp_path):
    sst = tmp_path / "fruit.sst"
    with sluice.SstWriter(sst, compression="snappy") as w:
        w.put(b"apple", b"red")
        w.put(b"banana", b"yellow")
        w.put(b"cherry", b"dark red")
        with pytest.raises(sluice.KeyOrderError) as e:
            w.put(b"banana", b"again")
        assert e.value.key == b"banana"
    assert w.info["entries"] == 3 and w.info["smallest_key"] == b"apple"
    assert w.info["largest_key"] == b"cherry"
    placed = db.ingest([sst])
    assert placed[0]["entries"] == 3
    assert db.get(b"banana") == b"yellow"
    # RocksDB reads the file: rocksdict's SstFileWriter counterpart, ingest_external_file.
    rpath = str(tmp_path / "rocks")
    rdb = rocksdict.Rdict(rpath, options=rocksdict.Options(raw_mode=True))
    try:
        rdb.ingest_external_file([str(sst)])
        assert rdb[b"cherry"] == b"dark red"
        assert list(rdb.keys()) == [b"apple", b"banana", b"cherry"]
    finally:
        rdb.close()


def test_sst_writer_delete_range_in_sluice_and_rocksdb(db, tmp_path):
    keys = [b"a", b"b", b"c", b"d", b"e"]
    for k in keys:
        db.put(k, b"old")
    db.flush()
    rpath = str(tmp_path / "rocks")
    rdb = rocksdict.Rdict(rpath, options=rocksdict.Options(raw_mode=True))
    for k in keys:
        rdb[k] = b"old"
    rdb.flush()
    sst = tmp_path / "del.sst"
    with sluice.SstWriter(sst) as w:
        w.delete(b"a")
        w.put(b"e", b"new")
        w.delete_range(b"b", b"d")  # range deletions in any order relative to the points
    assert w.info["entries"] == 2
    db.ingest([sst])
    assert [db.get(k) for k in keys] == [None, None, None, b"old", b"new"]
    try:
        rdb.ingest_external_file([str(sst)])
        assert [rdb.get(k) for k in keys] == [None, None, None, b"old", b"new"]
    finally:
        rdb.close()
    only = tmp_path / "only.sst"
    with sluice.SstWriter(only) as w:
        w.delete_range(b"d", b"e")
    db.ingest([only])
    assert list(db.scan()) == [(b"e", b"new")]


def test_sst_writer_removes_file_on_exception(tmp_path):
    sst = tmp_path / "x.sst"
    with pytest.raises(RuntimeError):
        with sluice.SstWriter(sst) as w:
            w.put(b"a", b"1")
            raise RuntimeError("boom")
    assert not sst.exists() and os.listdir(tmp_path) == []
    with pytest.raises(sluice.InvalidArgumentError):
        with sluice.SstWriter(sst):
            pass  # no entries
    assert os.listdir(tmp_path) == []
    w = sluice.SstWriter(sst)
    w.put(b"a", b"1")
    w.finish()
    with pytest.raises(sluice.ClosedError):
        w.put(b"b", b"2")


def test_close_while_threads_use_the_db(tmp_path):
    import threading

    db = sluice.open(tmp_path / "db")
    for i in range(1000):
        db.put(b"%04d" % i, b"v")
    outcomes = []
    busy = threading.Barrier(9)  # every thread has done a round before the close

    def reader():
        try:
            rounds = 0
            while True:
                assert db.get(b"0007") == b"v"
                assert len(list(db.scan(b"0100", b"0200"))) == 100
                db.put(b"x", b"y")
                rounds += 1
                if rounds == 1:
                    busy.wait()
        except sluice.ClosedError:
            outcomes.append("closed")
        except BaseException as e:  # noqa: BLE001 - reported below
            outcomes.append(e)

    threads = [threading.Thread(target=reader) for _ in range(8)]
    for t in threads:
        t.start()
    busy.wait()
    db.close()
    for t in threads:
        t.join()
    assert outcomes == ["closed"] * 8
    with sluice.open(tmp_path / "db") as again:  # closed cleanly: the lock is free
        assert again.get(b"x") == b"y"
