"""An import interrupted at any point leaves a Db every command opens (issue 20).

* kill -9 of the first import into a new directory, at random small delays: the directory is
  an unfinished creation or a Db, never "not a Sluice database"; the next import completes it;
* two imports racing to create one Db: the loser hears "locked by another process";
* SIGINT / SIGTERM / SIGHUP remove the import's temporary directory and leave the Db as it was;
* `verify` and `stats` report a leftover temporary directory without removing it.
"""
import json
import os
import random
import shutil
import signal
import subprocess
import time

import pytest

SCHEMA = "CREATE TABLE k (id BIGINT PRIMARY KEY, name TEXT, n INT);\nCREATE INDEX by_n ON k (n);\n"


def rows_csv(n, seed=0):
    rng = random.Random(seed)
    ids = rng.sample(range(10**12), n)
    return "".join(f"{i},name-{j}-{'x' * (j % 23)},{j % 101}\n" for j, i in enumerate(ids))


def db_state(sluice, db):
    """Everything a reader sees: the raw keys and values (the catalog included)."""
    return sluice("scan", "--db", db, "--hex").stdout


def tmp_dirs(path):
    return sorted(p.name for p in path.iterdir() if p.name.startswith("sluice-import-"))


def work_dirs(path):
    """An import's temporary directory, or a file import's resumable checkpoint directory."""
    return sorted(p.name for p in path.iterdir()
                  if p.name.startswith("sluice-import-") or p.name.startswith("sluice-resume-"))


def test_kill_9_of_a_first_import_at_random_points_leaves_a_db_that_opens(sluice, sluice_bin, tmp):
    binary = str(sluice_bin)
    schema = tmp / "k.sql"
    schema.write_text(SCHEMA)
    data = tmp / "k.csv"
    data.write_text(rows_csv(2000))

    def import_cmd(db):
        return [binary, "import", "--db", str(db), "--schema", str(schema), "--quiet",
                "--on-duplicate", "last", str(data)]

    # How long a whole import takes here: the kills land anywhere from before the process
    # starts to after it ends, most of them in the first milliseconds (the creation).
    t0 = time.monotonic()
    subprocess.run(import_cmd(tmp / "full"), check=True, capture_output=True)
    full = time.monotonic() - t0
    expected = db_state(sluice, tmp / "full")

    seed = int(os.environ.get("SLUICE_KILL_SEED", time.time_ns() % 2**32))
    rng = random.Random(seed)
    outcomes = {"missing": 0, "empty": 0, "unfinished": 0, "db": 0}
    for i in range(200):
        db = tmp / f"db{i}"
        delay = rng.uniform(0, 0.01) if i % 2 == 0 else rng.uniform(0, full * 1.2)
        child = subprocess.Popen(import_cmd(db), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        child.send_signal(signal.SIGKILL)
        child.wait()
        what = f"seed {seed} (SLUICE_KILL_SEED replays it), round {i}, kill after {delay * 1000:.2f} ms"
        # A reader: a Db, or a creation that has not finished — never "not a Sluice database".
        r = sluice("tables", "--db", db, check=False)
        err = r.stderr.decode()
        if r.returncode == 0:
            outcomes["db"] += 1
        elif "creation has not finished" in err:
            outcomes["unfinished"] += 1
        elif "empty directory" in err:
            outcomes["empty"] += 1
        else:
            assert "does not exist" in err, f"{what}: {err} ({sorted(os.listdir(db))})"
            outcomes["missing"] += 1
        # The next import opens whatever is there and completes it.
        r = subprocess.run(import_cmd(db), capture_output=True)
        assert r.returncode == 0, f"{what}: {r.stderr.decode()}"
        assert db_state(sluice, db) == expected, what
        assert tmp_dirs(db) == [], what
        shutil.rmtree(db)
    print(f"kill -9 outcomes over 200 rounds: {outcomes} (seed {seed})")


def test_two_imports_racing_to_create_one_db(sluice, sluice_bin, tmp):
    binary = str(sluice_bin)
    schema = tmp / "k.sql"
    schema.write_text(SCHEMA)
    data = tmp / "k.csv"
    data.write_text(rows_csv(500))
    outcomes = {"locked": 0, "both ran": 0}
    for i in range(20):
        db = tmp / f"db{i}"
        cmd = [binary, "import", "--db", str(db), "--schema", str(schema), "--quiet",
               "--on-duplicate", "last", str(data)]
        racers = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
        results = [(p.wait(), p.stderr.read().decode()) for p in racers]
        for p in racers:
            p.stdout.close()
            p.stderr.close()
        assert any(rc == 0 for rc, _ in results), results
        for rc, err in results:
            assert rc == 0 or "locked by another process" in err, results
        outcomes["locked" if any(rc != 0 for rc, _ in results) else "both ran"] += 1
        assert json.loads(sluice("scan", "--db", db, "--table", "k", "--count").stdout) == {"rows": 500}
    print(f"racing creators: {outcomes}")


def seeded_db(sluice, tmp, name):
    """A Db holding a small table, and what a reader sees in it."""
    db = tmp / name
    seed = tmp / "seed.sql"
    seed.write_text("CREATE TABLE seed (id INT PRIMARY KEY);\n")
    seed_rows = tmp / "seed.csv"
    seed_rows.write_text("1\n2\n3\n")
    sluice("import", "--db", db, "--schema", seed, "--quiet", seed_rows)
    return db, db_state(sluice, db)


def stopped_import_with_spilled_runs(binary, tmp, db, rows):
    """An import of `rows` rows into `db`, stopped (SIGSTOP) once its temporary directory holds
    spilled runs, and that directory; `None` if the import finished before it could be stopped
    (the caller retries with more rows: no timing is assumed)."""
    schema = tmp / "k.sql"
    schema.write_text(SCHEMA)
    data = tmp / f"k{rows}.csv"
    data.write_text(rows_csv(rows, seed=7))
    child = subprocess.Popen([binary, "import", "--db", str(db), "--schema", str(schema), "--quiet",
                              "--memory", "8M", "--threads", "1", str(data)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    while child.poll() is None:
        found = work_dirs(db)
        if found and any((db / found[0]).iterdir()):
            child.send_signal(signal.SIGSTOP)
            if (db / found[0]).exists() and child.poll() is None:
                return child, db / found[0]
        time.sleep(0.005)
    child.stderr.close()
    return None


@pytest.mark.parametrize("sig,status", [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)],
                         ids=["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_signal_removes_the_temporary_directory_and_leaves_the_db_as_it_was(sluice, sluice_bin, tmp, sig,
                                                                              status):
    for attempt in range(4):
        db, before = seeded_db(sluice, tmp, f"db{attempt}")
        stopped = stopped_import_with_spilled_runs(str(sluice_bin), tmp, db, 200_000 << attempt)
        if stopped:
            break
    else:
        pytest.fail("every import finished before it could be stopped")
    child, tmp_dir = stopped
    assert any(tmp_dir.iterdir()), "nothing spilled yet"
    child.send_signal(sig)
    child.send_signal(signal.SIGCONT)
    assert child.wait() == status
    err = child.stderr.read().decode()
    child.stderr.close()
    assert f"interrupted by {sig.name}" in err, err
    # A file import's checkpoint directory is kept on a signal, for `--resume` (the next
    # import without it discards it); nothing else is left.
    assert tmp_dirs(db) == []
    assert not tmp_dir.exists() or tmp_dir.name.startswith("sluice-resume-")
    assert db_state(sluice, db) == before
    assert sluice("verify", "--db", db).stdout.startswith(b"OK:")
    assert sluice("tables", "--db", db).stdout.decode().startswith("seed")


def test_verify_and_stats_report_a_leftover_temporary_directory_and_keep_it(sluice, tmp):
    db = tmp / "db"
    sluice("put", "--db", db, "k", "v")
    # A killed import's: its process (id above any pid_max) is gone.
    left = db / "sluice-import-4000000000-0"
    (left / "runs").mkdir(parents=True)
    (left / "runs" / "000001.sst").write_bytes(b"\0" * 4000)
    (left / "000002.sst").write_bytes(b"\0" * 96)

    out = sluice("verify", "--db", db).stdout.decode()
    assert out.startswith("OK:"), out
    assert "note: import temporary directory sluice-import-4000000000-0: 4096 bytes" in out, out
    assert "which has exited" in out, out
    text = sluice("stats", "--db", db).stdout.decode()
    assert "import temporary directory sluice-import-4000000000-0: 4096 bytes" in text, text
    stats = json.loads(sluice("stats", "--db", db, "--json").stdout)
    [found] = stats["import_tmp_dirs"]
    assert found["path"].endswith("sluice-import-4000000000-0") and found["bytes"] == 4096
    assert found["pid"] == 4000000000 and found["process_running"] is False
    assert left.exists(), "a read command removed it"

    # No leftovers: no note, an empty list.
    clean = tmp / "clean"
    sluice("put", "--db", clean, "k", "v")
    assert "note:" not in sluice("verify", "--db", clean).stdout.decode()
    assert json.loads(sluice("stats", "--db", clean, "--json").stdout)["import_tmp_dirs"] == []
