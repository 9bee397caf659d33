"""Read commands never change a Db (issue 12, bug 1); tools keep the Db's persisted options."""
import os

from rocksdict import Options, SstFileWriter  # noqa: F401  (same environment as the others)


def snapshot_dir(path):
    """Every file name with its bytes."""
    return {name: (path / name).read_bytes() for name in sorted(os.listdir(path))}


def test_read_commands_write_nothing(sluice, tmp):
    db = tmp / "db"
    sluice("put", "--db", db, "apple", "red")
    sluice("put", "--db", db, "banana", "yellow")
    before = snapshot_dir(db)
    assert sluice("get", "--db", db, "apple").stdout == b"red\n"
    assert sluice("scan", "--db", db).stdout == b"apple\tred\nbanana\tyellow\n"
    assert b"read amplification" in sluice("stats", "--db", db).stdout
    assert b"L0" in sluice("lsm", "--db", db).stdout or b"(empty)" in sluice("lsm", "--db", db).stdout
    assert snapshot_dir(db) == before, "a read command changed the database directory"


def test_writes_keep_the_persisted_options(sluice, tmp):
    db = tmp / "db"
    sluice("put", "--db", db, "k", "v")
    opts_file = next(p for p in sorted(db.iterdir()) if p.name.startswith("OPTIONS-"))
    # A user's setting, as a library user would have opened the Db with it.
    text = opts_file.read_text().replace("max_open_files=1000", "max_open_files=777")
    opts_file.write_text(text)
    sluice("put", "--db", db, "k2", "v2")
    latest = next(p for p in sorted(db.iterdir()) if p.name.startswith("OPTIONS-"))
    assert "max_open_files=777" in latest.read_text(), "a tool reset the Db's options"


def test_lsm_draws_levels(sluice, tmp):
    db = tmp / "db"
    for i in range(50):
        sluice("put", "--db", db, f"key{i:03}", "v" * 50)
    out = sluice("lsm", "--db", db, "--width", "60").stdout.decode()
    assert "read amplification" in out


def test_a_closed_pipe_ends_output_quietly(sluice, tmp):
    """`sluice sst dump big.sst | head -1`: no error, no backtrace, the shell's SIGPIPE status."""
    import subprocess

    from conftest import _find_sluice

    lines = "".join(f"k{i:06}\tvalue{i}\n" for i in range(20000)).encode()
    sst = tmp / "big.sst"
    sluice("sst", "build", "--out", sst, "--text", input=lines)
    p = subprocess.Popen(
        [str(_find_sluice()), "sst", "dump", str(sst), "--text"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert p.stdout.readline() == b"k000000\tvalue0\n"
    p.stdout.close()
    err = p.stderr.read()
    assert p.wait() == 141
    assert err == b"", err


def test_wal_dump_of_a_file_that_is_not_a_wal_fails(sluice, tmp):
    f = tmp / "notes.log"
    f.write_bytes(b"hello, this is not a write-ahead log\n" * 10)
    r = sluice("wal", "dump", f, check=False)
    assert r.returncode == 2 and b"not a WAL" in r.stderr
