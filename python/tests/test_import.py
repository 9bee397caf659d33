"""import_files and typed table reads, the import's exceptions, and threads."""

import datetime as dt
import threading
from decimal import Decimal

import pytest

import sluice
from conftest import EXAMPLES

SCHEMA = (EXAMPLES / "penguins.sql").read_text()
CSV = EXAMPLES / "penguins.csv"


def test_penguins_typed_get(db):
    report = db.import_files(SCHEMA, [CSV], header=True, null="NA", progress="off")
    assert report.rows == 344 and report.rejected == 0 and report.duplicates_dropped == 0
    assert report.table == "penguins" and report.created
    assert set(report.phases) == {"parse_sort", "merge", "ingest", "total"}
    assert {f["index"] for f in report.files} == {"primary", "by_species_island", "catalog"}
    assert report.to_dict()["rows"] == 344
    assert db.tables() == ["penguins"]
    t = db.table("penguins")
    assert t.primary_key == ["id"]
    row = t.get(1)
    assert row == {
        "id": 1,
        "species": "Adelie",
        "island": "Torgersen",
        "bill_length_mm": Decimal("39.1"),
        "bill_depth_mm": Decimal("18.7"),
        "flipper_length_mm": 181,
        "body_mass_g": 3750,
        "sex": "male",
        "year": 2007,
    }
    assert t.get(4)["bill_length_mm"] is None and t.get(4)["sex"] is None
    assert t.get(100000) is None
    with pytest.raises(sluice.InvalidArgumentError):
        db.table("nope")


def test_every_type(db, tmp_path):
    schema = """CREATE TABLE t (id BIGINT PRIMARY KEY, f DOUBLE, d DECIMAL(10,3), b BOOLEAN,
        s TEXT, y BYTES, day DATE, ts TIMESTAMP);"""
    (tmp_path / "t.csv").write_text(
        "1,1.5,-12.345,true,héllo,\\x00ff,2024-02-29,2024-02-29 12:34:56.789\n2,,,,,,,\n"
    )
    db.import_files(schema, [tmp_path / "t.csv"], progress="off")
    assert db.table("t").get(1) == {
        "id": 1,
        "f": 1.5,
        "d": Decimal("-12.345"),
        "b": True,
        "s": "héllo",
        "y": b"\x00\xff",
        "day": dt.date(2024, 2, 29),
        "ts": dt.datetime(2024, 2, 29, 12, 34, 56, 789000, tzinfo=dt.timezone.utc),
    }
    row = db.table("t").get(2)
    assert row["id"] == 2 and all(row[c] is None for c in ("f", "d", "b", "y", "day", "ts"))


def test_get_by_typed_composite_key(db, tmp_path):
    schema = """CREATE TABLE ev (day DATE, at TIMESTAMP, amount DECIMAL(8,2), flag BOOLEAN,
        name TEXT, PRIMARY KEY (day, at, amount, flag));"""
    (tmp_path / "ev.csv").write_text("2024-01-02,2024-01-02 03:04:05.5,10.25,false,x\n")
    db.import_files(schema, [tmp_path / "ev.csv"], progress="off")
    at = dt.datetime(2024, 1, 2, 3, 4, 5, 500000, tzinfo=dt.timezone.utc)
    t = db.table("ev")
    row = t.get(dt.date(2024, 1, 2), at, Decimal("10.25"), False)
    assert row is not None and row["name"] == "x" and row["at"] == at
    cet = dt.timezone(dt.timedelta(hours=1))
    assert t.get(dt.date(2024, 1, 2), at.astimezone(cet), Decimal("10.25"), False) == row
    assert t.get(dt.date(2024, 1, 2), at, Decimal("10.26"), False) is None
    with pytest.raises(sluice.InvalidArgumentError):
        t.get(dt.date(2024, 1, 2))  # one value for a four-column key


def test_bad_row_names_file_line_column(db, tmp_path):
    f = tmp_path / "bad.csv"
    f.write_text("id,n\n1,2\n2,x\n")
    with pytest.raises(sluice.BadRowError) as e:
        db.import_files("CREATE TABLE t (id INT PRIMARY KEY, n INT);", [f], header=True)
    err = e.value
    assert isinstance(err, sluice.DataError) and isinstance(err, sluice.Error)
    assert err.file.endswith("bad.csv") and err.line == 3
    assert err.column == "n" and err.value == "x"
    assert db.tables() == []  # nothing imported


def test_duplicate_key_and_too_many(db, tmp_path):
    f = tmp_path / "dup.csv"
    f.write_text("1,a\n2,b\n1,c\n")
    schema = "CREATE TABLE t (id INT PRIMARY KEY, s TEXT);"
    with pytest.raises(sluice.DuplicateKeyError) as e:
        db.import_files(schema, [f])
    assert e.value.line in (1, 3) and "(1)" in e.value.key
    report = db.import_files(schema, [f], on_duplicate="last")
    assert report.rows == 2 and report.duplicates_dropped == 1
    assert db.table("t").get(1)["s"] == "c"
    g = tmp_path / "bad.csv"
    g.write_text("3,a\nx,b\ny,c\n")
    with pytest.raises(sluice.TooManyErrorsError) as e:
        db.import_files(schema, [g], max_errors=1)
    assert e.value.count == 2 and isinstance(e.value.last, sluice.BadRowError)
    assert isinstance(e.value.__cause__, sluice.BadRowError)


def test_unique_violation(db, tmp_path):
    f = tmp_path / "u.csv"
    f.write_text("1,a@x\n2,a@x\n")
    schema = (
        "CREATE TABLE t (id INT PRIMARY KEY, email TEXT);"
        "CREATE UNIQUE INDEX by_email ON t (email);"
    )
    with pytest.raises(sluice.UniqueViolationError) as e:
        db.import_files(schema, [f])
    assert e.value.index == "by_email" and isinstance(e.value, sluice.DataError)


def test_paced_import_reads_back_the_same_rows(db, tmp_path):
    report = db.import_files(
        SCHEMA, [CSV], header=True, null="NA", progress="off", write_rate="1MiB"
    )
    assert report.rows == 344
    t = db.table("penguins")
    assert t.get(1)["bill_length_mm"] == Decimal("39.1")
    assert t.to_arrow().num_rows == 344
    f = tmp_path / "t.csv"
    f.write_text("1\n")
    with pytest.raises(sluice.InvalidArgumentError, match="write_rate"):
        db.import_files("CREATE TABLE t (id INT PRIMARY KEY);", [f], write_rate=0)


def test_schema_error_line_column(db, tmp_path):
    f = tmp_path / "t.csv"
    f.write_text("1\n")
    with pytest.raises(sluice.SchemaError) as e:
        db.import_files("CREATE TABLE t (\n  id INT PRIMARY KEY,\n  x FROBNICATE\n);", [f])
    assert e.value.line == 3 and e.value.column is not None
    with pytest.raises(sluice.InvalidArgumentError) as e:
        db.import_files("CREATE TABLE t (id INT PRIMARY KEY);", [f], threads=0)
    assert e.value.option == "threads"
    with pytest.raises(sluice.InvalidArgumentError):
        db.import_files("CREATE TABLE t (id INT PRIMARY KEY);", [f], format="xml")
    with pytest.raises(TypeError):
        db.import_files("CREATE TABLE t (id INT PRIMARY KEY);", [f], bogus=1)


def test_threads_while_import_runs(db):
    stop = threading.Event()
    errors = []
    done = [0] * 8  # rounds per thread, to see them run while the import holds no GIL

    def worker(n):
        try:
            i = 0
            while not stop.is_set() or i < 200:
                key = b"w%d-%06d" % (n, i)
                db.put(key, b"%d" % i)
                assert db.get(key) == b"%d" % i
                if i % 50 == 0:
                    got = list(db.scan(b"w%d-" % n, b"w%d." % n))
                    assert len(got) == i + 1
                    assert got[-1] == (key, b"%d" % i)
                i += 1
                done[n] = i
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    report = {}

    def do_import():
        before = sum(done)
        report["r"] = db.import_files(SCHEMA, [CSV], header=True, null="NA", progress="off")
        report["ops_during"] = sum(done) - before

    imp = threading.Thread(target=do_import)
    imp.start()
    imp.join()
    stop.set()
    for t in threads:
        t.join()
    assert not errors, errors
    assert report["r"].rows == 344
    assert report["ops_during"] > 0
    assert db.table("penguins").get(344)["species"] == "Chinstrap"
    for n in range(8):
        assert db.get(b"w%d-%06d" % (n, 0)) == b"0"


def test_resume_continues_an_interrupted_import(db, tmp_path):
    schema = "CREATE TABLE t (id INT PRIMARY KEY, v TEXT); CREATE INDEX by_v ON t (v);"
    csv = tmp_path / "t.csv"
    csv.write_text("".join(f"{(i * 7919) % 3000},v{i % 17}\n" for i in range(3000)))
    opts = dict(progress="off", chunk_size=1024, checkpoint_bytes=4096, tmp_dir=tmp_path / "tmp")
    # As if killed after its third checkpoint: the Db is unchanged, the checkpoint kept.
    with pytest.raises(sluice.InternalError):
        db.import_files(schema, [csv], _interrupt_after_checkpoints=3, **opts)
    assert db.tables() == []
    # Another input is refused with the reason; the checkpoint stays.
    other = tmp_path / "o.csv"
    other.write_text("1,a\n")
    with pytest.raises(sluice.CannotResumeError) as e:
        db.import_files(schema, [other], resume=True, **opts)
    assert "other input files" in e.value.reason and e.value.dir
    report = db.import_files(schema, [csv], resume=True, **opts)
    assert report.resumed and report.rows == 3000
    assert db.table("t").get(7919 % 3000) == {"id": 7919 % 3000, "v": "v1"}
    assert not list((tmp_path / "tmp").iterdir())
