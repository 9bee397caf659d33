"""Arrow in and out: import_arrow from pyarrow, pandas, polars and DuckDB; Parquet written by
pyarrow and by DuckDB; table scans as Arrow streams read by pyarrow, polars and DuckDB; every
SQL type round trips; bad input names batch, row and column and leaves the Db unchanged."""

import datetime as dt
import threading
from decimal import Decimal

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sluice

SCHEMA = """CREATE TABLE t (id BIGINT PRIMARY KEY, s SMALLINT, i INT, f DOUBLE,
    d DECIMAL(38,10), b BOOLEAN, txt TEXT, bin BYTES, day DATE, ts TIMESTAMP);
    CREATE INDEX by_txt ON t (txt);"""

UTC = dt.timezone.utc


def every_type_table(n=1000):
    """n rows of every SQL type, with NULLs, unicode, binary, extreme decimals and dates."""
    rows = []
    for k in range(n):
        null = k % 7 == 3
        rows.append(
            {
                "id": (k * 7919) % n - n // 2,
                "s": None if null else (k % 65536) - 32768,
                "i": None if null else -(2**31) + k,
                "f": None if null else [0.1, -2.5e300, float("inf"), 5e-324][k % 4] * (k + 1),
                "d": None if null else Decimal(f"{(-1) ** k * (10**38 - 1 - k)}e-10"),
                "b": None if null else k % 2 == 0,
                "txt": None if null else f"ünï{k} \"q\",\n\t😀",
                "bin": None if null else bytes([k % 256, 0, 255]),
                "day": None if null else dt.date(1, 1, 1) + dt.timedelta(days=k * 997 % 3_000_000),
                "ts": None
                if null
                else dt.datetime(1970, 1, 1, tzinfo=UTC) + dt.timedelta(microseconds=k * 123456789),
            }
        )
    schema = pa.schema(
        [
            ("id", pa.int64()),
            ("s", pa.int16()),
            ("i", pa.int32()),
            ("f", pa.float64()),
            ("d", pa.decimal128(38, 10)),
            ("b", pa.bool_()),
            ("txt", pa.string()),
            ("bin", pa.binary()),
            ("day", pa.date32()),
            ("ts", pa.timestamp("us", tz="UTC")),
        ]
    )
    return pa.Table.from_pylist(rows, schema=schema)


def sorted_rows(table):
    return sorted(table.to_pylist(), key=lambda r: r["id"])


def test_every_type_round_trips_through_arrow(db):
    src = every_type_table()
    report = db.import_arrow(SCHEMA, src.to_batches(max_chunksize=97))
    assert report.rows == 1000 and report.rejected == 0
    back = db.table("t").to_arrow()
    assert back.schema.field("id").type == pa.int64() and not back.schema.field("id").nullable
    assert back.schema.field("d").type == pa.decimal128(38, 10)
    assert back.schema.field("ts").type == pa.timestamp("us", tz="UTC")
    assert back.schema.field("day").type == pa.date32()
    assert sorted_rows(back) == sorted_rows(src)
    # Column projection and a key range, through the index too.
    part = pa.table(db.table("t").scan(start=[-10], end=[10], columns=["id", "txt"]))
    assert part.column_names == ["id", "txt"]
    assert part.column("id").to_pylist() == list(range(-10, 10))
    by_txt = pa.table(db.table("t").scan(index="by_txt", columns=["txt"]))
    texts = by_txt.column("txt").to_pylist()
    assert texts[0] is None and len(texts) == 1000
    non_null = [t for t in texts if t is not None]
    assert [t.encode() for t in non_null] == sorted(t.encode() for t in non_null)


def test_pandas_polars_duckdb_in_and_out(db, tmp_path):
    src = every_type_table(300)
    # pandas in (through pyarrow), polars in, DuckDB relation in: one table each.
    schema = SCHEMA.replace("TABLE t", "TABLE {name}").replace("INDEX by_txt ON t", "INDEX {name}_txt ON {name}")
    db.import_arrow(schema.format(name="from_pandas"), src.to_pandas())
    db.import_arrow(schema.format(name="from_polars"), pl.from_arrow(src))
    assert isinstance(pl.from_arrow(src), pl.DataFrame)
    con = duckdb.connect()
    con.register("src", src)
    db.import_arrow(schema.format(name="from_duckdb"), con.sql("SELECT * FROM src"))
    want = sorted_rows(src)
    for name in ["from_pandas", "from_polars", "from_duckdb"]:
        got = sorted_rows(db.table(name).to_arrow())
        assert got == want, name
    # Out: polars and DuckDB take the stream directly; pandas through to_pandas.
    df = pl.DataFrame(db.table("from_polars").scan())
    assert df.height == 300 and df["id"].sort().to_list() == sorted(r["id"] for r in want)
    stream = db.table("from_duckdb").scan(columns=["id", "d"])
    total = duckdb.sql("SELECT count(*), min(d), max(d), sum(id) FROM stream").fetchall()[0]
    ds = [r["d"] for r in want if r["d"] is not None]
    assert total == (300, min(ds), max(ds), sum(r["id"] for r in want))
    batches = list(db.table("from_pandas").scan(batch_rows=64))
    assert [b.num_rows for b in batches] == [64, 64, 64, 64, 44]
    pdf = db.table("from_pandas").to_pandas()
    assert list(pdf.columns) == src.column_names and len(pdf) == 300


def test_table_from_the_data_columns(db):
    data = pa.table({"k": pa.array([3, 1, 2], pa.int32()), "v": ["c", "a", "b"]})
    report = db.import_arrow(None, data, table="kv", primary_key=["k"])
    assert report.created and report.rows == 3
    assert db.table("kv").get(1) == {"k": 1, "v": "a"}
    assert db.table("kv").info["columns"][0]["not_null"]
    with pytest.raises(sluice.InvalidArgumentError, match="no such column"):
        db.import_arrow(None, data, table="kv2", primary_key=["nope"])


def test_parquet_from_pyarrow_and_duckdb(db, tmp_path):
    src = every_type_table(2000)
    pq.write_table(src, tmp_path / "a.parquet", row_group_size=300, compression="zstd")
    report = db.import_files(SCHEMA, [tmp_path / "a.parquet"], progress="off")
    assert report.rows == 2000
    assert sorted_rows(db.table("t").to_arrow()) == sorted_rows(src)
    # DuckDB's own Parquet writer, and a table taken from the file's schema.
    con = duckdb.connect()
    con.register("src", src)
    con.sql(f"COPY (SELECT * FROM src) TO '{tmp_path / 'b.parquet'}' (FORMAT parquet)")
    report = db.import_files(None, [tmp_path / "b.parquet"], primary_key=["id"], progress="off")
    assert report.table == "b" and report.rows == 2000
    got = sorted_rows(db.table("b").to_arrow())
    assert got == sorted_rows(src)


def test_bad_values_name_batch_row_column_and_leave_the_db(db, tmp_path):
    db.import_arrow(SCHEMA, every_type_table(50))
    before = list(db.scan())
    good = pa.record_batch(
        {"id": pa.array([1000, 1001], pa.int64()), "i": pa.array([None, 7], pa.int64())}
    )
    bad = pa.record_batch(
        {"id": pa.array([1002, 1003, 1004], pa.int64()), "i": pa.array([1, 2, 2**40], pa.int64())}
    )
    with pytest.raises(sluice.BadRowError) as e:
        db.import_arrow(SCHEMA, pa.Table.from_batches([good, bad]), name="frames")
    assert e.value.column == "i"
    assert e.value.file == "frames" and e.value.line == 5
    assert "(batch 1, row 2)" in str(e.value) and "out of range for INT" in str(e.value)
    assert list(db.scan()) == before
    # A key another row of the Db holds.
    with pytest.raises(sluice.DuplicateKeyError):
        db.import_arrow(SCHEMA, pa.table({"id": pa.array([0], pa.int64())}))
    assert list(db.scan()) == before
    # Types that cannot be stored, and a missing NOT NULL column.
    with pytest.raises(sluice.InvalidArgumentError, match="column txt: Arrow type List"):
        db.import_arrow(SCHEMA, pa.table({"id": [5000], "txt": [[1, 2]]}))
    with pytest.raises(sluice.InvalidArgumentError, match="no column id"):
        db.import_arrow(SCHEMA, pa.table({"txt": ["x"]}))
    with pytest.raises(TypeError, match="not Arrow data"):
        db.import_arrow(SCHEMA, [{"id": 1}])
    assert list(db.scan()) == before
    assert not any(p.name.startswith("sluice-import") for p in (tmp_path / "db").iterdir())


def test_scan_while_writers_and_an_import_run(db):
    """A scan stream is read at one snapshot, without the GIL, beside threads that write."""
    db.import_arrow(SCHEMA, every_type_table(5000))
    stream = db.table("t").scan(batch_rows=100)
    errors = []

    def writer(n):
        try:
            for k in range(300):
                db.put(b"w%d-%d" % (n, k), b"v")
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    other = pa.table({"id": pa.array(range(10**6, 10**6 + 20000), pa.int64())})
    db.import_arrow(SCHEMA.replace("TABLE t", "TABLE u").replace("ON t", "ON u").replace("by_txt", "u_txt"), other)
    got = pa.table(stream)
    for t in threads:
        t.join()
    assert not errors
    assert got.num_rows == 5000 and len(got.to_batches()) >= 50
    assert db.table("u").to_arrow().num_rows == 20000


def test_scan_of_a_closed_db_and_an_unknown_column(tmp_path):
    with sluice.open(tmp_path / "db") as db:
        db.import_arrow(SCHEMA, every_type_table(10))
        with pytest.raises(sluice.InvalidArgumentError, match="no column nope"):
            db.table("t").scan(columns=["nope"])
        t = db.table("t")
    with pytest.raises(sluice.ClosedError):
        t.scan()


@pytest.mark.parametrize("layout", ["columnar", "cells"])
def test_every_type_round_trips_through_the_column_layouts(db, layout):
    src = every_type_table()
    report = db.import_arrow(SCHEMA, src.to_batches(max_chunksize=97), layout=layout)
    assert report.rows == 1000
    assert sorted_rows(db.table("t").to_arrow()) == sorted_rows(src)
    # Chosen columns, in key order and in any order: the same rows.
    want = [(r["id"], r["txt"]) for r in sorted_rows(src)]
    ordered = pa.table(db.table("t").scan(columns=["txt", "id"]))
    assert ordered.column_names == ["txt", "id"]
    assert list(zip(ordered.column("id").to_pylist(), ordered.column("txt").to_pylist())) == want
    anyorder = pa.table(db.table("t").scan(columns=["id", "txt"], ordered=False))
    assert sorted(zip(anyorder.column("id").to_pylist(), anyorder.column("txt").to_pylist())) == want
    assert db.table("t").get(want[5][0])["txt"] == want[5][1]


@pytest.mark.parametrize("layout", ["row", "columnar", "cells"])
def test_delete_a_row_in_every_layout(db, layout):
    src = every_type_table(200)
    db.import_arrow(SCHEMA, src.to_batches(), layout=layout)
    t = db.table("t")
    victim = sorted_rows(src)[7]
    assert t.delete(victim["id"]) is True
    assert t.get(victim["id"]) is None
    assert t.delete(victim["id"]) is False
    left = [r for r in sorted_rows(src) if r["id"] != victim["id"]]
    assert sorted_rows(t.to_arrow()) == left
    # Neither the index nor a scan in any order sees it.
    by_txt = pa.table(t.scan(index="by_txt", columns=["id"])).column("id").to_pylist()
    assert sorted(by_txt) == [r["id"] for r in left]
    anyorder = pa.table(t.scan(columns=["id"], ordered=False)).column("id").to_pylist()
    assert sorted(anyorder) == [r["id"] for r in left]


def test_rewrite_groups_gives_back_dead_rows_and_keeps_the_rest(db):
    src = every_type_table(3000)
    db.import_arrow(SCHEMA, src.to_batches(), layout="columnar")
    t = db.table("t")
    rows = sorted_rows(src)
    gone = {r["id"] for r in rows[::3]} | {r["id"] for r in rows[1::3]}
    for pk in gone:
        assert t.delete(pk) is True
    left = [r for r in rows if r["id"] not in gone]
    done = t.rewrite_groups(min_dead=0.5)
    assert done["groups_rewritten"] == 1 and done["groups_written"] == 1
    assert done["rows_moved"] == len(left) and done["rows_dropped"] == len(gone)
    assert done["bytes_after"] < done["bytes_before"]
    assert sorted_rows(t.to_arrow()) == left
    assert t.get(left[5]["id"]) == left[5]
    anyorder = pa.table(t.scan(columns=["id"], ordered=False)).column("id").to_pylist()
    assert sorted(anyorder) == [r["id"] for r in left]
    by_txt = pa.table(t.scan(index="by_txt", columns=["id"])).column("id").to_pylist()
    assert sorted(by_txt) == [r["id"] for r in left]
    # Nothing is left to rewrite, and a share outside (0, 1] is refused.
    assert t.rewrite_groups(min_dead=0.5)["groups_rewritten"] == 0
    with pytest.raises(sluice.InvalidArgumentError, match=r"\(0, 1\]"):
        t.rewrite_groups(min_dead=0)


def test_a_replacing_import_rewrites_dead_groups_itself(db):
    src = every_type_table(3000)
    first = db.import_arrow(SCHEMA, src.to_batches(), layout="columnar")
    assert first.rewrite is None and first.rewrite_error is None
    # The same rows again with on_duplicate="last": the first import's group is all dead.
    off = db.import_arrow(SCHEMA, src.to_batches(), layout="columnar", on_duplicate="last",
                          rewrite_dead=None)
    assert off.rewrite is None
    again = db.import_arrow(SCHEMA, src.to_batches(), layout="columnar", on_duplicate="last")
    assert again.rewrite is not None and again.rewrite_error is None
    assert again.rewrite["groups_rewritten"] == 2 and again.rewrite["rows_dropped"] == 6000
    assert again.rewrite["rows_moved"] == 0 and again.to_dict()["rewrite"] == again.rewrite
    assert sorted_rows(db.table("t").to_arrow()) == sorted_rows(src)
    with pytest.raises(sluice.InvalidArgumentError, match="rewrite_dead"):
        db.import_arrow(SCHEMA, src.to_batches(), layout="columnar", on_duplicate="last",
                        rewrite_dead=2.0)
