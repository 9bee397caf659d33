"""The distributed import on Ray (num_cpus=2) and Spark (local[2]): the same Db as the
single-machine import of the same input, byte for byte; every file at the bottom level;
duplicates across range cuts resolved by source order; errors naming the input and row."""

import os
import random
import sys

import pyarrow as pa
import pytest

import sluice
from sluice.distributed import Engine, RayEngine, SparkEngine, engine_named, import_files, run
from conftest import EXAMPLES

PENGUINS_SQL = (EXAMPLES / "penguins.sql").read_text()
PENGUINS = EXAMPLES / "penguins.csv"

ITEMS_SQL = """CREATE TABLE items (id BIGINT PRIMARY KEY, grp TEXT, email TEXT, price DECIMAL(10,2));
CREATE INDEX by_grp ON items (grp); CREATE UNIQUE INDEX by_email ON items (email);"""


@pytest.fixture(scope="module")
def ray_engine():
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield RayEngine()
    ray.shutdown()


@pytest.fixture(scope="module")
def spark_engine():
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master("local[2,3]")
        .appName("sluice-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.task.maxFailures", "3")
        .getOrCreate()
    )
    yield SparkEngine(spark=spark)
    spark.stop()


def dump(path):
    with sluice.open(path, read_only=True) as db:
        return list(db.scan())


def item_files(tmp_path, files=6, rows=300, dup_every=7):
    """Small CSV files with ids repeating across files (duplicates on both sides of cuts)."""
    rng = random.Random(7)
    out = []
    for f in range(files):
        lines = ["id,grp,email,price"]
        for r in range(rows):
            i = rng.randrange(files * rows // dup_every * 6)
            email = "" if i % 13 == 0 else f"{i}@x"
            lines.append(f"{i},g{i % 5},{email},{i % 1000}.{i % 100:02d}")
        p = tmp_path / f"items-{f}.csv"
        p.write_text("\n".join(lines) + "\n")
        out.append(p)
    return out


def single_machine(path, schema, files, **opts):
    with sluice.open(path) as db:
        db.import_files(schema, files, progress="off", **opts)


@pytest.mark.parametrize("engine_name", ["local", "ray", "spark"])
def test_penguins_equal_single_machine(engine_name, tmp_path, request):
    engine = {"local": lambda: Engine(), "ray": lambda: request.getfixturevalue("ray_engine"),
              "spark": lambda: request.getfixturevalue("spark_engine")}[engine_name]()
    single_machine(tmp_path / "one", PENGUINS_SQL, [PENGUINS], header=True, null="NA")
    s = run(engine, str(tmp_path / "many"), PENGUINS_SQL, [(str(PENGUINS), ("file", str(PENGUINS)))],
            text={"header": True, "null": "NA"}, ranges=4)
    assert s["rows"] == 344 and s["engine"] == engine_name
    assert all(f["level"] == 6 for f in s["files"])
    assert dump(tmp_path / "many") == dump(tmp_path / "one")
    assert not [p for p in (tmp_path / "many").iterdir() if p.name.startswith("sluice-job")]


def table_readings(path, name, index):
    """Every way of reading table `name`: all rows, one column alone, by `index`, in storage
    order (sorted here), and a point read."""
    with sluice.open(path, read_only=True) as db:
        t = db.table(name)
        return [t.to_arrow().to_pylist(), t.to_arrow(columns=["year"]).to_pylist(),
                t.to_arrow(index=index).to_pylist(),
                sorted(map(repr, t.to_arrow(ordered=False).to_pylist())), t.get(4)]


@pytest.mark.parametrize("engine_name", ["ray", "spark"])
def test_a_columnar_table_reads_back_as_the_single_machine_import(engine_name, tmp_path, request):
    engine = request.getfixturevalue(f"{engine_name}_engine")
    sql = PENGUINS_SQL.replace(");", ") WITH (layout = 'columnar');", 1)
    assert "columnar" in sql
    single_machine(tmp_path / "one", sql, [PENGUINS], header=True, null="NA")
    s = run(engine, str(tmp_path / "many"), sql, [(str(PENGUINS), ("file", str(PENGUINS)))],
            text={"header": True, "null": "NA"}, ranges=4)
    assert s["rows"] == 344
    assert all(f["level"] == 6 for f in s["files"])
    one = table_readings(tmp_path / "one", "penguins", "by_species_island")
    many = table_readings(tmp_path / "many", "penguins", "by_species_island")
    assert many == one and len(one[0]) == 344 and one[4] is not None
    assert not [p for p in (tmp_path / "many").iterdir() if p.name.startswith("sluice-job")]
    # Range sets of a columnar table are refused before any task runs.
    with pytest.raises(ValueError, match="cannot be exported"):
        run(engine, str(tmp_path / "other"), sql, [(str(PENGUINS), ("file", str(PENGUINS)))],
            text={"header": True, "null": "NA"}, ranges=4, output="files",
            out_dir=str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("policy", ["first", "last"])
def test_many_small_files_eight_ranges_duplicates_by_source_order(policy, tmp_path, spark_engine):
    files = item_files(tmp_path)
    single_machine(tmp_path / "one", ITEMS_SQL, files, header=True, on_duplicate=policy)
    s = run(spark_engine, str(tmp_path / "many"), ITEMS_SQL,
            [(str(f), ("file", str(f))) for f in files], text={"header": True},
            on_duplicate=policy, ranges=8)
    assert s["duplicates_dropped"] > 0
    assert len([f for f in s["files"] if f["slot"] == 0]) >= 8
    assert all(f["level"] == 6 for f in s["files"])
    assert dump(tmp_path / "many") == dump(tmp_path / "one")


def test_ray_files_and_errors(tmp_path, ray_engine):
    files = item_files(tmp_path, files=3)
    with pytest.raises(sluice.DuplicateKeyError) as e:
        import_files(str(tmp_path / "db"), ITEMS_SQL, files, engine="ray", header=True, ranges=4)
    assert e.value.file.endswith(".csv") and e.value.line > 1
    assert dump(tmp_path / "db") == []
    s = import_files(str(tmp_path / "db"), ITEMS_SQL, files, engine="ray", header=True,
                     on_duplicate="last", ranges=4)
    single_machine(tmp_path / "one", ITEMS_SQL, files, header=True, on_duplicate="last")
    assert dump(tmp_path / "db") == dump(tmp_path / "one") and s["rows"] > 0


def test_ray_dataset_and_spark_dataframe(tmp_path, ray_engine, spark_engine):
    import ray.data

    from sluice.ray import import_dataset
    from sluice.spark import import_dataframe

    n = 3000
    ids = list(range(n))
    random.Random(3).shuffle(ids)
    t = pa.table({
        "id": pa.array(ids, pa.int64()),
        "grp": [f"g{i % 9}" for i in ids],
        "email": [None if i % 17 == 0 else f"{i}@y" for i in ids],
        "price": pa.array([i % 997 for i in ids], pa.int64()),
    })
    with sluice.open(tmp_path / "one") as db:
        db.import_arrow(ITEMS_SQL, t)
    ds = ray.data.from_arrow(t).repartition(5)
    s = import_dataset(ds, str(tmp_path / "ray"), ITEMS_SQL, ranges=4)
    assert s["rows"] == n and dump(tmp_path / "ray") == dump(tmp_path / "one")
    df = spark_engine.spark.createDataFrame(t.to_pandas()).repartition(3)
    s = import_dataframe(df, str(tmp_path / "spark"), ITEMS_SQL, ranges=4)
    assert s["rows"] == n and dump(tmp_path / "spark") == dump(tmp_path / "one")


def test_the_command_takes_sluice_imports_options(tmp_path):
    import json
    import subprocess

    schema = tmp_path / "p.sql"
    schema.write_text(PENGUINS_SQL)
    out = subprocess.run(
        [sys.executable, "-m", "sluice.distributed", "import", "--engine", "spark", "--workers", "2",
         "--db", str(tmp_path / "db"), "--schema", str(schema), "--header", "--null", "NA",
         "--ranges", "3", "--json", str(PENGUINS)],
        capture_output=True, check=True,
    )
    summary = json.loads(out.stdout.decode().strip().splitlines()[-1])
    assert summary["rows"] == 344 and summary["engine"] == "spark"
    single_machine(tmp_path / "one", PENGUINS_SQL, [PENGUINS], header=True, null="NA")
    assert dump(tmp_path / "db") == dump(tmp_path / "one")


@pytest.mark.parametrize("engine_name", ["ray", "spark"])
def test_a_failed_task_is_retried_and_leaves_nothing(engine_name, tmp_path, request):
    """The first build task fails after writing its SSTs; the engine runs it again under a new
    attempt; one manifest per range is ingested and no attempt's files remain."""
    engine = request.getfixturevalue(f"{engine_name}_engine")
    marker = tmp_path / "failed-once"
    files = item_files(tmp_path, files=3)
    work = tmp_path / "work"
    s = run(engine, str(tmp_path / "db"), ITEMS_SQL, [(str(f), ("file", str(f))) for f in files],
            text={"header": True}, on_duplicate="last", ranges=4, work_dir=str(work),
            _fail_build_once=str(marker))
    assert marker.exists(), "the failpoint fired"
    single_machine(tmp_path / "one", ITEMS_SQL, files, header=True, on_duplicate="last")
    assert dump(tmp_path / "db") == dump(tmp_path / "one") and s["rows"] > 0
    assert list(work.iterdir()) == []  # the job's directory is gone
    # Only the Db's own table files are left in its directory: every one is live.
    on_disk = [p for p in (tmp_path / "db").iterdir() if p.suffix == ".sst"]
    with sluice.open(tmp_path / "db") as db:
        live = sum(level["files"] for level in db.metrics()["levels"])
    assert live == len(on_disk) == len(s["files"])


def _cli(tmp_path, *args, env=None):
    import subprocess

    schema = tmp_path / "items.sql"
    schema.write_text(ITEMS_SQL)
    return subprocess.run(
        [sys.executable, "-m", "sluice.distributed", *args[:1], "--schema", str(schema), *args[1:]],
        capture_output=True, env={**os.environ, **(env or {})},
    )


def test_a_killed_coordinator_resumes_and_a_changed_input_is_refused(tmp_path):
    """The coordinator dies after every range is built, before its commit: nothing is visible,
    the job stays; a rerun with its id builds nothing again and commits the same Db as
    ``sluice import``; a changed input is refused; ``abort`` removes a kept job."""
    from sluice.distributed import abort, jobs

    files = [str(f) for f in item_files(tmp_path, files=4)]
    db = str(tmp_path / "db")
    args = ["import", "--engine", "local", "--db", db, "--header", "--on-duplicate", "first",
            "--ranges", "3", "--job-id", "j1", *files]
    crashed = _cli(tmp_path, *args, env={"SLUICE_DISTRIBUTED_CRASH_BEFORE_COMMIT": "1"})
    assert crashed.returncode == 137, crashed.stderr.decode()
    assert jobs(db) == ["j1"] and dump(db) == []
    rerun = _cli(tmp_path, *args)
    assert rerun.returncode == 0, rerun.stderr.decode()
    out = rerun.stdout.decode()
    # sluice import's summary, and every range (3 primary + 3 per index) reused.
    assert "imported " in out and "rows into items (new table)" in out, out
    assert "9 ranges reused" in out and "duplicates dropped" in out, out
    assert "build" in rerun.stderr.decode() or "ingest" in rerun.stderr.decode()
    single_machine(tmp_path / "one", ITEMS_SQL, files, header=True, on_duplicate="first")
    assert dump(db) == dump(tmp_path / "one") and jobs(db) == []
    # Killed again under another id, then an input changes: the rerun is refused.
    db2 = str(tmp_path / "db2")
    args2 = [a if a != db else db2 for a in args]
    args2[args2.index("j1")] = "j2"
    _cli(tmp_path, *args2, env={"SLUICE_DISTRIBUTED_CRASH_BEFORE_COMMIT": "1"})
    with open(files[1], "a") as f:
        f.write("99999,g1,new@x,1.00\n")
    refused = _cli(tmp_path, *args2)
    assert refused.returncode != 0 and b"cannot be resumed" in refused.stderr, refused.stderr
    assert b"items-1.csv" in refused.stderr
    assert dump(db2) == [] and jobs(db2) == ["j2"]
    assert abort(db2, "j2") and jobs(db2) == [] and not abort(db2, "j2")


def test_a_table_with_rows_error_first_last(tmp_path, ray_engine):
    base = item_files(tmp_path, files=2)
    # Distinct ids (half of them stored already), emails no stored row has.
    new = tmp_path / "new.csv"
    new.write_text("id,grp,email,price\n" + "".join(f"{i},g{i % 3},{i}@z,1.00\n" for i in range(0, 900, 3)))
    more = [(str(new), ("file", str(new)))]
    for name in ["one", "many"]:
        single_machine(tmp_path / name, ITEMS_SQL, base, header=True, on_duplicate="first")
    before = dump(tmp_path / "many")
    # error: an input row meeting a stored one is refused as such; nothing changes.
    with pytest.raises(sluice.DuplicateKeyError, match="already in table items"):
        run(ray_engine, str(tmp_path / "many"), ITEMS_SQL, more, text={"header": True}, ranges=3)
    assert dump(tmp_path / "many") == before
    # first: stored rows win; then last: input rows replace them (other groups and emails:
    # the stored rows' index entries go), as with sluice import.
    for policy in ["first", "last"]:
        s = run(ray_engine, str(tmp_path / "many"), ITEMS_SQL, more, text={"header": True},
                on_duplicate=policy, ranges=3)
        single_machine(tmp_path / "one", ITEMS_SQL, [new], header=True, on_duplicate=policy)
        assert s["duplicates_dropped"] > 0 and not s["created"]
        assert dump(tmp_path / "many") == dump(tmp_path / "one"), policy


def test_a_columnar_last_job_rewrites_the_groups_of_replaced_rows(tmp_path):
    """As `sluice import --rewrite-dead`: after a `last` job replaced stored rows of a columnar
    table, the row groups with at least that share of replaced rows are rewritten (their
    bytes given back); `rewrite_dead=None` leaves them to the caller. Rows read the same."""
    sql = ITEMS_SQL.replace(");", ") WITH (layout = 'columnar');", 1)
    assert "columnar" in sql
    seed = tmp_path / "seed.csv"
    seed.write_text("id,grp,email,price\n" + "".join(f"{i},g{i % 3},{i}@s,1.00\n" for i in range(600)))
    new = tmp_path / "new.csv"
    # Replaces ids 0..399 (two thirds of the stored rows), adds 600..699.
    new.write_text("id,grp,email,price\n" + "".join(f"{i},n{i % 4},{i}@n,2.50\n" for i in range(0, 700) if i < 400 or i >= 600))
    counts = {}
    for name, rewrite_dead in [("kept", None), ("rewritten", 0.5)]:
        single_machine(tmp_path / name, sql, [seed], header=True)
        s = run(engine_named("local"), str(tmp_path / name), sql, [(str(new), ("file", str(new)))],
                text={"header": True}, on_duplicate="last", ranges=2, rewrite_dead=rewrite_dead)
        assert s["rewrite_error"] is None
        counts[name] = s["rewrite"]
        # The replaced rows' deletion marks: a file of their own, not a primary one.
        kinds = [f["kind"] for f in s["files"]]
        assert kinds.count("marks") == 1 and kinds.count("catalog") == 1, s["files"]
        assert [f["slot"] for f in s["files"] if f["kind"] == "marks"] == [None]
        with sluice.open(tmp_path / name) as db:
            # What is left to rewrite at the job's share, and at any share.
            counts[name + " after"] = db.table("items").rewrite_groups(0.5)
    assert counts["kept"] is None
    done, left = counts["rewritten"], counts["rewritten after"]
    assert done["groups_rewritten"] > 0 and done["rows_dropped"] > 0, done
    assert done["bytes_after"] < done["bytes_before"], done
    assert left["groups_rewritten"] == 0, left
    # The job's rewrite did what the caller's own rewrite of the kept table did.
    caller = counts["kept after"]
    assert (done["groups_rewritten"], done["rows_dropped"]) == (caller["groups_rewritten"], caller["rows_dropped"])
    single_machine(tmp_path / "one", sql, [seed], header=True)
    single_machine(tmp_path / "one", sql, [new], header=True, on_duplicate="last")
    def readings(name):
        with sluice.open(tmp_path / name, read_only=True) as db:
            t = db.table("items")
            return [t.to_arrow().to_pylist(), t.to_arrow(index="by_grp").to_pylist(),
                    t.to_arrow(index="by_email").to_pylist(), t.get(5), t.get(450), t.get(650)]

    one = readings("one")
    assert readings("rewritten") == readings("kept") == one
    assert len(one[0]) == 700 and one[3]["grp"] == "n1" and one[4]["grp"] == "g0"
    # The command's option: a share, or off.
    from sluice.distributed.__main__ import main
    with pytest.raises(SystemExit):
        main(["import", "--db", str(tmp_path / "x"), "--schema", "s", "--rewrite-dead", "2", "f"])


def test_max_errors_and_rejects_across_tasks(tmp_path, ray_engine):
    files = item_files(tmp_path, files=3)
    for i, f in enumerate(files):
        lines = f.read_text().splitlines()
        lines[5] = f"x{i},g1,bad{i}@x,1.00"  # not a BIGINT
        f.write_text("\n".join(lines) + "\n")
    inputs = [(str(f), ("file", str(f))) for f in files]
    one_rejects = tmp_path / "one.rejects"
    with sluice.open(tmp_path / "one") as db:
        s1 = db.import_files(ITEMS_SQL, files, progress="off", header=True, max_errors=10_000,
                             rejects=str(one_rejects))
    n = s1.rejected
    assert n > 3
    # One too few allowed: the job fails, and its rejects file (an earlier run's lines gone)
    # holds every bad row, the last the one that went over.
    failed_rejects = tmp_path / "failed.rejects"
    failed_rejects.write_text("# stale line of an earlier run\nstale\n")
    with pytest.raises(sluice.TooManyErrorsError):
        run(ray_engine, str(tmp_path / "many"), ITEMS_SQL, inputs, text={"header": True},
            ranges=3, max_errors=n - 1, rejects=str(failed_rejects))
    assert dump(tmp_path / "many") == []
    assert sorted(failed_rejects.read_text().splitlines()) == sorted(
        one_rejects.read_text().splitlines())
    rejects = tmp_path / "many.rejects"
    s = run(ray_engine, str(tmp_path / "many"), ITEMS_SQL, inputs, text={"header": True},
            ranges=3, max_errors=n, rejects=str(rejects))
    assert s["rejected"] == n
    assert dump(tmp_path / "many") == dump(tmp_path / "one")
    # The same rejects, each with its file and line (the order may differ: by range here).
    assert sorted(rejects.read_text().splitlines()) == sorted(one_rejects.read_text().splitlines())


def test_a_rejects_file_that_is_an_input_or_in_the_db_is_refused(tmp_path):
    """The rejects file is emptied when the job writes it: one that is an input (also by a
    symbolic link) or a file of the Db is refused before any work, and nothing is touched."""
    files = item_files(tmp_path, files=2)
    inputs = [(str(f), ("file", str(f))) for f in files]
    before = files[0].read_bytes()
    db_path = tmp_path / "db"
    with sluice.open(db_path) as db:
        db.put(b"k", b"v")
    link = tmp_path / "link.rejects"
    link.symlink_to(db_path / "CURRENT")
    for rejects in (files[0], db_path / "CURRENT", link):
        with pytest.raises(sluice.InvalidArgumentError, match="rejects"):
            run(Engine(), str(db_path), ITEMS_SQL, inputs, text={"header": True},
                max_errors=10, rejects=str(rejects))
    assert files[0].read_bytes() == before
    with sluice.open(db_path) as db:
        assert db.get(b"k") == b"v"


def test_a_quote_equal_to_the_delimiter_is_refused_before_any_work(tmp_path):
    """A quote no record could be read with is refused when the job is planned."""
    files = item_files(tmp_path, files=1)
    inputs = [(str(f), ("file", str(f))) for f in files]
    for text in ({"quote": ","}, {"delimiter": ";", "quote": ";"}, {"delimiter": "\n"}):
        with pytest.raises(sluice.InvalidArgumentError) as e:
            run(Engine(), str(tmp_path / "db"), ITEMS_SQL, inputs, text={"header": True, **text})
        assert e.value.option in ("quote", "delimiter"), text
    assert not list((tmp_path / "db").glob("sluice-job-*"))


def test_output_files_one_range_set_into_a_fresh_db(tmp_path):
    files = item_files(tmp_path, files=3)
    inputs = [(str(f), ("file", str(f))) for f in files]
    single_machine(tmp_path / "one", ITEMS_SQL, files, header=True, on_duplicate="last")
    out = tmp_path / "out"
    s = run(Engine(), str(tmp_path / "many"), ITEMS_SQL, inputs, text={"header": True},
            on_duplicate="last", ranges=3, output="files", out_dir=str(out))
    assert dump(tmp_path / "many") == []  # nothing ingested
    import json

    manifest = json.loads((out / "ranges.json").read_text())
    assert len(manifest["ranges"]) == 9 and s["rows"] > 0
    whole = dump(tmp_path / "one")
    for r in manifest["ranges"]:
        if not r["files"]:
            continue
        with sluice.open(tmp_path / f"r{r['slot']}-{r['range']}") as db:
            db.ingest([out / f["path"] for f in r["files"]])
        lo = bytes.fromhex(r["lower"]) if r["lower"] else None
        hi = bytes.fromhex(r["upper"]) if r["upper"] else None
        prefix = bytes.fromhex(r["files"][0]["smallest"])[:8]
        want = [(k, v) for k, v in whole if k.startswith(prefix)
                and (lo is None or k >= lo) and (hi is None or k < hi)]
        assert dump(tmp_path / f"r{r['slot']}-{r['range']}") == want


def test_arrow_inputs_resume_only_under_the_callers_fingerprint(tmp_path):
    """A job that fails other than on its data (here an I/O error of a build task, which the
    local engine does not retry) is kept under the caller's id; Arrow inputs resume only with
    the same ``input_fingerprint``, never without one."""
    from sluice.distributed import jobs

    t = pa.table({"id": pa.array(range(500), pa.int64()), "grp": [f"g{i % 4}" for i in range(500)],
                  "email": [f"{i}@a" for i in range(500)], "price": pa.array([1] * 500, pa.int64())})
    inputs = [(f"block {i}", ("arrow", t.slice(i * 100, 100))) for i in range(5)]
    db = str(tmp_path / "db")
    opts = dict(ranges=3, job_id="arrow", input_fingerprint="snapshot 7")
    with pytest.raises(OSError, match="injected"):
        run(Engine(), db, ITEMS_SQL, inputs, _fail_build_once=str(tmp_path / "m"), **opts)
    assert jobs(db) == ["arrow"] and dump(db) == []
    with pytest.raises(sluice.InvalidArgumentError, match="cannot be resumed: input"):
        run(Engine(), db, ITEMS_SQL, inputs, ranges=3, job_id="arrow")
    s = run(Engine(), db, ITEMS_SQL, inputs, **opts)
    # The failed task had recorded its range before failing: at least that one is reused.
    assert s["reused_ranges"] >= 1 and s["rows"] == 500 and jobs(db) == []
    with sluice.open(tmp_path / "one") as one:
        one.import_arrow(ITEMS_SQL, t)
    assert dump(db) == dump(tmp_path / "one")


def test_small_appends_merge_their_files_and_say_so(tmp_path):
    """Each small append into a columnar table ingests a small file per column; after its
    commit the job merges the table's small files, as `sluice import` does, and its summary
    counts the merges (and the single-machine import's report does too)."""
    sql = ITEMS_SQL.replace(");", ") WITH (layout = 'columnar');", 1)
    merges = {"job": 0, "import": 0}
    for a in range(12):
        f = tmp_path / f"a{a}.csv"
        f.write_text("id,grp,email,price\n"
                     + "".join(f"{i},g{i % 3},{i}@a,1.00\n" for i in range(a * 5, a * 5 + 5)))
        s = run(engine_named("local"), str(tmp_path / "job"), sql, [(str(f), ("file", str(f)))],
                text={"header": True}, ranges=1)
        assert s["small_file_merge_error"] is None
        merges["job"] += s["small_file_merges"]
        with sluice.open(tmp_path / "one") as db:
            r = db.import_files(sql, [f], progress="off", header=True)
        assert r.small_file_merge_error is None
        merges["import"] += r.small_file_merges
    assert merges["job"] > 0 and merges["import"] > 0, merges
    assert len(dump(tmp_path / "job")) > 0
    assert dump(tmp_path / "job") == dump(tmp_path / "one")
