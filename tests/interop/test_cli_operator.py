"""Operator commands, exit codes, exact I/O of keys and values (issue 12)."""
import fcntl
import json
import os

from conftest import random_pairs, to_lines


def sst_files(db):
    return sorted(p for p in db.iterdir() if p.suffix == ".sst")


# ---------------------------------------------------------------- exit codes and messages

def test_exit_codes_absent_1_errors_2(sluice, tmp):
    db = tmp / "db"
    sluice("put", "--db", db, "k", "v")
    r = sluice("get", "--db", db, "nope", check=False)
    assert r.returncode == 1 and r.stderr == b"not found\n"
    r = sluice("get", "--db", tmp / "missing", "k", check=False)
    assert r.returncode == 2 and b"--db" in r.stderr and b"does not exist" in r.stderr
    f = tmp / "afile"
    f.write_bytes(b"x")
    for cmd in (["get", "--db", f, "k"], ["scan", "--db", f], ["put", "--db", f, "k", "v"], ["stats", "--db", f]):
        r = sluice(*cmd, check=False)
        assert r.returncode == 2 and b"is a file, not a database directory" in r.stderr, (cmd, r.stderr)
    other = tmp / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    for cmd in (["get", "--db", other, "k"], ["put", "--db", other, "k", "v"], ["tables", "--db", other]):
        r = sluice(*cmd, check=False)
        assert r.returncode == 2 and b"not a Sluice database" in r.stderr, (cmd, r.stderr)
    assert os.listdir(other) == ["notes.txt"], "a write command created a Db among other files"
    r = sluice("get", "--db", db, "--hex", "zz", check=False)
    assert r.returncode == 2 and b"not valid hex" in r.stderr
    assert b"Exit status" in sluice("--help").stdout


def test_a_writer_holding_the_lock_is_named_and_readers_still_work(sluice, tmp):
    db = tmp / "db"
    sluice("put", "--db", db, "k", "v")
    with open(db / "LOCK", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        r = sluice("put", "--db", db, "k2", "v", check=False)
        assert r.returncode == 2 and b"open for writing by another process" in r.stderr, r.stderr
        assert b"locked by another process" in r.stderr, r.stderr
        assert sluice("get", "--db", db, "k").stdout == b"v\n"
        assert sluice("verify", "--db", db).returncode == 0


def test_keys_and_values_starting_with_a_hyphen_are_taken_as_given(sluice, tmp):
    db = tmp / "db"
    sluice("put", "--db", db, "-k", "-v")
    sluice("put", "--db", db, "-m", "-1")
    assert sluice("get", "--db", db, "-k").stdout == b"-v\n"
    assert sluice("get", "--db", db, "--raw", "-m").stdout == b"-1"
    assert sluice("scan", "--db", db, "--start", "-a", "--end", "-l").stdout == b"-k\t-v\n"
    assert sluice("scan", "--db", db, "--prefix", "-m").stdout == b"-m\t-1\n"
    assert sluice("approx-size", "--db", db, "--start", "-a", "--end", "-z").returncode == 0
    sluice("compact", "--db", db, "--start", "-a", "--end", "-z")
    sluice("delete-range", "--db", db, "--start", "-a", "--end", "-l")
    assert sluice("get", "--db", db, "-k", check=False).returncode == 1
    sluice("delete", "--db", db, "-m")
    assert sluice("scan", "--db", db, "--count").stdout.strip() == b"0"


def test_ingest_errors_name_the_flags(sluice, tmp):
    a, b = tmp / "a.sst", tmp / "b.sst"
    sluice("sst", "build", "--out", a, "--text", input=b"k1\tv\nk3\tv\n")
    sluice("sst", "build", "--out", b, "--text", input=b"k2\tv\n")
    r = sluice("ingest", "--db", tmp / "db", a, b, check=False)
    assert r.returncode == 2 and b"--allow-overlap" in r.stderr and b"allow_overlap" not in r.stderr


# ---------------------------------------------------------------- bulk and binary-safe I/O

def test_load_tsv_and_jsonl_then_scan_count_json_and_raw_get(sluice, tmp):
    db = tmp / "db"
    lines = "".join(f"key{i:05}\tvalue {i}\n" for i in range(3000)).encode()
    r = sluice("load", "--db", db, "--batch-bytes", "4096", input=lines)
    assert b"loaded 3000 puts" in r.stderr
    assert sluice("scan", "--db", db, "--count").stdout == b"3000\n"
    assert sluice("scan", "--db", db, "--count", "--prefix", "key001").stdout == b"100\n"
    assert json.loads(sluice("scan", "--db", db, "--count", "--json").stdout) == {"count": 3000}
    jl = (
        '{"key":"café","value":"naïve"}\n'
        '{"key_hex":"00ff","value_hex":"0102"}\n'
        '{"key":"key00000"}\n'
    ).encode()
    sluice("load", "--db", db, "--format", "jsonl", input=jl)
    assert sluice("get", "--db", db, "café").stdout == "naïve\n".encode()
    assert sluice("get", "--db", db, "key00000", check=False).returncode == 1
    assert sluice("get", "--db", db, "--key-hex", "0x00ff", "--raw").stdout == b"\x01\x02"
    assert sluice("get", "--db", db, "--key-hex", "00ff").stdout == b"\\x01\\x02\n"
    assert sluice("get", "--db", db, "--key-hex", "00ff", "--value-hex").stdout == b"0102\n"
    got = json.loads(sluice("get", "--db", db, "--key-hex", "00ff", "--json").stdout)
    assert got == {"key_hex": "00ff", "value": "\x01\x02"}  # control bytes are valid UTF-8
    got = json.loads(sluice("get", "--db", db, "--key-hex", "00ff", "--json", "--value-hex").stdout)
    assert got == {"key_hex": "00ff", "value_hex": "0102"}
    rows = [json.loads(l) for l in sluice("scan", "--db", db, "--json", "--limit", "2").stdout.splitlines()]
    assert rows == [{"key_hex": "00ff", "value": "\x01\x02"}, {"key": "café", "value": "naïve"}]
    # A bad line stops the load, naming it; the batches before it stay.
    r = sluice("load", "--db", db, "--format", "jsonl", input=b'{"key":"zz1","value":"v"}\n{"key":\n', check=False)
    assert r.returncode == 2 and b"<stdin>:2: not JSON" in r.stderr


def test_scan_load_round_trips_any_bytes(sluice, tmp):
    src, dst = tmp / "src", tmp / "dst"
    keys = [b"tab\there", b"nl\nhere", b"back\\slash", b"\xff\xfe raw", "ünï".encode(), b"\x00\x01", b"quote\"'"]
    for k in keys:
        sluice("put", "--db", src, "--hex", k.hex(), (k + b"!").hex())
    text = sluice("scan", "--db", src).stdout
    assert "ünï\tünï!\n".encode() in text and b"tab\\there\ttab\\there!\n" in text
    sluice("load", "--db", dst, input=text)
    assert sluice("scan", "--db", dst, "--hex").stdout == sluice("scan", "--db", src, "--hex").stdout


def test_delete_range_and_approx_size(sluice, tmp):
    db = tmp / "db"
    sluice("load", "--db", db, input="".join(f"k{i:05}\t{'v' * 100}\n" for i in range(5000)).encode())
    sluice("compact", "--db", db)
    total = int(sluice("approx-size", "--db", db).stdout)
    part = int(sluice("approx-size", "--db", db, "--start", "k01000", "--end", "k02000").stdout)
    assert total > 5000 * 100 // 2 and total / 10 < part < total / 3, (total, part)
    sluice("delete-range", "--db", db, "--start", "k00010", "--end", "k04990")
    assert sluice("scan", "--db", db, "--count").stdout == b"20\n"
    r = sluice("delete-range", "--db", db, "--start", "b", "--end", "a", check=False)
    assert r.returncode == 2 and b"--start below --end" in r.stderr


# ---------------------------------------------------------------- operator commands

def test_flush_compact_checkpoint(sluice, tmp):
    db = tmp / "db"
    pairs = random_pairs(seed=3, n=800)
    sluice("load", "--db", db, "--hex", input=to_lines(pairs))
    sluice("flush", "--db", db)
    out = sluice("compact", "--db", db).stdout.decode()
    assert out.startswith("before:") and "after:  L6" in out, out
    sluice("put", "--db", db, "extra", "1")
    cp = tmp / "cp"
    out = sluice("checkpoint", "--db", db, cp).stdout.decode()
    assert "checkpoint" in out and "tables" in out
    sluice("put", "--db", db, "later", "2")
    # The checkpoint opens on its own and holds exactly the data at the checkpoint.
    expected = to_lines(sorted(pairs + [(b"extra", b"1")]))
    assert sluice("scan", "--db", cp, "--hex").stdout == expected
    assert sluice("verify", "--db", cp).returncode == 0
    # Its tables are hard links of the Db's.
    linked = [p for p in sst_files(cp) if (db / p.name).exists() and os.path.samefile(p, db / p.name)]
    assert linked, "no table was hard-linked"
    r = sluice("checkpoint", "--db", db, cp, check=False)
    assert r.returncode == 2 and b"already exists" in r.stderr


def test_verify_names_the_damaged_file(sluice, tmp):
    db = tmp / "db"
    sluice("load", "--db", db, input="".join(f"k{i:05}\tv{i}\n" for i in range(2000)).encode())
    sluice("flush", "--db", db)
    assert sluice("verify", "--db", db).stdout.startswith(b"OK: 1 tables, 2000 entries")
    [sst] = sst_files(db)
    data = bytearray(sst.read_bytes())
    data[100] ^= 0x01
    sst.write_bytes(bytes(data))
    r = sluice("verify", "--db", db, check=False)
    err = r.stderr.decode()
    assert r.returncode == 2 and f"corruption in {sst} at offset 0" in err, err
    with open(sst, "ab") as f:
        f.write(b"junk")
    r = sluice("verify", "--db", db, check=False)
    assert r.returncode == 2 and "the MANIFEST says" in r.stderr.decode()


# ---------------------------------------------------------------- SST tools and JSON

def test_sst_text_round_trips_tabs_and_utf8_and_props_show_the_key_range(sluice, tmp):
    src = tmp / "src.sst"
    keys = sorted([b"a\tb", b"back\\slash", "caf\u00e9".encode(), b"nl\n", b"\xfe\xff"])
    sluice("sst", "build", "--out", src, input=b"".join(k.hex().encode() + b"\t" + k.hex().encode() + b"\n" for k in keys))
    text = sluice("sst", "dump", src, "--text").stdout
    assert "café\tcafé\n".encode() in text and b"a\\tb\ta\\tb\n" in text
    copy = tmp / "copy.sst"
    sluice("sst", "build", "--out", copy, "--text", input=text)
    assert sluice("sst", "dump", copy).stdout == sluice("sst", "dump", src).stdout
    props = json.loads(sluice("sst", "props", src, "--json").stdout)
    assert props["smallest_key"] == "a\tb" and props["largest_key_hex"] == "feff"
    assert b"smallest key: a\\tb" in sluice("sst", "props", src).stdout
    r = sluice("sst", "build", "--out", tmp / "bad.sst", "--text", input=b"a\\q\tv\n", check=False)
    assert r.returncode == 2 and b"<stdin>:1: key is unknown escape" in r.stderr


def test_json_outputs_are_valid(sluice, tmp):
    db = tmp / "db"
    sluice("load", "--db", db, "--format", "jsonl", input='{"key_hex":"ff00","value":""}\n{"key":"café","value":"x"}\n'.encode())
    sluice("flush", "--db", db)
    m = json.loads(sluice("manifest", "dump", "--db", db, "--json").stdout)
    assert m["edits"] and {f["level"] for f in m["files"]} == {0}
    f = m["files"][0]
    assert f["smallest"] == "café" and f["largest_hex"] == "ff00"
    s = json.loads(sluice("stats", "--db", db, "--json").stdout)
    assert s["levels"][0]["files"] == 1 and s["levels"][0]["entries"] == 2
    assert b"entries" in sluice("stats", "--db", db).stdout
    assert sluice("lsm", "--db", db, "--width", "99999999999").returncode == 0  # clamped, no abort


def test_manifest_keeps_history_and_stats_count_every_process(sluice, tmp):
    db = tmp / "db"
    for i in range(3):
        sluice("load", "--db", db, input="".join(f"k{i}-{j:04}\t{'v' * 50}\n" for j in range(500)).encode())
    sluice("flush", "--db", db)
    sluice("compact", "--db", db)
    m = json.loads(sluice("manifest", "dump", "--db", db, "--json").stdout)
    # One MANIFEST across the six writer processes: every open's edit is still there.
    assert len(m["edits"]) >= 6, m["edits"]
    s = json.loads(sluice("stats", "--db", db, "--json").stdout)
    h = s["manifest_history"]
    assert h["flushes"] >= 3 and h["compactions"] >= 1 and h["write_amplification"] > 1.0, h
    assert s["flushes"] == 0  # this (read-only) process's own counter
    assert b"from the MANIFEST" in sluice("stats", "--db", db).stdout


def test_sst_layout_covers_the_file_block_by_block(sluice, tmp):
    sst = tmp / "a.sst"
    sluice("sst", "build", "--out", sst, "--text", "--compression", "lz4",
           input="".join(f"k{i:04}\tvalue{i}\n" for i in range(500)).encode())
    rows = [json.loads(l) for l in sluice("sst", "layout", sst, "--json").stdout.splitlines()]
    at = 0
    for r in rows:
        assert r["offset"] == at, rows
        at += r["size"]
    assert at == sst.stat().st_size
    data = [r for r in rows if r["block"].startswith("data")]
    assert sum(r["entries"] for r in data) == 500
    assert data[0]["first_key"] == "k0000" and data[-1]["last_key"] == "k0499"
    props = json.loads(sluice("sst", "props", sst, "--json").stdout)
    assert len(data) == props["properties"]["rocksdb.num.data.blocks"]
    assert rows[-1]["block"] == "footer"


def test_a_missing_manifest_or_wal_is_named(sluice, tmp):
    db = tmp / "db"
    sluice("put", "--db", db, "k", "v")
    (db / "CURRENT").write_text("MANIFEST-000999\n")
    r = sluice("manifest", "dump", "--db", db, check=False)
    assert r.returncode == 2 and b"MANIFEST-000999" in r.stderr, r.stderr
    r = sluice("wal", "dump", tmp / "nope.log", check=False)
    assert r.returncode == 2 and b"nope.log" in r.stderr, r.stderr


def test_raw_scan_flags_are_refused_with_table(sluice, tmp):
    db = tmp / "db"
    sluice("put", "--db", db, "k", "v")
    # (--count works with --table: it counts the table's rows, see test_import_cli.py.)
    for flag in ("--json", "--prefix=a"):
        r = sluice("scan", "--db", db, "--table", "t", flag, check=False)
        assert r.returncode == 2 and b"cannot be used with" in r.stderr, flag
