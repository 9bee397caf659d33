"""`sluice import`, `sluice tables` and the table forms of `scan` and `get`."""
import gzip
import json

import pytest

from conftest import ROOT

PENGUINS = ROOT / "examples" / "penguins.csv"
SCHEMA = ROOT / "examples" / "penguins.sql"


def import_penguins(sluice, db, *extra, check=True):
    return sluice("import", "--db", db, "--schema", SCHEMA, "--header", "--null", "NA", *extra, PENGUINS,
                  check=check)


def test_penguins_import_scan_get(sluice, tmp):
    db = tmp / "db"
    summary = json.loads(import_penguins(sluice, db, "--json").stdout)
    assert summary["rows"] == 344 and summary["table"] == "penguins" and summary["created"]
    assert {f["index"] for f in summary["files"]} == {"primary", "by_species_island", "catalog"}
    assert all(f["level"] == 6 for f in summary["files"])  # empty Db: the bottom level

    tables = sluice("tables", "--db", db).stdout.decode()
    assert "penguins (id 1)" in tables and "index by_species_island (species, island)" in tables

    out = sluice("scan", "--db", db, "--table", "penguins", "--limit", "2").stdout.decode()
    assert out == (
        "id,species,island,bill_length_mm,bill_depth_mm,flipper_length_mm,body_mass_g,sex,year\n"
        "1,Adelie,Torgersen,39.1,18.7,181,3750,male,2007\n"
        "2,Adelie,Torgersen,39.5,17.4,186,3800,female,2007\n"
    )
    # Row 4 is all NA: NULLs in JSON; DECIMAL prints as a number with its scale.
    row = json.loads(sluice("get", "--db", db, "--table", "penguins", "--pk", "4").stdout)
    assert row == {"id": 4, "species": "Adelie", "island": "Torgersen", "bill_length_mm": None,
                   "bill_depth_mm": None, "flipper_length_mm": None, "body_mass_g": None,
                   "sex": None, "year": 2007}
    raw = sluice("get", "--db", db, "--pk", "3").stdout.decode()
    assert '"bill_depth_mm":18.0' in raw
    assert sluice("get", "--db", db, "--pk", "999", check=False).returncode == 1

    # Index scan: (species, island) order, a prefix bound on the first column.
    lines = sluice("scan", "--db", db, "--table", "penguins", "--index", "by_species_island",
                   "--start", "Chinstrap", "--end", "Gentoo", "--format", "json").stdout.decode().splitlines()
    rows = [json.loads(l) for l in lines]
    assert len(rows) == 68 and all(r["species"] == "Chinstrap" for r in rows)
    gentoo_biscoe = sluice("scan", "--db", db, "--table", "penguins", "--index", "by_species_island",
                           "--start", "Gentoo,Biscoe", "--limit", "1").stdout.decode().splitlines()
    assert gentoo_biscoe[1].startswith("153,Gentoo,Biscoe")

    # The raw key-value commands still work on the same Db.
    assert sluice("scan", "--db", db, "--limit", "1", "--hex").stdout.startswith(b"00000000")

    # Importing the same rows again: duplicate keys against the table are an error...
    r = import_penguins(sluice, db, check=False)
    assert r.returncode == 2
    assert b"penguins.csv:2: duplicate primary key (1): already in table penguins" in r.stderr
    # ...unless --on-duplicate says which row wins.
    s = json.loads(import_penguins(sluice, db, "--json", "--on-duplicate", "first").stdout)
    assert s["rows"] == 0 and s["duplicates_dropped"] == 344


def test_bad_rows_rejects_and_compressed_input(sluice, tmp):
    db = tmp / "db"
    schema = tmp / "s.sql"
    schema.write_text("CREATE TABLE orders (id INT PRIMARY KEY, score DOUBLE, day DATE);\n")
    data = tmp / "orders.csv.gz"
    with gzip.open(data, "wb") as f:
        f.write(b"1,1.5,2024-01-01\n2,notanumber,2024-01-02\n3,2.5,2024-02-30\n4,,\n")
    r = sluice("import", "--db", db, "--schema", schema, data, check=False)
    assert r.returncode == 2
    assert b'orders.csv.gz:2: column score: "notanumber" is not a DOUBLE' in r.stderr
    assert not db.exists()  # the Db this import created is taken away again: the path is as it was

    rejects = tmp / "rejects.txt"
    s = json.loads(sluice("import", "--db", db, "--schema", schema, "--max-errors", "5",
                          "--rejects", rejects, "--json", data).stdout)
    assert (s["rows"], s["rejected"]) == (2, 2)
    text = rejects.read_text()
    assert "2,notanumber,2024-01-02" in text and '"2024-02-30" is not a DATE' in text
    out = sluice("scan", "--db", db, "--table", "orders", "--format", "json").stdout.decode()
    assert out.splitlines() == ['{"id":1,"score":1.5,"day":"2024-01-01"}', '{"id":4,"score":null,"day":null}']


def test_schema_error_names_file_and_line(sluice, tmp):
    schema = tmp / "bad.sql"
    schema.write_text("CREATE TABLE t (\n  a INT,\n  b POINT\n);\n")
    data = tmp / "t.csv"
    data.write_text("1,2\n")
    r = sluice("import", "--db", tmp / "db", "--schema", schema, data, check=False)
    assert r.returncode == 2
    assert b"bad.sql:3:5: column b: column type POINT is not supported" in r.stderr


def test_columnar_layout_reads_back_the_same_rows_and_counts(sluice, tmp):
    row_db, col_db = tmp / "row", tmp / "col"
    import_penguins(sluice, row_db, "--json")
    s = json.loads(import_penguins(sluice, col_db, "--json", "--layout", "columnar").stdout)
    assert s["rows"] == 344
    for args in ([], ["--index", "by_species_island", "--format", "json"]):
        a = sluice("scan", "--db", row_db, "--table", "penguins", *args).stdout
        b = sluice("scan", "--db", col_db, "--table", "penguins", *args).stdout
        assert a == b
    assert sluice("get", "--db", row_db, "--pk", "4").stdout == sluice("get", "--db", col_db, "--pk", "4").stdout
    rows = sluice("scan", "--db", row_db, "--table", "penguins", "--format", "json").stdout.decode().splitlines()
    want = sum(json.loads(l)["year"] for l in rows)
    assert json.loads(sluice("scan", "--db", col_db, "--table", "penguins", "--count", "--sum", "year").stdout) == {
        "rows": 344, "sum": want}
    assert "  layout columnar" in sluice("tables", "--db", col_db).stdout.decode()
    # A later import keeps the stored layout without being told it again (the schema names
    # none); naming another one is refused before anything is read.
    s = json.loads(import_penguins(sluice, col_db, "--json", "--on-duplicate", "last").stdout)
    assert s["rows"] == 344 and not s["created"]
    assert "  layout columnar" in sluice("tables", "--db", col_db).stdout.decode()
    for args in ([], ["--index", "by_species_island"]):
        a = sluice("scan", "--db", row_db, "--table", "penguins", *args).stdout
        assert sluice("scan", "--db", col_db, "--table", "penguins", *args).stdout == a
    r = import_penguins(sluice, col_db, "--layout", "row", check=False)
    assert r.returncode == 2 and b"layout: stored as columnar, schema says row" in r.stderr


def test_sum_of_decimal_keeps_its_scale_and_sums_are_json(sluice, tmp):
    db = tmp / "db"
    import_penguins(sluice, db)
    # bill_length_mm is DECIMAL(4,1): the sum has one fraction digit (it printed 150213).
    out = json.loads(sluice("scan", "--db", db, "--table", "penguins", "--count", "--sum", "bill_length_mm").stdout)
    rows = [json.loads(l) for l in sluice("scan", "--db", db, "--table", "penguins", "--format", "json").stdout.decode().splitlines()]
    from decimal import Decimal
    want = sum(Decimal(str(r["bill_length_mm"])) for r in rows if r["bill_length_mm"] is not None)
    assert Decimal(str(out["sum"])) == want == Decimal("15021.3")
    raw = sluice("scan", "--db", db, "--table", "penguins", "--count", "--sum", "bill_length_mm").stdout
    assert b'"sum": 15021.3}' in raw
    r = sluice("scan", "--db", db, "--table", "penguins", "--count", "--sum", "species", check=False)
    assert r.returncode == 2 and b"--sum species: a TEXT column does not sum" in r.stderr


def test_specials_print_as_valid_json_and_round_trip(sluice, tmp):
    """inf/-inf/NaN in a DOUBLE key and value: every JSON output parses, none looks like null,
    and CSV and JSON exports import back to the same rows."""
    schema = tmp / "d.sql"
    schema.write_text("CREATE TABLE d (k DOUBLE PRIMARY KEY, v DOUBLE, m DECIMAL(38,10));\n")
    data = tmp / "d.jsonl"
    data.write_text('{"k":"Infinity","v":"NaN","m":1234567890123456789.0123456789}\n'
                    '{"k":-1e308,"v":"-Infinity","m":-0.0000000001}\n'
                    '{"k":"nan","v":1e308,"m":null}\n')
    db = tmp / "db"
    sluice("import", "--db", db, "--schema", schema, data)
    lines = sluice("scan", "--db", db, "--table", "d", "--format", "json").stdout.decode().splitlines()
    rows = [strict_json(l) for l in lines]
    assert [r["k"] for r in rows] == [-1e308, "Infinity", "NaN"]
    assert [r["v"] for r in rows] == ["-Infinity", "NaN", 1e308]
    assert '"m":1234567890123456789.0123456789' in lines[1]
    got = strict_json(sluice("get", "--db", db, "--table", "d", "--pk", "inf").stdout)
    assert got["v"] == "NaN"
    for col, want in (("v", "NaN"), ("k", "NaN"), ("m", "1234567890123456789.0123456788")):
        out = sluice("scan", "--db", db, "--table", "d", "--count", "--sum", col).stdout
        assert strict_json(out)["rows"] == 3
        assert (out.decode().split('"sum": ')[1].rstrip("}\n").strip('"')) == want
    # JSON export -> JSON lines import; CSV export (and with --null) -> CSV import.
    (tmp / "back.jsonl").write_text("\n".join(lines) + "\n")
    sluice("import", "--db", tmp / "db_json", "--schema", schema, tmp / "back.jsonl")
    assert sluice("scan", "--db", tmp / "db_json", "--table", "d", "--format", "json").stdout.decode().splitlines() == lines
    for extra in ([], ["--null", "NA"]):
        csv_out = sluice("scan", "--db", db, "--table", "d", *extra).stdout
        assert b"inf" in csv_out and b"nan" in csv_out
        (tmp / "back.csv").write_bytes(csv_out)
        target = tmp / ("db_csv" + "".join(extra))
        sluice("import", "--db", target, "--schema", schema, "--header", *extra, tmp / "back.csv")
        assert sluice("scan", "--db", target, "--table", "d", "--format", "json").stdout.decode().splitlines() == lines


def strict_json(text):
    """json.loads that refuses the NaN/Infinity literals Python's json accepts (not JSON)."""
    def refuse(constant):
        raise AssertionError(f"non-JSON constant {constant} in {text!r}")
    return json.loads(text, parse_constant=refuse)


def test_csv_export_import_keeps_null_apart_from_empty(sluice, tmp):
    schema = tmp / "t.sql"
    schema.write_text("CREATE TABLE t (id INT PRIMARY KEY, s TEXT, n INT);\n")
    data = tmp / "t.jsonl"
    data.write_text('{"id":1,"s":null,"n":null}\n{"id":2,"s":"","n":0}\n{"id":3,"s":"NA","n":3}\n'
                    '{"id":4,"s":"a,\\"b\\"\\nc","n":4}\n')
    db = tmp / "db"
    sluice("import", "--db", db, "--schema", schema, data)
    out = sluice("scan", "--db", db, "--table", "t").stdout.decode()
    assert out == 'id,s,n\n1,,\n2,"",0\n3,NA,3\n4,"a,""b""\nc",4\n'
    out_na = sluice("scan", "--db", db, "--table", "t", "--null", "NA").stdout.decode()
    assert out_na == 'id,s,n\n1,NA,NA\n2,"",0\n3,"NA",3\n4,"a,""b""\nc",4\n'
    want = sluice("scan", "--db", db, "--table", "t", "--format", "json").stdout
    for name, text, extra in (("a.csv", out, []), ("b.csv", out_na, ["--null", "NA"])):
        (tmp / name).write_text(text)
        sluice("import", "--db", tmp / name.replace(".", "_"), "--schema", schema, "--header", *extra, tmp / name)
        assert sluice("scan", "--db", tmp / name.replace(".", "_"), "--table", "t", "--format", "json").stdout == want


def test_schema_clause_errors_name_file_line_and_column(sluice, tmp):
    schema = tmp / "s.sql"
    schema.write_text("CREATE TABLE t (a INT, b INT);\nCREATE INDEX i ON t (a)\n  WHERE b > 0;\n")
    data = tmp / "t.csv"
    data.write_text("1,2\n")
    r = sluice("import", "--db", tmp / "db", "--schema", schema, data, check=False)
    assert r.returncode == 2
    assert b"s.sql:3:3: WHERE (a partial index) is not supported" in r.stderr


def test_values_starting_with_a_hyphen_are_values(sluice, tmp):
    """`--pk -3`, `--start -5`, `--null -`: a negative number (or any value starting with `-`)
    is the option's value, with or without `=` (issue 20)."""
    schema = tmp / "t.sql"
    schema.write_text("CREATE TABLE t (a INT, b INT, v TEXT, PRIMARY KEY (a, b));\n")
    data = tmp / "t.csv"
    data.write_text("-10,-1,x\n-3,-2,y\n-3,5,-\n0,0,z\n7,-7,w\n")
    sluice("import", "--db", tmp / "db", "--schema", schema, "--null", "-", data)
    db = tmp / "db"
    for pk in (["--pk", "-3,-2"], ["--pk=-3,-2"]):
        assert json.loads(sluice("get", "--db", db, *pk).stdout) == {"a": -3, "b": -2, "v": "y"}, pk
    assert json.loads(sluice("get", "--db", db, "--table", "t", "--pk", "-3,5").stdout)["v"] is None
    assert sluice("get", "--db", db, "--pk", "-4,0", check=False).returncode == 1
    out = sluice("scan", "--db", db, "--table", "t", "--start", "-5", "--end", "-3,5", "--format", "json").stdout
    assert [json.loads(l)["b"] for l in out.decode().splitlines()] == [-2]
    out = sluice("scan", "--db", db, "--table", "t", "--start=-10,-1", "--end", "0", "--count").stdout
    assert json.loads(out) == {"rows": 3}


def test_a_pipe_is_an_input_file(sluice, tmp):
    """`sluice import ... <(zcat f.csv.gz)` and named pipes: read as a stream (issue 20)."""
    import os
    import threading

    fifo = tmp / "in.csv"
    os.mkfifo(fifo)
    data = PENGUINS.read_bytes()

    def feed():
        with open(fifo, "wb") as f:
            f.write(data)

    t = threading.Thread(target=feed)
    t.start()
    out = sluice("import", "--db", tmp / "db", "--schema", SCHEMA, "--header", "--null", "NA", "--json", fifo)
    t.join()
    assert json.loads(out.stdout)["rows"] == 344
    assert json.loads(sluice("scan", "--db", tmp / "db", "--table", "penguins", "--count").stdout) == {"rows": 344}
    (tmp / "dir").mkdir()
    r = sluice("import", "--db", tmp / "db2", "--schema", SCHEMA, tmp / "dir", check=False)
    assert r.returncode == 2 and b"is a directory" in r.stderr


def test_parquet_import_with_a_schema_and_from_the_files_columns(sluice, tmp):
    """`.parquet` files by extension; `--primary-key` without `--schema` takes the first file's
    columns and types; a bad value names file, row, batch and column and changes nothing."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = pa.table({
        "id": pa.array([3, 1, 2], pa.int64()),
        "name": ["c", None, "a,b"],
        "price": pa.array([1, 2, 3], pa.decimal128(9, 2)).cast(pa.decimal128(9, 2)),
        "seen": pa.array([0, 86_400_000_000, None], pa.timestamp("us")),
    })
    pq.write_table(rows, tmp / "items.parquet", row_group_size=2)
    db = tmp / "db"
    summary = json.loads(sluice("import", "--db", db, "--primary-key", "id", "--json",
                                tmp / "items.parquet").stdout)
    assert summary["table"] == "items" and summary["rows"] == 3
    out = sluice("scan", "--db", db, "--table", "items").stdout.decode()
    assert out == ("id,name,price,seen\n1,,2.00,1970-01-02T00:00:00Z\n2,\"a,b\",3.00,\n"
                   "3,c,1.00,1970-01-01T00:00:00Z\n")
    schema = tmp / "s.sql"
    schema.write_text("CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(1))")
    r = sluice("import", "--db", db, "--schema", schema, tmp / "items.parquet", check=False)
    assert r.returncode != 0
    err = r.stderr.decode()
    assert "items.parquet:3: column name:" in err and ", row " in err, err
    assert "t (" not in sluice("tables", "--db", db).stdout.decode()
    csv = tmp / "x.csv"
    csv.write_text("id\n1\n")
    r = sluice("import", "--db", db, "--primary-key", "id", csv, check=False)
    assert r.returncode != 0 and "give --schema for CSV" in r.stderr.decode()


@pytest.mark.parametrize("layout", ["row", "columnar", "cells"])
def test_chosen_columns_read_stats_and_row_delete(sluice, tmp, layout):
    db = tmp / layout
    import_penguins(sluice, db, "--layout", layout)
    full = sluice("scan", "--db", db, "--table", "penguins").stdout.decode().splitlines()
    header = full[0].split(",")
    pick = [header.index("species"), header.index("body_mass_g")]
    want = [",".join(l.split(",")[i] for i in pick) for l in full[1:]]
    got = sluice("scan", "--db", db, "--table", "penguins", "--columns", "species,body_mass_g").stdout
    assert got.decode().splitlines() == ["species,body_mass_g"] + want
    r = sluice("scan", "--db", db, "--table", "penguins", "--columns", "species,body_mass_g",
               "--any-order", "--read-stats")
    assert sorted(r.stdout.decode().splitlines()[1:]) == sorted(want)
    stats = json.loads(r.stderr.decode().strip().splitlines()[-1])
    assert stats["bytes_read"] > 0 and stats["table_bytes"] > 0
    if layout == "columnar":
        # Two of nine columns' chunks, no primary index.
        assert stats["fraction"] < 0.5, stats
    # A row deleted by primary key is gone from gets, scans, indexes and counts.
    assert sluice("delete", "--db", db, "--table", "penguins", "--pk", "4").returncode == 0
    assert sluice("get", "--db", db, "--pk", "4", check=False).returncode == 1
    assert sluice("delete", "--db", db, "--pk", "4", check=False).returncode == 1
    count = json.loads(sluice("scan", "--db", db, "--table", "penguins", "--count").stdout)
    assert count == {"rows": 343}
    by_index = sluice("scan", "--db", db, "--table", "penguins", "--index", "by_species_island",
                      "--count").stdout
    assert json.loads(by_index) == {"rows": 343}
    ids = sluice("scan", "--db", db, "--table", "penguins", "--columns", "id", "--any-order").stdout
    assert "4" not in ids.decode().splitlines()[1:] and len(ids.decode().splitlines()) == 344


def test_rewrite_groups_after_deletes(sluice, tmp):
    db = tmp / "col"
    import_penguins(sluice, db, "--layout", "columnar")
    for pk in range(1, 301):
        sluice("delete", "--db", db, "--table", "penguins", "--pk", str(pk))
    before = sluice("scan", "--db", db, "--table", "penguins").stdout
    r = sluice("rewrite-groups", "--db", db, "--table", "penguins", "--min-dead", "0.8")
    done = json.loads(r.stdout)
    assert done["groups_rewritten"] == 1 and done["rows_moved"] == 44, done
    assert done["rows_dropped"] == 300 and done["bytes_after"] < done["bytes_before"], done
    assert sluice("scan", "--db", db, "--table", "penguins").stdout == before
    assert json.loads(sluice("get", "--db", db, "--pk", "344").stdout)["id"] == 344
    count = json.loads(sluice("scan", "--db", db, "--table", "penguins", "--count").stdout)
    assert count == {"rows": 44}
    # A share outside (0, 1] and a row table are refused, naming why.
    r = sluice("rewrite-groups", "--db", db, "--min-dead", "0", check=False)
    assert r.returncode == 2 and "(0, 1]" in r.stderr.decode()
    row = tmp / "row"
    import_penguins(sluice, row)
    r = sluice("rewrite-groups", "--db", row, check=False)
    assert r.returncode == 2 and "not columnar" in r.stderr.decode()


def test_a_replacing_import_rewrites_dead_groups_itself(sluice, tmp):
    db = tmp / "col"
    import_penguins(sluice, db, "--layout", "columnar")
    before = sluice("scan", "--db", db, "--table", "penguins").stdout
    # Every row replaced by itself: the first import's only group is all dead.
    off = json.loads(import_penguins(sluice, db, "--layout", "columnar", "--on-duplicate", "last", "--rewrite-dead", "off",
                                     "--json").stdout)
    assert off["rewrite"] is None and off["rewrite_error"] is None, off
    done = json.loads(import_penguins(sluice, db, "--layout", "columnar", "--on-duplicate", "last", "--json").stdout)
    r = done["rewrite"]
    # The first two imports' groups: all 688 rows dead, none moved, nothing written.
    assert (r["groups_with_marks"], r["groups_rewritten"]) == (2, 2), r
    assert (r["rows_moved"], r["rows_dropped"], r["groups_written"]) == (0, 688, 0), r
    assert r["bytes_after"] == 0 < r["bytes_before"], r
    assert sluice("scan", "--db", db, "--table", "penguins").stdout == before
    # The summary says it in words too; a share outside (0, 1] is refused before the import.
    text = import_penguins(sluice, db, "--layout", "columnar", "--on-duplicate", "last", "--rewrite-dead", "1").stdout
    assert "rewrote 1 row groups" in text.decode(), text
    r = import_penguins(sluice, db, "--layout", "columnar", "--on-duplicate", "last", "--rewrite-dead", "1.5", check=False)
    assert r.returncode == 2 and "--rewrite-dead" in r.stderr.decode(), r.stderr
    r = import_penguins(sluice, db, "--layout", "columnar", "--on-duplicate", "last", "--rewrite-dead", "x", check=False)
    assert r.returncode == 2 and "--rewrite-dead" in r.stderr.decode(), r.stderr
    assert sluice("scan", "--db", db, "--table", "penguins").stdout == before
